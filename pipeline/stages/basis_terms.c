/* basis_terms.c: basis_setup's terms (basis_terms.h), with the bytes harmonic_route.c
 * allocates; test_budget_exact ties the two on every route.
 *
 * SMW: N_eff goes as soon as Y = L_N^-1 V^T exists, V once K = Y^T Y does. basis_setup's
 * phases there: 0 V, Y, V N^-1 x; 1 K; 2 the LU; cross-spectra: 0 V, Y_A, Y_B, V N^-1 x of
 * both sets; 1 the switch's Q (then both N_eff go); 2 K_A, K_B; 3 both LUs. */
#include "basis_terms.h"

#include "block_cyclic.h"
#include "checked_size.h"
#include "covariance_terms.h"
#include "fisher_terms.h"
#include "model_bytes.h"
#include "spectra_terms.h"

/* The kernel K (or W), in whole or in column blocks, and SMW's LU of I + K Lambda. */
static void qp_basis_kernel_terms(const qp_model_dims *d, qp_model *m) {
  const int dist = d->grid_rows > 0, moves = qp_model_moves_data(d);
  const int smw = d->path == QP_MODEL_HARMONIC_SMW;
  const qp_model_bytes mode_sq = qp_model_matrix_bytes(d, d->n_modes, d->n_modes);
  const qp_stage_id bas = QP_STAGE_BASIS_SETUP, fis = QP_STAGE_FISHER_RUN,
                    spe = QP_STAGE_SPECTRA_RUN;
  if (qp_model_w_chunked(d)) {
    /* W = Y^T Y a block of columns at a time on the device, each downloaded into a host W
     * that fisher_run's block sums read (harmonic_route.c). */
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_KERNEL_BLOCK, QP_TERM_TRANSIENT,
                                        qp_model_matrix_bytes(d, d->n_modes, d->w_block), bas, bas,
                                        "n_modes w_block x 8 (a block of W's columns)"));
    qp_model_add(m, QP_TERM_KERNEL_HOST, QP_TERM_PERSISTENT, mode_sq, bas, fis,
                 "n_modes^2 x 8 (W, assembled from its blocks)")
        ->phase_free = 0; /* freed once F is summed */
    return;               /* projection: no LU */
  }
  if (qp_model_w_windows(d)) return; /* W's windows are made from Y in fisher_run */
  qp_model_term *t = qp_model_on_backend(
      d, qp_model_add(m, QP_TERM_KERNEL, QP_TERM_PERSISTENT, mode_sq, bas, smw ? spe : fis,
                      smw             ? "n_modes^2 x 8 (K, then W in place)"
                      : d->cross_maps ? "n_modes^2 x 8 (W_A)"
                      : qp_model_modes_in_kernel(d->n_pix, d->n_modes)
                          ? "n_modes^2 x 8 (W, then Z = C^-1 V^T in its place)"
                          : "n_modes^2 x 8 (W)"));
  /* Cross-spectra (harmonic_cross.c): W_B beside W_A, both done with in fisher_run's phase 2
   * (SMW: K_A and K_B formed in phase 2 of basis_setup's four, harmonic_smw_cross.c). */
  const int cross = d->cross_maps;
  if (cross) {
    t->stage_free = fis;
    t->phase_free = 2;
    qp_model_term *b = qp_model_on_backend(
        d, qp_model_add(m, QP_TERM_KERNEL_B, QP_TERM_PERSISTENT, mode_sq, bas, fis,
                        smw ? "n_modes^2 x 8 (K_B, then W_B in place)" : "n_modes^2 x 8 (W_B)"));
    b->phase_free = 2;
    if (smw) b->phase_alloc = 2;
  }
  if (!smw) return;
  /* The LU's phase: 2 of auto-spectra's three, 3 of cross-spectra's four. */
  const int lu = cross ? 3 : 2;
  t->phase_alloc = lu - 1;
  /* ScaLAPACK's pdgetrf wants LOCr(n_modes) + MB pivots; the whole is n_modes + MB. */
  qp_model_bytes pivots = qp_model_vector_bytes(d->n_modes + (dist ? d->block : 0), sizeof(int));
  if (dist)
    qp_size_bytes(qp_bc_local_count(d->n_modes, d->block, d->grid_row, d->grid_rows) + d->block,
                  sizeof(int), &pivots.here);
  for (int set = 0; set < 1 + cross; ++set) {
    qp_model_on_backend(d, qp_model_add(m, set ? QP_TERM_SMW_LU_B : QP_TERM_SMW_LU,
                                        QP_TERM_PERSISTENT, mode_sq, bas, spe,
                                        set ? "n_modes^2 x 8 (I + K_B Lambda, LU)"
                                            : "n_modes^2 x 8 (I + K Lambda, LU)"))
        ->phase_alloc = lu;
    qp_model_add(m, set ? QP_TERM_PIVOTS_B : QP_TERM_PIVOTS, QP_TERM_PERSISTENT, pivots, bas, spe,
                 dist ? "(local n_modes + block) x 4" : "n_modes x 4")
        ->phase_alloc = lu;
  }
  /* K's columns of one field lined up with a panel of I + K Lambda's columns. */
  if (moves)
    qp_model_add(m, QP_TERM_SMW_COLUMNS, QP_TERM_TRANSIENT,
                 qp_model_matrix_bytes(d, d->n_modes, qp_model_mode_panel(d)), bas, bas,
                 !d->device ? "n_modes^2 x 8 (K's columns of one field, redistributed)"
                 : qp_model_mode_panel(d) < d->n_modes
                     ? "n_modes mode_panel x 8 (K's columns of one field, on the host)"
                     : "n_modes^2 x 8 (K's columns of one field, on the host)")
        ->phase_alloc = lu;
}

/* SMW's cross-spectra with the switch: Q = Y_B^T L_B^-1 S_fixed L_A^-T Y_A in basis_setup's
 * phase 1 (qp_cross_fixed_product: L_A^-T Y_A, S_fixed, S_fixed L_A^-T Y_A), kept to fisher_run's
 * phase 1, where it makes Z_B^T S_fixed Z_A. */
static void qp_basis_smw_fixed_terms(const qp_model_dims *d, qp_model *m) {
  const qp_stage_id bas = QP_STAGE_BASIS_SETUP;
  const qp_model_bytes mode_pix = qp_model_matrix_bytes(d, d->n_pix, d->n_modes);
  static const char *const names[3] = {QP_TERM_WEIGHTED_MODES, QP_TERM_CROSS_SIGNAL,
                                       QP_TERM_NOISE_MODES};
  static const char *const formulas[3] = {
      "n_pix n_modes x 8 (L_A^-T Y_A)", "n_pix^2 x 8 (S_fixed)",
      "n_pix n_modes x 8 (S_fixed L_A^-T Y_A, then L_B^-1 of it)"};
  for (int k = 0; k < 3; ++k) {
    qp_model_term *t = qp_model_on_backend(
        d, qp_model_add(m, names[k], QP_TERM_TRANSIENT,
                        k == 1 ? qp_model_matrix_bytes(d, d->n_pix, d->n_pix) : mode_pix, bas, bas,
                        formulas[k]));
    t->phase_alloc = t->phase_free = 1;
  }
  qp_model_term *t = qp_model_on_backend(
      d, qp_model_add(m, QP_TERM_CROSS_FIXED, QP_TERM_PERSISTENT,
                      qp_model_matrix_bytes(d, d->n_modes, d->n_modes), bas, QP_STAGE_FISHER_RUN,
                      "n_modes^2 x 8 (Q = V N_B,eff^-1 S_fixed N_A,eff^-1 V^T)"));
  t->phase_alloc = t->phase_free = 1;
}

qp_err qp_basis_terms(const qp_model_dims *d, qp_model *m) {
  if (d->path == QP_MODEL_PIXEL_DIRECT) return QP_OK;
  const int smw = d->path == QP_MODEL_HARMONIC_SMW;
  const qp_stage_id bas = QP_STAGE_BASIS_SETUP, spe = QP_STAGE_SPECTRA_RUN;
  /* The per-map matrices hold one batch of maps (planner_batch.c); SMW reads them here, one
   * map at a time through the map buffer (inputs_maps.c). */
  const int64_t batch = qp_model_map_batch(d);
  const qp_model_bytes pix_maps = qp_model_matrix_bytes(d, d->n_pix, batch),
                       mode_maps = qp_model_matrix_bytes(d, d->n_modes, batch);
  qp_model_term *t = qp_model_on_backend(
      d, qp_model_add(m, QP_TERM_V, smw ? QP_TERM_TRANSIENT : QP_TERM_PERSISTENT,
                      qp_model_matrix_bytes(d, d->n_pix, d->n_modes), bas, smw ? bas : spe,
                      qp_model_w_windows(d)
                          ? "n_pix n_modes x 8 (V^T, then Y, then Z = L^-T Y in place)"
                          : "n_pix n_modes x 8 (V^T, then Y in place)"));
  const int cross = d->cross_maps;
  qp_model_term *tb = NULL;
  if (cross)
    tb = qp_model_on_backend(
        d, qp_model_add(m, QP_TERM_V_B, smw ? QP_TERM_TRANSIENT : QP_TERM_PERSISTENT,
                        qp_model_matrix_bytes(d, d->n_pix, d->n_modes), bas, smw ? bas : spe,
                        "n_pix n_modes x 8 (V^T, then Y_B in place)"));
  if (smw) {
    /* Cross-spectra's phases (harmonic_smw_cross.c): 0 V, Y_A, Y_B and both sets'
     * V N_eff^-1 x; 1 the switch's Q; 2 K_A, K_B; 3 the LUs. */
    t->phase_free = cross ? 2 : 1;
    if (tb) tb->phase_free = 2;
    qp_map_reader_terms(d, m, bas, 0);
    qp_model_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, pix_maps, bas,
                                        bas, "n_pix map_batch x 8 (N_eff^-1/2 x)"))
        ->phase_free = 0;
    qp_model_on_backend(d,
                        qp_model_add(m, QP_TERM_MODE_MAPS, QP_TERM_PERSISTENT, mode_maps, bas, spe,
                                     "n_modes map_batch x 8 (V N_eff^-1 x, then z in place)"));
    if (cross)
      qp_model_on_backend(
          d, qp_model_add(m, QP_TERM_MODE_MAPS_B, QP_TERM_PERSISTENT, mode_maps, bas, spe,
                          "n_modes n_maps x 8 (V N_B,eff^-1 x_B, then z_B in place)"));
    if (cross && d->switched) qp_basis_smw_fixed_terms(d, m);
    /* In batches, every map's V N_eff^-1 x waits on the host for spectra_run: each batch's
     * local part (harmonic_route.c, qp_mode_maps_host_batch). */
    if (batch < d->n_maps) {
      const int64_t full = (d->n_maps - 1) / batch, last = d->n_maps - full * batch;
      qp_model_add(m, QP_TERM_MODE_MAPS_HOST, QP_TERM_PERSISTENT,
                   qp_model_bytes_sum(qp_model_bytes_times((size_t)full, mode_maps),
                                      qp_model_matrix_bytes(d, d->n_modes, last)),
                   bas, spe, "n_modes n_maps x 8 (V N_eff^-1 x of every map)");
    }
  }
  qp_basis_kernel_terms(d, m);
  return QP_OK;
}
