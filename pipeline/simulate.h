/* simulate.h: Gaussian test maps and masks, so that examples and tests need no downloads. */
#ifndef QP_SIMULATE_H
#define QP_SIMULATE_H

#include <stdint.h>

#include "cls_text.h"
#include "qp_error.h"

typedef struct qp_sim_options {
  int64_t nside;
  int ell_min, lmax;        /* signal multipoles drawn */
  double noise_variance;    /* white noise per pixel; 0 for none */
  double beam_fwhm_arcmin;  /* Gaussian beam applied to the signal */
  int n_maps;
  uint64_t seed;
} qp_sim_options;

/** maps[k * n_sky + i] (RING pixel i of map k) = sum_lm a_lm B_l Y_lm + noise, with
 *  a_lm ~ N(0, C_l^TT). The draws depend only on the seed. */
qp_err qp_simulate_maps(const qp_cls *cls, const qp_sim_options *options, double *maps);
/** mask[i] = 1 where the Galactic latitude |b| > b0_deg (the map's theta is colatitude), else
 *  0. b0_deg = 0 gives the full sky. */
void qp_simulate_galactic_mask(int64_t nside, double b0_deg, double *mask);

#endif
