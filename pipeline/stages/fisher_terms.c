/* fisher_terms.c: fisher_run's terms (fisher_terms.h), with the bytes stage_fisher.c and
 * harmonic_fisher.c, harmonic_bias.c and harmonic_spectra.c allocate; test_budget_exact ties the
 * two on every route. */
#include "fisher_terms.h"

#include "model_bytes.h"

int64_t qp_fisher_window_batch(const qp_model_dims *d) {
  if (d->path != QP_MODEL_PIXEL_DIRECT || d->n_window == 0 || d->n_window == d->n_params) return 0;
  int64_t batch = d->fisher_chunk / 4;
  if (batch > 16) batch = 16;
  if (batch > d->n_window) batch = d->n_window;
  return batch > 0 ? batch : 1;
}

/* Pixel-direct: k products, the whitened noise, and a streaming slot when k < n_params; their
 * Gram matrix; the window functions' unbinned P_ell, a batch at a time. */
static void qp_fisher_pixel_terms(const qp_model_dims *d, qp_model *m) {
  const qp_stage_id fis = QP_STAGE_FISHER_RUN;
  const qp_model_bytes pix_sq = qp_model_matrix_bytes(d, d->n_pix, d->n_pix);
  const int chunked = d->fisher_chunk < d->n_params, scratch = chunked && d->cross_maps;
  /* chunked cross-spectra: a scratch slot for their covariance (stage_fisher.c) */
  const size_t k = (size_t)d->fisher_chunk, slots = k + 1 + (size_t)chunked + (size_t)scratch;
  qp_model_on_backend(d, qp_model_add(m, QP_TERM_PRODUCTS, QP_TERM_TRANSIENT,
                                      qp_model_bytes_times(slots, pix_sq), fis, fis,
                                      scratch   ? "(fisher_chunk + 3) n_pix^2 x 8"
                                      : chunked ? "(fisher_chunk + 2) n_pix^2 x 8"
                                                : "(n_params + 1) n_pix^2 x 8"));
  qp_model_on_backend(
      d, qp_model_add(m, QP_TERM_GRAM, QP_TERM_TRANSIENT,
                      qp_model_bytes_times(
                          k + 1, qp_model_vector_bytes(d->fisher_chunk + 2, sizeof(double))),
                      fis, fis, "(fisher_chunk + 1)(fisher_chunk + 2) x 8"));
  const int64_t batch = qp_fisher_window_batch(d);
  if (batch > 1)
    qp_model_on_backend(d,
                        qp_model_add(m, QP_TERM_WINDOW_SLOTS, QP_TERM_TRANSIENT,
                                     qp_model_bytes_times((size_t)batch, pix_sq), fis, fis,
                                     "window_batch n_pix^2 x 8 (unbinned P_ell built together)"));
}

/* The projection route's noise bias (phases 1, 2): Z = C^-1 V^T where it is not formed in W's
 * buffer, N_eff Z and N_eff with the switch or a dense N, and Z's columns aligned. */
static void qp_fisher_projection_bias_terms(const qp_model_dims *d, qp_model *m) {
  /* Without W, phase 1 turns Y into Z in place (L freed after it): the bias is phase 2. */
  const int in_place = qp_model_w_windows(d);
  const int moves = qp_model_moves_data(d), ph = in_place ? 2 : 1;
  const qp_stage_id fis = QP_STAGE_FISHER_RUN;
  const qp_model_bytes mode_pix = qp_model_matrix_bytes(d, d->n_pix, d->n_modes);
  if (!in_place && (qp_model_w_chunked(d) || !qp_model_modes_in_kernel(d->n_pix, d->n_modes)))
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MODES, QP_TERM_TRANSIENT, mode_pix, fis,
                                        fis, "n_pix n_modes x 8"))
        ->phase_alloc = ph;
  if (d->switched || d->noise_dense)
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, mode_pix, fis,
                                        fis, "n_pix n_modes x 8"))
        ->phase_alloc = ph;
  if (d->switched || d->noise_dense) {
    qp_model_term *t = qp_model_on_backend(
        d, qp_model_add(m, QP_TERM_NOISE_EFF_DENSE, QP_TERM_TRANSIENT,
                        qp_model_matrix_bytes(d, d->n_pix, d->n_pix), fis, fis, "n_pix^2 x 8"));
    t->phase_alloc = ph;
    if (moves) t->phase_free = ph;
  }
  /* Where aligning moves data, a panel of Z's columns of one field is lined up with
   * another field's, or with N_eff Z's, for the bias (not where neither is needed). */
  if (moves && (d->cross_fields || d->switched || d->noise_dense))
    qp_model_add(m, QP_TERM_ALIGNED_MODES, QP_TERM_TRANSIENT,
                 qp_model_matrix_bytes(d, d->n_pix, qp_model_mode_panel(d)), fis, fis,
                 qp_model_mode_panel(d) < d->n_modes
                     ? "n_pix bias_panel x 8 (Z's columns of one field, aligned)"
                     : "n_pix n_modes x 8 (Z's columns of one field, aligned)")
        ->phase_alloc = ph + 1;
}

/* lmax + 1 from n_lm = (lmax + 1)^2. */
static int64_t qp_lm_side(int64_t n_lm) {
  int64_t side = 0;
  while ((side + 1) * (side + 1) <= n_lm)
    ++side;
  return side;
}

/* A pass of block sums (qp_fisher_block_pass) in `phase`: its matrices' windows aligned per
 * field pair where that moves data (one set per matrix: two for cross-spectra), and the sums. */
static void qp_fisher_block_pass_terms(const qp_model_dims *d, qp_model *m, int phase,
                                       const char *blocks_term, const char *sums_term,
                                       const char *sums_formula) {
  const int dist = d->grid_rows > 0, moves = qp_model_moves_data(d);
  const qp_stage_id fis = QP_STAGE_FISHER_RUN;
  /* A chunked W is a host matrix: read in place on one process, aligned over the grid.
   * Without W (qp_model_w_windows) the windows are products of Y's columns, on any backend. */
  const int from_y = qp_model_w_windows(d) && !d->cross_maps;
  if (dist || (moves && !qp_model_w_chunked(d)) || from_y) {
    const size_t blocks = (size_t)d->n_fields * (size_t)d->n_fields * (d->cross_maps ? 2 : 1);
    /* A panel of their columns at a time under a host_panel (qp_model_field_panel). */
    const int64_t panel = qp_model_field_panel(d);
    qp_model_term *t = qp_model_add(
        m, blocks_term, QP_TERM_TRANSIENT,
        qp_model_bytes_times(blocks, qp_model_matrix_bytes(d, d->n_lm, panel)), fis, fis,
        d->cross_maps ? (panel < d->n_lm ? "2 n_fields^2 (lmax+1)^2 field_panel x 8 (per field "
                                           "pair, aligned, a panel of columns)"
                                         : "2 n_fields^2 (lmax+1)^4 x 8 (per field pair, aligned)")
        : from_y ? (panel < d->n_lm ? "n_fields^2 (lmax+1)^2 product_panel x 8 (W's windows per "
                                      "field pair, a panel of columns, made from Y)"
                                    : "n_fields^2 (lmax+1)^4 x 8 (W's windows per field pair, "
                                      "made from Y)")
        : panel < d->n_lm ? "n_fields^2 (lmax+1)^2 field_panel x 8 (W per field pair, aligned, a "
                            "panel of columns)"
                          : "n_fields^2 (lmax+1)^4 x 8 (W per field pair, aligned)");
    t->phase_alloc = t->phase_free = phase;
  }
  /* From Y's windows, the sums above the diagonal and on it apart (harmonic_fisher.c). */
  const int64_t per_slot = d->n_lm + (from_y ? qp_lm_side(d->n_lm) : 0);
  qp_model_term *t =
      qp_model_add(m, sums_term, QP_TERM_TRANSIENT,
                   qp_model_bytes_times((size_t)d->fisher_block_slots,
                                        qp_model_vector_bytes(per_slot, sizeof(double))),
                   fis, fis,
                   from_y ? "block slots ((lmax+1)^2 + lmax+1) x 8 (W's (l, l') block sums above "
                            "its diagonal and on it, every rank)"
                          : sums_formula);
  t->phase_alloc = t->phase_free = phase;
}

/* Cross-spectra on the projection and SMW routes (harmonic_cross.c): phase 1 H (with the
 * switch, on projection, Z_A, S_fixed and S_fixed Z_A to make it), 2 W_B Lambda, 3 H^T and the
 * block sums of Cov(y). */
static void qp_fisher_cross_terms(const qp_model_dims *d, qp_model *m) {
  const qp_stage_id fis = QP_STAGE_FISHER_RUN;
  const qp_model_bytes mode_sq = qp_model_matrix_bytes(d, d->n_modes, d->n_modes),
                       mode_pix = qp_model_matrix_bytes(d, d->n_pix, d->n_modes);
  qp_model_term *t =
      qp_model_on_backend(d, qp_model_add(m, QP_TERM_CROSS_KERNEL, QP_TERM_TRANSIENT, mode_sq, fis,
                                          fis, "n_modes^2 x 8 (H = Z_B^T S Z_A)"));
  t->phase_alloc = 1;
  t->phase_free = 3;
  /* SMW made the switch's Q in basis_setup (basis_terms.c): H from it in place here. */
  if (d->switched && d->path != QP_MODEL_HARMONIC_SMW) {
    static const char *const names[3] = {QP_TERM_WEIGHTED_MODES, QP_TERM_CROSS_SIGNAL,
                                         QP_TERM_NOISE_MODES};
    static const char *const formulas[3] = {"n_pix n_modes x 8 (Z_A = C_A^-1 V^T)",
                                            "n_pix^2 x 8 (S_fixed)",
                                            "n_pix n_modes x 8 (S_fixed Z_A, then L_B^-1 of it)"};
    for (int k = 0; k < 3; ++k) {
      t = qp_model_on_backend(
          d, qp_model_add(m, names[k], QP_TERM_TRANSIENT,
                          k == 1 ? qp_model_matrix_bytes(d, d->n_pix, d->n_pix) : mode_pix, fis,
                          fis, formulas[k]));
      t->phase_alloc = t->phase_free = 1;
    }
  }
  t = qp_model_on_backend(d, qp_model_add(m, QP_TERM_CROSS_LAMBDA, QP_TERM_TRANSIENT, mode_sq, fis,
                                          fis, "n_modes^2 x 8 (W_B Lambda)"));
  t->phase_alloc = t->phase_free = 2;
  if (qp_model_moves_data(d)) {
    t = qp_model_add(m, QP_TERM_LAMBDA_COLUMNS, QP_TERM_TRANSIENT,
                     qp_model_matrix_bytes(d, d->n_modes, qp_model_mode_panel(d)), fis, fis,
                     "n_modes mode_panel x 8 (W_B's columns of one field, on the host)");
    t->phase_alloc = t->phase_free = 2;
  }
  t = qp_model_on_backend(d, qp_model_add(m, QP_TERM_CROSS_KERNEL_T, QP_TERM_TRANSIENT, mode_sq,
                                          fis, fis, "n_modes^2 x 8 (H^T)"));
  t->phase_alloc = t->phase_free = 3;
  qp_fisher_block_pass_terms(d, m, 3, QP_TERM_CROSS_FIELD_BLOCKS, QP_TERM_CROSS_BLOCK_SUMS,
                             "block slots (lmax+1)^2 x 8 (H's (l, l') block sums, every rank)");
}

/* The harmonic routes: fisher_run's phases are 0 F, from W's block sums (and W's field blocks
 * where aligning moves data); then 1, 2 the bias (cross-spectra: qp_fisher_cross_terms). */
static void qp_fisher_harmonic_terms(const qp_model_dims *d, qp_model *m) {
  const qp_stage_id fis = QP_STAGE_FISHER_RUN;
  qp_fisher_block_pass_terms(d, m, 0, QP_TERM_FIELD_BLOCKS, QP_TERM_FISHER_BLOCK_SUMS,
                             "block slots (lmax+1)^2 x 8 (W's (l, l') block sums, every rank)");
  if (d->cross_maps)
    qp_fisher_cross_terms(d, m);
  else if (d->path == QP_MODEL_HARMONIC_SMW)
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_NOISE_KERNEL, QP_TERM_TRANSIENT,
                                        qp_model_matrix_bytes(d, d->n_modes, d->n_modes), fis, fis,
                                        "n_modes^2 x 8"))
        ->phase_alloc = 1;
  else
    qp_fisher_projection_bias_terms(d, m);
}

qp_err qp_fisher_terms(const qp_model_dims *d, qp_model *m) {
  if (d->path == QP_MODEL_PIXEL_DIRECT)
    qp_fisher_pixel_terms(d, m);
  else
    qp_fisher_harmonic_terms(d, m);
  const qp_stage_id fis = QP_STAGE_FISHER_RUN, spe = QP_STAGE_SPECTRA_RUN;
  const qp_model_bytes params = qp_model_vector_bytes(d->n_params, sizeof(double));
  qp_model_add(m, QP_TERM_FISHER, QP_TERM_PERSISTENT,
               qp_model_bytes_times((size_t)d->n_params, params), fis, spe, "n_params^2 x 8");
  qp_model_add(m, QP_TERM_NOISE_BIAS, QP_TERM_PERSISTENT, params, fis, spe, "n_params x 8");
  if (d->n_window > 0)
    qp_model_add(m, QP_TERM_FISHER_ELL, QP_TERM_PERSISTENT,
                 qp_model_bytes_times((size_t)d->n_window, params), fis, spe,
                 "n_params n_window x 8");
  if (d->cross_maps)
    qp_model_add(m, QP_TERM_Y_COVARIANCE, QP_TERM_PERSISTENT,
                 qp_model_bytes_times((size_t)d->n_params, params), fis, spe, "n_params^2 x 8");
  if (d->cross_maps && d->path == QP_MODEL_PIXEL_DIRECT) {
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_CROSS_SIGNAL, QP_TERM_TRANSIENT,
                                        qp_model_matrix_bytes(d, d->n_pix, d->n_pix), fis, fis,
                                        "n_pix^2 x 8 (S, then L_B^-1 S L_A^-T)"));
  }
  return QP_OK;
}
