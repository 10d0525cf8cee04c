/* planner_internal.h: what the planner's files share (planner.h says which does what); for
 * them alone. */
#ifndef QP_PLANNER_INTERNAL_H
#define QP_PLANNER_INTERNAL_H

#include "planner.h"

/* The pieces a plan cuts a route into (memory_model.h's dimensions of the same names). */
typedef struct qp_plan_pieces {
  int64_t fisher_chunk, spectra_chunk, map_batch, w_block, host_panel;
  int64_t product_panel; /* projection without W: (l, m) columns of its products at once */
} qp_plan_pieces;

/* The grid the plan is for: `plan --ranks`'s, the run's on a distributed backend, or NULL. */
const qp_grid *qp_plan_grid(const qp_problem *p, const qp_plan *plan);
/* The device bytes the tracked terms may use: memory.device_limit less the device context
 * (0: no limit; negative when the context alone does not fit: nothing does). */
double qp_plan_device_room(const qp_problem *p);
/* The model of one route, pixel-direct, SMW or projection, in `pieces`, with its overhead;
 * its dimensions to *dims_out when that is not NULL. */
qp_err qp_plan_model(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                     const qp_plan_pieces *pieces, qp_model *model, qp_model_dims *dims_out);
/* qp_plan_model for a fit test: a plan with a term beyond 2^56 bytes cannot be sized, *sized
 * 0, and its error is forgotten (smaller pieces may do). */
qp_err qp_plan_model_sized(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                           const qp_plan_pieces *pieces, qp_model *model, int *sized,
                           qp_model_dims *dims_out);
/* Distributed, every rank runs the same pieces: *size becomes the smallest any rank chose. */
qp_err qp_plan_smallest_over_ranks(int64_t *size);
/* A fit test of the planner's bisection: *fits for a piece of `size` (a map batch, a W
 * block, a panel), `how` the test's own parameters. */
typedef qp_err (*qp_plan_fit_test)(const qp_problem *p, const qp_plan *plan, const void *how,
                                   int64_t size, int *fits);
/* The largest size in 1..most that `test` accepts (0: none), for tests whose peaks fall as the
 * size does: a bisection. */
qp_err qp_plan_largest_fitting(const qp_problem *p, const qp_plan *plan, qp_plan_fit_test test,
                               const void *how, int64_t most, int64_t *largest);
/* The pixel-direct chunks for the limits (planner_chunks.c says how), and their model. */
qp_err qp_plan_chunks(const qp_problem *p, const qp_plan *plan, int64_t batch,
                      int64_t *fisher_chunk, int64_t *spectra_chunk, qp_model *model);
/* The map batch of route `path` (planner_batch.c): the default batch (also to *default_batch:
 * n_maps under memory.device_limit), or under memory.device_limit the largest that fits
 * (n_maps: all at once). */
qp_err qp_plan_map_batch(const qp_problem *p, const qp_plan *plan, qp_model_path path,
                         int64_t w_block, int64_t *batch, int64_t *default_batch);
/* Projection without W (qp_model_w_windows): the panel of its products, *panel (0: whole), for
 * the route's pieces k; *smallest_peak, unless NULL, the peak at the narrowest panel. */
qp_err qp_plan_product_panel(const qp_problem *p, const qp_plan *plan, const qp_plan_pieces *k,
                             int64_t *panel, double *smallest_peak);
/* The projection route's W block under memory.device_limit (0: W whole). */
qp_err qp_plan_w_block(const qp_problem *p, const qp_plan *plan, int64_t *w_block);
/* The host panel of plan->model's route under the host limit on a device backend, into
 * plan->model_dims (and plan->model predicted again when it panels). */
qp_err qp_plan_host_panel(const qp_problem *p, qp_plan *plan);
/* "memory.host_limit 1.000 GiB and memory.device_limit 0.500 GiB": the limits the plan keeps
 * to, for the reason's text. */
const char *qp_plan_limits_text(const qp_problem *p, const qp_plan *plan);

#endif
