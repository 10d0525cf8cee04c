/* test_tiled_table.c: the table a GPU per rank runs (linalg/tiled/tiled_table.h, cuda-dist's) over
 * hostdev's emulated devices instead of cuda ("hostdev-tiled"), through the qp_linalg_* calls
 * the stages make, against dist (ScaLAPACK) on the same matrices: pixel-direct's factor and
 * inverse, the products and solves, syrk, norm1 and pocon to 1e-12; the moves bitwise: a
 * window aligned into a host work matrix of another layout (qp_linalg_align), the matrix
 * made whole on every rank (qp_linalg_replicate), the transpose, a host window's round trip;
 * partial sums completed over the ranks; SMW's LU (getrf, gecon, getrs) and potrs against
 * pdgetrf, dgecon, A X = B by pdgemm and pdpotrs to 1e-12, the pivots equal, a singular matrix named on
 * every rank; what it lacks (potri) refused by name;
 * the held buffers (the tiled blocks in device space, hostdev's solver workspace) taken and
 * freed by the table's hold and release; nothing left tracked. Args: grid rows, cols, block,
 * and the table (hostdev-tiled by default; cuda-dist on a GPU node: tests/mpi/CMakeLists.txt,
 * label gpu, skipped with exit 77 where there is no GPU unless QP_REQUIRE_GPU=1). */
#include <stdio.h>

#include "comm.h"
#include "host_window.h"
#include "hostdev.h"
#include "qp_config.h"
#include "tiled_check.h"
#if QP_HAVE_CUDA
#include "cuda_backend.h"
#endif

enum { QP_TEST_SKIP = 77 };

int main(int argc, char **argv) {
  qp_grid grid;
  qp_mpi_start(&argc, &argv, &grid);
  /* The table: hostdev-tiled, or a 4th argument (cuda-dist, in CUDA builds, label gpu). */
  const char *table = argc > 4 ? argv[4] : "hostdev-tiled";
  const int emulated = strcmp(table, "hostdev-tiled") == 0;
  const qp_linalg_ops *dist = qp_linalg_dist_ops(), *ops = NULL;
  const qp_err started = qp_linalg_backend(table, &ops);
  if (started == QP_ERR_UNSUPPORTED && !emulated) {
    /* No GPU (or no CUDA): skipped on every rank, a failure under QP_REQUIRE_GPU=1. */
    const char *require = getenv("QP_REQUIRE_GPU");
    const int required = require && strcmp(require, "1") == 0;
    if (qp_comm_rank() == 0)
      printf("test_tiled_table: %s: %s: %s\n", table, required ? "FAILED" : "skipped",
             qp_error_message());
    qp_grid_exit(&grid);
    qp_comm_finalize();
    return required ? 1 : QP_TEST_SKIP;
  }
  TEST_OK(started);
  TEST_ASSERT(ops && ops->distributed && ops->space == QP_SPACE_DEVICE &&
                  qp_linalg_local_ops(ops) != ops &&
                  qp_linalg_local_ops(ops)->space == QP_SPACE_DEVICE &&
                  (!emulated || qp_linalg_local_ops(ops) == qp_linalg_hostdev_ops()) &&
                  qp_linalg_host_ops(ops) == dist,
              "%s: not a distributed device table over a local device table with dist's host "
              "matrices", table);
  const int64_t n = 45, k = 19;
  qp_matrix ref, got, b_ref, b_got;

  /* pixel-direct's basis: C = L L^T, L^-1, its upper part cleared (NaN above C's diagonal) */
  make(dist, "C", SPD, 0, n, n, &ref);
  make(ops, "C", SPD, 0, n, n, &got);
  TEST_OK(qp_linalg_potrf(&ref));
  TEST_OK(qp_linalg_potrf(&got));
  double rc_got = 0;
  TEST_OK(qp_linalg_pocon(&got, (double)n, &rc_got));
  TEST_ASSERT(rc_got > 0.1 && rc_got <= 1.0, "pocon through the table: %g", rc_got);
  TEST_OK(qp_linalg_trtri(&ref));
  TEST_OK(qp_linalg_trtri(&got));
  TEST_OK(qp_linalg_clear_upper(&ref));
  TEST_OK(qp_linalg_clear_upper(&got));
  TEST_WITHIN(compare(&ref, &got, 0), 1e-12, "L^-1 through hostdev-tiled differs from dist's");

  /* products and solves with it, a gemm and a syrk */
  make(dist, "B", GENERAL, 0, n, k, &b_ref);
  make(ops, "B", GENERAL, 0, n, k, &b_got);
  TEST_OK(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &ref, &b_ref));
  TEST_OK(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &got, &b_got));
  TEST_OK(qp_linalg_trsm(QP_LEFT, QP_TRANS, 2.0, &ref, &b_ref));
  TEST_OK(qp_linalg_trsm(QP_LEFT, QP_TRANS, 2.0, &got, &b_got));
  TEST_WITHIN(compare(&b_ref, &b_got, 0), 1e-12, "trmm then trsm through the table differ");
  qp_matrix s_ref, s_got;
  make(dist, "S", GENERAL, 0, k, k, &s_ref);
  make(ops, "S", GENERAL, 0, k, k, &s_got);
  TEST_OK(qp_linalg_syrk(QP_TRANS, 1.0, &b_ref, 0.0, &s_ref));
  TEST_OK(qp_linalg_syrk(QP_TRANS, 1.0, &b_got, 0.0, &s_got));
  TEST_WITHIN(compare(&s_ref, &s_got, 0), 1e-12, "syrk through the table differs");
  qp_matrix c_ref, c_got;
  make(dist, "BS", GENERAL, 0, n, k, &c_ref);
  make(ops, "BS", GENERAL, 0, n, k, &c_got);
  TEST_OK(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, -1.0, &b_ref, &s_ref, 0.5, &c_ref));
  TEST_OK(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, -1.0, &b_got, &s_got, 0.5, &c_got));
  TEST_WITHIN(compare(&c_ref, &c_got, 0), 1e-12, "gemm through the table differs");
  qp_matrix_destroy(&c_ref);
  qp_matrix_destroy(&c_got);
  double norm_ref = 0, norm_got = 0;
  TEST_OK(qp_linalg_norm1(&ref, &norm_ref));
  TEST_OK(qp_linalg_norm1(&got, &norm_got));
  TEST_WITHIN(qp_test_rel_diff(norm_ref, norm_got), 1e-14, "norm1 through the table");

  /* moves: A's window (rows 3.., columns 2..) lined up with S's positions (1, 0) in a host
   * work matrix of S's shape, the transpose, B whole on every rank, bitwise. A is made afresh
   * on both tables, the same entries: L^-1 above agrees with dist's to 1e-12, bitwise only
   * where both factor with the same kernels (OpenBLAS; not BLIS under the reference LAPACK,
   * cmake/qp_blas.cmake) */
  qp_matrix a_ref, a_got;
  make(dist, "A", GENERAL, 0, n, n, &a_ref);
  make(ops, "A", GENERAL, 0, n, n, &a_got);
  qp_matrix work_ref, work_got;
  qp_aligned al_ref, al_got;
  TEST_OK(qp_matrix_create(dist, "aligned", QP_TERM_TRANSIENT, k, k, &work_ref));
  TEST_OK(qp_matrix_create(dist, "aligned", QP_TERM_TRANSIENT, k, k, &work_got));
  memset(work_ref.data, 0, (size_t)qp_matrix_local_size(&work_ref) * sizeof(double));
  memset(work_got.data, 0, (size_t)qp_matrix_local_size(&work_got) * sizeof(double));
  TEST_OK(qp_linalg_align(&a_ref, 3, 2, k - 1, k, &s_ref, 1, 0, &work_ref, &al_ref));
  TEST_OK(qp_linalg_align(&a_got, 3, 2, k - 1, k, &s_got, 1, 0, &work_got, &al_got));
  TEST_ASSERT(compare(&work_ref, &work_got, 0) == 0, "an aligned window differs");
  qp_matrix_destroy(&work_ref);
  qp_matrix_destroy(&work_got);
  qp_matrix_destroy(&a_ref);
  qp_matrix_destroy(&a_got);
  qp_matrix t_got;
  make(ops, "Bt", GENERAL, 0, k, n, &t_got);
  TEST_OK(qp_linalg_transpose(&b_got, &t_got));
  {
    /* B^T whole on every rank against B whole, transposed by hand */
    qp_matrix whole_b, whole_t;
    const double *wb = NULL, *wt = NULL;
    TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "B whole", QP_TERM_TRANSIENT, n, k, &whole_b));
    TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "Bt whole", QP_TERM_TRANSIENT, k, n, &whole_t));
    TEST_OK(qp_linalg_replicate(&b_got, &whole_b, &wb));
    TEST_OK(qp_linalg_replicate(&t_got, &whole_t, &wt));
    double worst = 0;
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < n; ++i)
        worst = qp_test_worst(worst, isfinite(wb[i + j * n]) && isfinite(wt[j + i * k])
                                         ? fabs(wb[i + j * n] - wt[j + i * k])
                                         : NAN);
    TEST_ASSERT(worst == 0, "transpose through the table: %g off", worst);
    qp_matrix_destroy(&whole_b);
    qp_matrix_destroy(&whole_t);
  }
  qp_matrix_destroy(&t_got);

  /* a host window's round trip of this rank's local columns, against the same on dist's */
  qp_matrix *both[2] = {&b_ref, &b_got};
  for (int t = 0; t < 2; ++t) {
    qp_host_window w;
    TEST_OK(qp_host_window_open(both[t], 0, both[t]->local_cols, QP_ACCESS_READ_WRITE, &w));
    for (int64_t j = 0; j < both[t]->local_cols; ++j)
      for (int64_t i = 0; i < both[t]->local_rows; ++i)
        w.data[i + j * w.ld] = 2.0 * w.data[i + j * w.ld] + (double)qp_matrix_global_row(both[t], i);
    TEST_OK(qp_host_window_close(&w));
  }
  TEST_WITHIN(compare(&b_ref, &b_got, 0), 1e-12, "a host window's round trip differs");

  /* partial sums over every rank */
  double one = 1.0;
  TEST_OK(qp_linalg_sum_partials(ops, &one, 1));
  TEST_ASSERT(one == qp_comm_size(), "partial sums over %d ranks gave %g", qp_comm_size(), one);

  /* SMW's LU: factors, pivots, the estimate and the solves against dist's (pdgetrf picks the
   * same pivots: each column's largest entry), potrs with C's factor; an exactly singular
   * matrix (a zero column) named on every rank; what the table lacks refused by name */
  {
    qp_matrix lu_ref, lu_got, x_ref, x_got;
    make(dist, "LU", PIVOTED, 0, n, n, &lu_ref);
    make(ops, "LU", PIVOTED, 0, n, n, &lu_got);
    double an_ref = 0, an_got = 0, rc_ref = 0, rc_lu = 0;
    TEST_OK(qp_linalg_norm1(&lu_ref, &an_ref));
    TEST_OK(qp_linalg_norm1(&lu_got, &an_got));
    const int64_t np = qp_linalg_pivot_count(&lu_ref);
    TEST_ASSERT(np == qp_linalg_pivot_count(&lu_got), "pivot counts differ");
    int *piv_ref = calloc((size_t)np, sizeof *piv_ref), *piv_got = calloc((size_t)np, sizeof *piv_got);
    TEST_OK(qp_linalg_getrf(&lu_ref, piv_ref));
    TEST_OK(qp_linalg_getrf(&lu_got, piv_got));
    int64_t moved = 0, differ = 0;
    for (int64_t li = 0; li < lu_ref.local_rows; ++li) {
      differ += piv_ref[li] != piv_got[li];
      moved += piv_got[li] != qp_matrix_global_row(&lu_got, li) + 1;
    }
    double counts[2] = {(double)moved, (double)differ};
    TEST_OK(qp_comm_sum(counts, 2));
    TEST_ASSERT(counts[0] > 0 && counts[1] == 0,
                "getrf's pivots: %g rows interchanged, %g pivots differ from pdgetrf's",
                counts[0], counts[1]);
    TEST_WITHIN(compare(&lu_ref, &lu_got, 0), 1e-12, "getrf's factors differ from pdgetrf's");
    TEST_OK(qp_linalg_gecon(&lu_ref, an_ref, &rc_ref));
    TEST_OK(qp_linalg_gecon(&lu_got, an_got, &rc_lu));
    TEST_ASSERT(rc_ref > 0.05, "the LU test's matrix is ill-conditioned: rcond %g", rc_ref);
    {
      /* pdgecon's estimator (pdlacon) is Hager's older one; the tiled gecon runs dgecon's
       * (dlacn2): compared with LAPACK's dgecon on the whole matrix, one process */
      qp_matrix whole;
      TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "LU whole", QP_TERM_TRANSIENT, n, n, &whole));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) whole.data[i + j * n] = entry(PIVOTED, i, j, n);
      int whole_piv[64];
      double an_whole = 0, rc_whole = 0;
      TEST_OK(qp_linalg_norm1(&whole, &an_whole));
      TEST_OK(qp_linalg_getrf(&whole, whole_piv));
      TEST_OK(qp_linalg_gecon(&whole, an_whole, &rc_whole));
      TEST_WITHIN(qp_test_rel_diff(rc_whole, rc_lu), 1e-12, "gecon: %g against dgecon's %g",
                  rc_lu, rc_whole);
      qp_matrix_destroy(&whole);
    }
    make(dist, "X", GENERAL, 0, n, k, &x_ref);
    make(ops, "X", GENERAL, 0, n, k, &x_got);
    TEST_OK(qp_linalg_getrs(&lu_ref, piv_ref, &x_ref));
    TEST_OK(qp_linalg_getrs(&lu_got, piv_got, &x_got));
    TEST_WITHIN(compare(&x_ref, &x_got, 0), 1e-12, "getrs differs from dist's");
    TEST_WITHIN(lu_residual(&x_got), 1e-13, "A X - B after getrs through the table");
    /* getrs into a B one rank's emulated device refuses (its local part moved past its block:
     * a GPU's illegal address): that rank's error on every rank, none left waiting */
    if (emulated) {
      qp_matrix stray = x_got;
      stray.owns = 0;
      double holder = qp_matrix_local_size(&x_got) > 0 ? qp_comm_rank() : -1.0;
      TEST_OK(qp_comm_max(&holder, 1));
      const int last = (int)holder;
      if (qp_comm_rank() == last) stray.data += qp_matrix_local_size(&x_got);
      char from[32];
      snprintf(from, sizeof from, "(rank %d)", last);
      const qp_err err = qp_linalg_getrs(&lu_got, piv_got, &stray);
      TEST_ASSERT(err == QP_ERR_INTERNAL && strstr(qp_error_message(), "live hostdev block") &&
                      (qp_comm_rank() == last || strstr(qp_error_message(), from)),
                  "getrs into a refused B on rank %d: got %s: %s", last, qp_err_name(err),
                  qp_error_message());
      if (qp_comm_rank() == 0) printf("refused on every rank: %s\n", qp_error_message());
      qp_error_clear();
    }
    /* potrs with C's factor (C refactored: ref and got hold L^-1 by now), on fresh right-hand
     * sides (the refused getrs above left x_got half permuted) */
    qp_matrix_destroy(&ref);
    qp_matrix_destroy(&got);
    qp_matrix_destroy(&x_ref);
    qp_matrix_destroy(&x_got);
    make(dist, "X", GENERAL, 0, n, k, &x_ref);
    make(ops, "X", GENERAL, 0, n, k, &x_got);
    make(dist, "C", SPD, 0, n, n, &ref);
    make(ops, "C", SPD, 0, n, n, &got);
    TEST_OK(qp_linalg_potrf(&ref));
    TEST_OK(qp_linalg_potrf(&got));
    TEST_OK(qp_linalg_potrs(&ref, &x_ref));
    TEST_OK(qp_linalg_potrs(&got, &x_got));
    TEST_WITHIN(compare(&x_ref, &x_got, 0), 1e-12, "potrs differs from pdpotrs");
    /* column 6 zero: U(6,6) = 0 exactly, on every rank */
    qp_matrix_destroy(&lu_got);
    make(ops, "LU", GENERAL, 0, n, n, &lu_got);
    double *zeros = calloc((size_t)lu_got.local_rows + 1, sizeof *zeros);
    for (int64_t lj = 0; lj < lu_got.local_cols; ++lj)
      if (qp_matrix_global_col(&lu_got, lj) == 5)
        TEST_OK(qp_linalg_upload(zeros, lu_got.local_rows > 0 ? lu_got.local_rows : 1, &lu_got,
                                 0, lj, lu_got.local_rows, 1));
    free(zeros);
    EXPECT_ERROR(qp_linalg_getrf(&lu_got, piv_got), QP_ERR_NOT_POSDEF, "'LU'",
                 "is singular: U(6,6) = 0");
    char want[64];
    snprintf(want, sizeof want, "backend '%s' has no potri", table);
    EXPECT_ERROR(qp_linalg_potri(&got), QP_ERR_UNSUPPORTED, want);
    free(piv_ref);
    free(piv_got);
    qp_matrix_destroy(&lu_ref);
    qp_matrix_destroy(&lu_got);
    qp_matrix_destroy(&x_ref);
    qp_matrix_destroy(&x_got);
  }

  /* held buffers: the tiled blocks (the local part in device space), hostdev's workspace */
  TEST_OK(ops->hold_workspace(QP_TERM_TILED_PANELS, 4096));
  TEST_OK(ops->hold_workspace(QP_TERM_TILED_HOST, 4096));
  if (emulated) TEST_OK(ops->hold_workspace(QP_TERM_HOSTDEV_WORKSPACE, 8192));
  TEST_ASSERT(term_total(QP_TERM_TILED_PANELS, QP_SPACE_DEVICE) >= 4096 &&
                  term_total(QP_TERM_TILED_HOST, QP_SPACE_HOST) >= 4096 &&
                  (!emulated || term_total(QP_TERM_HOSTDEV_WORKSPACE, QP_SPACE_DEVICE) >= 8192),
              "the table's hold took no blocks");
  qp_linalg_release_workspaces(ops);

  qp_matrix_destroy(&ref);
  qp_matrix_destroy(&got);
  qp_matrix_destroy(&b_ref);
  qp_matrix_destroy(&b_got);
  qp_matrix_destroy(&s_ref);
  qp_matrix_destroy(&s_got);
#if QP_HAVE_CUDA
  if (!emulated) qp_cuda_finalize(); /* the context's own buffers, held from its start */
#endif
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0 && qp_budget_current(QP_SPACE_HOST) == 0,
              "%zu device and %zu host bytes still tracked", qp_budget_current(QP_SPACE_DEVICE),
              qp_budget_current(QP_SPACE_HOST));
  return qp_mpi_finish(&grid, table, "equal to dist's");
}
