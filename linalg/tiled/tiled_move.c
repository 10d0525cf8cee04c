/* tiled_move.c: copies between block-cyclic matrices, the transpose and the clearing of an
 * upper triangle over a local table and MPI (tiled.h): no arithmetic, only entries moved, each
 * rank writing its own local part from windows gathered whole. */
#include <string.h>

#include "comm.h"
#include "tiled_work.h"

/* The column width of a copy's or a transpose's windows: a block, or fewer columns. */
static int64_t qp_tiled_move_width(const qp_grid *g, int64_t cols) {
  return cols < g->block ? cols : g->block;
}

/* Same grid, same offsets: every entry stays on its rank at the same local place, so each rank
 * copies its own local run (no communication), by the local table where both are in its space,
 * else by a download or an upload. */
static qp_err qp_tiled_copy_in_place(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                                     int64_t aj, qp_matrix *b) {
  const qp_grid *g = a->grid;
  int64_t r0, r1, c0, c1;
  qp_tiled_local_range(ai, ai + rows, g->block, g->myrow, g->nprow, &r0, &r1);
  qp_tiled_local_range(aj, aj + cols, g->block, g->mycol, g->npcol, &c0, &c1);
  if (r1 == r0 || c1 == c0) return QP_OK;
  if (b->space == QP_SPACE_HOST)
    return qp_linalg_download(a, r0, c0, r1 - r0, c1 - c0, b->data + r0 + c0 * b->ld, b->ld);
  if (a->space == QP_SPACE_HOST)
    return qp_linalg_upload(a->data + r0 + c0 * a->ld, a->ld, b, r0, c0, r1 - r0, c1 - c0);
  const qp_linalg_ops *local = qp_linalg_local_ops(a->ops);
  QP_CHECK(local == qp_linalg_local_ops(b->ops), QP_ERR_INTERNAL,
           "copy from '%s' to '%s': local parts in two different tables", a->name, b->name);
  qp_matrix from, to;
  QP_CALL(qp_tiled_local_view(a, r0, c0, r1 - r0, c1 - c0, a->name, &from));
  QP_CALL(qp_tiled_local_view(b, r0, c0, r1 - r0, c1 - c0, b->name, &to));
  return local->copy_sub(r1 - r0, c1 - c0, &from, 0, 0, &to, 0, 0);
}

/* The entries of the gathered window (its rows at B's global rows from bi, columns from bj, ld
 * window_ld) that fall in this rank's local part of B, written there: packed on the host
 * stage, then one upload (or copy) of the run of B's local rows and columns they fill.
 * `transposed`: window entry (i, j) goes to B's (bj + j, bi + i) instead. */
static qp_err qp_tiled_scatter(qp_tiled_work *w, int64_t window_ld, int64_t rows, int64_t cols,
                               int transposed, qp_matrix *b, int64_t bi, int64_t bj) {
  const qp_grid *g = b->grid;
  const int64_t b_rows = transposed ? cols : rows, b_cols = transposed ? rows : cols;
  int64_t r0, r1, c0, c1;
  qp_tiled_local_range(bi, bi + b_rows, g->block, g->myrow, g->nprow, &r0, &r1);
  qp_tiled_local_range(bj, bj + b_cols, g->block, g->mycol, g->npcol, &c0, &c1);
  const int64_t nr = r1 - r0, nc = c1 - c0;
  if (nr == 0 || nc == 0) return QP_OK;
  QP_CHECK(nr * nc <= w->sizes.stage, QP_ERR_INTERNAL,
           "tiled copy into '%s': %lld x %lld past the stage's %lld", b->name, (long long)nr,
           (long long)nc, (long long)w->sizes.stage);
  for (int64_t t = 0; t < nc; ++t) {
    const int64_t j = qp_bc_global_index(c0 + t, g->block, g->mycol, g->npcol) - bj;
    if (!transposed) {
      qp_tiled_copy_column(w->stage + t * nr, r0, nr, g->block, g->myrow, g->nprow, bi,
                           w->window + j * window_ld, 0);
      continue;
    }
    for (int64_t s = 0; s < nr; ++s) {
      const int64_t i = qp_bc_global_index(r0 + s, g->block, g->myrow, g->nprow) - bi;
      w->stage[s + t * nr] = w->window[j + i * window_ld];
    }
  }
  return qp_linalg_upload(w->stage, nr, b, r0, c0, nr, nc);
}

/* The sizes of a copy or transpose whose windows are `rows` x a block at most, scattered into
 * up to `b_rows` x `b_cols` of B (a run of global indices meets at most a block more of a
 * rank's local indices than the same length from index 0: qp_tiled_bound_sizes). */
static qp_tiled_sizes qp_tiled_move_sizes(const qp_grid *g, int64_t rows, int64_t width,
                                          int64_t b_rows, int64_t b_cols) {
  const int64_t lr = qp_bc_local_count(b_rows, g->block, g->myrow, g->nprow) + g->block;
  const int64_t lc = qp_bc_local_count(b_cols, g->block, g->mycol, g->npcol) + g->block;
  return (qp_tiled_sizes){.window = rows * width,
                          .stage = (lr < b_rows ? lr : b_rows) * (lc < b_cols ? lc : b_cols)};
}

qp_err qp_tiled_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                         qp_matrix *b, int64_t bi, int64_t bj) {
  QP_CHECK(a->grid && a->grid == b->grid, QP_ERR_INTERNAL,
           "tiled copy from '%s' to '%s': both must be block-cyclic on one grid", a->name,
           b->name);
  if (rows == 0 || cols == 0) return QP_OK;
  if (ai == bi && aj == bj) return qp_comm_agree(qp_tiled_copy_in_place(rows, cols, a, ai, aj, b));
  const int64_t width = qp_tiled_move_width(a->grid, cols);
  const qp_tiled_sizes sizes = qp_tiled_move_sizes(a->grid, rows, width, rows, width);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a->space == QP_SPACE_DEVICE ? a : b, &sizes, &w));
  qp_err err = QP_OK;
  for (int64_t j0 = 0; j0 < cols && err == QP_OK; j0 += width) {
    const int64_t jw = cols - j0 < width ? cols - j0 : width;
    err = qp_tiled_gather(&w, QP_OK, a, ai, aj + j0, rows, jw);
    if (err == QP_OK) err = qp_comm_agree(qp_tiled_scatter(&w, rows, rows, jw, 0, b, bi, bj + j0));
  }
  qp_tiled_work_close(&w);
  return err;
}

qp_err qp_tiled_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_CHECK(a->grid && a->grid == b->grid && a->rows == b->cols && a->cols == b->rows,
           QP_ERR_INTERNAL, "tiled transpose of '%s' into '%s': not block-cyclic on one grid, "
           "or shapes that do not agree", a->name, b->name);
  const int64_t m = a->rows, n = a->cols;
  if (m == 0 || n == 0) return QP_OK;
  /* A's column panels, whole on every rank, are B's row panels. */
  const int64_t width = qp_tiled_move_width(a->grid, n);
  const qp_tiled_sizes sizes = qp_tiled_move_sizes(a->grid, m, width, width, m);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  qp_err err = QP_OK;
  for (int64_t j0 = 0; j0 < n && err == QP_OK; j0 += width) {
    const int64_t jw = n - j0 < width ? n - j0 : width;
    err = qp_tiled_gather(&w, QP_OK, a, 0, j0, m, jw);
    if (err == QP_OK) err = qp_comm_agree(qp_tiled_scatter(&w, m, m, jw, 1, b, j0, 0));
  }
  qp_tiled_work_close(&w);
  return err;
}

qp_err qp_tiled_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  QP_CHECK(a->grid, QP_ERR_INTERNAL, "tiled scale of '%s': not block-cyclic", a->name);
  const qp_grid *g = a->grid;
  const int64_t nb = g->block, m = a->local_rows;
  /* Every rank opens the work (collective), one without local entries too. */
  const qp_tiled_sizes sizes = {.stage = m * nb};
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  qp_err err = QP_OK;
  for (int64_t lj = 0; m > 0 && lj < a->local_cols && err == QP_OK; lj += nb) {
    const int64_t jb = a->local_cols - lj < nb ? a->local_cols - lj : nb;
    err = qp_linalg_download(a, 0, lj, m, jb, w.stage, m);
    for (int64_t t = 0; t < jb && err == QP_OK; ++t) {
      const int64_t gj = qp_bc_global_index(lj + t, nb, g->mycol, g->npcol);
      const double c = cols ? qp_run_scale_at(cols, gj) : 1.0;
      for (int64_t li = 0; li < m; ++li) {
        const int64_t gi = qp_bc_global_index(li, nb, g->myrow, g->nprow);
        w.stage[li + t * m] *= (rows ? qp_run_scale_at(rows, gi) : 1.0) * c;
      }
    }
    if (err == QP_OK) err = qp_linalg_upload(w.stage, m, a, 0, lj, m, jb);
  }
  qp_tiled_work_close(&w);
  return qp_comm_agree(err);
}

qp_err qp_tiled_clear_upper(qp_matrix *a) {
  QP_CHECK(a->grid && a->rows == a->cols, QP_ERR_INTERNAL,
           "tiled clear_upper of '%s': not a square block-cyclic matrix", a->name);
  const qp_grid *g = a->grid;
  const int64_t nb = g->block;
  const qp_tiled_sizes sizes = {.stage = a->local_rows * nb};
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  qp_err err = QP_OK;
  /* A local block column's entries above the diagonal are, in each local column, the local
   * rows of smaller global index: a prefix, longest in its last column. Down, cleared, up. */
  for (int64_t lj = 0; lj < a->local_cols && err == QP_OK; lj += nb) {
    const int64_t jb = a->local_cols - lj < nb ? a->local_cols - lj : nb;
    const int64_t gj = qp_bc_global_index(lj, nb, g->mycol, g->npcol);
    const int64_t top = qp_bc_local_count(gj + jb - 1, nb, g->myrow, g->nprow);
    if (top == 0) continue;
    err = qp_linalg_download(a, 0, lj, top, jb, w.stage, top);
    for (int64_t t = 0; t < jb && err == QP_OK; ++t) {
      const int64_t above = qp_bc_local_count(gj + t, nb, g->myrow, g->nprow);
      memset(w.stage + t * top, 0, (size_t)above * sizeof(double));
    }
    if (err == QP_OK) err = qp_linalg_upload(w.stage, top, a, 0, lj, top, jb);
  }
  qp_tiled_work_close(&w);
  return qp_comm_agree(err);
}
