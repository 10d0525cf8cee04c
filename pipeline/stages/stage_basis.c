/* stage_basis.c: basis_setup. Pixel-direct: C = L L^T, then L^-1, both in place; L^-1 is all
 * later stages need: C^-1 = L^-T L^-1, applied by triangular products. Harmonic: harmonic_route.c. */
#include "conditioning.h"
#include "harmonic_route.h"
#include "stages.h"

qp_err qp_stage_basis_setup(qp_problem *p) {
  if (p->plan->path_used == QP_PATH_HARMONIC) {
    QP_CALL(qp_harmonic_basis_setup(p));
    return QP_OK;
  }
  const qp_run_scale fields = qp_field_scale(p, p->cfg->ell_min, p->cfg->lmax_signal, 1);
  QP_CALL(qp_conditioned_potrf(p, &p->cov, QP_RCOND_COVARIANCE, QP_RCOND_COVARIANCE_WHAT,
                               QP_RCOND_COVARIANCE_ADVICE, &fields, NULL));
  QP_CALL(qp_linalg_trtri(&p->cov));
  /* LAPACK leaves C's upper triangle behind; clear it so the buffer is exactly L^-1. On the
   * backend, where L^-1 lives: on a device, a host window here cost an n_pix^2 staging block
   * and a round trip of L^-1 through it. */
  QP_CALL(qp_linalg_clear_upper(&p->cov));
  return QP_OK;
}
