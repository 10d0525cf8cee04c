/* error.c: the thread-local error record behind qp_error.h. */
#include "qp_error.h"

#include <stdarg.h>
#include <string.h>

enum { QP_ERROR_MESSAGE_MAX = 1024, QP_ERROR_FRAMES_MAX = 16 };

typedef struct qp_error_frame {
  const char *file;
  const char *func;
  int line;
} qp_error_frame;

static _Thread_local struct {
  qp_err code;
  char message[QP_ERROR_MESSAGE_MAX];
  qp_error_frame frames[QP_ERROR_FRAMES_MAX];
  int n_frames;
} qp_error_state;

qp_err qp_error_set(qp_err code, const char *file, int line, const char *func, const char *fmt,
                    ...) {
  /* Formatted aside first, then copied: the arguments may be the current message itself
   * (qp_error_message(), the usual way to put context around a LAPACK or library detail),
   * which formatting straight into the record would overwrite while reading it. */
  char message[QP_ERROR_MESSAGE_MAX];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  memcpy(qp_error_state.message, message, sizeof message);
  qp_error_state.code = code;
  qp_error_state.n_frames = 0;
  qp_error_trace(file, line, func);
  return code;
}

void qp_error_trace(const char *file, int line, const char *func) {
  if (qp_error_state.n_frames >= QP_ERROR_FRAMES_MAX) return;
  qp_error_state.frames[qp_error_state.n_frames++] = (qp_error_frame){file, func, line};
}

const char *qp_error_message(void) { return qp_error_state.message; }
qp_err qp_error_code(void) { return qp_error_state.code; }

void qp_error_clear(void) {
  qp_error_state.code = QP_OK;
  qp_error_state.message[0] = '\0';
  qp_error_state.n_frames = 0;
}

const char *qp_err_name(qp_err code) {
  switch (code) {
  case QP_OK: return "ok";
  case QP_ERR_NOMEM: return "out of memory";
  case QP_ERR_BUDGET: return "memory budget exceeded";
  case QP_ERR_NOT_POSDEF: return "numerical";
  case QP_ERR_INPUT: return "bad input";
  case QP_ERR_UNSUPPORTED: return "unsupported";
  case QP_ERR_IO: return "I/O error";
  case QP_ERR_MPI: return "MPI error";
  case QP_ERR_GPU: return "GPU error";
  case QP_ERR_LIBRARY: return "library error";
  case QP_ERR_INTERNAL: return "internal error";
  }
  return "unknown error";
}

/* 1 is left to crashes and 2 to usage errors, so a status of 3 or more is always ours. */
int qp_err_exit_status(qp_err code) { return code == QP_OK ? 0 : 2 + (int)code; }

void qp_error_print(FILE *out, int verbose) {
  fprintf(out, "qmlpipe: error (%s): %s\n", qp_err_name(qp_error_state.code),
          qp_error_state.message);
  if (!verbose) return;
  for (int i = 0; i < qp_error_state.n_frames; ++i) {
    const qp_error_frame *f = &qp_error_state.frames[i];
    fprintf(out, "  at %s (%s:%d)\n", f->func, f->file, f->line);
  }
}
