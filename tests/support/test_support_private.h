/* test_support_private.h: what the test library's files share (tests/support/). */
#ifndef QP_TEST_SUPPORT_PRIVATE_H
#define QP_TEST_SUPPORT_PRIVATE_H

#include <stdio.h>

#include "fault.h"
#include "qp_error.h"

/* fault_inject.c: the hooks of base/fault.h. */
qp_err qp_fault_inject_init(int rank);
int qp_fault_inject_alloc(const char *term);
int qp_fault_inject_call(qp_fault_kind kind, const char *name);
void qp_fault_inject_report(FILE *out);
void qp_fault_inject_stage_ended(const char *stage, qp_err (*agree)(qp_err));

/* test_hooks_env.c: the settings and the pause. */
const char *qp_test_setting_env(const char *name);
void qp_test_pause_env(const char *where);

#endif
