/* harmonic_route.h: the harmonic path (QML.md 3): S = V^T Lambda V with V the real harmonic basis
 * at the observed pixels (spin_harmonics.h) for ell_min..lmax, and everything computed on the
 * n_modes side:
 *   W = V C^-1 V^T        F_pq = 1/2 tr(W D_p W D_q)       (D_p = dLambda/dp, sparse)
 *   z = V C^-1 x          y_p = 1/2 z^T D_p z
 *   G = V C^-1 N_eff C^-1 V^T                    b_p = 1/2 tr(D_p G)
 * by one of two routes:
 *   SMW (stable Sherman-Morrison-Woodbury): Y = N_eff^-1/2 V^T (L_N^-1 V^T for a dense N_eff),
 *     K = Y^T Y, M = I + K Lambda (LU), W = M^-1 K, z = M^-1 Y^T N_eff^-1/2 x, G = (M^-1 W)^T.
 *     No Lambda^-1 and no K - K (Lambda^-1 + K)^-1 K, which loses 9-14 digits at high S/N.
 *   projection: C = S + N dense, L = chol(C), Y = L^-1 V^T, W = Y^T Y, z = Y^T L^-1 x,
 *     G = Z^T N_eff Z with Z = L^-T Y = C^-1 V^T.
 * N_eff = N + S_fixed when lmax < lmax_signal (the switch); N otherwise.
 * Cross-spectra of maps (A) and maps2 (B) (harmonic_cross.c): W_B beside W_A, by projection
 * (L_B = chol(C_B), Y_B = L_B^-1 V^T, W_B = Y_B^T Y_B) or SMW (K_B, M_B = I + K_B Lambda,
 * W_B = M_B^-1 K_B from N_B,eff: harmonic_smw_cross.c); F_pq = 1/2 tr(W_A D_p W_B D_q),
 * y_p = 1/2 z_A^T D_p z_B, b_p = 1/2 tr(D_p Z_B^T S_fixed Z_A) (0 without the switch), and the
 * covariance of y from H = Z_B^T S Z_A = W_B Lambda W_A + Z_B^T S_fixed Z_A.
 * Modes are ordered field by field [T | E | B] (those present), inside a field by
 * qp_harmonic_index(l, m, field_ell_min); E and B start at l = 2. */
#ifndef QP_HARMONIC_H
#define QP_HARMONIC_H

#include "harmonic_modes.h"
#include "mode_layout.h"
#include "problem.h"

/** basis_setup of the harmonic path: V, Y, W (and M's LU for SMW). */
qp_err qp_harmonic_basis_setup(qp_problem *p);
/** B <- (I + K Lambda)^-1 B with SMW's factors. The factored matrix is F (I + K Lambda) F^-1,
 *  F the fields' units on the modes (T's modes 1 / f_T, E's and B's 1 / f_P: conditioning.h), whose
 *  rcond does not depend on the fields' units as I + K Lambda's does (T in units 2^17 times
 *  smaller: 7.8e-14 against 0.0005); the solve is F^-1 (F M F^-1)^-1 F B, exact scalings by
 *  powers of 2 around getrs. */
qp_err qp_smw_solve(const qp_problem *p, qp_matrix *b);
/** out <- K Lambda (+ I with `identity`), K a matrix over the modes (n_modes^2, the run's
 *  backend), Lambda S's fiducial C_l B_l^2 between the modes of one (l, m) (qp_mode_weight);
 *  `work_term` names the host columns where the backend moves data. */
qp_err qp_kernel_times_lambda(qp_problem *p, const qp_matrix *kernel, qp_matrix *out,
                              int identity, const char *work_term);
/** out_pq = 1/2 sum over D_p's entries (a, b, v) and D_q's (c, d, u) of v u X_bc Y_ad, both read
 *  in field blocks (`blocks_term` where aligning moves data) and summed by (l, l') blocks
 *  (`sums_term`); out_ell, unless NULL, the same against the unbinned D_ell (window.h).
 *  X = Y = W gives F (harmonic_fisher.c). */
qp_err qp_fisher_block_pass(qp_problem *p, const qp_entry *e, const int64_t *start,
                            const qp_matrix *x, const qp_matrix *y, const char *blocks_term,
                            const char *sums_term, double *out, double *out_ell);
/** fisher_run's results on the harmonic routes (F, b, F_(q,ell) with windows, M = Cov(y) for
 *  cross-spectra), allocated in the order the model declares them. */
qp_err qp_harmonic_fisher_results(qp_problem *p);
/** fisher_run of the harmonic path: F and b. */
qp_err qp_harmonic_fisher_run(qp_problem *p);
/** The raw quadratic y of every map (spectra_run of the harmonic path, before F^-1). */
qp_err qp_harmonic_spectra_y(qp_problem *p);
/** Cross-spectra on the projection route (harmonic_cross.c): basis_setup's B half (L_B, Y_B,
 *  W_B, after A's), fisher_run (F, b, M = Cov(y); SMW's too) and spectra_run's y. */
qp_err qp_cross_basis_setup(qp_problem *p);
qp_err qp_cross_fisher_run(qp_problem *p);
qp_err qp_cross_spectra_y(qp_problem *p);
/** out <- Y_B^T L_B^-1 S_fixed L_A^-T Y_A, S_fixed the switch's multipoles (n_modes^2; L lower
 *  triangular factors, Y n_pix x n_modes). */
qp_err qp_cross_fixed_product(qp_problem *p, const qp_matrix *la, const qp_matrix *ya,
                              const qp_matrix *lb, const qp_matrix *yb, qp_matrix *out);
/** y of maps first .. first + count - 1 from z_A and z_B (n_modes x count each, whole). */
qp_err qp_cross_y_from_z(qp_problem *p, const double *za, const double *zb, int64_t first,
                         int64_t count);
/** Cross-spectra on SMW (harmonic_smw_cross.c): the switch's Z_B^T S_fixed Z_A into h in
 *  fisher_run, and spectra_run's y. */
qp_err qp_smw_cross_fixed_kernel(qp_problem *p, qp_matrix *h);
qp_err qp_smw_cross_spectra_y(qp_problem *p);
/** V^T at the observed positions into p->vt (basis_setup of both routes). */
qp_err qp_harmonic_build_vt(qp_problem *p);

#endif
