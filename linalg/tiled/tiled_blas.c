/* tiled_blas.c: gemm, syrk, trsm and trmm over a local table and MPI (tiled.h). */
#include <math.h>

#include "comm.h"
#include "tiled_work.h"

/* Every operand on one grid: the tiled algorithms index every local part with it. */
static qp_err qp_tiled_same_grid(const qp_matrix *a, const qp_matrix *b, const qp_matrix *c) {
  QP_CHECK(a->grid && a->grid == b->grid && b->grid == c->grid, QP_ERR_INTERNAL,
           "tiled operation on '%s', '%s', '%s': every operand must be block-cyclic on one grid",
           a->name, b->name, c->name);
  return QP_OK;
}

qp_err qp_tiled_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                     const qp_matrix *b, double beta, qp_matrix *c) {
  QP_CALL(qp_tiled_same_grid(a, b, c));
  const qp_grid *g = c->grid;
  const int64_t m = c->rows, n = c->cols, k = ta ? a->rows : a->cols;
  QP_CHECK(k > 0, QP_ERR_UNSUPPORTED, "tiled gemm into '%s': an empty contraction", c->name);
  const qp_tiled_sizes sizes =
      qp_tiled_gemm_sizes(m, n, k, g->block, g->nprow, g->npcol, g->myrow, g->mycol);
  qp_tiled_work w;
  QP_CALL(qp_tiled_work_open(c, &sizes, &w));
  const qp_tiled_targets my_rows = qp_tiled_rows(c, 0, c->local_rows, 0);
  const qp_tiled_targets my_cols = qp_tiled_cols(c, 0, c->local_cols, 0);
  const int64_t width = (int64_t)g->block * QP_TILED_GEMM_BLOCKS;
  qp_err err = QP_OK;
  for (int64_t k0 = 0; k0 < k && err == QP_OK; k0 += width) {
    const int64_t kw = k - k0 < width ? k - k0 : width;
    qp_matrix pa, pb, cl;
    /* op(A)'s columns k0.. (A's rows when transposed), this rank's rows of C of them. */
    err = qp_tiled_gather(&w, err, a, ta ? k0 : 0, ta ? 0 : k0, ta ? kw : m, ta ? m : kw);
    if (err != QP_OK) break;
    err = qp_tiled_pack(&w, ta ? kw : m, !ta, kw, &my_rows, 0, w.panel_a, "op(A) panel", &pa);
    /* op(B)'s rows k0.., this rank's columns of C of them. */
    err = qp_tiled_gather(&w, err, b, tb ? 0 : k0, tb ? k0 : 0, tb ? n : kw, tb ? kw : n);
    if (err != QP_OK) break;
    err = qp_tiled_pack(&w, tb ? n : kw, tb, kw, &my_cols, 1, w.panel_b, "op(B) panel", &pb);
    if (err == QP_OK)
      err = qp_tiled_local_view(c, 0, 0, c->local_rows, c->local_cols, c->name, &cl);
    if (err == QP_OK && !qp_tiled_empty(&cl))
      err = w.local->gemm(QP_NOTRANS, QP_NOTRANS, alpha, &pa, &pb, k0 == 0 ? beta : 1.0, &cl);
    err = qp_comm_agree(err);
  }
  qp_tiled_work_close(&w);
  return err;
}

qp_err qp_tiled_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                     qp_matrix *c) {
  return qp_tiled_gemm(trans, trans ? QP_NOTRANS : QP_TRANS, alpha, a, a, beta, c);
}

/* ---- triangular solves and products, by block steps ----
 *
 * With L's blocks k (rows and columns k nb ..), B's block k is its block row (side left) or
 * block column (right). Each step k does a diagonal part, B_k <- alpha op(L_kk)^-1 B_k (or the
 * product), on the ranks that hold B_k, and an update of B's other blocks that op(L) couples to
 * B_k: those after k (left no-transpose, right transpose: L's column panel below L_kk) or before
 * k (left transpose, right no-transpose: L's row panel left of L_kk). A solve updates with the
 * new B_k (coefficient -1/alpha: the targets are not yet scaled by alpha, their own diagonal
 * step does that) and so walks towards its targets; a product updates with the old B_k
 * (coefficient alpha) first and walks away from them, so that every B_k is read before it is
 * changed. */
typedef struct qp_tiled_sweep {
  int solve, left, after;
  int column_panel; /* 1: the coupling is a column panel of the triangle (below or above T_kk) */
  qp_tiled_triangle triangle;
  qp_trans trans;
  double alpha;
  const qp_matrix *l;
  qp_matrix *b;
  qp_tiled_work w;
} qp_tiled_sweep;

/* The gathered diagonal block (w->window, kb x kb) made the lower, non-unit triangle the local
 * table's trsm and trmm read, with the transposition that keeps op(T_kk): a unit diagonal
 * written as ones (exact: a solve divides by 1.0), an upper block transposed (op(U) =
 * op'(U^T) with the other transposition). The entries of the other triangle are not read. */
static qp_trans qp_tiled_diagonal_as_lower(qp_tiled_sweep *s, int64_t kb) {
  double *t = s->w.window;
  if (s->triangle == QP_TILED_UNIT_LOWER)
    for (int64_t i = 0; i < kb; ++i) t[i + i * kb] = 1.0;
  if (s->triangle != QP_TILED_UPPER) return s->trans;
  for (int64_t j = 0; j < kb; ++j)
    for (int64_t i = j + 1; i < kb; ++i) {
      const double v = t[i + j * kb];
      t[i + j * kb] = t[j + i * kb];
      t[j + i * kb] = v;
    }
  return s->trans == QP_TRANS ? QP_NOTRANS : QP_TRANS;
}

/* B_k <- alpha op(T_kk)^(-1) B_k on the ranks that hold part of B_k (this rank's part). */
static qp_err qp_tiled_diagonal_local(qp_tiled_sweep *s, int64_t k0, int64_t kb) {
  const qp_grid *g = s->b->grid;
  int64_t l0, l1;
  if (s->left)
    qp_tiled_local_range(k0, k0 + kb, g->block, g->myrow, g->nprow, &l0, &l1);
  else
    qp_tiled_local_range(k0, k0 + kb, g->block, g->mycol, g->npcol, &l0, &l1);
  const int64_t other = s->left ? s->b->local_cols : s->b->local_rows;
  if (l1 == l0 || other == 0) return QP_OK;
  qp_matrix tile, bk;
  const qp_trans trans = qp_tiled_diagonal_as_lower(s, kb);
  QP_CALL(qp_tiled_upload_tile(&s->w, kb, "diagonal block of L", &tile));
  QP_CALL(s->left ? qp_tiled_local_view(s->b, l0, 0, l1 - l0, other, s->b->name, &bk)
                  : qp_tiled_local_view(s->b, 0, l0, other, l1 - l0, s->b->name, &bk));
  const qp_side side = s->left ? QP_LEFT : QP_RIGHT;
  return s->solve ? s->w.local->trsm(side, trans, s->alpha, &tile, &bk)
                  : s->w.local->trmm(side, trans, s->alpha, &tile, &bk);
}

/* The diagonal part of step k. Collective; every error returned is agreed on (as from the
 * update below: the loop does not agree again, which would prefix the rank twice). */
static qp_err qp_tiled_diagonal(qp_tiled_sweep *s, int64_t k0, int64_t kb) {
  QP_CALL(qp_tiled_gather(&s->w, QP_OK, s->l, k0, k0, kb, kb));
  return qp_comm_agree(qp_tiled_diagonal_local(s, k0, kb));
}

/* This rank's part of the update: its local rows (left) or columns (right) l0 .. l1 of B. */
static qp_err qp_tiled_update_local(qp_tiled_sweep *s, int64_t l0, int64_t l1,
                                    const qp_matrix *coupling, const qp_matrix *bk) {
  qp_matrix *b = s->b, target;
  QP_CALL(s->left ? qp_tiled_local_view(b, l0, 0, l1 - l0, b->local_cols, b->name, &target)
                  : qp_tiled_local_view(b, 0, l0, b->local_rows, l1 - l0, b->name, &target));
  if (qp_tiled_empty(&target)) return QP_OK;
  const double coef = s->solve ? -1.0 / s->alpha : s->alpha;
  return s->left ? s->w.local->gemm(QP_NOTRANS, QP_NOTRANS, coef, coupling, bk, 1.0, &target)
                 : s->w.local->gemm(QP_NOTRANS, QP_NOTRANS, coef, bk, coupling, 1.0, &target);
}

/* B's blocks before or after k <- themselves + coef op(L)'s coupling times B_k. Collective;
 * every error returned is agreed on. */
static qp_err qp_tiled_update(qp_tiled_sweep *s, int64_t k0, int64_t kb) {
  const qp_matrix *l = s->l;
  qp_matrix *b = s->b;
  const int64_t n = l->rows;
  /* The targets' global range, and T's window that couples them to B_k: a column panel (below
   * L_kk for targets after, above U_kk for targets before) or a row panel (left of L_kk,
   * right of U_kk), targets along the window's rows or columns. */
  const int64_t t0 = s->after ? k0 + kb : 0, t1 = s->after ? n : k0;
  if (t1 <= t0) return QP_OK; /* no block on that side: the same on every rank */
  const qp_grid *g = b->grid;
  int64_t l0, l1;
  if (s->left)
    qp_tiled_local_range(t0, t1, g->block, g->myrow, g->nprow, &l0, &l1);
  else
    qp_tiled_local_range(t0, t1, g->block, g->mycol, g->npcol, &l0, &l1);
  const qp_tiled_targets targets =
      s->left ? qp_tiled_rows(b, l0, l1, t0) : qp_tiled_cols(b, l0, l1, t0);
  QP_CALL(s->column_panel ? qp_tiled_gather(&s->w, QP_OK, l, t0, k0, t1 - t0, kb)
                          : qp_tiled_gather(&s->w, QP_OK, l, k0, t0, kb, t1 - t0));
  qp_matrix coupling, bk;
  qp_err err;
  /* Left: coupling is targets x kb (panel_a), B_k kb x local columns (panel_b); right: B_k is
   * local rows x kb (panel_a), coupling kb x targets (panel_b). */
  err = qp_tiled_pack(&s->w, s->column_panel ? t1 - t0 : kb, s->column_panel, kb, &targets,
                      !s->left,
                      s->left ? s->w.panel_a : s->w.panel_b, "coupling of L", &coupling);
  if (s->left) {
    QP_CALL(qp_tiled_gather(&s->w, err, b, k0, 0, kb, b->cols));
    const qp_tiled_targets cols = qp_tiled_cols(b, 0, b->local_cols, 0);
    err = qp_tiled_pack(&s->w, kb, 0, kb, &cols, 1, s->w.panel_b, "block row of B", &bk);
  } else {
    QP_CALL(qp_tiled_gather(&s->w, err, b, 0, k0, b->rows, kb));
    const qp_tiled_targets rows = qp_tiled_rows(b, 0, b->local_rows, 0);
    err = qp_tiled_pack(&s->w, b->rows, 1, kb, &rows, 0, s->w.panel_a, "block column of B", &bk);
  }
  if (err != QP_OK) return qp_comm_agree(err);
  return qp_comm_agree(qp_tiled_update_local(s, l0, l1, &coupling, &bk));
}

static qp_err qp_tiled_triangular(int solve, qp_side side, qp_trans trans, double alpha,
                                  qp_tiled_triangle triangle, const qp_matrix *l, qp_matrix *b) {
  QP_CALL(qp_tiled_same_grid(l, b, b));
  QP_CHECK(alpha != 0.0 && isfinite(alpha), QP_ERR_UNSUPPORTED,
           "tiled %s with '%s': alpha %g (only a finite, non-zero alpha)", solve ? "trsm" : "trmm",
           b->name, alpha);
  const qp_grid *g = b->grid;
  /* Left no-transpose with a lower triangle couples B_k to the blocks after it; an upper
   * triangle, or either transposition, turns the direction round. */
  const int lower = triangle != QP_TILED_UPPER;
  const int after = ((side == QP_LEFT) != (trans == QP_TRANS)) == lower;
  qp_tiled_sweep s = {.solve = solve,
                      .left = side == QP_LEFT,
                      .after = after,
                      .column_panel = after == lower,
                      .triangle = triangle,
                      .trans = trans,
                      .alpha = alpha,
                      .l = l,
                      .b = b};
  const qp_tiled_sizes sizes = qp_tiled_triangular_sizes(b->rows, b->cols, g->block,
                                                         g->nprow, g->npcol, g->myrow, g->mycol);
  QP_CALL(qp_tiled_work_open(b, &sizes, &s.w));
  const int64_t n = l->rows, nb = g->block, blocks = (n + nb - 1) / nb;
  const int ascending = solve ? s.after : !s.after;
  qp_err err = QP_OK;
  for (int64_t step = 0; step < blocks && err == QP_OK; ++step) {
    const int64_t k = ascending ? step : blocks - 1 - step;
    const int64_t k0 = k * nb, kb = n - k0 < nb ? n - k0 : nb;
    err = solve ? qp_tiled_diagonal(&s, k0, kb) : qp_tiled_update(&s, k0, kb);
    if (err == QP_OK) err = solve ? qp_tiled_update(&s, k0, kb) : qp_tiled_diagonal(&s, k0, kb);
  }
  qp_tiled_work_close(&s.w);
  return err;
}

qp_err qp_tiled_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                     qp_matrix *b) {
  return qp_tiled_triangular(1, side, trans, alpha, QP_TILED_LOWER, l, b);
}

qp_err qp_tiled_trsm_triangle(qp_side side, qp_trans trans, double alpha,
                              qp_tiled_triangle triangle, const qp_matrix *t, qp_matrix *b) {
  return qp_tiled_triangular(1, side, trans, alpha, triangle, t, b);
}

qp_err qp_tiled_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                     qp_matrix *b) {
  return qp_tiled_triangular(0, side, trans, alpha, QP_TILED_LOWER, l, b);
}
