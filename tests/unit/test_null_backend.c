/* test_null_backend: adding a backend is one file plus one row (docs/architecture.md, "How to
 * add a backend"): the test backend "null" (tests/support/null_backend.c) is unknown until its
 * row is registered, then qp_linalg_backend starts it by name, a matrix of it is created in its
 * space, and its operations are refused with QP_ERR_UNSUPPORTED, both its own (potrf, gemm) and
 * those its table leaves out (potri). */
#include "backends.h"
#include "budget.h"
#include "matrix.h"
#include "null_backend.h"
#include "test_util.h"

int main(void) {
  const qp_linalg_ops *ops = NULL;
  EXPECT_ERROR(qp_linalg_backend("null", &ops), QP_ERR_INPUT, "unknown backend 'null'");
  TEST_OK(qp_backends_add(qp_null_backend_row()));
  EXPECT_ERROR(qp_backends_add(qp_null_backend_row()), QP_ERR_INTERNAL, "has a row already");
  const qp_backend *row = qp_backend_find("null");
  TEST_ASSERT(row && row->test_only && !row->configurable, "null's row");
  TEST_OK(qp_linalg_backend("null", &ops));
  TEST_ASSERT(ops && ops == qp_linalg_host_ops(ops) && !qp_linalg_on_device(ops), "null's table");
  qp_matrix a, c;
  TEST_OK(qp_matrix_create(ops, "null a", QP_TERM_TRANSIENT, 4, 4, &a));
  TEST_OK(qp_matrix_create(ops, "null c", QP_TERM_TRANSIENT, 4, 4, &c));
  EXPECT_ERROR(qp_linalg_potrf(&a), QP_ERR_UNSUPPORTED, "backend 'null' does no potrf");
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &a, 0.0, &c), QP_ERR_UNSUPPORTED,
               "does no gemm");
  EXPECT_ERROR(qp_linalg_potri(&a), QP_ERR_UNSUPPORTED, "backend 'null' has no potri");
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&c);
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "blocks left");
  return TEST_RETURN();
}
