/* problem.h: everything one analysis holds: inputs, dimensions, parameters, and the big
 * buffers the stages pass to each other. The driver owns it; stages fill and use it. */
#ifndef QP_PROBLEM_H
#define QP_PROBLEM_H

#include <stdint.h>

#include "cls_text.h"
#include "config.h"
#include "matrix.h"
#include "model.h"

typedef struct qp_problem {
  const qp_config *cfg;
  const qp_linalg_ops *ops;
  qp_cls cls;

  /* geometry (covariance_setup). The data vector is [T | Q | U] restricted to the fields
   * analysed: T at the n_obs_t pixels of the mask, then Q and U each at the n_obs_p pixels
   * of mask_pol (or the mask), ascending RING index inside each block (QML.md 1). The
   * "positions" are the T pixels followed by the polarisation pixels. */
  int64_t nside, n_sky;
  int64_t n_obs_t, n_obs_p; /* observed pixels of T; of Q and U (0 for a field not analysed) */
  int64_t n_observed;     /* positions: n_obs_t + n_obs_p */
  int64_t n_pix;          /* data vector length: n_obs_t + 2 n_obs_p */
  int64_t n_maps;
  double *sky;            /* QP_TERM_SKY_BUFFER: one full-sky map (covariance_setup only) */
  int64_t *observed;      /* QP_TERM_OBSERVED_INDEX: RING index per position */
  double *vectors;        /* QP_TERM_PIXEL_VECTORS: 3 x n_observed unit vectors */
  double *maps;           /* QP_TERM_MAPS: n_pix x n_maps, column-major */
  double *noise_variance; /* QP_TERM_NOISE_VARIANCE (diagonal N) or NULL */
  qp_matrix noise;        /* QP_TERM_NOISE (dense N) or empty */
  qp_matrix cov;          /* QP_TERM_COVARIANCE: C, then L, then L^-1 */

  /* parameters */
  int n_bins, n_params;
  int *bin_lo, *bin_hi;   /* n_bins (small: malloc) */
  double *ell_weight;     /* (2l+1)/(4 pi) B_l^2, l = 0..lmax_signal (small: malloc) */

  /* results */
  double *fisher;         /* QP_TERM_FISHER: n_params^2 */
  double *noise_bias;     /* QP_TERM_NOISE_BIAS */
  double *fisher_inverse; /* QP_TERM_FISHER_INVERSE */
  double *yb, *cl;        /* QP_TERM_RAW_SPECTRA, QP_TERM_SPECTRA: n_maps x n_params */
  double *error;          /* QP_TERM_ERRORS */

  qp_model model;
  int progress;           /* 1: report progress on stderr */
} qp_problem;

/** Frees every buffer the problem holds (safe at any point, and twice). */
void qp_problem_free(qp_problem *p);

#endif
