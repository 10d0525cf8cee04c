/* bytes_text.c: byte counts for messages (bytes_text.h). */
#include "bytes_text.h"

#include <math.h>
#include <stdio.h>

qp_bytes_text qp_bytes_readable(double bytes) {
  const double gib = 1073741824.0, mib = 1048576.0;
  qp_bytes_text t;
  if (!isfinite(bytes))
    snprintf(t.text, sizeof t.text, "%g bytes", bytes);
  else if (fabs(bytes) >= 0.1 * gib)
    snprintf(t.text, sizeof t.text, "%.3f GiB", bytes / gib);
  else if (fabs(bytes) >= 0.1 * mib)
    snprintf(t.text, sizeof t.text, "%.2f MiB", bytes / mib);
  else
    snprintf(t.text, sizeof t.text, "%.0f bytes", bytes);
  return t;
}
