/* covariance_terms.c: covariance_setup's terms (covariance_terms.h), with the bytes
 * stage_covariance.c and inputs.c allocate; test_budget_exact ties the two on every route. */
#include "covariance_terms.h"

#include "model_bytes.h"

/* The reader alone holds the sky buffer; every rank checks its size all the same. */
static void qp_sky_buffer_term(const qp_model_dims *d, qp_model *m, qp_stage_id stage, int phase) {
  const qp_model_bytes sky = qp_model_vector_bytes(d->n_sky, sizeof(double));
  const char *formula = d->grid_rows > 0 ? "n_sky x 8 (rank 0 reads)" : "n_sky x 8";
  if (d->grid_rows > 0 && !d->reader) {
    qp_model_size_ok(m, QP_TERM_SKY_BUFFER, sky, formula);
    return;
  }
  qp_model_term *t =
      qp_model_add(m, QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, sky, stage, stage, formula);
  if (phase >= 0) t->phase_alloc = t->phase_free = phase;
}

void qp_map_reader_terms(const qp_model_dims *d, qp_model *m, qp_stage_id stage, int phase) {
  qp_model_term *t =
      qp_model_add(m, QP_TERM_MAP_BUFFER, QP_TERM_TRANSIENT,
                   qp_model_vector_bytes(d->n_pix, sizeof(double)), stage, stage,
                   d->grid_rows > 0 ? "n_pix x 8 (one map, from rank 0 to every rank)"
                                    : "n_pix x 8 (one map at a time)");
  t->phase_alloc = t->phase_free = phase;
  qp_sky_buffer_term(d, m, stage, phase);
}

qp_err qp_covariance_terms(const qp_model_dims *d, qp_model *m) {
  const int pixel = d->path == QP_MODEL_PIXEL_DIRECT, smw = d->path == QP_MODEL_HARMONIC_SMW;
  const size_t w = sizeof(double);
  const qp_model_bytes pix_sq = qp_model_matrix_bytes(d, d->n_pix, d->n_pix);
  const qp_stage_id cov = QP_STAGE_COVARIANCE_SETUP, bas = QP_STAGE_BASIS_SETUP,
                    fis = QP_STAGE_FISHER_RUN, spe = QP_STAGE_SPECTRA_RUN;

  qp_sky_buffer_term(d, m, cov, -1);
  qp_model_add(m, QP_TERM_OBSERVED_INDEX, QP_TERM_PERSISTENT,
               qp_model_vector_bytes(d->n_positions, sizeof(int64_t)), cov, spe, "n_positions x 8");
  qp_model_add(m, QP_TERM_PIXEL_VECTORS, QP_TERM_PERSISTENT,
               qp_model_bytes_times(3, qp_model_vector_bytes(d->n_positions, w)), cov, spe,
               "3 n_positions x 8");
  /* The maps are checked here through the sky buffer and not kept: they are read again a
   * batch at a time where they are used (qp_map_reader_terms). */
  /* The noise lives until the noise bias on the pixel-direct and projection routes. SMW is
   * done with it in basis_setup: the maps are whitened there, and N_eff (26 GiB at the
   * calibration case of docs/memory-model.md) goes as soon as Y = L_N^-1 V^T exists
   * (basis_terms.c). */
  qp_model_term *t;
  /* SMW's cross-spectra free both N_eff after basis_setup's phase 1, where the switch's Q is
   * made from their factors (harmonic_smw_cross.c); auto-spectra after phase 0. */
  const int noise_phase = d->cross_maps && d->switched ? 1 : 0;
  if (d->noise_dense) {
    t = qp_model_on_backend(
        d, qp_model_add(m, QP_TERM_NOISE, QP_TERM_PERSISTENT, pix_sq, cov, smw ? bas : fis,
                        smw ? "n_pix^2 x 8 (N, then N_eff, then its Cholesky factor)"
                            : "n_pix^2 x 8"));
    if (smw) t->phase_free = noise_phase;
  } else {
    qp_model_add(m, QP_TERM_NOISE_VARIANCE, QP_TERM_PERSISTENT, qp_model_vector_bytes(d->n_pix, w),
                 cov, smw ? bas : fis, "n_pix x 8");
  }
  /* Cross-spectra: N_B makes C_B in covariance_setup, then goes; on SMW its variances make
   * N_B,eff with the switch, else whiten in basis_setup (harmonic_smw_cross.c). */
  if (d->cross_maps && !d->noise2_dense)
    qp_model_add(m, QP_TERM_NOISE_VARIANCE_B, QP_TERM_PERSISTENT,
                 qp_model_vector_bytes(d->n_pix, w), cov, smw && !d->switched ? bas : cov,
                 "n_pix x 8");
  if (smw && d->cross_maps && (d->noise2_dense || d->switched))
    qp_model_on_backend(d,
                        qp_model_add(m, QP_TERM_NOISE_EFF_B, QP_TERM_PERSISTENT, pix_sq, cov, bas,
                                     "n_pix^2 x 8 (N_B (+ S_fixed), then its Cholesky "
                                     "factor)"))
        ->phase_free = noise_phase;
  if (!smw) {
    /* Projection without W: L goes once Z = L^-T Y is made, in fisher_run's phase 1. */
    const int z_in_place = qp_model_w_windows(d);
    t = qp_model_on_backend(d, qp_model_add(m, QP_TERM_COVARIANCE, QP_TERM_PERSISTENT, pix_sq, cov,
                                            z_in_place ? fis : spe,
                                            pixel ? "n_pix^2 x 8 (C, then L, then L^-1 in place)"
                                                  : "n_pix^2 x 8 (C, then L in place)"));
    if (z_in_place) t->phase_free = 1;
    if (d->cross_maps)
      qp_model_on_backend(d, qp_model_add(m, QP_TERM_COVARIANCE_B, QP_TERM_PERSISTENT, pix_sq, cov,
                                          spe, "n_pix^2 x 8 (C_B, then L_B, then L_B^-1)"));
  } else if (d->switched && !d->noise_dense) {
    t = qp_model_on_backend(d,
                            qp_model_add(m, QP_TERM_NOISE_EFF, QP_TERM_PERSISTENT, pix_sq, cov, bas,
                                         "n_pix^2 x 8 (N + S_fixed, then its Cholesky factor)"));
    t->phase_free = noise_phase;
  }
  return QP_OK;
}
