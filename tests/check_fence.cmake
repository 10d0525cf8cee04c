# check_fence.cmake: the product holds no test-only code (issue 39; tests/support/test_support.h).
#   cmake -DSOURCE_DIR=... -P check_fence.cmake
# Fails when a file of budget/, linalg/, io/ or pipeline/ reads a test hook from the environment
# (getenv of QP_FAULT, QP_TEST_* or QP_HOSTDEV_*: a hook is asked of base/test_hooks.h, which
# only the test library fills) or includes a header of the test library. product_fence runs the
# built qmlpipe for the same fence.
include(${CMAKE_CURRENT_LIST_DIR}/source_patterns.cmake)
file(GLOB_RECURSE product_files ${SOURCE_DIR}/budget/*.[ch] ${SOURCE_DIR}/linalg/*.[ch]
  ${SOURCE_DIR}/io/*.[ch] ${SOURCE_DIR}/pipeline/*.[ch])
set(forbidden
  "getenv\\(\"QP_(FAULT|TEST_|HOSTDEV_)"
  "#include [\"<](hostdev|hostdev_private|test_support|test_support_private|null_backend)\\.h[\">]")
set(failures "")
qp_forbidden_patterns("${product_files}" "${forbidden}" "test-only code in the product"
  failures)
list(LENGTH product_files n)
if(n LESS 100)
  message(FATAL_ERROR "check_fence: found only ${n} product files under ${SOURCE_DIR}")
endif()
if(failures)
  message(FATAL_ERROR "product code reaches test-only code (tests/support/):\n${failures}")
endif()
message(STATUS "check_fence: ${n} product files, none reads a test hook or the test library")
