/* harmonic_cross.c: cross-spectra of maps (A) and maps2 (B) on the projection route, and the
 * fisher_run SMW shares (harmonic_smw_cross.c makes its W_A, W_B and the switch's term)
 * (harmonic_route.h; the science: docs/science.md). A's half is the auto route's: L_A, Y_A = V^T
 * then L_A^-1 V^T in p->vt, W_A in p->kernel. This file adds B's half and what joins them:
 *   basis_setup   L_B = chol(C_B), Y_B = L_B^-1 V^T (p->vt_b), W_B = Y_B^T Y_B (p->kernel_b)
 *   fisher_run    F_pq = 1/2 tr(W_A D_p W_B D_q)                               phase 0
 *                 H = Z_B^T S_fixed Z_A (the switch only), b_p = 1/2 tr(D_p H)  phase 1
 *                 H += (W_B Lambda) W_A: H = Z_B^T S Z_A, Z = C^-1 V^T          phase 2
 *                 M_pq = 1/4 tr(D_p H D_q H) + 1/2 F_pq = Cov(y_p, y_q)         phase 3
 *   spectra_run   y_p = 1/2 z_A^T D_p z_B, z = Y^T L^-1 x of each set
 * S = V^T Lambda V + S_fixed (S_fixed the multipoles lmax+1..lmax_signal, dense in pixels), so
 * Z_B^T S Z_A = W_B Lambda W_A + Z_B^T S_fixed Z_A with V Z = W: M's traces need no n_pix^2
 * matrix but the switch's. With A = B, M = F (the auto covariance F^-1 follows). The phases are
 * the memory model's (fisher_terms.c); the formulas are checked against a dense computation in
 * tests/pipeline/test_cross_reference.c. */
#include <stdlib.h>
#include <string.h>

#include "basis_terms.h"
#include "conditioning.h"
#include "fisher_terms.h"
#include "harmonic_bias.h"
#include "harmonic_route.h"
#include "harmonic_smw.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "spectra_terms.h"
#include "window.h"

qp_err qp_cross_basis_setup(qp_problem *p) {
  const double rcond_a = p->rcond[QP_RCOND_COVARIANCE];
  const qp_run_scale fields = qp_field_scale(p, p->cfg->ell_min, p->cfg->lmax_signal, 1);
  QP_CALL(qp_conditioned_potrf(p, &p->cov_b, QP_RCOND_COVARIANCE,
                               "the covariance of maps2 C_B = S + N_B", QP_RCOND_COVARIANCE_ADVICE,
                               &fields, NULL));
  /* rcond_covariance is the smaller of the two */
  if (rcond_a < p->rcond[QP_RCOND_COVARIANCE]) p->rcond[QP_RCOND_COVARIANCE] = rcond_a;
  QP_CALL(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov_b, &p->vt_b));
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL_B, QP_TERM_PERSISTENT, p->n_modes, p->n_modes,
                           &p->kernel_b));
  QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt_b, 0.0, &p->kernel_b));
  return QP_OK;
}

/* out <- Y_B^T L_B^-1 S_fixed L_A^-T Y_A (the switch's multipoles lmax+1..lmax_signal):
 * Z_A = L_A^-T Y_A, then S_fixed Z_A, then L_B^-1 of it and Y_B^T of that, n_pix^2 n_modes flops
 * a step where forming L_B^-1 S_fixed L_A^-T would cost n_pix^3. Projection: L = chol(C), so
 * out = Z_B^T S_fixed Z_A; SMW: L = chol(N_eff), out = Q (harmonic_smw_cross.c). */
qp_err qp_cross_fixed_product(qp_problem *p, const qp_matrix *la, const qp_matrix *ya,
                              const qp_matrix *lb, const qp_matrix *yb, qp_matrix *out) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix, nm = p->n_modes;
  qp_matrix z = {0}, s = {0}, sz = {0};
  qp_err err = QP_OK;
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MODES, QP_TERM_TRANSIENT, n, nm, &z),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_CROSS_SIGNAL, QP_TERM_TRANSIENT, n, n, &s), done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, n, nm, &sz), done);
  QP_CALL_GOTO(qp_linalg_copy_sub(n, nm, ya, 0, 0, &z, 0, 0), done);
  QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, la, &z), done);
  QP_CALL_GOTO(qp_pixel_signal(p, &s, cfg->lmax + 1, cfg->lmax_signal), done);
  QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &s, &z, 0.0, &sz), done);
  qp_matrix_destroy(&s);
  qp_matrix_destroy(&z);
  QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, lb, &sz), done);
  QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, yb, &sz, 0.0, out), done);
done:
  qp_matrix_destroy(&sz);
  qp_matrix_destroy(&s);
  qp_matrix_destroy(&z);
  return err;
}

qp_err qp_cross_fisher_run(qp_problem *p) {
  const int64_t nm = p->n_modes, np = p->n_params;
  qp_err err = QP_OK;
  qp_entry *e = NULL;
  int64_t *start = NULL;
  qp_matrix h = {0}, ht = {0}, g = {0};
  QP_CALL(qp_harmonic_fisher_results(p));
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "fisher_run", "", 0);
  QP_CALL_GOTO(qp_param_entries(p, &e, &start), done);
  /* Phase 0: F = 1/2 sum of v u (W_B)_bc (W_A)_ad (qp_fisher_block_pass). */
  QP_CALL_GOTO(qp_fisher_block_pass(p, e, start, &p->kernel_b, &p->kernel, QP_TERM_FIELD_BLOCKS,
                                    QP_TERM_FISHER_BLOCK_SUMS, p->fisher, p->fisher_ell),
               done);
  qp_progress_note(&progress, "F summed over W_A's and W_B's blocks");
  /* Phase 1: no noise bias (the noises are independent) but S_fixed's with the switch. */
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_CROSS_KERNEL, QP_TERM_TRANSIENT, nm, nm, &h), done);
  memset(p->noise_bias, 0, (size_t)np * sizeof *p->noise_bias);
  if (p->plan->switched) {
    if (p->plan->smw)
      QP_CALL_GOTO(qp_smw_cross_fixed_kernel(p, &h), done);
    else
      QP_CALL_GOTO(qp_cross_fixed_product(p, &p->cov, &p->vt, &p->cov_b, &p->vt_b, &h), done);
    QP_CALL_GOTO(qp_bias_from_matrix(p, &h, e, start), done);
    qp_progress_note(&progress, "b = 1/2 tr(D_p Z_B^T S_fixed Z_A)");
  }
  /* Phase 2: H += (W_B Lambda) W_A; W_A and W_B are done with. */
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_CROSS_LAMBDA, QP_TERM_TRANSIENT, nm, nm, &g), done);
  QP_CALL_GOTO(qp_kernel_times_lambda(p, &p->kernel_b, &g, 0, QP_TERM_LAMBDA_COLUMNS), done);
  QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &g, &p->kernel,
                              p->plan->switched ? 1.0 : 0.0, &h),
               done);
  qp_matrix_destroy(&g);
  qp_matrix_destroy(&p->kernel_b);
  qp_matrix_destroy(&p->kernel);
  /* Phase 3: M = 1/2 (1/2 tr(D_p H D_q H)) + 1/2 F, the pass's X = H and Y = H^T. */
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_CROSS_KERNEL_T, QP_TERM_TRANSIENT, nm, nm, &ht),
               done);
  QP_CALL_GOTO(qp_linalg_transpose(&h, &ht), done);
  QP_CALL_GOTO(qp_fisher_block_pass(p, e, start, &h, &ht, QP_TERM_CROSS_FIELD_BLOCKS,
                                    QP_TERM_CROSS_BLOCK_SUMS, p->y_covariance, NULL),
               done);
  for (int64_t k = 0; k < np * np; ++k)
    p->y_covariance[k] = 0.5 * p->y_covariance[k] + 0.5 * p->fisher[k];
  qp_progress_note(&progress, "Cov(y) from H = Z_B^T S Z_A");
done:
  qp_matrix_destroy(&ht);
  qp_matrix_destroy(&g);
  qp_matrix_destroy(&h);
  free(e);
  free(start);
  /* As the auto route: N goes with the fisher_run (model: freed in fisher_run). */
  qp_matrix_destroy(&p->kernel_b);
  qp_matrix_destroy(&p->kernel);
  qp_budget_free(p->noise_variance);
  p->noise_variance = NULL;
  qp_matrix_destroy(&p->noise);
  return err;
}

/* z of one set for a batch: x (`column` the set's first map of the batch, qp_maps_to_matrix)
 * weighed by L^-1, then Y^T; whole on every rank (a copy where the backend moves data). */
static qp_err qp_cross_mode_maps(qp_problem *p, const qp_matrix *l, const qp_matrix *y,
                                 int64_t column, qp_matrix *w, qp_matrix *v, qp_matrix *all,
                                 const double **whole) {
  QP_CALL(qp_maps_to_matrix(p, column, w));
  QP_CALL(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, l, w));
  QP_CALL(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, y, w, 0.0, v));
  QP_CALL(qp_linalg_replicate(v, all, whole));
  return QP_OK;
}

qp_err qp_cross_y_from_z(qp_problem *p, const double *za, const double *zb, int64_t first,
                         int64_t count) {
  const int64_t nm = p->n_modes, np = p->n_params;
  qp_entry *e = NULL;
  int64_t *start = NULL;
  QP_CALL(qp_param_entries(p, &e, &start));
  /* y_p = 1/2 sum over D_p's entries (a, b, v) of v z_A[a] z_B[b] (D_p symmetric). */
  for (int64_t m = 0; m < count; ++m) {
    const double *xa = za + m * nm, *xb = zb + m * nm;
    for (int64_t q = 0; q < np; ++q) {
      double sum = 0;
      for (int64_t k = start[q]; k < start[q + 1]; ++k)
        sum += e[k].v * xa[e[k].a] * xb[e[k].b];
      p->yb[(first + m) * np + q] = 0.5 * sum;
    }
  }
  free(e);
  free(start);
  return QP_OK;
}

qp_err qp_cross_spectra_y(qp_problem *p) {
  const int64_t n = p->n_pix, nm = p->n_modes, batch = qp_map_batch(p);
  const int moves = qp_linalg_moves_data(p->ops);
  qp_err err = QP_OK;
  qp_matrix w = {0}, wb2 = {0}, v = {0}, vb2 = {0}, all = {0}, all2 = {0};
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, n, batch, &w),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS_B, QP_TERM_TRANSIENT, n, batch, &wb2),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_MODE_MAPS, QP_TERM_TRANSIENT, nm, batch, &v), done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_MODE_MAPS_B, QP_TERM_TRANSIENT, nm, batch, &vb2),
               done);
  if (moves) {
    QP_CALL_GOTO(qp_matrix_create(qp_linalg_cpu_ops(), QP_TERM_MODE_MAPS_ALL, QP_TERM_TRANSIENT, nm,
                                  batch, &all),
                 done);
    QP_CALL_GOTO(qp_matrix_create(qp_linalg_cpu_ops(), QP_TERM_MODE_MAPS_ALL_B, QP_TERM_TRANSIENT,
                                  nm, batch, &all2),
                 done);
  }
  for (int64_t first = 0; first < p->n_maps; first += batch) {
    const int64_t count = qp_map_batch_count(p, first);
    qp_matrix wv, w2v, vv, v2v, av = {0}, a2v = {0};
    const double *za, *zb;
    QP_CALL_GOTO(qp_map_batch_view(&w, count, &wv), done);
    QP_CALL_GOTO(qp_map_batch_view(&wb2, count, &w2v), done);
    QP_CALL_GOTO(qp_map_batch_view(&v, count, &vv), done);
    QP_CALL_GOTO(qp_map_batch_view(&vb2, count, &v2v), done);
    if (moves) {
      QP_CALL_GOTO(qp_matrix_columns(&all, 0, count, &av), done);
      QP_CALL_GOTO(qp_matrix_columns(&all2, 0, count, &a2v), done);
    }
    QP_CALL_GOTO(qp_cross_mode_maps(p, &p->cov, &p->vt, first, &wv, &vv, &av, &za),
                 done);
    QP_CALL_GOTO(qp_cross_mode_maps(p, &p->cov_b, &p->vt_b, p->n_maps + first, &w2v, &v2v,
                                    &a2v, &zb),
                 done);
    QP_CALL_GOTO(qp_cross_y_from_z(p, za, zb, first, count), done);
  }
done:
  qp_matrix_destroy(&all2);
  qp_matrix_destroy(&all);
  qp_matrix_destroy(&vb2);
  qp_matrix_destroy(&v);
  qp_matrix_destroy(&wb2);
  qp_matrix_destroy(&w);
  return err;
}
