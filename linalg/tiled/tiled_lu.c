/* tiled_lu.c: the LU with partial pivoting and its solves over a local table and MPI (tiled.h),
 * what SMW's kernel I + K Lambda needs on a device per rank.
 *
 * A step k of getrf (block column k0 .. k0 + kb):
 * 1. the panel A[k0.., k0..] is gathered whole on every rank; rank 0 factors it on the host
 *    (LAPACK's dgetrf: the panel's pivots are its rows' largest entries, as pdgetrf's) and
 *    broadcasts the factored panel and its pivots, so that every rank takes the same
 *    interchanges, whatever its LAPACK would have rounded;
 * 2. the rows the interchanges change are exchanged whole (every column, L's left of the panel
 *    included, as LAPACK's dlaswp): each rank downloads its part of them, they are gathered, each
 *    rank uploads its new rows;
 * 3. the panel's process column writes the factored panel into its rows;
 * 4. the process row of the panel solves its block row right of the panel with the unit L_kk;
 * 5. every rank updates its local trailing part with one gemm: its rows of L21 (from the
 *    panel) times its columns of the solved block row (gathered).
 * Rank 0's host factorisation is O(n kb^2) a step, O(n^2 kb) in all: the O(n^3) is the trailing
 * gemms, on the local table. */
#include <lapacke.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_int.h"
#include "comm.h"
#include "fault.h"
#include "tiled_work.h"

/* The rows step k's interchanges change (at most 2 kb), and for each the row whose old
 * content it takes. */
typedef struct qp_tiled_moves {
  int64_t count;
  int64_t *row, *source;
  int64_t *first; /* per rank: where its part starts in the gathered rows */
} qp_tiled_moves;

/* The position of `row` among the moves, or -1. */
static int64_t qp_tiled_move_find(const qp_tiled_moves *m, int64_t row) {
  for (int64_t i = 0; i < m->count; ++i)
    if (m->row[i] == row) return i;
  return -1;
}

/* The position of `row` among the moves, added (its own source) if it is not there yet. */
static int64_t qp_tiled_move_slot(qp_tiled_moves *m, int64_t row) {
  const int64_t at = qp_tiled_move_find(m, row);
  if (at >= 0) return at;
  m->row[m->count] = row;
  m->source[m->count] = row;
  return m->count++;
}

/* LAPACK's interchanges of step k (row k0 + j with row k0 + ipiv[j] - 1, j in order) as moves;
 * rows that end where they were are dropped. */
static void qp_tiled_moves_of(int64_t k0, int64_t kb, const int *ipiv, qp_tiled_moves *m) {
  m->count = 0;
  for (int64_t j = 0; j < kb; ++j) {
    const int64_t a = qp_tiled_move_slot(m, k0 + j);
    const int64_t b = qp_tiled_move_slot(m, k0 + ipiv[j] - 1);
    const int64_t t = m->source[a];
    m->source[a] = m->source[b];
    m->source[b] = t;
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < m->count; ++i)
    if (m->source[i] != m->row[i]) {
      m->row[kept] = m->row[i];
      m->source[kept++] = m->source[i];
    }
  m->count = kept;
}

/* The moved rows owned by process row prow, before the one at `upto` (the position of a row in
 * that process row's part of the exchange). */
static int64_t qp_tiled_moves_on(const qp_tiled_moves *m, int64_t upto, int prow,
                                 const qp_grid *g) {
  int64_t n = 0;
  for (int64_t i = 0; i < upto; ++i) n += qp_bc_owner(m->row[i], g->block, g->nprow) == prow;
  return n;
}

/* Every moved row takes its source's old content, the columns [j0, j1) of it. */
static qp_err qp_tiled_move_rows(qp_matrix *a, const qp_tiled_moves *m, int64_t j0, int64_t j1,
                                 qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  int64_t c0, c1;
  qp_tiled_local_range(j0, j1, g->block, g->mycol, g->npcol, &c0, &c1);
  const int64_t width = c1 - c0;
  /* This rank's part of the moved rows it owns, a row after the other (row-major). */
  qp_err err = QP_OK;
  int64_t sent = 0;
  for (int64_t i = 0; i < m->count && err == QP_OK; ++i)
    if (qp_bc_owner(m->row[i], g->block, g->nprow) == g->myrow && width > 0) {
      err = qp_linalg_download(a, qp_bc_local_index(m->row[i], g->block, g->nprow), c0, 1, width,
                               w->send + sent * width, 1);
      ++sent;
    }
  QP_CALL(qp_comm_agree(err));
  const int ranks = qp_comm_size();
  int64_t *first = m->first, at = 0;
  for (int q = 0; q < ranks; ++q) {
    const int prow = q / g->npcol, pcol = q % g->npcol;
    int64_t b0, b1;
    qp_tiled_local_range(j0, j1, g->block, pcol, g->npcol, &b0, &b1);
    w->counts[q] = qp_tiled_moves_on(m, m->count, prow, g) * (b1 - b0);
    first[q] = at;
    at += w->counts[q];
  }
  err = qp_comm_allgatherv(w->send, w->recv, w->counts);
  /* A source's content comes from the rank of its process row in this process column: the
   * same local columns as this rank's. */
  for (int64_t i = 0; i < m->count && err == QP_OK; ++i)
    if (qp_bc_owner(m->row[i], g->block, g->nprow) == g->myrow && width > 0) {
      const int64_t src = m->source[i], slot = qp_tiled_move_find(m, src);
      const int sprow = qp_bc_owner(src, g->block, g->nprow);
      const double *from = w->recv + first[sprow * g->npcol + g->mycol] +
                           qp_tiled_moves_on(m, slot, sprow, g) * width;
      err = qp_linalg_upload(from, 1, a, qp_bc_local_index(m->row[i], g->block, g->nprow), c0, 1,
                             width);
    }
  return qp_comm_agree(err);
}

/* Step k's interchanges on every column, in runs of columns whose moved rows fit a window. */
static qp_err qp_tiled_interchange(qp_matrix *a, const qp_tiled_moves *m, qp_tiled_work *w) {
  if (m->count == 0) return QP_OK;
  int64_t run = w->sizes.window / m->count;
  if (run > a->cols) run = a->cols;
  for (int64_t j0 = 0; j0 < a->cols; j0 += run)
    QP_CALL(qp_tiled_move_rows(a, m, j0, j0 + run < a->cols ? j0 + run : a->cols, w));
  return QP_OK;
}

/* LAPACK's dgetrf on the gathered rows x kb panel (w->window); ipiv[kb] <- its info. */
static qp_err qp_tiled_panel_dgetrf(int64_t rows, int64_t kb, qp_tiled_work *w, int *ipiv) {
  int m, n;
  QP_BLAS_INT(rows, &m, "getrf panel rows");
  QP_BLAS_INT(kb, &n, "getrf panel columns");
  const int info = LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, w->window, m, ipiv);
  ipiv[kb] = QP_FAULT_INFO("dgetrf", info);
  return QP_OK;
}

/* Step 1: the panel gathered, factored on rank 0, broadcast with its pivots (ipiv, kb + 1 ints:
 * the last LAPACK's info). */
static qp_err qp_tiled_factor_lu_panel(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w,
                                       int *ipiv) {
  const int64_t rows = a->rows - k0;
  QP_CALL(qp_tiled_gather(w, QP_OK, a, k0, k0, rows, kb));
  QP_CALL(qp_comm_agree(qp_comm_rank() == 0 ? qp_tiled_panel_dgetrf(rows, kb, w, ipiv) : QP_OK));
  QP_CALL(qp_comm_bcast(w->window, (size_t)(rows * kb) * sizeof(double)));
  QP_CALL(qp_comm_bcast(ipiv, (size_t)(kb + 1) * sizeof(int)));
  const int info = ipiv[kb];
  QP_CHECK(info >= 0, QP_ERR_LIBRARY, "getrf of '%s' (stage %s): dgetrf's argument %d is invalid",
           a->name, qp_stage_current(), -info);
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%lld x %lld) is singular: U(%lld,%lld) = 0", qp_stage_label(),
           a->name, (long long)a->rows, (long long)a->cols, (long long)(k0 + info),
           (long long)(k0 + info));
  return QP_OK;
}

/* Step 3: the factored panel (w->window) into the rows of the panel's process column. */
static qp_err qp_tiled_write_panel(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  const int64_t rows = a->rows - k0;
  int64_t r0, r1;
  qp_tiled_local_range(k0, a->rows, g->block, g->myrow, g->nprow, &r0, &r1);
  const int64_t nr = r1 - r0;
  if (qp_bc_owner(k0, g->block, g->npcol) != g->mycol || nr == 0) return QP_OK;
  for (int64_t c = 0; c < kb; ++c)
    qp_tiled_copy_column(w->stage + c * nr, r0, nr, g->block, g->myrow, g->nprow, k0,
                         w->window + c * rows, 0);
  return qp_linalg_upload(w->stage, nr, a, r0, qp_bc_local_index(k0, g->block, g->npcol), nr, kb);
}

/* Step 4: the block row right of the panel <- L_kk^-1 itself on the panel's process row, L_kk
 * the unit lower part of the factored panel's top (ones written on its diagonal). */
static qp_err qp_tiled_solve_block_row(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  const int64_t rows = a->rows - k0;
  int64_t c0, c1;
  qp_tiled_local_range(k0 + kb, a->cols, g->block, g->mycol, g->npcol, &c0, &c1);
  if (qp_bc_owner(k0, g->block, g->nprow) != g->myrow || c1 == c0) return QP_OK;
  for (int64_t j = 0; j < kb; ++j)
    for (int64_t i = 0; i < kb; ++i) w->stage[i + j * kb] = i == j ? 1.0 : w->window[i + j * rows];
  qp_matrix tile, block_row;
  QP_CALL(qp_matrix_view(w->local, "L_kk (unit lower)", w->tile, kb, kb, kb, &tile));
  QP_CALL(qp_linalg_upload(w->stage, kb, &tile, 0, 0, kb, kb));
  QP_CALL(qp_tiled_local_view(a, qp_bc_local_index(k0, g->block, g->nprow), c0, kb, c1 - c0,
                              a->name, &block_row));
  return w->local->trsm(QP_LEFT, QP_NOTRANS, 1.0, &tile, &block_row);
}

/* Steps 3-5. */
static qp_err qp_tiled_lu_update(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  const int64_t n = a->rows, t0 = k0 + kb;
  qp_err err = qp_tiled_write_panel(a, k0, kb, w);
  if (t0 >= n) return qp_comm_agree(err);
  int64_t r0, r1, c0, c1;
  qp_tiled_local_range(t0, n, g->block, g->myrow, g->nprow, &r0, &r1);
  qp_tiled_local_range(t0, a->cols, g->block, g->mycol, g->npcol, &c0, &c1);
  qp_matrix l21, u12, target;
  const qp_tiled_targets rows = qp_tiled_rows(a, r0, r1, k0), cols = qp_tiled_cols(a, c0, c1, t0);
  if (err == QP_OK)
    err = qp_tiled_pack(w, n - k0, 1, kb, &rows, 0, w->panel_a, "L21 (rows)", &l21);
  if (err == QP_OK) err = qp_tiled_solve_block_row(a, k0, kb, w);
  QP_CALL(qp_tiled_gather(w, err, a, k0, t0, kb, a->cols - t0));
  err = qp_tiled_pack(w, kb, 0, kb, &cols, 1, w->panel_b, "U12 (columns)", &u12);
  if (err == QP_OK && r1 > r0 && c1 > c0) {
    err = qp_tiled_local_view(a, r0, c0, r1 - r0, c1 - c0, a->name, &target);
    if (err == QP_OK) err = w->local->gemm(QP_NOTRANS, QP_NOTRANS, -1.0, &l21, &u12, 1.0, &target);
  }
  return qp_comm_agree(err);
}

qp_err qp_tiled_getrf(qp_matrix *a, int *pivots) {
  QP_CHECK(a->grid && a->rows == a->cols, QP_ERR_INTERNAL,
           "tiled getrf of '%s': not a square block-cyclic matrix", a->name);
  const qp_grid *g = a->grid;
  const int64_t n = a->rows, nb = g->block;
  const qp_tiled_sizes sizes =
      qp_tiled_triangular_sizes(n, n, g->block, g->nprow, g->npcol, g->myrow, g->mycol);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  /* O(block + ranks) scratch: the panel's pivots, the moves and the ranks' offsets (plain
   * memory, as norm1's sums). */
  int *ipiv = malloc((size_t)(nb + 1) * sizeof *ipiv);
  int64_t *moves = malloc((size_t)(4 * nb + qp_comm_size()) * sizeof *moves);
  qp_err err = ipiv && moves ? QP_OK
                             : qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                            "getrf of '%s': no memory for a step's pivots",
                                            a->name);
  err = qp_comm_agree(err);
  qp_tiled_moves m = {.row = moves,
                      .source = moves ? moves + 2 * nb : NULL,
                      .first = moves ? moves + 4 * nb : NULL};
  for (int64_t k0 = 0; k0 < n && err == QP_OK; k0 += nb) {
    const int64_t kb = n - k0 < nb ? n - k0 : nb;
    err = qp_tiled_factor_lu_panel(a, k0, kb, &w, ipiv);
    if (err != QP_OK) break;
    for (int64_t j = 0; j < kb; ++j)
      if (qp_bc_owner(k0 + j, nb, g->nprow) == g->myrow)
        pivots[qp_bc_local_index(k0 + j, nb, g->nprow)] = (int)(k0 + ipiv[j]);
    qp_tiled_moves_of(k0, kb, ipiv, &m);
    err = qp_tiled_interchange(a, &m, &w);
    if (err == QP_OK) err = qp_tiled_lu_update(a, k0, kb, &w);
  }
  free(ipiv);
  free(moves);
  qp_tiled_work_close(&w);
  return err;
}

/* For every global row, the row whose content it takes under the pivots' interchanges (every
 * rank: the pivots of process column 0's local rows, summed over the ranks). */
static qp_err qp_tiled_row_sources(const qp_matrix *lu, const int *pivots, int64_t *source) {
  const qp_grid *g = lu->grid;
  const int64_t n = lu->rows;
  double *global = calloc((size_t)(n > 0 ? n : 1), sizeof *global);
  QP_CHECK(global, QP_ERR_NOMEM, "getrs with '%s': no memory for %lld pivots", lu->name,
           (long long)n);
  if (g->mycol == 0)
    for (int64_t li = 0; li < lu->local_rows; ++li)
      global[qp_bc_global_index(li, g->block, g->myrow, g->nprow)] = pivots[li];
  qp_err err = qp_comm_sum(global, n);
  for (int64_t i = 0; i < n; ++i) source[i] = i;
  for (int64_t i = 0; i < n && err == QP_OK; ++i) {
    const int64_t p = (int64_t)global[i] - 1;
    if (p < i || p >= n)
      err = qp_error_set(QP_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                         "getrs with '%s': pivot %lld of row %lld is not a later row", lu->name,
                         (long long)p + 1, (long long)i + 1);
    else {
      const int64_t t = source[i];
      source[i] = source[p];
      source[p] = t;
    }
  }
  free(global);
  return err;
}

/* B's rows <- their sources', a block column at a time (gathered whole, each rank writing its
 * own rows). */
static qp_err qp_tiled_permute_rows(qp_matrix *b, const int64_t *source) {
  const qp_grid *g = b->grid;
  const int64_t n = b->rows, nb = g->block, lm = b->local_rows;
  const qp_tiled_sizes sizes =
      qp_tiled_triangular_sizes(n, b->cols, g->block, g->nprow, g->npcol, g->myrow, g->mycol);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(b, &sizes, &w));
  qp_err err = QP_OK;
  for (int64_t j0 = 0; j0 < b->cols && err == QP_OK; j0 += nb) {
    const int64_t jb = b->cols - j0 < nb ? b->cols - j0 : nb;
    err = qp_tiled_gather(&w, QP_OK, b, 0, j0, n, jb);
    if (err != QP_OK) break;
    if (qp_bc_owner(j0, nb, g->npcol) == g->mycol && lm > 0) {
      for (int64_t c = 0; c < jb; ++c)
        for (int64_t li = 0; li < lm; ++li)
          w.stage[li + c * lm] =
              w.window[source[qp_bc_global_index(li, nb, g->myrow, g->nprow)] + c * n];
      err = qp_linalg_upload(w.stage, lm, b, 0, qp_bc_local_index(j0, nb, g->npcol), lm, jb);
    }
    err = qp_comm_agree(err);
  }
  qp_tiled_work_close(&w);
  return err;
}

qp_err qp_tiled_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_CHECK(lu->grid && lu->grid == b->grid && lu->rows == lu->cols && b->rows == lu->rows,
           QP_ERR_INTERNAL, "tiled getrs with '%s' on '%s': operands do not match", lu->name,
           b->name);
  const int64_t n = lu->rows;
  int64_t *source = malloc((size_t)(n > 0 ? n : 1) * sizeof *source);
  qp_err err = source ? QP_OK
                      : qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                     "getrs with '%s': no memory for %lld row indices", lu->name,
                                     (long long)n);
  err = qp_comm_agree(err);
  if (err == QP_OK) err = qp_comm_agree(qp_tiled_row_sources(lu, pivots, source));
  int moved = 0;
  for (int64_t i = 0; i < n && err == QP_OK && !moved; ++i) moved = source[i] != i;
  if (err == QP_OK && moved) err = qp_tiled_permute_rows(b, source);
  free(source);
  if (err == QP_OK)
    err = qp_tiled_trsm_triangle(QP_LEFT, QP_NOTRANS, 1.0, QP_TILED_UNIT_LOWER, lu, b);
  if (err == QP_OK) err = qp_tiled_trsm_triangle(QP_LEFT, QP_NOTRANS, 1.0, QP_TILED_UPPER, lu, b);
  return err;
}

qp_err qp_tiled_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_CALL(qp_tiled_trsm(QP_LEFT, QP_NOTRANS, 1.0, l, b));
  return qp_tiled_trsm(QP_LEFT, QP_TRANS, 1.0, l, b);
}
