/* inputs.h: reading and checking the inputs: first what the plan needs (mask, spectrum, bins,
 * a variance map's figures: inputs_plan.c), before anything large exists, then, inside
 * covariance_setup (inputs.c), the geometry, the maps and the
 * noise model, each checked against the others. The route, chunks and model: planner.h. */
#ifndef QP_INPUTS_H
#define QP_INPUTS_H

#include "planner.h"
#include "problem.h"

/** Checks every file the config names (maps, mask, mask_pol, C_ell, noise file, bins) with
 *  qp_input_check under its key's name (base/input_file.h): one missing, not a regular file
 *  or named with a blank at an end is refused before any work (QP_ERR_IO / QP_ERR_INPUT).
 *  `run` calls it on the reading rank before the plan; not collective. */
qp_err qp_inputs_check_files(const qp_config *cfg);

/** Reads what the plan needs without allocating anything large (inputs_plan.c): checks the
 *  mask against lmax, reads the fiducial spectrum, counts the observed pixels (a
 *  QP_TERM_SKY_BUFFER for the time of it; two with a variance map, whose figures for the
 *  planner's SMW check go to *noise), sets the bins, the dimensions and the noise's mean per
 *  field. The plan's owner then builds the plan (planner.h, qp_plan_build); `qmlpipe budget`
 *  stops there. */
qp_err qp_inputs_plan(qp_problem *p, qp_noise_figures *noise);
/** covariance_setup's geometry: the observed pixels (QP_TERM_OBSERVED_INDEX) and their unit
 *  vectors (QP_TERM_PIXEL_VECTORS); leaves the mask in p->sky (QP_TERM_SKY_BUFFER), which
 *  qp_inputs_read_data reuses for the maps and which the stage frees at its end. */
qp_err qp_inputs_read_geometry(qp_problem *p);
/** Calls, once and small, the libraries covariance_setup will use (chealpix, cfitsio on the
 *  first map's header), so that their first-use pages fall before the run's baseline. */
qp_err qp_inputs_touch_libraries(const qp_problem *p);
/** Checks every map (nside, columns, NaN/UNSEEN or overflowing values at observed pixels),
 *  each read on the reading rank through the sky buffer and let go: no map is kept (they are
 *  read again where they are used, qp_maps_to_matrix). Reads the noise into
 *  QP_TERM_NOISE_VARIANCE / QP_TERM_NOISE, checking positive variances, a symmetric N. */
qp_err qp_inputs_read_data(qp_problem *p);
/** Cross-spectra with a dense noise2 (covariance_setup): noise2's covariance, checked as
 *  noise's is (shape, symmetry), into `into` (C_B's buffer, n_pix^2 on the run's backend).
 *  Collective. */
qp_err qp_inputs_read_noise2(qp_problem *p, qp_matrix *into);

#endif
