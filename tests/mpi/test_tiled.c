/* test_tiled.c: the tiled algorithms (linalg/tiled/tiled.h: block-cyclic BLAS and Cholesky over a
 * local table and MPI, the way to a GPU per rank without cuSOLVERMp) against ScaLAPACK (the
 * dist backend) on the same matrices. Each runs twice: on dist's matrices (local table cpu)
 * and on hostdev-dist's (local table hostdev: every local step on the emulated device, whose
 * memory faults outside its operations). Checked: potrf, trsm and trmm on both sides with and
 * without transpose, gemm in its four forms, syrk, norm1 and pocon to 1e-12 (pocon 1e-10);
 * the strict upper triangle of L is NaN in the tiled operands, so a read of it shows; a matrix
 * that is not positive definite failing on every rank with the block named; a NaN reaching
 * norm1; a local step one rank's device refuses failing every rank without a hang; the
 * workspace terms of the exact sizes qp_tiled_*_sizes give; nothing left tracked.
 * Run under mpiexec with -n 1, 2, 4; args: grid rows, cols, block size. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"
#include "hostdev.h"
#include "matrix.h"
#include "mpi_check.h"
#include "test_util.h"
#include "tiled.h"
#include "tiled_check.h"

static void check_table(const qp_linalg_ops *ops, const qp_grid *g) {
  const qp_linalg_ops *dist = qp_linalg_dist_ops();
  const qp_space local_space = qp_linalg_local_ops(ops)->space;
  const int64_t n = 45, k = 19, m = 21, p = 37; /* not multiples of the block: ragged edges */
  const int nb = g->block, P = g->nprow, Q = g->npcol, r = g->myrow, c = g->mycol;
  const char *table = ops->name;
  qp_matrix ref, got, l_ref, l_got;

  /* potrf */
  make(dist, "A", SPD, 0, n, n, &ref);
  make(ops, "A", SPD, 0, n, n, &got);
  TEST_OK(qp_linalg_potrf(&ref));
  EXPECT_WORKSPACE(qp_tiled_potrf(&got), qp_tiled_potrf_sizes(n, nb, P, Q, r, c), local_space,
                   "potrf");
  TEST_WITHIN(compare(&ref, &got, 1), 1e-13, "%s: tiled potrf differs from pdpotrf", table);
  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);

  /* trsm and trmm, both sides, both transposes, alpha 0.5 */
  make(dist, "L", LOWER, 0, n, n, &l_ref);
  make(ops, "L", LOWER, 1, n, n, &l_got);
  for (int solve = 0; solve < 2; ++solve)
    for (int side = 0; side < 2; ++side)
      for (int trans = 0; trans < 2; ++trans) {
        const int64_t rows = side == QP_LEFT ? n : k, cols = side == QP_LEFT ? k : n;
        make(dist, "B", GENERAL, 0, rows, cols, &ref);
        make(ops, "B", GENERAL, 0, rows, cols, &got);
        if (solve) {
          TEST_OK(qp_linalg_trsm((qp_side)side, (qp_trans)trans, 0.5, &l_ref, &ref));
          EXPECT_WORKSPACE(qp_tiled_trsm((qp_side)side, (qp_trans)trans, 0.5, &l_got, &got),
                           qp_tiled_triangular_sizes(rows, cols, nb, P, Q, r, c),
                           local_space, "trsm");
        } else {
          TEST_OK(qp_linalg_trmm((qp_side)side, (qp_trans)trans, 0.5, &l_ref, &ref));
          TEST_OK(qp_tiled_trmm((qp_side)side, (qp_trans)trans, 0.5, &l_got, &got));
        }
        TEST_WITHIN(compare(&ref, &got, 0), 1e-12, "%s: tiled %s side %s%s differs", table,
                    solve ? "trsm" : "trmm", side == QP_LEFT ? "left" : "right",
                    trans ? " transposed" : "");
        qp_matrix_destroy(&ref);
        qp_matrix_destroy(&got);
      }

  /* pocon of L L^T, and norm1 */
  double anorm_ref = 0, anorm_got = 0, rcond_ref = 0, rcond_got = 0;
  TEST_OK(qp_linalg_norm1(&l_ref, &anorm_ref));
  TEST_OK(qp_tiled_norm1(&l_ref, &anorm_got));
  TEST_WITHIN(qp_test_rel_diff(anorm_ref, anorm_got), 1e-14, "%s: tiled norm1", table);
  { /* LAPACK's dpocon on the whole L, replicated: the estimator the tiled pocon runs (pdpocon's
     * own estimate differs from it by tens of percent on this L) */
    qp_matrix work, whole;
    const double *all = NULL;
    TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "L whole", QP_TERM_TRANSIENT, n, n, &work));
    TEST_OK(qp_linalg_replicate(&l_ref, &work, &all));
    TEST_OK(qp_matrix_view(qp_linalg_cpu_ops(), "L whole", (double *)all, n, n, n, &whole));
    TEST_OK(qp_linalg_pocon(&whole, 3.0, &rcond_ref));
    qp_matrix_destroy(&work);
  }
  TEST_OK(qp_tiled_pocon(&l_got, 3.0, &rcond_got));
  TEST_WITHIN(qp_test_rel_diff(rcond_ref, rcond_got), 1e-10, "%s: tiled pocon %.17g, dpocon %.17g",
              table, rcond_got, rcond_ref);
  double with_nan = 0;
  TEST_OK(qp_tiled_norm1(&l_got, &with_nan)); /* its upper triangle is NaN */
  TEST_ASSERT(isnan(with_nan), "%s: norm1 of a matrix with NaN entries gave %g", table, with_nan);
  qp_matrix_destroy(&l_ref);
  qp_matrix_destroy(&l_got);

  /* gemm in its four forms (C m x p, contraction n: two panels of 4 blocks at block 8), and
   * syrk both ways */
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      qp_matrix a_ref, a_got, b_ref, b_got;
      make(dist, "A", GENERAL, 0, ta ? n : m, ta ? m : n, &a_ref);
      make(ops, "A", GENERAL, 0, ta ? n : m, ta ? m : n, &a_got);
      make(dist, "B", GENERAL, 0, tb ? p : n, tb ? n : p, &b_ref);
      make(ops, "B", GENERAL, 0, tb ? p : n, tb ? n : p, &b_got);
      make(dist, "C", SPD, 0, m, p, &ref);
      make(ops, "C", SPD, 0, m, p, &got);
      TEST_OK(qp_linalg_gemm((qp_trans)ta, (qp_trans)tb, 1.5, &a_ref, &b_ref, 0.5, &ref));
      EXPECT_WORKSPACE(qp_tiled_gemm((qp_trans)ta, (qp_trans)tb, 1.5, &a_got, &b_got, 0.5, &got),
                       qp_tiled_gemm_sizes(m, p, n, nb, P, Q, r, c), local_space, "gemm");
      TEST_WITHIN(compare(&ref, &got, 0), 1e-12, "%s: tiled gemm %c%c differs", table,
                  ta ? 'T' : 'N', tb ? 'T' : 'N');
      qp_matrix_destroy(&ref);
      qp_matrix_destroy(&got);
      if (ta == tb) {
        const int64_t order = m; /* syrk of A: op(A) op(A)^T, m x m */
        make(dist, "S", GENERAL, 0, order, order, &ref);
        make(ops, "S", GENERAL, 0, order, order, &got);
        TEST_OK(qp_linalg_syrk((qp_trans)ta, 1.0, &a_ref, 0.0, &ref));
        TEST_OK(qp_tiled_syrk((qp_trans)ta, 1.0, &a_got, 0.0, &got));
        TEST_WITHIN(compare(&ref, &got, 0), 1e-12, "%s: tiled syrk %c differs", table,
                    ta ? 'T' : 'N');
        qp_matrix_destroy(&ref);
        qp_matrix_destroy(&got);
      }
      qp_matrix_destroy(&a_ref);
      qp_matrix_destroy(&a_got);
      qp_matrix_destroy(&b_ref);
      qp_matrix_destroy(&b_got);
    }

  /* Not positive definite at row 20 (1-based 21): every rank fails, naming the block. */
  make(ops, "A", SPD, 0, n, n, &got);
  {
    const int64_t gi = 20;
    const int64_t li = qp_matrix_local_row(&got, gi), lj = qp_matrix_local_col(&got, gi);
    if (li >= 0 && lj >= 0) {
      const double minus = -1.0;
      TEST_OK(qp_linalg_upload(&minus, 1, &got, li, lj, 1, 1));
    }
    char want[64];
    snprintf(want, sizeof want, "diagonal block from row %lld", (long long)(gi / nb) * nb + 1);
    EXPECT_ERROR(qp_tiled_potrf(&got), QP_ERR_NOT_POSDEF, "not positive definite", want);
  }
  qp_matrix_destroy(&got);

  /* A local step that one rank refuses (its C one entry past C's block on the emulated
   * device: a GPU's illegal address): every rank returns that rank's error, none waits in a
   * gather. */
  if (qp_linalg_on_device(ops)) {
    qp_matrix a, stray;
    make(ops, "A", GENERAL, 0, n, m, &a);
    make(ops, "C", GENERAL, 0, m, m, &got);
    stray = got;
    stray.owns = 0;
    double holder = qp_matrix_local_size(&got) > 0 ? qp_comm_rank() : -1.0;
    qp_comm_max(&holder, 1); /* the last rank that holds part of C */
    const int last = (int)holder;
    if (qp_comm_rank() == last) stray.data += 1;
    const qp_err err = qp_tiled_gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &a, 0.0, &stray);
    char want[32];
    snprintf(want, sizeof want, "(rank %d)", last);
    TEST_ASSERT(err == QP_ERR_INTERNAL && strstr(qp_error_message(), "live hostdev block") &&
                    (qp_comm_rank() == last || strstr(qp_error_message(), want)),
                "%s: a refused local step on rank %d: got %s: %s", table, last, qp_err_name(err),
                qp_error_message());
    if (qp_comm_rank() == 0) printf("refused on every rank: %s\n", qp_error_message());
    qp_error_clear();
    qp_matrix_destroy(&a);
    qp_matrix_destroy(&got);
  }
}

int main(int argc, char **argv) {
  qp_grid grid;
  qp_mpi_start(&argc, &argv, &grid);
  const qp_linalg_ops *dev = qp_mpi_hostdev_dist();
  check_table(qp_linalg_dist_ops(), &grid);
  check_table(dev, &grid);
  qp_linalg_release_workspaces(qp_linalg_hostdev_ops()); /* its potrf's, held as cuSOLVER's */
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0 && qp_budget_current(QP_SPACE_HOST) == 0,
              "%zu device and %zu host bytes still tracked", qp_budget_current(QP_SPACE_DEVICE),
              qp_budget_current(QP_SPACE_HOST));
  return qp_mpi_finish(&grid, "tiled algorithms", "equal to ScaLAPACK's on cpu and hostdev");
}
