/* harmonic_smw.h: private to stages/: the SMW route's pieces (harmonic_smw.c) that its auto
 * basis_setup and the cross-spectra's (harmonic_smw_cross.c) share. A set of maps is SMW's by
 * its N_eff: a dense factor (N_eff, then its Cholesky factor) or N's variances. */
#ifndef QP_HARMONIC_SMW_H
#define QP_HARMONIC_SMW_H

#include "problem.h"
#include "progress.h"

/** basis_setup of the SMW route, auto-spectra (harmonic_smw.c) and cross-spectra
 *  (harmonic_smw_cross.c). */
qp_err qp_smw_basis(qp_problem *p, qp_progress *progress);
qp_err qp_smw_cross_basis(qp_problem *p, qp_progress *progress);
/** N_eff's Cholesky (`factor` not empty) or its variances' figures, and C's conditioning as SMW
 *  bounds it: p->rcond[QP_RCOND_NOISE] and [QP_RCOND_COVARIANCE] are this N_eff's. `noise` and
 *  `covariance` name the two matrices in messages. */
qp_err qp_smw_noise_check(qp_problem *p, qp_matrix *factor, const double *variance,
                          const char *noise, const char *covariance);
/** x -> N_eff^-1/2 x: by the Cholesky factor of a dense N_eff, or the variances. */
qp_err qp_smw_whiten(qp_problem *p, const qp_matrix *factor, const double *variance, qp_matrix *x);
/** out (created: n_modes x map_batch, `term`) <- V N_eff^-1 x = Y^T N_eff^-1/2 x for the maps
 *  from column `column` of the maps (qp_maps_to_matrix), a batch at a time (qp_map_batch); each
 *  batch of several is kept in `host` (n_modes x n_maps, qp_mode_maps_host_batch's layout;
 *  NULL: one batch). */
qp_err qp_smw_mode_maps(qp_problem *p, const qp_matrix *factor, const double *variance,
                        const qp_matrix *y, int64_t column, const char *term, qp_matrix *out,
                        double *host);
/** kernel <- W = M^-1 K from K, M = I + K Lambda built in lu and factored there (pivots), its
 *  rcond checked (p->rcond[QP_RCOND_SMW]); `what` names M in messages. */
qp_err qp_smw_kernel_factor(qp_problem *p, qp_matrix *kernel, qp_matrix *lu, int *pivots,
                            const char *what);
/** b <- M^-1 b with M's factors lu and pivots (qp_smw_solve's, for either set). */
qp_err qp_smw_solve_lu(const qp_problem *p, const qp_matrix *lu, const int *pivots, qp_matrix *b);

#endif
