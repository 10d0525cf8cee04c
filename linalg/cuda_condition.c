/* cuda_condition.c: the cuda backend's 1-norm and condition estimates (norm1, pocon and gecon
 * of the table in matrix.h).
 *
 * cuSOLVER has no pocon or gecon. LAPACK's own estimator (dlacn2, Hager and Higham) asks
 * only for products of A^-1 and A^-T with n-vectors, by reverse communication; so dlacn2 runs
 * on the host on n-vectors, and each product is two triangular solves (cublasDtrsv) with the
 * factors on the device. That is O(n) host memory and about five round trips of one vector,
 * next to the factorisation's O(n^3), and the factor never leaves the device. The vector's
 * device copy is the context's reduction buffer (QP_TERM_DEVICE_REDUCTION); the host vectors
 * are O(n) scratch, as cpu.c's estimator workspaces. What dpocon and dgecon add (dlatrs's
 * scaling against overflow in the solves) is left out: a solve that overflows makes the
 * estimate of |A^-1| infinite or NaN, reported here as rcond 0, i.e. singular to working
 * precision, which is what LAPACK's scaled solve would say too. */
#include <lapack.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "blas_int.h"
#include "cuda_private.h"

qp_err qp_cuda_norm1(const qp_matrix *a, double *out) {
  QP_CALL(qp_cuda_check_operand(a, "norm1"));
  *out = 0.0;
  if (a->rows == 0 || a->cols == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  char what[QP_TERM_NAME_MAX + 32];
  snprintf(what, sizeof what, "1-norm of '%s'", a->name);
  QP_CALL(qp_cuda_reserve_reduction(a->cols + 1));
  QP_CALL(qp_cuda_status(
      qp_cuda_launch_norm1(a->data, a->ld, a->rows, a->cols, c->reduction, c->stream), what));
  QP_CALL(qp_cuda_copy_2d(out, 1, c->reduction + a->cols, 1, 1, 1, cudaMemcpyDeviceToHost, what));
  return QP_OK;
}

/* The factors the estimator solves with: Cholesky's L (A^-1 = L^-T L^-1, symmetric), or LU's
 * unit lower L and upper U in one matrix (A^-1 = U^-1 L^-1 up to the row permutation, which
 * does not change a 1-norm). */
typedef enum qp_cuda_factor { QP_CUDA_CHOLESKY, QP_CUDA_LU } qp_cuda_factor;

/* One triangular solve x <- op(T)^-1 x on the device vector. */
static qp_err qp_cuda_trsv(const qp_matrix *f, cublasFillMode_t fill, cublasOperation_t op,
                           cublasDiagType_t diag, double *x) {
  QP_CALL(qp_cublas_status(cublasDtrsv_64(qp_cuda_ctx.blas, fill, op, diag, f->rows, f->data,
                                          f->ld, x, 1),
                           "cublasDtrsv (condition estimate)"));
  return QP_OK;
}

/* x <- A^-1 x (kase 1) or A^-T x (kase 2), dlacn2's requests, on the device vector x. */
static qp_err qp_cuda_inverse_apply(qp_cuda_factor factor, const qp_matrix *f, int kase,
                                    double *x) {
  const cublasFillMode_t lower = CUBLAS_FILL_MODE_LOWER, upper = CUBLAS_FILL_MODE_UPPER;
  const cublasOperation_t n = CUBLAS_OP_N, t = CUBLAS_OP_T;
  if (factor == QP_CUDA_CHOLESKY) {
    QP_CALL(qp_cuda_trsv(f, lower, n, CUBLAS_DIAG_NON_UNIT, x));
    QP_CALL(qp_cuda_trsv(f, lower, t, CUBLAS_DIAG_NON_UNIT, x));
  } else if (kase == 1) {
    QP_CALL(qp_cuda_trsv(f, lower, n, CUBLAS_DIAG_UNIT, x));
    QP_CALL(qp_cuda_trsv(f, upper, n, CUBLAS_DIAG_NON_UNIT, x));
  } else {
    QP_CALL(qp_cuda_trsv(f, upper, t, CUBLAS_DIAG_NON_UNIT, x));
    QP_CALL(qp_cuda_trsv(f, lower, t, CUBLAS_DIAG_UNIT, x));
  }
  return QP_OK;
}

/* |A^-1|_1 estimated by dlacn2's loop: host vectors v, x, isgn; each request goes to the
 * device and back. */
static qp_err qp_cuda_inverse_norm1(qp_cuda_factor factor, const qp_matrix *f, double *est) {
  int n;
  QP_BLAS_INT(f->rows, &n, "matrix order (dlacn2)");
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_reserve_reduction(n));
  double *v = malloc((size_t)n * sizeof *v), *x = malloc((size_t)n * sizeof *x);
  int *isgn = malloc((size_t)n * sizeof *isgn);
  qp_err err = QP_OK;
  QP_CHECK_GOTO(v && x && isgn, QP_ERR_NOMEM, done,
                "condition estimate of '%s' (order %d): no memory for its vectors", f->name, n);
  char what[QP_TERM_NAME_MAX + 48];
  snprintf(what, sizeof what, "condition estimate of '%s'", f->name);
  int kase = 0, isave[3] = {0, 0, 0};
  *est = 0.0;
  for (;;) {
    LAPACK_dlacn2(&n, v, x, isgn, est, &kase, isave);
    if (kase == 0) break;
    QP_CALL_GOTO(qp_cuda_copy_2d(c->reduction, n, x, n, n, 1, cudaMemcpyHostToDevice, what), done);
    QP_CALL_GOTO(qp_cuda_inverse_apply(factor, f, kase, c->reduction), done);
    QP_CALL_GOTO(qp_cuda_copy_2d(x, n, c->reduction, n, n, 1, cudaMemcpyDeviceToHost, what), done);
  }
done:
  free(v);
  free(x);
  free(isgn);
  return err;
}

/* rcond = 1 / (|A|_1 |A^-1|_1), with LAPACK's conventions: 1 for order 0, 0 when anorm or the
 * estimate is 0; and 0 when the estimate is not finite (see the top of the file). */
static qp_err qp_cuda_condition(qp_cuda_factor factor, const qp_matrix *f, double anorm,
                                double *rcond) {
  const char *routine = factor == QP_CUDA_CHOLESKY ? "pocon" : "gecon";
  QP_CALL(qp_cuda_check_operand(f, routine));
  QP_CHECK(!(anorm < 0), QP_ERR_LIBRARY, "%s on '%s' (stage %s): anorm %g is negative", routine,
           f->name, qp_stage_label(), anorm);
  *rcond = 0.0;
  if (f->rows == 0) {
    *rcond = 1.0;
    return QP_OK;
  }
  if (isnan(anorm)) {
    *rcond = anorm;
    return QP_OK;
  }
  if (anorm == 0.0) return QP_OK;
  double est = 0.0;
  QP_CALL(qp_cuda_inverse_norm1(factor, f, &est));
  if (est != 0.0 && isfinite(est)) *rcond = (1.0 / est) / anorm;
  return QP_OK;
}

qp_err qp_cuda_pocon(const qp_matrix *l, double anorm, double *rcond) {
  return qp_cuda_condition(QP_CUDA_CHOLESKY, l, anorm, rcond);
}

qp_err qp_cuda_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  return qp_cuda_condition(QP_CUDA_LU, lu, anorm, rcond);
}
