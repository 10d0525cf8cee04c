/* test_clock: base/clock.h, the one clock of qmlpipe: the monotonic seconds never go back and
 * follow a real sleep, the CPU seconds follow real work and not a sleep, and a time converts
 * to the timespec a timed wait takes. */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "test_util.h"

int main(void) {
  /* Never back, over many reads. */
  double last = qp_clock_seconds();
  int backwards = 0;
  for (int i = 0; i < 100000; ++i) {
    const double now = qp_clock_seconds();
    backwards += now < last;
    last = now;
  }
  TEST_ASSERT(backwards == 0, "qp_clock_seconds went back %d time(s)", backwards);

  /* A 50 ms sleep: 50 ms or more of the monotonic clock, little CPU time. */
  const double t0 = qp_clock_seconds(), c0 = qp_clock_cpu_seconds();
  const struct timespec nap = {0, 50000000};
  nanosleep(&nap, NULL);
  const double slept = qp_clock_seconds() - t0, cpu_asleep = qp_clock_cpu_seconds() - c0;
  TEST_ASSERT(slept >= 0.05 && slept < 5.0, "a 50 ms sleep measured %.4f s", slept);
  TEST_ASSERT(cpu_asleep >= 0 && cpu_asleep < 0.04, "a 50 ms sleep used %.4f s of CPU",
              cpu_asleep);

  /* Work: CPU time rises, by no more than the wall time (one thread). */
  const double w0 = qp_clock_seconds(), u0 = qp_clock_cpu_seconds();
  volatile double sink = 0;
  while (qp_clock_cpu_seconds() - u0 < 0.05) sink += sqrt(sink + 1.0);
  const double wall = qp_clock_seconds() - w0, cpu = qp_clock_cpu_seconds() - u0;
  TEST_ASSERT(cpu >= 0.05 && cpu <= wall + 0.01, "50 ms of work: %.4f s CPU in %.4f s", cpu, wall);

  /* The timespec of a time: whole seconds and nanoseconds. */
  const struct timespec a = qp_clock_timespec(12.75);
  TEST_ASSERT(a.tv_sec == 12 && a.tv_nsec == 750000000L, "12.75 s -> %lld s %ld ns",
              (long long)a.tv_sec, a.tv_nsec);
  const struct timespec b = qp_clock_timespec(3.9999999999);
  TEST_ASSERT(b.tv_nsec >= 0 && b.tv_nsec < 1000000000L, "3.9999999999 s -> %ld ns", b.tv_nsec);
  const double now = qp_clock_seconds();
  const struct timespec c = qp_clock_timespec(now);
  struct timespec raw;
  clock_gettime(CLOCK_MONOTONIC, &raw);
  const double back = (double)c.tv_sec + 1e-9 * (double)c.tv_nsec;
  TEST_WITHIN(fabs(back - now), 1e-6, "qp_clock_timespec(now) read back");
  TEST_ASSERT(c.tv_sec <= raw.tv_sec, "qp_clock_timespec(now) is after CLOCK_MONOTONIC now");
  return TEST_RETURN();
}
