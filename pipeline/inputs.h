/* inputs.h: reading and checking the inputs: first the plan (mask, spectrum, bins, model; the
 * limit check) before anything large exists, then, inside covariance_setup, the geometry, the
 * maps and the noise model, each checked against the others. */
#ifndef QP_INPUTS_H
#define QP_INPUTS_H

#include "problem.h"

/** Plans the run without allocating anything large: checks the mask against lmax, reads the
 *  fiducial spectrum, counts the observed pixels (a QP_TERM_SKY_BUFFER for the time of it),
 *  sets the bins, the dimensions and the model. `qmlpipe budget` stops here. */
qp_err qp_inputs_plan(qp_problem *p);
/** The model again for the route and chunks already planned, for another rank of
 *  p->plan_grid (budget/plan --ranks). */
qp_err qp_inputs_remodel(qp_problem *p);
/** Records rcond of the diagonal N (smallest / largest variance, the largest `noise_max`) and,
 *  when it or SMW's bound of rcond(C) (conditioning.h) is too small for cfg->accuracy, why
 *  SMW is ruled out (p->smw_refused): the route choice then skips it. */
void qp_inputs_smw_noise_check(qp_problem *p, double rcond, double noise_max);
/** After the variances are read (covariance_setup, before any route's matrix): when SMW was
 *  chosen and its N is too ill-conditioned, chooses again without it (path auto) and checks
 *  the new route against the memory limit; the path reason says why. No-op otherwise. */
qp_err qp_inputs_reroute_smw(qp_problem *p);
/** covariance_setup's geometry: the observed pixels (QP_TERM_OBSERVED_INDEX) and their unit
 *  vectors (QP_TERM_PIXEL_VECTORS); leaves the mask in p->sky (QP_TERM_SKY_BUFFER), which
 *  qp_inputs_read_data reuses for the maps and which the stage frees at its end. */
qp_err qp_inputs_read_geometry(qp_problem *p);
/** Calls, once and small, the libraries covariance_setup will use (chealpix, cfitsio on the
 *  first map's header), so that their first-use pages fall before the run's baseline. */
qp_err qp_inputs_touch_libraries(const qp_problem *p);
/** The width (columns) of the widest BLAS call of `path`: n_pix where an n_pix x n_pix matrix
 *  is factored or multiplied (C; N or N_eff when dense), n_modes on the SMW route with a
 *  diagonal N_eff. The warm-up (driver.h) and the default overhead follow it. */
int64_t qp_inputs_blas_width(const qp_problem *p, qp_model_path path);
/** Checks the model against p->host_limit (memory.host_limit, or the job's limit that `run`
 *  found: problem.h): QP_ERR_BUDGET naming the stage, its largest term, the limit's source and
 *  the shortfall. */
qp_err qp_inputs_check_limit(const qp_problem *p);
/** Reads the maps and the noise into QP_TERM_MAPS and QP_TERM_NOISE_VARIANCE / QP_TERM_NOISE,
 *  checking nside, NaN/UNSEEN at observed pixels, positive variances, a symmetric N. */
qp_err qp_inputs_read_data(qp_problem *p);

#endif
