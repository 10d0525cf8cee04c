/* planner.c: the route and the chunks of a run, and its memory model (planner.h). */
#include "planner.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "bytes_text.h"
#include "comm.h"
#include "conditioning.h"
#include "driver.h"
#include "harmonic_modes.h"

int64_t qp_plan_blas_width(const qp_problem *p, qp_model_path path) {
  const int dense = p->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  return path == QP_MODEL_HARMONIC_SMW && !dense ? p->n_modes : p->n_pix;
}

const qp_linalg_ops *qp_plan_backend_table(const qp_problem *p) {
  if (!qp_config_device_backend(p->cfg)) return NULL;
  if (p->ops && qp_linalg_on_device(p->ops)) {
    /* cuda answers only once its context exists (cuSOLVER's queries need a handle) */
    qp_workspace probe[QP_WORKSPACES_MAX];
    int count = 0;
    if (qp_linalg_workspaces(p->ops, QP_OP_INIT, 1, 0, probe, &count) == QP_OK) return p->ops;
    qp_error_clear();
    return NULL;
  }
  /* `plan` starts no backend: a row whose sizes are a formula (hostdev's) has a table for
   * them without a start */
  const qp_backend *row = qp_backend_find(p->cfg->backend);
  return row && row->sizes_table ? row->sizes_table() : NULL;
}

double qp_plan_device_overhead(const qp_problem *p) {
  if (!qp_config_device_backend(p->cfg)) return 0;
  if (p->cfg->device_overhead >= 0) return p->cfg->device_overhead;
  const qp_backend *row = qp_backend_find(p->cfg->backend);
  return row ? (double)row->context_bytes : 0.0;
}

const char *qp_plan_device_overhead_source(const qp_problem *p) {
  return p->cfg->device_overhead >= 0 ? "memory.device_overhead" : "the backend's default";
}

/* The device bytes the tracked terms may use: memory.device_limit less the device context
 * (0: no limit; negative when the context alone does not fit: nothing does). */
static double qp_plan_device_room(const qp_problem *p) {
  if (p->cfg->device_limit <= 0) return 0;
  const double room = p->cfg->device_limit - qp_plan_device_overhead(p);
  return room > 0 ? room : -1;
}

/* The grid the plan is for: `plan --ranks`'s, the run's on a distributed backend, or NULL. */
static const qp_grid *qp_plan_grid(const qp_problem *p) {
  if (p->plan_grid.nprow > 0) return &p->plan_grid;
  return p->ops && p->ops->distributed ? qp_grid_current() : NULL;
}

/* Distributed, every rank runs the same pieces: the smallest any rank chose (each rank's
 * peaks fall with the piece, so it fits every rank). */
static qp_err qp_plan_smallest_over_ranks(int64_t *size) {
  double negated = -(double)*size;
  QP_CALL(qp_comm_max(&negated, 1));
  *size = (int64_t)-negated;
  return QP_OK;
}

/* The pieces a plan cuts a route into (memory_model.h's dimensions of the same names). */
typedef struct qp_plan_pieces {
  int64_t fisher_chunk, spectra_chunk, map_batch, w_block, host_panel;
} qp_plan_pieces;

/* The model of one route, pixel-direct, SMW or projection, in `pieces`; its dimensions to
 * *dims_out when that is not NULL. */
static qp_err qp_plan_model(const qp_problem *p, qp_model_path path, const qp_plan_pieces *pieces,
                            qp_model *model, qp_model_dims *dims_out) {
  const qp_config *cfg = p->cfg;
  qp_model_dims dims = {
      .path = path,
      .n_modes = p->n_modes,
      .switched = p->switched,
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
      .noise_dense = cfg->noise_kind == QP_NOISE_COVARIANCE,
      .reader = qp_comm_rank() == 0,
      .device = qp_config_device_backend(cfg),
      .backend = qp_plan_backend_table(p),
  };
  const qp_grid *grid = qp_plan_grid(p);
  if (p->plan_grid.nprow > 0) dims.reader = grid->myrow == 0 && grid->mycol == 0;
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
  dims.fisher_block_slots = qp_fisher_block_slots(cfg, slot);
  dims.cross_fields = qp_spectra_cross(cfg);
  QP_CALL(qp_model_predict(&dims, model));
  if (dims_out) *dims_out = dims;
  /* At most 2^56 from a calibration file (calibration.h); the built-in one is 24 MiB plus
   * the BLAS library's buffers as the warm-up leaves them, measured on the kernel that runs
   * (warm_up.h), at most 130 MiB a thread. A calibration's BLAS part is used on the kernel it
   * was measured on only; elsewhere the measured footprint stands in (inputs.c says so). */
  const size_t blas = qp_driver_warm_up_panel_bytes(qp_plan_blas_width(p, path));
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
  const qp_blas_footprint f = qp_driver_blas_footprint();
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
static qp_err qp_plan_model_sized(const qp_problem *p, qp_model_path path,
                                  const qp_plan_pieces *pieces, qp_model *model, int *sized,
                                  qp_model_dims *dims_out) {
  qp_err err = qp_plan_model(p, path, pieces, model, dims_out);
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
static qp_err qp_plan_chunk_fits(const qp_problem *p, int64_t f, int64_t s, int64_t batch,
                                 qp_stage_id stage, double limit, qp_model *model, int *fits) {
  qp_model_dims dims;
  const qp_plan_pieces pieces = {f, s, batch, 0, 0};
  QP_CALL(qp_plan_model_sized(p, QP_MODEL_PIXEL_DIRECT, &pieces, model, fits, &dims));
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
static qp_err qp_plan_chunks(const qp_problem *p, int64_t batch, int64_t *fisher_chunk,
                             int64_t *spectra_chunk, qp_model *model) {
  const double limit = p->host_limit;
  const int64_t np = p->n_params;
  *fisher_chunk = *spectra_chunk = np;
  if (limit <= 0 && p->cfg->device_limit <= 0) {
    const qp_plan_pieces whole = {np, np, batch, 0, 0};
    QP_CALL(qp_plan_model(p, QP_MODEL_PIXEL_DIRECT, &whole, model, NULL));
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
      QP_CALL(qp_plan_chunk_fits(p, *fisher_chunk, *spectra_chunk, batch, stage[s], limit, model,
                                 &fits));
      if (fits) break;
      --*chunk[s];
    }
  }
  /* Distributed, every rank runs the same chunks: the smallest any rank needs. */
  QP_CALL(qp_plan_smallest_over_ranks(fisher_chunk));
  QP_CALL(qp_plan_smallest_over_ranks(spectra_chunk));
  const qp_plan_pieces chunked = {*fisher_chunk, *spectra_chunk, batch, 0, 0};
  QP_CALL(qp_plan_model(p, QP_MODEL_PIXEL_DIRECT, &chunked, model, NULL));
  return QP_OK;
}

/* Whether route `path` with `batch` maps on the device at once (and the pixel-direct chunks at
 * their least, 1, which the chunk search then raises: maps are batched only where no chunking
 * keeps them whole) keeps every stage's device peak inside memory.device_limit and, with
 * memory.host_limit, the host peak inside that; a plan that cannot be sized does not fit. */
static qp_err qp_plan_batch_fits(const qp_problem *p, qp_model_path path, int64_t batch,
                                 int64_t w_block, int host_too, qp_model *model, int *fits) {
  const int64_t chunk = path == QP_MODEL_PIXEL_DIRECT ? 1 : p->n_params;
  const qp_plan_pieces pieces = {chunk, chunk, batch, w_block, 0};
  QP_CALL(qp_plan_model_sized(p, path, &pieces, model, fits, NULL));
  if (!*fits) return QP_OK;
  *fits = (double)qp_model_peak_in(model, QP_SPACE_DEVICE) <= qp_plan_device_room(p) &&
          (!host_too || p->host_limit <= 0 ||
           (double)(qp_model_peak(model) + model->overhead_bytes) <= p->host_limit);
  return QP_OK;
}

/* A fit test of the planner's bisection: *fits for a piece of `size` (a map batch, a W
 * block), `how` the test's own parameters. */
typedef qp_err (*qp_plan_fit_test)(const qp_problem *p, const void *how, int64_t size, int *fits);

/* The largest size in 1..most that `test` accepts (0: none), for tests whose peaks fall as
 * the size does (every size below one that fits fits): a bisection. */
static qp_err qp_plan_largest_fitting(const qp_problem *p, qp_plan_fit_test test, const void *how,
                                      int64_t most, int64_t *largest) {
  int64_t lo = 0, hi = most; /* lo: the largest size known to fit (0: none yet) */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    int fits = 0;
    QP_CALL(test(p, how, mid, &fits));
    if (fits)
      lo = mid;
    else
      hi = mid - 1;
  }
  *largest = lo;
  return QP_OK;
}

/* qp_plan_batch_fits as a qp_plan_fit_test. The device peak falls with the batch, and so does
 * the host peak below n_maps (SMW keeps every map's V N^-1 x on the host once the maps are
 * batched). */
typedef struct qp_plan_batch_how {
  qp_model_path path;
  int64_t w_block;
  int host_too;
} qp_plan_batch_how;

static qp_err qp_plan_batch_test(const qp_problem *p, const void *how, int64_t batch, int *fits) {
  const qp_plan_batch_how *h = how;
  qp_model model;
  QP_CALL(qp_plan_batch_fits(p, h->path, batch, h->w_block, h->host_too, &model, fits));
  return QP_OK;
}

/* The map batch of route `path`: the maps a device matrix holds at once (docs/memory-model.md,
 * "Maps in batches"). n_maps on a host backend, without memory.device_limit, and whenever all
 * maps fit both limits; else the largest batch that fits both, or failing that the device
 * limit alone (the host limit check then names what does not fit), or 1 (the device limit
 * check then refuses the run, naming its stage and term). On a grid, the smallest batch of
 * any rank (a batch's leading columns are a block-cyclic matrix of their own at any width). */
static qp_err qp_plan_map_batch(const qp_problem *p, qp_model_path path, int64_t w_block,
                                int64_t *batch) {
  const int64_t n_maps = p->n_maps;
  *batch = n_maps;
  if (!qp_config_device_backend(p->cfg) || p->cfg->device_limit <= 0) return QP_OK;
  qp_model model;
  int fits = 0;
  QP_CALL(qp_plan_batch_fits(p, path, n_maps, w_block, 1, &model, &fits));
  if (!fits) {
    const qp_plan_batch_how both = {path, w_block, 1}, device_only = {path, w_block, 0};
    QP_CALL(qp_plan_largest_fitting(p, qp_plan_batch_test, &both, n_maps - 1, batch));
    if (*batch == 0)
      QP_CALL(qp_plan_largest_fitting(p, qp_plan_batch_test, &device_only, n_maps, batch));
    if (*batch == 0) *batch = 1;
  }
  QP_CALL(qp_plan_smallest_over_ranks(batch));
  return QP_OK;
}

/* Whether W in blocks of `units` x *(int64_t *)how columns (0: whole) keeps the device peaks of
 * basis_setup, where W is formed, and fisher_run, where it is read, inside memory.device_limit
 * less the device context (the backend's workspaces are terms of the model); the maps'
 * batch, planned after it, keeps spectra_run there. A plan that cannot be sized does not fit. */
static qp_err qp_plan_w_block_fits(const qp_problem *p, const void *how, int64_t units, int *fits) {
  const int64_t w_block = units * *(const int64_t *)how;
  qp_model model;
  const qp_plan_pieces pieces = {p->n_params, p->n_params, p->n_maps, w_block, 0};
  QP_CALL(qp_plan_model_sized(p, QP_MODEL_HARMONIC_PROJECTED, &pieces, &model, fits, NULL));
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
static qp_err qp_plan_w_block(const qp_problem *p, int64_t *w_block) {
  *w_block = 0;
  const qp_grid *grid = qp_plan_grid(p);
  const int64_t unit = grid ? (int64_t)grid->block * grid->npcol : 1;
  const int64_t most = (p->n_modes - 1) / unit; /* units in a block narrower than W */
  if (!qp_config_device_backend(p->cfg) || p->cfg->device_limit <= 0 || most < 1) return QP_OK;
  int fits = 0;
  QP_CALL(qp_plan_w_block_fits(p, &unit, 0, &fits));
  if (!fits) {
    int64_t units = 0;
    QP_CALL(qp_plan_largest_fitting(p, qp_plan_w_block_fits, &unit, most, &units));
    *w_block = (units > 0 ? units : 1) * unit;
  }
  /* Ranks whose W fits whole say n_modes, so that the smallest is another rank's block. */
  int64_t mine = *w_block > 0 ? *w_block : p->n_modes;
  QP_CALL(qp_plan_smallest_over_ranks(&mine));
  *w_block = mine < p->n_modes ? mine : 0;
  return QP_OK;
}

/* p->model again at the dimensions of p->model_dims (the overhead kept): the host panel is
 * planned on the chosen route's model (qp_plan_host_panel). */
static qp_err qp_plan_predict_again(qp_problem *p) {
  const size_t overhead = p->model.overhead_bytes;
  size_t parts[3];
  memcpy(parts, p->model.overhead_parts, sizeof parts);
  QP_CALL(qp_model_predict(&p->model_dims, &p->model));
  p->model.overhead_bytes = overhead;
  memcpy(p->model.overhead_parts, parts, sizeof parts);
  return QP_OK;
}

qp_err qp_plan_remodel(qp_problem *p) {
  const qp_model_dims d = p->model_dims;
  const qp_plan_pieces pieces = {d.fisher_chunk, d.spectra_chunk, d.map_batch, d.w_block,
                                 d.host_panel};
  QP_CALL(qp_plan_model(p, d.path, &pieces, &p->model, &p->model_dims));
  return QP_OK;
}

/* Whether the route's plan with its host windows in panels of `panel` local lines (the pixel
 * matrices' columns, V^T's rows, Z's columns: memory_model.h) keeps the host peak inside the
 * limit the run plans to. */
static qp_err qp_plan_host_panel_fits(const qp_problem *p, const void *how, int64_t panel,
                                      int *fits) {
  (void)how;
  qp_model_dims d = p->model_dims;
  d.host_panel = panel;
  qp_model model;
  QP_CALL(qp_model_predict(&d, &model));
  *fits = (double)(qp_model_peak(&model) + p->model.overhead_bytes) <= p->host_limit;
  return QP_OK;
}

/* The host panel of a device run (docs/memory-model.md, "Pixel matrices in panels"): 0 (all
 * lines at once, the rule) on a host backend, without a host limit, and whenever the plan
 * fits it whole; else the widest panel of local lines that fits, or failing that a panel of
 * one line (the limit check then refuses the run, naming the stage and term that stay above
 * it). On a grid, the narrowest any rank chose. Planned on p->model's route after its other
 * pieces, for each route qp_plan_route weighs. */
static qp_err qp_plan_host_panel(qp_problem *p) {
  int64_t panel = 0;
  const int64_t n = p->n_pix;
  if (qp_config_device_backend(p->cfg) && p->host_limit > 0 &&
      (double)(qp_model_peak(&p->model) + p->model.overhead_bytes) > p->host_limit) {
    QP_CALL(qp_plan_largest_fitting(p, qp_plan_host_panel_fits, NULL, n - 1, &panel));
    if (panel == 0) panel = 1;
  }
  int64_t mine = panel > 0 ? panel : n; /* whole: n, so that another rank's panel is smaller */
  QP_CALL(qp_plan_smallest_over_ranks(&mine));
  p->model_dims.host_panel = mine < n ? mine : 0;
  if (p->model_dims.host_panel > 0) QP_CALL(qp_plan_predict_again(p));
  return QP_OK;
}

/* Leading flop counts of the three routes (QML.md 3, "Choosing the path"). */
static double qp_route_cost(const qp_problem *p, qp_model_path path) {
  const double n = (double)p->n_pix, nm = (double)p->n_modes, np = (double)p->n_params;
  const int dense = p->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  switch (path) {
  case QP_MODEL_PIXEL_DIRECT: return n * n * n / 3.0 + (np + 1.0) * 2.0 * n * n * n;
  case QP_MODEL_HARMONIC_SMW:
    return nm * nm * n + 2.3 * nm * nm * nm + (dense ? n * n * n / 3.0 + nm * n * n : 0.0);
  case QP_MODEL_HARMONIC_PROJECTED: return n * n * n / 3.0 + 2.0 * nm * n * n + nm * nm * n;
  }
  return 0;
}

/* "memory.host_limit 1.000 GiB and memory.device_limit 0.500 GiB": the limits the plan keeps to. */
static const char *qp_plan_limits_text(const qp_problem *p) {
  static _Thread_local char text[160];
  int used = 0;
  text[0] = '\0';
  if (p->host_limit > 0)
    used = snprintf(text, sizeof text, "%s %s",
                    p->limit_from_job ? "the job's memory limit" : "memory.host_limit",
                    qp_bytes_readable(p->host_limit).text);
  if (p->cfg->device_limit > 0)
    snprintf(text + used, sizeof text - (size_t)used, "%smemory.device_limit %s",
             used ? " and " : "", qp_bytes_readable(p->cfg->device_limit).text);
  return text;
}

/* Appends to p->path_reason (printf-style), cutting what does not fit. */
__attribute__((format(printf, 2, 3))) static void qp_plan_reason_append(qp_problem *p,
                                                                        const char *format, ...) {
  const size_t used = strnlen(p->path_reason, sizeof p->path_reason);
  if (used + 1 >= sizeof p->path_reason) return;
  va_list args;
  va_start(args, format);
  (void)vsnprintf(p->path_reason + used, sizeof p->path_reason - used, format, args);
  va_end(args);
}

/* Picks the route: the config's, or among those it allows the cheapest whose predicted peak
 * fits memory.host_limit (the cheapest of all when none fits: the limit check then refuses
 * it, saying by how much). Writes the reason to p->path_reason and sets p->model. */
qp_err qp_plan_route(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  static const char *const names[3] = {"pixel_direct", "harmonic (smw)", "harmonic (projected)"};
  int allowed[3] = {cfg->path != QP_PATH_HARMONIC, cfg->path != QP_PATH_PIXEL_DIRECT,
                    cfg->path != QP_PATH_PIXEL_DIRECT};
  if (cfg->harmonic_method == 1) allowed[2] = 0;
  if (cfg->harmonic_method == 2) allowed[1] = 0;
  if (p->n_modes == 0) allowed[1] = allowed[2] = 0;
  QP_CHECK(allowed[0] || allowed[1] || allowed[2], QP_ERR_INPUT,
           "config '%s': the harmonic path has no modes (lmax %d)", cfg->source, cfg->lmax);
  /* SMW inverts N: a noise too ill-conditioned for cfg->accuracy rules it out when another
   * route is allowed (conditioning.h); when it is the only one, its stage refuses the run. */
  if (p->smw_refused[0] && allowed[1] && (allowed[0] || allowed[2])) allowed[1] = 0;
  double cost[3], peak[3];
  int best = -1, best_fit = -1;
  /* Each route's pieces; the pixel-direct chunks are the only ones below n_params. */
  qp_plan_pieces pieces[3];
  for (int r = 0; r < 3; ++r)
    pieces[r] = (qp_plan_pieces){p->n_params, p->n_params, 0, 0, 0};
  int64_t *fisher_chunk = &pieces[0].fisher_chunk, *spectra_chunk = &pieces[0].spectra_chunk;
  /* A route whose model has a term beyond 2^56 bytes cannot be sized: it is left out (the
   * same on every rank: the model decides on whole sizes); when no route is left, the first
   * one's error is the plan's. */
  char unsized[3][128] = {"", "", ""}, first_unsized[1024] = "";
  for (int r = 0; r < 3; ++r) {
    if (!allowed[r]) continue;
    qp_plan_pieces *k = &pieces[r];
    qp_err err = r == QP_MODEL_HARMONIC_PROJECTED ? qp_plan_w_block(p, &k->w_block) : QP_OK;
    if (err == QP_OK) err = qp_plan_map_batch(p, (qp_model_path)r, k->w_block, &k->map_batch);
    if (err == QP_OK)
      err =
          r == 0 ? qp_plan_chunks(p, k->map_batch, fisher_chunk, spectra_chunk, &p->model) : QP_OK;
    /* The route's model with its own pieces. */
    if (err == QP_OK) err = qp_plan_model(p, (qp_model_path)r, k, &p->model, &p->model_dims);
    if (err == QP_ERR_INPUT && p->model.oversize_term[0]) {
      snprintf(unsized[r], sizeof unsized[r], "term '%s' needs %.3g bytes", p->model.oversize_term,
               p->model.oversize_bytes);
      if (!first_unsized[0])
        snprintf(first_unsized, sizeof first_unsized, "%s", qp_error_message());
      qp_error_clear();
      continue;
    }
    QP_CALL(err);
    /* Its host windows in panels where the host limit asks. */
    QP_CALL(qp_plan_host_panel(p));
    k->host_panel = p->model_dims.host_panel;
    cost[r] = qp_route_cost(p, (qp_model_path)r);
    if (r == 0 && *fisher_chunk < p->n_params) {
      /* Streaming re-forms the later products: ~n_params^2 / (2 chunk) more of them. */
      double extra = 0;
      for (int64_t first = *fisher_chunk; first < p->n_params; first += *fisher_chunk)
        extra += (double)(p->n_params - first);
      cost[r] += extra * 2.0 * pow((double)p->n_pix, 3);
    }
    peak[r] = (double)(qp_model_peak(&p->model) + p->model.overhead_bytes);
    QP_CALL(qp_comm_max(&peak[r], 1)); /* distributed: the largest rank decides */
    /* Each rank's device holds its own part: the largest rank decides, as for the host. */
    double device_peak = (double)qp_model_peak_in(&p->model, QP_SPACE_DEVICE);
    QP_CALL(qp_comm_max(&device_peak, 1));
    if (best < 0 || cost[r] < cost[best]) best = r;
    if ((p->host_limit <= 0 || peak[r] <= p->host_limit) &&
        (cfg->device_limit <= 0 || device_peak <= qp_plan_device_room(p)) &&
        (best_fit < 0 || cost[r] < cost[best_fit]))
      best_fit = r;
  }
  QP_CHECK(best >= 0, QP_ERR_INPUT, "config '%s': %s", cfg->source, first_unsized);
  const int chosen = best_fit >= 0 ? best_fit : best;
  int n_allowed = allowed[0] + allowed[1] + allowed[2];
  p->path_reason[0] = '\0';
  qp_plan_reason_append(p, "%s: ", names[chosen]);
  if (n_allowed == 1) {
    qp_plan_reason_append(p, "the only route the config allows");
  } else {
    qp_plan_reason_append(p, "%s leading cost of the routes allowed",
                          chosen == best ? "lowest" : "lowest fitting the memory limit:");
    for (int r = 0; r < 3; ++r)
      if (allowed[r] && unsized[r][0])
        qp_plan_reason_append(p, "; %s: cannot be sized (%s)", names[r], unsized[r]);
      else if (allowed[r])
        qp_plan_reason_append(p, "; %s %.2e flop, peak %s", names[r], cost[r],
                              qp_bytes_readable(peak[r]).text);
  }
  if (p->smw_refused[0] && !allowed[1])
    qp_plan_reason_append(p, "; harmonic (smw) skipped: %s", p->smw_refused);
  p->path_used = chosen == 0 ? QP_PATH_PIXEL_DIRECT : QP_PATH_HARMONIC;
  p->smw = chosen == 1;
  p->plan_flops = cost[chosen];
  /* The chosen route's model with the pieces it was weighed with, its host panel included. */
  const qp_plan_pieces *k = &pieces[chosen];
  QP_CALL(qp_plan_model(p, (qp_model_path)chosen, k, &p->model, &p->model_dims));
  if (chosen == 0 && (k->fisher_chunk < p->n_params || k->spectra_chunk < p->n_params))
    qp_plan_reason_append(p,
                          "; chunks for %s: %lld of %lld products held in fisher_run, %lld "
                          "bin matrices at a time in spectra_run",
                          qp_plan_limits_text(p), (long long)k->fisher_chunk,
                          (long long)p->n_params, (long long)k->spectra_chunk);
  if (qp_model_w_chunked(&p->model_dims))
    qp_plan_reason_append(p, "; W in blocks of %lld of %lld columns on the device for %s",
                          (long long)k->w_block, (long long)p->n_modes, qp_plan_limits_text(p));
  if (k->map_batch < p->n_maps)
    qp_plan_reason_append(p, "; maps in batches of %lld of %lld on the device for %s",
                          (long long)k->map_batch, (long long)p->n_maps, qp_plan_limits_text(p));
  if (p->model_dims.host_panel > 0) {
    char of[64] = "each rank's local lines";
    if (!qp_plan_grid(p)) snprintf(of, sizeof of, "%lld", (long long)p->n_pix);
    qp_plan_reason_append(p, "; host windows in panels of %lld of %s (%s) for %s",
                          (long long)p->model_dims.host_panel, of,
                          qp_plan_panel_lines(&p->model_dims), qp_plan_limits_text(p));
  }
  return QP_OK;
}

const char *qp_plan_panel_lines(const qp_model_dims *d) {
  /* W's field blocks are host windows unless W was formed in blocks on the host itself. */
  const int fields = !qp_model_w_chunked(d);
  switch (d->path) {
  case QP_MODEL_PIXEL_DIRECT: return "columns of the pixel matrices, rows of the maps";
  case QP_MODEL_HARMONIC_SMW:
    return "columns of the pixel matrices, rows of V^T and the maps, columns of I + K Lambda, "
           "G and W's field blocks";
  default:
    return fields ? "columns of the pixel matrices, rows of V^T and the maps, columns of Z and "
                    "W's field blocks"
                  : "columns of the pixel matrices, rows of V^T and the maps, columns of Z";
  }
}

void qp_plan_smw_noise_check(qp_problem *p, const double *variance) {
  /* C's conditioning as SMW bounds it (harmonic_route.c, qp_basis_smw), in the fields' units:
   * known from the variances and the C_ell alone, so that `auto` can leave SMW before
   * anything is built. N itself, diagonal, is inverted exactly: only recorded. */
  const qp_run_scale fields = qp_field_scale(p, p->cfg->lmax_signal + 1, p->cfg->lmax_signal, 1);
  double rcond = 0.0, noise_max = 0.0;
  qp_scaled_noise_diagonal(p, &fields, variance, &rcond, &noise_max);
  p->rcond[QP_RCOND_NOISE] = rcond;
  const double floor = qp_rcond_floor(p->cfg->accuracy);
  const double rcond_c = qp_smw_covariance_rcond(p, &fields, rcond, noise_max);
  p->smw_refused[0] = '\0';
  if (!(isfinite(rcond_c) && rcond_c >= floor))
    snprintf(p->smw_refused, sizeof p->smw_refused,
             "its bound of rcond(C), rcond(N) / (1 + lambda_max(S) / lambda_max(N)) = %.3g, "
             "is below %.3g (accuracy %.1e)",
             rcond_c, floor, p->cfg->accuracy);
}

qp_err qp_plan_reroute_smw(qp_problem *p) {
  if (p->path_used != QP_PATH_HARMONIC || !p->smw || !p->noise_variance || p->switched)
    return QP_OK;
  qp_plan_smw_noise_check(p, p->noise_variance);
  if (!p->smw_refused[0]) return QP_OK;
  QP_CALL(qp_plan_route(p));
  if (p->smw) return QP_OK; /* the only route allowed: basis_setup refuses it */
  QP_CALL(qp_comm_agree(qp_plan_check_limit(p)));
  if (p->progress) fprintf(stderr, "[qmlpipe] path changed to %s\n", p->path_reason);
  return QP_OK;
}

/* The stage of a space's peak and its largest term there: what the user would have to shrink. */
static qp_stage_id qp_plan_worst(const qp_model *m, qp_space space, const qp_model_term **largest) {
  qp_stage_id worst = QP_STAGE_COVARIANCE_SETUP;
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    if (qp_model_stage_peak_in(m, s, space) > qp_model_stage_peak_in(m, worst, space))
      worst = (qp_stage_id)s;
  *largest = NULL;
  for (int i = 0; i < m->n_terms; ++i)
    if (m->terms[i].space == space && qp_model_term_alive(&m->terms[i], worst) &&
        (!*largest || m->terms[i].bytes > (*largest)->bytes))
      *largest = &m->terms[i];
  return worst;
}

/* What a device-limit refusal says of W: its block when the projection route forms it in
 * blocks, that SMW's LU cannot be chunked on the SMW route, nothing otherwise. */
static const char *qp_plan_w_note(const qp_problem *p) {
  static _Thread_local char text[160];
  text[0] = '\0';
  if (qp_model_w_chunked(&p->model_dims))
    snprintf(text, sizeof text, ", W in blocks of %lld of %lld columns",
             (long long)p->model_dims.w_block, (long long)p->n_modes);
  else if (p->model_dims.path == QP_MODEL_HARMONIC_SMW)
    snprintf(text, sizeof text,
             "; SMW's LU of I + K Lambda needs its n_modes^2 whole: harmonic_method: projected "
             "forms W in blocks");
  return text;
}

/* memory.device_limit: the device context (memory.device_overhead, untracked) plus the device's
 * peak (its matrices and the backend's own buffers) within it, or a refusal naming the context
 * or the stage and its largest device term, before anything is allocated. */
static qp_err qp_plan_check_device_limit(const qp_problem *p) {
  const double limit = p->cfg->device_limit, context = qp_plan_device_overhead(p);
  const qp_model *m = &p->model;
  const double need = (double)qp_model_peak_in(m, QP_SPACE_DEVICE);
  if (limit <= 0 || need + context <= limit) return QP_OK;
  QP_CHECK(context < limit, QP_ERR_BUDGET,
           "memory.device_limit %s does not even hold the device context (%s, %s: "
           "the CUDA context and library handles, outside the tracked bytes); nothing was "
           "allocated. Raise the limit, or measure the context and set memory.device_overhead",
           qp_bytes_readable(limit).text, qp_bytes_readable(context).text,
           qp_plan_device_overhead_source(p));
  const qp_model_term *largest = NULL;
  const qp_stage_id worst = qp_plan_worst(m, QP_SPACE_DEVICE, &largest);
  /* The backend's own buffers in that stage (library workspaces, pivots), the largest named. */
  const qp_model_term *own = NULL;
  double own_bytes = 0;
  for (int i = 0; i < m->n_terms; ++i) {
    const qp_model_term *t = &m->terms[i];
    if (t->space != QP_SPACE_DEVICE || !qp_model_backend_term(t) || !qp_model_term_alive(t, worst))
      continue;
    own_bytes += (double)t->bytes;
    if (!own || t->bytes > own->bytes) own = t;
  }
  QP_FAIL(QP_ERR_BUDGET,
          "predicted device peak %s (stage %s, largest device term '%s' %s; the "
          "backend's own buffers %s, largest '%s'; maps in batches of %lld of %lld%s) "
          "plus the device context %s (%s) exceeds memory.device_limit %s by %s; "
          "nothing was allocated for it. The part that cannot be chunked does not fit the "
          "device: raise the limit, use a device with more memory, mask fewer pixels, or use "
          "backend cpu or dist",
          qp_bytes_readable(need).text, qp_stage_name(worst), largest ? largest->name : "?",
          qp_bytes_readable(largest ? (double)largest->bytes : 0.0).text,
          qp_bytes_readable(own_bytes).text, own ? own->name : "none",
          (long long)qp_model_map_batch(&p->model_dims), (long long)p->n_maps, qp_plan_w_note(p),
          qp_bytes_readable(context).text, qp_plan_device_overhead_source(p),
          qp_bytes_readable(limit).text, qp_bytes_readable(need + context - limit).text);
}

qp_err qp_plan_check_limit(const qp_problem *p) {
  QP_CALL(qp_plan_check_device_limit(p));
  const double limit = p->host_limit;
  if (limit <= 0) return QP_OK;
  const qp_model *m = &p->model;
  const size_t need = qp_model_peak(m) + m->overhead_bytes; /* below 2^63: model.h */
  if ((double)need <= limit) return QP_OK;
  const qp_model_term *largest = NULL;
  const qp_stage_id worst = qp_plan_worst(m, QP_SPACE_HOST, &largest);
  const qp_bytes_text need_text = qp_bytes_readable((double)need),
                      largest_text = qp_bytes_readable(largest ? (double)largest->bytes : 0.0),
                      overhead_text = qp_bytes_readable((double)m->overhead_bytes),
                      limit_text = qp_bytes_readable(limit),
                      by_text = qp_bytes_readable((double)need - limit);
  /* On a device backend the plan's panels are its least host side already: say so. */
  char panels[192] = "";
  if (p->model_dims.host_panel > 0)
    snprintf(panels, sizeof panels,
             "; the host windows already in panels of %lld local line%s (%s)",
             (long long)p->model_dims.host_panel, p->model_dims.host_panel == 1 ? "" : "s",
             qp_plan_panel_lines(&p->model_dims));
  if (p->limit_from_job)
    QP_FAIL(QP_ERR_BUDGET,
            "predicted peak %s (stage %s, largest term '%s' %s, overhead %s%s) "
            "exceeds the job's memory limit %s (%s) by %s; "
            "nothing was allocated for it. Ask the batch system for more memory per rank, "
            "mask fewer pixels, or use fewer bins",
            need_text.text, qp_stage_name(worst), largest ? largest->name : "?", largest_text.text,
            overhead_text.text, panels, limit_text.text, p->limit_source, by_text.text);
  QP_FAIL(QP_ERR_BUDGET,
          "predicted peak %s (stage %s, largest term '%s' %s, overhead %s%s) "
          "exceeds memory.host_limit %s by %s; nothing was allocated for it. "
          "Raise the limit, mask fewer pixels, or use fewer bins",
          need_text.text, qp_stage_name(worst), largest ? largest->name : "?", largest_text.text,
          overhead_text.text, panels, limit_text.text, by_text.text);
}
