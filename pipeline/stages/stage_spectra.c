/* stage_spectra.c: spectra_run: z = C^-1 x for a batch of maps at a time (all of them unless
 * memory.device_limit batches them), y_p = 1/2 z^T P_p z with the bin matrices built a chunk
 * at a time, then C_hat = F^-1 (y - b). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conditioning.h"
#include "harmonic_route.h"
#include "host_window.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "spectra_terms.h"
#include "stages.h"
#include "window.h"

/* F is small and whole on every rank: inverted locally (the cpu backend) on each, after
 * equilibration. Its parameters carry different units and scales (TT against BB, low against
 * high ell: diagonals decades apart), so rcond of F as it stands measures that scaling, not
 * how well the estimates are determined: Fe = D F D with D = diag(F)^-1/2 (unit diagonal,
 * LAPACK's dpoequ) is factored and inverted, and F^-1 = D Fe^-1 D. Cholesky is invariant
 * under that scaling, so the numbers are those of F; only the condition figure changes. */
static qp_err qp_invert_fisher(qp_problem *p) {
  const int64_t np = p->n_params;
  qp_err err = QP_OK;
  double *d = malloc((size_t)np * sizeof *d);
  QP_CHECK(d, QP_ERR_NOMEM, "spectra_run: out of memory for %lld scales", (long long)np);
  for (int64_t q = 0; q < np; ++q) {
    const double fqq = p->fisher[q + q * np];
    QP_CHECK_GOTO(fqq > 0.0 && isfinite(fqq), QP_ERR_NOT_POSDEF, done,
                  "the Fisher matrix (%lld parameters) is not positive definite, so the spectra "
                  "cannot be estimated: parameter %lld (%s, ell %d-%d) has F_pp = %g, so no "
                  "pixel constrains it; drop that spectrum or bin, or lower lmax",
                  (long long)np, (long long)q, qp_spectrum_name(p->cfg->spectra[q / p->n_bins]),
                  p->bin_lo[q % p->n_bins], p->bin_hi[q % p->n_bins], fqq);
    d[q] = 1.0 / sqrt(fqq);
  }
  for (int64_t r = 0; r < np; ++r)
    for (int64_t q = 0; q < np; ++q)
      p->fisher_inverse[q + r * np] = d[q] * p->fisher[q + r * np] * d[r];
  qp_matrix finv;
  double anorm = 0.0, rcond = 0.0;
  QP_CALL_GOTO(qp_matrix_view(qp_linalg_cpu_ops(), "fisher", p->fisher_inverse, np, np, np, &finv),
               done);
  QP_CALL_GOTO(qp_linalg_norm1(&finv, &anorm), done);
  err = qp_linalg_potrf(&finv);
  QP_CHECK_GOTO(err != QP_ERR_NOT_POSDEF, QP_ERR_NOT_POSDEF, done,
                "the Fisher matrix (%lld parameters) is not positive definite, so the spectra "
                "cannot be estimated: some bins carry no information or repeat others (%s)",
                (long long)np, qp_error_message());
  QP_CALL_GOTO(err, done);
  QP_CALL_GOTO(qp_linalg_pocon(&finv, anorm, &rcond), done);
  QP_CALL_GOTO(qp_linalg_potri(&finv), done);
  for (int64_t r = 0; r < np; ++r)
    for (int64_t q = 0; q < np; ++q)
      p->fisher_inverse[q + r * np] *= d[q] * d[r];
  p->rcond[QP_RCOND_FISHER] = rcond;
done:
  free(d);
  return err;
}

/* p->spectra_covariance <- F^-1 M F^-1 (cross-spectra), two gemms on the host (n_params is
 * small): F^-1 M into spectra_covariance, then F^-1 (M F^-1) into y_covariance, which no
 * later step reads, and back; made exactly symmetric. */
static qp_err qp_cross_spectra_covariance(qp_problem *p) {
  const int64_t np = p->n_params;
  const qp_linalg_ops *cpu = qp_linalg_cpu_ops();
  qp_matrix finv, m, t;
  QP_CALL(qp_matrix_view(cpu, "fisher_inverse", p->fisher_inverse, np, np, np, &finv));
  QP_CALL(qp_matrix_view(cpu, "y_covariance", p->y_covariance, np, np, np, &m));
  QP_CALL(qp_matrix_view(cpu, "spectra_covariance", p->spectra_covariance, np, np, np, &t));
  QP_CALL(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &m, &finv, 0.0, &t)); /* M F^-1 */
  QP_CALL(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &finv, &t, 0.0, &m)); /* F^-1 M F^-1 */
  for (int64_t q = 0; q < np; ++q)
    for (int64_t a = 0; a <= q; ++a)
      p->spectra_covariance[a + q * np] = p->spectra_covariance[q + a * np] =
          0.5 * (p->y_covariance[a + q * np] + p->y_covariance[q + a * np]);
  return QP_OK;
}

/* z = C^-1 x = L^-T L^-1 x for the batch of maps from `first` into z (its columns), with the
 * factor inv_l = L^-1 (maps2's are columns n_maps.. of the maps, with L_B^-1). */
static qp_err qp_pixel_weigh_batch(qp_problem *p, const qp_matrix *inv_l, int64_t first,
                                   qp_matrix *z) {
  QP_CALL(qp_maps_to_matrix(p, first, z));
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, inv_l, z));
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, inv_l, z));
  return QP_OK;
}

/* s[m] = this rank's rows of z_m . (P_b z)_m for the batch's local columns m, both read a
 * panel of rows at a time (qp_host_panel); each sum in row order whatever the panels. */
static qp_err qp_pixel_dots(const qp_problem *p, qp_matrix *z, qp_matrix *pz, double *s) {
  for (int64_t lm = 0; lm < z->local_cols; ++lm)
    s[lm] = 0.0;
  qp_host_window zw = {0}, pzw = {0};
  qp_err err = QP_OK;
  for (int64_t row0 = 0, rows; row0 < z->local_rows; row0 += rows) {
    rows = qp_host_panel_width(p, z->local_rows, row0);
    QP_CALL_GOTO(qp_host_window_open_block(z, row0, rows, 0, z->local_cols, QP_ACCESS_READ, &zw),
                 done);
    QP_CALL_GOTO(qp_host_window_open_block(pz, row0, rows, 0, pz->local_cols, QP_ACCESS_READ, &pzw),
                 done);
    for (int64_t lm = 0; lm < z->local_cols; ++lm)
      for (int64_t i = 0; i < rows; ++i)
        s[lm] += zw.data[i + lm * zw.ld] * pzw.data[i + lm * pzw.ld];
    qp_host_window_discard(&pzw);
    qp_host_window_discard(&zw);
  }
done:
  qp_host_window_discard(&pzw);
  qp_host_window_discard(&zw);
  return err;
}

/* y for every map on the pixel-direct path: z = C^-1 x, then P_b z with the bin matrices built
 * a chunk at a time, for each batch of maps (qp_map_batch). One batch (all maps, the rule) is
 * weighed once; several are weighed again for every chunk: the bin matrices, costlier to
 * build than z (O(n_pix^2 lmax) against O(n_pix^2) a map), are built once. */
static qp_err qp_pixel_spectra_y(qp_problem *p) {
  qp_err err = QP_OK;
  const int64_t n = p->n_pix, np = p->n_params, n_maps = p->n_maps, batch = qp_map_batch(p);
  const int64_t chunk = p->plan->model_dims.spectra_chunk;
  const int64_t slot_stride = qp_matrix_local_size(&p->cov);
  const int cross = p->plan->model_dims.cross_maps;
  /* Cross-spectra: y_p = 1/2 z_A . P_p z_B, z_B = C_B^-1 x_B in z2 (auto: z2 is z). */
  qp_matrix z = {0}, z2 = {0}, pz = {0}, bins = {0}, zb = {0}, z2b = {0}, pzb = {0};
  double *dots = malloc((size_t)(batch > 0 ? batch : 1) * sizeof *dots);
  QP_CHECK(dots, QP_ERR_NOMEM, "spectra_run: out of memory for %lld dots", (long long)batch);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, n, batch, &z),
               done);
  if (cross)
    QP_CALL_GOTO(
        qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS_B, QP_TERM_TRANSIENT, n, batch, &z2), done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_BIN_PRODUCT, QP_TERM_TRANSIENT, n, batch, &pz),
               done);
  /* The chunk's bin matrices side by side, each slot one matrix's local part. */
  QP_CALL_GOTO(qp_matrix_create(qp_linalg_local_ops(p->ops), QP_TERM_BIN_MATRICES,
                                QP_TERM_TRANSIENT, slot_stride, chunk, &bins),
               done);

  qp_progress progress;
  qp_progress_start(&progress, p->progress, "spectra_run", "parameters", (long)np);
  int64_t weighed = -1; /* the first map of the batch z holds */
  for (int64_t first = 0; first < np; first += chunk) {
    int64_t count = np - first < chunk ? np - first : chunk;
    QP_CALL_GOTO(qp_pixel_build_slots(p, &bins, 0, first, count, QP_TERM_BIN_MATRICES), done);
    for (int64_t map0 = 0; map0 < n_maps; map0 += batch) {
      const int64_t maps = qp_map_batch_count(p, map0);
      QP_CALL_GOTO(qp_map_batch_view(&z, maps, &zb), done);
      QP_CALL_GOTO(qp_map_batch_view(&pz, maps, &pzb), done);
      QP_CALL_GOTO(qp_map_batch_view(cross ? &z2 : &z, maps, &z2b), done);
      if (weighed != map0) {
        QP_CALL_GOTO(qp_pixel_weigh_batch(p, &p->cov, map0, &zb), done);
        if (cross) QP_CALL_GOTO(qp_pixel_weigh_batch(p, &p->cov_b, n_maps + map0, &z2b), done);
        weighed = map0;
      }
      for (int64_t k = 0; k < count; ++k) {
        qp_matrix pb;
        QP_CALL_GOTO(qp_matrix_stack_slot(&bins, k, p->ops, QP_TERM_BIN_MATRICES, n, n, &pb), done);
        QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &pb, &z2b, 0.0, &pzb), done);
        /* Each rank's rows of z . P_b z; summed over the ranks below. */
        QP_CALL_GOTO(qp_pixel_dots(p, &zb, &pzb, dots), done);
        for (int64_t lm = 0; lm < zb.local_cols; ++lm)
          p->yb[(map0 + qp_matrix_global_col(&zb, lm)) * np + first + k] = 0.5 * dots[lm];
      }
    }
    qp_progress_step(&progress, (long)(first + count));
  }
  QP_CALL_GOTO(qp_linalg_sum_partials(p->ops, p->yb, n_maps * np), done);
done:
  free(dots);
  qp_matrix_destroy(&bins);
  qp_matrix_destroy(&pz);
  qp_matrix_destroy(&z2);
  qp_matrix_destroy(&z);
  return err;
}

qp_err qp_stage_spectra_run(qp_problem *p) {
  const int64_t np = p->n_params, n_maps = p->n_maps;
  QP_CALL(
      QP_ALLOC_DOUBLES(QP_TERM_FISHER_INVERSE, QP_TERM_PERSISTENT, np * np, &p->fisher_inverse));
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_RAW_SPECTRA, QP_TERM_PERSISTENT, n_maps * np, &p->yb));
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_SPECTRA, QP_TERM_PERSISTENT, n_maps * np, &p->cl));
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_ERRORS, QP_TERM_PERSISTENT, np, &p->error));
  if (qp_window_count(p) > 0)
    QP_CALL(
        QP_ALLOC_DOUBLES(QP_TERM_WINDOW, QP_TERM_PERSISTENT, np * qp_window_count(p), &p->window));
  if (p->plan->model_dims.cross_maps) /* with the others: the model holds them all at once */
    QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_SPECTRA_COVARIANCE, QP_TERM_PERSISTENT, np * np,
                             &p->spectra_covariance));
  if (p->plan->path_used == QP_PATH_HARMONIC)
    QP_CALL(qp_harmonic_spectra_y(p));
  else
    QP_CALL(qp_pixel_spectra_y(p));

  QP_CALL(qp_invert_fisher(p));
  /* The covariance of C_hat: F^-1 for auto-spectra; F^-1 M F^-1 for cross-spectra, M = Cov(y)
   * from fisher_run (docs/science.md). */
  const double *covariance = p->fisher_inverse;
  if (p->plan->model_dims.cross_maps) {
    QP_CALL(qp_cross_spectra_covariance(p));
    covariance = p->spectra_covariance;
  }
  for (int64_t q = 0; q < np; ++q)
    p->error[q] = sqrt(covariance[q + q * np]);
  if (qp_window_count(p) > 0) QP_CALL(qp_window_from_fisher(p));
  for (int64_t m = 0; m < n_maps; ++m)
    for (int64_t q = 0; q < np; ++q) {
      double s = 0.0;
      for (int64_t r = 0; r < np; ++r)
        s += p->fisher_inverse[q + r * np] * (p->yb[m * np + r] - p->noise_bias[r]);
      p->cl[m * np + q] = s;
    }
  QP_CALL(qp_spectra_error_check(p));
  /* Nothing that is not a finite number reaches the results file. */
  QP_CALL(qp_check_finite(p->yb, n_maps * np, "spectra_run", "y (raw quadratic /spectra/yb)"));
  QP_CALL(qp_check_finite(p->error, np, "spectra_run", "the error bars sqrt(diag F^-1)"));
  QP_CALL(qp_check_finite(covariance, np * np, "spectra_run",
                          "the covariance of C_hat (/spectra/covariance)"));
  QP_CALL(qp_check_finite(p->cl, n_maps * np, "spectra_run", "C_hat (/spectra/cl)"));
  if (p->window)
    QP_CALL(qp_check_finite(p->window, np * qp_window_count(p), "spectra_run",
                            "the window functions (/spectra/window)"));
  return QP_OK;
}
