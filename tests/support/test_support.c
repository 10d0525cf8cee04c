/* test_support.c: installs the test library (test_support.h). */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>

#include "backends.h"
#include "hostdev.h"
#include "test_hooks.h"
#include "test_support_private.h"

static const qp_test_hooks qp_test_support_hooks = {
    .setting = qp_test_setting_env,
    .fault_init = qp_fault_inject_init,
    .fault_alloc = qp_fault_inject_alloc,
    .fault_call = qp_fault_inject_call,
    .fault_report = qp_fault_inject_report,
    .stage_ended = qp_fault_inject_stage_ended,
    .pause = qp_test_pause_env,
};

/* The test-only rows of backends.c: their starts, and for `plan` (which starts no backend)
 * the one-rank table, whose workspaces are a formula. */
static const struct {
  const char *name;
  qp_backend_start start;
  qp_backend_table sizes;
} qp_test_support_rows[] = {
    {"hostdev", qp_hostdev_start, qp_linalg_hostdev_ops},
    {"hostdev-dist", qp_hostdev_dist_start, qp_linalg_hostdev_ops},
    {"hostdev-tiled", qp_hostdev_tiled_start, qp_linalg_hostdev_ops},
};

void qp_test_support_install(void) {
  qp_test_hooks_install(&qp_test_support_hooks);
  for (size_t i = 0; i < sizeof qp_test_support_rows / sizeof qp_test_support_rows[0]; ++i) {
    if (qp_backends_install(qp_test_support_rows[i].name, qp_test_support_rows[i].start,
                            qp_test_support_rows[i].sizes) == QP_OK)
      continue;
    qp_error_print(stderr, 0);
    fprintf(stderr, "qp_test_support_install: the test-only rows of linalg/backends.c do not "
                    "match the test library\n");
    exit(70);
  }
}
