/* test_omp_wait.c: libgomp's idle threads sleep at once after a parallel region
 * (pipeline/run/omp_wait.h), unless the user set OMP_WAIT_POLICY.
 *
 * The spin is measured on CPU clocks only, never against the wall: right after a parallel
 * region this thread burns a span of its own CPU (its thread clock: 60 ms, 200 ms for the
 * active policy), and the CPU time OpenMP's worker thread gets meanwhile (its own clock,
 * pthread_getcpuclockid) is its spin. A span of CPU, not of wall time, so that a loaded
 * machine shares its cores between the two threads alike: at load 8 on 2 cores the span takes
 * 8-15x its CPU in wall time, and a spinning worker still gets about as much CPU as this
 * thread (docs/reliability.md, "Tests and time").
 *
 * With OMP_WAIT_POLICY=passive set by the constructor the worker sleeps: under 1 ms of CPU in
 * both of two tries (0.0000 s here, loaded or not; libgomp's default spin, the variable unset,
 * was 6.1-6.7 ms, shown by hand with a constructor that set nothing). Load only lowers it. The
 * worker's own clock, not the process's: under AddressSanitizer the process burned 46 ms
 * besides. The variable is taken away again by qp_omp_wait_forget.
 *
 * `test_omp_wait user` (run with OMP_WAIT_POLICY=active): the user's value stands, nothing is
 * set or taken away, and the runtime uses it: the idle thread spins through the whole span,
 * at least a sixth of this thread's 200 ms (libgomp's default spin is ~6 ms; 0.74-1.06 of
 * it idle, 0.37-1.30 at load 8 on 2 cores with a 60 ms span). The wall time is printed, not
 * judged. Skipped (77) where
 * libgomp is not linked in (QP_OPENMP_LINKED_IN: the user's setting is then the only one) or
 * OpenMP has one thread. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "omp_wait.h"
#include "test_util.h"

/* The CPU spans this thread burns after a region, in seconds of its own clock: passive, and
 * active (longer, so that the scheduler's balancing of the two threads averages out). */
#define SPAN_PASSIVE 0.060
#define SPAN_ACTIVE 0.200

/* CPU seconds of one thread, by its own clock; NaN when it cannot be read. */
static double thread_cpu(pthread_t thread) {
  clockid_t clock;
  struct timespec t;
  if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &t) != 0) return NAN;
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wall seconds, printed only. */
static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
  double worker; /* CPU seconds OpenMP's thread 1 burnt in the span: its spin */
  double span;   /* CPU seconds this thread burnt (the span asked or a little more) */
  double wall;   /* the span's wall seconds (printed, not judged) */
} spin_figures;

/* A parallel region on every thread, then the CPU seconds OpenMP's thread 1 burns while this
 * thread burns `span` of its own. Only that thread is measured (a sanitizer's runtime, or
 * OpenBLAS's workers as they start, may burn CPU of their own meanwhile). */
static spin_figures spin_after_region(double span) {
  double sum = 0.0;
  pthread_t worker = pthread_self();
#pragma omp parallel reduction(+ : sum)
  {
    sum += 1.0 + omp_get_thread_num();
    if (omp_get_thread_num() == 1) worker = pthread_self();
  }
  TEST_ASSERT(sum >= 3.0, "the region ran on %.0f thread(s)' worth", sum);
  const pthread_t self = pthread_self();
  const double w0 = wall(), before = thread_cpu(worker), own = thread_cpu(self);
  double burnt = 0.0; /* NaN ends the loop: the assertions then fail on it */
  while (burnt < span) burnt = thread_cpu(self) - own;
  const spin_figures f = {thread_cpu(worker) - before, burnt, wall() - w0};
  return f;
}

int main(int argc, char **argv) {
  const int user = argc > 1 && strcmp(argv[1], "user") == 0;
  if (omp_get_max_threads() < 2) {
    printf("OpenMP has 1 thread: no idle thread to measure\n");
    return 77;
  }
#ifndef QP_OPENMP_LINKED_IN
  printf("libgomp is a shared library here: OMP_WAIT_POLICY is the user's alone\n");
  TEST_ASSERT(!qp_omp_wait_passive_set(), "set with a shared libgomp");
  return qp_test_failures ? 1 : 77;
#else
  if (user) {
    const char *set = getenv("OMP_WAIT_POLICY");
    TEST_ASSERT(set && strcmp(set, "active") == 0, "run 'user' with OMP_WAIT_POLICY=active");
    TEST_ASSERT(!qp_omp_wait_passive_set(), "the user's OMP_WAIT_POLICY was overridden");
    qp_omp_wait_forget();
    TEST_ASSERT(getenv("OMP_WAIT_POLICY") && strcmp(getenv("OMP_WAIT_POLICY"), "active") == 0,
                "the user's OMP_WAIT_POLICY was taken away");
    const spin_figures f = spin_after_region(SPAN_ACTIVE);
    printf("OMP_WAIT_POLICY=active (the user's): the worker spun %.4f s of CPU while this thread "
           "burnt %.4f s (%.2f of it, at least 1/6 asked), in %.4f s of wall\n",
           f.worker, f.span, f.worker / f.span, f.wall);
    /* span / worker <= 6: the worker got a sixth of this thread's CPU or more, 33 ms of 200,
     * 5x libgomp's default spin (NaN, or no spin at all, infinite, fails). */
    TEST_ASSERT(qp_test_within(f.span / f.worker, 6.0),
                "the runtime did not spin with the user's active policy (%.4f s of CPU while "
                "this thread burnt %.4f s)",
                f.worker, f.span);
    return TEST_RETURN();
  }
  TEST_ASSERT(qp_omp_wait_passive_set(), "OMP_WAIT_POLICY was not set (run without it and "
                                         "without GOMP_SPINCOUNT, or with the argument 'user')");
  const char *set = getenv("OMP_WAIT_POLICY");
  TEST_ASSERT(set && strcmp(set, "passive") == 0, "OMP_WAIT_POLICY is '%s', not passive",
              set ? set : "(unset)");
  const spin_figures first = spin_after_region(SPAN_PASSIVE),
                     second = spin_after_region(SPAN_PASSIVE);
  /* NaN when either clock could not be read */
  const double spin = qp_test_worst(first.worker, second.worker);
  printf("OMP_WAIT_POLICY=passive: the worker spun %.4f s of CPU (the more of two, at most "
         "0.001 asked) while this thread burnt %.4f and %.4f s, in %.4f and %.4f s of wall\n",
         spin, first.span, second.span, first.wall, second.wall);
  TEST_ASSERT(qp_test_within(spin, 0.001), "the idle threads spun %.4f s after the region",
              spin);
  qp_omp_wait_forget();
  TEST_ASSERT(getenv("OMP_WAIT_POLICY") == NULL, "OMP_WAIT_POLICY still set after forget");
  return TEST_RETURN();
#endif
}
