/* qmlpipe_test_main.c: qmlpipe-test, qmlpipe's command line with the test library installed
 * (test_support.h): the backend hostdev and the test hooks (QP_FAULT, QP_TEST_*), for the tests
 * and tools that need them. Built beside qmlpipe in the same build tree; never installed. */
#include "cli_main.h"
#include "test_support.h"

int main(int argc, char **argv) {
  qp_test_support_install();
  return qp_cli_main(argc, argv);
}
