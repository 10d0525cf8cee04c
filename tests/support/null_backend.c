/* null_backend.c: the backend "null" (null_backend.h): a table whose operations refuse, and
 * its row. A real backend fills the same table with its library's calls (linalg/backends/cpu.c). */
#include "null_backend.h"

#include "matrix.h"

/* Every operation the stages call on a matrix of their own refuses; what the table leaves NULL
 * (potri, trace_product, ...) the dispatch of matrix.h refuses with the same status. */
static qp_err qp_null_refuse(const char *op) {
  QP_FAIL(QP_ERR_UNSUPPORTED, "backend 'null' does no %s (a test backend)", op);
}
static qp_err qp_null_potrf(qp_matrix *a) { (void)a; return qp_null_refuse("potrf"); }
static qp_err qp_null_trtri(qp_matrix *l) { (void)l; return qp_null_refuse("trtri"); }
static qp_err qp_null_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                           qp_matrix *b) {
  (void)side, (void)trans, (void)alpha, (void)l, (void)b;
  return qp_null_refuse("trmm");
}
static qp_err qp_null_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                           qp_matrix *b) {
  (void)side, (void)trans, (void)alpha, (void)l, (void)b;
  return qp_null_refuse("trsm");
}
static qp_err qp_null_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                           const qp_matrix *b, double beta, qp_matrix *c) {
  (void)ta, (void)tb, (void)alpha, (void)a, (void)b, (void)beta, (void)c;
  return qp_null_refuse("gemm");
}
static qp_err qp_null_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                           qp_matrix *c) {
  (void)trans, (void)alpha, (void)a, (void)beta, (void)c;
  return qp_null_refuse("syrk");
}

static const qp_linalg_ops qp_null_ops_table = {
    .name = "null",
    .space = QP_SPACE_HOST,
    .potrf = qp_null_potrf,
    .trtri = qp_null_trtri,
    .trmm = qp_null_trmm,
    .trsm = qp_null_trsm,
    .gemm = qp_null_gemm,
    .syrk = qp_null_syrk,
};

static qp_err qp_null_start(const qp_linalg_ops **ops) {
  *ops = &qp_null_ops_table;
  return QP_OK;
}

static const qp_backend qp_null_row = {
    .name = "null", .space = QP_SPACE_HOST, .test_only = 1, .start = qp_null_start};

const qp_backend *qp_null_backend_row(void) { return &qp_null_row; }
