# check_layering.cmake: the include rules of docs/architecture.md ("The layers"), checked on the
# source tree.   cmake -DSOURCE_DIR=... -P check_layering.cmake
#
# 1. Folders: every `#include "x.h"` of a file in a product folder names a header of a folder
#    that the table below allows (a header is found by its name among the product folders'
#    headers; qp_config.h, generated, is allowed everywhere). The build enforces most of it
#    through the libraries' include paths; this check also covers the folders that share a
#    library (pipeline/'s) and says which file broke which rule.
# 2. Stages: a file of pipeline/stages/ or pipeline/sky/ never looks behind the linalg table:
#    no backend or MPI header, no test of which backend it runs on (a matrix's grid or space,
#    the table's `distributed` flag, qp_comm_*/qp_grid_*); entries of a matrix of any space are
#    reached through host windows (linalg/host_window.h), and what differs between backends is
#    the table's (qp_linalg_align, qp_linalg_replicate, qp_linalg_sum_partials,
#    qp_linalg_transpose and the local element ranges of matrix.h).
include(${CMAKE_CURRENT_LIST_DIR}/source_patterns.cmake)
set(folders base budget budget/private linalg linalg/backends linalg/tiled linalg/blas io
  pipeline pipeline/sky pipeline/stages pipeline/run pipeline/slurm pipeline/validate
  pipeline/cli pipeline/bench)
# What each folder may include besides itself. `linalg` alone means linalg/'s public headers
# (its top and blas/); its private folders (backends/, tiled/) only linalg/ itself includes.
set(linalg_all linalg linalg/backends linalg/tiled linalg/blas)
set(allow_base "")
set(allow_budget base budget/private)
set(allow_budget/private base budget)
foreach(d linalg linalg/backends linalg/tiled linalg/blas)
  set(allow_${d} base budget ${linalg_all})
endforeach()
set(allow_io base budget linalg/backends.h)
# pipeline/'s core may include the sky's pure functions (legendre.h, spin_harmonics.h: they
# include nothing of pipeline/) and each stage's declaration of its terms (stages/*_terms.h),
# which the memory model gathers; nothing else of sky/ or stages/, and nothing of run/ or above.
set(allow_pipeline base budget linalg io pipeline/sky/legendre.h pipeline/sky/spin_harmonics.h
  "pipeline/stages/*_terms.h")
set(allow_pipeline/sky base budget linalg io pipeline)
set(allow_pipeline/stages base budget linalg io pipeline pipeline/sky)
set(allow_pipeline/run base budget linalg io pipeline pipeline/sky pipeline/stages)
set(allow_pipeline/slurm base budget linalg io pipeline)
set(allow_pipeline/validate base budget linalg/backends.h io)
set(allow_pipeline/cli base budget linalg io pipeline pipeline/sky pipeline/stages pipeline/run
  pipeline/slurm pipeline/validate)
set(allow_pipeline/bench base budget linalg linalg/tiled io pipeline pipeline/sky pipeline/run
  pipeline/slurm pipeline/cli)

# header name -> folder
set(headers "")
foreach(d ${folders})
  file(GLOB hs RELATIVE ${SOURCE_DIR}/${d} ${SOURCE_DIR}/${d}/*.h)
  foreach(h ${hs})
    set(folder_of_${h} ${d})
  endforeach()
endforeach()

set(failures "")
set(n_files 0)
foreach(d ${folders})
  file(GLOB files ${SOURCE_DIR}/${d}/*.c ${SOURCE_DIR}/${d}/*.h ${SOURCE_DIR}/${d}/*.cu)
  foreach(f ${files})
    math(EXPR n_files "${n_files} + 1")
    file(STRINGS ${f} includes REGEX "^#include \"[^\"]+\"")
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" h "${line}")
      if(NOT DEFINED folder_of_${h})
        continue() # qp_config.h (generated), or a header outside the product folders
      endif()
      set(to ${folder_of_${h}})
      if(to STREQUAL d)
        continue()
      endif()
      # A rule is a folder, a folder/header, or a folder/pattern with * (a glob on the name).
      set(allowed 0)
      foreach(rule ${allow_${d}})
        string(REPLACE "*" "[a-z0-9_]*" rule_re "^${rule}$")
        if(rule STREQUAL to OR "${to}/${h}" MATCHES "${rule_re}")
          set(allowed 1)
        elseif(rule STREQUAL "linalg" AND to STREQUAL "linalg/blas")
          set(allowed 1) # `linalg` is linalg/'s public headers: its top and blas/
        endif()
      endforeach()
      if(NOT allowed)
        string(APPEND failures "  ${rel} includes ${to}/${h}: ${d}/ may include only ${allow_${d}}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(n_files LESS 200)
  message(FATAL_ERROR "check_layering: found only ${n_files} source files under ${SOURCE_DIR}")
endif()

file(GLOB stage_files ${SOURCE_DIR}/pipeline/stages/*.[ch] ${SOURCE_DIR}/pipeline/sky/*.[ch])
set(forbidden
  "#include [\"<](comm|grid|scalapack|cuda|cuda_backend|cuda_private|cuda_kernels|hostdev|mpi|cublas_v2|cusolverDn)\\.h[\">]"
  "->grid[^_a-z]" "\\.grid[^_a-z]" "->space[^_a-z]" "\\.space[^_a-z]" "QP_SPACE_DEVICE"
  "->distributed" "qp_comm_[a-z]+\\(" "qp_grid_[a-z]+\\(")
qp_forbidden_patterns("${stage_files}" "${forbidden}" "stage code looks behind the linalg table"
  failures)
list(LENGTH stage_files n)
if(n LESS 10)
  message(FATAL_ERROR "check_layering: found only ${n} stage files under ${SOURCE_DIR}")
endif()
if(failures)
  message(FATAL_ERROR "include rules broken (docs/architecture.md, \"The layers\"):\n${failures}")
endif()
message(STATUS "check_layering: ${n_files} files keep the include rules; ${n} stage and sky files "
  "do not look behind the linalg table")
