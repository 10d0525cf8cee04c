/* trsm_shapes.c: the ways to form Z = L^-T Y (n x m, L lower n x n) for the projection
 * route's noise bias (pipeline/stages/harmonic_bias.c), timed side by side in one
 * process, beside the floor's Y = L^-1 V^T (trsm left, lower, no transpose). A program, not a
 * test (docs/benchmarks.md has its figures):
 *
 *   cc -O2 tools/trsm_shapes.c -o /tmp/trsm_shapes -lopenblas -llapacke -lm
 *   /tmp/trsm_shapes N M [ROUNDS]
 *
 * Buffers are mapped as the budget's allocator maps them (huge pages advised, populated at
 * once: budget/alloc.c). ROUNDS rounds run every variant once each, in turn, so that a
 * moment of load on this shared machine falls on all of them; the least time of each is
 * printed. "fresh" maps and populates its buffer inside the timing, as fisher_run did.
 * Every Z is compared with the first variant's (largest difference over largest entry). */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double *map(size_t count) {
  const size_t bytes = count * sizeof(double);
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  (void)madvise(p, bytes, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) != 0)
#endif
    memset(p, 0, bytes);
  return p;
}

static void unmap(double *p, size_t count) { munmap(p, count * sizeof(double)); }

static double maxrel(const double *a, const double *b, size_t count) {
  double d = 0, s = 0;
  for (size_t k = 0; k < count; ++k) {
    d = fmax(d, fabs(a[k] - b[k]));
    s = fmax(s, fabs(b[k]));
  }
  return d / s;
}

enum { FRESH, TOUCHED, FLOOR, UPPER, RIGHT_T, TRTRI, TRMM_INV, GEMM, VARIANTS };
static const char *const names[VARIANTS] = {
    "fresh buffer + copy + trsm LLT", "copy + trsm LLT (held buffer)",
    "floor: trsm LLN (Y = L^-1 V^T)", "L^T to upper + trsm LUN",
    "transpose + trsm RLN + back", "trtri (copy of L)", "copy + trmm LLT with L^-1",
    "gemm n x n x m (x 1/2: rate)"};

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: trsm_shapes N M [ROUNDS]\n");
    return 2;
  }
  const int n = atoi(argv[1]), m = atoi(argv[2]), rounds = argc > 3 ? atoi(argv[3]) : 3;
  const size_t nm = (size_t)n * m, nn = (size_t)n * n;
  double *l = map(nn), *y = map(nm), *z = map(nm), *ref = map(nm), *t = map(nm), *li = map(nn);
  /* An SPD C (a smooth kernel plus a diagonal), factored to L in place. */
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i)
      l[i + (size_t)j * n] = exp(-fabs((double)(i - j)) / 30.0) + (i == j ? 1.0 : 0.0);
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, l, n) != 0) abort();
  for (size_t k = 0; k < nm; ++k) y[k] = sin(0.001 * (double)k) + 0.5;
  memcpy(ref, y, nm * sizeof *y);
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasNonUnit, n, m, 1.0, l, n, ref,
              n);
  double best[VARIANTS], diff[VARIANTS] = {0};
  for (int v = 0; v < VARIANTS; ++v) best[v] = 1e30;
  for (int r = 0; r < rounds; ++r)
    for (int v = 0; v < VARIANTS; ++v) {
      double *out = z, *f = NULL;
      const double t0 = now();
      switch (v) {
      case FRESH:
        out = f = map(nm);
        memcpy(f, y, nm * sizeof *y);
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasNonUnit, n, m, 1.0, l,
                    n, f, n);
        break;
      case TOUCHED:
        memcpy(z, y, nm * sizeof *y);
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasNonUnit, n, m, 1.0, l,
                    n, z, n);
        break;
      case FLOOR:
        memcpy(t, y, nm * sizeof *y);
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, n, m, 1.0, l,
                    n, t, n);
        out = NULL;
        break;
      case UPPER:
        for (int j = 0; j < n; ++j)
          for (int i = 0; i <= j; ++i) li[i + (size_t)j * n] = l[j + (size_t)i * n];
        memcpy(z, y, nm * sizeof *y);
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, n, m, 1.0,
                    li, n, z, n);
        break;
      case RIGHT_T:
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < n; ++i) t[j + (size_t)i * m] = y[i + (size_t)j * n];
        cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, m, n, 1.0,
                    l, n, t, m);
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < n; ++i) z[i + (size_t)j * n] = t[j + (size_t)i * m];
        break;
      case TRTRI:
        memcpy(li, l, nn * sizeof *l);
        LAPACKE_dtrtri(LAPACK_COL_MAJOR, 'L', 'N', n, li, n);
        out = NULL;
        break;
      case TRMM_INV: /* li holds L^-1 from TRTRI */
        memcpy(z, y, nm * sizeof *y);
        cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasNonUnit, n, m, 1.0, li,
                    n, z, n);
        break;
      case GEMM:
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, m, n, 0.5, li, n, y, n, 0.0, t,
                    n);
        out = NULL;
        break;
      }
      double dt = now() - t0;
      if (v == GEMM) dt /= 2; /* 2 n^2 m flops: the time of n^2 m at its rate */
      if (dt < best[v]) best[v] = dt;
      if (out) diff[v] = fmax(diff[v], maxrel(out, ref, nm));
      if (f) unmap(f, nm);
    }
  const double gflop = (double)n * n * m * 1e-9;
  printf("n %d, m %d, best of %d rounds (GFLOP/s for n^2 m flops; trtri n^3/3)\n", n, m, rounds);
  for (int v = 0; v < VARIANTS; ++v)
    printf("%-34s %8.3f s %7.1f GFLOP/s  diff %.1e\n", names[v], best[v],
           (v == TRTRI ? (double)n * n * n / 3e9 : gflop) / best[v], diff[v]);
  return 0;
}
