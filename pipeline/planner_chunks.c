/* planner_chunks.c: the model of one route and the pieces the planner cuts it into for the
 * memory limits: the pixel-direct chunks, W's blocks, the product and host panels (the maps'
 * batches: planner_batch.c) (planner.h, docs/memory-model.md). */
#include "planner_internal.h"

#include <string.h>

#include "blas_buffers.h"
#include "comm.h"
#include "mode_layout.h"

/* The device bytes the tracked terms may use: memory.device_limit less the device context
 * (0: no limit; negative when the context alone does not fit: nothing does). */
double qp_plan_device_room(const qp_problem *p) {
  if (p->cfg->device_limit <= 0) return 0;
  const double room = p->cfg->device_limit - qp_plan_device_overhead(p);
  return room > 0 ? room : -1;
}

/* The grid the plan is for: `plan --ranks`'s, the run's on a distributed backend, or NULL. */
const qp_grid *qp_plan_grid(const qp_problem *p, const qp_plan *plan) {
  if (plan->grid.nprow > 0) return &plan->grid;
  return p->ops && p->ops->distributed ? qp_grid_current() : NULL;
}

/* Distributed, every rank runs the same pieces: the smallest any rank chose (each rank's
 * peaks fall with the piece, so it fits every rank). */
qp_err qp_plan_smallest_over_ranks(int64_t *size) {
  double negated = -(double)*size;
  QP_CALL(qp_comm_max(&negated, 1));
  *size = (int64_t)-negated;
  return QP_OK;
}

/* The model of one route, pixel-direct, SMW or projection, in `pieces`; its dimensions to
 * *dims_out when that is not NULL. */
qp_err qp_plan_model(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                     const qp_plan_pieces *pieces, qp_model *model, qp_model_dims *dims_out) {
  const qp_config *cfg = p->cfg;
  qp_model_dims dims = {
      .path = path,
      .n_modes = p->n_modes,
      .switched = plan->switched,
      .n_sky = p->n_sky,
      .n_positions = p->n_observed,
      .n_pix = p->n_pix,
      .n_maps = p->n_maps,
      .n_params = p->n_params,
      .fisher_chunk = pieces->fisher_chunk,
      .spectra_chunk = pieces->spectra_chunk,
      .map_batch = pieces->map_batch,
      .w_block = pieces->w_block,
      .host_panel = pieces->host_panel,
      .product_panel = pieces->product_panel,
      .noise_dense = cfg->noise_kind == QP_NOISE_COVARIANCE,
      .cross_maps = cfg->n_maps2 > 0,
      .noise2_dense = cfg->n_maps2 > 0 && cfg->noise2_kind == QP_NOISE_COVARIANCE,
      .n_window =
          cfg->window_functions ? (int64_t)cfg->n_spectra * (cfg->lmax - cfg->ell_min + 1) : 0,
      .reader = qp_comm_rank() == 0,
      .device = qp_config_device_backend(cfg),
      .backend = qp_plan_backend_table(p),
  };
  const qp_grid *grid = qp_plan_grid(p, plan);
  if (plan->grid.nprow > 0) dims.reader = grid->myrow == 0 && grid->mycol == 0;
  if (grid) {
    dims.grid_rows = grid->nprow;
    dims.grid_cols = grid->npcol;
    dims.grid_row = grid->myrow;
    dims.grid_col = grid->mycol;
    dims.block = grid->block;
  }
  for (int f = 0; f < 3; ++f)
    dims.n_fields += p->field_offset[f] >= 0;
  dims.n_lm = (int64_t)(cfg->lmax + 1) * (cfg->lmax + 1);
  int slot[81];
  dims.fisher_block_slots = qp_fisher_block_slots(cfg, cfg->n_maps2 == 0, slot);
  dims.cross_fields = qp_spectra_cross(cfg);
  QP_CALL(qp_model_predict(&dims, model));
  if (dims_out) *dims_out = dims;
  /* At most 2^56 from a calibration file (calibration.h); the built-in one is 24 MiB plus
   * the BLAS library's buffers as the warm-up leaves them, measured on the kernel that runs
   * (warm_up.h), at most 130 MiB a thread. A calibration's BLAS part is used on the kernel it
   * was measured on only; elsewhere the measured footprint stands in (inputs.c says so). */
  const size_t blas = qp_blas_buffer_bytes(qp_plan_blas_width(p, plan, path));
  const qp_calibration *cal = &p->calibration;
  if (cal->builtin) {
    model->overhead_parts[0] =
        QP_MODEL_DEFAULT_OVERHEAD + (grid ? QP_MODEL_DEFAULT_OVERHEAD_MPI : 0);
    model->overhead_parts[1] = blas;
    model->overhead_parts[2] = 0; /* in the first part */
  } else {
    model->overhead_parts[0] = cal->program_bytes;
    model->overhead_parts[1] = cal->blas_stale ? blas : cal->blas_bytes;
    model->overhead_parts[2] = cal->hdf5_bytes;
  }
  model->overhead_bytes =
      cal->builtin || cal->blas_stale
          ? model->overhead_parts[0] + model->overhead_parts[1] + model->overhead_parts[2]
          : cal->overhead_bytes;
  const qp_blas_footprint f = qp_blas_buffer_footprint();
  snprintf(model->blas_library, sizeof model->blas_library, "%s", f.library);
  snprintf(model->blas_kernel, sizeof model->blas_kernel, "%s", f.kernel);
  if (!cal->builtin && !cal->blas_stale)
    snprintf(model->blas_how, sizeof model->blas_how, "calibrated: %.140s", cal->source);
  else if (f.per_thread)
    snprintf(model->blas_how, sizeof model->blas_how, "%.100s; head %zu B, %zu B a column", f.how,
             f.head_bytes, f.column_bytes);
  else
    snprintf(model->blas_how, sizeof model->blas_how, "%.100s", f.how);
  return QP_OK;
}

/* qp_plan_model for a fit test: a plan with a term beyond 2^56 bytes (the model refuses it,
 * model->oversize_term) cannot be sized, *sized 0, and its error is forgotten: smaller chunks,
 * batches or blocks may do. The model decides that on each term's whole size, the same on
 * every rank. */
qp_err qp_plan_model_sized(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                           const qp_plan_pieces *pieces, qp_model *model, int *sized,
                           qp_model_dims *dims_out) {
  qp_err err = qp_plan_model(p, plan, path, pieces, model, dims_out);
  *sized = !(err == QP_ERR_INPUT && model->oversize_term[0]);
  if (!*sized) {
    qp_error_clear();
    return QP_OK;
  }
  QP_CALL(err);
  return QP_OK;
}

/* Whether the pixel-direct plan of chunks (f, s) keeps `stage` inside `limit`; one that
 * cannot be sized does not. On a device backend the host side is judged with the products
 * built in panels of one column (its least: qp_plan_host_panel then widens them), since a
 * larger chunk saves whole products re-formed and a wider panel only pair sums. */
static qp_err qp_plan_chunk_fits(const qp_problem *p, const qp_plan *plan, int64_t f, int64_t s,
                                 int64_t batch, qp_stage_id stage, double limit, qp_model *model,
                                 int *fits) {
  qp_model_dims dims;
  const qp_plan_pieces pieces = {f, s, batch, 0, 0, 0};
  QP_CALL(qp_plan_model_sized(p, plan, QP_MODEL_PIXEL_DIRECT, &pieces, model, fits, &dims));
  if (!*fits) return QP_OK;
  size_t host = qp_model_stage_peak(model, stage);
  if (qp_config_device_backend(p->cfg) && limit > 0) {
    qp_model least;
    dims.host_panel = 1;
    QP_CALL(qp_model_predict(&dims, &least));
    host = qp_model_stage_peak(&least, stage);
  }
  /* Bounded: a stage peak and the overhead stay below 2^63 (model.h). */
  *fits = (limit <= 0 || (double)(host + model->overhead_bytes) <= limit) &&
          (p->cfg->device_limit <= 0 ||
           (double)qp_model_stage_peak_in(model, stage, QP_SPACE_DEVICE) <= qp_plan_device_room(p));
  return QP_OK;
}

/* The planner's chunks for the pixel-direct path: all parameters at once when that fits
 * memory.host_limit, else the largest chunks that keep fisher_run and spectra_run inside it
 * (products streamed and re-formed, bin matrices built a chunk at a time). When even one
 * product per chunk does not fit, the chunks stay 1 and the limit check refuses the run,
 * naming the term that does not fit; when even that plan cannot be sized (a term beyond 2^56
 * bytes), the model's error names the term. */
qp_err qp_plan_chunks(const qp_problem *p, const qp_plan *plan, int64_t batch,
                      int64_t *fisher_chunk, int64_t *spectra_chunk, qp_model *model) {
  const double limit = plan->host_limit;
  const int64_t np = p->n_params;
  *fisher_chunk = *spectra_chunk = np;
  if (limit <= 0 && p->cfg->device_limit <= 0) {
    const qp_plan_pieces whole = {np, np, batch, 0, 0, 0};
    QP_CALL(qp_plan_model(p, plan, QP_MODEL_PIXEL_DIRECT, &whole, model, NULL));
    return QP_OK;
  }
  /* fisher_run's peak does not depend on spectra_run's chunk: it is searched with the bin
   * matrices at 1, so that their size cannot make the products' chunk smaller. */
  const qp_stage_id stage[2] = {QP_STAGE_FISHER_RUN, QP_STAGE_SPECTRA_RUN};
  int64_t *chunk[2] = {fisher_chunk, spectra_chunk};
  *spectra_chunk = 1;
  for (int s = 0; s < 2; ++s) {
    if (s == 1) *spectra_chunk = np;
    int fits = 0;
    while (*chunk[s] > 1) {
      QP_CALL(qp_plan_chunk_fits(p, plan, *fisher_chunk, *spectra_chunk, batch, stage[s], limit,
                                 model, &fits));
      if (fits) break;
      --*chunk[s];
    }
  }
  /* Distributed, every rank runs the same chunks: the smallest any rank needs. */
  QP_CALL(qp_plan_smallest_over_ranks(fisher_chunk));
  QP_CALL(qp_plan_smallest_over_ranks(spectra_chunk));
  const qp_plan_pieces chunked = {*fisher_chunk, *spectra_chunk, batch, 0, 0, 0};
  QP_CALL(qp_plan_model(p, plan, QP_MODEL_PIXEL_DIRECT, &chunked, model, NULL));
  return QP_OK;
}

/* The largest size in 1..most that `test` accepts (0: none), for tests whose peaks fall as
 * the size does (every size below one that fits fits): a bisection. */
qp_err qp_plan_largest_fitting(const qp_problem *p, const qp_plan *plan, qp_plan_fit_test test,
                               const void *how, int64_t most, int64_t *largest) {
  int64_t lo = 0, hi = most; /* lo: the largest size known to fit (0: none yet) */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    int fits = 0;
    QP_CALL(test(p, plan, how, mid, &fits));
    if (fits)
      lo = mid;
    else
      hi = mid - 1;
  }
  *largest = lo;
  return QP_OK;
}

/* Whether W in blocks of `units` x *(int64_t *)how columns (0: whole) keeps the device peaks of
 * basis_setup, where W is formed, and fisher_run, where it is read, inside memory.device_limit
 * less the device context (the backend's workspaces are terms of the model); the maps'
 * batch, planned after it, keeps spectra_run there. A plan that cannot be sized does not fit. */
static qp_err qp_plan_w_block_fits(const qp_problem *p, const qp_plan *plan, const void *how,
                                   int64_t units, int *fits) {
  const int64_t w_block = units * *(const int64_t *)how;
  qp_model model;
  const qp_plan_pieces pieces = {p->n_params, p->n_params, p->n_maps, w_block, 0, 0};
  QP_CALL(qp_plan_model_sized(p, plan, QP_MODEL_HARMONIC_PROJECTED, &pieces, &model, fits, NULL));
  if (!*fits) return QP_OK;
  for (qp_stage_id s = QP_STAGE_BASIS_SETUP; s <= QP_STAGE_FISHER_RUN; ++s)
    *fits &= (double)qp_model_stage_peak_in(&model, s, QP_SPACE_DEVICE) <= qp_plan_device_room(p);
  return QP_OK;
}

/* The projection route's W block (docs/memory-model.md, "W in blocks"): 0 (W whole, the rule)
 * on a host backend, without memory.device_limit and whenever W fits whole; else the largest
 * block of columns below n_modes that fits (the device peak falls with the block), or failing
 * that the least block (the device limit check then refuses the run, naming its stage and
 * term). The blocks are multiples of a unit: 1 column on one process; on a grid block x npcol
 * columns, where a range of columns is a block-cyclic matrix of its own (harmonic_route.c),
 * and the smallest block of any rank; a W narrower than two units stays whole. */
qp_err qp_plan_w_block(const qp_problem *p, const qp_plan *plan, int64_t *w_block) {
  *w_block = 0;
  const qp_grid *grid = qp_plan_grid(p, plan);
  const int64_t unit = grid ? (int64_t)grid->block * grid->npcol : 1;
  const int64_t most = (p->n_modes - 1) / unit; /* units in a block narrower than W */
  if (!qp_config_device_backend(p->cfg) || p->cfg->device_limit <= 0 || most < 1) return QP_OK;
  int fits = 0;
  QP_CALL(qp_plan_w_block_fits(p, plan, &unit, 0, &fits));
  if (!fits) {
    int64_t units = 0;
    QP_CALL(qp_plan_largest_fitting(p, plan, qp_plan_w_block_fits, &unit, most, &units));
    *w_block = (units > 0 ? units : 1) * unit;
  }
  /* Ranks whose W fits whole say n_modes, so that the smallest is another rank's block. */
  int64_t mine = *w_block > 0 ? *w_block : p->n_modes;
  QP_CALL(qp_plan_smallest_over_ranks(&mine));
  *w_block = mine < p->n_modes ? mine : 0;
  return QP_OK;
}

/* What qp_plan_product_panel tries: the route's pieces with products in panels of a unit's
 * multiple. */
typedef struct qp_plan_product_how {
  const qp_plan_pieces *pieces;
  int64_t unit;
} qp_plan_product_how;

/* Whether projection without W, its products in panels of `units` units, fits: the host peak
 * (overhead included) inside memory.host_limit; without a limit, fisher_run's peak at most
 * 1/16 above basis_setup's, whose L and Y no panel lowers (the rule: docs/memory-model.md). */
static qp_err qp_plan_product_fits(const qp_problem *p, const qp_plan *plan, const void *how,
                                   int64_t units, int *fits) {
  const qp_plan_product_how *h = how;
  qp_plan_pieces pieces = *h->pieces;
  pieces.product_panel = units * h->unit;
  qp_model model;
  QP_CALL(qp_plan_model_sized(p, plan, QP_MODEL_HARMONIC_PROJECTED, &pieces, &model, fits, NULL));
  if (!*fits) return QP_OK;
  if (plan->host_limit > 0)
    *fits = (double)(qp_model_peak(&model) + model.overhead_bytes) <= plan->host_limit;
  else
    *fits = (double)qp_model_stage_peak(&model, QP_STAGE_FISHER_RUN) <=
            (double)qp_model_stage_peak(&model, QP_STAGE_BASIS_SETUP) * 17.0 / 16.0;
  return QP_OK;
}

qp_err qp_plan_product_panel(const qp_problem *p, const qp_plan *plan, const qp_plan_pieces *k,
                             int64_t *panel, double *smallest_peak) {
  *panel = 0;
  if (smallest_peak) *smallest_peak = 0;
  const qp_grid *grid = qp_plan_grid(p, plan);
  const qp_config *cfg = p->cfg;
  const int64_t n_lm = (int64_t)(cfg->lmax + 1) * (cfg->lmax + 1);
  const int64_t unit = grid ? (int64_t)grid->block * grid->npcol : 1;
  const qp_plan_product_how how = {k, unit};
  qp_model_dims d;
  qp_model model;
  /* A route that cannot be sized has no panel: the route's own model says so (planner_route.c
   * leaves it out), not this one's error. */
  int sized = 0;
  QP_CALL(qp_plan_model_sized(p, plan, QP_MODEL_HARMONIC_PROJECTED, k, &model, &sized, &d));
  if (!sized || !qp_model_w_windows(&d)) return QP_OK;
  const int64_t most = (n_lm - 1) / unit; /* units in a panel narrower than n_lm */
  int fits = 1;
  if (most >= 1) QP_CALL(qp_plan_product_fits(p, plan, &how, most + 1, &fits));
  if (!fits) {
    int64_t units = 0;
    QP_CALL(qp_plan_largest_fitting(p, plan, qp_plan_product_fits, &how, most, &units));
    *panel = (units > 0 ? units : 1) * unit;
  }
  int64_t mine = *panel > 0 ? *panel : n_lm;
  QP_CALL(qp_plan_smallest_over_ranks(&mine));
  *panel = mine < n_lm ? mine : 0;
  if (smallest_peak && most >= 1) {
    qp_plan_pieces narrow = *k;
    narrow.product_panel = unit;
    QP_CALL(qp_plan_model_sized(p, plan, QP_MODEL_HARMONIC_PROJECTED, &narrow, &model, &sized,
                                NULL));
    *smallest_peak = (double)(qp_model_peak(&model) + model.overhead_bytes);
    QP_CALL(qp_comm_max(smallest_peak, 1));
  }
  return QP_OK;
}

/* plan->model again at the dimensions of plan->model_dims (the overhead kept): the host panel
 * is planned on the chosen route's model (qp_plan_host_panel). */
static qp_err qp_plan_predict_again(qp_plan *plan) {
  const size_t overhead = plan->model.overhead_bytes;
  size_t parts[3];
  memcpy(parts, plan->model.overhead_parts, sizeof parts);
  QP_CALL(qp_model_predict(&plan->model_dims, &plan->model));
  plan->model.overhead_bytes = overhead;
  memcpy(plan->model.overhead_parts, parts, sizeof parts);
  return QP_OK;
}

qp_err qp_plan_remodel(const qp_problem *p, qp_plan *plan) {
  const qp_model_dims d = plan->model_dims;
  const qp_plan_pieces pieces = {d.fisher_chunk, d.spectra_chunk, d.map_batch,
                                 d.w_block,      d.host_panel,    d.product_panel};
  QP_CALL(qp_plan_model(p, plan, d.path, &pieces, &plan->model, &plan->model_dims));
  return QP_OK;
}

/* Whether the route's plan with its host windows in panels of `panel` local lines (the pixel
 * matrices' columns, V^T's rows, Z's columns: memory_model.h) keeps the host peak inside the
 * limit the run plans to. */
static qp_err qp_plan_host_panel_fits(const qp_problem *p, const qp_plan *plan, const void *how,
                                      int64_t panel, int *fits) {
  (void)p;
  (void)how;
  qp_model_dims d = plan->model_dims;
  d.host_panel = panel;
  qp_model model;
  QP_CALL(qp_model_predict(&d, &model));
  *fits = (double)(qp_model_peak(&model) + plan->model.overhead_bytes) <= plan->host_limit;
  return QP_OK;
}

/* The host panel of a device run (docs/memory-model.md, "Pixel matrices in panels"): 0 (all
 * lines at once, the rule) on a host backend, without a host limit, and whenever the plan
 * fits it whole; else the widest panel of local lines that fits, or failing that a panel of
 * one line (the limit check then refuses the run, naming the stage and term that stay above
 * it). On a grid, the narrowest any rank chose. Planned on plan->model's route after its other
 * pieces, for each route qp_plan_route weighs. */
qp_err qp_plan_host_panel(const qp_problem *p, qp_plan *plan) {
  int64_t panel = 0;
  const int64_t n = p->n_pix;
  if (qp_config_device_backend(p->cfg) && plan->host_limit > 0 &&
      (double)(qp_model_peak(&plan->model) + plan->model.overhead_bytes) > plan->host_limit) {
    QP_CALL(qp_plan_largest_fitting(p, plan, qp_plan_host_panel_fits, NULL, n - 1, &panel));
    if (panel == 0) panel = 1;
  }
  int64_t mine = panel > 0 ? panel : n; /* whole: n, so that another rank's panel is smaller */
  QP_CALL(qp_plan_smallest_over_ranks(&mine));
  plan->model_dims.host_panel = mine < n ? mine : 0;
  if (plan->model_dims.host_panel > 0) QP_CALL(qp_plan_predict_again(plan));
  return QP_OK;
}
