/* inputs.h: the first half of covariance_setup: read the mask, the maps, the noise model and
 * the fiducial spectrum into the problem, checking each against the others, and set up the
 * parameters (bins) and the memory model. Refuses a run whose predicted peak exceeds
 * memory.host_limit before any buffer of size n_pix^2 exists. */
#ifndef QP_INPUTS_H
#define QP_INPUTS_H

#include "problem.h"

/** Reads the mask and the fiducial spectrum, sets the geometry (observed pixels and their
 *  vectors), the bins, the dimensions and the model. Allocates QP_TERM_SKY_BUFFER (p->sky, left
 *  alive for qp_inputs_read_data), QP_TERM_OBSERVED_INDEX and QP_TERM_PIXEL_VECTORS. */
qp_err qp_inputs_read_geometry(qp_problem *p);
/** Checks the model against memory.host_limit (QP_ERR_BUDGET saying by how much). */
qp_err qp_inputs_check_limit(const qp_problem *p);
/** Reads the maps and the noise into QP_TERM_MAPS and QP_TERM_NOISE_VARIANCE / QP_TERM_NOISE,
 *  checking nside, NaN/UNSEEN at observed pixels, positive variances, a symmetric N. */
qp_err qp_inputs_read_data(qp_problem *p);

#endif
