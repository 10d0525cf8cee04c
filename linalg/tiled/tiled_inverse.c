/* tiled_inverse.c: L^-1 in place over a local table and MPI (tiled.h), LAPACK's blocked
 * dtrtri (lower, non-unit) by block columns from the last: with X22 = L22^-1 already in the
 * trailing part, block column j's part below the diagonal becomes -X22 L21 L_jj^-1, then
 * L_jj becomes its inverse.
 *
 * A step: the diagonal block and the column panel L21 below it are gathered whole; each rank
 * multiplies its local part of X22 (block column by block column, from the diagonal block
 * down: X22 is lower triangular, its upper part zero) by the rows of L21 that meet its local
 * columns; the partial products are summed over the ranks into the panel's rows, whole on
 * every rank; the process column that holds column j writes its rows and solves them with
 * L_jj on the right; the owner of L_jj inverts it with the local table's trtri. The strict
 * upper triangle is cleared first (the local products read the diagonal blocks whole). */
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "tiled_work.h"

/* partial (this rank's rows r0.. of X22 L21, nr x kb, in panel_a) <- sum over this rank's
 * local block columns of X22 of the block column times the rows of L21 packed in by_col. */
static qp_err qp_tiled_inverse_partial(qp_matrix *a, int64_t t0, int64_t kb, qp_tiled_work *w,
                                       int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                       qp_matrix *partial) {
  const int64_t nr = r1 - r0;
  memset(w->stage, 0, (size_t)(nr * kb) * sizeof(double));
  QP_CALL(qp_matrix_view(w->local, "X22 L21 (partial)", w->panel_a, nr, kb, nr, partial));
  QP_CALL(qp_linalg_upload(w->stage, nr, partial, 0, 0, nr, kb));
  qp_matrix by_col;
  const qp_tiled_targets cols = qp_tiled_cols(a, c0, c1, t0);
  QP_CALL(qp_tiled_pack(w, a->rows - t0, 1, kb, &cols, 0, w->panel_b, "L21 (columns)", &by_col));
  int64_t jb, li;
  for (int64_t lj = c0; qp_tiled_lower_column(a, lj, c1, &jb, &li); lj += jb)
    if (li < r1) {
      qp_matrix x, l21, target;
      QP_CALL(qp_tiled_local_view(a, li, lj, r1 - li, jb, a->name, &x));
      QP_CALL(qp_matrix_view(w->local, "L21 (columns)", by_col.data + (lj - c0), jb, kb,
                             by_col.ld, &l21));
      QP_CALL(qp_matrix_view(w->local, "X22 L21 (partial)", partial->data + (li - r0), r1 - li,
                             kb, nr, &target));
      QP_CALL(w->local->gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &x, &l21, 1.0, &target));
    }
  return QP_OK;
}

/* The window (t0.., kb columns, whole) <- the sum over the ranks of their partial rows. */
static qp_err qp_tiled_inverse_sum(qp_matrix *a, int64_t t0, int64_t kb, qp_tiled_work *w,
                                   qp_err pending, int64_t r0, int64_t r1,
                                   const qp_matrix *partial) {
  const qp_grid *g = a->grid;
  const int64_t rows = a->rows - t0, nr = r1 - r0;
  qp_err err = pending;
  if (err == QP_OK && nr > 0 && partial->data)
    err = qp_linalg_download(partial, 0, 0, nr, kb, w->stage, nr);
  QP_CALL(qp_comm_agree(err));
  memset(w->window, 0, (size_t)(rows * kb) * sizeof(double));
  for (int64_t c = 0; c < kb; ++c)
    qp_tiled_copy_column(w->stage + c * nr, r0, nr, g->block, g->myrow, g->nprow, t0,
                         w->window + c * rows, 1);
  return qp_comm_sum(w->window, rows * kb);
}

/* Column j's rows below the diagonal <- -(X22 L21) L_jj^-1 on the process column holding it. */
static qp_err qp_tiled_inverse_panel(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w,
                                     int64_t r0, int64_t r1, const qp_matrix *tile) {
  const qp_grid *g = a->grid;
  const int64_t t0 = k0 + kb, rows = a->rows - t0, nr = r1 - r0;
  if (qp_bc_owner(k0, g->block, g->npcol) != g->mycol || nr == 0) return QP_OK;
  for (int64_t c = 0; c < kb; ++c)
    qp_tiled_copy_column(w->stage + c * nr, r0, nr, g->block, g->myrow, g->nprow, t0,
                         w->window + c * rows, 0);
  const int64_t lc = qp_bc_local_index(k0, g->block, g->npcol);
  qp_matrix panel;
  QP_CALL(qp_linalg_upload(w->stage, nr, a, r0, lc, nr, kb));
  QP_CALL(qp_tiled_local_view(a, r0, lc, nr, kb, a->name, &panel));
  return w->local->trsm(QP_RIGHT, QP_NOTRANS, -1.0, tile, &panel);
}

/* L_jj <- L_jj^-1 on its owner. */
static qp_err qp_tiled_inverse_diagonal(qp_matrix *a, int64_t k0, int64_t kb,
                                        const qp_linalg_ops *local) {
  const qp_grid *g = a->grid;
  if (qp_bc_owner(k0, g->block, g->nprow) != g->myrow ||
      qp_bc_owner(k0, g->block, g->npcol) != g->mycol)
    return QP_OK;
  char name[2 * QP_TERM_NAME_MAX]; /* the view keeps its first QP_TERM_NAME_MAX - 1 */
  snprintf(name, sizeof name, "%s, diagonal block from row %lld", a->name, (long long)k0 + 1);
  qp_matrix tile;
  QP_CALL(qp_tiled_local_view(a, qp_bc_local_index(k0, g->block, g->nprow),
                              qp_bc_local_index(k0, g->block, g->npcol), kb, kb, name, &tile));
  return local->trtri(&tile);
}

/* Step j (columns k0 .. k0 + kb). Collective; every error returned is agreed on. */
static qp_err qp_tiled_inverse_step(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  const int64_t n = a->rows, t0 = k0 + kb;
  if (t0 < n) {
    int64_t r0, r1, c0, c1;
    qp_tiled_local_range(t0, n, g->block, g->myrow, g->nprow, &r0, &r1);
    qp_tiled_local_range(t0, n, g->block, g->mycol, g->npcol, &c0, &c1);
    /* L_jj (old) into the tile where the panel's solve needs it, before the window is reused. */
    QP_CALL(qp_tiled_gather(w, QP_OK, a, k0, k0, kb, kb));
    qp_matrix tile = {0}, partial = {0};
    qp_err err = QP_OK;
    if (qp_bc_owner(k0, g->block, g->npcol) == g->mycol && r1 > r0)
      err = qp_tiled_upload_tile(w, kb, "diagonal block of L", &tile);
    QP_CALL(qp_tiled_gather(w, err, a, t0, k0, n - t0, kb));
    if (r1 > r0) err = qp_tiled_inverse_partial(a, t0, kb, w, r0, r1, c0, c1, &partial);
    QP_CALL(qp_tiled_inverse_sum(a, t0, kb, w, err, r0, r1, &partial));
    QP_CALL(qp_comm_agree(qp_tiled_inverse_panel(a, k0, kb, w, r0, r1, &tile)));
  }
  return qp_comm_agree(qp_tiled_inverse_diagonal(a, k0, kb, w->local));
}

qp_err qp_tiled_trtri(qp_matrix *a) {
  QP_CHECK(a->grid && a->rows == a->cols, QP_ERR_INTERNAL,
           "tiled trtri of '%s': not a square block-cyclic matrix", a->name);
  QP_CALL(qp_tiled_clear_upper(a));
  const qp_grid *g = a->grid;
  const qp_tiled_sizes sizes =
      qp_tiled_potrf_sizes(a->rows, g->block, g->nprow, g->npcol, g->myrow, g->mycol);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  const int64_t n = a->rows, nb = g->block, blocks = (n + nb - 1) / nb;
  qp_err err = QP_OK;
  for (int64_t k = blocks - 1; k >= 0 && err == QP_OK; --k) {
    const int64_t k0 = k * nb, kb = n - k0 < nb ? n - k0 : nb;
    err = qp_tiled_inverse_step(a, k0, kb, &w);
  }
  qp_tiled_work_close(&w);
  return err;
}
