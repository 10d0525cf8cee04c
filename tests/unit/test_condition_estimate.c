/* test_condition_estimate.c: the condition estimate of linalg/condition_estimate.h, which the
 * cuda backend's pocon and gecon run with device solves, here with host solves (cblas_dtrsv
 * applying qp_condition_solves' triangles) against LAPACK's own dpocon and dgecon on the same
 * factors: same estimator, same solves, so the same rcond to rounding. Also LAPACK's
 * conventions (order 0, anorm 0 or NaN or negative), a singular factor (rcond 0, as dpocon),
 * and an error of the solver handed back. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "condition_estimate.h"
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

  /* The backend's error comes back as it is. */
  EXPECT_ERROR(qp_condition_estimate(N, 1.0, failing_apply, NULL, "failing", &r), QP_ERR_GPU,
               "on purpose");

  free(a);
  free(g);
  free(piv);
  if (qp_test_failures == 0) printf("test_condition_estimate: all checks passed\n");
  return TEST_RETURN();
}
