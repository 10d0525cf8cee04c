/* memory_model.c: qmlpipe's memory model (memory_model.h): gathers the terms every stage
 * declares beside its code (stages/covariance_terms.c, basis_terms.c, fisher_terms.c,
 * spectra_terms.c), in stage order, then the backend's (backend_terms.c).
 *
 * The stages allocate under the same names (their *_terms.h) with the same sizes, and
 * tests/pipeline/test_budget_exact.c fails on any drift. */
#include "memory_model.h"

#include "backend_terms.h"
#include "basis_terms.h"
#include "checkpoint.h"
#include "covariance_terms.h"
#include "fisher_terms.h"
#include "spectra_terms.h"

const char *const qp_stage_names[QP_STAGE_COUNT] = {"covariance_setup", "basis_setup", "fisher_run",
                                                    "spectra_run"};

/* Each stage's declaration of its terms, in stage order: the order `qmlpipe budget` prints
 * them and the report lists them. */
static qp_err (*const qp_stage_terms[QP_STAGE_COUNT])(const qp_model_dims *, qp_model *) = {
    qp_covariance_terms, qp_basis_terms, qp_fisher_terms, qp_spectra_terms};

qp_err qp_model_predict(const qp_model_dims *d, qp_model *m) {
  qp_model_init(m, QP_STAGE_COUNT, qp_stage_names);
  m->checkpoint_saves = qp_checkpoint_saves;
  QP_CHECK(d->n_positions > 0 && d->n_positions <= d->n_pix, QP_ERR_INPUT,
           "budget model: n_positions (%lld) must be in 1..n_pix (%lld)", (long long)d->n_positions,
           (long long)d->n_pix);
  QP_CHECK(d->n_pix > 0 && d->n_sky >= 0 && d->n_maps > 0 && d->n_params > 0, QP_ERR_INPUT,
           "budget model: n_pix (%lld), n_maps (%lld) and n_params (%lld) must be positive, "
           "n_sky (%lld) not negative",
           (long long)d->n_pix, (long long)d->n_maps, (long long)d->n_params, (long long)d->n_sky);
  QP_CHECK(d->path == QP_MODEL_PIXEL_DIRECT || d->n_modes > 0, QP_ERR_INPUT,
           "budget model: the harmonic path needs n_modes > 0 (got %lld)", (long long)d->n_modes);
  QP_CHECK(d->fisher_chunk >= 1 && d->fisher_chunk <= d->n_params, QP_ERR_INPUT,
           "budget model: fisher chunk %lld outside 1..%lld", (long long)d->fisher_chunk,
           (long long)d->n_params);
  QP_CHECK(d->spectra_chunk >= 1 && d->spectra_chunk <= d->n_params, QP_ERR_INPUT,
           "budget model: spectra chunk %lld outside 1..%lld", (long long)d->spectra_chunk,
           (long long)d->n_params);
  QP_CHECK(d->map_batch >= 0 && d->map_batch <= d->n_maps, QP_ERR_INPUT,
           "budget model: map batch %lld outside 1..%lld", (long long)d->map_batch,
           (long long)d->n_maps);
  QP_CHECK(d->w_block >= 0 && d->w_block <= d->n_modes &&
               (!qp_model_w_chunked(d) || d->grid_rows <= 0 ||
                d->w_block % ((int64_t)d->block * d->grid_cols) == 0),
           QP_ERR_INPUT,
           "budget model: W block %lld outside 1..%lld (n_modes), or on a grid not a multiple "
           "of block x grid columns (%d x %d)",
           (long long)d->w_block, (long long)d->n_modes, d->block, d->grid_cols);
  QP_CHECK(d->host_panel >= 0 && (d->host_panel == 0 || d->device), QP_ERR_INPUT,
           "budget model: host panel %lld: 0 (whole) or, on a device backend only, 1 or more "
           "lines",
           (long long)d->host_panel);
  QP_CHECK(d->grid_rows <= 0 ||
               (d->block > 0 && d->grid_cols > 0 && d->grid_row >= 0 &&
                d->grid_row < d->grid_rows && d->grid_col >= 0 && d->grid_col < d->grid_cols),
           QP_ERR_INPUT, "budget model: rank (%d, %d) outside a %d x %d grid of block %d",
           d->grid_row, d->grid_col, d->grid_rows, d->grid_cols, d->block);
  m->overhead_bytes = QP_MODEL_DEFAULT_OVERHEAD;
  QP_CHECK(d->n_modes >= 0 && d->n_fields >= 0 && d->n_lm >= 0, QP_ERR_INPUT,
           "budget model: n_modes (%lld), n_fields (%d) and n_lm (%lld) must not be negative",
           (long long)d->n_modes, d->n_fields, (long long)d->n_lm);
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    QP_CALL(qp_stage_terms[s](d, m));
  QP_CALL(qp_backend_terms(d, m));
  QP_CHECK(!m->too_many_terms, QP_ERR_INTERNAL, "budget model: more than %d terms", QP_TERMS_MAX);
  QP_CHECK(!m->oversize_term[0], QP_ERR_INPUT,
           "budget model: term '%s' (%s) would need %.3g bytes (%.3g PiB), more than the 2^56 "
           "bytes (64 PiB) the model accepts for one term: impossible dimensions "
           "(n_pix=%lld n_positions=%lld n_sky=%lld n_modes=%lld n_maps=%lld n_params=%lld "
           "fisher_chunk=%lld spectra_chunk=%lld map_batch=%lld)",
           m->oversize_term, m->oversize_formula, m->oversize_bytes,
           m->oversize_bytes / 1125899906842624.0, (long long)d->n_pix, (long long)d->n_positions,
           (long long)d->n_sky, (long long)d->n_modes, (long long)d->n_maps, (long long)d->n_params,
           (long long)d->fisher_chunk, (long long)d->spectra_chunk,
           (long long)qp_model_map_batch(d));
  return QP_OK;
}

void qp_model_print(FILE *out, const qp_model_dims *d, const qp_model *m) {
  static const char *const path_names[] = {"pixel_direct", "harmonic (SMW)",
                                           "harmonic (projection)"};
  fprintf(out, "qmlpipe memory budget [%s]%s\n", path_names[d->path],
          d->switched ? " with the switch (S_fixed in N_eff)" : "");
  if (d->path != QP_MODEL_PIXEL_DIRECT) fprintf(out, "  n_modes=%lld\n", (long long)d->n_modes);
  fprintf(out,
          "  n_positions=%lld n_pix=%lld n_sky=%lld n_maps=%lld n_params=%lld noise=%s "
          "fisher_chunk=%lld "
          "spectra_chunk=%lld",
          (long long)d->n_positions, (long long)d->n_pix, (long long)d->n_sky, (long long)d->n_maps,
          (long long)d->n_params, d->noise_dense ? "dense" : "diagonal", (long long)d->fisher_chunk,
          (long long)d->spectra_chunk);
  if (qp_model_map_batch(d) < d->n_maps)
    fprintf(out, " map_batch=%lld", (long long)qp_model_map_batch(d));
  if (qp_model_w_chunked(d)) fprintf(out, " w_block=%lld", (long long)d->w_block);
  if (d->host_panel > 0) fprintf(out, " host_panel=%lld", (long long)d->host_panel);
  fprintf(out, "\n\n");
  qp_model_print_stages(out, m);
}
