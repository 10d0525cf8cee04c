/* qp_error.h: the one status type of qmlpipe and the macros that propagate it.
 *
 * Every function that can fail returns qp_err (QP_OK == 0) and hands results back through
 * pointer arguments. The first failure records a message; each QP_CALL on the way up adds a
 * frame (file, line, function) to a short traceback, so that `qmlpipe` can print what went
 * wrong and where. The state is thread-local. */
#ifndef QP_ERROR_H
#define QP_ERROR_H

#include <stdio.h>

/* QP_ERR_NOT_POSDEF is the numerical error in general (exit 5): a factorisation that fails, a
 * matrix too ill-conditioned for the asked accuracy, a result that is not finite. */
typedef enum qp_err {
  QP_OK = 0,
  QP_ERR_NOMEM,          /* the operating system refused memory */
  QP_ERR_BUDGET,         /* a prediction exceeds memory.host_limit / device_limit */
  QP_ERR_NOT_POSDEF,     /* Cholesky failed: LAPACK info > 0 */
  QP_ERR_INPUT,          /* bad user input: config, maps, mask, spectra, sizes */
  QP_ERR_UNSUPPORTED,    /* an operation or option this build or backend lacks */
  QP_ERR_IO,             /* a file could not be read or written */
  QP_ERR_MPI,
  QP_ERR_GPU,
  QP_ERR_LIBRARY,        /* an outside library returned an error (LAPACK info < 0, HDF5) */
  QP_ERR_INTERNAL        /* a bug in qmlpipe */
} qp_err;
#define QP_ERR_NUMERICAL QP_ERR_NOT_POSDEF

#if defined(__GNUC__)
#define QP_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define QP_PRINTF(fmt_index, first_arg)
#endif

/** Records a new error (replacing any earlier one) and returns its code. The arguments may
 *  include qp_error_message(), the current error's message, to wrap it in context
 *  ("the Fisher matrix ... (%s)"): the message is formatted aside before it replaces the old
 *  one. The message is cut at 1023 characters; the traceback starts afresh at this frame. */
qp_err qp_error_set(qp_err code, const char *file, int line, const char *func, const char *fmt,
                    ...) QP_PRINTF(5, 6);
/** Adds a traceback frame to the current error. */
void qp_error_trace(const char *file, int line, const char *func);
/** The message of the current error ("" when none). */
const char *qp_error_message(void);
/** The code of the current error (QP_OK when none). */
qp_err qp_error_code(void);
/** A short name of a code, e.g. "not positive definite". */
const char *qp_err_name(qp_err code);
/** Prints "qmlpipe: error (name): message" and, when verbose, the traceback. */
void qp_error_print(FILE *out, int verbose);
/** Forgets the current error. */
void qp_error_clear(void);
/** The process exit status for a code: 0 for QP_OK, else 2 + code (3..12; 2 is usage). */
int qp_err_exit_status(qp_err code);

/** Fails with `code` and a message when `cond` is false. */
#define QP_CHECK(cond, code, ...)                                                              \
  do {                                                                                         \
    if (!(cond)) return qp_error_set((code), __FILE__, __LINE__, __func__, __VA_ARGS__);       \
  } while (0)

/** Fails unconditionally. */
#define QP_FAIL(code, ...) return qp_error_set((code), __FILE__, __LINE__, __func__, __VA_ARGS__)

/** Calls a qp_err function and returns its error, adding this frame, when it fails. */
#define QP_CALL(expr)                                                                          \
  do {                                                                                         \
    qp_err qp_call_err_ = (expr);                                                              \
    if (qp_call_err_ != QP_OK) {                                                               \
      qp_error_trace(__FILE__, __LINE__, __func__);                                            \
      return qp_call_err_;                                                                     \
    }                                                                                          \
  } while (0)

/* The _GOTO forms are for functions with one cleanup exit: they need a local `qp_err err`. */
#define QP_CALL_GOTO(expr, label)                                                              \
  do {                                                                                         \
    err = (expr);                                                                              \
    if (err != QP_OK) {                                                                        \
      qp_error_trace(__FILE__, __LINE__, __func__);                                            \
      goto label;                                                                              \
    }                                                                                          \
  } while (0)

#define QP_CHECK_GOTO(cond, code, label, ...)                                                  \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      err = qp_error_set((code), __FILE__, __LINE__, __func__, __VA_ARGS__);                   \
      goto label;                                                                              \
    }                                                                                          \
  } while (0)

#endif
