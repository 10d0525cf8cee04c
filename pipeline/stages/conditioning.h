/* conditioning.h: how well each route's key matrices are conditioned, and the refusal when
 * double precision cannot give the accuracy the config asks for.
 *
 * A solve with a matrix of condition number kappa = 1/rcond has a relative error of about
 * kappa eps (eps = 2.2e-16): it loses log10(kappa) digits. Right after each factorisation the
 * stages estimate rcond (LAPACK dpocon/dgecon, ScaLAPACK pdpocon/pdgecon: O(n^2) next to the
 * factorisation's O(n^3)) and refuse the route, exit 5, when eps / rcond > `accuracy` (config,
 * default 1e-6): the matrix and its rcond are named, and the other routes suggested. The
 * figures go to the results file (/diagnostics, docs/output.md). Routes differ here: SMW
 * inverts N (or N_eff) and I + K Lambda, pixel-direct and projection only C = S + N, so a
 * noise of nearly zero variance somewhere ruins SMW alone. */
#ifndef QP_CONDITIONING_H
#define QP_CONDITIONING_H

#include "field_scale.h"
#include "problem.h"

/* What each route's refusal says (one wording for every route that factors the matrix). */
#define QP_RCOND_COVARIANCE_WHAT "the covariance C = S + N"
#define QP_RCOND_COVARIANCE_ADVICE                                                                 \
  "C is nearly singular: the noise is too small next to the signal model somewhere (check "        \
  "the noise variances), or lmax_signal asks for multipoles the pixels cannot resolve"
#define QP_RCOND_SMW_COVARIANCE_ADVICE                                                             \
  "SMW only bounds C's conditioning (from N's and S's extremes, conservatively); "                 \
  "harmonic_method: projected or path: pixel_direct factor C and measure it"
#define QP_RCOND_SMW_ADVICE                                                                        \
  "SMW inverts N and I + K Lambda; use harmonic_method: projected or path: pixel_direct, which "   \
  "factor C = S + N instead"

/** The names of the matrices whose rcond is recorded (qp_problem.rcond[] index). */
const char *qp_rcond_name(qp_rcond_id id);

/** rcond of a diagonal matrix (exact): min |d_i| / max |d_i|; 0 for an empty or zero one. */
double qp_rcond_diagonal(const double *d, int64_t n);

/** Records rcond of matrix `id` in p->rcond and fails with QP_ERR_NUMERICAL, naming `what`
 *  (the matrix as a user knows it), its rcond and `advice`, when rcond is not finite or
 *  eps / rcond > p->cfg->accuracy. */
qp_err qp_conditioning_check(qp_problem *p, qp_rcond_id id, double rcond, const char *what,
                             const char *advice);

/** The Fisher guard, after spectra_run has C_hat (p->cl), F^-1 and rcond of the equilibrated
 *  F (p->rcond[QP_RCOND_FISHER], unit diagonal: stage_spectra.c). A solve with Fe loses a
 *  factor kappa(Fe) = 1/rcond to rounding in the scaled unknowns u = D^-1 C_hat (D =
 *  diag(F)^-1/2), whose size is the signal-to-noise |C_hat_p| sqrt(F_pp); in units of the error
 *  bars (sigma_p = D_p sqrt((Fe^-1)_pp) >= D_p, as Fe has a unit diagonal) each C_hat_p is
 *  therefore off by at most about eps / rcond x max(1, max_p |C_hat_p| sqrt(F_pp)). Records
 *  that in p->spectra_error (/diagnostics) and fails with QP_ERR_NUMERICAL, stating it, when it
 *  exceeds p->cfg->accuracy. */
qp_err qp_spectra_error_check(qp_problem *p);

/** A = L L^T in place with the condition check in the fields' units: A <- F A F (`scale`,
 *  NULL: none), |A|_1, potrf, dpocon, then L <- F^-1 L, so that L is the factor of A itself
 *  (bitwise: F is made of powers of 2) and the rcond recorded and judged is F A F's
 *  (collective). *anorm (may be NULL) receives |F A F|_1. */
qp_err qp_conditioned_potrf(qp_problem *p, qp_matrix *a, qp_rcond_id id, const char *what,
                            const char *advice, const qp_run_scale *scale, double *anorm);

/** Fails with QP_ERR_NUMERICAL, naming the stage and `quantity`, when any of the n values is
 *  not finite (NaN or infinite): the last check before anything is written. */
qp_err qp_check_finite(const double *values, int64_t n, const char *stage, const char *quantity);

#endif
