/* spectra_terms.h: the terms spectra_run allocates (stage_spectra.c, harmonic_spectra.c),
 * their names and their declaration to the memory model (spectra_terms.c). SMW's basis_setup
 * takes z and V N^-1 x under the first names here, early (basis_terms.c). */
#ifndef QP_SPECTRA_TERMS_H
#define QP_SPECTRA_TERMS_H

#include "memory_model.h"

#define QP_TERM_WEIGHTED_MAPS "weighted_maps"           /* z = C^-1 x */
#define QP_TERM_WEIGHTED_MAPS_B "weighted_maps_B"       /* z_B = C_B^-1 x_B (cross-spectra) */
#define QP_TERM_SPECTRA_COVARIANCE "spectra_covariance" /* cross: F^-1 M F^-1 */
#define QP_TERM_WINDOW "window"             /* W = F^-1 F_(q,ell), n_params x n_window (window.h) */
#define QP_TERM_MODE_MAPS "mode_maps"       /* harmonic: V N^-1 x, then z */
#define QP_TERM_BIN_MATRICES "bin_matrices" /* P_b for a chunk of parameters */
#define QP_TERM_BIN_PRODUCT "bin_product"   /* P_b z */
#define QP_TERM_FISHER_INVERSE "fisher_inverse"
#define QP_TERM_RAW_SPECTRA "yb" /* y_p per map */
#define QP_TERM_SPECTRA "cl"     /* C_hat per map */
#define QP_TERM_ERRORS "error"
/* Distributed backend or a device's host windows only: */
#define QP_TERM_MODE_MAPS_ALL "mode_maps_all" /* harmonic: z whole on every rank */
#define QP_TERM_MODE_MAPS_B "mode_maps_B"         /* cross (projection): z_B = V C_B^-1 x_B */
#define QP_TERM_MODE_MAPS_ALL_B "mode_maps_all_B" /* cross (projection): z_B whole everywhere */

/** Adds spectra_run's terms of the route of `d` to `m`, after fisher_run's. */
qp_err qp_spectra_terms(const qp_model_dims *d, qp_model *m);

#endif
