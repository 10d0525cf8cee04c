/* planner.h: the route (pixel-direct, harmonic SMW, harmonic projection) and the chunks of a
 * run for its memory limit, its memory model (memory_model.h) and the limit check; the SMW
 * conditioning rule that can rule a route out. Called by inputs.c once the plan's inputs are
 * read, by the driver, and by `budget`/`plan`. */
#ifndef QP_PLANNER_H
#define QP_PLANNER_H

#include "problem.h"

/** Picks the route: the config's, or among those it allows the cheapest whose predicted peak
 *  fits the memory limit (the cheapest of all when none fits: the limit check then refuses
 *  it, saying by how much), with the pixel-direct chunks for the limit. Writes the reason to
 *  p->path_reason and sets p->model and p->model_dims. */
qp_err qp_plan_route(qp_problem *p);
/** The model again for the route and chunks already planned, for another rank of
 *  p->plan_grid (budget/plan --ranks). */
qp_err qp_plan_remodel(qp_problem *p);
/** Records rcond of the diagonal N in the fields' units (conditioning.h; `variance` per
 *  entry, NULL: p->noise_field_mean per field) and, when SMW's bound of rcond(C) is too small
 *  for cfg->accuracy, why SMW is ruled out (p->smw_refused): the route choice then skips it.
 *  N itself is inverted exactly, whatever its spread: never a reason alone. */
void qp_plan_smw_noise_check(qp_problem *p, const double *variance);
/** After the variances are read (covariance_setup, before any route's matrix): when SMW was
 *  chosen and its N is too ill-conditioned, chooses again without it (path auto) and checks
 *  the new route against the memory limit; the path reason says why. No-op otherwise. */
qp_err qp_plan_reroute_smw(qp_problem *p);
/** The width (columns) of the widest BLAS call of `path`: n_pix where an n_pix x n_pix matrix
 *  is factored or multiplied (C; N or N_eff when dense), n_modes on the SMW route with a
 *  diagonal N_eff. The warm-up (driver.h) and the default overhead follow it. */
int64_t qp_plan_blas_width(const qp_problem *p, qp_model_path path);
/* The device context's bytes when none is configured (memory.device_overhead): the backend's
 * row, qp_backend.context_bytes (linalg/backends.c says how cuda's was measured). */
/** The device context the plan reserves on a device backend (bytes): memory.device_overhead,
 *  else the backend's default; 0 on a host backend. memory.device_limit less it is what the
 *  tracked device terms may use. */
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
/** Checks the model against p->host_limit (memory.host_limit, or the job's limit that `run`
 *  found: problem.h): QP_ERR_BUDGET naming the stage, its largest term, the limit's source and
 *  the shortfall. */
qp_err qp_plan_check_limit(const qp_problem *p);

#endif
