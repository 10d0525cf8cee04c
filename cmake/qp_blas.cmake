# The BLAS and LAPACK qmlpipe links: -DQP_BLAS=openblas (the default) or -DQP_BLAS=blis.
#
# Defines the interface target qp_blas (CBLAS header, BLAS and LAPACK), which qp_linalg and the
# static LAPACKE archive (cmake/qp_static_io.cmake) link, and QP_BLAS_NAME for qp_config.h.
#
# openblas: pkg-config's openblas, as always: OpenBLAS is BLAS, CBLAS and LAPACK.
#
# blis: BLIS for BLAS and CBLAS, the reference LAPACK on top, standing for a cluster's site BLAS
# (Debian: libblis-dev, whose first choice of threading is libblis-openmp-dev, plus
# liblapack-dev). Every library is linked by its path, never by -lblas / -llapack: Debian's
# libblas.so.3 and liblapack.so.3 are alternatives that point at OpenBLAS here. The files:
#   QP_BLIS_LIBRARY        libblis.so.4 of the variant (BLAS, CBLAS and bli_*; first, so
#                          that every dgemm_ of the process binds to it)
#   QP_BLIS_BLAS_LIBRARY   the same variant's libblas.so.3: its soname is what the reference
#                          LAPACK, a shared LAPACKE and ScaLAPACK ask for. The loader matches
#                          a dependency's soname against what is loaded already, so with it
#                          among the program's own libraries (found through the RUNPATH)
#                          none of them loads OpenBLAS through the alternative; its symbols
#                          are shadowed by libblis.so.4's.
#   QP_LAPACK_LIBRARY      the reference liblapack.so.3 (soname liblapack.so.3, likewise)
#   QP_BLIS_INCLUDE_DIR    the variant's cblas.h
# QP_BLIS_VARIANT (openmp, pthread or serial) picks Debian's directories; a site's BLIS is given
# by setting the four paths. `qmlpipe --version` says what the process really runs
# (linalg/blas/blas_library.h).
set(QP_BLAS "openblas" CACHE STRING "BLAS/LAPACK: openblas (default) or blis (BLIS + reference LAPACK)")
set_property(CACHE QP_BLAS PROPERTY STRINGS openblas blis)
add_library(qp_blas INTERFACE)

if(QP_BLAS STREQUAL "openblas")
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
  target_link_libraries(qp_blas INTERFACE PkgConfig::OPENBLAS)
  set(QP_BLAS_NAME "openblas")
  message(STATUS "BLAS: OpenBLAS ${OPENBLAS_VERSION} (BLAS and LAPACK)")
elseif(QP_BLAS STREQUAL "blis")
  set(QP_BLIS_VARIANT "openmp" CACHE STRING "Debian's BLIS threading variant: openmp, pthread or serial")
  set_property(CACHE QP_BLIS_VARIANT PROPERTY STRINGS openmp pthread serial)
  set(qp_libdir "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
  set(qp_blis_dir "${qp_libdir}/blis-${QP_BLIS_VARIANT}")
  find_path(QP_BLIS_INCLUDE_DIR cblas.h
    PATHS "/usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-${QP_BLIS_VARIANT}" NO_DEFAULT_PATH)
  find_file(QP_BLIS_LIBRARY libblis.so.4 PATHS "${qp_blis_dir}" NO_DEFAULT_PATH)
  find_file(QP_BLIS_BLAS_LIBRARY libblas.so.3 PATHS "${qp_blis_dir}" NO_DEFAULT_PATH)
  find_file(QP_LAPACK_LIBRARY liblapack.so.3 PATHS "${qp_libdir}/lapack" NO_DEFAULT_PATH)
  foreach(var IN ITEMS QP_BLIS_INCLUDE_DIR QP_BLIS_LIBRARY QP_BLIS_BLAS_LIBRARY QP_LAPACK_LIBRARY)
    if(NOT ${var})
      message(FATAL_ERROR "QP_BLAS=blis: ${var} not found (variant ${QP_BLIS_VARIANT}: Debian's "
        "libblis-${QP_BLIS_VARIANT}-dev and liblapack-dev; or give its path with -D${var}=...)")
    endif()
  endforeach()
  # A symbolic link through /etc/alternatives would be followed only at run time: the files
  # themselves, whose directories go into the RUNPATH.
  foreach(var IN ITEMS QP_BLIS_LIBRARY QP_BLIS_BLAS_LIBRARY QP_LAPACK_LIBRARY)
    get_filename_component(qp_real "${${var}}" REALPATH)
    get_filename_component(qp_real_dir "${qp_real}" DIRECTORY)
    get_filename_component(qp_name "${${var}}" NAME)
    set(${var}_LINKED "${qp_real_dir}/${qp_name}")
    if(NOT EXISTS "${${var}_LINKED}")
      set(${var}_LINKED "${qp_real}")
    endif()
  endforeach()
  # A system directory to the compiler: BLIS's cblas.h brings blis.h's static functions, unused.
  target_include_directories(qp_blas SYSTEM INTERFACE "${QP_BLIS_INCLUDE_DIR}")
  # The order is the order of the program's NEEDED entries: libblis.so.4 before the libblas.so.3
  # that only holds the soname. --no-as-needed keeps that one where a toolchain defaults to
  # --as-needed (nothing is left undefined for it).
  target_link_libraries(qp_blas INTERFACE "${QP_BLIS_LIBRARY_LINKED}" "${QP_LAPACK_LIBRARY_LINKED}"
    "-Wl,--push-state,--no-as-needed" "${QP_BLIS_BLAS_LIBRARY_LINKED}" "-Wl,--pop-state" m)
  set(QP_BLAS_NAME "blis")
  message(STATUS "BLAS: BLIS (${QP_BLIS_VARIANT}) ${QP_BLIS_LIBRARY_LINKED}, "
    "reference LAPACK ${QP_LAPACK_LIBRARY_LINKED}; libblas.so.3 from ${QP_BLIS_BLAS_LIBRARY_LINKED}")
else()
  message(FATAL_ERROR "QP_BLAS is '${QP_BLAS}': openblas or blis")
endif()

# ScaLAPACK's pkg-config file names -llapack -lblas in OpenBLAS's directory (Debian), which would
# put that directory into the RUNPATH: with QP_BLAS=blis only the ScaLAPACK library itself is
# linked, and its libblas.so.3 / liblapack.so.3 are the program's (BLIS's and the reference
# LAPACK's). Call after pkg_check_modules(SCALAPACK ...); defines qp_scalapack.
function(qp_blas_scalapack)
  add_library(qp_scalapack INTERFACE)
  if(QP_BLAS STREQUAL "openblas")
    target_link_libraries(qp_scalapack INTERFACE PkgConfig::SCALAPACK)
    return()
  endif()
  set(libs "")
  foreach(lib IN LISTS SCALAPACK_LINK_LIBRARIES)
    get_filename_component(name "${lib}" NAME)
    if(name MATCHES "scalapack")
      list(APPEND libs "${lib}")
    endif()
  endforeach()
  if(NOT libs)
    message(FATAL_ERROR "QP_BLAS=blis: no ScaLAPACK library among '${SCALAPACK_LINK_LIBRARIES}'")
  endif()
  target_include_directories(qp_scalapack INTERFACE ${SCALAPACK_INCLUDE_DIRS})
  target_link_libraries(qp_scalapack INTERFACE ${libs} MPI::MPI_C qp_blas)
  message(STATUS "ScaLAPACK: ${libs}; its BLAS and LAPACK are BLIS and the reference LAPACK "
    "(the libblas.so.3 and liblapack.so.3 above, not the alternatives; `qmlpipe --version` checks)")
endfunction()
