/* progress.c: rate-limited progress lines (progress.h). */
#include "progress.h"

#include <stdio.h>

static double qp_elapsed(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

void qp_progress_start(qp_progress *pr, int enabled, const char *label, const char *unit,
                       long total) {
  *pr = (qp_progress){label, unit, total, enabled, {0, 0}, {0, 0}};
  clock_gettime(CLOCK_MONOTONIC, &pr->start);
  pr->last = pr->start;
}

void qp_progress_step(qp_progress *pr, long done) {
  if (!pr->enabled) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  /* Every 5 s at most, and always at the end. */
  if (done < pr->total && qp_elapsed(&pr->last, &now) < 5.0) return;
  pr->last = now;
  fprintf(stderr, "[qmlpipe] %s: %ld/%ld %s (%.0f%%), %.1f s\n", pr->label, done, pr->total,
          pr->unit, pr->total ? 100.0 * (double)done / (double)pr->total : 100.0,
          qp_elapsed(&pr->start, &now));
}

void qp_progress_note(const qp_progress *pr, const char *what) {
  if (!pr->enabled) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  fprintf(stderr, "[qmlpipe] %s: %s, %.1f s\n", pr->label, what, qp_elapsed(&pr->start, &now));
}
