/* install_at_load.c: the test library installed before main in every C test that links it
 * (tests/CMakeLists.txt links this object, not an archive member, so that it is always there):
 * a test starts hostdev by name, or sets a QP_TEST_* variable, as qmlpipe-test would. */
#include "test_support.h"

__attribute__((constructor)) static void qp_test_support_at_load(void) {
  qp_test_support_install();
}
