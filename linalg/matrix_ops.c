/* matrix_ops.c: the operations of matrix.h, each checking shapes before its matrix's table
 * runs it, and the flop counts they add to the stage. */
#include <string.h>

#include "matrix.h"
#include "matrix_check.h"

qp_err qp_linalg_potrf(qp_matrix *a) {
  QP_NEED_OP(a, potrf);
  QP_CHECK(a->rows == a->cols, QP_ERR_INTERNAL, "potrf of non-square '%s'", a->name);
  QP_CALL(a->ops->potrf(a));
  qp_stage_add_flops(qp_flops_potrf(a->rows));
  return QP_OK;
}

qp_err qp_linalg_potri(qp_matrix *l) {
  QP_NEED_OP(l, potri);
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "potri of non-square '%s'", l->name);
  QP_CALL(l->ops->potri(l));
  if (l->space == QP_SPACE_HOST) qp_matrix_symmetrize_lower(l); /* device backends mirror */
  qp_stage_add_flops(2.0 * qp_flops_trtri(l->rows));
  return QP_OK;
}

qp_err qp_linalg_trtri(qp_matrix *l) {
  QP_NEED_OP(l, trtri);
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "trtri of non-square '%s'", l->name);
  QP_CALL(l->ops->trtri(l));
  qp_stage_add_flops(qp_flops_trtri(l->rows));
  return QP_OK;
}

static qp_err qp_check_triangular_operand(qp_side side, const qp_matrix *l, const qp_matrix *b) {
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "triangular '%s' not square", l->name);
  int64_t need = side == QP_LEFT ? b->rows : b->cols;
  QP_CHECK(need == l->rows, QP_ERR_INTERNAL, "'%s' (%lld) does not match '%s' (%lldx%lld)", l->name,
           (long long)l->rows, b->name, (long long)b->rows, (long long)b->cols);
  return QP_OK;
}

qp_err qp_linalg_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                      qp_matrix *b) {
  QP_NEED_OP(l, trmm);
  QP_CALL(qp_check_triangular_operand(side, l, b));
  QP_CALL(l->ops->trmm(side, trans, alpha, l, b));
  qp_stage_add_flops(qp_flops_trmm(side, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                      qp_matrix *b) {
  QP_NEED_OP(l, trsm);
  QP_CALL(qp_check_triangular_operand(side, l, b));
  QP_CALL(l->ops->trsm(side, trans, alpha, l, b));
  qp_stage_add_flops(qp_flops_trmm(side, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                      const qp_matrix *b, double beta, qp_matrix *c) {
  QP_NEED_OP(c, gemm);
  int64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
  int64_t kb = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;
  QP_CHECK(k == kb && m == c->rows && n == c->cols, QP_ERR_INTERNAL,
           "gemm shapes: '%s' x '%s' -> '%s' do not agree", a->name, b->name, c->name);
  QP_CALL(c->ops->gemm(ta, tb, alpha, a, b, beta, c));
  qp_stage_add_flops(qp_flops_gemm(m, n, k));
  return QP_OK;
}

/* A view of the window (i.., j..) of rows x cols of m, held whole by this process. */
static qp_err qp_window_view(const qp_matrix *m, int64_t i, int64_t j, int64_t rows, int64_t cols,
                             qp_matrix *view) {
  QP_CALL(qp_matrix_view(m->ops, m->name, m->data + i + j * m->ld, rows, cols, m->ld, view));
  return QP_OK;
}

qp_err qp_linalg_gemm_sub(qp_trans ta, qp_trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                          const qp_matrix *a, int64_t ai, int64_t aj, const qp_matrix *b,
                          int64_t bi, int64_t bj, double beta, qp_matrix *c, int64_t ci,
                          int64_t cj) {
  const int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  QP_CHECK(m >= 0 && n >= 0 && k >= 0 && ai >= 0 && aj >= 0 && bi >= 0 && bj >= 0 && ci >= 0 &&
               cj >= 0 && ai + ar <= a->rows && aj + ac <= a->cols && bi + br <= b->rows &&
               bj + bc <= b->cols && ci + m <= c->rows && cj + n <= c->cols,
           QP_ERR_INTERNAL, "gemm of windows: '%s' x '%s' -> '%s' out of bounds", a->name, b->name,
           c->name);
  if (m == 0 || n == 0) return QP_OK;
  if (c->ops && c->ops->gemm_sub) {
    QP_CALL(c->ops->gemm_sub(ta, tb, m, n, k, alpha, a, ai, aj, b, bi, bj, beta, c, ci, cj));
    qp_stage_add_flops(qp_flops_gemm(m, n, k));
    return QP_OK;
  }
  QP_CHECK(!a->grid && !b->grid && !c->grid, QP_ERR_UNSUPPORTED,
           "backend '%s' has no gemm of windows of distributed matrices",
           c->ops ? c->ops->name : "(none)");
  qp_matrix av, bv, cv;
  QP_CALL(qp_window_view(a, ai, aj, ar, ac, &av));
  QP_CALL(qp_window_view(b, bi, bj, br, bc, &bv));
  QP_CALL(qp_window_view(c, ci, cj, m, n, &cv));
  QP_CALL(qp_linalg_gemm(ta, tb, alpha, &av, &bv, beta, &cv));
  return QP_OK;
}

qp_err qp_linalg_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta, qp_matrix *c) {
  QP_NEED_OP(c, syrk);
  int64_t n = trans ? a->cols : a->rows, k = trans ? a->rows : a->cols;
  QP_CHECK(c->rows == n && c->cols == n, QP_ERR_INTERNAL, "syrk: '%s' is not %lldx%lld", c->name,
           (long long)n, (long long)n);
  QP_CALL(c->ops->syrk(trans, alpha, a, beta, c));
  qp_stage_add_flops(qp_flops_syrk(n, k));
  return QP_OK;
}

qp_err qp_linalg_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_NEED_OP(l, potrs);
  QP_CALL(qp_check_triangular_operand(QP_LEFT, l, b));
  QP_CALL(l->ops->potrs(l, b));
  qp_stage_add_flops(2.0 * qp_flops_trmm(QP_LEFT, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_getrf(qp_matrix *a, int *pivots) {
  QP_NEED_OP(a, getrf);
  QP_CHECK(a->rows == a->cols, QP_ERR_INTERNAL, "getrf of non-square '%s'", a->name);
  QP_CALL(a->ops->getrf(a, pivots));
  qp_stage_add_flops(2.0 * qp_flops_potrf(a->rows));
  return QP_OK;
}

int64_t qp_linalg_pivot_count(const qp_matrix *a) {
  return a->grid ? a->local_rows + a->grid->block : a->rows;
}

qp_err qp_linalg_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_NEED_OP(lu, getrs);
  QP_CALL(qp_check_triangular_operand(QP_LEFT, lu, b));
  QP_CALL(lu->ops->getrs(lu, pivots, b));
  qp_stage_add_flops(2.0 * qp_flops_trmm(QP_LEFT, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_clear_upper(qp_matrix *a) {
  QP_NEED_OP(a, clear_upper);
  QP_CHECK(a->rows == a->cols, QP_ERR_INTERNAL, "clear_upper of non-square '%s'", a->name);
  QP_CALL(a->ops->clear_upper(a));
  return QP_OK;
}

qp_err qp_linalg_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  QP_NEED_OP(a, scale);
  QP_CHECK((!rows || (rows->runs >= 0 && rows->runs <= QP_SCALE_RUNS_MAX)) &&
               (!cols || (cols->runs >= 0 && cols->runs <= QP_SCALE_RUNS_MAX)),
           QP_ERR_INTERNAL, "scale of '%s': more than %d runs", a->name, QP_SCALE_RUNS_MAX);
  if (!rows && !cols) return QP_OK;
  QP_CALL(a->ops->scale(a, rows, cols));
  return QP_OK;
}

qp_err qp_linalg_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_NEED_OP(b, transpose);
  QP_CHECK(a->rows == b->cols && a->cols == b->rows, QP_ERR_INTERNAL,
           "transpose of '%s' into '%s': shapes do not agree", a->name, b->name);
  QP_CALL(b->ops->transpose(a, b));
  return QP_OK;
}

qp_err qp_linalg_sum_partials(const qp_linalg_ops *ops, double *x, int64_t count) {
  if (ops && ops->sum_partials) QP_CALL(ops->sum_partials(x, count));
  return QP_OK;
}

qp_err qp_linalg_trace_product(const qp_matrix *a, const qp_matrix *b, double *out) {
  QP_NEED_OP(a, trace_product);
  QP_CHECK(a->rows == b->cols && a->cols == b->rows, QP_ERR_INTERNAL,
           "trace of '%s' x '%s': shapes do not agree", a->name, b->name);
  QP_CALL(a->ops->trace_product(a, b, out));
  qp_stage_add_flops(2.0 * (double)a->rows * (double)a->cols);
  return QP_OK;
}

qp_err qp_linalg_norm1(const qp_matrix *a, double *out) {
  QP_NEED_OP(a, norm1);
  QP_CALL(a->ops->norm1(a, out));
  return QP_OK;
}

qp_err qp_linalg_pocon(const qp_matrix *l, double anorm, double *rcond) {
  QP_NEED_OP(l, pocon);
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "pocon of non-square '%s'", l->name);
  QP_CALL(l->ops->pocon(l, anorm, rcond));
  return QP_OK;
}

qp_err qp_linalg_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  QP_NEED_OP(lu, gecon);
  QP_CHECK(lu->rows == lu->cols, QP_ERR_INTERNAL, "gecon of non-square '%s'", lu->name);
  QP_CALL(lu->ops->gecon(lu, anorm, rcond));
  return QP_OK;
}

double qp_flops_potrf(int64_t n) { return (double)n * (double)n * (double)n / 3.0; }
double qp_flops_trtri(int64_t n) { return (double)n * (double)n * (double)n / 3.0; }
double qp_flops_trmm(qp_side side, int64_t m, int64_t n) {
  return side == QP_LEFT ? (double)m * (double)m * (double)n : (double)m * (double)n * (double)n;
}
double qp_flops_gemm(int64_t m, int64_t n, int64_t k) {
  return 2.0 * (double)m * (double)n * (double)k;
}
double qp_flops_syrk(int64_t n, int64_t k) { return (double)n * (double)(n + 1) * (double)k; }
