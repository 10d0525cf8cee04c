# require_gpu.cmake: QP_REQUIRE_GPU=1 turns the gpu tests' skip into a failure (docs/gpu.md).
# Runs the gpu program TEST (with the ;-list ARGS) once as it is (QP_REQUIRE_GPU removed from
# the environment) and once with QP_REQUIRE_GPU=1:
#   skipped (exit SKIP) the first time, i.e. no usable GPU: the second run must fail (not 0,
#     not SKIP) and say why, naming QP_REQUIRE_GPU;
#   passed (0) the first time, i.e. a working GPU: the second run must pass too.
# Anything else is this test's failure.
# Usage: cmake -DTEST=path -DSKIP=77 [-DARGS=a;b] -P require_gpu.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=QP_REQUIRE_GPU ${TEST} ${ARGS}
  RESULT_VARIABLE plain OUTPUT_VARIABLE plain_out ERROR_VARIABLE plain_err)
execute_process(COMMAND ${CMAKE_COMMAND} -E env QP_REQUIRE_GPU=1 ${TEST} ${ARGS}
  RESULT_VARIABLE required OUTPUT_VARIABLE required_out ERROR_VARIABLE required_err)
message(STATUS "without QP_REQUIRE_GPU: exit ${plain}; with QP_REQUIRE_GPU=1: exit ${required}")
if(plain EQUAL SKIP)
  if(required EQUAL 0 OR required EQUAL SKIP)
    message(FATAL_ERROR "no GPU here, yet QP_REQUIRE_GPU=1 gave exit ${required}, not a "
      "failure:\n${required_out}${required_err}")
  endif()
  if(NOT required_err MATCHES "QP_REQUIRE_GPU=1")
    message(FATAL_ERROR "the failure under QP_REQUIRE_GPU=1 does not say why:\n${required_err}")
  endif()
  message(STATUS "no GPU: skipped as it is, failed under QP_REQUIRE_GPU=1 as it should:\n"
    "${required_err}")
elseif(plain EQUAL 0)
  if(NOT required EQUAL 0)
    message(FATAL_ERROR "the GPU test passed, then failed under QP_REQUIRE_GPU=1 (exit "
      "${required}):\n${required_out}${required_err}")
  endif()
  message(STATUS "a GPU: the test passed with and without QP_REQUIRE_GPU=1")
else()
  message(FATAL_ERROR "the GPU test failed (exit ${plain}):\n${plain_out}${plain_err}")
endif()
