/* window.h: the bandpower window functions (docs/science.md): W_p,ell = sum_q (F^-1)_pq F_q,ell,
 * F_q,ell = 1/2 tr(C_A^-1 P_q C_B^-1 P_ell) with the unbinned P_ell of every requested spectrum
 * and every ell in [ell_min, lmax]. fisher_run sums F_q,ell (p->fisher_ell, n_params x
 * n_window) beside F, each route its own way; spectra_run makes W from it. */
#ifndef QP_WINDOW_H
#define QP_WINDOW_H

#include "problem.h"

/** The window's columns: n_spectra x (lmax - ell_min + 1), spectrum major, ell ascending; 0
 *  with window_functions: false (then no F_(q,ell), no W). */
int64_t qp_window_count(const qp_problem *p);

/** *w <- p with bins of one multipole each over [ell_min, lmax] (its n_bins, n_params,
 *  bin_lo, bin_hi; everything else shared with p, read only): the unbinned parameters, whose
 *  P_ell the routes' own builders then make. Free with qp_window_problem_free. */
qp_err qp_window_problem(const qp_problem *p, qp_problem *w);
void qp_window_problem_free(qp_problem *w);

/** p->window (C order, n_params x n_window) <- F^-1 p->fisher_ell, on the host. */
qp_err qp_window_from_fisher(qp_problem *p);

#endif
