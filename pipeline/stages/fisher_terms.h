/* fisher_terms.h: the terms fisher_run allocates (stage_fisher.c's pixel products,
 * harmonic_fisher.c's F and harmonic_bias.c's b), their names and their declaration to the memory
 * model (fisher_terms.c). */
#ifndef QP_FISHER_TERMS_H
#define QP_FISHER_TERMS_H

#include "memory_model.h"

#define QP_TERM_PRODUCTS "products" /* M_p = L^-1 P_p L^-T, and L^-1 N L^-T */
#define QP_TERM_GRAM "gram"         /* <M_p, M_q> and <M_p, L^-1 N L^-T> */
#define QP_TERM_FISHER "fisher"
/* Cross-spectra: H = L_B^-1 S L_A^-T, and M = Cov(y) (docs/science.md) */
#define QP_TERM_CROSS_SIGNAL "cross_signal"
#define QP_TERM_Y_COVARIANCE "y_covariance"
#define QP_TERM_FISHER_ELL "fisher_ell"     /* F_q,ell against the unbinned P_ell (window.h) */
#define QP_TERM_WINDOW_SLOTS "window_slots" /* pixel-direct: unbinned P_ell built together */
#define QP_TERM_NOISE_BIAS "noise_bias"
#define QP_TERM_FISHER_BLOCK_SUMS "F_block_sums" /* harmonic: W's (l, l') block sums for F */
#define QP_TERM_NOISE_KERNEL "G"                 /* harmonic: (I + K Lambda)^-1 W, G transposed */
#define QP_TERM_WEIGHTED_MODES "C_inv_V"         /* projection: C^-1 V^T */
#define QP_TERM_NOISE_MODES "N_eff_C_inv_V"      /* projection: N_eff C^-1 V^T */
#define QP_TERM_NOISE_EFF_DENSE "N_eff_dense"    /* projection: N + S_fixed, for the bias */
/* Distributed backend or a device's host windows only: */
#define QP_TERM_FIELD_BLOCKS "W_field_blocks" /* harmonic: W per field pair, aligned by (l, m) */
#define QP_TERM_ALIGNED_MODES "Z_aligned"     /* projection: Z's columns of one field, aligned */
/* Cross-spectra on the projection route (harmonic_cross.c) */
#define QP_TERM_CROSS_KERNEL "H_cross"     /* H = W_B Lambda W_A + Z_B^T S_fixed Z_A */
#define QP_TERM_CROSS_KERNEL_T "H_cross_T" /* H^T */
#define QP_TERM_CROSS_LAMBDA "W_B_Lambda"  /* W_B Lambda */
#define QP_TERM_LAMBDA_COLUMNS "W_B_columns" /* W_B's columns of one field, on the host */
#define QP_TERM_CROSS_FIELD_BLOCKS "H_field_blocks" /* H and H^T per field pair, aligned */
#define QP_TERM_CROSS_BLOCK_SUMS "H_block_sums"     /* H's (l, l') block sums for Cov(y) */

/** Adds fisher_run's terms of the route of `d` to `m`, after basis_setup's. */
qp_err qp_fisher_terms(const qp_model_dims *d, qp_model *m);

/** Pixel-direct: the unbinned P_ell fisher_run builds in one pass for the window functions
 *  (stage_fisher.c): min(n_window, fisher_chunk / 4, 16), at least 1; 0 without window
 *  functions, with bins of one multipole (F_(q,ell) is F) and on the harmonic routes. One pass
 *  recurses once over every pair for all its targets: the batch cuts the passes by its size,
 *  for at most a quarter more than the products' memory; a batch of 1 takes the products'
 *  spare slot (no term of its own), so that a small chunk needs no more memory than before. */
int64_t qp_fisher_window_batch(const qp_model_dims *d);

#endif
