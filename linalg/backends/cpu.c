/* cpu.c: the CPU backend, CBLAS (OpenBLAS, or BLIS: cmake/qp_blas.cmake) and LAPACKE. LAPACK
 * routines are called through their LAPACKE _work variants so that no library allocates behind
 * the budget; the routines used here (potrf, trtri, potrs) need no workspace. The CBLAS enums
 * are named `enum CBLAS_...`: BLIS's cblas.h has no typedefs for them. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas_int.h"
#include "condition_estimate.h"
#include "fault.h"
#include "matrix.h"

static enum CBLAS_TRANSPOSE qp_cblas_trans(qp_trans t) { return t ? CblasTrans : CblasNoTrans; }

/* LAPACK info < 0 is a bad argument: a bug here, not the user's. */
static qp_err qp_lapack_check(int info, const char *routine, const qp_matrix *a) {
  QP_CHECK(info >= 0, QP_ERR_LIBRARY, "%s on '%s' (stage %s): argument %d is invalid", routine,
           a->name, qp_stage_current(), -info);
  return QP_OK;
}

static qp_err qp_cpu_potrf(qp_matrix *a) {
  int n, lda;
  QP_BLAS_INT(a->rows, &n, "matrix order");
  QP_BLAS_INT(a->ld, &lda, "leading dimension");
  int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, a->data, lda);
  info = QP_FAULT_INFO("dpotrf", info);
  QP_CALL(qp_lapack_check(info, "dpotrf", a));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%d x %d) is not positive definite: its leading minor of "
           "order %d (row %d) is not positive",
           qp_stage_label(), a->name, n, n, info, info);
  return QP_OK;
}

static qp_err qp_cpu_trtri(qp_matrix *l) {
  int n, lda;
  QP_BLAS_INT(l->rows, &n, "matrix order");
  QP_BLAS_INT(l->ld, &lda, "leading dimension");
  int info = LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, 'L', 'N', n, l->data, lda);
  info = QP_FAULT_INFO("dtrtri", info);
  QP_CALL(qp_lapack_check(info, "dtrtri", l));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF, "stage %s: triangular factor '%s' is singular at row %d",
           qp_stage_label(), l->name, info);
  return QP_OK;
}

static qp_err qp_cpu_potri(qp_matrix *l) {
  int n, lda;
  QP_BLAS_INT(l->rows, &n, "matrix order");
  QP_BLAS_INT(l->ld, &lda, "leading dimension");
  int info = LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', n, l->data, lda);
  info = QP_FAULT_INFO("dpotri", info);
  QP_CALL(qp_lapack_check(info, "dpotri", l));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF, "stage %s: factor of '%s' is singular at row %d",
           qp_stage_label(), l->name, info);
  return QP_OK;
}

static qp_err qp_cpu_triangular(int solve, qp_side side, qp_trans trans, double alpha,
                                const qp_matrix *l, qp_matrix *b) {
  int m, n, lda, ldb;
  QP_BLAS_INT(b->rows, &m, "rows");
  QP_BLAS_INT(b->cols, &n, "columns");
  QP_BLAS_INT(l->ld, &lda, "leading dimension");
  QP_BLAS_INT(b->ld, &ldb, "leading dimension");
  enum CBLAS_SIDE s = side == QP_LEFT ? CblasLeft : CblasRight;
  if (solve)
    cblas_dtrsm(CblasColMajor, s, CblasLower, qp_cblas_trans(trans), CblasNonUnit, m, n, alpha,
                l->data, lda, b->data, ldb);
  else
    cblas_dtrmm(CblasColMajor, s, CblasLower, qp_cblas_trans(trans), CblasNonUnit, m, n, alpha,
                l->data, lda, b->data, ldb);
  return QP_OK;
}

static qp_err qp_cpu_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                          qp_matrix *b) {
  return qp_cpu_triangular(0, side, trans, alpha, l, b);
}

static qp_err qp_cpu_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                          qp_matrix *b) {
  return qp_cpu_triangular(1, side, trans, alpha, l, b);
}

static qp_err qp_cpu_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                          const qp_matrix *b, double beta, qp_matrix *c) {
  int m, n, k, lda, ldb, ldc;
  QP_BLAS_INT(c->rows, &m, "rows");
  QP_BLAS_INT(c->cols, &n, "columns");
  QP_BLAS_INT(ta ? a->rows : a->cols, &k, "inner dimension");
  QP_BLAS_INT(a->ld, &lda, "leading dimension");
  QP_BLAS_INT(b->ld, &ldb, "leading dimension");
  QP_BLAS_INT(c->ld, &ldc, "leading dimension");
  cblas_dgemm(CblasColMajor, qp_cblas_trans(ta), qp_cblas_trans(tb), m, n, k, alpha, a->data, lda,
              b->data, ldb, beta, c->data, ldc);
  return QP_OK;
}

static qp_err qp_cpu_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                          qp_matrix *c) {
  int n, k, lda, ldc;
  QP_BLAS_INT(c->rows, &n, "order");
  QP_BLAS_INT(trans ? a->rows : a->cols, &k, "inner dimension");
  QP_BLAS_INT(a->ld, &lda, "leading dimension");
  QP_BLAS_INT(c->ld, &ldc, "leading dimension");
  cblas_dsyrk(CblasColMajor, CblasLower, qp_cblas_trans(trans), n, k, alpha, a->data, lda, beta,
              c->data, ldc);
  qp_matrix_symmetrize_lower(c);
  return QP_OK;
}

static qp_err qp_cpu_potrs(const qp_matrix *l, qp_matrix *b) {
  int n, nrhs, lda, ldb;
  QP_BLAS_INT(l->rows, &n, "order");
  QP_BLAS_INT(b->cols, &nrhs, "right-hand sides");
  QP_BLAS_INT(l->ld, &lda, "leading dimension");
  QP_BLAS_INT(b->ld, &ldb, "leading dimension");
  int info = LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', n, nrhs, l->data, lda, b->data, ldb);
  QP_CALL(qp_lapack_check(info, "dpotrs", l));
  return QP_OK;
}

static qp_err qp_cpu_getrf(qp_matrix *a, int *pivots) {
  int n, lda;
  QP_BLAS_INT(a->rows, &n, "matrix order");
  QP_BLAS_INT(a->ld, &lda, "leading dimension");
  int info = LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a->data, lda, pivots);
  info = QP_FAULT_INFO("dgetrf", info);
  QP_CALL(qp_lapack_check(info, "dgetrf", a));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%d x %d) is singular: U(%d,%d) = 0", qp_stage_label(), a->name,
           n, n, info, info);
  return QP_OK;
}

static qp_err qp_cpu_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  int n, nrhs, lda, ldb;
  QP_BLAS_INT(lu->rows, &n, "order");
  QP_BLAS_INT(b->cols, &nrhs, "right-hand sides");
  QP_BLAS_INT(lu->ld, &lda, "leading dimension");
  QP_BLAS_INT(b->ld, &ldb, "leading dimension");
  int info =
      LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, 'N', n, nrhs, lu->data, lda, pivots, b->data, ldb);
  QP_CALL(qp_lapack_check(info, "dgetrs", lu));
  return QP_OK;
}

static qp_err qp_cpu_trace_product(const qp_matrix *a, const qp_matrix *b, double *out) {
  int n, lda;
  QP_BLAS_INT(a->cols, &n, "columns");
  QP_BLAS_INT(a->ld, &lda, "leading dimension");
  double sum = 0.0;
  for (int64_t i = 0; i < a->rows; ++i)
    sum += cblas_ddot(n, a->data + i, lda, b->data + i * b->ld, 1);
  *out = sum;
  return QP_OK;
}

static qp_err qp_cpu_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                              int64_t aj, qp_matrix *b, int64_t bi, int64_t bj) {
  /* Columns on every thread where the two blocks cannot overlap (fisher_run's copy of Y into
   * Z's buffer: 146 MB on QU nside 16, 10-12 -> 4-6 ms), in order where they may. */
  if (rows <= 0 || cols <= 0) return QP_OK; /* nothing to copy, and no block to bound */
  const double *a_lo = a->data + ai + aj * a->ld, *a_hi = a_lo + (cols - 1) * a->ld + rows;
  const double *b_lo = b->data + bi + bj * b->ld, *b_hi = b_lo + (cols - 1) * b->ld + rows;
  const int apart = a_hi <= b_lo || b_hi <= a_lo;
#pragma omp parallel for schedule(static) if (apart && (double)rows * (double)cols > 1e6)
  for (int64_t j = 0; j < cols; ++j)
    memmove(b->data + bi + (bj + j) * b->ld, a->data + ai + (aj + j) * a->ld,
            (size_t)rows * sizeof(double));
  return QP_OK;
}

/* Tile by tile, so that both the reads and the writes stay in cache. */
static qp_err qp_cpu_transpose(const qp_matrix *a, qp_matrix *b) {
  const int64_t tile = 64;
  for (int64_t jb = 0; jb < a->cols; jb += tile)
    for (int64_t ib = 0; ib < a->rows; ib += tile) {
      const int64_t j_end = jb + tile < a->cols ? jb + tile : a->cols;
      const int64_t i_end = ib + tile < a->rows ? ib + tile : a->rows;
      for (int64_t j = jb; j < j_end; ++j)
        for (int64_t i = ib; i < i_end; ++i) b->data[j + i * b->ld] = a->data[i + j * a->ld];
    }
  return QP_OK;
}

/* |A|_1, the largest column sum of |a_ij|, as LAPACK's dlange '1' computes it (each column
 * summed in order, so the same value; NaN once any sum is NaN), the columns spread over the
 * OpenMP threads: dlange ran on one, 2.5 ms of basis_setup for C of 1984 (docs/benchmarks.md,
 * 2026-11-27). */
static qp_err qp_cpu_norm1(const qp_matrix *a, double *out) {
  const int64_t m = a->rows, n = a->cols, ld = a->ld;
  double value = 0.0;
  int nan = 0;
#pragma omp parallel if (m * n >= ((int64_t)1 << 20))
  {
    double mine = 0.0;
    int mine_nan = 0;
#pragma omp for schedule(static)
    for (int64_t j = 0; j < n; ++j) {
      const double *col = a->data + j * ld;
      double sum = 0.0;
      for (int64_t i = 0; i < m; ++i)
        sum += fabs(col[i]);
      if (isnan(sum))
        mine_nan = 1;
      else if (sum > mine)
        mine = sum;
    }
#pragma omp critical(qp_cpu_norm1)
    {
      nan |= mine_nan;
      value = mine > value ? mine : value;
    }
  }
  *out = nan ? NAN : value;
  return QP_OK;
}

/* pocon: LAPACK's estimator (dlacn2, linalg/backends/condition_estimate.h, as on the cuda backend)
 * over blocked solves with L. dpocon's own solves (dlatrs, which calls dtrsv) run on one thread and
 * read L whole twice per product, ~10 times in all: at n 1984 in a run 7.1-8.9 ms. A triangle
 * of QP_CPU_SOLVE_BLOCK at a time and the rest of each block column by dgemv, which OpenBLAS
 * runs on every thread: 3.1-3.4 ms (docs/benchmarks.md, 2026-11-27), the same estimate to
 * rounding (5.7e-16 relative there; test_condition_estimate checks it against dpocon). What
 * dpocon adds, dlatrs's scaling against overflow, is left out as on the cuda backend: a solve
 * that overflows gives rcond 0, singular to working precision, as dpocon says. */
enum { QP_CPU_SOLVE_BLOCK = 256 };

typedef struct {
  const double *l;
  int n, ld;
} qp_cpu_factor;

/* x <- L^-1 x: each block's triangle, then its column below it subtracted from the rest. */
static void qp_cpu_solve_lower(const qp_cpu_factor *f, double *x) {
  for (int k = 0; k < f->n; k += QP_CPU_SOLVE_BLOCK) {
    const int b = f->n - k < QP_CPU_SOLVE_BLOCK ? f->n - k : QP_CPU_SOLVE_BLOCK;
    const int rest = f->n - k - b;
    const double *lkk = f->l + k + (size_t)k * f->ld;
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, b, lkk, f->ld, x + k, 1);
    if (rest > 0)
      cblas_dgemv(CblasColMajor, CblasNoTrans, rest, b, -1.0, lkk + b, f->ld, x + k, 1, 1.0,
                  x + k + b, 1);
  }
}

/* x <- L^-T x: the blocks from the last, each first less L's column below it times x there. */
static void qp_cpu_solve_lower_trans(const qp_cpu_factor *f, double *x) {
  for (int k = (f->n - 1) / QP_CPU_SOLVE_BLOCK * QP_CPU_SOLVE_BLOCK; k >= 0;
       k -= QP_CPU_SOLVE_BLOCK) {
    const int b = f->n - k < QP_CPU_SOLVE_BLOCK ? f->n - k : QP_CPU_SOLVE_BLOCK;
    const int rest = f->n - k - b;
    const double *lkk = f->l + k + (size_t)k * f->ld;
    if (rest > 0)
      cblas_dgemv(CblasColMajor, CblasTrans, rest, b, -1.0, lkk + b, f->ld, x + k + b, 1, 1.0,
                  x + k, 1);
    cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, b, lkk, f->ld, x + k, 1);
  }
}

/* A^-1 x = L^-T L^-1 x for both of dlacn2's kases (A^-1 is symmetric; qp_condition_solves). */
static qp_err qp_cpu_cholesky_apply(void *context, int kase, double *x) {
  (void)kase;
  qp_cpu_solve_lower(context, x);
  qp_cpu_solve_lower_trans(context, x);
  return QP_OK;
}

static qp_err qp_cpu_pocon(const qp_matrix *l, double anorm, double *rcond) {
  qp_cpu_factor f = {.l = l->data};
  QP_BLAS_INT(l->rows, &f.n, "matrix order");
  QP_BLAS_INT(l->ld, &f.ld, "leading dimension");
  return qp_condition_estimate(l->rows, anorm, qp_cpu_cholesky_apply, &f, l->name, rcond);
}

/* The estimator's workspaces are O(n) (dgecon 4n doubles and n ints), next to the n^2
 * matrix: plain scratch, like the other O(n) arrays (docs/memory-model.md). */
static qp_err qp_cpu_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  int n, lda;
  QP_BLAS_INT(lu->rows, &n, "matrix order");
  QP_BLAS_INT(lu->ld, &lda, "leading dimension");
  double *work = malloc((size_t)(4 * (int64_t)n + 1) * sizeof *work);
  int *iwork = malloc((size_t)(n + 1) * sizeof *iwork);
  if (!work || !iwork) {
    free(work);
    free(iwork);
    QP_FAIL(QP_ERR_NOMEM, "condition estimate of '%s' (%d x %d): no memory for its workspace",
            lu->name, n, n);
  }
  int info =
      LAPACKE_dgecon_work(LAPACK_COL_MAJOR, '1', n, lu->data, lda, anorm, rcond, work, iwork);
  free(work);
  free(iwork);
  QP_CALL(qp_lapack_check(info, "dgecon", lu));
  return QP_OK;
}

static const qp_linalg_ops qp_cpu_ops_table = {
    .name = "cpu",
    .potrf = qp_cpu_potrf,
    .potri = qp_cpu_potri,
    .trtri = qp_cpu_trtri,
    .trmm = qp_cpu_trmm,
    .trsm = qp_cpu_trsm,
    .gemm = qp_cpu_gemm,
    .syrk = qp_cpu_syrk,
    .potrs = qp_cpu_potrs,
    .getrf = qp_cpu_getrf,
    .getrs = qp_cpu_getrs,
    .trace_product = qp_cpu_trace_product,
    .copy_sub = qp_cpu_copy_sub,
    .norm1 = qp_cpu_norm1,
    .pocon = qp_cpu_pocon,
    .gecon = qp_cpu_gecon,
    .transpose = qp_cpu_transpose,
    .clear_upper = qp_matrix_clear_upper_local,
    .scale = qp_matrix_scale_local,
    /* sum_partials NULL: one process holds every matrix; moves_data 0. */
};

const qp_linalg_ops *qp_linalg_cpu_ops(void) { return &qp_cpu_ops_table; }

qp_err qp_linalg_cpu_start(const qp_linalg_ops **ops) {
  *ops = &qp_cpu_ops_table;
  return QP_OK;
}
