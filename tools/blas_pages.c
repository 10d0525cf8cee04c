/* blas_pages.c: which pages one OpenBLAS/LAPACK routine leaves resident, the measurement
 * behind the warm-up (pipeline/run/warm_up.c, docs/memory-model.md "The warm-up"). A program, not a
 * test; tools/blas_pages.sh builds it and prints the table.
 *
 *   blas_pages ROUTINE N [--warm S W]
 *
 * Allocates and touches the N x N operands, reads the process's resident pages, calls ROUTINE
 * once (gemm syrk potrf pocon trtri trmm_l trmm_r trsm_l trsm_r getrf getrs potri) and prints
 * what the call added: anonymous KiB (OpenBLAS's buffers: it keeps them mapped for good),
 * file-backed KiB (library code paged in) and seconds. With --warm S W it first runs a thin
 * warm-up: every routine once at order S, then panels GEMM_Q = 256 rows by W + 512 columns
 * per thread, and reports what the routine adds after it (0 = the warm-up covered it).
 * Thread count from OPENBLAS_NUM_THREADS, one process per figure (the buffers persist). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cblas.h>
#include <dlfcn.h>
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* OpenBLAS's thread count, looked up so that this compiles against another CBLAS (1 there). */
static int blas_threads(void) {
  int (*threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  return threads && threads() > 0 ? threads() : 1;
}

/* RssAnon and RssFile of this process, KiB. */
static void rss(long *anon, long *file) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  *anon = *file = -1;
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "RssAnon:", 8) == 0) *anon = atol(line + 8);
    if (strncmp(line, "RssFile:", 8) == 0) *file = atol(line + 8);
  }
  if (f) fclose(f);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Operands a (lower triangular, well conditioned: 2 on the diagonal, small below), b and c
 * (full), touched before the measurement. */
typedef struct {
  int n;
  double *a, *b, *c;
  int *piv;
} operands;

static int operands_make(int n, operands *o) {
  const size_t nn = (size_t)n * (size_t)n;
  o->n = n;
  o->a = malloc(nn * sizeof(double));
  o->b = malloc(nn * sizeof(double));
  o->c = malloc(nn * sizeof(double));
  o->piv = malloc((size_t)n * sizeof(int));
  if (!o->a || !o->b || !o->c || !o->piv) return 0;
  for (size_t k = 0; k < nn; ++k) {
    o->a[k] = 1e-30; /* not 0: malloc + zero fill may become calloc, pages untouched */
    o->b[k] = 1.0 / (double)(1 + k % 7);
    o->c[k] = o->b[k];
  }
  for (int i = 0; i < n; ++i) {
    o->a[(size_t)i * n + i] = 2.0;
    o->c[(size_t)i * n + i] += 10.0 * n;
    o->piv[i] = 0;
  }
  return 1;
}

static void operands_free(operands *o) {
  free(o->a);
  free(o->b);
  free(o->c);
  free(o->piv);
}

/* One call of `routine` on o; 0 when the name is unknown. */
static int call(const char *routine, operands *o) {
  const int n = o->n;
  double rcond = 0.0;
  if (strcmp(routine, "gemm") == 0)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, o->a, n, o->b, n, 0.0,
                o->c, n);
  else if (strcmp(routine, "syrk") == 0)
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, n, 1.0, o->b, n, 0.0, o->c, n);
  else if (strcmp(routine, "potrf") == 0)
    LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, o->a, n);
  else if (strcmp(routine, "pocon") == 0) {
    LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, o->a, n);
    LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', n, o->a, n, 2.0, &rcond);
  } else if (strcmp(routine, "trtri") == 0)
    LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, 'L', 'N', n, o->a, n);
  else if ((strncmp(routine, "trmm_", 5) == 0 || strncmp(routine, "trsm_", 5) == 0) &&
           (routine[5] == 'l' || routine[5] == 'r') && routine[6] == '\0') {
    /* L B from the left, B L^T from the right, as the stages call them */
    const int left = routine[5] == 'l';
    const enum CBLAS_SIDE side = left ? CblasLeft : CblasRight;
    const enum CBLAS_TRANSPOSE trans = left ? CblasNoTrans : CblasTrans;
    if (routine[2] == 'm')
      cblas_dtrmm(CblasColMajor, side, CblasLower, trans, CblasNonUnit, n, n, 1.0, o->a, n, o->b,
                  n);
    else
      cblas_dtrsm(CblasColMajor, side, CblasLower, trans, CblasNonUnit, n, n, 1.0, o->a, n, o->b,
                  n);
  } else if (strcmp(routine, "getrf") == 0)
    LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, o->c, n, o->piv);
  else if (strcmp(routine, "getrs") == 0) {
    LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, o->c, n, o->piv);
    LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, 'N', n, n, o->c, n, o->piv, o->b, n);
  } else if (strcmp(routine, "potri") == 0)
    LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', n, o->a, n);
  else
    return 0;
  return 1;
}

/* The thin warm-up measured here: each routine at order s, then a 256 x 256 triangle times a
 * 256 x (threads x (w + 512)) panel from the left (each thread packs 256 x w of it) and a
 * (512 threads) x 256 by 256 x 256 gemm (each thread packs a 512 x 256 block of A). */
static void warm(int s, int w) {
  static const char *all[] = {"gemm",   "syrk",   "potrf",  "pocon", "trtri", "trmm_l",
                              "trmm_r", "trsm_l", "trsm_r", "getrf", "getrs", "potri"};
  for (size_t r = 0; r < sizeof all / sizeof *all; ++r) {
    operands o;
    if (operands_make(s, &o)) call(all[r], &o);
    operands_free(&o);
  }
  const int t = blas_threads(), k = 256;
  const int m = 512 * t;
  const size_t cols = (size_t)t * ((size_t)w + 512); /* potrf's panel starts 512 columns in */
  double *l = calloc((size_t)k * k, sizeof(double));
  double *p = calloc((size_t)k * cols, sizeof(double));
  double *a = calloc((size_t)m * k, sizeof(double)), *c = calloc((size_t)m * k, sizeof(double));
  if (l && p && a && c) {
    for (int i = 0; i < k; ++i)
      l[(size_t)i * k + i] = 1.0;
    cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, k, (int)cols, 1.0,
                l, k, p, k);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, k, k, 1.0, a, m, l, k, 0.0, c, m);
  }
  free(l);
  free(p);
  free(a);
  free(c);
}

int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 6 && strcmp(argv[3], "--warm") == 0)) {
    fprintf(stderr, "usage: blas_pages ROUTINE N [--warm S W]\n");
    return 2;
  }
  const int n = atoi(argv[2]);
  double warm_s = 0.0;
  long anon0 = 0, file0 = 0, anon1 = 0, file1 = 0, anon2 = 0, file2 = 0, anon_w = 0, file_w = 0;
  rss(&anon0, &file0);
  if (argc == 6) {
    const double t0 = now();
    warm(atoi(argv[4]), atoi(argv[5]));
    warm_s = now() - t0;
  }
  rss(&anon_w, &file_w);
  operands o;
  if (n < 1 || !operands_make(n, &o)) {
    fprintf(stderr, "blas_pages: cannot make operands of order %d\n", n);
    return 1;
  }
  rss(&anon1, &file1);
  const double t0 = now();
  if (!call(argv[1], &o)) {
    fprintf(stderr, "blas_pages: unknown routine '%s'\n", argv[1]);
    return 2;
  }
  const double seconds = now() - t0;
  rss(&anon2, &file2);
  operands_free(&o);
  /* routine, n, threads, what the warm-up kept (anon, file KiB; its operands are freed) and
   * took, what the routine added after it (anon, file KiB) and took */
  printf("%-7s %6d %2d %8ld %6ld %7.3f %8ld %6ld %7.3f\n", argv[1], n, blas_threads(),
         anon_w - anon0, file_w - file0, warm_s, anon2 - anon1, file2 - file1, seconds);
  return 0;
}
