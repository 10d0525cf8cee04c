/* tiled_work.h: what the tiled algorithms (tiled.h) share, private to linalg: an operation's
 * workspace, the gather of a global window on every rank, and the packing of the rows or
 * columns of a window that meet this rank's local part into the local table's space. */
#ifndef QP_TILED_WORK_H
#define QP_TILED_WORK_H

#include "tiled.h"

/* An operation's buffers (tiled.h: "Workspace"). `local` is the table of the operands' local
 * parts (cpu for dist, hostdev for hostdev-dist, cuda for a GPU per rank). */
typedef struct qp_tiled_work {
  const qp_grid *grid;
  const qp_linalg_ops *local;
  qp_tiled_sizes sizes;
  double *host;                 /* QP_TERM_TILED_HOST: send, recv, window, stage */
  double *send, *recv, *window, *stage;
  double *panels;               /* QP_TERM_TILED_PANELS, in local's space */
  double *panel_a, *panel_b, *tile;
  int64_t *counts;              /* per rank: its entries of the window being gathered */
  int owns;                     /* 1: host and panels are this operation's (not the held) */
} qp_tiled_work;

/** Takes the buffers of `sizes` for operations on `like`'s grid (collective: every rank returns
 *  the first rank's error). */
qp_err qp_tiled_work_open(const qp_matrix *like, const qp_tiled_sizes *sizes, qp_tiled_work *w);
void qp_tiled_work_close(qp_tiled_work *w);

/** The last `doubles` of the held local-space block when it holds `before` doubles ahead of
 *  them (an operation's own sizes, laid out from its start), else NULL. */
double *qp_tiled_held_vector(int64_t doubles, int64_t before);

/** The local indices [*l0, *l1) of process iproc (of nprocs, block nb) whose global indices lie
 *  in [g0, g1): one run, since global indices grow with local ones. */
static inline void qp_tiled_local_range(int64_t g0, int64_t g1, int nb, int iproc, int nprocs,
                                        int64_t *l0, int64_t *l1) {
  *l0 = qp_bc_local_count(g0, nb, iproc, nprocs);
  *l1 = qp_bc_local_count(g1, nb, iproc, nprocs);
}

/** w->window (rows x cols, ld rows) <- m[i0.., j0..] on every rank. Collective; `pending` is
 *  this rank's error so far, agreed on with the others' (and with a failed download) before
 *  any data moves: the agreed error is returned and nothing is gathered then. */
qp_err qp_tiled_gather(qp_tiled_work *w, qp_err pending, const qp_matrix *m, int64_t i0,
                       int64_t j0, int64_t rows, int64_t cols);

/** One column between this process's packed entries of local indices l0 .. l0 + count (of
 *  process iproc of nprocs, block nb) and their global places in a window column (global index
 *  gi at window[gi - i0]): into the window when `to_window`, out of it otherwise. */
void qp_tiled_copy_column(double *packed, int64_t l0, int64_t count, int nb, int iproc,
                          int nprocs, int64_t i0, double *window, int to_window);

/* Positions of the window that meet a run of this rank's local indices along one dimension:
 * local index first + s (s < count) is global qp_bc_global_index(first + s, nb, iproc, nprocs),
 * i.e. window index that minus `offset`. */
typedef struct qp_tiled_targets {
  int64_t first, count, offset;
  int nb, iproc, nprocs;
} qp_tiled_targets;

/** This rank's local rows (or columns) of m from local index l0 up to l1, as window positions
 *  (global minus offset). */
qp_tiled_targets qp_tiled_rows(const qp_matrix *m, int64_t l0, int64_t l1, int64_t offset);
qp_tiled_targets qp_tiled_cols(const qp_matrix *m, int64_t l0, int64_t l1, int64_t offset);

/** Packs, for each target s and each t < width, the window entry at (target s, t) when the
 *  targets index the window's rows (`along_rows`), else at (t, target s), into `panel` (the
 *  local space): as a count x width matrix, or width x count when `transposed`; *out is a view
 *  of it named `name`. Not collective. */
qp_err qp_tiled_pack(qp_tiled_work *w, int64_t window_ld, int along_rows, int64_t width,
                     const qp_tiled_targets *t, int transposed, double *panel, const char *name,
                     qp_matrix *out);

/** The gathered kb x kb window (a diagonal block) uploaded into w's tile: *out views it. */
qp_err qp_tiled_upload_tile(qp_tiled_work *w, int64_t kb, const char *name, qp_matrix *out);

/** A view, in the local table, of m's local block (li.., lj..) of rows x cols. */
qp_err qp_tiled_local_view(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                           int64_t cols, const char *name, qp_matrix *out);

/** The lower-triangular walk of potrf's trailing update and trtri's products: for this rank's
 *  local block column starting at local column lj (below c1), *jb its width and *li this
 *  rank's first local row at or below the column's first global index (its diagonal block,
 *  down). 0 when lj has reached c1. Loop: for (lj = c0; qp_tiled_lower_column(...); lj += jb). */
static inline int qp_tiled_lower_column(const qp_matrix *a, int64_t lj, int64_t c1, int64_t *jb,
                                        int64_t *li) {
  if (lj >= c1) return 0;
  const qp_grid *g = a->grid;
  const int64_t nb = g->block;
  *jb = nb - lj % nb < c1 - lj ? nb - lj % nb : c1 - lj;
  *li = qp_bc_local_count(qp_bc_global_index(lj, nb, g->mycol, g->npcol), nb, g->myrow, g->nprow);
  return 1;
}

/** 1 when a view has no entry: the local operation on it is skipped. */
static inline int qp_tiled_empty(const qp_matrix *m) { return m->rows == 0 || m->cols == 0; }

#endif
