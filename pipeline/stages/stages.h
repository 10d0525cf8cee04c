/* stages.h: the four stages of the pixel-direct temperature estimator (QML.md 2-3). Each runs
 * inside the budget stage of the same name (the driver pushes and pops it) and allocates only
 * the terms the model predicts for it.
 *
 * The algebra: with C = L L^T and M_p = L^-1 P_p L^-T (symmetric),
 *   F_pq = 1/2 tr(C^-1 P_p C^-1 P_q) = 1/2 <M_p, M_q>           (Frobenius inner product)
 *   b_p  = tr(N E_p)                 = 1/2 <M_p, L^-1 N L^-T>
 *   y_p  = x^T E_p x                 = 1/2 z^T P_p z,  z = C^-1 x
 * so fisher_run forms every M_p by two triangular products and gets F and b together from one
 * syrk of the stacked products: BLAS-3 throughout. */
#ifndef QP_STAGES_H
#define QP_STAGES_H

#include "problem.h"

/** Inputs, geometry, C = S + N (dense N is checked positive definite on its own first). */
qp_err qp_stage_covariance_setup(qp_problem *p);
/** C -> L -> L^-1 in place. */
qp_err qp_stage_basis_setup(qp_problem *p);
/** F and the noise bias b. */
qp_err qp_stage_fisher_run(qp_problem *p);
/** y for every map, F^-1, C_hat = F^-1 (y - b), error bars sqrt(diag F^-1). */
qp_err qp_stage_spectra_run(qp_problem *p);

#endif
