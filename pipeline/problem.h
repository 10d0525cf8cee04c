/* problem.h: everything one analysis holds: inputs, dimensions, parameters, the plan (read
 * only: plan.h) and the big buffers the stages pass to each other. The driver owns it; stages
 * fill and use it. */
#ifndef QP_PROBLEM_H
#define QP_PROBLEM_H

#include <stdint.h>

#include "calibration.h"
#include "cls_text.h"
#include "config.h"
#include "matrix.h"
#include "memory_model.h"
#include "pixel_window.h"
#include "plan.h"

/* The matrices whose reciprocal condition number is estimated (pipeline/conditioning.h). */
typedef enum qp_rcond_id {
  QP_RCOND_COVARIANCE = 0, /* C = S + N before its Cholesky (pixel-direct, projection) */
  QP_RCOND_NOISE,          /* N or N_eff, which SMW inverts (exact min/max for a diagonal N) */
  QP_RCOND_SMW,            /* I + K Lambda (SMW) */
  QP_RCOND_FISHER,         /* F */
  QP_RCOND_COUNT
} qp_rcond_id;

typedef struct qp_problem {
  const qp_config *cfg;
  const qp_linalg_ops *ops;
  qp_cls cls;

  /* geometry (covariance_setup). The data vector is [T | Q | U] restricted to the fields
   * analysed: T at the n_obs_t pixels of the mask, then Q and U each at the n_obs_p pixels
   * of mask_pol (or the mask), ascending RING index inside each block (QML.md 1). The
   * "positions" are the T pixels followed by the polarisation pixels. */
  int64_t nside, n_sky;
  int64_t n_obs_t, n_obs_p; /* observed pixels of T; of Q and U (0 for a field not analysed) */
  int64_t n_observed;     /* positions: n_obs_t + n_obs_p */
  int64_t n_pix;          /* data vector length: n_obs_t + 2 n_obs_p */
  int64_t n_maps;
  double *sky;            /* QP_TERM_SKY_BUFFER: one full-sky map (covariance_setup only) */
  int64_t *observed;      /* QP_TERM_OBSERVED_INDEX: RING index per position */
  double *vectors;        /* QP_TERM_PIXEL_VECTORS: 3 x n_observed unit vectors */
  double *noise_variance; /* QP_TERM_NOISE_VARIANCE (diagonal N) or NULL */
  qp_matrix noise;        /* QP_TERM_NOISE (dense N) or empty */
  qp_matrix cov;          /* QP_TERM_COVARIANCE: C, then L, then L^-1 */
  /* Cross-spectra (plan->model_dims.cross_maps): maps2's columns follow maps' (map k of maps2
   * is column n_maps + k, qp_maps_to_matrix); every route (SMW's B half further down). */
  double *noise_variance_b; /* QP_TERM_NOISE_VARIANCE_B: N_B (covariance_setup only; SMW without
                               the switch: to basis_setup) */
  qp_matrix cov_b;          /* QP_TERM_COVARIANCE_B: C_B = S + N_B, then L_B, then L_B^-1 */

  /* The plan (plan.h): the route, chunks, limit and model, built by the planner before the
   * first stage and read-only after. */
  const qp_plan *plan;
  /* The plan's storage (plan = &plan_store once planned): written only by the planner's
   * functions (planner.h), which the plan's owner (qp_driver_run, the budget/plan commands)
   * alone calls with it; everything else reads *plan. */
  qp_plan plan_store;

  /* harmonic path: modes are [T | E | B] (fields present), (l, m) in spin_harmonics.h order */
  int64_t n_modes;
  int64_t field_offset[3]; /* first mode of T, E, B; -1 when the field is absent */
  int field_ell_min[3];    /* first multipole of each field (E and B start at 2) */
  qp_matrix vt;            /* QP_TERM_V: V^T (n_pix x n_modes), then Y = N^-1/2 V^T or L^-1 V^T */
  qp_matrix kernel;        /* QP_TERM_KERNEL: K = V N_eff^-1 V^T, then W (SMW); W (projection);
                              QP_TERM_KERNEL_HOST, a host matrix, when W is chunked (qp_w_block) */
  qp_matrix smw_lu;        /* QP_TERM_SMW_LU: I + K Lambda, then its LU factors (SMW) */
  int *pivots;             /* QP_TERM_PIVOTS: of smw_lu */
  qp_matrix noise_factor;  /* QP_TERM_NOISE_EFF: N_eff then its Cholesky factor (SMW, dense) */
  qp_matrix mode_maps;     /* QP_TERM_MODE_MAPS (SMW): V N_eff^-1 x from basis_setup, then z
                              (a batch of maps: qp_map_batch columns) */
  double *mode_maps_host;  /* QP_TERM_MODE_MAPS_HOST (SMW, maps in batches): V N_eff^-1 x of
                              every map, n_modes x n_maps, between basis_setup and spectra_run */
  qp_matrix vt_b;          /* QP_TERM_V_B (cross-spectra): V^T, then Y_B = L_B^-1 V^T */
  qp_matrix kernel_b;      /* QP_TERM_KERNEL_B (cross-spectra): W_B = Y_B^T Y_B (projection);
                              K_B = V N_B,eff^-1 V^T, then W_B (SMW) */
  /* Cross-spectra on SMW (harmonic_smw_cross.c): B's half beside A's. */
  qp_matrix noise_factor_b; /* QP_TERM_NOISE_EFF_B: N_B,eff (dense N_B or the switch), then its
                               Cholesky factor */
  qp_matrix smw_lu_b;       /* QP_TERM_SMW_LU_B: I + K_B Lambda, then its LU factors */
  int *pivots_b;            /* QP_TERM_PIVOTS_B: of smw_lu_b */
  qp_matrix mode_maps_b;    /* QP_TERM_MODE_MAPS_B: V N_B,eff^-1 x_B, then z_B */
  qp_matrix cross_fixed;    /* QP_TERM_CROSS_FIXED (the switch): V N_B,eff^-1 S_fixed N_A,eff^-1 V^T
                               from basis_setup to fisher_run */

  /* parameters */
  int n_bins, n_params;
  int *bin_lo, *bin_hi;   /* n_bins (small: malloc) */
  double *ell_weight;     /* (2l+1)/(4 pi) B_l^2, l = 0..lmax_signal (small: malloc): the
                             beam's weight, the same for every field; what S and P_p carry
                             between two fields is qp_field_weight (the pixel window's too) */
  /* The HEALPix pixel window (`pixel_window: true`, inputs_plan.c): w_l^T (pixel_window.t) and
   * w_l^P (.p), l = 0..lmax_signal; .t NULL without one. .text says what was applied. */
  qp_pixel_window pixel_window;

  /* reciprocal condition numbers (NaN: not formed on this route) */
  double rcond[QP_RCOND_COUNT];
  /* The noise's mean variance over T's entries and over Q's and U's (inputs.c): with S's
   * diagonal, the scale of each field that the conditioning guards equilibrate (conditioning.h) */
  double noise_field_mean[2];
  /* The largest rounding error of C_hat in units of its error bars (stage_spectra.c), NaN
   * until spectra_run */
  double spectra_error;

  /* results */
  double *fisher;         /* QP_TERM_FISHER: n_params^2 */
  double *y_covariance;   /* QP_TERM_Y_COVARIANCE (cross-spectra): M = Cov(y), n_params^2 */
  double *spectra_covariance; /* QP_TERM_SPECTRA_COVARIANCE (cross): F^-1 M F^-1 */
  double *fisher_ell;     /* QP_TERM_FISHER_ELL: F_q,ell, n_params x n_window (window.h) */
  double *window;         /* QP_TERM_WINDOW: W, C order n_params x n_window */
  double *noise_bias;     /* QP_TERM_NOISE_BIAS */
  double *fisher_inverse; /* QP_TERM_FISHER_INVERSE */
  double *yb, *cl;        /* QP_TERM_RAW_SPECTRA, QP_TERM_SPECTRA: n_maps x n_params */
  double *error;          /* QP_TERM_ERRORS */

  qp_calibration calibration; /* the model's measured constants (the overhead) */
  int progress;           /* 1: report progress on stderr */
} qp_problem;

/** The weight of multipole l in S and in every P_p between field a and field b (0: T; 1, 2: E
 *  and B, or Q and U): (2l+1)/(4 pi) B_l^2 w^a_l w^b_l, w^T the pixel window of T and w^E = w^B
 *  that of Q and U (docs/science.md, "Beam and pixel window"). Without a pixel window it is
 *  ell_weight[l] itself, to the bit. */
static inline double qp_field_weight(const qp_problem *p, int a, int b, int l) {
  const qp_pixel_window *w = &p->pixel_window;
  if (!w->t) return p->ell_weight[l];
  return p->ell_weight[l] * ((a ? w->p : w->t)[l] * (b ? w->p : w->t)[l]);
}
/** qp_field_weight of the fields spectrum s couples: TT of T and T; EE, BB, EB of Q/U and Q/U;
 *  TE, TB of T and Q/U (the product of the two windows). */
static inline double qp_spectrum_weight(const qp_problem *p, qp_spectrum s, int l) {
  return qp_field_weight(p, s != QP_TT && s != QP_TE && s != QP_TB, s != QP_TT, l);
}

/** m (n_pix x cols, any backend) <- maps first .. first + cols - 1 (maps2's from n_maps on),
 *  one batch of maps, read from their files (inputs_maps.c): no rank keeps the maps. The
 *  reading rank reads one map at a time into QP_TERM_MAP_BUFFER (through a QP_TERM_SKY_BUFFER),
 *  every rank gets it (a broadcast) and writes its own entries of that column through a host
 *  window of one column. A file that went bad since covariance_setup's check fails on every
 *  rank, naming it. Collective. */
qp_err qp_maps_to_matrix(const qp_problem *p, int64_t first, qp_matrix *m);
/** Maps a per-map matrix holds at once: the plan's map batch (memory_model.h): the default
 *  batch's rule (planner_batch.c, docs/memory-model.md "The maps: read where they are used,
 *  in batches"), or memory.device_limit's fit. The stages loop over the maps in batches. */
static inline int64_t qp_map_batch(const qp_problem *p) {
  return qp_model_map_batch(&p->plan->model_dims);
}
/** Columns of W the projection route's basis_setup forms on the device at once: the plan's
 *  w_block (memory_model.h), n_modes unless memory.device_limit made the planner chunk W. */
static inline int64_t qp_w_block(const qp_problem *p) {
  return qp_model_w_chunked(&p->plan->model_dims) ? p->plan->model_dims.w_block : p->n_modes;
}
/** 1 when W's blocks are formed whole, every row (on a grid, whose blocks start at multiples
 *  of block x npcol); 0 when their lower part alone is, the rest mirrored on the host (one
 *  process): harmonic_route.c, qp_kernel_in_blocks. */
static inline int qp_w_blocks_whole_columns(const qp_problem *p) {
  return p->plan->model_dims.grid_rows > 0;
}
/** The lines of an n_pix-sided matrix that its host window holds at once: local columns of
 *  an n_pix x n_pix matrix where it is built on the host (the pair sums' matrices:
 *  pixel_matrices.h), local rows of V^T where it is built and whitened (harmonic_route.c):
 *  the plan's host_panel under memory.host_limit on a device backend (memory_model.h), else
 *  all of them (INT64_MAX). */
static inline int64_t qp_host_panel(const qp_problem *p) {
  return p->plan->model_dims.host_panel > 0 ? p->plan->model_dims.host_panel : INT64_MAX;
}
/** The width of the host panel from local column col0 of a matrix of local_cols local
 *  columns: qp_host_panel, the last one narrower. Loops: for (col0 = 0, cols; col0 <
 *  local_cols; col0 += cols) cols = qp_host_panel_width(p, local_cols, col0); */
static inline int64_t qp_host_panel_width(const qp_problem *p, int64_t local_cols, int64_t col0) {
  return local_cols - col0 < qp_host_panel(p) ? local_cols - col0 : qp_host_panel(p);
}
/** The maps of the batch that starts at map `first`: at most qp_map_batch, fewer in the last. */
static inline int64_t qp_map_batch_count(const qp_problem *p, int64_t first) {
  const int64_t batch = qp_map_batch(p);
  return p->n_maps - first < batch ? p->n_maps - first : batch;
}
/** The `count` columns one batch uses of a per-map matrix m (qp_map_batch columns): a view of
 *  all of m when count is all of them, on any backend; of its first `count` otherwise (on a
 *  grid too: columns from 0 are a block-cyclic matrix of their own, qp_matrix_columns). */
qp_err qp_map_batch_view(const qp_matrix *m, int64_t count, qp_matrix *view);

/** SMW with the maps in batches keeps every batch's V N_eff^-1 x on the host from basis_setup
 *  to spectra_run (p->mode_maps_host): batch after batch, each as this rank's local part of
 *  p->mode_maps seen as the batch (qp_map_batch_view), leading dimension p->mode_maps.ld.
 *  Where the batch from map `first` starts there. */
double *qp_mode_maps_host_batch(const qp_problem *p, int64_t first);
/** This rank's elements of p->mode_maps_host: every batch's local part. */
int64_t qp_mode_maps_host_elements(const qp_problem *p);
/** Frees every buffer the problem holds (safe at any point, and twice). */
void qp_problem_free(qp_problem *p);
/** Holds the buffers the model says the backend holds from its start (its init terms: a
 *  distributed device backend's tiled blocks, memory_model.h), at the start of the first
 *  stage; a resume holds them with the rest (checkpoint_read.c). */
qp_err qp_problem_hold_backend(const qp_problem *p);
/** The bytes qp_problem_hold_backend holds (this rank's): the backend's, not state. */
size_t qp_problem_backend_held_bytes(const qp_problem *p);

#endif
