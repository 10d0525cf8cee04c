/* field_scale.h: the fields' units and SMW's bound of C's conditioning, from the C_ell, the
 * beam and the noise alone: what the planner's SMW check (planner_route.c), before anything
 * is built, and the stages' guards (conditioning.h) share. Pure functions of the problem's
 * inputs (cls, the fields' weights qp_field_weight: beam and pixel window, noise_field_mean,
 * the pixel counts). */
#ifndef QP_FIELD_SCALE_H
#define QP_FIELD_SCALE_H

#include "problem.h"

/** The largest relative error `accuracy` allows: eps / accuracy. */
double qp_rcond_floor(double accuracy);

/** The fields' scales, as powers of 2 on the data vector's runs (T's entries, then Q's and
 *  U's, which share a unit): f_X = 2^-round(log2(d_X) / 2), d_X the mean diagonal of a matrix
 *  made of S over multipoles [ell_from, ell_to] (none when ell_from > ell_to) plus, with
 *  `with_noise`, N (p->noise_field_mean). F A F then has a diagonal of order 1 in every field:
 *  its rcond measures A's conditioning in each field's own units, not the ratio of the fields'
 *  units (T in uK against Q/U, or in K), which no solve pays for: Cholesky's and the
 *  estimates' errors are those of F A F (van der Sluis), and with powers of 2 every rounded
 *  operation scales exactly, so the factor is bitwise the one of A itself. */
qp_run_scale qp_field_scale(const qp_problem *p, int ell_from, int ell_to, int with_noise);

/** An upper bound of the largest eigenvalue of F S_V F, S_V = V^T Lambda V the signal the
 *  harmonic basis spans (multipoles [ell_min, cfg->lmax]) and F the fields' scales: the sum
 *  over the fields X present of f_X^2 3 n_sky / (4 pi) max_l C_l^XX B_l^2 (w_l^X)^2 (C^EE +
 *  C^BB for Q and U; w^X the pixel window, 1 without one), since a positive semidefinite
 *  block matrix's largest eigenvalue is at most the sum of its diagonal blocks'. V^T V is a
 *  principal submatrix of the full-sky sum_lm Y_lm Y_lm^T, whose eigenvalues are n_sky /
 *  (4 pi) up to HEALPix's quadrature error (the factor 3 covers it up to l = 3 nside - 1), and
 *  the trace bounds each (l, m) block of Lambda. It lets SMW, which never forms C, bound C's
 *  conditioning as the other routes measure it:
 *  rcond(C) >= lambda_min(N) / (lambda_max(N) + lambda_max(S_V)). */
double qp_signal_eigen_bound_scaled(const qp_problem *p, const qp_run_scale *scale);

/** SMW's lower bound of rcond(F C F) from rcond(F N F) and lambda_max(F N F) (`noise_max`):
 *  rcond(FNF) / (1 + qp_signal_eigen_bound_scaled / noise_max), since C >= N and
 *  |FCF| <= |FNF| + |FS_VF|; 0 when noise_max is not positive. */
double qp_smw_covariance_rcond(const qp_problem *p, const qp_run_scale *scale, double rcond_noise,
                               double noise_max);

/** rcond (smallest / largest) and the largest entry of F N F for white noise of `variance`
 *  (NULL: each field's p->noise_field_mean, the scalar variances of the config). */
void qp_scaled_noise_diagonal(const qp_problem *p, const qp_run_scale *scale,
                              const double *variance, double *rcond, double *largest);

#endif
