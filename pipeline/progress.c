/* progress.c: rate-limited progress lines (progress.h). */
#include "progress.h"

#include <stdio.h>

#include "clock.h"

void qp_progress_start(qp_progress *pr, int enabled, const char *label, const char *unit,
                       long total) {
  const double now = qp_clock_seconds();
  *pr = (qp_progress){label, unit, total, enabled, now, now};
}

void qp_progress_step(qp_progress *pr, long done) {
  if (!pr->enabled) return;
  const double now = qp_clock_seconds();
  /* Every 5 s at most, and always at the end. */
  if (done < pr->total && now - pr->last < 5.0) return;
  pr->last = now;
  fprintf(stderr, "[qmlpipe] %s: %ld/%ld %s (%.0f%%), %.1f s\n", pr->label, done, pr->total,
          pr->unit, pr->total ? 100.0 * (double)done / (double)pr->total : 100.0,
          now - pr->start);
}

void qp_progress_note(const qp_progress *pr, const char *what) {
  if (!pr->enabled) return;
  fprintf(stderr, "[qmlpipe] %s: %s, %.1f s\n", pr->label, what, qp_clock_seconds() - pr->start);
}
