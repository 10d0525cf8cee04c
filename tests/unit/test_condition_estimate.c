/* test_condition_estimate.c: the condition estimate of linalg/backends/condition_estimate.h, which
 * the cuda backend's pocon and gecon run with device solves, here with host solves (cblas_dtrsv
 * applying qp_condition_solves' triangles) against LAPACK's own dpocon and dgecon on the same
 * factors: same estimator, same solves, so the same rcond to rounding. Also LAPACK's
 * conventions (order 0, anorm 0 or NaN or negative), a singular factor (rcond 0, as dpocon),
 * and an error of the solver handed back.
 *
 * The cpu backend's pocon runs the same estimator over blocked solves (a 256 triangle at a
 * time, the rest by dgemv: linalg/backends/cpu.c): against dpocon at order 700 (three blocks and a
 * partial one; ld 703), on a well and an ill conditioned factor, to 1e-12, and 0 for a
 * singular one, as dpocon. Its norm1 (the columns over the OpenMP threads) equals dlange's
 * '1' exactly, and is NaN with a NaN anywhere, Inf with an Inf. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "condition_estimate.h"
#include "matrix.h"
#include "test_util.h"

enum { N = 203 };

typedef struct host_factor {
  const double *f;
  int n;
  qp_factor_kind kind;
  int calls;
} host_factor;

/* The backend's part, on the host: the two solves qp_condition_solves names. */
static qp_err host_apply(void *context, int kase, double *x) {
  host_factor *h = context;
  qp_triangular_solve s[2];
  qp_condition_solves(h->kind, kase, s);
  for (int k = 0; k < 2; ++k)
    cblas_dtrsv(CblasColMajor, s[k].upper ? CblasUpper : CblasLower,
                s[k].transpose ? CblasTrans : CblasNoTrans, s[k].unit ? CblasUnit : CblasNonUnit,
                h->n, h->f, h->n, x, 1);
  ++h->calls;
  return QP_OK;
}

static qp_err failing_apply(void *context, int kase, double *x) {
  (void)context, (void)kase, (void)x;
  return qp_error_set(QP_ERR_GPU, __FILE__, __LINE__, __func__, "a solve failed on purpose");
}

static uint64_t state = 7;
static double lcg(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* rcond from the estimator with host solves, and LAPACK's on the same factor. */
static void compare(qp_factor_kind kind, const double *f, double anorm, const char *what) {
  host_factor h = {f, N, kind, 0};
  double ours = -1, lapack = -1;
  TEST_OK(qp_condition_estimate(N, anorm, host_apply, &h, what, &ours));
  int info = kind == QP_FACTOR_CHOLESKY
                 ? LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', N, f, N, anorm, &lapack)
                 : LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', N, f, N, anorm, &lapack);
  TEST_ASSERT(info == 0, "%s: LAPACK info %d", what, info);
  TEST_WITHIN(qp_test_rel_diff(ours, lapack), 1e-12, "%s: rcond %.17g, LAPACK %.17g", what, ours,
              lapack);
  TEST_ASSERT(h.calls >= 2 && h.calls <= 11, "%s: %d products (dlacn2 takes 2 to 11)", what,
              h.calls);
  printf("  %-10s rcond %.6g (LAPACK %.6g), %d products\n", what, ours, lapack, h.calls);
}

/* The cpu backend's pocon (qp_linalg_pocon) against dpocon on an SPD matrix of order M,
 * ld M + 3, with `shift` on its diagonal; `singular`: a zero put on L's diagonal. */
enum { M = 700, LD = M + 3 };
static void cpu_pocon(double shift, int singular, const char *what) {
  double *g = malloc(sizeof(double) * LD * M), *a = malloc(sizeof(double) * LD * M);
  TEST_ASSERT(g && a, "no memory");
  if (g && a) {
    for (int k = 0; k < LD * M; ++k)
      g[k] = lcg();
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, M, M, 1.0 / M, g, LD, 0.0, a, LD);
    for (int i = 0; i < M; ++i)
      a[i + i * LD] += shift;
    const double anorm = LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'L', M, a, LD);
    TEST_ASSERT(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', M, a, LD) == 0, "%s: potrf failed", what);
    if (singular) a[300 + 300 * LD] = 0.0;
    qp_matrix l = {0};
    double ours = -1, lapack = -1;
    TEST_OK(qp_matrix_view(qp_linalg_cpu_ops(), "test_L", a, M, M, LD, &l));
    TEST_OK(qp_linalg_pocon(&l, anorm, &ours));
    TEST_ASSERT(LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', M, a, LD, anorm, &lapack) == 0, "%s: dpocon",
                what);
    if (singular)
      TEST_ASSERT(ours == 0.0 && lapack == 0.0, "%s: rcond %g, LAPACK %g, expected 0", what, ours,
                  lapack);
    else
      TEST_WITHIN(qp_test_rel_diff(ours, lapack), 1e-12, "%s: rcond %.17g, LAPACK %.17g", what,
                  ours, lapack);
    printf("  %-10s rcond %.6g (LAPACK %.6g)\n", what, ours, lapack);
  }
  free(g);
  free(a);
}

/* The cpu backend's norm1 against dlange '1' on an M x (M - 50) matrix, ld LD. */
static void cpu_norm1(void) {
  const int cols = M - 50;
  double *a = malloc(sizeof(double) * LD * cols);
  TEST_ASSERT(a, "no memory");
  if (!a) return;
  for (int k = 0; k < LD * cols; ++k)
    a[k] = lcg() * (1 + k % 13);
  qp_matrix v = {0};
  double ours = -1;
  TEST_OK(qp_matrix_view(qp_linalg_cpu_ops(), "test_A", a, M, cols, LD, &v));
  TEST_OK(qp_linalg_norm1(&v, &ours));
  const double lapack = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', M, cols, a, LD);
  TEST_ASSERT(ours == lapack, "norm1 %.17g, dlange %.17g: not the same value", ours, lapack);
  a[123 + 456 * LD] = INFINITY;
  TEST_OK(qp_linalg_norm1(&v, &ours));
  TEST_ASSERT(isinf(ours), "norm1 with an Inf: %g", ours);
  a[7 + 600 * LD] = NAN;
  TEST_OK(qp_linalg_norm1(&v, &ours));
  TEST_ASSERT(isnan(ours), "norm1 with a NaN: %g", ours);
  printf("  cpu norm1  equal to dlange's %.17g; NaN and Inf propagate\n", lapack);
  free(a);
}

int main(void) {
  double *a = malloc(sizeof(double) * N * N), *g = malloc(sizeof(double) * N * N);
  int *piv = malloc(sizeof(int) * N);
  TEST_ASSERT(a && g && piv, "no memory");
  if (!a || !g || !piv) return 1;

  /* SPD: A = G G^T / N + 0.01 I (rcond well below 1, so the estimate has work to do). */
  for (int k = 0; k < N * N; ++k)
    g[k] = lcg();
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, N, N, 1.0 / N, g, N, 0.0, a, N);
  for (int i = 0; i < N; ++i)
    a[i + i * N] += 0.01;
  double anorm = LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'L', N, a, N);
  TEST_ASSERT(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', N, a, N) == 0, "potrf failed");
  compare(QP_FACTOR_CHOLESKY, a, anorm, "pocon");

  /* General: G itself, LU with pivoting. */
  anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', N, N, g, N);
  TEST_ASSERT(LAPACKE_dgetrf(LAPACK_COL_MAJOR, N, N, g, N, piv) == 0, "getrf failed");
  compare(QP_FACTOR_LU, g, anorm, "gecon");

  /* Conventions, as LAPACK's. */
  double r = -1;
  TEST_OK(qp_condition_estimate(0, 1.0, failing_apply, NULL, "empty", &r));
  TEST_ASSERT(r == 1.0, "order 0: rcond %g, expected 1", r);
  TEST_OK(qp_condition_estimate(N, 0.0, failing_apply, NULL, "zero", &r));
  TEST_ASSERT(r == 0.0, "anorm 0: rcond %g, expected 0", r);
  TEST_OK(qp_condition_estimate(N, NAN, failing_apply, NULL, "nan", &r));
  TEST_ASSERT(isnan(r), "anorm NaN: rcond %g, expected NaN", r);
  EXPECT_ERROR(qp_condition_estimate(N, -1.0, failing_apply, NULL, "negative", &r), QP_ERR_LIBRARY,
               "negative", "anorm");

  /* A singular Cholesky factor (a zero on the diagonal): the solve overflows, rcond 0, as
   * dpocon says with its scaled solves. */
  a[5 + 5 * N] = 0.0;
  host_factor h = {a, N, QP_FACTOR_CHOLESKY, 0};
  double lapack = -1;
  TEST_OK(qp_condition_estimate(N, anorm, host_apply, &h, "singular", &r));
  TEST_ASSERT(LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', N, a, N, anorm, &lapack) == 0, "dpocon");
  TEST_ASSERT(r == 0.0 && lapack == 0.0, "singular factor: rcond %g, LAPACK %g, expected 0", r,
              lapack);

  /* The cpu backend's pocon. */
  cpu_pocon(0.01, 0, "cpu pocon");
  cpu_pocon(1e-9, 0, "cpu pocon, ill conditioned");
  cpu_pocon(0.01, 1, "cpu pocon, singular");
  cpu_norm1();

  /* The backend's error comes back as it is. */
  EXPECT_ERROR(qp_condition_estimate(N, 1.0, failing_apply, NULL, "failing", &r), QP_ERR_GPU,
               "on purpose");

  free(a);
  free(g);
  free(piv);
  if (qp_test_failures == 0) printf("test_condition_estimate: all checks passed\n");
  return TEST_RETURN();
}
