/* test_tiled_move.c: the tiled trtri, copy_sub, transpose and clear_upper (linalg/tiled/tiled.h,
 * what a distributed device table needs beyond BLAS and Cholesky) against ScaLAPACK and dist
 * (pdtrtri, pdgemr2d, pdtran, each rank's own clearing) on the same matrices, on dist's
 * matrices (local table cpu) and on hostdev-dist's (local table hostdev). Checked: L^-1 to
 * 1e-12 with the strict upper part of L NaN on entry (never read) and exactly zero on return;
 * a zero on the diagonal failing every rank with its block named; copies with equal and with
 * different offsets, device to device and device to a host matrix (qp_linalg_align's case),
 * and the transpose, bitwise, with every entry outside the target untouched; the workspace
 * of the exact sizes the bound covers; a copy one rank's device refuses failing every rank
 * without a hang; the LU (getrf, getrs) against pdgetrf and A X = B (pdgemm) on every grid,
 * inside the held blocks; nothing left tracked. Run under mpiexec; args: grid rows, cols, block. */
#include <stdio.h>

#include "comm.h"
#include "hostdev.h"
#include "tiled_check.h"

/* B (rows x cols of `ops`) of GENERAL entries, its reference twin on dist. */
static void pair(const qp_linalg_ops *ops, const char *name, int64_t rows, int64_t cols,
                 qp_matrix *ref, qp_matrix *got) {
  make(qp_linalg_dist_ops(), name, GENERAL, 0, rows, cols, ref);
  make(ops, name, GENERAL, 0, rows, cols, got);
}

static void check_inverse(const qp_linalg_ops *ops, const qp_grid *g) {
  const int64_t n = 45;
  qp_matrix ref, got;
  make(qp_linalg_dist_ops(), "L", LOWER, 0, n, n, &ref);
  make(ops, "L", LOWER, 1, n, n, &got);
  TEST_OK(qp_linalg_trtri(&ref));
  TEST_OK(qp_tiled_trtri(&got));
  TEST_WITHIN(compare(&ref, &got, 1), 1e-12, "%s: tiled trtri differs from pdtrtri", ops->name);
  /* the strict upper part: NaN on entry, zero now (compared with a cleared reference) */
  TEST_OK(qp_matrix_clear_upper_local(&ref));
  TEST_ASSERT(compare(&ref, &got, 0) <= 1e-12, "%s: tiled trtri left the upper part", ops->name);
  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);

  /* A zero on the diagonal at row 20: every rank fails, naming the block (from row 17 at
   * block 8 and 16, row 1 at block 32 and more). */
  make(ops, "L", LOWER, 0, n, n, &got);
  const int64_t gi = 20, li = qp_matrix_local_row(&got, gi), lj = qp_matrix_local_col(&got, gi);
  if (li >= 0 && lj >= 0) {
    const double zero = 0.0;
    TEST_OK(qp_linalg_upload(&zero, 1, &got, li, lj, 1, 1));
  }
  char want[64];
  snprintf(want, sizeof want, "diagonal block from row %lld",
           (long long)(gi / g->block) * g->block + 1);
  EXPECT_ERROR(qp_tiled_trtri(&got), QP_ERR_NOT_POSDEF, "singular", want);
  qp_matrix_destroy(&got);
}

static void check_moves(const qp_linalg_ops *ops, const qp_grid *g) {
  const qp_linalg_ops *dist = qp_linalg_dist_ops();
  const qp_space local_space = qp_linalg_local_ops(ops)->space;
  const int64_t n = 45, m = 21;
  const int nb = g->block, P = g->nprow, Q = g->npcol, r = g->myrow, c = g->mycol;
  qp_matrix a_ref, a_got, ref, got;

  /* clear_upper: each rank its entries above the global diagonal */
  pair(ops, "A", n, n, &ref, &got);
  TEST_OK(qp_matrix_clear_upper_local(&ref));
  TEST_OK(qp_tiled_clear_upper(&got));
  TEST_ASSERT(compare(&ref, &got, 0) == 0, "%s: tiled clear_upper differs", ops->name);
  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);

  /* copies: equal offsets, different offsets, into the device table's and into host (dist)
   * matrices; B starts GENERAL, so entries outside the target must stay as they were */
  pair(ops, "A", n, m, &a_ref, &a_got);
  const struct {
    int64_t rows, cols, ai, aj, bi, bj;
    int host_target;
  } copies[] = {{30, 11, 3, 5, 3, 5, 0}, {30, 12, 2, 7, 11, 1, 0}, {n, m, 0, 0, 0, 0, 0},
                {30, 12, 2, 7, 11, 1, 1}, {17, 9, 6, 4, 6, 4, 1}, {1, m, 44, 0, 0, 3, 0}};
  for (size_t i = 0; i < sizeof copies / sizeof copies[0]; ++i) {
    const int64_t rows = copies[i].rows, cols = copies[i].cols;
    pair(copies[i].host_target ? dist : ops, "B", n, n, &ref, &got);
    TEST_OK(qp_linalg_copy_sub(rows, cols, &a_ref, copies[i].ai, copies[i].aj, &ref,
                               copies[i].bi, copies[i].bj));
    TEST_OK(qp_tiled_copy_sub(rows, cols, &a_got, copies[i].ai, copies[i].aj, &got,
                              copies[i].bi, copies[i].bj));
    TEST_ASSERT(compare(&ref, &got, 0) == 0, "%s: tiled copy %zu (%lld x %lld from (%lld, %lld) "
                "to (%lld, %lld)%s) differs from pdgemr2d's", ops->name, i, (long long)rows,
                (long long)cols, (long long)copies[i].ai, (long long)copies[i].aj,
                (long long)copies[i].bi, (long long)copies[i].bj,
                copies[i].host_target ? ", host target" : "");
    qp_matrix_destroy(&ref);
    qp_matrix_destroy(&got);
  }

  /* transpose of A (n x m) into m x n */
  pair(ops, "At", m, n, &ref, &got);
  TEST_OK(qp_linalg_transpose(&a_ref, &ref));
  TEST_OK(qp_tiled_transpose(&a_got, &got));
  TEST_ASSERT(compare(&ref, &got, 0) == 0, "%s: tiled transpose differs from pdtran's",
              ops->name);
  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);

  /* Every window fits the bound's workspace: held at the bound of n, nothing more taken. */
  const qp_tiled_sizes bound = qp_tiled_bound_sizes(n, nb, P, Q, r, c);
  TEST_OK(qp_tiled_hold(QP_TERM_TILED_HOST, QP_SPACE_HOST,
                        (size_t)qp_tiled_host_doubles(&bound) * sizeof(double)));
  TEST_OK(qp_tiled_hold(QP_TERM_TILED_PANELS, local_space,
                        (size_t)qp_tiled_local_doubles(&bound) * sizeof(double)));
  const qp_tiled_sizes none = {0};
  pair(ops, "B", n, n, &ref, &got);
  EXPECT_WORKSPACE(qp_tiled_copy_sub(30, 12, &a_got, 2, 7, &got, 11, 1), none, local_space,
                   "copy in held blocks");
  EXPECT_WORKSPACE(qp_tiled_copy_sub(n, m, &a_got, 0, 0, &got, 0, 0), none, local_space,
                   "copy in place");
  EXPECT_WORKSPACE(qp_tiled_trtri(&got), none, local_space, "trtri in held blocks");
  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);
  pair(ops, "At", m, n, &ref, &got);
  qp_matrix_destroy(&ref);
  EXPECT_WORKSPACE(qp_tiled_transpose(&a_got, &got), none, local_space,
                   "transpose in held blocks");
  qp_matrix_destroy(&got);
  qp_tiled_release();

  /* A copy whose target one rank's device refuses (its local part moved past B's block on
   * the emulated device: a GPU's illegal address): every rank returns that rank's error, none
   * waits in the next gather. The target is every row, so every rank holds part of it. */
  if (qp_linalg_on_device(ops)) {
    qp_matrix whole;
    make(ops, "A", GENERAL, 0, n, n, &whole);
    make(ops, "B", GENERAL, 0, n, n, &got);
    qp_matrix stray = got;
    stray.owns = 0;
    double holder = qp_matrix_local_size(&got) > 0 ? qp_comm_rank() : -1.0;
    qp_comm_max(&holder, 1);
    const int last = (int)holder;
    if (qp_comm_rank() == last) stray.data += qp_matrix_local_size(&got);
    const qp_err err = qp_tiled_copy_sub(n, n - 1, &whole, 0, 1, &stray, 0, 0);
    char want[32];
    snprintf(want, sizeof want, "(rank %d)", last);
    TEST_ASSERT(err == QP_ERR_INTERNAL && strstr(qp_error_message(), "live hostdev block") &&
                    (qp_comm_rank() == last || strstr(qp_error_message(), want)),
                "%s: a refused copy on rank %d: got %s: %s", ops->name, last, qp_err_name(err),
                qp_error_message());
    if (qp_comm_rank() == 0) printf("refused on every rank: %s\n", qp_error_message());
    qp_error_clear();
    qp_matrix_destroy(&whole);
    qp_matrix_destroy(&got);
  }
  qp_matrix_destroy(&a_ref);
  qp_matrix_destroy(&a_got);
}

/* The tiled LU (tiled_lu.c) on this grid's ragged edges (a rank with no rows or columns on
 * 1 x 4 block 16): factors and pivots against pdgetrf, a solve against A X = B (pdgemm), the workspace
 * the bound's (nothing allocated inside the held blocks). */
static void check_lu(const qp_linalg_ops *ops, const qp_grid *g) {
  const int64_t n = 45, k = 19;
  qp_matrix ref, got, b_ref, b_got;
  make(qp_linalg_dist_ops(), "LU", PIVOTED, 0, n, n, &ref);
  make(ops, "LU", PIVOTED, 0, n, n, &got);
  pair(ops, "B", n, k, &b_ref, &b_got);
  const int64_t count = qp_linalg_pivot_count(&ref);
  int *piv_ref = calloc((size_t)count, sizeof *piv_ref);
  int *piv_got = calloc((size_t)count, sizeof *piv_got);
  TEST_OK(qp_linalg_getrf(&ref, piv_ref));
  TEST_OK(qp_linalg_getrs(&ref, piv_ref, &b_ref)); /* dist's getrs: the tiled one, on cpu */
  const qp_tiled_sizes bound = qp_tiled_bound_sizes(n, g->block, g->nprow, g->npcol, g->myrow,
                                                    g->mycol);
  TEST_OK(qp_tiled_hold(QP_TERM_TILED_HOST, QP_SPACE_HOST,
                        (size_t)qp_tiled_host_doubles(&bound) * sizeof(double)));
  TEST_OK(qp_tiled_hold(QP_TERM_TILED_PANELS, qp_linalg_local_ops(ops)->space,
                        (size_t)qp_tiled_local_doubles(&bound) * sizeof(double)));
  const qp_space local = qp_linalg_local_ops(ops)->space;
  const size_t host0 = term_total(QP_TERM_TILED_HOST, QP_SPACE_HOST);
  const size_t local0 = term_total(QP_TERM_TILED_PANELS, local);
  TEST_OK(qp_tiled_getrf(&got, piv_got));
  TEST_OK(qp_tiled_getrs(&got, piv_got, &b_got));
  TEST_ASSERT(term_total(QP_TERM_TILED_HOST, QP_SPACE_HOST) == host0 &&
                  term_total(QP_TERM_TILED_PANELS, local) == local0,
              "%s: the tiled LU took blocks beyond the held ones", ops->name);
  int64_t differ = 0;
  for (int64_t li = 0; li < ref.local_rows; ++li) differ += piv_ref[li] != piv_got[li];
  double d = (double)differ;
  TEST_OK(qp_comm_sum(&d, 1));
  TEST_ASSERT(d == 0, "%s: %g of getrf's pivots differ from pdgetrf's", ops->name, d);
  TEST_WITHIN(compare(&ref, &got, 0), 1e-12, "%s: tiled getrf differs from pdgetrf", ops->name);
  TEST_WITHIN(compare(&b_ref, &b_got, 0), 1e-12, "%s: tiled getrs differs from dist's",
              ops->name);
  TEST_WITHIN(lu_residual(&b_got), 1e-13, "%s: A X - B after the tiled getrs", ops->name);
  qp_tiled_release();
  free(piv_ref);
  free(piv_got);
  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);
  qp_matrix_destroy(&b_ref);
  qp_matrix_destroy(&b_got);
}

int main(int argc, char **argv) {
  qp_grid grid;
  qp_mpi_start(&argc, &argv, &grid);
  const qp_linalg_ops *tables[] = {qp_linalg_dist_ops(), qp_mpi_hostdev_dist()};
  for (int t = 0; t < 2; ++t) {
    check_inverse(tables[t], &grid);
    check_moves(tables[t], &grid);
    check_lu(tables[t], &grid);
  }
  qp_linalg_release_workspaces(qp_linalg_hostdev_ops()); /* the diagonal blocks' trtri's */
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0 && qp_budget_current(QP_SPACE_HOST) == 0,
              "%zu device and %zu host bytes still tracked", qp_budget_current(QP_SPACE_DEVICE),
              qp_budget_current(QP_SPACE_HOST));
  return qp_mpi_finish(&grid, "tiled moves and inverse",
                       "equal to ScaLAPACK's on cpu and hostdev");
}
