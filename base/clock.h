/* clock.h: the one place qmlpipe reads the time: seconds of the monotonic clock (stage times,
 * the timeline, progress lines, the signal handler's "running for"), of the process's CPU time
 * (the dgemm rate per core), and the absolute deadline a timed wait on the monotonic clock
 * takes.
 *
 * Every function here only calls clock_gettime, which POSIX lists as async-signal-safe: the
 * signal handler of interrupt.c may call them. */
#ifndef QP_CLOCK_H
#define QP_CLOCK_H

#include <time.h>

/** Seconds of CLOCK_MONOTONIC from an arbitrary origin (the machine's boot): only differences
 *  mean something. Not set back by NTP or the administrator, unlike the wall clock.
 *  Async-signal-safe. */
double qp_clock_seconds(void);

/** Seconds of CPU time this process has used, all its threads together
 *  (CLOCK_PROCESS_CPUTIME_ID). Async-signal-safe. */
double qp_clock_cpu_seconds(void);

/** Seconds of CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): the memory
 *  timeline's sampler, its own cost. Async-signal-safe. */
double qp_clock_thread_cpu_seconds(void);

/** The CLOCK_MONOTONIC time `seconds` (as qp_clock_seconds gives it) as a timespec: the
 *  deadline of a pthread_cond_timedwait on a condition set to the monotonic clock
 *  (pthread_condattr_setclock). */
struct timespec qp_clock_timespec(double seconds);

#endif
