/* progress.h: progress lines of long loops on stderr ("fisher_run: 12/46 products (26%),
 * 8.1 s"), at most one every few seconds, plus the first and the last. */
#ifndef QP_PROGRESS_H
#define QP_PROGRESS_H

typedef struct qp_progress {
  const char *label;
  const char *unit;
  long total;
  int enabled;
  double start, last; /* qp_clock_seconds */
} qp_progress;

void qp_progress_start(qp_progress *pr, int enabled, const char *label, const char *unit,
                       long total);
void qp_progress_step(qp_progress *pr, long done);
/** A line "label: what, N s" (elapsed since start), when enabled. */
void qp_progress_note(const qp_progress *pr, const char *what);

#endif
