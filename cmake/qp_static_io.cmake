# HDF5, cfitsio, chealpix and LAPACKE linked from their static archives, where installed.
#
# Why: every shared library costs each process start its mappings, relocations and page faults
# (~13 us a fault on the VMs measured), on every rank of every job. Debian's shared HDF5 and
# cfitsio each bring a libcurl (OpenSSL's and GnuTLS's) and with them ~30 libraries (TLS,
# Kerberos, LDAP, SSH, IDN, ...) that qmlpipe never calls: `qmlpipe --version` took 34 ms with
# them and 16 ms from the archives, 59 libraries against 23 (docs/benchmarks.md, "2026-11-27
# 10:40-11:10 UTC"). From an archive the linker takes only the objects qmlpipe uses: HDF5's
# need no libcurl (its S3 driver is not among them); cfitsio's network drivers are (its file-name
# parser registers them), and io/cfitsio_no_network.c answers their libcurl calls with a
# refusal. qmlpipe opens every FITS file with fits_open_diskfile / fits_create_diskfile, which
# never reach those drivers (io/fits_map.c).
#
# The programs link four interface targets that this file defines, one way or the other:
# qp_hdf5, qp_hdf5_hl, qp_fitsio (chealpix and cfitsio) and qp_lapacke. All or nothing: where
# an archive, a library the archives need, or curl/curl.h is missing, the shared libraries as
# before (the configure step says which). -DQP_STATIC_IO_LIBS=OFF asks for the shared ones.
# Sets QP_STATIC_IO_LINKED (ON/OFF) for the tests.
option(QP_STATIC_IO_LIBS
  "Link HDF5, cfitsio, chealpix and LAPACKE from their static archives where installed" ON)

include(CheckIncludeFile)

add_library(qp_hdf5 INTERFACE)
add_library(qp_hdf5_hl INTERFACE)
add_library(qp_fitsio INTERFACE)
add_library(qp_lapacke INTERFACE)
# qp_static_io_archives(OUT): ON when every archive and what they call is installed.
function(qp_static_io_archives out)
  set(${out} OFF PARENT_SCOPE)
  if(NOT QP_STATIC_IO_LIBS)
    message(STATUS "I/O libraries: shared (QP_STATIC_IO_LIBS is OFF)")
    return()
  endif()
  foreach(archive IN ITEMS ${qp_hdf5_a} ${qp_hdf5_hl_a} ${qp_cfitsio_a} ${qp_chealpix_a}
      ${qp_lapacke_a})
    if(NOT EXISTS "${archive}")
      message(STATUS "I/O libraries: shared (no ${archive})")
      return()
    endif()
  endforeach()
  foreach(lib IN ITEMS QP_LIBSZ QP_LIBZ QP_LIBBZ2)
    if(NOT ${lib})
      message(STATUS "I/O libraries: shared (${lib} not found)")
      return()
    endif()
  endforeach()
  check_include_file(curl/curl.h QP_HAVE_CURL_H)
  if(NOT QP_HAVE_CURL_H)
    message(STATUS "I/O libraries: shared (no curl/curl.h)")
    return()
  endif()
  set(${out} ON PARENT_SCOPE)
endfunction()

get_filename_component(qp_hdf5_dir "${HDF5_C_LIBRARY_hdf5}" DIRECTORY)
set(qp_hdf5_a "${qp_hdf5_dir}/libhdf5.a")
set(qp_hdf5_hl_a "${qp_hdf5_dir}/libhdf5_hl.a")
set(qp_cfitsio_a "${CFITSIO_LIBDIR}/libcfitsio.a")
set(qp_chealpix_a "${CHEALPIX_LIBDIR}/libchealpix.a")
set(qp_lapacke_a "${LAPACKE_LIBDIR}/liblapacke.a")
# What the archives' objects call: HDF5's filters (szip, deflate), cfitsio's compressed files.
find_library(QP_LIBSZ sz)
find_library(QP_LIBZ z)
find_library(QP_LIBBZ2 bz2)
qp_static_io_archives(QP_STATIC_IO_LINKED)

if(QP_STATIC_IO_LINKED)
  # Imported archives, each naming what it calls, so that CMake orders them on the link line
  # (an archive's object is taken only for a symbol still undefined when the linker reaches it:
  # libhdf5_hl.a before libhdf5.a, the refusal after libcfitsio.a).
  function(qp_archive name location)
    add_library(${name} STATIC IMPORTED)
    set_target_properties(${name} PROPERTIES IMPORTED_LOCATION "${location}"
      INTERFACE_LINK_LIBRARIES "${ARGN}")
  endfunction()
  qp_archive(qp_hdf5_a ${qp_hdf5_a} ${QP_LIBSZ} ${QP_LIBZ} ${CMAKE_DL_LIBS} Threads::Threads m)
  qp_archive(qp_hdf5_hl_a ${qp_hdf5_hl_a} qp_hdf5_a)
  qp_archive(qp_cfitsio_a ${qp_cfitsio_a} qp_cfitsio_no_network ${QP_LIBZ} ${QP_LIBBZ2}
    Threads::Threads m)
  qp_archive(qp_chealpix_a ${qp_chealpix_a} qp_cfitsio_a m)
  # LAPACKE's C wrappers call the LAPACK routines of qp_blas, linked after them (OpenBLAS's, or
  # the reference LAPACK under QP_BLAS=blis: cmake/qp_blas.cmake); from the archive, the
  # reference LAPACK's libtmglib is not loaded.
  qp_archive(qp_lapacke_a ${qp_lapacke_a} qp_blas)
  target_include_directories(qp_hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
  target_link_libraries(qp_hdf5 INTERFACE qp_hdf5_a)
  target_link_libraries(qp_hdf5_hl INTERFACE qp_hdf5_hl_a qp_hdf5)
  target_include_directories(qp_fitsio INTERFACE ${CFITSIO_INCLUDE_DIRS} ${CHEALPIX_INCLUDE_DIRS})
  target_link_libraries(qp_fitsio INTERFACE qp_chealpix_a)
  target_include_directories(qp_lapacke INTERFACE ${LAPACKE_INCLUDE_DIRS})
  target_link_libraries(qp_lapacke INTERFACE qp_lapacke_a)
  message(STATUS "I/O libraries: HDF5, cfitsio, chealpix and LAPACKE from their archives "
    "(cfitsio's libcurl calls refused: io/cfitsio_no_network.c)")
else()
  target_link_libraries(qp_hdf5 INTERFACE hdf5::hdf5)
  target_link_libraries(qp_hdf5_hl INTERFACE hdf5::hdf5_hl hdf5::hdf5)
  target_link_libraries(qp_fitsio INTERFACE PkgConfig::CHEALPIX PkgConfig::CFITSIO)
  target_link_libraries(qp_lapacke INTERFACE PkgConfig::LAPACKE qp_blas)
endif()
