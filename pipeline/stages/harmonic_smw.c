/* harmonic_smw.c: the SMW route's basis_setup for auto-spectra and the pieces the
 * cross-spectra's (harmonic_smw_cross.c) share with it (harmonic_smw.h): N_eff's conditioning,
 * the whitening, V N_eff^-1 x, M = I + K Lambda's LU and W = M^-1 K, the solves by M. The
 * science: harmonic_route.h. */
#include "harmonic_smw.h"

#include <math.h>

#include "basis_terms.h"
#include "conditioning.h"
#include "harmonic_route.h"
#include "host_window.h"
#include "spectra_terms.h"

qp_err qp_smw_noise_check(qp_problem *p, qp_matrix *factor, const double *variance,
                          const char *noise, const char *covariance) {
  /* Every figure in the fields' units (conditioning.h, qp_field_scale): N's own scales for
   * N, N_eff's with S_fixed's diagonal. */
  const int no_signal = p->cfg->lmax_signal + 1;
  const qp_run_scale fields =
      qp_field_scale(p, p->plan->switched ? p->cfg->lmax + 1 : no_signal, p->cfg->lmax_signal, 1);
  double noise_norm = 0.0; /* lambda_max(F N F): |F N_eff F|_1, or the largest scaled variance */
  if (factor->data) {
    QP_CALL(qp_conditioned_potrf(p, factor, QP_RCOND_NOISE, noise, QP_RCOND_SMW_ADVICE, &fields,
                                 &noise_norm));
  } else {
    /* A diagonal N is inverted exactly (1 / variance, entry by entry), whatever its spread:
     * its rcond is recorded, not judged. What a tiny variance does to SMW, I + K Lambda's
     * guard and C's bound below see. */
    qp_scaled_noise_diagonal(p, &fields, variance, &p->rcond[QP_RCOND_NOISE], &noise_norm);
  }
  /* SMW never forms C, but its results are C^-1 applied to the data all the same, as
   * sensitive as C's conditioning. C >= N and |C| <= |N| + |S_V| bound it from below, in the
   * fields' units: rcond(FCF) >= rcond(FNF) / (1 + lambda_max(FS_VF) / lambda_max(FNF)); with
   * a noise of 1e-300 everywhere rcond(N) is 1 and I + K Lambda well conditioned, yet C is
   * singular in double precision, and this is what refuses it, as the other routes refuse C
   * itself. */
  QP_CALL(qp_conditioning_check(
      p, QP_RCOND_COVARIANCE,
      qp_smw_covariance_rcond(p, &fields, p->rcond[QP_RCOND_NOISE], noise_norm), covariance,
      QP_RCOND_SMW_COVARIANCE_ADVICE));
  return QP_OK;
}

qp_err qp_smw_whiten(qp_problem *p, const qp_matrix *factor, const double *variance, qp_matrix *x) {
  if (factor->data) {
    QP_CALL(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, factor, x));
    return QP_OK;
  }
  /* By panels of rows, as V^T is built (qp_harmonic_build_vt). */
  for (int64_t row0 = 0, rows; row0 < x->local_rows; row0 += rows) {
    rows = qp_host_panel_width(p, x->local_rows, row0);
    qp_host_window w;
    QP_CALL(qp_host_window_open_block(x, row0, rows, 0, x->local_cols, QP_ACCESS_READ_WRITE, &w));
    for (int64_t k = 0; k < x->local_cols; ++k)
      for (int64_t i = 0; i < rows; ++i)
        w.data[i + k * w.ld] /= sqrt(variance[qp_matrix_global_row(x, row0 + i)]);
    QP_CALL(qp_host_window_close(&w));
  }
  return QP_OK;
}

/* With several batches each is downloaded to the host, from which spectra_run takes it back;
 * on a grid each rank keeps its own local parts. */
qp_err qp_smw_mode_maps(qp_problem *p, const qp_matrix *factor, const double *variance,
                        const qp_matrix *y, int64_t column, const char *term, qp_matrix *out,
                        double *host) {
  const int64_t n = p->n_pix, nm = p->n_modes, n_maps = p->n_maps, batch = qp_map_batch(p);
  qp_err err = QP_OK;
  qp_matrix w = {0}, wb, mb;
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, n, batch, &w),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, term, QP_TERM_PERSISTENT, nm, batch, out), done);
  for (int64_t first = 0; first < n_maps; first += batch) {
    const int64_t count = qp_map_batch_count(p, first);
    QP_CALL_GOTO(qp_map_batch_view(&w, count, &wb), done);
    QP_CALL_GOTO(qp_map_batch_view(out, count, &mb), done);
    QP_CALL_GOTO(qp_maps_to_matrix(p, column + first, &wb), done);
    QP_CALL_GOTO(qp_smw_whiten(p, factor, variance, &wb), done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, y, &wb, 0.0, &mb), done);
    if (host)
      QP_CALL_GOTO(
          qp_linalg_download(&mb, 0, 0, mb.local_rows, mb.local_cols,
                             host + (qp_mode_maps_host_batch(p, first) - p->mode_maps_host), mb.ld),
          done);
  }
done:
  qp_matrix_destroy(&w);
  return err;
}

/* The fields' units on the modes [T | E | B]: 1 / f_T on T's, 1 / f_P on E's and B's, f_X
 * qp_field_scale's of the noise SMW inverts (any unit-consistent scale serves: cross-spectra
 * take maps' for both sets). A field whose values are t times larger has K t^-2 and Lambda t^2
 * times larger, so that K Lambda's (T, E) block is 1 / t and its (E, T) block t times larger:
 * I + K Lambda = D^-1 M_0 D with D = t on T's modes, and D is what the factors take away. */
static qp_run_scale qp_smw_mode_scale(const qp_problem *p) {
  const qp_run_scale fields = qp_field_scale(
      p, p->plan->switched ? p->cfg->lmax + 1 : p->cfg->lmax_signal + 1, p->cfg->lmax_signal, 1);
  const int64_t end_t = p->field_offset[0] < 0    ? 0
                        : p->field_offset[1] >= 0 ? p->field_offset[1]
                                                  : p->n_modes;
  return (qp_run_scale){.runs = 2,
                        .end = {end_t, p->n_modes},
                        .factor = {1.0 / fields.factor[0], 1.0 / fields.factor[1]}};
}

qp_err qp_smw_solve_lu(const qp_problem *p, const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  const qp_run_scale f = qp_smw_mode_scale(p), back = qp_run_scale_reciprocal(&f);
  QP_CALL(qp_linalg_scale(b, &f, NULL));
  QP_CALL(qp_linalg_getrs(lu, pivots, b));
  QP_CALL(qp_linalg_scale(b, &back, NULL));
  return QP_OK;
}

qp_err qp_smw_solve(const qp_problem *p, qp_matrix *b) {
  QP_CALL(qp_smw_solve_lu(p, &p->smw_lu, p->pivots, b));
  return QP_OK;
}

qp_err qp_smw_kernel_factor(qp_problem *p, qp_matrix *kernel, qp_matrix *lu, int *pivots,
                            const char *what) {
  QP_CALL(qp_kernel_times_lambda(p, kernel, lu, 1, QP_TERM_SMW_COLUMNS));
  /* Factored in the fields' units: F M F^-1 (qp_smw_solve). */
  const qp_run_scale modes = qp_smw_mode_scale(p), inverse = qp_run_scale_reciprocal(&modes);
  QP_CALL(qp_linalg_scale(lu, &modes, &inverse));
  double anorm = 0.0, rcond = 0.0;
  QP_CALL(qp_linalg_norm1(lu, &anorm));
  qp_err err = qp_linalg_getrf(lu, pivots);
  QP_CHECK(err != QP_ERR_NOT_POSDEF, QP_ERR_NOT_POSDEF,
           "%s is singular (%s); use harmonic_method: projected", what, qp_error_message());
  QP_CALL(err);
  QP_CALL(qp_linalg_gecon(lu, anorm, &rcond));
  QP_CALL(qp_conditioning_check(p, QP_RCOND_SMW, rcond, what, QP_RCOND_SMW_ADVICE));
  QP_CALL(qp_smw_solve_lu(p, lu, pivots, kernel));
  return QP_OK;
}

/* SMW, in three phases that free what they are done with (the model's phases, basis_terms.c):
 *  0: V^T, Y = N_eff^-1/2 V^T, and V N_eff^-1 x for the maps (in batches); then N_eff goes;
 *  1: K = Y^T Y; then V goes;
 *  2: M = I + K Lambda, its LU, W = M^-1 K in place of K. */
qp_err qp_smw_basis(qp_problem *p, qp_progress *progress) {
  const int64_t n = p->n_pix, nm = p->n_modes;
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_V, QP_TERM_TRANSIENT, n, nm, &p->vt));
  QP_CALL(qp_harmonic_build_vt(p));
  qp_progress_note(progress, "harmonic basis V built");
  QP_CALL(qp_smw_noise_check(p, &p->noise_factor, p->noise_variance,
                             p->plan->switched ? "N_eff = N + S_fixed (SMW's noise)"
                                               : "the noise covariance N (SMW)",
                             "the covariance C = S + N (SMW's bound: rcond(N) / (1 + "
                             "lambda_max(S) / lambda_max(N)), each field in its own units)"));
  QP_CALL(qp_smw_whiten(p, &p->noise_factor, p->noise_variance, &p->vt));
  if (qp_map_batch(p) < p->n_maps)
    QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_MODE_MAPS_HOST, QP_TERM_PERSISTENT,
                             qp_mode_maps_host_elements(p), &p->mode_maps_host));
  QP_CALL(qp_smw_mode_maps(p, &p->noise_factor, p->noise_variance, &p->vt, 0, QP_TERM_MODE_MAPS,
                           &p->mode_maps, p->mode_maps_host));
  /* N_eff (or the dense N it was made in) is not needed any more. */
  qp_matrix_destroy(&p->noise_factor);
  qp_matrix_destroy(&p->noise);

  QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL, QP_TERM_PERSISTENT, nm, nm, &p->kernel));
  QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt, 0.0, &p->kernel));
  qp_matrix_destroy(&p->vt);
  qp_progress_note(progress, "K = V N^-1 V^T");

  QP_CALL(qp_matrix_create(p->ops, QP_TERM_SMW_LU, QP_TERM_PERSISTENT, nm, nm, &p->smw_lu));
  QP_CALL(qp_budget_alloc_array(QP_TERM_PIVOTS, QP_TERM_PERSISTENT,
                                (size_t)qp_linalg_pivot_count(&p->smw_lu), sizeof(int),
                                (void **)&p->pivots));
  QP_CALL(
      qp_smw_kernel_factor(p, &p->kernel, &p->smw_lu, p->pivots, "the SMW kernel I + K Lambda"));
  qp_progress_note(progress, "W = (I + K Lambda)^-1 K");
  qp_budget_free(p->noise_variance);
  p->noise_variance = NULL;
  return QP_OK;
}
