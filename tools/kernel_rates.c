/* kernel_rates.c: this core's dgemm and dpotrf rates (GFLOP/s, one thread), the kernel rates
 * of the cost model in docs/distributed.md ("Scaling, measured and modelled"). Built and run
 * by tools/scaling_bench.sh (not part of qmlpipe):
 *   cc -O2 tools/kernel_rates.c -o kernel_rates -lopenblas && OPENBLAS_NUM_THREADS=1 ./kernel_rates
 * N Best of 3 of each: dgemm N^3 (2 N^3 flops), dpotrf of an SPD matrix of order N (N^3 / 3). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
            const double *beta, double *c, const int *ldc);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 1500;
  if (n <= 0) return 2;
  double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
         *c = malloc(sizeof(double) * n * n);
  if (!a || !b || !c) return 1;
  for (long i = 0; i < (long)n * n; ++i) {
    a[i] = (double)(i % 97) / 97.0;
    b[i] = (double)(i % 89) / 89.0;
  }
  const double one = 1, zero = 0;
  double gemm = 1e30, potrf = 1e30;
  for (int r = 0; r < 3; ++r) {
    double t0 = now();
    dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
    if (now() - t0 < gemm) gemm = now() - t0;
    /* A diagonally dominant SPD matrix. */
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i)
        c[i + (long)j * n] = i == j ? n : 1.0 / (1.0 + i + j);
    int info = 0;
    t0 = now();
    dpotrf_("L", &n, c, &n, &info);
    if (now() - t0 < potrf) potrf = now() - t0;
    if (info != 0) return 1;
  }
  printf("dgemm %d: %.2f GFLOP/s  dpotrf %d: %.2f GFLOP/s\n", n,
         2.0 * n * (double)n * n / gemm * 1e-9, n, (double)n * n * n / 3.0 / potrf * 1e-9);
  free(a);
  free(b);
  free(c);
  return 0;
}
