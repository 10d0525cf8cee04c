/* test_blas_threads.c: OpenBLAS's idle workers sleep soon after a call once
 * qp_blas_threads_settle has run (linalg/blas/openblas_tuning.h).
 *
 * The spin is measured, not inferred: the process's CPU time while its only caller sleeps 60
 * ms right after a dgemm is the workers' spinning. Before the settle (OpenBLAS's default,
 * ~0.1 s of spin) it is printed as the control; after it, it must be under 10 ms (2^20 ticks
 * is ~0.4 ms). A bound on CPU time in a window of wall time holds under load: OpenBLAS's
 * timeout counts wall ticks, so a loaded machine only gives the workers less CPU in it. The
 * restarted pool must still compute: the dgemm after the settle gives the control's product
 * (NaN-aware). OPENBLAS_THREAD_TIMEOUT is taken away again after OpenBLAS has read it.
 *
 * `test_blas_threads user` (run with OPENBLAS_THREAD_TIMEOUT set): the user's value stands,
 * the pool is left alone and the variable is still there. Under an address-space limit
 * (RLIMIT_AS, set here to 64 GiB) the pool is left alone too: a worker whose buffer was
 * refused never ends, and joining it hung tests/faults/rlimit_as.sh. Skipped (77) where
 * OpenBLAS has no pthreads pool of two or more threads. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cblas.h>
#include <math.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "blas_library.h"
#include "openblas_tuning.h"
#include "test_util.h"

enum { N = 384 };

/* CPU seconds of the whole process (every thread); NaN when unknown. */
static double process_cpu(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return NAN;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* c = a b on every OpenBLAS thread, then the CPU seconds the process burns while this thread
 * sleeps 60 ms: the idle workers' spin. */
static double spin_after_dgemm(const double *a, const double *b, double *c) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0, a, N, b, N, 0.0, c, N);
  const double before = process_cpu();
  const struct timespec nap = {0, 60 * 1000 * 1000};
  nanosleep(&nap, NULL);
  return process_cpu() - before;
}

/* OpenBLAS's own calls, looked up (a BLIS build has no declaration of them): -1 without. */
static int openblas_call(const char *name) {
  int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, name);
  return f ? f() : -1;
}

int main(int argc, char **argv) {
  const int user = argc > 1 && strcmp(argv[1], "user") == 0;
  if (!qp_blas_library_is_openblas()) {
    printf("the BLAS is %s, not OpenBLAS: no OpenBLAS pool to settle: skipped\n",
           qp_blas_library_name());
    TEST_ASSERT(qp_blas_threads_settle() != QP_BLAS_THREADS_SETTLED, "settled without OpenBLAS");
    return qp_test_failures ? 1 : 77;
  }
  if (user) {
    const char *set = getenv("OPENBLAS_THREAD_TIMEOUT");
    TEST_ASSERT(set != NULL, "run 'user' with OPENBLAS_THREAD_TIMEOUT set");
    const qp_blas_threads_outcome got = qp_blas_threads_settle();
    TEST_ASSERT(got == QP_BLAS_THREADS_USER, "OPENBLAS_THREAD_TIMEOUT=%s set, outcome %d",
                set ? set : "(unset)", (int)got);
    TEST_ASSERT(set && getenv("OPENBLAS_THREAD_TIMEOUT") &&
                    strcmp(getenv("OPENBLAS_THREAD_TIMEOUT"), set) == 0,
                "the user's OPENBLAS_THREAD_TIMEOUT was changed");
    return TEST_RETURN();
  }
  TEST_ASSERT(getenv("OPENBLAS_THREAD_TIMEOUT") == NULL,
              "run without OPENBLAS_THREAD_TIMEOUT (or with the argument 'user')");
  {
    struct rlimit as, saved;
    TEST_ASSERT(getrlimit(RLIMIT_AS, &saved) == 0, "getrlimit");
    as = saved;
    as.rlim_cur = (rlim_t)64 << 30; /* far above this test's needs, but a limit */
    if (saved.rlim_max != RLIM_INFINITY && as.rlim_cur > saved.rlim_max)
      as.rlim_cur = saved.rlim_max;
    TEST_ASSERT(setrlimit(RLIMIT_AS, &as) == 0, "setrlimit");
    const qp_blas_threads_outcome limited = qp_blas_threads_settle();
    TEST_ASSERT(limited == QP_BLAS_THREADS_LIMITED, "under RLIMIT_AS, outcome %d", (int)limited);
    TEST_ASSERT(setrlimit(RLIMIT_AS, &saved) == 0, "setrlimit back");
  }
  if (openblas_call("openblas_get_parallel") != 1 || qp_blas_library_threads() < 2) {
    printf("OpenBLAS parallel mode %d with %d thread(s): no pthreads pool to settle\n",
           openblas_call("openblas_get_parallel"), qp_blas_library_threads());
    TEST_ASSERT(qp_blas_threads_settle() == QP_BLAS_THREADS_NOT_POOL, "settled without a pool");
    return qp_test_failures ? 1 : 77;
  }
  double *a = malloc(sizeof(double) * N * N), *b = malloc(sizeof(double) * N * N),
         *c0 = malloc(sizeof(double) * N * N), *c1 = malloc(sizeof(double) * N * N);
  TEST_ASSERT(a && b && c0 && c1, "out of memory for the operands");
  if (!(a && b && c0 && c1)) return TEST_RETURN();
  for (size_t i = 0; i < (size_t)N * N; ++i) {
    a[i] = 1.0 / (double)(1 + i % 11);
    b[i] = 1.0 / (double)(2 + i % 13);
  }
  const double control = spin_after_dgemm(a, b, c0);
  const qp_blas_threads_outcome got = qp_blas_threads_settle();
  TEST_ASSERT(got == QP_BLAS_THREADS_SETTLED, "outcome %d, not settled", (int)got);
  TEST_ASSERT(getenv("OPENBLAS_THREAD_TIMEOUT") == NULL,
              "OPENBLAS_THREAD_TIMEOUT left in the environment (children would inherit it)");
  const double settled = spin_after_dgemm(a, b, c1);
  printf("%d OpenBLAS threads; CPU seconds spent while the caller sleeps 60 ms after a dgemm: "
         "%.4f with OpenBLAS's default timeout, %.4f after qp_blas_threads_settle (2^%d ticks)\n",
         qp_blas_library_threads(), control, settled, QP_BLAS_THREAD_TIMEOUT);
  TEST_WITHIN(settled, 0.010, "the idle workers still spin: CPU seconds in 60 ms");
  TEST_WITHIN(qp_test_max_rel_diff(c0, c1, (size_t)N * N), 1e-13,
              "the dgemm after the pool's restart against the one before");
  /* A second settle restarts the pool again and changes nothing else. */
  TEST_ASSERT(qp_blas_threads_settle() == QP_BLAS_THREADS_SETTLED, "second settle");
  TEST_ASSERT(spin_after_dgemm(a, b, c1) <= 0.010, "spin after the second settle");
  TEST_WITHIN(qp_test_max_rel_diff(c0, c1, (size_t)N * N), 1e-13, "after the second settle");
  free(a);
  free(b);
  free(c0);
  free(c1);
  return TEST_RETURN();
}
