# test_cuda_version.cmake: the CUDA version floor (cmake/qp_cuda_version.cmake) in script mode.
#   cmake -DSOURCE_DIR=... [-DVERSION=x.y] -P test_cuda_version.cmake
# Without VERSION: runs itself with 11.8 (must stop, naming the 64-bit APIs and 12.0) and with
# 12.0 and 13.0 (must pass). With VERSION: just the check, for the runs above.
if(DEFINED VERSION)
  include(${SOURCE_DIR}/cmake/qp_cuda_version.cmake)
  qp_check_cuda_version(${VERSION})
  return()
endif()
foreach(case "11.8;1" "11.4.4;1" "12.0;0" "13.0.88;0")
  list(GET case 0 version)
  list(GET case 1 should_fail)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${SOURCE_DIR} -DVERSION=${version}
    -P ${CMAKE_CURRENT_LIST_FILE} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(should_fail AND rc EQUAL 0)
    message(FATAL_ERROR "CUDA ${version} was accepted; the backend needs 12.0")
  endif()
  if(should_fail AND NOT err MATCHES "cublasDgemm_64.*cusolverDnXtrtri")
    message(FATAL_ERROR "CUDA ${version}: the refusal does not name the APIs:\n${err}")
  endif()
  if(NOT should_fail AND NOT rc EQUAL 0)
    message(FATAL_ERROR "CUDA ${version} was refused:\n${err}")
  endif()
  message(STATUS "CUDA ${version}: ${rc}")
endforeach()
