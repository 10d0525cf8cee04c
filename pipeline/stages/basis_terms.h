/* basis_terms.h: the terms basis_setup allocates on the harmonic routes (harmonic_route.c),
 * their names and their declaration to the memory model (basis_terms.c). SMW's basis_setup
 * also takes z and V N^-1 x early, under spectra_run's names (spectra_terms.h). */
#ifndef QP_BASIS_TERMS_H
#define QP_BASIS_TERMS_H

#include "memory_model.h"

#define QP_TERM_V "V"                    /* V^T, then Y = N^-1/2 V^T or L^-1 V^T */
#define QP_TERM_KERNEL "K"               /* V N^-1 V^T, then W = V C^-1 V^T */
#define QP_TERM_SMW_LU "I_plus_K_Lambda" /* LU factors of I + K Lambda (SMW) */
#define QP_TERM_PIVOTS "pivots"
#define QP_TERM_MODE_MAPS_HOST "mode_maps_host" /* SMW in map batches: V N^-1 x of every map */
/* projection with W in column blocks (memory.device_limit, w_block < n_modes): */
#define QP_TERM_KERNEL_BLOCK "W_block" /* device: n_modes x w_block columns of W */
#define QP_TERM_KERNEL_HOST "W_host"   /* host: all of W, assembled block by block */
/* Distributed backend or a device's host windows only: */
#define QP_TERM_SMW_COLUMNS "K_columns" /* SMW: K's columns of one field, redistributed */
#define QP_TERM_V_B "V_B"      /* cross-spectra (projection): V^T, then Y_B = L_B^-1 V^T */
#define QP_TERM_KERNEL_B "K_B" /* cross-spectra: W_B = V C_B^-1 V^T (SMW: K_B first) */
#define QP_TERM_SMW_LU_B "I_plus_K_B_Lambda" /* cross-spectra (SMW): LU of I + K_B Lambda */
#define QP_TERM_PIVOTS_B "pivots_B"
#define QP_TERM_CROSS_FIXED "Q_fixed" /* cross (SMW, switch): V N_B^-1 S_fixed N_A^-1 V^T */

/** Adds basis_setup's terms of the route of `d` to `m` (none on pixel-direct, whose C is
 *  factored in place), after covariance_setup's. */
qp_err qp_basis_terms(const qp_model_dims *d, qp_model *m);

#endif
