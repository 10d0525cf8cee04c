/* harmonic_bias.h: the harmonic routes' noise bias b (fisher_run, harmonic_bias.c), which
 * qp_harmonic_fisher_run (harmonic_fisher.c) computes after F. Private to stages/. */
#ifndef QP_HARMONIC_BIAS_H
#define QP_HARMONIC_BIAS_H

#include <stdint.h>

#include "harmonic_modes.h"
#include "problem.h"

/** G^T into g (n_modes^2) on the SMW route: (I + K Lambda)^-1 W. */
qp_err qp_noise_kernel_smw(qp_problem *p, qp_matrix *g);
/** N_eff Z into nz for Z = C^-1 V^T (projection), N_eff dense = S_fixed + N. */
qp_err qp_noise_modes_dense(qp_problem *p, const qp_matrix *z, qp_matrix *nz);
/** b_p = 1/2 tr(D_p G) from G (SMW). */
qp_err qp_bias_from_matrix(qp_problem *p, const qp_matrix *g, const qp_entry *e,
                           const int64_t *start);
/** b_p = 1/2 tr(D_p Z^T N Z) from Z, and nz = N_eff Z where N is dense (NULL: the variances). */
qp_err qp_bias_from_modes(qp_problem *p, const qp_matrix *z, const qp_matrix *nz, const qp_entry *e,
                          const int64_t *start);

#endif
