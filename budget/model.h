/* model.h: the predicted memory of every stage of the pipeline, term by term.
 *
 * The model lists each term the pipeline allocates (the same names as budget/terms.h, which
 * the pipeline uses when it allocates) with its exact bytes, kind and the stages where it is
 * allocated and freed. A stage runs in phases 0, 1, 2, ...: a term lives from (stage, phase)
 * of its allocation to (stage, phase) of its release, and inside one phase every live term is
 * alive together. Most stages have one phase; basis_setup of the harmonic SMW route frees N_eff
 * and V as soon as it is done with them (docs/memory-model.md). So:
 *   carried(s)    = bytes of terms allocated before s and still alive in s
 *   peak(s)       = max over the phases of s of the bytes alive in that phase
 *   persistent(s) = bytes alive at the end of s
 * The overhead term (program, libraries, BLAS buffers) is a calibrated constant of the
 * process, measured before the first stage and reported beside the terms, never hidden. */
#ifndef QP_MODEL_H
#define QP_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "budget.h"
#include "checked_size.h"

typedef enum qp_stage_id {
  QP_STAGE_COVARIANCE_SETUP = 0,
  QP_STAGE_BASIS_SETUP,
  QP_STAGE_FISHER_RUN,
  QP_STAGE_SPECTRA_RUN,
  QP_STAGE_COUNT
} qp_stage_id;

/** "covariance_setup", "basis_setup", "fisher_run", "spectra_run". */
const char *qp_stage_name(qp_stage_id stage);

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
  int noise_dense;       /* 1: dense noise covariance N (n_pix^2); 0: a variance per pixel */
  /* The distributed backend (grid_rows = 0: one process holds everything). The model is then
   * of one rank, (grid_row, grid_col) of the grid: its block-cyclic share of every big matrix
   * (budget/block_cyclic.h), the replicated small buffers whole, the sky buffer on the reader
   * (rank 0) only. */
  int grid_rows, grid_cols, grid_row, grid_col, block;
  int reader;            /* 1: this rank reads the inputs (always 1 without a grid) */
  int n_fields;          /* harmonic: fields with modes (T, E, B): W's field blocks */
  int64_t n_lm;          /* harmonic: (lmax + 1)^2, the (l, m) of one padded field block */
} qp_model_dims;

typedef struct qp_model_term {
  char name[QP_TERM_NAME_MAX];
  qp_term_kind kind;
  qp_space space;
  size_t bytes;
  qp_stage_id stage_alloc; /* allocated in this stage */
  qp_stage_id stage_free;  /* freed at the end of (or inside) this stage */
  int phase_alloc;         /* phase of stage_alloc in which it is allocated (0: the first) */
  int phase_free;          /* last phase of stage_free in which it is alive (QP_PHASE_END) */
  const char *formula;     /* how bytes follow from the dimensions, for the printed table */
} qp_model_term;

typedef struct qp_model {
  qp_model_dims dims;
  int n_terms;
  qp_model_term terms[QP_TERMS_MAX];
  size_t overhead_bytes;    /* program + libraries + BLAS buffers + HDF5: the calibrated constant,
                               at most QP_SIZE_TERM_MAX (calibration.h) */
  size_t overhead_parts[3]; /* program, BLAS buffers, HDF5 when calibrated; 0 otherwise */
  /* When qp_model_predict refused the dimensions for a term beyond QP_SIZE_TERM_MAX: its name
   * (else ""), formula and whole size in bytes (a double: it may not fit 64 bits). */
  char oversize_term[QP_TERM_NAME_MAX];
  const char *oversize_formula;
  double oversize_bytes;
  int too_many_terms;
} qp_model;

/** The default overhead (bytes) when none was measured: the RSS of `qmlpipe run` at its
 *  baseline (BLAS kernels, OpenMP pool and the threads' heaps, the libraries' first use, HDF5,
 *  the memory timeline) on the project's 2-core Debian 12 machine (31.4 MiB, OpenBLAS 0.3.21
 *  with 2 threads), rounded up; see docs/memory-model.md. */
#define QP_MODEL_DEFAULT_OVERHEAD ((size_t)32 << 20)
/** The same for problems above n_pix 2048, whose warm-up also runs the BLAS kernels on wide
 *  panels (driver.c): 55.6-55.8 MiB there (`qmlpipe calibrate`, without inputs: 53.8), rounded
 *  up. */
#define QP_MODEL_DEFAULT_OVERHEAD_LARGE ((size_t)57 << 20)

/** Added to the default overhead of a rank of a distributed run: Open MPI, BLACS and
 *  ScaLAPACK's code and buffers after the distributed warm-up (driver.c); 7.1-7.4 MiB measured
 *  per rank on 1-4 ranks here (docs/distributed.md), rounded up. */
#define QP_MODEL_DEFAULT_OVERHEAD_MPI ((size_t)8 << 20)

enum { QP_PHASE_END = 99 };

/** Predicts every term of the path of `dims`. QP_ERR_INPUT on nonsense dims, and on dims
 *  that make any term exceed QP_SIZE_TERM_MAX = 2^56 bytes (checked_size.h): the message
 *  names the term, its formula and the dims, and model->oversize_term the term. The bound is
 *  checked on each term's whole size, the same on every rank of a grid, so every rank accepts
 *  or refuses alike. With every term (and the overhead) at most 2^56 bytes, the sums below
 *  (stage peaks, lifetime peak plus overhead) stay below 2^63 and need no check. */
qp_err qp_model_predict(const qp_model_dims *dims, qp_model *model);

size_t qp_model_stage_carried(const qp_model *model, qp_stage_id stage);
/** Bytes of the library terms of a stage (QP_TERM_LIBRARY: allocated inside library calls,
 *  outside the tracked allocator): added to the peak where it is compared with RSS, never
 *  where it is compared with the allocator's own count. */
size_t qp_model_stage_library(const qp_model *model, qp_stage_id stage);
size_t qp_model_stage_peak(const qp_model *model, qp_stage_id stage);
size_t qp_model_stage_persistent(const qp_model *model, qp_stage_id stage);
/** The largest stage peak (tracked bytes, without the overhead). */
size_t qp_model_peak(const qp_model *model);
/** The term named `name`, or NULL. */
const qp_model_term *qp_model_find(const qp_model *model, const char *name);
/** 1 when the term is alive during `stage`. */
int qp_model_term_alive(const qp_model_term *term, qp_stage_id stage);

/** Prints the table of `qmlpipe budget`: per stage, the persistent and transient terms and the
 *  peak, plus the overhead and the lifetime peak. */
void qp_model_print(FILE *out, const qp_model *model);

#endif
