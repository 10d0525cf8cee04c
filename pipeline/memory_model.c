/* memory_model.c: qmlpipe's memory model: the terms of every route and stage (memory_model.h).
 *
 * One function lists every term with its exact bytes; the pipeline allocates the same names
 * (terms.h) with the same sizes, and tests/pipeline/test_budget_exact.c fails on any drift. */
#include "memory_model.h"

#include <string.h>

#include "block_cyclic.h"
#include "checkpoint.h"
#include "checked_size.h"
#include "host_window.h"
#include "terms.h"
#include "tiled_sizes.h"

const char *const qp_stage_names[QP_STAGE_COUNT] = {"covariance_setup", "basis_setup",
                                                    "fisher_run", "spectra_run"};

/* Bytes of a rows x cols matrix of doubles on this rank: all of it, or its block-cyclic part
 * (whose local counts are at most rows and cols: block_cyclic.h). */
static qp_model_bytes qp_matrix_bytes(const qp_model_dims *d, int64_t rows, int64_t cols) {
  qp_model_bytes b;
  size_t elements = 0;
  qp_size_bytes(rows, 1, &elements);
  qp_size_bytes(cols, elements, &elements);
  qp_size_mul(elements, sizeof(double), &b.whole);
  b.approx = (double)rows * (double)cols * (double)sizeof(double);
  b.here = b.whole;
  if (d->grid_rows > 0) {
    qp_size_bytes(qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows), 1, &elements);
    qp_size_bytes(qp_bc_local_count(cols, d->block, d->grid_col, d->grid_cols), elements,
                  &elements);
    qp_size_mul(elements, sizeof(double), &b.here);
  }
  return b;
}

/* PBLAS's panels for a rows x cols operand on this rank (see the pblas_panels term); the whole
 * is the bound (rows + cols) x block x 8 that no rank's panels exceed. */
static qp_model_bytes qp_panel_bytes(const qp_model_dims *d, int64_t rows, int64_t cols) {
  qp_model_bytes b;
  size_t per_block = 0;
  qp_size_mul((size_t)d->block, sizeof(double), &per_block);
  size_t span = 0;
  qp_size_add((size_t)rows, (size_t)cols, &span);
  qp_size_mul(span, per_block, &b.whole);
  b.approx = ((double)rows + (double)cols) * (double)d->block * (double)sizeof(double);
  qp_size_bytes(qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows) +
                    qp_bc_local_count(cols, d->block, d->grid_col, d->grid_cols),
                per_block, &b.here);
  return b;
}

/* A matrix of the run's backend: in device memory on a device backend. */
static qp_model_term *qp_on_backend(const qp_model_dims *d, qp_model_term *t) {
  if (d->device) t->space = QP_SPACE_DEVICE;
  return t;
}

/* The larger on this rank (its local parts, which a grid may order unlike the wholes). */
static qp_model_bytes qp_bytes_max(qp_model_bytes a, qp_model_bytes b) {
  return a.here != b.here ? (a.here > b.here ? a : b) : a.approx >= b.approx ? a : b;
}
static qp_model_bytes qp_bytes_sum(qp_model_bytes a, qp_model_bytes b) {
  qp_size_add(a.here, b.here, &a.here);
  qp_size_add(a.whole, b.whole, &a.whole);
  a.approx += b.approx;
  return a;
}

/* A rows x cols matrix's host window of d->host_panel of its lines (all of them for 0 or
 * more): of its local columns, or of its local rows when `of_rows` (V^T), by all the other
 * way. This rank's share; the whole is one process's. */
static qp_model_bytes qp_panel_window_bytes(const qp_model_dims *d, int64_t rows, int64_t cols,
                                            int of_rows) {
  if (d->host_panel <= 0) return qp_matrix_bytes(d, rows, cols);
  const int64_t hp = d->host_panel;
  qp_model_dims one = *d; /* the whole: one process's panel */
  one.grid_rows = 0;
  qp_model_bytes b = qp_matrix_bytes(&one, of_rows && hp < rows ? hp : rows,
                                     !of_rows && hp < cols ? hp : cols);
  if (d->grid_rows > 0) { /* here: this rank's local lines, a panel of them one way */
    int64_t lr = qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows),
            lc = qp_bc_local_count(cols, d->block, d->grid_col, d->grid_cols);
    if (of_rows && hp < lr) lr = hp;
    if (!of_rows && hp < lc) lc = hp;
    size_t elements = 0;
    qp_size_bytes(lr, 1, &elements);
    qp_size_bytes(lc, elements, &elements);
    qp_size_mul(elements, sizeof(double), &b.here);
  }
  return b;
}

/* Host staging of a device run, one block per stage (driver.c reserves it, host_window.h):
 * the most its windows hold open at once; 0 on a host backend. */
static void qp_staging_bytes(const qp_model_dims *d, qp_model_bytes out[QP_STAGE_COUNT]) {
  const qp_model_bytes none = {0, 0, 0.0};
  for (int s = 0; s < QP_STAGE_COUNT; ++s) out[s] = none;
  if (!d->device) return;
  const int64_t n = d->n_pix, nm = d->n_modes;
  const int pixel = d->path == QP_MODEL_PIXEL_DIRECT, smw = d->path == QP_MODEL_HARMONIC_SMW;
  /* SMW's n_modes^2 windows (I + K Lambda built, G read) are panels of columns. */
  /* A batch of maps is written (and pixel-direct's z and P_b z read) a panel of rows at a
   * time (problem.c, stage_spectra.c). */
  const qp_model_bytes kernel = qp_matrix_bytes(d, nm, qp_model_mode_panel(d)),
                       maps = qp_panel_window_bytes(d, n, qp_model_map_batch(d), 1);
  /* covariance_setup: a dense N read, C (or SMW's N_eff) built, each a panel of columns at a
   * time (inputs.c; pixel_matrices.c: N's variances and S added). */
  const qp_model_bytes built = qp_panel_window_bytes(d, n, n, 0);
  out[QP_STAGE_COVARIANCE_SETUP] = d->noise_dense || !smw || d->switched ? built : none;
  /* basis_setup: V^T built (SMW: and whitened), a panel of rows at a time; a batch of maps
   * (SMW), I + K Lambda built a panel of columns at a time (SMW); pixel-direct nothing (L^-1's upper triangle is cleared
   * on the device). */
  const qp_model_bytes vt = qp_panel_window_bytes(d, n, nm, 1);
  out[QP_STAGE_BASIS_SETUP] =
      pixel ? none : smw ? qp_bytes_max(qp_bytes_max(vt, maps), kernel) : vt;
  /* fisher_run: pixel-direct, the whitened noise (unless a dense N without the switch is
   * copied in), a chunk of P_p (each a panel at a time: pixel_matrices.h), then the Gram
   * matrix read (whole on every rank); projection, N_eff with the switch, then a panel of
   * Z's columns (or N_eff Z's) read for the bias; SMW, a panel of G's columns read. */
  const int64_t k = d->fisher_chunk;
  if (pixel)
    out[QP_STAGE_FISHER_RUN] =
        qp_bytes_max(qp_model_bytes_times((size_t)k, built), /* k panels >= the noise's one */
                     qp_model_bytes_times((size_t)k + 1,
                                          qp_model_vector_bytes(k + 1, sizeof(double))));
  else
    out[QP_STAGE_FISHER_RUN] =
        smw ? kernel : qp_bytes_max(qp_matrix_bytes(d, n, qp_model_mode_panel(d)),
                                    d->switched ? built : none);
  /* spectra_run: pixel-direct, a chunk of P_b built, then a batch of maps written, then a
   * panel of rows of z and of P_b z read together; projection, a batch of maps written. */
  out[QP_STAGE_SPECTRA_RUN] =
      pixel ? qp_bytes_max(qp_model_bytes_times((size_t)d->spectra_chunk, built),
                           qp_model_bytes_times(2, maps))
            : smw ? none : maps;
}

/* An operation with buffers of the backend's own that a stage runs on the device (one rank:
 * a distributed device backend runs its library's distributed operations, hostdev-dist's
 * hold none): in the stage's phase `phase`, on an n x n operand, nrhs right-hand sides. */
typedef struct qp_backend_call {
  qp_stage_id stage;
  int phase;
  qp_linalg_op op;
  int64_t n, nrhs;
} qp_backend_call;

enum { QP_BACKEND_CALLS_MAX = 16 };

/* The device operations of the stages, in their order (stage_covariance.c, stage_basis.c,
 * harmonic_route.c, harmonic_estimates.c; a conditioned Cholesky is norm1, potrf, pocon). */
static int qp_backend_calls(const qp_model_dims *d, qp_backend_call out[QP_BACKEND_CALLS_MAX]) {
  const int64_t n = d->n_pix, nm = d->n_modes, batch = qp_model_map_batch(d);
  const qp_stage_id cov = QP_STAGE_COVARIANCE_SETUP, bas = QP_STAGE_BASIS_SETUP;
  int k = 0;
  const int smw = d->path == QP_MODEL_HARMONIC_SMW;
  /* covariance_setup: a dense N's own Cholesky in C's buffer (not on SMW). */
  if (d->noise_dense && !smw) out[k++] = (qp_backend_call){cov, 0, QP_OP_POTRF, n, 0};
  /* basis_setup, phase 0: C's (or SMW's dense N_eff's) conditioned Cholesky. */
  if (!smw || d->noise_dense || d->switched) {
    out[k++] = (qp_backend_call){bas, 0, QP_OP_NORM1, n, 0};
    out[k++] = (qp_backend_call){bas, 0, QP_OP_POTRF, n, 0};
    out[k++] = (qp_backend_call){bas, 0, QP_OP_POCON, n, 0};
  }
  if (d->path == QP_MODEL_PIXEL_DIRECT) out[k++] = (qp_backend_call){bas, 0, QP_OP_TRTRI, n, 0};
  if (smw) {
    /* phase 2: I + K Lambda's LU, W = (I + K Lambda)^-1 K; then G in fisher_run (phase 1)
     * and z a batch of maps at a time in spectra_run. */
    out[k++] = (qp_backend_call){bas, 2, QP_OP_NORM1, nm, 0};
    out[k++] = (qp_backend_call){bas, 2, QP_OP_GETRF, nm, 0};
    out[k++] = (qp_backend_call){bas, 2, QP_OP_GECON, nm, 0};
    out[k++] = (qp_backend_call){bas, 2, QP_OP_GETRS, nm, nm};
    out[k++] = (qp_backend_call){QP_STAGE_FISHER_RUN, 1, QP_OP_GETRS, nm, nm};
    out[k++] = (qp_backend_call){QP_STAGE_SPECTRA_RUN, 0, QP_OP_GETRS, nm, batch};
  }
  return k;
}

static const char qp_backend_init_formula[] = "the backend's, from its start";
static const char qp_backend_ops_formula[] =
    "the backend's own for its operations, the largest so far";

int qp_model_backend_term(const qp_model_term *t) {
  return t->formula == qp_backend_init_formula || t->formula == qp_backend_ops_formula;
}

/* A backend term held now: its size and its model entry (the last one declared). */
typedef struct qp_backend_held {
  const char *term;
  qp_space space;
  size_t bytes;
  qp_model_term *entry;
} qp_backend_held;

int qp_model_backend_init_term(const qp_model_term *t) {
  return t->formula == qp_backend_init_formula;
}

/* Workspaces the backend holds from its start: terms from the first stage to the last. */
static void qp_model_add_init_workspaces(qp_model *m, const qp_workspace *need, int count) {
  for (int i = 0; i < count; ++i)
    if (need[i].bytes > 0)
      qp_model_add(m, need[i].term, QP_TERM_PERSISTENT,
                   qp_model_vector_bytes((int64_t)need[i].bytes, 1), QP_STAGE_COVARIANCE_SETUP,
                   QP_STAGE_SPECTRA_RUN, qp_backend_init_formula)
          ->space = need[i].space;
}

/* Bytes `doubles_of` gives for this rank's tiled sizes (here) and rank (0, 0)'s, which hold the
 * most of every block-cyclic dimension (whole). */
static qp_model_bytes qp_tiled_bytes(const qp_model_dims *d, int64_t dim,
                                     int64_t (*doubles_of)(const qp_tiled_sizes *)) {
  const qp_tiled_sizes here = qp_tiled_bound_sizes(dim, d->block, d->grid_rows, d->grid_cols,
                                                   d->grid_row, d->grid_col);
  const qp_tiled_sizes whole =
      qp_tiled_bound_sizes(dim, d->block, d->grid_rows, d->grid_cols, 0, 0);
  qp_model_bytes b = qp_model_vector_bytes(doubles_of(&whole), sizeof(double));
  b.here = (size_t)doubles_of(&here) * sizeof(double);
  return b;
}

/* A distributed device backend (hostdev-dist, cuda-dist) runs the tiled algorithms
 * (linalg/tiled/tiled.h) and holds their blocks (pocon's vector in them) from its start at the bound
 * of the problem's largest dimension, with the local table's workspace of a diagonal block's
 * Cholesky; dist holds the same blocks in host memory on the harmonic routes, for SMW's solves
 * (its getrs is tiled) and the field blocks' redistribution (its copy_sub is, while held). */
static qp_err qp_model_tiled_terms(const qp_model_dims *d, qp_model *m) {
  const qp_stage_id first = QP_STAGE_COVARIANCE_SETUP, last = QP_STAGE_SPECTRA_RUN;
  /* The largest side of a distributed operand: n_pix, n_modes, or a batch of maps (z). */
  const int64_t batch = qp_model_map_batch(d);
  int64_t dim = d->n_modes > d->n_pix ? d->n_modes : d->n_pix;
  if (batch > dim) dim = batch;
  qp_model_add(m, QP_TERM_TILED_HOST, QP_TERM_PERSISTENT,
               qp_tiled_bytes(d, dim, qp_tiled_host_doubles), first, last,
               qp_backend_init_formula);
  qp_model_add(m, QP_TERM_TILED_PANELS, QP_TERM_PERSISTENT,
               qp_tiled_bytes(d, dim, qp_tiled_local_doubles), first, last,
               qp_backend_init_formula)
      ->space = d->device ? QP_SPACE_DEVICE : QP_SPACE_HOST;
  if (d->backend && d->device) {
    /* The local table's own (cuda's: cuBLAS's workspace, the info word, pinned staging), then
     * its solver at order block: potrf's and trtri's of the diagonal blocks, one held block
     * per term at the larger of the two. */
    qp_workspace need[QP_WORKSPACES_MAX], more[QP_WORKSPACES_MAX];
    int count = 0, extra = 0;
    const qp_linalg_ops *local = qp_linalg_local_ops(d->backend);
    QP_CALL(qp_linalg_workspaces(local, QP_OP_INIT, d->block, 0, need, &count));
    qp_model_add_init_workspaces(m, need, count);
    QP_CALL(qp_linalg_workspaces(local, QP_OP_POTRF, d->block, 0, need, &count));
    QP_CALL(qp_linalg_workspaces(local, QP_OP_TRTRI, d->block, 0, more, &extra));
    for (int i = 0; i < extra; ++i) {
      int h = 0;
      while (h < count && strcmp(need[h].term, more[i].term) != 0) ++h;
      if (h < count && need[h].bytes < more[i].bytes) need[h].bytes = more[i].bytes;
      if (h == count && count < QP_WORKSPACES_MAX) need[count++] = more[i];
    }
    qp_model_add_init_workspaces(m, need, count);
  }
  return QP_OK;
}

/* The backend's own buffers (docs/memory-model.md, "Device backends"): QP_OP_INIT's from the
 * first stage to the last, then every term the stages' operations need, held from the first
 * to the end of the run at the largest size asked for so far: one entry per size, from the
 * (stage, phase) where an operation grows it (the old block is freed before the larger one
 * is taken, so the two are never alive in one phase). */
static qp_err qp_model_backend_terms(const qp_model_dims *d, qp_model *m) {
  if (d->device && d->grid_rows > 0) return qp_model_tiled_terms(d, m);
  if (d->grid_rows > 0 && d->path != QP_MODEL_PIXEL_DIRECT) return qp_model_tiled_terms(d, m);
  if (!d->device || !d->backend || d->grid_rows > 0) return QP_OK;
  const qp_stage_id last = QP_STAGE_SPECTRA_RUN;
  qp_workspace need[QP_WORKSPACES_MAX];
  int count = 0;
  QP_CALL(qp_linalg_workspaces(d->backend, QP_OP_INIT, d->n_pix, 0, need, &count));
  qp_model_add_init_workspaces(m, need, count);
  qp_backend_call calls[QP_BACKEND_CALLS_MAX];
  const int n_calls = qp_backend_calls(d, calls);
  enum { HELD_MAX = 8 };
  qp_backend_held held[HELD_MAX];
  int n_held = 0;
  for (int c = 0; c < n_calls; ++c) {
    const qp_backend_call *call = &calls[c];
    QP_CALL(qp_linalg_workspaces(d->backend, call->op, call->n, call->nrhs, need, &count));
    for (int i = 0; i < count; ++i) {
      int h = 0;
      while (h < n_held && strcmp(held[h].term, need[i].term) != 0)
        ++h;
      if (h == n_held) {
        QP_CHECK(n_held < HELD_MAX, QP_ERR_INTERNAL, "budget model: more than %d backend terms",
                 HELD_MAX);
        held[n_held++] = (qp_backend_held){need[i].term, need[i].space, 0, NULL};
      }
      qp_backend_held *t = &held[h];
      if (need[i].bytes <= t->bytes) continue;
      t->bytes = need[i].bytes;
      const qp_model_bytes bytes = qp_model_vector_bytes((int64_t)t->bytes, 1);
      if (t->entry && t->entry->stage_alloc == (int)call->stage &&
          t->entry->phase_alloc == call->phase) {
        t->entry->bytes = bytes.here; /* grown in the phase it was taken in */
        continue;
      }
      if (t->entry) { /* the smaller block ends with the phase before */
        t->entry->stage_free = call->phase > 0 ? (int)call->stage : (int)call->stage - 1;
        t->entry->phase_free = call->phase > 0 ? call->phase - 1 : QP_PHASE_END;
      }
      t->entry = qp_model_add(m, t->term, QP_TERM_PERSISTENT, bytes, call->stage, last,
                              qp_backend_ops_formula);
      t->entry->space = t->space;
      t->entry->phase_alloc = call->phase;
    }
  }
  return QP_OK;
}

qp_err qp_model_predict(const qp_model_dims *d, qp_model *m) {
  qp_model_init(m, QP_STAGE_COUNT, qp_stage_names);
  m->checkpoint_saves = qp_checkpoint_saves;
  QP_CHECK(d->n_positions > 0 && d->n_positions <= d->n_pix, QP_ERR_INPUT,
           "budget model: n_positions (%lld) must be in 1..n_pix (%lld)", (long long)d->n_positions,
           (long long)d->n_pix);
  QP_CHECK(d->n_pix > 0 && d->n_sky >= 0 && d->n_maps > 0 && d->n_params > 0, QP_ERR_INPUT,
           "budget model: n_pix (%lld), n_maps (%lld) and n_params (%lld) must be positive, "
           "n_sky (%lld) not negative",
           (long long)d->n_pix, (long long)d->n_maps, (long long)d->n_params, (long long)d->n_sky);
  QP_CHECK(d->path == QP_MODEL_PIXEL_DIRECT || d->n_modes > 0, QP_ERR_INPUT,
           "budget model: the harmonic path needs n_modes > 0 (got %lld)", (long long)d->n_modes);
  QP_CHECK(d->fisher_chunk >= 1 && d->fisher_chunk <= d->n_params, QP_ERR_INPUT,
           "budget model: fisher chunk %lld outside 1..%lld", (long long)d->fisher_chunk,
           (long long)d->n_params);
  QP_CHECK(d->spectra_chunk >= 1 && d->spectra_chunk <= d->n_params, QP_ERR_INPUT,
           "budget model: spectra chunk %lld outside 1..%lld", (long long)d->spectra_chunk,
           (long long)d->n_params);
  QP_CHECK(d->map_batch >= 0 && d->map_batch <= d->n_maps, QP_ERR_INPUT,
           "budget model: map batch %lld outside 1..%lld", (long long)d->map_batch,
           (long long)d->n_maps);
  QP_CHECK(d->w_block >= 0 && d->w_block <= d->n_modes &&
               (!qp_model_w_chunked(d) || d->grid_rows <= 0 ||
                d->w_block % ((int64_t)d->block * d->grid_cols) == 0),
           QP_ERR_INPUT,
           "budget model: W block %lld outside 1..%lld (n_modes), or on a grid not a multiple "
           "of block x grid columns (%d x %d)",
           (long long)d->w_block, (long long)d->n_modes, d->block, d->grid_cols);
  QP_CHECK(d->host_panel >= 0 && (d->host_panel == 0 || d->device), QP_ERR_INPUT,
           "budget model: host panel %lld: 0 (whole) or, on a device backend only, 1 or more "
           "lines",
           (long long)d->host_panel);
  QP_CHECK(d->grid_rows <= 0 || (d->block > 0 && d->grid_cols > 0 && d->grid_row >= 0 &&
                                   d->grid_row < d->grid_rows && d->grid_col >= 0 &&
                                   d->grid_col < d->grid_cols),
           QP_ERR_INPUT, "budget model: rank (%d, %d) outside a %d x %d grid of block %d",
           d->grid_row, d->grid_col, d->grid_rows, d->grid_cols, d->block);
  m->overhead_bytes = QP_MODEL_DEFAULT_OVERHEAD;
  QP_CHECK(d->n_modes >= 0 && d->n_fields >= 0 && d->n_lm >= 0, QP_ERR_INPUT,
           "budget model: n_modes (%lld), n_fields (%d) and n_lm (%lld) must not be negative",
           (long long)d->n_modes, d->n_fields, (long long)d->n_lm);
  /* Distributed and on the device (hostdev-dist): each rank's device holds its local parts,
   * so the device terms are per rank as the host ones. */
  const int dist = d->grid_rows > 0;
  /* Where align and replicate copy (qp_linalg_moves_data): over ranks, or device to host. */
  const int moves = dist || d->device;
  const size_t w = sizeof(double);
  const qp_model_bytes pix_sq = qp_matrix_bytes(d, d->n_pix, d->n_pix);
  const qp_stage_id cov = QP_STAGE_COVARIANCE_SETUP, fis = QP_STAGE_FISHER_RUN,
                    spe = QP_STAGE_SPECTRA_RUN;

  /* The reader alone holds the sky buffer; every rank checks its size all the same. */
  const qp_model_bytes sky = qp_model_vector_bytes(d->n_sky, w);
  const char *sky_formula = dist ? "n_sky x 8 (rank 0 reads)" : "n_sky x 8";
  if (!dist || d->reader)
    qp_model_add(m, QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, sky, cov, cov, sky_formula);
  else
    qp_model_size_ok(m, QP_TERM_SKY_BUFFER, sky, sky_formula);
  qp_model_add(m, QP_TERM_OBSERVED_INDEX, QP_TERM_PERSISTENT,
               qp_model_vector_bytes(d->n_positions, sizeof(int64_t)), cov, spe, "n_positions x 8");
  qp_model_add(m, QP_TERM_PIXEL_VECTORS, QP_TERM_PERSISTENT,
               qp_model_bytes_times(3, qp_model_vector_bytes(d->n_positions, w)), cov, spe,
               "3 n_positions x 8");
  /* The maps are whole on every rank (replicated), so is every n_params buffer. */
  const qp_model_bytes maps = qp_model_bytes_times((size_t)d->n_maps, qp_model_vector_bytes(d->n_pix, w));
  qp_model_add(m, QP_TERM_MAPS, QP_TERM_PERSISTENT, maps, cov, spe, "n_pix n_maps x 8");
  const qp_stage_id bas = QP_STAGE_BASIS_SETUP;
  const int pixel = d->path == QP_MODEL_PIXEL_DIRECT, smw = d->path == QP_MODEL_HARMONIC_SMW;
  const int w_chunked = qp_model_w_chunked(d);
  const qp_model_bytes mode_sq = qp_matrix_bytes(d, d->n_modes, d->n_modes),
                 mode_pix = qp_matrix_bytes(d, d->n_pix, d->n_modes);
  /* The per-map matrices hold one batch of maps (planner.c); the host keeps every map. */
  const int64_t batch = qp_model_map_batch(d);
  const qp_model_bytes pix_maps = qp_matrix_bytes(d, d->n_pix, batch),
                 mode_maps = qp_matrix_bytes(d, d->n_modes, batch);
  /* The noise lives until the noise bias on the pixel-direct and projection routes. SMW is
   * done with it in basis_setup: the maps are whitened there, and N_eff (26 GiB at the
   * calibration case of docs/memory-model.md) goes as soon as Y = L_N^-1 V^T exists; V goes
   * once K = Y^T Y does. basis_setup's phases: 0 V, Y, V N^-1 x; 1 K; 2 the LU. */
  qp_model_term *t;
  if (d->noise_dense) {
    t = qp_on_backend(d, qp_model_add(m, QP_TERM_NOISE, QP_TERM_PERSISTENT, pix_sq, cov,
                                      smw ? bas : fis,
                                      smw ? "n_pix^2 x 8 (N, then N_eff, then its Cholesky factor)"
                                          : "n_pix^2 x 8"));
    if (smw) t->phase_free = 0;
  } else {
    qp_model_add(m, QP_TERM_NOISE_VARIANCE, QP_TERM_PERSISTENT, qp_model_vector_bytes(d->n_pix, w), cov,
                 smw ? bas : fis, "n_pix x 8");
  }
  if (!smw) {
    qp_on_backend(d, qp_model_add(m, QP_TERM_COVARIANCE, QP_TERM_PERSISTENT, pix_sq, cov, spe,
                                  pixel ? "n_pix^2 x 8 (C, then L, then L^-1 in place)"
                                        : "n_pix^2 x 8 (C, then L in place)"));
  } else if (d->switched && !d->noise_dense) {
    t = qp_on_backend(d, qp_model_add(m, QP_TERM_NOISE_EFF, QP_TERM_PERSISTENT, pix_sq, cov, bas,
                                      "n_pix^2 x 8 (N + S_fixed, then its Cholesky factor)"));
    t->phase_free = 0;
  }

  if (!pixel) {
    t = qp_on_backend(d, qp_model_add(m, QP_TERM_V, smw ? QP_TERM_TRANSIENT : QP_TERM_PERSISTENT,
                                      mode_pix, bas, smw ? bas : spe,
                                      "n_pix n_modes x 8 (V^T, then Y in place)"));
    if (smw) {
      t->phase_free = 1;
      qp_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, pix_maps, bas,
                                    bas, "n_pix map_batch x 8 (N_eff^-1/2 x)"))
          ->phase_free = 0;
      qp_on_backend(d, qp_model_add(m, QP_TERM_MODE_MAPS, QP_TERM_PERSISTENT, mode_maps, bas, spe,
                                    "n_modes map_batch x 8 (V N_eff^-1 x, then z in place)"));
      /* In batches, every map's V N_eff^-1 x waits on the host for spectra_run: each batch's
       * local part (harmonic_route.c, qp_mode_maps_host_batch). */
      if (batch < d->n_maps) {
        const int64_t full = (d->n_maps - 1) / batch, last = d->n_maps - full * batch;
        qp_model_add(m, QP_TERM_MODE_MAPS_HOST, QP_TERM_PERSISTENT,
                     qp_bytes_sum(qp_model_bytes_times((size_t)full, mode_maps),
                                  qp_matrix_bytes(d, d->n_modes, last)),
                     bas, spe, "n_modes n_maps x 8 (V N_eff^-1 x of every map)");
      }
    }
    if (w_chunked) {
      /* W = Y^T Y a block of columns at a time on the device, each downloaded into a host W
       * that fisher_run's block sums read (harmonic_route.c). */
      qp_on_backend(d, qp_model_add(m, QP_TERM_KERNEL_BLOCK, QP_TERM_TRANSIENT,
                                    qp_matrix_bytes(d, d->n_modes, d->w_block), bas, bas,
                                    "n_modes w_block x 8 (a block of W's columns)"));
      qp_model_add(m, QP_TERM_KERNEL_HOST, QP_TERM_PERSISTENT, mode_sq, bas, fis,
                   "n_modes^2 x 8 (W, assembled from its blocks)")
          ->phase_free = 0; /* freed once F is summed */
    } else {
      t = qp_on_backend(d, qp_model_add(m, QP_TERM_KERNEL, QP_TERM_PERSISTENT, mode_sq, bas,
                                        smw ? spe : fis,
                                        smw ? "n_modes^2 x 8 (K, then W in place)"
                                        : qp_model_modes_in_kernel(d->n_pix, d->n_modes)
                                            ? "n_modes^2 x 8 (W, then Z = C^-1 V^T in its place)"
                                            : "n_modes^2 x 8 (W)"));
    }
    if (smw) {
      t->phase_alloc = 1;
      qp_on_backend(d, qp_model_add(m, QP_TERM_SMW_LU, QP_TERM_PERSISTENT, mode_sq, bas, spe,
                                    "n_modes^2 x 8 (I + K Lambda, LU)"))
          ->phase_alloc = 2;
      /* ScaLAPACK's pdgetrf wants LOCr(n_modes) + MB pivots; the whole is n_modes + MB. */
      qp_model_bytes pivots = qp_model_vector_bytes(d->n_modes + (dist ? d->block : 0), sizeof(int));
      if (dist)
        qp_size_bytes(qp_bc_local_count(d->n_modes, d->block, d->grid_row, d->grid_rows) + d->block,
                      sizeof(int), &pivots.here);
      qp_model_add(m, QP_TERM_PIVOTS, QP_TERM_PERSISTENT, pivots, bas, spe,
                   dist ? "(local n_modes + block) x 4" : "n_modes x 4")
          ->phase_alloc = 2;
      /* K's columns of one field lined up with a panel of I + K Lambda's columns. */
      if (moves)
        qp_model_add(m, QP_TERM_SMW_COLUMNS, QP_TERM_TRANSIENT,
                     qp_matrix_bytes(d, d->n_modes, qp_model_mode_panel(d)), bas, bas,
                     !d->device ? "n_modes^2 x 8 (K's columns of one field, redistributed)"
                     : qp_model_mode_panel(d) < d->n_modes
                         ? "n_modes mode_panel x 8 (K's columns of one field, on the host)"
                         : "n_modes^2 x 8 (K's columns of one field, on the host)")
            ->phase_alloc = 2;
    }
  }

  if (pixel) {
    /* k products, the whitened noise, and a streaming slot when k < n_params. */
    const size_t k = (size_t)d->fisher_chunk, slots = k + 1 + (d->fisher_chunk < d->n_params);
    qp_on_backend(d, qp_model_add(m, QP_TERM_PRODUCTS, QP_TERM_TRANSIENT,
                                  qp_model_bytes_times(slots, pix_sq), fis, fis,
                                  d->fisher_chunk < d->n_params ? "(fisher_chunk + 2) n_pix^2 x 8"
                                                                : "(n_params + 1) n_pix^2 x 8"));
    qp_on_backend(d, qp_model_add(m, QP_TERM_GRAM, QP_TERM_TRANSIENT,
                                  qp_model_bytes_times(k + 1, qp_model_vector_bytes(d->fisher_chunk + 2, w)),
                                  fis, fis, "(fisher_chunk + 1)(fisher_chunk + 2) x 8"));
  } else {
    /* fisher_run's phases: 0 F, from W's block sums (and W's field blocks where aligning
     * moves data); then 1, 2 the bias. */
    const int ph = 1;
    /* A chunked W is a host matrix: read in place on one process, aligned over the grid. */
    if (dist || (moves && !w_chunked)) {
      const size_t blocks = (size_t)d->n_fields * (size_t)d->n_fields;
      /* A panel of their columns at a time under a host_panel (qp_model_field_panel). */
      const int64_t panel = qp_model_field_panel(d);
      qp_model_add(m, QP_TERM_FIELD_BLOCKS, QP_TERM_TRANSIENT,
                   qp_model_bytes_times(blocks, qp_matrix_bytes(d, d->n_lm, panel)), fis, fis,
                   panel < d->n_lm
                       ? "n_fields^2 (lmax+1)^2 field_panel x 8 (W per field pair, aligned, a "
                         "panel of columns)"
                       : "n_fields^2 (lmax+1)^4 x 8 (W per field pair, aligned)")
          ->phase_free = 0;
    }
    qp_model_add(m, QP_TERM_FISHER_BLOCK_SUMS, QP_TERM_TRANSIENT,
                 qp_model_bytes_times((size_t)d->fisher_block_slots,
                                      qp_model_vector_bytes(d->n_lm, w)),
                 fis, fis, "block slots (lmax+1)^2 x 8 (W's (l, l') block sums, every rank)")
        ->phase_free = 0;
    if (smw) {
      qp_on_backend(d, qp_model_add(m, QP_TERM_NOISE_KERNEL, QP_TERM_TRANSIENT, mode_sq, fis,
                                    fis, "n_modes^2 x 8"))
          ->phase_alloc = ph;
    } else {
      if (w_chunked || !qp_model_modes_in_kernel(d->n_pix, d->n_modes))
        qp_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MODES, QP_TERM_TRANSIENT, mode_pix, fis,
                                      fis, "n_pix n_modes x 8"))
            ->phase_alloc = ph;
      if (d->switched || d->noise_dense)
        qp_on_backend(d, qp_model_add(m, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, mode_pix, fis,
                                      fis, "n_pix n_modes x 8"))
            ->phase_alloc = ph;
      if (d->switched || d->noise_dense) {
        t = qp_on_backend(d, qp_model_add(m, QP_TERM_NOISE_EFF_DENSE, QP_TERM_TRANSIENT, pix_sq,
                                          fis, fis, "n_pix^2 x 8"));
        t->phase_alloc = ph;
        if (moves) t->phase_free = 1;
      }
      /* Where aligning moves data, a panel of Z's columns of one field is lined up with
       * another field's, or with N_eff Z's, for the bias (not where neither is needed). */
      if (moves && (d->cross_fields || d->switched || d->noise_dense))
        qp_model_add(m, QP_TERM_ALIGNED_MODES, QP_TERM_TRANSIENT,
                     qp_matrix_bytes(d, d->n_pix, qp_model_mode_panel(d)), fis, fis,
                     qp_model_mode_panel(d) < d->n_modes
                         ? "n_pix bias_panel x 8 (Z's columns of one field, aligned)"
                         : "n_pix n_modes x 8 (Z's columns of one field, aligned)")
            ->phase_alloc = 2;
    }
  }
  const qp_model_bytes params = qp_model_vector_bytes(d->n_params, w),
                 params_sq = qp_model_bytes_times((size_t)d->n_params, params),
                 per_map = qp_model_bytes_times((size_t)d->n_maps, params);
  qp_model_add(m, QP_TERM_FISHER, QP_TERM_PERSISTENT, params_sq, fis, spe, "n_params^2 x 8");
  qp_model_add(m, QP_TERM_NOISE_BIAS, QP_TERM_PERSISTENT, params, fis, spe, "n_params x 8");

  if (pixel) {
    qp_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, pix_maps, spe,
                                  spe, "n_pix map_batch x 8"));
    qp_on_backend(d, qp_model_add(m, QP_TERM_BIN_MATRICES, QP_TERM_TRANSIENT,
                                  qp_model_bytes_times((size_t)d->spectra_chunk, pix_sq), spe, spe,
                                  "spectra_chunk n_pix^2 x 8"));
    qp_on_backend(d, qp_model_add(m, QP_TERM_BIN_PRODUCT, QP_TERM_TRANSIENT, pix_maps, spe, spe,
                                  "n_pix map_batch x 8"));
  } else if (!smw) {
    qp_on_backend(d, qp_model_add(m, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, pix_maps, spe,
                                  spe, "n_pix map_batch x 8"));
    qp_on_backend(d, qp_model_add(m, QP_TERM_MODE_MAPS, QP_TERM_TRANSIENT, mode_maps, spe, spe,
                                  "n_modes map_batch x 8"));
  }
  if (!pixel && moves)
    qp_model_add(m, QP_TERM_MODE_MAPS_ALL, QP_TERM_TRANSIENT,
                 qp_model_bytes_times((size_t)batch, qp_model_vector_bytes(d->n_modes, w)), spe,
                 spe, "n_modes map_batch x 8 (a batch's z whole on every rank)");
  qp_model_add(m, QP_TERM_FISHER_INVERSE, QP_TERM_PERSISTENT, params_sq, spe, spe,
               "n_params^2 x 8");
  qp_model_add(m, QP_TERM_RAW_SPECTRA, QP_TERM_PERSISTENT, per_map, spe, spe,
               "n_maps n_params x 8");
  qp_model_add(m, QP_TERM_SPECTRA, QP_TERM_PERSISTENT, per_map, spe, spe, "n_maps n_params x 8");
  qp_model_add(m, QP_TERM_ERRORS, QP_TERM_PERSISTENT, params, spe, spe, "n_params x 8");
  /* A device run's host staging (host_window.h): one block per stage, reserved by the driver. */
  qp_model_bytes staging[QP_STAGE_COUNT];
  qp_staging_bytes(d, staging);
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    if (staging[s].whole > 0)
      qp_model_add(m, QP_TERM_HOST_STAGING, QP_TERM_TRANSIENT, staging[s], s, s,
                   "the most of the stage's device matrices open on the host at once");
  QP_CALL(qp_model_backend_terms(d, m));
  if (dist) {
    /* PBLAS copies a panel of block columns of its operands and one of block rows per step
     * (PB_Cmalloc, freed before it returns): (LOCr + LOCc) x block doubles for the largest
     * operand of the stage, within 2% of a rank's C at n_pix 4480-8064 on 1 x 2 and 2 x 2
     * grids (docs/distributed.md). A distributed device backend runs the tiled algorithms,
     * which call no PBLAS. Nor do SMW's fisher_run and spectra_run on dist (their solves and
     * copies are tiled); its basis_setup's pdgemm and pdgetrf do, but before the stage's peak
     * (K, the LU and the held tiled blocks together): with the term there it was over-predicted
     * by 2.4%, without it within 0.5% (n_modes 2300 on 1 x 2 and 2 x 2; docs/distributed.md). */
    if (!d->device && !smw) {
      /* spectra_run's PBLAS operands are as wide as a batch of maps (C^-1 z, P_b z), the
       * others' n_pix: with n_pix columns there it was over-predicted by 2.7% (projection,
       * n_pix 1984 on 1 x 2; tests/mpi/dist_memory.sh). basis_setup's pdpotrf and pdtrtri are
       * the distributed warm-up's own calls, up to order QP_DIST_WARM_UP_ORDER_MAX, whose freed
       * panels stay in the heap for the stage to reuse: only the panels beyond that order's
       * show. With the whole term, basis_setup's peak was over-predicted by 1.4 of its
       * 1.46 MiB on 2 x 1 ranks and 0.9 on 1 x 2 (pixel-direct and projection, n_pix 1984:
       * -9.3%, -5.8%, -1.6%; the 0.07-0.6 MiB that shows is BLACS's buffers, kept). */
      const int64_t warmed = d->n_pix < QP_DIST_WARM_UP_ORDER_MAX ? d->n_pix
                                                                 : QP_DIST_WARM_UP_ORDER_MAX;
      const qp_model_bytes panels = qp_panel_bytes(d, d->n_pix, d->n_pix),
                           warm = qp_panel_bytes(d, warmed, warmed),
                           map_panels = qp_panel_bytes(d, d->n_pix, qp_model_map_batch(d));
      const qp_model_bytes beyond = {.here = panels.here - warm.here,
                                     .whole = panels.whole - warm.whole,
                                     .approx = panels.approx - warm.approx};
      const char *formula = "(LOCr + LOCc) x block x 8 (inside PBLAS; seen in RSS only)";
      if (beyond.whole > 0)
        qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY, beyond, bas, bas,
                     "(LOCr + LOCc) x block x 8 beyond the warm-up's order 4096's (inside "
                     "PBLAS; seen in RSS only)");
      qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY, panels, fis, fis, formula);
      qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY, map_panels, spe, spe, formula);
    }
  }
  QP_CHECK(!m->too_many_terms, QP_ERR_INTERNAL, "budget model: more than %d terms", QP_TERMS_MAX);
  QP_CHECK(!m->oversize_term[0], QP_ERR_INPUT,
           "budget model: term '%s' (%s) would need %.3g bytes (%.3g PiB), more than the 2^56 "
           "bytes (64 PiB) the model accepts for one term: impossible dimensions "
           "(n_pix=%lld n_positions=%lld n_sky=%lld n_modes=%lld n_maps=%lld n_params=%lld "
           "fisher_chunk=%lld spectra_chunk=%lld map_batch=%lld)",
           m->oversize_term, m->oversize_formula, m->oversize_bytes,
           m->oversize_bytes / 1125899906842624.0, (long long)d->n_pix, (long long)d->n_positions,
           (long long)d->n_sky, (long long)d->n_modes, (long long)d->n_maps, (long long)d->n_params,
           (long long)d->fisher_chunk, (long long)d->spectra_chunk, (long long)batch);
  return QP_OK;
}

void qp_model_print(FILE *out, const qp_model_dims *d, const qp_model *m) {
  static const char *const path_names[] = {"pixel_direct", "harmonic (SMW)",
                                           "harmonic (projection)"};
  fprintf(out, "qmlpipe memory budget [%s]%s\n", path_names[d->path],
          d->switched ? " with the switch (S_fixed in N_eff)" : "");
  if (d->path != QP_MODEL_PIXEL_DIRECT) fprintf(out, "  n_modes=%lld\n", (long long)d->n_modes);
  fprintf(out,
          "  n_positions=%lld n_pix=%lld n_sky=%lld n_maps=%lld n_params=%lld noise=%s "
          "fisher_chunk=%lld "
          "spectra_chunk=%lld",
          (long long)d->n_positions, (long long)d->n_pix, (long long)d->n_sky, (long long)d->n_maps,
          (long long)d->n_params, d->noise_dense ? "dense" : "diagonal", (long long)d->fisher_chunk,
          (long long)d->spectra_chunk);
  if (qp_model_map_batch(d) < d->n_maps)
    fprintf(out, " map_batch=%lld", (long long)qp_model_map_batch(d));
  if (qp_model_w_chunked(d)) fprintf(out, " w_block=%lld", (long long)d->w_block);
  if (d->host_panel > 0) fprintf(out, " host_panel=%lld", (long long)d->host_panel);
  fprintf(out, "\n\n");
  qp_model_print_stages(out, m);
}
