/* test_backends: the backends' rows (linalg/backends.h) are consistent: every distributed form
 * a row names is a row of the same space, the names a config may use are the list the config's
 * error gives, cuda asks for GPUs and reserves its context, hostdev is test-only and its
 * device memory the process's, and an unknown name has no row. Linked without the test library
 * (tests/support/), as qmlpipe is: every built row has its start, hostdev's rows have none and
 * are refused by name (the config's check, qp_linalg_backend), and a row that lacks its start
 * says why. */
#include <string.h>

#include "backends.h"
#include "matrix.h"
#include "qp_config.h"
#include "test_util.h"

int main(void) {
  TEST_ASSERT(qp_backend_count() >= 4, "only %d rows", qp_backend_count());
  for (int i = 0; i < qp_backend_count(); ++i) {
    const qp_backend *b = qp_backend_at(i);
    TEST_ASSERT(qp_backend_find(b->name) == b, "row %d ('%s') is not found by its name", i,
                b->name);
    if (b->on_ranks) {
      const qp_backend *d = qp_backend_find(b->on_ranks);
      TEST_ASSERT(d && d->space == b->space && !d->on_ranks,
                  "'%s' runs as '%s' on several ranks, which is no distributed row of its space",
                  b->name, b->on_ranks);
    }
    TEST_ASSERT(!b->context_bytes || b->space == QP_SPACE_DEVICE,
                "host backend '%s' reserves a device context", b->name);
  }
  char names[256];
  TEST_ASSERT(strcmp(qp_backend_names(names, sizeof names, 0), "cpu, cuda, dist, hostdev") == 0,
              "configurable names: '%s'", names);
  const qp_backend *cuda = qp_backend_find("cuda"), *hostdev = qp_backend_find("hostdev");
  TEST_ASSERT(cuda && cuda->gpu && cuda->context_bytes == (size_t)768 << 20 &&
                  cuda->space == QP_SPACE_DEVICE && !cuda->test_only,
              "cuda's row");
  TEST_ASSERT(hostdev && hostdev->test_only && hostdev->device_in_host && !hostdev->gpu,
              "hostdev's row");
  TEST_ASSERT(qp_backend_find("cpu")->start, "cpu has no start");
  for (int i = 0; i < qp_backend_count(); ++i) {
    const qp_backend *b = qp_backend_at(i);
    TEST_ASSERT(b->start || b->absent, "'%s' has neither a start nor why it lacks one", b->name);
    TEST_ASSERT(!b->test_only || !b->start, "test-only '%s' has a start without the test library",
                b->name);
  }
  EXPECT_ERROR(qp_backend_check_available(hostdev, "config x.yaml line 3"), QP_ERR_INPUT,
               "config x.yaml line 3: backend 'hostdev' is test-only", "qmlpipe-test");
  TEST_OK(qp_backend_check_available(qp_backend_find("cpu"), "config x.yaml line 3"));
  const qp_linalg_ops *ops = NULL;
  EXPECT_ERROR(qp_linalg_backend("hostdev-dist", &ops), QP_ERR_INPUT,
               "backend 'hostdev-dist' is test-only");
  TEST_OK(qp_linalg_backend("cpu", &ops));
  TEST_ASSERT(ops == qp_linalg_cpu_ops(), "cpu's start gave another table");
#if !QP_HAVE_CUDA
  EXPECT_ERROR(qp_linalg_backend("cuda", &ops), QP_ERR_UNSUPPORTED, "not built with CUDA");
#endif
  TEST_ASSERT(qp_backend_find("nope") == NULL && qp_backend_find(NULL) == NULL,
              "an unknown name has a row");
  TEST_ASSERT(qp_backend_at(-1) == NULL && qp_backend_at(qp_backend_count()) == NULL,
              "rows past the ends");
  return TEST_RETURN();
}
