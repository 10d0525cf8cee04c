/* h5_error.h: HDF5 failures as qp_err, with HDF5's own message.
 *
 * HDF5 reports a failure as a negative hid_t / herr_t and keeps the details on its
 * (thread-local) error stack: one frame per library function, from the API call that failed
 * down to where the error was first detected. The functions here read that stack into the
 * message of one qp_err (qp_error.h) and clear it, so that the next failure starts afresh.
 *
 * HDF5 also prints its stack to stderr by default; qp_h5_quiet_begin/end switch that off for
 * a while and put back whatever was set before. */
#ifndef QP_H5_ERROR_H
#define QP_H5_ERROR_H

#include <hdf5.h>

#include "qp_error.h"

/** Records an HDF5 failure and clears HDF5's error stack.
 *
 *  The message is the printf-formatted context, then HDF5's account of the failure:
 *  "<context>: HDF5: <api>(): <description> (<innermost description>)", where <api> is the
 *  API call that failed and the innermost description says where HDF5 first detected the
 *  error (left out when the stack has one frame); "<context> (HDF5 failed)" when the stack is
 *  empty. Use it (or QP_H5_FAIL, QP_H5_GOTO) right after the failing call, before any other
 *  HDF5 call replaces the stack.
 *
 *  @param code  the code to record, usually QP_ERR_IO
 *  @param file, line, func  where the failure was seen (__FILE__, __LINE__, __func__)
 *  @param fmt, ...  printf format and arguments of the context: what was being done to which
 *                   file or object
 *  @return `code` (recorded as the current error, replacing any earlier one) */
qp_err qp_h5_fail(qp_err code, const char *file, int line, const char *func, const char *fmt,
                  ...) QP_PRINTF(5, 6);

/** Records an HDF5 failure, with only the innermost description, and clears HDF5's stack.
 *
 *  The message is "<context>: <innermost description>", or just "<context>" when the stack is
 *  empty or its innermost frame has no description: shorter than qp_h5_fail's, for messages
 *  whose context already names the operation.
 *
 *  @param code  the code to record
 *  @param file, line, func  where the failure was seen (__FILE__, __LINE__, __func__)
 *  @param fmt, ...  printf format and arguments of the context
 *  @return `code` (recorded as the current error) */
qp_err qp_h5_fail_innermost(qp_err code, const char *file, int line, const char *func,
                            const char *fmt, ...) QP_PRINTF(5, 6);

/** Fails with `code` and HDF5's message (qp_h5_fail): returns from the calling function, as
 *  QP_FAIL does. */
#define QP_H5_FAIL(code, ...)                                                                  \
  return qp_h5_fail((code), __FILE__, __LINE__, __func__, __VA_ARGS__)

/** Evaluates an HDF5 call (hid_t, herr_t, htri_t, ssize_t...); when its result is negative,
 *  records QP_ERR_IO with the context and HDF5's message (qp_h5_fail) and jumps to `label`.
 *  Like the other _GOTO forms, it needs a local `qp_err err`. */
#define QP_H5_GOTO(expr, label, ...)                                                           \
  do {                                                                                         \
    if ((expr) < 0) {                                                                          \
      err = qp_h5_fail(QP_ERR_IO, __FILE__, __LINE__, __func__, __VA_ARGS__);                  \
      goto label;                                                                              \
    }                                                                                          \
  } while (0)

/** HDF5's automatic error printing, saved by qp_h5_quiet_begin. */
typedef struct qp_h5_quiet {
  H5E_auto2_t func;
  void *data;
} qp_h5_quiet;

/** Saves HDF5's automatic error printing (of the default error stack) into `q` and switches
 *  it off. Pair every call with qp_h5_quiet_end.
 *  @param q  receives the saved setting (must not be NULL) */
void qp_h5_quiet_begin(qp_h5_quiet *q);

/** Clears HDF5's error stack and restores the printing saved by qp_h5_quiet_begin.
 *  @param q  the setting that qp_h5_quiet_begin saved */
void qp_h5_quiet_end(const qp_h5_quiet *q);

/** Records that an H5Fclose failed (a full disk): HDF5 1.10 then keeps a freed file in its
 *  table, and its exit handler crashes on it (h5_image.h). qmlpipe's main ends without the
 *  libraries' exit handlers when this was recorded (qp_h5_close_failed). */
void qp_h5_mark_close_failed(void);
/** 1 when an H5Fclose has failed in this process. */
int qp_h5_close_failed(void);

#endif
