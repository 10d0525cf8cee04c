/* backend_terms.c: the terms of a run's backend and device staging (backend_terms.h): what the
 * stages' operations make the backend hold, predicted from its table at the run's sizes. */
#include "backend_terms.h"

#include <string.h>

#include "host_window.h"
#include "model_bytes.h"
#include "tiled_sizes.h"

/* Host staging of a device run, one block per stage (driver.c reserves it, host_window.h):
 * the most its windows hold open at once; 0 on a host backend. */
static void qp_staging_bytes(const qp_model_dims *d, qp_model_bytes out[QP_STAGE_COUNT]) {
  const qp_model_bytes none = {0, 0, 0.0};
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    out[s] = none;
  if (!d->device) return;
  const int64_t n = d->n_pix, nm = d->n_modes;
  const int pixel = d->path == QP_MODEL_PIXEL_DIRECT, smw = d->path == QP_MODEL_HARMONIC_SMW;
  /* SMW's n_modes^2 windows (I + K Lambda built, G read) are panels of columns. */
  /* A batch of maps is written a map at a time, a panel of its rows through a window of that
   * one column, on any rank that holds the column (inputs_maps.c: every rank's window counts
   * as one column); pixel-direct's z and P_b z are read a panel of rows of the batch at a time
   * (stage_spectra.c). */
  qp_model_dims column_owner = *d;
  column_owner.grid_cols = 1;
  column_owner.grid_col = 0;
  const qp_model_bytes kernel = qp_model_matrix_bytes(d, nm, qp_model_mode_panel(d)),
                       map = qp_model_window_bytes(&column_owner, n, 1, 1),
                       maps = qp_model_window_bytes(d, n, qp_model_map_batch(d), 1);
  /* covariance_setup: a dense N read, C (or SMW's N_eff) built, each a panel of columns at a
   * time (inputs.c; pixel_matrices.c: N's variances and S added). */
  const qp_model_bytes built = qp_model_window_bytes(d, n, n, 0);
  out[QP_STAGE_COVARIANCE_SETUP] =
      d->noise_dense || !smw || d->switched || (d->cross_maps && d->noise2_dense) ? built : none;
  /* basis_setup: V^T built (SMW: and whitened), a panel of rows at a time; a batch of maps
   * (SMW: written a map at a time, whitened a panel of the batch's rows at a time), I + K
   * Lambda built a panel of columns at a time (SMW); pixel-direct nothing (L^-1's upper
   * triangle is cleared on the device). */
  const qp_model_bytes vt = qp_model_window_bytes(d, n, nm, 1);
  out[QP_STAGE_BASIS_SETUP] = pixel ? none
                              : smw ? qp_model_bytes_max(qp_model_bytes_max(vt, maps), kernel)
                                    : vt;
  /* SMW's cross-spectra build S_fixed for Q there with the switch (harmonic_smw_cross.c). */
  if (smw && d->cross_maps && d->switched)
    out[QP_STAGE_BASIS_SETUP] = qp_model_bytes_max(out[QP_STAGE_BASIS_SETUP], built);
  /* fisher_run: pixel-direct, the whitened noise (unless a dense N without the switch is
   * copied in), a chunk of P_p (each a panel at a time: pixel_matrices.h), then the Gram
   * matrix read (whole on every rank); projection, N_eff with the switch, then a panel of
   * Z's columns (or N_eff Z's) read for the bias; SMW, a panel of G's columns read. */
  const int64_t k = d->fisher_chunk;
  if (pixel)
    out[QP_STAGE_FISHER_RUN] = qp_model_bytes_max(
        qp_model_bytes_times((size_t)k, built), /* k panels >= the noise's */
        qp_model_bytes_times((size_t)k + 1, qp_model_vector_bytes(k + 1, sizeof(double))));
  else
    out[QP_STAGE_FISHER_RUN] =
        smw ? kernel
            : qp_model_bytes_max(qp_model_matrix_bytes(d, n, qp_model_mode_panel(d)),
                                 d->switched ? built : none);
  /* spectra_run: pixel-direct, a chunk of P_b built, then a batch of maps written, then a
   * panel of rows of z and of P_b z read together; projection, a batch of maps written. */
  out[QP_STAGE_SPECTRA_RUN] =
      pixel ? qp_model_bytes_max(qp_model_bytes_times((size_t)d->spectra_chunk, built),
                                 qp_model_bytes_times(2, maps))
      : smw ? none
            : map;
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
 * harmonic_route.c, harmonic_fisher.c, harmonic_bias.c; a conditioned Cholesky is norm1, potrf,
 * pocon). */
static int qp_backend_calls(const qp_model_dims *d, qp_backend_call out[QP_BACKEND_CALLS_MAX]) {
  const int64_t n = d->n_pix, nm = d->n_modes, batch = qp_model_map_batch(d);
  const qp_stage_id cov = QP_STAGE_COVARIANCE_SETUP, bas = QP_STAGE_BASIS_SETUP;
  int k = 0;
  const int smw = d->path == QP_MODEL_HARMONIC_SMW;
  /* covariance_setup: a dense N's own Cholesky in C's buffer (not on SMW). */
  if (d->noise_dense && !smw) out[k++] = (qp_backend_call){cov, 0, QP_OP_POTRF, n, 0};
  /* basis_setup, phase 0: C's (or SMW's dense N_eff's) conditioned Cholesky. */
  /* (SMW's cross-spectra: N_B,eff's too, in the same phase.) */
  if (!smw || d->noise_dense || d->switched || (d->cross_maps && d->noise2_dense)) {
    out[k++] = (qp_backend_call){bas, 0, QP_OP_NORM1, n, 0};
    out[k++] = (qp_backend_call){bas, 0, QP_OP_POTRF, n, 0};
    out[k++] = (qp_backend_call){bas, 0, QP_OP_POCON, n, 0};
  }
  if (d->path == QP_MODEL_PIXEL_DIRECT) out[k++] = (qp_backend_call){bas, 0, QP_OP_TRTRI, n, 0};
  if (smw) {
    /* phase 2 (cross-spectra: 3): I + K Lambda's LU, W = (I + K Lambda)^-1 K; then G in
     * fisher_run (phase 1; cross-spectra: the switch's M_B^-1 Q M_A^-T) and z a batch of maps
     * at a time in spectra_run. */
    const int lu = d->cross_maps ? 3 : 2;
    out[k++] = (qp_backend_call){bas, lu, QP_OP_NORM1, nm, 0};
    out[k++] = (qp_backend_call){bas, lu, QP_OP_GETRF, nm, 0};
    out[k++] = (qp_backend_call){bas, lu, QP_OP_GECON, nm, 0};
    out[k++] = (qp_backend_call){bas, lu, QP_OP_GETRS, nm, nm};
    if (!d->cross_maps || d->switched)
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

int qp_model_backend_init_term(const qp_model_term *t) {
  return t->formula == qp_backend_init_formula;
}

/* A backend term held now: its size and its model entry (the last one declared). */
typedef struct qp_backend_held {
  const char *term;
  qp_space space;
  size_t bytes;
  qp_model_term *entry;
} qp_backend_held;

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
  const qp_tiled_sizes here =
      qp_tiled_bound_sizes(dim, d->block, d->grid_rows, d->grid_cols, d->grid_row, d->grid_col);
  const qp_tiled_sizes whole =
      qp_tiled_bound_sizes(dim, d->block, d->grid_rows, d->grid_cols, 0, 0);
  qp_model_bytes b = qp_model_vector_bytes(doubles_of(&whole), sizeof(double));
  b.here = (size_t)doubles_of(&here) * sizeof(double);
  return b;
}

/* A distributed device backend (hostdev-dist, cuda-dist) runs the tiled algorithms
 * (linalg/tiled/tiled.h) and holds their blocks (pocon's vector in them) from its start at the
 * bound of the problem's largest dimension, with the local table's workspace of a diagonal block's
 * Cholesky; dist holds the same blocks in host memory on the harmonic routes, for SMW's solves
 * (its getrs is tiled) and the field blocks' redistribution (its copy_sub is, while held). */
static qp_err qp_model_tiled_terms(const qp_model_dims *d, qp_model *m) {
  const qp_stage_id first = QP_STAGE_COVARIANCE_SETUP, last = QP_STAGE_SPECTRA_RUN;
  /* The largest side of a distributed operand: n_pix, n_modes, or a batch of maps (z). */
  const int64_t batch = qp_model_map_batch(d);
  int64_t dim = d->n_modes > d->n_pix ? d->n_modes : d->n_pix;
  if (batch > dim) dim = batch;
  qp_model_add(m, QP_TERM_TILED_HOST, QP_TERM_PERSISTENT,
               qp_tiled_bytes(d, dim, qp_tiled_host_doubles), first, last, qp_backend_init_formula);
  qp_model_add(m, QP_TERM_TILED_PANELS, QP_TERM_PERSISTENT,
               qp_tiled_bytes(d, dim, qp_tiled_local_doubles), first, last, qp_backend_init_formula)
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
      while (h < count && strcmp(need[h].term, more[i].term) != 0)
        ++h;
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
static qp_err qp_backend_own_terms(const qp_model_dims *d, qp_model *m) {
  if (d->device && d->grid_rows > 0) return qp_model_tiled_terms(d, m);
  /* Projection without W aligns nothing through the tiled blocks: its W windows are PBLAS
   * products, Z's columns are lined up by pdgemr2d a bounded panel at a time. */
  if (d->grid_rows > 0 && d->path != QP_MODEL_PIXEL_DIRECT && !qp_model_w_windows(d))
    return qp_model_tiled_terms(d, m);
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

/* A device run's host staging (host_window.h): one block per stage, reserved by the driver. */
static void qp_staging_terms(const qp_model_dims *d, qp_model *m) {
  qp_model_bytes staging[QP_STAGE_COUNT];
  qp_staging_bytes(d, staging);
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    if (staging[s].whole > 0)
      qp_model_add(m, QP_TERM_HOST_STAGING, QP_TERM_TRANSIENT, staging[s], s, s,
                   "the most of the stage's device matrices open on the host at once");
}

/* PBLAS copies a panel of block columns of its operands and one of block rows per step
 * (PB_Cmalloc, freed before it returns): (LOCr + LOCc) x block doubles for the largest
 * operand of the stage, within 2% of a rank's C at n_pix 4480-8064 on 1 x 2 and 2 x 2
 * grids (docs/distributed.md). A distributed device backend runs the tiled algorithms,
 * which call no PBLAS. Nor do SMW's fisher_run and spectra_run on dist (their solves and
 * copies are tiled); its basis_setup's pdgemm and pdgetrf do, but before the stage's peak
 * (K, the LU and the held tiled blocks together): with the term there it was over-predicted
 * by 2.4%, without it within 0.5% (n_modes 2300 on 1 x 2 and 2 x 2; docs/distributed.md). */
static void qp_pblas_terms(const qp_model_dims *d, qp_model *m) {
  if (d->grid_rows <= 0 || d->device || d->path == QP_MODEL_HARMONIC_SMW) return;
  const qp_stage_id bas = QP_STAGE_BASIS_SETUP, fis = QP_STAGE_FISHER_RUN,
                    spe = QP_STAGE_SPECTRA_RUN;
  /* spectra_run's PBLAS operands are as wide as a batch of maps (C^-1 z, P_b z), the
   * others' n_pix: with n_pix columns there it was over-predicted by 2.7% (projection,
   * n_pix 1984 on 1 x 2; tests/mpi/dist_memory.sh). basis_setup's pdpotrf and pdtrtri are
   * the distributed warm-up's own calls, up to order QP_DIST_WARM_UP_ORDER_MAX, whose freed
   * panels stay in the heap for the stage to reuse: only the panels beyond that order's
   * show. With the whole term, basis_setup's peak was over-predicted by 1.4 of its
   * 1.46 MiB on 2 x 1 ranks and 0.9 on 1 x 2 (pixel-direct and projection, n_pix 1984:
   * -9.3%, -5.8%, -1.6%; the 0.07-0.6 MiB that shows is BLACS's buffers, kept). */
  const int64_t warmed =
      d->n_pix < QP_DIST_WARM_UP_ORDER_MAX ? d->n_pix : QP_DIST_WARM_UP_ORDER_MAX;
  const qp_model_bytes panels = qp_model_pblas_bytes(d, d->n_pix, d->n_pix),
                       warm = qp_model_pblas_bytes(d, warmed, warmed),
                       map_panels = qp_model_pblas_bytes(d, d->n_pix, qp_model_map_batch(d));
  const qp_model_bytes beyond = {.here = panels.here - warm.here,
                                 .whole = panels.whole - warm.whole,
                                 .approx = panels.approx - warm.approx};
  const char *formula = "(LOCr + LOCc) x block x 8 (inside PBLAS; seen in RSS only)";
  if (beyond.whole > 0)
    qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY, beyond, bas, bas,
                 "(LOCr + LOCc) x block x 8 beyond the warm-up's order 4096's (inside "
                 "PBLAS; seen in RSS only)");
  if (!qp_model_w_windows(d)) {
    qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY, panels, fis, fis, formula);
    qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY, map_panels, spe, spe, formula);
    return;
  }
  /* Projection without W: fisher_run's largest PBLAS calls are its windows' products, whose
   * narrow operand is a chunk of Y's columns (qp_model_w_chunk), and the trsm of Z = L^-T Y;
   * spectra_run's only one is z = Z^T x, a pdgemm whose panels (n_pix 1984 on 1 x 2) come from
   * the warmed heap and do not show in RSS: none is predicted there. */
  qp_model_add(m, QP_TERM_PBLAS_PANELS, QP_TERM_LIBRARY,
               qp_model_pblas_bytes(d, d->n_pix, qp_model_w_chunk(d)), fis, fis,
               "(LOCr(n_pix) + LOCc(chunk)) x block x 8 (inside PBLAS; seen in RSS only)");
}

qp_err qp_backend_terms(const qp_model_dims *d, qp_model *m) {
  qp_staging_terms(d, m);
  QP_CALL(qp_backend_own_terms(d, m));
  qp_pblas_terms(d, m);
  return QP_OK;
}
