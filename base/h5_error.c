/* h5_error.c: HDF5 failures as qp_err (h5_error.h). */
#include "h5_error.h"

#include <stdarg.h>
#include <stdio.h>

enum {
  QP_H5_MSG_MAX = 320,           /* one frame of HDF5's stack, as we quote it */
  QP_H5_CONTEXT_MAX = 4096 + 256 /* our context: a path and a few words */
};

/* What we keep of HDF5's error stack. */
typedef struct qp_h5_stack {
  int n;                      /* frames */
  char outer[QP_H5_MSG_MAX];  /* "api(): description" of the API call that failed */
  char inner[QP_H5_MSG_MAX];  /* description where HDF5 first detected the error ("" if none) */
} qp_h5_stack;

/* Walked downward: frame 0 is the API call, the last frame the innermost. */
static herr_t qp_h5_stack_entry(unsigned n, const H5E_error2_t *e, void *data) {
  qp_h5_stack *s = data;
  if (n == 0) {
    const char *func = e->func_name ? e->func_name : "?";
    const char *desc = e->desc && e->desc[0] ? e->desc : "(no description)";
    snprintf(s->outer, sizeof s->outer, "%s(): %s", func, desc);
  }
  snprintf(s->inner, sizeof s->inner, "%s", e->desc ? e->desc : "");
  s->n++;
  return 0;
}

/* Reads HDF5's error stack into `s` and clears it. */
static void qp_h5_stack_take(qp_h5_stack *s) {
  *s = (qp_h5_stack){0};
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, qp_h5_stack_entry, s);
  H5Eclear2(H5E_DEFAULT);
}

/* The two message forms: HDF5's full account (qp_h5_fail) or its innermost description only
 * (qp_h5_fail_innermost). */
typedef enum qp_h5_form { QP_H5_FORM_FULL, QP_H5_FORM_INNERMOST } qp_h5_form;

static qp_err qp_h5_vfail(qp_h5_form form, qp_err code, const char *file, int line,
                          const char *func, const char *fmt, va_list args) QP_PRINTF(6, 0);
static qp_err qp_h5_vfail(qp_h5_form form, qp_err code, const char *file, int line,
                          const char *func, const char *fmt, va_list args) {
  char context[QP_H5_CONTEXT_MAX];
  vsnprintf(context, sizeof context, fmt, args);
  qp_h5_stack stack;
  qp_h5_stack_take(&stack);
  if (form == QP_H5_FORM_INNERMOST)
    return qp_error_set(code, file, line, func, "%s%s%s", context, stack.inner[0] ? ": " : "",
                        stack.inner);
  if (stack.n == 0) return qp_error_set(code, file, line, func, "%s (HDF5 failed)", context);
  if (stack.n == 1)
    return qp_error_set(code, file, line, func, "%s: HDF5: %s", context, stack.outer);
  return qp_error_set(code, file, line, func, "%s: HDF5: %s (%s)", context, stack.outer,
                      stack.inner[0] ? stack.inner : "(no description)");
}

qp_err qp_h5_fail(qp_err code, const char *file, int line, const char *func, const char *fmt,
                  ...) {
  va_list args;
  va_start(args, fmt);
  qp_err err = qp_h5_vfail(QP_H5_FORM_FULL, code, file, line, func, fmt, args);
  va_end(args);
  return err;
}

qp_err qp_h5_fail_innermost(qp_err code, const char *file, int line, const char *func,
                            const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  qp_err err = qp_h5_vfail(QP_H5_FORM_INNERMOST, code, file, line, func, fmt, args);
  va_end(args);
  return err;
}

void qp_h5_quiet_begin(qp_h5_quiet *q) {
  H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void qp_h5_quiet_end(const qp_h5_quiet *q) {
  H5Eclear2(H5E_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

static int qp_h5_close_failures;

void qp_h5_mark_close_failed(void) { qp_h5_close_failures = 1; }

int qp_h5_close_failed(void) { return qp_h5_close_failures; }
