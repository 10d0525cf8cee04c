/* stage_basis.c: basis_setup. Pixel-direct: C = L L^T, then L^-1, both in place; L^-1 is all
 * later stages need: C^-1 = L^-T L^-1, applied by triangular products. Harmonic: harmonic_route.c.
 */
#include "conditioning.h"
#include "harmonic_route.h"
#include "stages.h"

/* c <- L^-1 in place (C = L L^T, conditioned: conditioning.h). */
static qp_err qp_pixel_inverse_factor(qp_problem *p, qp_matrix *c) {
  const qp_run_scale fields = qp_field_scale(p, p->cfg->ell_min, p->cfg->lmax_signal, 1);
  QP_CALL(qp_conditioned_potrf(p, c, QP_RCOND_COVARIANCE, QP_RCOND_COVARIANCE_WHAT,
                               QP_RCOND_COVARIANCE_ADVICE, &fields, NULL));
  QP_CALL(qp_linalg_trtri(c));
  /* LAPACK leaves C's upper triangle behind; clear it so the buffer is exactly L^-1. On the
   * backend, where L^-1 lives: on a device, a host window here cost an n_pix^2 staging block
   * and a round trip of L^-1 through it. */
  QP_CALL(qp_linalg_clear_upper(c));
  return QP_OK;
}

qp_err qp_stage_basis_setup(qp_problem *p) {
  if (p->plan->path_used == QP_PATH_HARMONIC) {
    QP_CALL(qp_harmonic_basis_setup(p));
    return QP_OK;
  }
  QP_CALL(qp_pixel_inverse_factor(p, &p->cov));
  /* Cross-spectra: C_B's too; rcond_covariance is then the smaller of the two. */
  if (p->plan->model_dims.cross_maps) {
    const double rcond_a = p->rcond[QP_RCOND_COVARIANCE];
    QP_CALL(qp_pixel_inverse_factor(p, &p->cov_b));
    if (rcond_a < p->rcond[QP_RCOND_COVARIANCE]) p->rcond[QP_RCOND_COVARIANCE] = rcond_a;
  }
  return QP_OK;
}
