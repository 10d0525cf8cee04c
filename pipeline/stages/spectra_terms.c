/* spectra_terms.c: spectra_run's terms (spectra_terms.h), with the bytes stage_spectra.c and
 * harmonic_fisher.c, harmonic_bias.c and harmonic_spectra.c allocate; test_budget_exact ties the
 * two on every route. */
#include "spectra_terms.h"

#include "covariance_terms.h"
#include "model_bytes.h"

qp_err qp_spectra_terms(const qp_model_dims *d, qp_model *m) {
  const int pixel = d->path == QP_MODEL_PIXEL_DIRECT, smw = d->path == QP_MODEL_HARMONIC_SMW;
  const int moves = qp_model_moves_data(d);
  const size_t w = sizeof(double);
  const qp_stage_id spe = QP_STAGE_SPECTRA_RUN;
  /* The per-map matrices hold one batch of maps (planner_batch.c), read from the files one
   * map at a time (inputs_maps.c; SMW read them in basis_setup). The projection's auto-spectra
   * read a batch (phase 0), then make its z whole on every rank (phase 1: mode_maps_all, where
   * the backend moves data), batch after batch; every other route reads with all its per-map
   * matrices alive. */
  const int64_t batch = qp_model_map_batch(d);
  const qp_model_bytes pix_maps = qp_model_matrix_bytes(d, d->n_pix, batch);
  const int all_after_read = !pixel && !smw && !d->cross_maps && moves;
  if (!smw) qp_map_reader_terms(d, m, spe, 0);
  if (pixel) {
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, pix_maps, spe,
                                        spe, "n_pix map_batch x 8"));
    if (d->cross_maps)
      qp_model_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS_B, QP_TERM_TRANSIENT, pix_maps,
                                          spe, spe, "n_pix map_batch x 8"));
    qp_model_on_backend(
        d, qp_model_add(m, QP_TERM_BIN_MATRICES, QP_TERM_TRANSIENT,
                        qp_model_bytes_times((size_t)d->spectra_chunk,
                                             qp_model_matrix_bytes(d, d->n_pix, d->n_pix)),
                        spe, spe, "spectra_chunk n_pix^2 x 8"));
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_BIN_PRODUCT, QP_TERM_TRANSIENT, pix_maps, spe,
                                        spe, "n_pix map_batch x 8"));
  } else if (!smw) { /* SMW took both in basis_setup */
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, pix_maps, spe,
                                        spe, "n_pix map_batch x 8"));
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_MODE_MAPS, QP_TERM_TRANSIENT,
                                        qp_model_matrix_bytes(d, d->n_modes, batch), spe, spe,
                                        "n_modes map_batch x 8"));
    /* Cross-spectra: z_B beside z_A (harmonic_cross.c). */
    if (d->cross_maps) {
      qp_model_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS_B, QP_TERM_TRANSIENT, pix_maps,
                                          spe, spe, "n_pix map_batch x 8"));
      qp_model_on_backend(d, qp_model_add(m, QP_TERM_MODE_MAPS_B, QP_TERM_TRANSIENT,
                                          qp_model_matrix_bytes(d, d->n_modes, batch), spe, spe,
                                          "n_modes map_batch x 8"));
    }
  }
  if (!pixel && moves) {
    qp_model_term *t =
        qp_model_add(m, QP_TERM_MODE_MAPS_ALL, QP_TERM_TRANSIENT,
                     qp_model_bytes_times((size_t)batch, qp_model_vector_bytes(d->n_modes, w)), spe,
                     spe, "n_modes map_batch x 8 (a batch's z whole on every rank)");
    if (all_after_read) t->phase_alloc = t->phase_free = 1;
  }
  if (!pixel && moves && d->cross_maps)
    qp_model_add(m, QP_TERM_MODE_MAPS_ALL_B, QP_TERM_TRANSIENT,
                 qp_model_bytes_times((size_t)batch, qp_model_vector_bytes(d->n_modes, w)), spe,
                 spe, "n_modes map_batch x 8 (a batch's z_B whole on every rank)");
  /* Every n_params buffer is whole on every rank. */
  const qp_model_bytes params = qp_model_vector_bytes(d->n_params, w),
                       params_sq = qp_model_bytes_times((size_t)d->n_params, params),
                       per_map = qp_model_bytes_times((size_t)d->n_maps, params);
  qp_model_add(m, QP_TERM_FISHER_INVERSE, QP_TERM_PERSISTENT, params_sq, spe, spe,
               "n_params^2 x 8");
  qp_model_add(m, QP_TERM_RAW_SPECTRA, QP_TERM_PERSISTENT, per_map, spe, spe,
               "n_maps n_params x 8");
  qp_model_add(m, QP_TERM_SPECTRA, QP_TERM_PERSISTENT, per_map, spe, spe, "n_maps n_params x 8");
  qp_model_add(m, QP_TERM_ERRORS, QP_TERM_PERSISTENT, params, spe, spe, "n_params x 8");
  if (d->n_window > 0)
    qp_model_add(m, QP_TERM_WINDOW, QP_TERM_PERSISTENT,
                 qp_model_bytes_times((size_t)d->n_window, params), spe, spe,
                 "n_params n_window x 8");
  if (d->cross_maps)
    qp_model_add(m, QP_TERM_SPECTRA_COVARIANCE, QP_TERM_PERSISTENT, params_sq, spe, spe,
                 "n_params^2 x 8");
  return QP_OK;
}
