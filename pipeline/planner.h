/* planner.h: builds the plan (plan.h) of a run, once, before the first stage: the memory
 * limit it keeps to (qp_plan_limit, its one writer), the route (pixel-direct, harmonic SMW,
 * harmonic projection) with the SMW conditioning rule and its re-route, the chunks for the
 * limits and the memory model; and the limit check. Called by the plan's owner: the driver
 * (`run`) and the budget/plan commands, after inputs.c has read what the plan needs.
 *   planner.c         the limit; the backend's figures the plan reads
 *   planner_route.c   the route, its reason, the SMW check and re-route
 *   planner_chunks.c  the model of a route and its pieces (chunks, W blocks, panels)
 *   planner_batch.c   the maps' batch (the default rule, or memory.device_limit's fit)
 *   planner_check.c   the limit check's refusals */
#ifndef QP_PLANNER_H
#define QP_PLANNER_H

#include "job_limit.h"
#include "problem.h"

/** What the plan reads of a noise variance map (noise.variance_map), read at plan time by the
 *  reading rank and shared (inputs.c): each field's mean (T's entries; Q's and U's), least
 *  and largest variance over its observed pixels, in the data vector's order. */
typedef struct qp_noise_figures {
  int known; /* 1: read, every value finite and positive; 0: none (scalar variances, a dense
                N, or a map covariance_setup will refuse and name) */
  double mean[2], least[2], most[2];
} qp_noise_figures;

/** What decides the host memory limit: the config's memory.host_limit as the file says it,
 *  the budget/plan commands' --mem-per-node share, and the job's limit as `run` finds it. */
typedef struct qp_limit_inputs {
  double config;           /* memory.host_limit (0: not set) */
  double per_rank;         /* budget/plan: --mem-per-node / --ranks-per-node (0: not given),
                              used without memory.host_limit */
  const qp_job_limit *job; /* run: this rank's job limit (job_limit.h, the config's folded
                              in), or NULL; then agreed over the ranks (collective) */
} qp_limit_inputs;

/** Decides the host limit, its source and whether the job decided it, into the plan: the one
 *  writer of plan->host_limit. With a job limit, the smallest over the ranks (collective: the
 *  ranks must choose the same route and chunks). */
qp_err qp_plan_limit(const qp_limit_inputs *in, qp_plan *plan);

/** The plan of the problem's inputs (inputs.c, qp_inputs_plan) for the limit already in
 *  `plan`: the switch, the SMW check of scalar variances, the route (qp_plan_route) and, when
 *  it is SMW and the variance map's `noise` figures rule SMW out, the route again without it
 *  (plan->rerouted). The owner copies plan->noise_rcond into the problem's rcond of N. */
qp_err qp_plan_build(const qp_problem *p, const qp_noise_figures *noise, qp_plan *plan);
/** Picks the route: the config's, or among those it allows the cheapest whose predicted peak
 *  fits the memory limit (the cheapest of all when none fits: the limit check then refuses
 *  it, saying by how much), with the pixel-direct chunks for the limit. Writes the reason to
 *  plan->path_reason and sets plan->model and plan->model_dims. */
qp_err qp_plan_route(const qp_problem *p, qp_plan *plan);
/** The model again for the route and chunks already planned, for another rank of
 *  plan->grid (budget/plan --ranks). */
qp_err qp_plan_remodel(const qp_problem *p, qp_plan *plan);
/** The width (columns) of the widest BLAS call of `path`: n_pix where an n_pix x n_pix matrix
 *  is factored or multiplied (C; N or N_eff when dense), n_modes on the SMW route with a
 *  diagonal N_eff. The warm-up (driver.h) and the default overhead follow it. */
int64_t qp_plan_blas_width(const qp_problem *p, const qp_plan *plan, qp_model_path path);
/** The device context the plan reserves on a device backend (bytes): memory.device_overhead,
 *  else the backend's default (its row, qp_backend.context_bytes); 0 on a host backend.
 *  memory.device_limit less it is what the tracked device terms may use. */
double qp_plan_device_overhead(const qp_problem *p);
/** Where qp_plan_device_overhead's figure comes from: "memory.device_overhead" or "the
 *  backend's default". */
const char *qp_plan_device_overhead_source(const qp_problem *p);
/** The device table whose own buffers the model predicts (memory_model.h, dims.backend): the
 *  run's device table once it answers (cuda: after its context exists), hostdev's for `plan`
 *  on hostdev; NULL on a host backend and where the sizes cannot be known here (cuda in
 *  `plan`: cuSOLVER's queries need a GPU). */
const qp_linalg_ops *qp_plan_backend_table(const qp_problem *p);
/** What a host panel of dims.host_panel lines cuts on its route (memory_model.h): "columns of
 *  the pixel matrices, rows of the maps", and on the harmonic routes rows of V^T and columns
 *  of W's field blocks (and of Z on projection, of I + K Lambda and G on SMW), for plan's and
 *  the refusal's text. */
const char *qp_plan_panel_lines(const qp_model_dims *d);
/** Checks p->plan's model against its host limit (memory.host_limit, or the job's limit that
 *  `run` found) and memory.device_limit: QP_ERR_BUDGET naming the stage, its largest term, the
 *  limit's source and the shortfall. */
qp_err qp_plan_check_limit(const qp_problem *p);

#endif
