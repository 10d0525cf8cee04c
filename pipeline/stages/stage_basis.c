/* stage_basis.c: basis_setup. Pixel-direct: C = L L^T, then L^-1, both in place; L^-1 is all
 * later stages need: C^-1 = L^-T L^-1, applied by triangular products. Harmonic: harmonic_route.c. */
#include "conditioning.h"
#include "harmonic_route.h"
#include "host_window.h"
#include "stages.h"

qp_err qp_stage_basis_setup(qp_problem *p) {
  if (p->path_used == QP_PATH_HARMONIC) {
    QP_CALL(qp_harmonic_basis_setup(p));
    return QP_OK;
  }
  QP_CALL(qp_conditioned_potrf(p, &p->cov, QP_RCOND_COVARIANCE, QP_RCOND_COVARIANCE_WHAT,
                               QP_RCOND_COVARIANCE_ADVICE, NULL));
  QP_CALL(qp_linalg_trtri(&p->cov));
  /* LAPACK leaves C's upper triangle behind; clear it so the buffer is exactly L^-1. */
  qp_matrix *l = &p->cov;
  qp_host_window w;
  QP_CALL(qp_host_window_open(l, 0, l->local_cols, QP_ACCESS_READ_WRITE, &w));
  for (int64_t lj = 0; lj < l->local_cols; ++lj) {
    const int64_t gj = qp_matrix_global_col(l, lj);
    for (int64_t li = 0; li < l->local_rows; ++li)
      if (qp_matrix_global_row(l, li) < gj) w.data[li + lj * w.ld] = 0.0;
  }
  QP_CALL(qp_host_window_close(&w));
  return QP_OK;
}
