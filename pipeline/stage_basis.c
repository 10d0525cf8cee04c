/* stage_basis.c: basis_setup. Pixel-direct: C = L L^T, then L^-1, both in place; L^-1 is all
 * later stages need: C^-1 = L^-T L^-1, applied by triangular products. Harmonic: harmonic.c. */
#include "harmonic.h"
#include "stages.h"

qp_err qp_stage_basis_setup(qp_problem *p) {
  if (p->path_used == QP_PATH_HARMONIC) {
    QP_CALL(qp_harmonic_basis_setup(p));
    return QP_OK;
  }
  QP_CALL(qp_linalg_potrf(&p->cov));
  QP_CALL(qp_linalg_trtri(&p->cov));
  /* LAPACK leaves C's upper triangle behind; clear it so the buffer is exactly L^-1. */
  const int64_t n = p->n_pix;
  for (int64_t j = 1; j < n; ++j)
    for (int64_t i = 0; i < j; ++i)
      p->cov.data[i + j * n] = 0.0;
  return QP_OK;
}
