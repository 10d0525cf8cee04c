/* harmonic_smw_cross.c: cross-spectra of maps (A) and maps2 (B) on the SMW route (the science:
 * harmonic_route.h, docs/science.md). Each set has its own N_eff (N_A + S_fixed and
 * N_B + S_fixed with the switch), so its own K = V N_eff^-1 V^T, M = I + K Lambda (LU) and
 * W = M^-1 K = V C^-1 V^T; A's in the auto route's buffers (p->vt, p->kernel, p->smw_lu,
 * p->mode_maps), B's beside them (_b). fisher_run is the projection's (harmonic_cross.c) with
 * the switch's term made here from what basis_setup keeps:
 *   V C^-1 = M^-1 V N_eff^-1, so Z_B^T S_fixed Z_A = M_B^-1 Q M_A^-T with
 *   Q = V N_B,eff^-1 S_fixed N_A,eff^-1 V^T = Y_B^T L_B^-1 S_fixed L_A^-T Y_A (L: N_eff's
 *   Cholesky factors, Y = L^-1 V^T), formed in basis_setup while L and Y exist;
 * spectra_run y_p = 1/2 z_A^T D_p z_B with z = M^-1 V N_eff^-1 x of each set. */
#include <stdlib.h>

#include "basis_terms.h"
#include "conditioning.h"
#include "harmonic_route.h"
#include "harmonic_smw.h"
#include "spectra_terms.h"

/* basis_setup in four phases (basis_terms.c):
 *  0: V^T and its copy; each N_eff's Cholesky (or variances) checked, Y_A and Y_B, and
 *     V N_eff^-1 x of each set;
 *  1: Q (the switch); then the N_eff go;
 *  2: K_A = Y_A^T Y_A, K_B = Y_B^T Y_B; then V and its copy go;
 *  3: both LUs, W_A = M_A^-1 K_A and W_B = M_B^-1 K_B in place of the K. */
qp_err qp_smw_cross_basis(qp_problem *p, qp_progress *progress) {
  const int64_t n = p->n_pix, nm = p->n_modes;
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_V, QP_TERM_TRANSIENT, n, nm, &p->vt));
  QP_CALL(qp_harmonic_build_vt(p));
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_V_B, QP_TERM_TRANSIENT, n, nm, &p->vt_b));
  QP_CALL(qp_linalg_copy_sub(n, nm, &p->vt, 0, 0, &p->vt_b, 0, 0));
  qp_progress_note(progress, "harmonic basis V built");
  const int sw = p->plan->switched;
  QP_CALL(qp_smw_noise_check(p, &p->noise_factor, p->noise_variance,
                             sw ? "N_A,eff = N_A + S_fixed (SMW's noise of maps)"
                                : "the noise covariance N_A of maps (SMW)",
                             "the covariance of maps C_A = S + N_A (SMW's bound: rcond(N) / (1 + "
                             "lambda_max(S) / lambda_max(N)), each field in its own units)"));
  const double noise_a = p->rcond[QP_RCOND_NOISE], cov_a = p->rcond[QP_RCOND_COVARIANCE];
  QP_CALL(qp_smw_noise_check(p, &p->noise_factor_b, p->noise_variance_b,
                             sw ? "N_B,eff = N_B + S_fixed (SMW's noise of maps2)"
                                : "the noise covariance N_B of maps2 (SMW)",
                             "the covariance of maps2 C_B = S + N_B (SMW's bound: rcond(N) / (1 + "
                             "lambda_max(S) / lambda_max(N)), each field in its own units)"));
  /* rcond_noise and rcond_covariance are the smaller of the two sets' */
  if (noise_a < p->rcond[QP_RCOND_NOISE]) p->rcond[QP_RCOND_NOISE] = noise_a;
  if (cov_a < p->rcond[QP_RCOND_COVARIANCE]) p->rcond[QP_RCOND_COVARIANCE] = cov_a;
  QP_CALL(qp_smw_whiten(p, &p->noise_factor, p->noise_variance, &p->vt));
  QP_CALL(qp_smw_mode_maps(p, &p->noise_factor, p->noise_variance, &p->vt, 0, QP_TERM_MODE_MAPS,
                           &p->mode_maps, NULL));
  QP_CALL(qp_smw_whiten(p, &p->noise_factor_b, p->noise_variance_b, &p->vt_b));
  QP_CALL(qp_smw_mode_maps(p, &p->noise_factor_b, p->noise_variance_b, &p->vt_b, p->n_maps,
                           QP_TERM_MODE_MAPS_B, &p->mode_maps_b, NULL));
  if (sw) {
    /* The switch makes both N_eff dense: Q = Y_B^T L_B^-1 S_fixed L_A^-T Y_A. */
    QP_CALL(
        qp_matrix_create(p->ops, QP_TERM_CROSS_FIXED, QP_TERM_PERSISTENT, nm, nm, &p->cross_fixed));
    QP_CALL(qp_cross_fixed_product(p, &p->noise_factor, &p->vt, &p->noise_factor_b, &p->vt_b,
                                   &p->cross_fixed));
    qp_progress_note(progress, "Q = V N_B,eff^-1 S_fixed N_A,eff^-1 V^T");
  }
  qp_matrix_destroy(&p->noise_factor);
  qp_matrix_destroy(&p->noise);
  qp_matrix_destroy(&p->noise_factor_b);

  QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL, QP_TERM_PERSISTENT, nm, nm, &p->kernel));
  QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt, 0.0, &p->kernel));
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL_B, QP_TERM_PERSISTENT, nm, nm, &p->kernel_b));
  QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt_b, 0.0, &p->kernel_b));
  qp_matrix_destroy(&p->vt);
  qp_matrix_destroy(&p->vt_b);
  qp_progress_note(progress, "K_A = V N_A^-1 V^T, K_B = V N_B^-1 V^T");

  QP_CALL(qp_matrix_create(p->ops, QP_TERM_SMW_LU, QP_TERM_PERSISTENT, nm, nm, &p->smw_lu));
  QP_CALL(qp_budget_alloc_array(QP_TERM_PIVOTS, QP_TERM_PERSISTENT,
                                (size_t)qp_linalg_pivot_count(&p->smw_lu), sizeof(int),
                                (void **)&p->pivots));
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_SMW_LU_B, QP_TERM_PERSISTENT, nm, nm, &p->smw_lu_b));
  QP_CALL(qp_budget_alloc_array(QP_TERM_PIVOTS_B, QP_TERM_PERSISTENT,
                                (size_t)qp_linalg_pivot_count(&p->smw_lu_b), sizeof(int),
                                (void **)&p->pivots_b));
  QP_CALL(qp_smw_kernel_factor(p, &p->kernel, &p->smw_lu, p->pivots,
                               "the SMW kernel of maps I + K_A Lambda"));
  const double smw_a = p->rcond[QP_RCOND_SMW];
  QP_CALL(qp_smw_kernel_factor(p, &p->kernel_b, &p->smw_lu_b, p->pivots_b,
                               "the SMW kernel of maps2 I + K_B Lambda"));
  if (smw_a < p->rcond[QP_RCOND_SMW]) p->rcond[QP_RCOND_SMW] = smw_a;
  qp_progress_note(progress, "W_A = M_A^-1 K_A, W_B = M_B^-1 K_B");
  qp_budget_free(p->noise_variance);
  p->noise_variance = NULL;
  qp_budget_free(p->noise_variance_b);
  p->noise_variance_b = NULL;
  return QP_OK;
}

/* h <- Z_B^T S_fixed Z_A = M_B^-1 Q M_A^-T (fisher_run, phase 1), through h's and Q's
 * buffers: h = Q^T, h = M_A^-1 Q^T, Q = h^T = Q M_A^-T, Q = M_B^-1 Q M_A^-T, h = Q; Q goes. */
qp_err qp_smw_cross_fixed_kernel(qp_problem *p, qp_matrix *h) {
  QP_CALL(qp_linalg_transpose(&p->cross_fixed, h));
  QP_CALL(qp_smw_solve_lu(p, &p->smw_lu, p->pivots, h));
  QP_CALL(qp_linalg_transpose(h, &p->cross_fixed));
  QP_CALL(qp_smw_solve_lu(p, &p->smw_lu_b, p->pivots_b, &p->cross_fixed));
  QP_CALL(qp_linalg_copy_sub(h->rows, h->cols, &p->cross_fixed, 0, 0, h, 0, 0));
  qp_matrix_destroy(&p->cross_fixed);
  return QP_OK;
}

/* y from z_A = M_A^-1 V N_A^-1 x_A and z_B = M_B^-1 V N_B^-1 x_B, the mode maps of
 * basis_setup (one batch: the planner keeps every map on the device), whole on every rank (a
 * copy where the backend moves data). */
qp_err qp_smw_cross_spectra_y(qp_problem *p) {
  const int64_t nm = p->n_modes, n_maps = p->n_maps;
  qp_err err = QP_OK;
  qp_matrix all = {0}, all_b = {0};
  const double *za = NULL, *zb = NULL;
  QP_CHECK(qp_map_batch(p) == n_maps, QP_ERR_INTERNAL,
           "spectra_run: SMW cross-spectra with maps in batches (planner_route.c refuses them)");
  if (qp_linalg_moves_data(p->ops)) {
    QP_CALL_GOTO(qp_matrix_create(qp_linalg_cpu_ops(), QP_TERM_MODE_MAPS_ALL, QP_TERM_TRANSIENT, nm,
                                  n_maps, &all),
                 done);
    QP_CALL_GOTO(qp_matrix_create(qp_linalg_cpu_ops(), QP_TERM_MODE_MAPS_ALL_B, QP_TERM_TRANSIENT,
                                  nm, n_maps, &all_b),
                 done);
  }
  QP_CALL_GOTO(qp_smw_solve_lu(p, &p->smw_lu, p->pivots, &p->mode_maps), done);
  QP_CALL_GOTO(qp_smw_solve_lu(p, &p->smw_lu_b, p->pivots_b, &p->mode_maps_b), done);
  QP_CALL_GOTO(qp_linalg_replicate(&p->mode_maps, &all, &za), done);
  QP_CALL_GOTO(qp_linalg_replicate(&p->mode_maps_b, &all_b, &zb), done);
  QP_CALL_GOTO(qp_cross_y_from_z(p, za, zb, 0, n_maps), done);
done:
  qp_matrix_destroy(&all_b);
  qp_matrix_destroy(&all);
  return err;
}
