/* simulate.h: Gaussian test maps (T, or T, Q, U in healpy's convention) and masks, so that
 * examples and tests need no downloads. */
#ifndef QP_SIMULATE_H
#define QP_SIMULATE_H

#include <stdint.h>

#include "cls_text.h"
#include "config.h"
#include "pixel_window.h"
#include "qp_error.h"

typedef struct qp_sim_options {
  int64_t nside;
  int ell_min, lmax;       /* signal multipoles drawn */
  double noise_variance;   /* white noise per pixel in T; 0 for none */
  double beam_fwhm_arcmin; /* Gaussian beam applied to the signal (T and P alike) */
  int n_maps;
  uint64_t seed;
  /* The HEALPix pixel window the signal carries, as synfast(pixwin=True) applies it: the
   * coefficients of T times w_l^T, those of E and B times w_l^P (to lmax at least); NULL: none.
   * The draws are the same with and without it. */
  const qp_pixel_window *pixel_window;
} qp_sim_options;

/* The polarisation settings of a simulation. They are a struct of their own so that existing
 * positional initialisers of qp_sim_options stay complete (-Wmissing-field-initializers).
 * All zero = temperature only, as qp_simulate_maps. */
typedef struct qp_sim_pol {
  qp_fields fields;          /* QP_FIELDS_T, QP_FIELDS_QU or QP_FIELDS_TQU */
  double noise_variance_pol; /* white noise per pixel in Q and in U; < 0: noise_variance */
} qp_sim_pol;

/** Columns per simulated map: 1 (T) for QP_FIELDS_T, 3 (T, Q, U) for QU and TQU. */
static inline int qp_simulate_columns(qp_fields fields) { return fields == QP_FIELDS_T ? 1 : 3; }

/** Simulates options->n_maps Gaussian skies, RING order, column by column:
 *  maps[(k * n_col + c) * n_sky + i] for map k, column c (T, Q, U), pixel i, with
 *  n_col = qp_simulate_columns(pol->fields) and n_sky = 12 nside^2 (host memory).
 *  The signal is sum_lm r_lm basis_lm (spin_harmonics.h, healpy's convention) for
 *  ell_min <= l <= lmax, with the real coefficients (r_T, r_E, r_B) of each (l, m) drawn with
 *  covariance B_l^2 [[TT, TE, TB], [TE, EE, EB], [TB, EB, BB]] (C_l from `cls`; a 4-column file
 *  has TB = EB = 0), so the maps have healpy's (synfast's) covariance; with a pixel window the
 *  draws of T are then multiplied by w_l^T and those of E and B by w_l^P. Zero or degenerate
 *  blocks (C_l = 0 at l < 2, BB = 0, |TE| = sqrt(TT EE)) are fine: the 3x3 factor skips zero
 *  pivots. White noise of variance noise_variance is added to T, noise_variance_pol to Q and U.
 *  QU and TQU give the same maps (a healpy file holds I, Q, U; T is drawn either way, as TE
 *  correlates it with E). For T only, just TT is used and one draw is made per (l, m).
 *  pol == NULL means temperature only. The draws depend only on the seed: signal of all maps
 *  first, then the noise map by map (T, Q, U).
 *  Errors: QP_ERR_INPUT (bad sizes, lmax beyond the C_ell file, a C_l matrix that is not
 *  positive semidefinite), QP_ERR_NOMEM; the transient matrices are charged to the budget. */
qp_err qp_simulate_sky(const qp_cls *cls, const qp_sim_options *options, const qp_sim_pol *pol,
                       double *maps);
/** Temperature only: maps[k * n_sky + i] (RING pixel i of map k) = sum_lm r_lm B_l t_lm + noise,
 *  r_lm ~ N(0, C_l^TT). The same as qp_simulate_sky with pol == NULL. */
qp_err qp_simulate_maps(const qp_cls *cls, const qp_sim_options *options, double *maps);
/** The second set of qp_simulate_pairs: its own white noise. */
typedef struct qp_sim_pair {
  double noise_variance;     /* per pixel in T, >= 0 */
  double noise_variance_pol; /* per pixel in Q and in U; < 0: noise_variance */
} qp_sim_pair;

/** Pairs of maps for cross-spectra: maps as qp_simulate_sky (the same maps, bit for bit, for
 *  the same options and seed), and maps2 (same layout) with the SAME signal realisation, map
 *  by map, plus white noise of pair's variances drawn independently of the first set's (after
 *  all of it, from the same stream: the second set's noise, map by map, T, Q, U). So
 *  maps2 - maps is pure noise, of variance var + var2 per pixel and column, and with
 *  pair->noise_variance 0 (and _pol 0) maps2 is the noise-free sky of the first set.
 *  Errors: those of qp_simulate_sky; QP_ERR_INPUT for a negative or non-finite variance of
 *  the second set. */
qp_err qp_simulate_pairs(const qp_cls *cls, const qp_sim_options *options, const qp_sim_pol *pol,
                         const qp_sim_pair *pair, double *maps, double *maps2);
/** mask[i] = 1 where the Galactic latitude |b| > b0_deg (the map's theta is colatitude), else
 *  0. b0_deg = 0 gives the full sky. */
void qp_simulate_galactic_mask(int64_t nside, double b0_deg, double *mask);

#endif
