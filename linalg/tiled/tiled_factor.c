/* tiled_factor.c: Cholesky, the 1-norm and the condition estimate over a local table and MPI
 * (tiled.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"
#include "condition_estimate.h"
#include "tiled_work.h"

/* L_kk <- potrf(A_kk) on its owner; every rank returns the owner's error. */
static qp_err qp_tiled_factor_diagonal(qp_matrix *a, int64_t k0, int64_t kb,
                                       const qp_linalg_ops *local) {
  const qp_grid *g = a->grid;
  qp_err err = QP_OK;
  if (qp_bc_owner(k0, g->block, g->nprow) == g->myrow &&
      qp_bc_owner(k0, g->block, g->npcol) == g->mycol) {
    char name[2 * QP_TERM_NAME_MAX]; /* the view keeps its first QP_TERM_NAME_MAX - 1 */
    snprintf(name, sizeof name, "%s, diagonal block from row %lld", a->name, (long long)k0 + 1);
    qp_matrix tile;
    err = qp_tiled_local_view(a, qp_bc_local_index(k0, g->block, g->nprow),
                              qp_bc_local_index(k0, g->block, g->npcol), kb, kb, name, &tile);
    if (err == QP_OK) err = local->potrf(&tile);
  }
  return qp_comm_agree(err);
}

/* This rank's part of the trailing update of step k: its local columns right of the panel,
 * each block column from its diagonal block down. */
static qp_err qp_tiled_factor_trailing(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  const int64_t n = a->rows, t0 = k0 + kb;
  int64_t r0, r1, c0, c1;
  qp_tiled_local_range(t0, n, g->block, g->myrow, g->nprow, &r0, &r1);
  qp_tiled_local_range(t0, n, g->block, g->mycol, g->npcol, &c0, &c1);
  const qp_tiled_targets rows = qp_tiled_rows(a, r0, r1, t0), cols = qp_tiled_cols(a, c0, c1, t0);
  qp_matrix by_row, by_col;
  QP_CALL(qp_tiled_pack(w, n - t0, 1, kb, &rows, 0, w->panel_a, "panel (rows)", &by_row));
  QP_CALL(qp_tiled_pack(w, n - t0, 1, kb, &cols, 0, w->panel_b, "panel (columns)", &by_col));
  int64_t jb, li;
  for (int64_t lj = c0; qp_tiled_lower_column(a, lj, c1, &jb, &li); lj += jb)
    if (li < r1) {
      qp_matrix target, left, right;
      QP_CALL(qp_tiled_local_view(a, li, lj, r1 - li, jb, a->name, &target));
      QP_CALL(qp_matrix_view(w->local, "panel (rows)", by_row.data + (li - r0), r1 - li, kb,
                             by_row.ld, &left));
      QP_CALL(qp_matrix_view(w->local, "panel (columns)", by_col.data + (lj - c0), jb, kb,
                             by_col.ld, &right));
      QP_CALL(w->local->gemm(QP_NOTRANS, QP_TRANS, -1.0, &left, &right, 1.0, &target));
    }
  return QP_OK;
}

/* The panel below L_kk <- itself L_kk^-T on the process column that holds it, then the lower
 * trailing matrix <- itself - panel panel^T: a gemm per local block column, from its diagonal
 * block down (the diagonal block whole: its strict upper part too, tiled.h). */
static qp_err qp_tiled_factor_panel(qp_matrix *a, int64_t k0, int64_t kb, qp_tiled_work *w) {
  const qp_grid *g = a->grid;
  const int64_t n = a->rows, t0 = k0 + kb, nb = g->block;
  QP_CALL(qp_tiled_gather(w, QP_OK, a, k0, k0, kb, kb));
  qp_err err = QP_OK;
  int64_t r0, r1, c0, c1;
  qp_tiled_local_range(t0, n, g->block, g->myrow, g->nprow, &r0, &r1);
  qp_tiled_local_range(t0, n, g->block, g->mycol, g->npcol, &c0, &c1);
  if (qp_bc_owner(k0, nb, g->npcol) == g->mycol && r1 > r0) {
    qp_matrix tile, panel;
    err = qp_tiled_upload_tile(w, kb, "diagonal block of L", &tile);
    if (err == QP_OK)
      err = qp_tiled_local_view(a, r0, qp_bc_local_index(k0, nb, g->npcol), r1 - r0, kb,
                                a->name, &panel);
    if (err == QP_OK) err = w->local->trsm(QP_RIGHT, QP_TRANS, 1.0, &tile, &panel);
  }
  QP_CALL(qp_tiled_gather(w, err, a, t0, k0, n - t0, kb));
  return qp_comm_agree(qp_tiled_factor_trailing(a, k0, kb, w));
}

qp_err qp_tiled_potrf(qp_matrix *a) {
  QP_CHECK(a->grid && a->rows == a->cols, QP_ERR_INTERNAL,
           "tiled potrf of '%s': not a square block-cyclic matrix", a->name);
  const qp_grid *g = a->grid;
  const qp_tiled_sizes sizes =
      qp_tiled_potrf_sizes(a->rows, g->block, g->nprow, g->npcol, g->myrow, g->mycol);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  const int64_t n = a->rows, nb = g->block;
  qp_err err = QP_OK;
  for (int64_t k0 = 0; k0 < n && err == QP_OK; k0 += nb) {
    const int64_t kb = n - k0 < nb ? n - k0 : nb;
    err = qp_tiled_factor_diagonal(a, k0, kb, w.local);
    if (err == QP_OK && k0 + kb < n) err = qp_tiled_factor_panel(a, k0, kb, &w);
  }
  qp_tiled_work_close(&w);
  return err;
}

qp_err qp_tiled_norm1(const qp_matrix *a, double *out) {
  QP_CHECK(a->grid, QP_ERR_INTERNAL, "tiled norm1 of '%s': not block-cyclic", a->name);
  const qp_grid *g = a->grid;
  const int64_t nb = g->block;
  const qp_tiled_sizes sizes = {.stage = a->local_rows * nb};
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(a, &sizes, &w));
  /* One sum per global column (O(n) scratch, as pdlange's), completed over the ranks. */
  double *sums = calloc((size_t)(a->cols > 0 ? a->cols : 1), sizeof *sums);
  qp_err err = sums ? QP_OK
                    : qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                   "norm1 of '%s': no memory for %lld column sums", a->name,
                                   (long long)a->cols);
  for (int64_t lj = 0; lj < a->local_cols && err == QP_OK; lj += nb) {
    const int64_t jb = a->local_cols - lj < nb ? a->local_cols - lj : nb;
    err = qp_linalg_download(a, 0, lj, a->local_rows, jb, w.stage,
                             a->local_rows > 0 ? a->local_rows : 1);
    for (int64_t j = 0; j < jb && err == QP_OK; ++j) {
      double s = 0;
      for (int64_t i = 0; i < a->local_rows; ++i) s += fabs(w.stage[i + j * a->local_rows]);
      sums[qp_bc_global_index(lj + j, nb, g->mycol, g->npcol)] = s;
    }
  }
  err = qp_comm_agree(err);
  if (err == QP_OK) err = qp_comm_sum(sums, a->cols);
  if (err == QP_OK) {
    double worst = 0;
    for (int64_t j = 0; j < a->cols; ++j) {
      if (isnan(sums[j])) {
        worst = NAN;
        break;
      }
      if (sums[j] > worst) worst = sums[j];
    }
    *out = worst;
  }
  free(sums);
  qp_tiled_work_close(&w);
  return err;
}

/* The estimator's products: x (replicated) into a distributed n x 1 vector, two tiled solves
 * with the factors, back whole on every rank. */
typedef struct qp_tiled_inverse {
  const qp_matrix *l;
  qp_factor_kind kind;
  qp_matrix v;
  double *mine; /* this rank's entries of v, packed */
} qp_tiled_inverse;

static qp_err qp_tiled_apply_inverse(void *context, int kase, double *x) {
  qp_tiled_inverse *t = context;
  qp_matrix *v = &t->v;
  const qp_grid *g = v->grid;
  for (int64_t li = 0; li < v->local_rows; ++li)
    t->mine[li] = x[qp_bc_global_index(li, g->block, g->myrow, g->nprow)];
  qp_err err = qp_linalg_upload(t->mine, v->local_rows > 0 ? v->local_rows : 1, v, 0, 0,
                                v->local_rows, v->local_cols);
  QP_CALL(qp_comm_agree(err));
  qp_triangular_solve solves[2];
  qp_condition_solves(t->kind, kase, solves);
  for (int i = 0; i < 2; ++i) {
    const qp_tiled_triangle triangle = solves[i].upper  ? QP_TILED_UPPER
                                       : solves[i].unit ? QP_TILED_UNIT_LOWER
                                                        : QP_TILED_LOWER;
    QP_CALL(qp_tiled_trsm_triangle(QP_LEFT, solves[i].transpose ? QP_TRANS : QP_NOTRANS, 1.0,
                                   triangle, t->l, v));
  }
  const qp_tiled_sizes sizes = {.window = v->rows};
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(v, &sizes, &w));
  err = qp_tiled_gather(&w, QP_OK, v, 0, 0, v->rows, 1);
  for (int64_t i = 0; i < v->rows && err == QP_OK; ++i) x[i] = w.window[i];
  qp_tiled_work_close(&w);
  return err;
}

static qp_err qp_tiled_condition(const qp_matrix *l, qp_factor_kind kind, double anorm,
                                 double *rcond) {
  QP_CHECK(l->grid && l->rows == l->cols, QP_ERR_INTERNAL,
           "tiled condition estimate of '%s': not a square block-cyclic matrix", l->name);
  qp_tiled_inverse t = {.l = l, .kind = kind};
  /* The vector in the held block, after what the solves lay out there; else its own. */
  const qp_grid *g = l->grid;
  const qp_tiled_sizes solve = qp_tiled_triangular_sizes(l->rows, 1, g->block, g->nprow,
                                                         g->npcol, g->myrow, g->mycol);
  const int64_t mine = qp_bc_local_count(l->rows, g->block, g->myrow, g->nprow);
  double *held = qp_tiled_held_vector(mine, qp_tiled_local_doubles(&solve));
  QP_CALL(qp_comm_agree(held ? qp_matrix_view(l->ops, QP_TERM_TILED_VECTOR, held, l->rows, 1, 0,
                                              &t.v)
                             : qp_matrix_create(l->ops, QP_TERM_TILED_VECTOR,
                                                QP_TERM_TRANSIENT, l->rows, 1, &t.v)));
  t.mine = malloc((size_t)(t.v.local_rows > 0 ? t.v.local_rows : 1) * sizeof *t.mine);
  qp_err err = t.mine ? QP_OK
                      : qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                                     "condition estimate of '%s': no memory for a vector",
                                     l->name);
  err = qp_comm_agree(err);
  if (err == QP_OK)
    err = qp_condition_estimate(l->rows, anorm, qp_tiled_apply_inverse, &t, l->name, rcond);
  free(t.mine);
  qp_matrix_destroy(&t.v);
  return err;
}

qp_err qp_tiled_pocon(const qp_matrix *l, double anorm, double *rcond) {
  return qp_tiled_condition(l, QP_FACTOR_CHOLESKY, anorm, rcond);
}

qp_err qp_tiled_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  return qp_tiled_condition(lu, QP_FACTOR_LU, anorm, rcond);
}
