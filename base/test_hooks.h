/* test_hooks.h: the product's side of the test hooks (issue 39, "test-only code is fenced").
 *
 * A few places of qmlpipe may be steered by a test: a chosen operation fails (QP_FAULT,
 * fault.h), a run stops after a chosen stage (QP_TEST_STOP_AFTER_STAGE), pauses at a chosen
 * point (QP_TEST_PAUSE), or takes a test's value for a limit (QP_TEST_BLAS_INT_MAX,
 * QP_TEST_CHECKPOINT_PANEL_BYTES) or a place (QP_TEST_HEALPIX_DATA_DIR: where HEALPix's pixel
 * window tables are, io/pixel_window.c). The product reaches each only through this interface,
 * which it leaves empty: in the installed qmlpipe every hook is a no-op, and no QP_FAULT or
 * QP_TEST_* variable is ever read. The test library (tests/support/test_support.h) installs what
 * the hooks do, reading the environment, in the programs that link it: qmlpipe-test (built beside
 * qmlpipe from the same command-line code) and the C tests. */
#ifndef QP_TEST_HOOKS_H
#define QP_TEST_HOOKS_H

#include <stdio.h>

#include "fault.h"
#include "qp_error.h"

typedef struct qp_test_hooks {
  /* The value of the test setting `name` (a QP_TEST_* variable), or NULL: unset. */
  const char *(*setting)(const char *name);
  /* QP_FAULT (fault.h): read at start, a tracked allocation, a LAPACK or HDF5 call, the
   * report at exit; fault_init sets qp_fault_on when a fault is asked for. */
  qp_err (*fault_init)(int rank);
  int (*fault_alloc)(const char *term);
  int (*fault_call)(qp_fault_kind kind, const char *name);
  void (*fault_report)(FILE *out);
  /* A stage has ended and its checkpoint is written (QP_TEST_STOP_AFTER_STAGE). */
  void (*stage_ended)(const char *stage, qp_err (*agree)(qp_err));
  /* A point a test may pause at (QP_TEST_PAUSE): a stage's name, or "before_rename". */
  void (*pause)(const char *where);
} qp_test_hooks;

/** Test library only: the hooks of this process (NULL: none, as in qmlpipe). At program
 *  start, before any other thread. */
void qp_test_hooks_install(const qp_test_hooks *hooks);
/** The test setting `name`, or NULL: always NULL in the product. */
const char *qp_test_hook(const char *name);
/** 1 when a test library installed its hooks (qmlpipe-test, the C tests). */
int qp_test_hooks_installed(void);
/** The pause hook at `where` (interrupt.h's qp_interrupt_test_pause): a no-op in the product. */
void qp_test_pause(const char *where);

#endif
