/* memory_model.h: qmlpipe's memory model: its four stages and, for each route, every term it
 * allocates with its exact bytes, declared through the generic model of budget/model.h.
 *
 * The names are those of terms.h, which the stages allocate under. Most stages have one
 * phase; basis_setup of the harmonic SMW route frees N_eff and V as soon as it is done with
 * them, and the distributed fisher_run has three (docs/memory-model.md). */
#ifndef QP_MEMORY_MODEL_H
#define QP_MEMORY_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "matrix.h"
#include "model.h"

typedef enum qp_stage_id {
  QP_STAGE_COVARIANCE_SETUP = 0,
  QP_STAGE_BASIS_SETUP,
  QP_STAGE_FISHER_RUN,
  QP_STAGE_SPECTRA_RUN,
  QP_STAGE_COUNT
} qp_stage_id;

/** "covariance_setup", "basis_setup", "fisher_run", "spectra_run": the budget stages. */
extern const char *const qp_stage_names[QP_STAGE_COUNT];
static inline const char *qp_stage_name(qp_stage_id stage) {
  return stage >= 0 && stage < QP_STAGE_COUNT ? qp_stage_names[stage] : "?";
}

typedef enum qp_model_path {
  QP_MODEL_PIXEL_DIRECT = 0,
  QP_MODEL_HARMONIC_SMW = 1,
  QP_MODEL_HARMONIC_PROJECTED = 2
} qp_model_path;

typedef struct qp_model_dims {
  qp_model_path path;
  int64_t n_modes;       /* harmonic: modes of V (all fields) */
  int switched;          /* lmax < lmax_signal: S_fixed joins the noise (QML.md 3) */
  int64_t n_sky;         /* pixels of one full-sky map, 12 nside^2 */
  int64_t n_positions;   /* observed pixels: of T plus of Q/U (each position has a vector) */
  int64_t n_pix;         /* length of the data vector (observed pixels x fields) */
  int64_t n_maps;        /* maps analysed together */
  int64_t n_params;      /* spectra x bins */
  int64_t fisher_chunk;  /* pixel-direct: products held at once in fisher_run */
  int64_t spectra_chunk; /* pixel-direct: bin matrices held at once in spectra_run */
  int64_t map_batch;     /* maps a per-map matrix holds at once (1..n_maps; 0: n_maps): every
                            per-map matrix has map_batch columns (planner_batch.c: the default
                            batch, or memory.device_limit's) */
  int64_t w_block;       /* projection: columns of W = Y^T Y on the device at once (1..n_modes;
                            0: n_modes). Below n_modes W is formed in blocks and kept whole on
                            the host only (planner_chunks.c, memory.device_limit; one rank) */
  int64_t host_panel;    /* device backends: the lines of an n_pix-sided matrix on the host at
                            once (1..; 0: all; planner_chunks.c, memory.host_limit): local
                            columns of each pair-sum matrix (C, N_eff, the products, the bin matrices)
                            where    it is built (pixel_matrices.h), local rows of V^T where it is built
                            and whitened and of a batch of maps written (and pixel-direct's z
                            and P_b z read), the columns of Z, I + K Lambda and G
                            (qp_model_mode_panel), and the columns of W's field blocks that
                            F's block sums read (qp_model_field_panel) */
  int64_t product_panel; /* projection without W (qp_model_w_windows): the (l, m) columns of
                            W's field windows made from Y at once in fisher_run, and of Z's
                            columns the noise bias lines up (0: all; planner_chunks.c) */
  int noise_dense;       /* 1: dense noise covariance N (n_pix^2); 0: a variance per pixel */
  int noise2_dense;      /* cross-spectra: noise2 a dense covariance, read into C_B's buffer
                            (SMW: N_B,eff's) (no variances of N_B) */
  int64_t n_window;      /* the window functions' columns: spectra x (lmax - ell_min + 1); 0
                            with window_functions: false */
  int cross_maps;        /* 1: cross-spectra of maps and maps2 (docs/science.md): the second
                            maps, their noise, C_B and its z beside the first's */
  /* The distributed backend (grid_rows = 0: one process holds everything). The model is then
   * of one rank, (grid_row, grid_col) of the grid: its block-cyclic share of every big matrix
   * (budget/block_cyclic.h), the replicated small buffers whole, the sky buffer on the reader
   * (rank 0) only. */
  int grid_rows, grid_cols, grid_row, grid_col, block;
  int reader;             /* 1: this rank reads the inputs (always 1 without a grid) */
  int device;             /* 1: a device backend (cuda, hostdev): the matrices are device terms, and
                             the host holds the staging of their windows (host_window.h) and
                             the work matrices that align and replicate download into */
  int n_fields;           /* harmonic: fields with modes (T, E, B): W's field blocks */
  int64_t n_lm;           /* harmonic: (lmax + 1)^2, the (l, m) of one padded field block */
  int fisher_block_slots; /* harmonic: the quadruples of fields whose (l, l') block sums F
                             is made of (qp_fisher_block_slots, harmonic_modes.h) */
  int cross_fields;       /* harmonic: a spectrum of two fields (TE, TB, EB), whose noise bias
                             lines Z's columns of one field up with another's (qp_spectra_cross) */
  /* A device backend's table whose own buffers (library workspaces, pivots: matrix.h's
   * workspaces) the model predicts for the operations each stage runs at these sizes; NULL:
   * none predicted (host backends; cuda before its context exists: planner.c says so). */
  const qp_linalg_ops *backend;
} qp_model_dims;

/** 1 when the projection route's fisher_run forms Z = C^-1 V^T (n_pix x n_modes, for the
 *  noise bias) in W's buffer (n_modes^2), which it is done with once F is summed, rather than
 *  in a buffer of its own (the C_inv_V term): whenever Z fits, n_pix <= n_modes (on a grid
 *  too: a rank's block-cyclic share of n_pix rows is at most its share of n_modes rows). */
static inline int qp_model_modes_in_kernel(int64_t n_pix, int64_t n_modes) {
  return n_pix <= n_modes;
}

/** The lines of a host window of `lines` lines (columns, or rows) held at once, a panel
 *  from line 0, then the next: all of them without a host_panel; else host_panel, on a grid
 *  rounded down to whole blocks on every process column (a multiple of block x npcol, at
 *  least one: a range of columns that starts there is a block-cyclic matrix of its own,
 *  qp_matrix_columns), so a rank's window of a panel holds host_panel local lines rounded
 *  down to whole blocks (one block at least). */
static inline int64_t qp_model_panel_of(const qp_model_dims *d, int64_t lines) {
  int64_t panel = d->host_panel > 0 ? d->host_panel : lines;
  if (d->host_panel > 0 && d->grid_rows > 0) {
    const int64_t blocks = d->host_panel / d->block;
    panel = (blocks > 1 ? blocks : 1) * (int64_t)d->block * d->grid_cols;
  }
  return panel < lines ? panel : lines;
}

/** The columns of an n_modes-wide matrix held in a host window at once: of Z (n_pix x
 *  n_modes) that the projection route's noise bias reads (harmonic_bias.c), of SMW's
 *  I + K Lambda as it is built, with K's columns lined up with them (harmonic_route.c), and
 *  of SMW's G as the bias reads it. */
/** 1 when the projection route never forms W (auto-spectra on a host backend, cpu or dist):
 *  fisher_run makes each panel of W's field windows from Y (qp_linalg_gemm_sub), then turns Y
 *  into Z = L^-T Y in place and frees L; spectra_run's z = Z^T x. Elsewhere (a device
 *  backend, cross-spectra) W is formed whole in basis_setup and read through its windows. */
static inline int qp_model_w_windows(const qp_model_dims *d) {
  return d->path == QP_MODEL_HARMONIC_PROJECTED && !d->device && !d->cross_maps;
}

/** The panel of product_panel lines, on a grid rounded down to whole blocks on every process
 *  column (at least one): all `lines` without one. */
static inline int64_t qp_model_product_panel_of(const qp_model_dims *d, int64_t lines) {
  int64_t panel = d->product_panel > 0 ? d->product_panel : lines;
  if (d->product_panel > 0 && d->grid_rows > 0) {
    const int64_t unit = (int64_t)d->block * d->grid_cols;
    panel = (panel / unit > 1 ? panel / unit : 1) * unit;
  }
  return panel < lines ? panel : lines;
}

/** Without W, the columns of a panel of W's windows made by one product: the windows' rows reach
 *  down to the chunk's last column only (F is summed from the entries on and above W's
 *  diagonal, harmonic_fisher.c), so the products cost syrk's flops but the chunks' triangles
 *  (planner_route.c counts them); on a grid a chunk spans every process column at least. */
static inline int64_t qp_model_w_chunk(const qp_model_dims *d) {
  const int64_t grid = d->grid_rows > 0 ? (int64_t)d->block * d->grid_cols : 0;
  return grid > 256 ? grid : 256;
}

static inline int64_t qp_model_mode_panel(const qp_model_dims *d) {
  if (qp_model_w_windows(d)) return qp_model_product_panel_of(d, d->n_modes);
  return qp_model_panel_of(d, d->n_modes);
}

/** The columns of W's field blocks (n_lm x n_lm each, W per field pair lined up by (l, m))
 *  that fisher_run's block sums read at once, where aligning moves data
 *  (harmonic_fisher.c). */
static inline int64_t qp_model_field_panel(const qp_model_dims *d) {
  if (qp_model_w_windows(d)) return qp_model_product_panel_of(d, d->n_lm);
  return qp_model_panel_of(d, d->n_lm);
}

/** The maps a device matrix holds at once: map_batch, or n_maps where it is 0. */
static inline int64_t qp_model_map_batch(const qp_model_dims *d) {
  return d->map_batch > 0 ? d->map_batch : d->n_maps;
}

/** 1 when the projection route forms W in column blocks of w_block and keeps it on the host
 *  (terms W_block and W_host); 0: W whole in the run's space (term K), as without a limit. */
static inline int qp_model_w_chunked(const qp_model_dims *d) {
  return d->path == QP_MODEL_HARMONIC_PROJECTED && d->w_block > 0 && d->w_block < d->n_modes;
}

/** The default overhead (bytes) when none was measured, less OpenBLAS's buffers: the RSS of
 *  `qmlpipe run` at its baseline (BLAS and LAPACK code, OpenMP pool and the threads' heaps,
 *  the libraries' first use, HDF5, the memory timeline) on the project's 2-core Debian 12
 *  machine (OpenBLAS 0.3.21 with 2 threads), 23.5-23.6 MiB once the buffer pages the warm-up
 *  touches (qp_blas_buffer_bytes, blas_buffers.h, which the planner adds) are taken off, from n_pix
 *  960 to 8064, rounded up; see docs/memory-model.md. */
#define QP_MODEL_DEFAULT_OVERHEAD ((size_t)24 << 20)

/** The largest order of the distributed warm-up's pdpotrf and pdtrtri (warm_up.c: ~1 s): the
 *  PBLAS panels of basis_setup's calls up to that order are already in the heap (its freed
 *  panels stay there for the stage to reuse), so the model carries only the rest. */
#define QP_DIST_WARM_UP_ORDER_MAX 4096
/** Added to the default overhead of a rank of a distributed run: Open MPI, BLACS and
 *  ScaLAPACK's code and buffers after the distributed warm-up (driver.c); 7.1-7.4 MiB measured
 *  per rank on 1-4 ranks here (docs/distributed.md), rounded up. */
#define QP_MODEL_DEFAULT_OVERHEAD_MPI ((size_t)8 << 20)

/** Predicts every term of the route of `dims` (the model's overhead: the built-in default;
 *  the caller sets the calibrated one). QP_ERR_INPUT on nonsense dims, and on dims that make
 *  any term exceed QP_SIZE_TERM_MAX = 2^56 bytes (checked_size.h): the message names the
 *  term, its formula and the dims, and model->oversize_term the term. The bound is checked on
 *  each term's whole size, the same on every rank of a grid, so every rank accepts or refuses
 *  alike. With every term (and the overhead) at most 2^56 bytes, the model's sums (stage
 *  peaks, lifetime peak plus overhead) stay below 2^63 and need no check. */
qp_err qp_model_predict(const qp_model_dims *dims, qp_model *model);

/** 1 when t is one of the device backend's own buffers (dims.backend's workspaces), not a
 *  matrix of the stages. */
int qp_model_backend_term(const qp_model_term *t);
/** 1 when t is one the backend holds from its start (QP_OP_INIT's; a distributed device
 *  backend's tiled blocks): what the run holds at the start of its first stage. */
int qp_model_backend_init_term(const qp_model_term *t);

/** Prints the table of `qmlpipe budget`: the route and dimensions, then per stage the
 *  persistent and transient terms and the peak, the overhead and the lifetime peak. */
void qp_model_print(FILE *out, const qp_model_dims *dims, const qp_model *model);

#endif
