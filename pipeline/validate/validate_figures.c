/* validate_figures.c: see validate_figures.h. */
#include "validate_figures.h"

#include <math.h>
#include <stdio.h>

double qp_val_rel_error(int64_t measured, int64_t predicted) {
  if (measured <= 0 || predicted < 0) return NAN;
  return ((double)measured - (double)predicted) / (double)measured;
}

int qp_val_outside(double err, double tolerance) { return !isfinite(err) || fabs(err) > tolerance; }

const char *qp_val_mib_text(int64_t bytes, char *buf, size_t size) {
  if (bytes < 0)
    snprintf(buf, size, "n/a");
  else
    snprintf(buf, size, "%.2f", (double)bytes / 1048576.0);
  return buf;
}

const char *qp_val_err_text(double err, int judged, char *buf, size_t size) {
  if (!isfinite(err))
    snprintf(buf, size, "n/a");
  else if (judged)
    snprintf(buf, size, "%+.2f", 100.0 * err);
  else
    snprintf(buf, size, "(%+.2f)", 100.0 * err);
  return buf;
}
