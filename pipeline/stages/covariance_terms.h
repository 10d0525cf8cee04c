/* covariance_terms.h: the terms covariance_setup allocates (stage_covariance.c, and the inputs
 * it reads through inputs.c), their names and their declaration to the memory model
 * (covariance_terms.c: bytes, stages and phases). */
#ifndef QP_COVARIANCE_TERMS_H
#define QP_COVARIANCE_TERMS_H

#include "memory_model.h"

#define QP_TERM_SKY_BUFFER "sky_buffer"             /* one full-sky column as a file is read */
#define QP_TERM_OBSERVED_INDEX "observed_index"     /* RING index of each observed pixel */
#define QP_TERM_PIXEL_VECTORS "pixel_vectors"       /* unit vectors of the observed pixels */
#define QP_TERM_MAP_BUFFER "map_buffer"             /* one map x (n_pix) as a batch is read */
#define QP_TERM_NOISE_VARIANCE "noise_variance"     /* diagonal N */
#define QP_TERM_NOISE "N"                           /* dense N */
#define QP_TERM_COVARIANCE "C"                      /* C = S + N; then L, then L^-1, in place */
#define QP_TERM_NOISE_VARIANCE_B "noise_variance_B" /* diagonal N_B of maps2 (cross-spectra) */
#define QP_TERM_COVARIANCE_B "C_B" /* C_B = S + N_B; then L_B, then L_B^-1 (cross-spectra) */
#define QP_TERM_NOISE_EFF "N_eff"  /* SMW: N + S_fixed, then its Cholesky factor */
#define QP_TERM_NOISE_EFF_B "N_B_eff" /* SMW cross: N_B (+ S_fixed), then its Cholesky factor */

/** Adds covariance_setup's terms of the route of `d` to `m`, in the order `qmlpipe budget`
 *  prints them (qp_model_predict calls it first). */
qp_err qp_covariance_terms(const qp_model_dims *d, qp_model *m);
/** Adds the buffers a batch of maps is read through (qp_maps_to_matrix, inputs_maps.c) to
 *  `m`, alive in phase `phase` of `stage` alone: one map (QP_TERM_MAP_BUFFER, n_pix x 8) on
 *  every rank, and the reader's full-sky column (QP_TERM_SKY_BUFFER, n_sky x 8). The stages
 *  that read maps call it with their terms (spectra_terms.c; SMW's basis_terms.c). */
void qp_map_reader_terms(const qp_model_dims *d, qp_model *m, qp_stage_id stage, int phase);

#endif
