/* test_omp_wait.c: libgomp's idle threads sleep at once after a parallel region
 * (pipeline/omp_wait.h), unless the user set OMP_WAIT_POLICY.
 *
 * The spin is measured, as in test_blas_threads: the process's CPU time while its only
 * caller sleeps 60 ms right after a parallel region is the idle threads' spinning. With
 * OMP_WAIT_POLICY=passive set by the constructor it must be under 1 ms in both of two tries
 * (0.0000-0.0001 s here; libgomp's default spin, the variable unset, was 1.7-5.7 ms of a core,
 * shown once by hand with a constructor that set nothing). The variable is taken away again
 * by qp_omp_wait_forget.
 *
 * `test_omp_wait user` (run with OMP_WAIT_POLICY=active): the user's value stands, nothing is
 * set or taken away, and the runtime uses it: the idle thread spins through the whole 60 ms
 * (over 30 ms of CPU). Skipped (77) where libgomp is not linked in (QP_OPENMP_LINKED_IN: the
 * user's setting is then the only one) or OpenMP has one thread. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "omp_wait.h"
#include "test_util.h"

static double process_cpu(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* A parallel region on every thread, then the CPU seconds the process burns while this
 * thread sleeps 60 ms: the idle threads' spin. */
static double spin_after_region(void) {
  double sum = 0.0;
#pragma omp parallel reduction(+ : sum)
  sum += 1.0 + omp_get_thread_num();
  const double before = process_cpu();
  const struct timespec nap = {0, 60 * 1000 * 1000};
  nanosleep(&nap, NULL);
  const double spin = process_cpu() - before;
  TEST_ASSERT(sum >= 3.0, "the region ran on %.0f thread(s)' worth", sum);
  return spin;
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
  const double spin = first > second ? first : second;
  printf("OMP_WAIT_POLICY=passive: %.4f s of CPU in a 60 ms sleep after a region (the more of "
         "two)\n",
         spin);
  TEST_ASSERT(spin <= 0.001, "the idle threads spun %.4f s after the region", spin);
  qp_omp_wait_forget();
  TEST_ASSERT(getenv("OMP_WAIT_POLICY") == NULL, "OMP_WAIT_POLICY still set after forget");
  return TEST_RETURN();
#endif
}
