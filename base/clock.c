/* clock.c: seconds of the monotonic and CPU clocks (clock.h). */
#include "clock.h"

#include <math.h>

/* A clock that cannot be read (an unknown id: not on Linux) reads 0: times come out 0, never
 * garbage. */
static double qp_clock_read(clockid_t id) {
  struct timespec t;
  if (clock_gettime(id, &t) != 0) return 0.0;
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double qp_clock_seconds(void) { return qp_clock_read(CLOCK_MONOTONIC); }

double qp_clock_cpu_seconds(void) { return qp_clock_read(CLOCK_PROCESS_CPUTIME_ID); }

double qp_clock_thread_cpu_seconds(void) { return qp_clock_read(CLOCK_THREAD_CPUTIME_ID); }

struct timespec qp_clock_timespec(double seconds) {
  const double whole = floor(seconds);
  struct timespec t = {(time_t)whole, (long)((seconds - whole) * 1e9)};
  if (t.tv_nsec >= 1000000000L) { /* rounding */
    t.tv_sec += 1;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}
