/* device_capacity.h: a plan chunked under memory.device_limit run on an emulated device of
 * that size (hostdev's capacity), where the unchunked run must run out, for the tests of the
 * device chunkings (test_hostdev_map_batches, test_hostdev_w_blocks). Header-only: its checks
 * count in the including test's failures. */
#ifndef QP_TEST_DEVICE_CAPACITY_H
#define QP_TEST_DEVICE_CAPACITY_H

#include <string.h>

#include "budget_check.h"
#include "fixture.h"
#include "hostdev.h"
#include "test_util.h"

/* The plan cut `total` into pieces of `planned` (`want` expected): several, the last smaller,
 * and the route's reason says "<unit>s of <planned> of <total>" ("W in blocks", "maps in
 * batches"). */
static inline void check_pieces(const char *what, const char *unit, int64_t planned, int64_t want,
                                int64_t total, const char *path_reason) {
  TEST_ASSERT(planned == want, "%s: planned %s of %lld, expected %lld", what, unit,
              (long long)planned, (long long)want);
  TEST_ASSERT(want > 0 && total % want != 0 && total > want,
              "%s: %lld in %s of %lld: want several, the last smaller", what, (long long)total,
              unit, (long long)want);
  char text[96];
  snprintf(text, sizeof text, "%s of %lld of %lld", unit, (long long)want, (long long)total);
  TEST_ASSERT(strstr(path_reason, text) != NULL, "%s: the route's reason lacks '%s': %s", what,
              text, path_reason);
}

/* On a hostdev device of `limit` bytes (and a page per live block for their rounding), cfg
 * under device_limit `limit` runs with its model exact (its plan's dimensions to *planned, for
 * the caller to check), and unchunked runs out of device memory, leaving nothing on the
 * device. Unchunked: under a device_limit of 1 PiB, which every piece fits whole (without a
 * limit the maps would be read in the default batches, planner_batch.c). The capacity is
 * lifted again at the end. */
static inline void check_capacity(qp_config *cfg, double limit, const char *what,
                                  qp_model_dims *planned) {
  qp_problem p;
  qp_meter_sample baseline;
  qp_hostdev_set_capacity((size_t)limit + 8 * 4096);
  cfg->device_limit = limit;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  *planned = p.plan->model_dims;
  qp_check_budget_exact(&p);
  qp_problem_free(&p);
  cfg->device_limit = 1125899906842624.0;
  qp_err full = qp_fixture_run(cfg, &p, &baseline);
  cfg->device_limit = 0;
  TEST_ASSERT(full == QP_ERR_NOMEM && strstr(qp_error_message(), "out of device memory"),
              "%s, unchunked on a device of the chunked plan: got %s: %s", what, qp_err_name(full),
              qp_error_message());
  printf("%s, unchunked: %s\n", what, qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "%s: device bytes left after running out",
              what);
  qp_hostdev_set_capacity(0);
}

#endif
