/* test_omp_wait.c: libgomp's idle threads sleep at once after a parallel region
 * (pipeline/omp_wait.h), unless the user set OMP_WAIT_POLICY.
 *
 * The spin is measured: the CPU time of OpenMP's worker thread (its own clock,
 * pthread_getcpuclockid) while the caller sleeps 60 ms right after a parallel region. With
 * OMP_WAIT_POLICY=passive set by the constructor it must be under 1 ms in both of two tries
 * (0.0000 s here; libgomp's default spin, the variable unset, was 6.1-6.7 ms, shown by hand
 * with a constructor that set nothing). The worker's own clock, not the process's: under
 * AddressSanitizer the process burned 46 ms besides in that sleep. The variable is taken away
 * again by qp_omp_wait_forget.
 *
 * `test_omp_wait user` (run with OMP_WAIT_POLICY=active): the user's value stands, nothing is
 * set or taken away, and the runtime uses it: the idle thread spins through the whole 60 ms
 * (over 30 ms of CPU). Skipped (77) where libgomp is not linked in (QP_OPENMP_LINKED_IN: the
 * user's setting is then the only one) or OpenMP has one thread. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "omp_wait.h"
#include "test_util.h"

/* CPU seconds of one thread, by its own clock. */
static double thread_cpu(pthread_t thread) {
  clockid_t clock;
  struct timespec t;
  if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &t) != 0) return NAN;
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A parallel region on every thread, then the CPU seconds OpenMP's thread 1 burns while this
 * thread sleeps 60 ms: its spin. Only that thread is measured (a sanitizer's runtime, or
 * OpenBLAS's workers as they start, may burn CPU of their own meanwhile). */
static double spin_after_region(void) {
  double sum = 0.0;
  pthread_t worker = pthread_self();
#pragma omp parallel reduction(+ : sum)
  {
    sum += 1.0 + omp_get_thread_num();
    if (omp_get_thread_num() == 1) worker = pthread_self();
  }
  TEST_ASSERT(sum >= 3.0, "the region ran on %.0f thread(s)' worth", sum);
  const double before = thread_cpu(worker);
  const struct timespec nap = {0, 60 * 1000 * 1000};
  nanosleep(&nap, NULL);
  return thread_cpu(worker) - before;
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
    const double spin = spin_after_region();
    printf("OMP_WAIT_POLICY=active (the user's): %.4f s of CPU in a 60 ms sleep\n", spin);
    TEST_ASSERT(spin > 0.030, "the runtime did not spin with the user's active policy (%.4f s)",
                spin);
    return TEST_RETURN();
  }
  TEST_ASSERT(qp_omp_wait_passive_set(), "OMP_WAIT_POLICY was not set (run without it and "
                                         "without GOMP_SPINCOUNT, or with the argument 'user')");
  const char *set = getenv("OMP_WAIT_POLICY");
  TEST_ASSERT(set && strcmp(set, "passive") == 0, "OMP_WAIT_POLICY is '%s', not passive",
              set ? set : "(unset)");
  const double first = spin_after_region(), second = spin_after_region();
  const double spin = qp_test_worst(first, second); /* NaN when either clock could not be read */
  printf("OMP_WAIT_POLICY=passive: %.4f s of CPU in a 60 ms sleep after a region (the more of "
         "two)\n",
         spin);
  TEST_ASSERT(spin <= 0.001, "the idle threads spun %.4f s after the region", spin);
  qp_omp_wait_forget();
  TEST_ASSERT(getenv("OMP_WAIT_POLICY") == NULL, "OMP_WAIT_POLICY still set after forget");
  return TEST_RETURN();
#endif
}
