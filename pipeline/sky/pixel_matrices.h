/* pixel_matrices.h: the pixel-space signal covariance S and its derivatives P_p (QML.md 1-2),
 * for temperature and polarisation.
 *
 * For a pair of positions at angle beta (z = cos beta), in the frame of the great circle
 * through them, each multipole contributes w_l = (2l+1)/(4 pi) B_l^2 w^a_l w^b_l (the pixel
 * windows of the two entries' fields, T or Q/U: qp_spectrum_weight; 1 without one) times
 *   TT: C^TT d^l_00            TQ: -C^TE d^l_20          TU: -C^TB d^l_20
 *   QQ: C^EE A + C^BB B        UU: C^BB A + C^EE B       QU = UQ: C^EB d^l_2,-2
 * with A = (d^l_22 + d^l_2,-2)/2 = F12 and B = (d^l_22 - d^l_2,-2)/2 = -F22 (Wigner d of
 * beta, no 1/(1 - z^2) anywhere; QML.md 1). Q and U of a position are then rotated from the
 * great-circle frame to its meridian frame by R(alpha) = [[cos 2a, -sin 2a], [sin 2a, cos 2a]],
 * alpha = atan2(t . e_phi, t . e_theta) for the tangent t towards the other position; for
 * coincident and antipodal pairs alpha = 0 (the meridian is a great circle through both).
 * These signs are healpy's: they reproduce V^T Lambda V of healpy's harmonics to round-off
 * (tests/pipeline/test_spin2_covariance.c). P_p is the same with C^X = 1 on the multipoles of
 * the bin of parameter p and 0 elsewhere. */
#ifndef QP_PIXEL_MATRICES_H
#define QP_PIXEL_MATRICES_H

#include "host_window.h"
#include "problem.h"

/** Fills full symmetric n_pix x n_pix matrices (column-major): ADDS S to `cov` (when not
 *  NULL; cov must hold a symmetric matrix, e.g. N or zeros) and, for k = 0..n_slots-1,
 *  OVERWRITES slots + k*slot_stride with P_{first_param + k} (parameter index =
 *  spectrum * n_bins + bin). OpenMP over positions; pairs of positions in batches of
 *  QP_WIGNER_LANES (wigner.h). QP_ERR_NOMEM if its O(lmax) scratch cannot be had. */
qp_err qp_pixel_matrices_build(const qp_problem *p, double *cov, int first_param, int n_slots,
                               double *slots, size_t slot_stride);

/** Local columns [col0, col0 + cols) of the run's n_pix x n_pix layout (all of them on one
 *  process), held at leading dimension ld: a panel of a host window (host_window.h). */
typedef struct qp_pixel_columns {
  int64_t col0, cols, ld;
} qp_pixel_columns;

/** The same with S (added to cov) summed over cov_lo <= l <= cov_hi only (inside
 *  [ell_min, lmax_signal]: S_fixed of the switch is the range (lmax, lmax_signal]), P_q of
 *  q = first_param + k written at slot_at[k] (any n_slots buffers, each laid out as cov), and
 *  the buffers holding only the local columns of `columns` (NULL: all, at the layout's ld). Every
 *  entry of those columns is the same to the bit as a whole build's: a pair is summed by the
 *  same code wherever it lands, so a panel sums again the pairs of its positions with every
 *  other (about twice a whole build's pair sums over a matrix's panels, on T; more on QU,
 *  whose position has two columns). QP_ERR_INTERNAL for columns out of the local range. */
qp_err qp_pixel_matrices_build_columns(const qp_problem *p, double *cov, int cov_lo, int cov_hi,
                                       int first_param, int n_slots, double *const *slot_at,
                                       const qp_pixel_columns *columns);

/** Slots [slot0, slot0 + count) of `stack` (a local matrix whose columns each hold the local
 *  part of an n_pix x n_pix matrix of the run's table: qp_matrix_stack_slot) <- P_first ..
 *  P_first+count-1, their views named `term`: built on the host through one window per slot
 *  over the same qp_host_panel(p) local columns at a time (all of them unless the plan made
 *  panels), uploaded when the windows close. */
qp_err qp_pixel_build_slots(const qp_problem *p, const qp_matrix *stack, int64_t slot0,
                            int64_t first, int64_t count, const char *term);

/** m (zeros, or N itself) <- N + S summed over lo <= l <= hi (no S when lo > hi), m in the
 *  run's layout and space: a dense N copied in by the backend, then the variances and S added
 *  through host windows of qp_host_panel(p) local columns each (one window of all of them
 *  unless the plan made panels: problem.h). */
qp_err qp_pixel_noise_plus_signal(const qp_problem *p, qp_matrix *m, int lo, int hi);
/** m (zeros, n_pix x n_pix, any backend) += S(lo..hi), without the noise: the signal's
 *  covariance, the cross-covariance of two map sets with independent noise. */
qp_err qp_pixel_signal(const qp_problem *p, qp_matrix *m, int lo, int hi);
/** m += S(lo..hi) + diag(variance) (variance NULL: S alone): C_B = S + N_B of cross-spectra
 *  where m holds a dense N_B already, or zeros and N_B is the variances. */
qp_err qp_pixel_signal_plus_variance(const qp_problem *p, qp_matrix *m, const double *variance,
                                     int lo, int hi);

#endif
