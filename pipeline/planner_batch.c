/* planner_batch.c: the maps' batch (planner_internal.h, docs/memory-model.md "The maps: read
 * where they are used, in batches" and "Maps in batches"): the maps a per-map matrix holds at
 * once, by default the largest batch whose terms stay within 1/16 of the route's largest
 * matrix, under memory.device_limit on a device backend the largest that fits the limits. */
#include "planner_internal.h"

#include <string.h>

#include "basis_terms.h"
#include "covariance_terms.h"
#include "spectra_terms.h"

/* Whether route `path` with `batch` maps on the device at once (and the pixel-direct chunks at
 * their least, 1, which the chunk search then raises: maps are batched only where no chunking
 * keeps them whole) keeps every stage's device peak inside memory.device_limit and, with
 * memory.host_limit, the host peak inside that; a plan that cannot be sized does not fit. */
static qp_err qp_plan_batch_fits(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                                 int64_t batch, int64_t w_block, int host_too, qp_model *model,
                                 int *fits) {
  const int64_t chunk = path == QP_MODEL_PIXEL_DIRECT ? 1 : p->n_params;
  const qp_plan_pieces pieces = {chunk, chunk, batch, w_block, 0, 0};
  QP_CALL(qp_plan_model_sized(p, plan, path, &pieces, model, fits, NULL));
  if (!*fits) return QP_OK;
  *fits = (double)qp_model_peak_in(model, QP_SPACE_DEVICE) <= qp_plan_device_room(p) &&
          (!host_too || plan->host_limit <= 0 ||
           (double)(qp_model_peak(model) + model->overhead_bytes) <= plan->host_limit);
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

static qp_err qp_plan_batch_test(const qp_problem *p, const qp_plan *plan, const void *how,
                                 int64_t batch, int *fits) {
  const qp_plan_batch_how *h = how;
  qp_model model;
  QP_CALL(qp_plan_batch_fits(p, plan, h->path, batch, h->w_block, h->host_too, &model, fits));
  return QP_OK;
}

/* The default batch's share of the route's largest matrix: the terms that hold a batch of
 * maps take at most 1/QP_PLAN_BATCH_SHARE of it (docs/memory-model.md, "Maps in batches"). */
enum { QP_PLAN_BATCH_SHARE = 16 };

/* 1 for a term whose bytes grow with the map batch: the per-map matrices of spectra_run (SMW:
 * of basis_setup) and a batch's z whole on every rank. */
static int qp_plan_batch_term(const qp_model_term *t) {
  static const char *const names[] = {
      QP_TERM_WEIGHTED_MAPS, QP_TERM_WEIGHTED_MAPS_B, QP_TERM_MODE_MAPS,  QP_TERM_MODE_MAPS_B,
      QP_TERM_MODE_MAPS_ALL, QP_TERM_MODE_MAPS_ALL_B, QP_TERM_BIN_PRODUCT};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (strcmp(t->name, names[i]) == 0) return 1;
  return 0;
}

/* 1 for a term that is one of the route's single large matrices, which the default batch is
 * measured against: C, N or N_eff (n_pix^2), V^T (n_pix n_modes), K or W (n_modes^2). */
static int qp_plan_matrix_term(const qp_model_term *t) {
  static const char *const names[] = {QP_TERM_COVARIANCE, QP_TERM_NOISE,  QP_TERM_NOISE_EFF,
                                      QP_TERM_V,          QP_TERM_KERNEL, QP_TERM_KERNEL_HOST};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (strcmp(t->name, names[i]) == 0) return 1;
  return 0;
}

/* The route and W block the default batch is sought for. */
typedef struct qp_plan_default_how {
  qp_model_path path;
  int64_t w_block;
} qp_plan_default_how;

/* The default batch's test, a qp_plan_fit_test (how: a qp_plan_default_how): whether this rank's
 * terms that hold a batch of `batch` maps (every stage's, each once) take at most 1/16 of the
 * route's largest single matrix on this rank (qp_plan_matrix_term). They grow with the batch
 * and the matrix does not: a bisection finds the largest batch. A plan that cannot be sized
 * does not fit. */
static qp_err qp_plan_default_batch_test(const qp_problem *p, const qp_plan *plan, const void *how,
                                         int64_t batch, int *fits) {
  const qp_plan_default_how *h = how;
  const qp_model_path path = h->path;
  const qp_plan_pieces pieces = {p->n_params, p->n_params, batch, h->w_block, 0, 0};
  qp_model model;
  QP_CALL(qp_plan_model_sized(p, plan, path, &pieces, &model, fits, NULL));
  if (!*fits) return QP_OK;
  size_t held = 0, largest = 0;
  for (int i = 0; i < model.n_terms; ++i) {
    const qp_model_term *t = &model.terms[i];
    if (qp_plan_batch_term(t)) held += t->bytes;
    if (qp_plan_matrix_term(t) && t->bytes > largest) largest = t->bytes;
  }
  *fits = (double)held * QP_PLAN_BATCH_SHARE <= (double)largest;
  return QP_OK;
}

/* Whether route `path` reads its maps in batches of the default size: every route but SMW's
 * cross-spectra, which hold every map of both sets at once (planner_route.c). SMW's batches
 * keep every map's V N_eff^-1 x (n_modes per map) on the host from basis_setup to spectra_run,
 * where one batch would hold it in mode_maps beside the whole batch of n_pix x n_maps whitened
 * maps. */
static int qp_plan_batches_by_default(const qp_problem *p, qp_model_path path) {
  return path != QP_MODEL_HARMONIC_SMW || p->cfg->n_maps2 == 0;
}

/* The default map batch of route `path` (docs/memory-model.md, "Maps in batches"): the largest
 * whose batch terms stay within 1/16 of the route's largest matrix (at least 1, at most
 * n_maps), so that the maps' memory does not grow with n_maps; n_maps where the route does not
 * batch by default. On a grid, the smallest of any rank's. */
static qp_err qp_plan_default_batch(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                                    int64_t w_block, int64_t *batch) {
  *batch = p->n_maps;
  if (!qp_plan_batches_by_default(p, path)) return QP_OK;
  const qp_plan_default_how how = {path, w_block};
  int64_t largest = 0;
  QP_CALL(qp_plan_largest_fitting(p, plan, qp_plan_default_batch_test, &how, p->n_maps, &largest));
  *batch = largest > 0 ? largest : 1;
  QP_CALL(qp_plan_smallest_over_ranks(batch));
  return QP_OK;
}

/* The map batch of route `path`: the maps a per-map matrix holds at once (docs/memory-model.md,
 * "Maps in batches"). Without memory.device_limit on a device backend, the default batch
 * (qp_plan_default_batch). With it, the batch fits the limits instead: n_maps whenever all
 * maps fit both; else the largest batch that fits both, or failing that the device limit alone
 * (the host limit check then names what does not fit), or 1 (the device limit check then
 * refuses the run, naming its stage and term). On a grid, the smallest batch of any rank (a
 * batch's leading columns are a block-cyclic matrix of their own at any width). */
qp_err qp_plan_map_batch(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                         int64_t w_block, int64_t *batch, int64_t *default_batch) {
  const int64_t n_maps = p->n_maps;
  *batch = *default_batch = n_maps;
  if (!qp_config_device_backend(p->cfg) || p->cfg->device_limit <= 0) {
    QP_CALL(qp_plan_default_batch(p, plan, path, w_block, default_batch));
    *batch = *default_batch;
    return QP_OK;
  }
  qp_model model;
  int fits = 0;
  QP_CALL(qp_plan_batch_fits(p, plan, path, n_maps, w_block, 1, &model, &fits));
  if (!fits) {
    const qp_plan_batch_how both = {path, w_block, 1}, device_only = {path, w_block, 0};
    QP_CALL(qp_plan_largest_fitting(p, plan, qp_plan_batch_test, &both, n_maps - 1, batch));
    if (*batch == 0)
      QP_CALL(qp_plan_largest_fitting(p, plan, qp_plan_batch_test, &device_only, n_maps, batch));
    if (*batch == 0) *batch = 1;
  }
  QP_CALL(qp_plan_smallest_over_ranks(batch));
  return QP_OK;
}
