# check_layering.cmake: the stages never look behind the linalg table (docs/architecture.md).
#   cmake -DSOURCE_DIR=... -P check_layering.cmake
# Fails when a file of pipeline/stages/ or pipeline/sky/ includes a backend or MPI header, or
# tests which backend it runs on (a matrix's grid or space, the table's `distributed` flag,
# qp_comm_*), or reaches the hostdev backend: entries of a matrix of any space are reached
# through host windows (linalg/host_window.h);
# what differs between backends is the linalg table's (qp_linalg_align, qp_linalg_replicate,
# qp_linalg_sum_partials, qp_linalg_transpose and the local element ranges of matrix.h).
file(GLOB stage_files ${SOURCE_DIR}/pipeline/stages/*.[ch] ${SOURCE_DIR}/pipeline/sky/*.[ch])
set(forbidden
  "#include [\"<](comm|grid|scalapack|cuda|cuda_private|cuda_kernels|hostdev|mpi|cublas_v2|cusolverDn)\\.h[\">]"
  "->grid[^_a-z]" "\\.grid[^_a-z]" "->space[^_a-z]" "\\.space[^_a-z]" "QP_SPACE_DEVICE"
  "->distributed" "qp_comm_[a-z]+\\(" "qp_grid_[a-z]+\\(")
set(failures "")
foreach(f ${stage_files})
  file(READ ${f} text)
  foreach(pattern ${forbidden})
    string(REGEX MATCH "${pattern}" hit "${text}")
    if(hit)
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
      string(APPEND failures "  ${rel}: '${hit}'\n")
    endif()
  endforeach()
endforeach()
list(LENGTH stage_files n)
if(n LESS 10)
  message(FATAL_ERROR "check_layering: found only ${n} stage files under ${SOURCE_DIR}")
endif()
if(failures)
  message(FATAL_ERROR "stage code looks behind the linalg table:\n${failures}")
endif()
message(STATUS "check_layering: ${n} stage and sky files, none looks behind the linalg table")
