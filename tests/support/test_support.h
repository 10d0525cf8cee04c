/* test_support.h: the test library (issue 39, "test-only code is fenced"): what qmlpipe's tests
 * need and qmlpipe must not hold. Linked into qmlpipe-test (the same command-line code as
 * qmlpipe: pipeline/cli/cli_main.h) and the C tests, never into qmlpipe:
 *   - the backend hostdev (hostdev.h), the device emulation, and its forms on several ranks;
 *   - the test hooks' readers (base/test_hooks.h): QP_FAULT and QP_TEST_STOP_AFTER_STAGE
 *     (fault_inject.c), QP_TEST_PAUSE, QP_TEST_BLAS_INT_MAX and QP_TEST_CHECKPOINT_PANEL_BYTES
 *     (test_hooks_env.c; QP_HOSTDEV_CAPACITY, QP_HOSTDEV_CONTEXT and QP_TEST_HOSTDEV_TABLE are
 *     hostdev's own);
 *   - the `null` backend (null_backend.h), which a test registers to show that a backend is
 *     one file and one row.
 * The C tests install it at load (install_at_load.c, linked with it by tests/CMakeLists.txt's
 * qp_add_test); qmlpipe-test calls qp_test_support_install first. */
#ifndef QP_TEST_SUPPORT_H
#define QP_TEST_SUPPORT_H

/** Installs the test hooks and the starts of the test-only backends' rows (linalg/backends.h).
 *  Idempotent; at program start, before any other thread. Exits with a message (status 70)
 *  if the rows refuse, which only a mismatch between backends.c and this library causes. */
void qp_test_support_install(void);

#endif
