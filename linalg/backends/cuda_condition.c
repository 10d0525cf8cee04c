/* cuda_condition.c: the cuda backend's 1-norm and condition estimates (norm1, pocon and gecon
 * of the table in matrix.h).
 *
 * norm1 is a kernel (cuda_kernels.cu). cuSOLVER has no pocon or gecon: LAPACK's estimator runs
 * on the host (condition_estimate.h, tested on CPU), and each product with A^-1 or A^-T it asks
 * for is the vector to the device, the two triangular solves of qp_condition_solves with the
 * factor there (cublasDtrsv), and back: O(n) host memory and about five round trips of one
 * vector, next to the factorisation's O(n^3); the factor never leaves the device. The vector's
 * device copy is the context's reduction buffer (QP_TERM_DEVICE_REDUCTION). */
#include <stdio.h>

#include "condition_estimate.h"
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

typedef struct qp_cuda_factor {
  qp_factor_kind kind;
  const qp_matrix *f;
} qp_cuda_factor;

/* qp_inverse_apply for the estimator: x (host, n) <- A^-1 x or A^-T x on the device. */
static qp_err qp_cuda_inverse_apply(void *context, int kase, double *x) {
  const qp_cuda_factor *factor = context;
  const qp_matrix *f = factor->f;
  const qp_cuda_context *c = &qp_cuda_ctx;
  const int64_t n = f->rows;
  char what[QP_TERM_NAME_MAX + 48];
  snprintf(what, sizeof what, "condition estimate of '%s'", f->name);
  qp_triangular_solve solves[2];
  qp_condition_solves(factor->kind, kase, solves);
  QP_CALL(qp_cuda_copy_2d(c->reduction, n, x, n, n, 1, cudaMemcpyHostToDevice, what));
  for (int k = 0; k < 2; ++k)
    QP_CALL(qp_cublas_status(
        cublasDtrsv_64(c->blas, solves[k].upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER,
                       solves[k].transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
                       solves[k].unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, n, f->data, f->ld,
                       c->reduction, 1),
        what));
  QP_CALL(qp_cuda_copy_2d(x, n, c->reduction, n, n, 1, cudaMemcpyDeviceToHost, what));
  return QP_OK;
}

static qp_err qp_cuda_condition(qp_factor_kind kind, const qp_matrix *f, double anorm,
                                double *rcond) {
  QP_CALL(qp_cuda_check_operand(f, kind == QP_FACTOR_CHOLESKY ? "pocon" : "gecon"));
  if (f->rows > 0) QP_CALL(qp_cuda_reserve_reduction(f->rows));
  qp_cuda_factor factor = {kind, f};
  QP_CALL(qp_condition_estimate(f->rows, anorm, qp_cuda_inverse_apply, &factor, f->name, rcond));
  return QP_OK;
}

qp_err qp_cuda_pocon(const qp_matrix *l, double anorm, double *rcond) {
  return qp_cuda_condition(QP_FACTOR_CHOLESKY, l, anorm, rcond);
}

qp_err qp_cuda_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  return qp_cuda_condition(QP_FACTOR_LU, lu, anorm, rcond);
}
