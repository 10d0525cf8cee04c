/* terms.h: the names of the pipeline's budget terms, shared by the code that allocates them
 * and by the model (memory_model.c) that predicts them, so that the two cannot drift apart in
 * name. The cuda backend's own buffers are named in linalg/backends/cuda.h. */
#ifndef QP_TERMS_H
#define QP_TERMS_H

/* covariance_setup */
#define QP_TERM_SKY_BUFFER "sky_buffer"         /* one full-sky map while reading inputs */
#define QP_TERM_OBSERVED_INDEX "observed_index" /* RING index of each observed pixel */
#define QP_TERM_PIXEL_VECTORS "pixel_vectors"   /* unit vectors of the observed pixels */
#define QP_TERM_MAPS "maps"                     /* data vectors x, n_pix x n_maps */
#define QP_TERM_NOISE_VARIANCE "noise_variance" /* diagonal N */
#define QP_TERM_NOISE "N"                       /* dense N */
#define QP_TERM_COVARIANCE "C"                  /* C = S + N; then L, then L^-1, in place */
/* basis_setup, harmonic path */
#define QP_TERM_NOISE_EFF "N_eff"               /* N + S_fixed (SMW), then its Cholesky factor */
#define QP_TERM_V "V"                           /* V^T, then Y = N^-1/2 V^T or L^-1 V^T */
#define QP_TERM_KERNEL "K"                      /* V N^-1 V^T, then W = V C^-1 V^T */
#define QP_TERM_SMW_LU "I_plus_K_Lambda"        /* LU factors of I + K Lambda (SMW) */
#define QP_TERM_PIVOTS "pivots"
/* projection with W in column blocks (memory.device_limit, w_block < n_modes): */
#define QP_TERM_KERNEL_BLOCK "W_block"          /* device: n_modes x w_block columns of W */
#define QP_TERM_KERNEL_HOST "W_host"            /* host: all of W, assembled block by block */
/* fisher_run */
#define QP_TERM_PRODUCTS "products"             /* M_p = L^-1 P_p L^-T, and L^-1 N L^-T */
#define QP_TERM_GRAM "gram"                     /* <M_p, M_q> and <M_p, L^-1 N L^-T> */
#define QP_TERM_FISHER "fisher"
#define QP_TERM_NOISE_BIAS "noise_bias"
#define QP_TERM_NOISE_KERNEL "G"               /* harmonic: (I + K Lambda)^-1 W, G transposed */
#define QP_TERM_WEIGHTED_MODES "C_inv_V"        /* projection: C^-1 V^T */
#define QP_TERM_NOISE_MODES "N_eff_C_inv_V"     /* projection: N_eff C^-1 V^T */
#define QP_TERM_NOISE_EFF_DENSE "N_eff_dense"   /* projection: N + S_fixed, for the bias */
/* spectra_run */
#define QP_TERM_WEIGHTED_MAPS "weighted_maps"   /* z = C^-1 x */
#define QP_TERM_BIN_MATRICES "bin_matrices"     /* P_b for a chunk of parameters */
#define QP_TERM_BIN_PRODUCT "bin_product"       /* P_b z */
#define QP_TERM_MODE_MAPS "mode_maps"           /* harmonic: V N^-1 x, then z */
#define QP_TERM_FISHER_BLOCK_SUMS "F_block_sums" /* harmonic: W's (l, l') block sums for F */
#define QP_TERM_MODE_MAPS_HOST "mode_maps_host" /* SMW in map batches: V N^-1 x of every map */
#define QP_TERM_FISHER_INVERSE "fisher_inverse"
#define QP_TERM_RAW_SPECTRA "yb"                /* y_p per map */
#define QP_TERM_SPECTRA "cl"                    /* C_hat per map */
#define QP_TERM_ERRORS "error"
/* Distributed backend only (docs/distributed.md): */
#define QP_TERM_SMW_COLUMNS "K_columns"         /* SMW: K's columns of one field, redistributed */
#define QP_TERM_FIELD_BLOCKS "W_field_blocks"   /* harmonic: W per field pair, aligned by (l, m) */
#define QP_TERM_ALIGNED_MODES "Z_aligned"       /* projection: Z's columns of one field, aligned */
#define QP_TERM_MODE_MAPS_ALL "mode_maps_all"   /* harmonic: z whole on every rank */
#define QP_TERM_PBLAS_PANELS "pblas_panels"     /* PBLAS/ScaLAPACK's own panel buffers (library) */
#endif
