/* test_hooks.c: the product's side of the test hooks (test_hooks.h): each a no-op until the
 * test library installs its own, and fault.h's entry points, which go to them. */
#include "test_hooks.h"

static const qp_test_hooks *qp_hooks = NULL;

int qp_fault_on = 0;

void qp_test_hooks_install(const qp_test_hooks *hooks) { qp_hooks = hooks; }

int qp_test_hooks_installed(void) { return qp_hooks != NULL; }

const char *qp_test_hook(const char *name) {
  return qp_hooks && qp_hooks->setting ? qp_hooks->setting(name) : NULL;
}

qp_err qp_fault_init(int rank) {
  qp_fault_on = 0;
  if (qp_hooks && qp_hooks->fault_init) QP_CALL(qp_hooks->fault_init(rank));
  return QP_OK;
}

int qp_fault_alloc_hit(const char *term) {
  return qp_hooks && qp_hooks->fault_alloc ? qp_hooks->fault_alloc(term) : 0;
}

int qp_fault_call_hit(qp_fault_kind kind, const char *name) {
  return qp_hooks && qp_hooks->fault_call ? qp_hooks->fault_call(kind, name) : 0;
}

void qp_fault_stop_after_stage(const char *stage, qp_err (*agree)(qp_err)) {
  if (qp_hooks && qp_hooks->stage_ended) qp_hooks->stage_ended(stage, agree);
}

void qp_fault_report(FILE *out) {
  if (qp_fault_on && qp_hooks && qp_hooks->fault_report) qp_hooks->fault_report(out);
}

void qp_test_pause(const char *where) {
  if (qp_hooks && qp_hooks->pause) qp_hooks->pause(where);
}
