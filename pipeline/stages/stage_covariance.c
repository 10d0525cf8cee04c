/* stage_covariance.c: covariance_setup: inputs, then C = S + N. */
#include <math.h>
#include <string.h>

#include "covariance_terms.h"
#include "inputs.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "stages.h"

/* A dense N must be positive definite by itself (S can hide an indefinite N inside C, and the
 * noise bias would then be wrong): its Cholesky is done in C's buffer before S goes there. */
static qp_err qp_check_dense_noise(qp_problem *p) {
  const int64_t n = p->n_pix;
  QP_CALL(qp_linalg_copy_sub(n, n, &p->noise, 0, 0, &p->cov, 0, 0));
  qp_matrix check;
  QP_CALL(qp_matrix_alias(&p->cov, "N (noise covariance)", &check));
  qp_err err = qp_linalg_potrf(&check);
  /* qp_error_set formats aside first, so the message can wrap the current one. */
  QP_CHECK(err != QP_ERR_NOT_POSDEF, QP_ERR_NOT_POSDEF, "noise covariance '%s' (dataset '%s'): %s",
           p->cfg->noise_file, p->cfg->noise_dataset, qp_error_message());
  QP_CALL(err);
  return QP_OK;
}

/* The SMW route needs no C: only N_eff = N + S_fixed, dense when N is or when the switch is
 * on (then factored in basis_setup); a dense N takes S_fixed in place. Cross-spectra: N_B,eff
 * beside it (harmonic_smw_cross.c). */
static qp_err qp_smw_noise(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix;
  if (p->noise.data)
    QP_CALL(qp_matrix_alias(&p->noise, QP_TERM_NOISE, &p->noise_factor));
  else if (p->plan->switched)
    QP_CALL(
        qp_matrix_create(p->ops, QP_TERM_NOISE_EFF, QP_TERM_PERSISTENT, n, n, &p->noise_factor));
  if (p->plan->switched)
    QP_CALL(qp_pixel_noise_plus_signal(p, &p->noise_factor, cfg->lmax + 1, cfg->lmax_signal));
  if (!p->plan->model_dims.cross_maps) return QP_OK;
  /* Cross-spectra: N_B,eff the same way, in a matrix of its own where it is dense (N_B read
   * into it, or its variances, which then go, on zeros; + S_fixed with the switch). */
  if (p->noise_variance_b && !p->plan->switched) return QP_OK;
  QP_CALL(
      qp_matrix_create(p->ops, QP_TERM_NOISE_EFF_B, QP_TERM_PERSISTENT, n, n, &p->noise_factor_b));
  if (!p->noise_variance_b) QP_CALL(qp_inputs_read_noise2(p, &p->noise_factor_b));
  if (p->plan->switched)
    QP_CALL(qp_pixel_signal_plus_variance(p, &p->noise_factor_b, p->noise_variance_b, cfg->lmax + 1,
                                          cfg->lmax_signal));
  qp_budget_free(p->noise_variance_b);
  p->noise_variance_b = NULL;
  return QP_OK;
}

/* Cross-spectra: C_B = S + N_B. Both noises diagonal: from C = S + N_A, a copy of C and its
 * diagonal moved by N_B - N_A, a panel of local columns at a time, where pair sums for S again
 * would cost O(n_pix^2 lmax). Either dense: N_B (read into C_B's buffer where it is dense, else
 * its variances on zeros) + S by pair sums. N_B is not needed after. */
static qp_err qp_cross_covariance(qp_problem *p) {
  const int64_t n = p->n_pix;
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_COVARIANCE_B, QP_TERM_PERSISTENT, n, n, &p->cov_b));
  if (!p->noise_variance || !p->noise_variance_b) {
    if (!p->noise_variance_b) QP_CALL(qp_inputs_read_noise2(p, &p->cov_b));
    QP_CALL(qp_pixel_signal_plus_variance(p, &p->cov_b, p->noise_variance_b, p->cfg->ell_min,
                                          p->cfg->lmax_signal));
    qp_budget_free(p->noise_variance_b);
    p->noise_variance_b = NULL;
    return QP_OK;
  }
  QP_CALL(qp_linalg_copy_sub(n, n, &p->cov, 0, 0, &p->cov_b, 0, 0));
  for (int64_t col0 = 0, cols; col0 < p->cov_b.local_cols; col0 += cols) {
    cols = qp_host_panel_width(p, p->cov_b.local_cols, col0);
    qp_host_window w;
    QP_CALL(qp_host_window_open(&p->cov_b, col0, cols, QP_ACCESS_READ_WRITE, &w));
    for (int64_t k = 0; k < cols; ++k) {
      const int64_t gj = qp_matrix_global_col(&p->cov_b, col0 + k);
      const int64_t li = qp_matrix_local_row(&p->cov_b, gj);
      if (li >= 0) w.data[li + k * w.ld] += p->noise_variance_b[gj] - p->noise_variance[gj];
    }
    QP_CALL(qp_host_window_close(&w));
  }
  qp_budget_free(p->noise_variance_b);
  p->noise_variance_b = NULL;
  return QP_OK;
}

qp_err qp_stage_covariance_setup(qp_problem *p) {
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "covariance_setup", "", 0);
  QP_CALL(qp_inputs_read_geometry(p));
  QP_CALL(qp_inputs_read_data(p));
  qp_progress_note(&progress, "mask, maps and noise read");
  QP_CALL(qp_problem_hold_backend(p));
  if (p->plan->path_used == QP_PATH_HARMONIC && p->plan->smw) {
    QP_CALL(qp_smw_noise(p));
  } else {
    const int64_t n = p->n_pix;
    QP_CALL(qp_matrix_create(p->ops, QP_TERM_COVARIANCE, QP_TERM_PERSISTENT, n, n, &p->cov));
    if (p->noise.data) QP_CALL(qp_check_dense_noise(p));
    QP_CALL(qp_pixel_noise_plus_signal(p, &p->cov, p->cfg->ell_min, p->cfg->lmax_signal));
    qp_progress_note(&progress, "C = S + N built");
    if (p->plan->model_dims.cross_maps) {
      QP_CALL(qp_cross_covariance(p));
      qp_progress_note(&progress, "C_B = S + N_B built");
    }
  }
  qp_budget_free(p->sky);
  p->sky = NULL;
  return QP_OK;
}
