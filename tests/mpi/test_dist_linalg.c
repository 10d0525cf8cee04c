/* test_dist_linalg.c: every operation of the distributed backend against the CPU backend on
 * the same matrices: each rank builds the global matrices (same seed everywhere), keeps its
 * block-cyclic part, runs the ScaLAPACK operation, and compares its local entries with the
 * CPU result. Run under mpiexec with -n 1, 2, 4; args: grid rows, cols, block size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "matrix.h"
#include "mpi_check.h"
#include "test_util.h"

static uint64_t qp_seed = 12345;
static double qp_random(void) {
  qp_seed = qp_seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(qp_seed >> 11) / 9007199254740992.0 - 0.5;
}

/* A global rows x cols matrix (cpu) and its distributed copy. */
typedef struct pair {
  qp_matrix cpu, dist;
} pair;

static void pair_create(const char *name, int64_t rows, int64_t cols, int spd, pair *p) {
  TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), name, QP_TERM_TRANSIENT, rows, cols, &p->cpu));
  TEST_OK(qp_matrix_create(qp_linalg_dist_ops(), name, QP_TERM_TRANSIENT, rows, cols, &p->dist));
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i)
      p->cpu.data[i + j * rows] = qp_random();
  if (spd) { /* symmetric, diagonally dominant */
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < j; ++i)
        p->cpu.data[i + j * rows] = p->cpu.data[j + i * rows];
    for (int64_t i = 0; i < rows; ++i)
      p->cpu.data[i + i * rows] += (double)rows;
  }
  for (int64_t lj = 0; lj < p->dist.local_cols; ++lj)
    for (int64_t li = 0; li < p->dist.local_rows; ++li)
      p->dist.data[li + lj * p->dist.ld] =
          p->cpu
              .data[qp_matrix_global_row(&p->dist, li) + qp_matrix_global_col(&p->dist, lj) * rows];
}

/* Max relative difference over the whole matrix (all ranks), lower triangle only when asked,
 * relative to the largest |entry| of the cpu result; NaN on every rank when an entry compared
 * on any rank, or the cpu result anywhere, is not finite (test_util.h). */
static double pair_diff(const pair *p, int lower_only) {
  const double scale = qp_test_max_abs(p->cpu.data, (size_t)(p->cpu.rows * p->cpu.cols));
  double worst = 0;
  for (int64_t lj = 0; lj < p->dist.local_cols; ++lj)
    for (int64_t li = 0; li < p->dist.local_rows; ++li) {
      int64_t gi = qp_matrix_global_row(&p->dist, li), gj = qp_matrix_global_col(&p->dist, lj);
      if (lower_only && gi < gj) continue;
      worst = qp_test_worst(worst, qp_test_max_diff(&p->dist.data[li + lj * p->dist.ld],
                                                    &p->cpu.data[gi + gj * p->cpu.rows], 1,
                                                    scale == 0 ? 1.0 : scale));
    }
  return qp_mpi_worst(worst);
}

static void pair_destroy(pair *p) {
  qp_matrix_destroy(&p->cpu);
  qp_matrix_destroy(&p->dist);
}

#define EXPECT_CLOSE(p, lower, what)                                                               \
  do {                                                                                             \
    double d_ = pair_diff((p), (lower));                                                           \
    TEST_WITHIN(d_, 1e-12, "%s: relative difference", (what));                                     \
  } while (0)

/* The condition estimates equal the serial backend's on any grid (issue 38: pdpocon's own
 * estimator gave rcond(C) 2.24e-3 on 2 and 4 ranks against 3.63e-4 on one). A correlated,
 * ill-conditioned SPD matrix (a Gaussian kernel of width 3 rows, diagonal 1 + 1e-6) and a
 * nonsymmetric one (the same plus a skew part), factored on both backends; rcond agrees to
 * 1e-10 relative on every rank. */
static void check_condition_estimates(void) {
  const int64_t n = 61;
  for (int lu = 0; lu < 2; ++lu) {
    pair m;
    pair_create(lu ? "kernel LU" : "kernel", n, n, 0, &m);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        const double d = (double)(i - j);
        m.cpu.data[i + j * n] = exp(-d * d / 18.0) + (i == j ? 1e-6 : 0.0) +
                                (lu ? 0.05 * (i > j ? 1.0 : (i < j ? -1.0 : 0.0)) : 0.0);
      }
    for (int64_t lj = 0; lj < m.dist.local_cols; ++lj)
      for (int64_t li = 0; li < m.dist.local_rows; ++li)
        m.dist.data[li + lj * m.dist.ld] =
            m.cpu.data[qp_matrix_global_row(&m.dist, li) + qp_matrix_global_col(&m.dist, lj) * n];
    double norm_cpu = 0, norm_dist = 0, rcond_cpu = NAN, rcond_dist = NAN;
    TEST_OK(qp_linalg_norm1(&m.cpu, &norm_cpu));
    TEST_OK(qp_linalg_norm1(&m.dist, &norm_dist));
    int *piv_cpu = malloc((size_t)n * sizeof *piv_cpu),
        *piv_dist = malloc((size_t)qp_linalg_pivot_count(&m.dist) * sizeof *piv_dist);
    if (lu) {
      TEST_OK(qp_linalg_getrf(&m.cpu, piv_cpu));
      TEST_OK(qp_linalg_getrf(&m.dist, piv_dist));
      TEST_OK(qp_linalg_gecon(&m.cpu, norm_cpu, &rcond_cpu));
      TEST_OK(qp_linalg_gecon(&m.dist, norm_dist, &rcond_dist));
    } else {
      TEST_OK(qp_linalg_potrf(&m.cpu));
      TEST_OK(qp_linalg_potrf(&m.dist));
      TEST_OK(qp_linalg_pocon(&m.cpu, norm_cpu, &rcond_cpu));
      TEST_OK(qp_linalg_pocon(&m.dist, norm_dist, &rcond_dist));
    }
    free(piv_cpu);
    free(piv_dist);
    if (qp_comm_rank() == 0)
      printf("%s: rcond %.6g on one process, %.6g distributed\n", lu ? "gecon" : "pocon", rcond_cpu,
             rcond_dist);
    TEST_ASSERT(rcond_cpu < 1e-3, "the kernel matrix is not ill-conditioned: rcond %g", rcond_cpu);
    TEST_WITHIN(qp_mpi_worst(qp_test_rel_diff(rcond_cpu, rcond_dist)), 1e-10,
                "%s: distributed rcond against one process's", lu ? "gecon" : "pocon");
    pair_destroy(&m);
  }
}

int main(int argc, char **argv) {
  qp_grid grid;
  qp_mpi_start(&argc, &argv, &grid);
  const int64_t n = 53, k = 29; /* not multiples of the block: ragged edges */
  char what[64];

  pair a, b, c;
  pair_create("A", n, n, 1, &a);
  TEST_OK(qp_linalg_potrf(&a.cpu));
  TEST_OK(qp_linalg_potrf(&a.dist));
  EXPECT_CLOSE(&a, 1, "potrf");
  pair_create("B", n, k, 0, &b);
  TEST_OK(qp_linalg_potrs(&a.cpu, &b.cpu));
  TEST_OK(qp_linalg_potrs(&a.dist, &b.dist));
  EXPECT_CLOSE(&b, 0, "potrs");
  pair_destroy(&b);
  for (int side = 0; side < 2; ++side)
    for (int trans = 0; trans < 2; ++trans)
      for (int solve = 0; solve < 2; ++solve) {
        pair_create("B", side == QP_LEFT ? n : k, side == QP_LEFT ? k : n, 0, &b);
        if (solve) {
          TEST_OK(qp_linalg_trsm(side, trans, 0.5, &a.cpu, &b.cpu));
          TEST_OK(qp_linalg_trsm(side, trans, 0.5, &a.dist, &b.dist));
        } else {
          TEST_OK(qp_linalg_trmm(side, trans, 0.5, &a.cpu, &b.cpu));
          TEST_OK(qp_linalg_trmm(side, trans, 0.5, &a.dist, &b.dist));
        }
        snprintf(what, sizeof what, "%s side %d trans %d", solve ? "trsm" : "trmm", side, trans);
        EXPECT_CLOSE(&b, 0, what);
        pair_destroy(&b);
      }
  TEST_OK(qp_linalg_trtri(&a.cpu));
  TEST_OK(qp_linalg_trtri(&a.dist));
  EXPECT_CLOSE(&a, 1, "trtri");
  pair_destroy(&a);

  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      pair_create("A", ta ? k : n, ta ? n : k, 0, &a);
      pair_create("B", tb ? 17 : k, tb ? k : 17, 0, &b);
      pair_create("C", n, 17, 0, &c);
      TEST_OK(qp_linalg_gemm(ta, tb, 1.5, &a.cpu, &b.cpu, 0.5, &c.cpu));
      TEST_OK(qp_linalg_gemm(ta, tb, 1.5, &a.dist, &b.dist, 0.5, &c.dist));
      snprintf(what, sizeof what, "gemm %d %d", ta, tb);
      EXPECT_CLOSE(&c, 0, what);
      pair_destroy(&a);
      pair_destroy(&b);
      pair_destroy(&c);
    }
  /* Windows at offsets that start nowhere near a block (7, 5, 3, ...): PBLAS's IA/JA against
   * the cpu backend's views; C's entries outside the window must stay as they were. */
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      pair_create("A", n, n, 0, &a);
      pair_create("B", n, k, 0, &b);
      pair_create("C", n, k, 0, &c);
      const int64_t m = 19, nn = 11, kk = 23;
      const int64_t ai = ta ? 7 : 9, aj = ta ? 9 : 7, bi = tb ? 3 : 5, bj = tb ? 5 : 3;
      TEST_OK(qp_linalg_gemm_sub(ta, tb, m, nn, kk, 1.5, &a.cpu, ai, aj, &b.cpu, bi, bj, 0.5,
                                 &c.cpu, 13, 2));
      TEST_OK(qp_linalg_gemm_sub(ta, tb, m, nn, kk, 1.5, &a.dist, ai, aj, &b.dist, bi, bj, 0.5,
                                 &c.dist, 13, 2));
      snprintf(what, sizeof what, "gemm_sub %d %d", ta, tb);
      EXPECT_CLOSE(&c, 0, what);
      /* A window past C's edge is refused before any rank calls PBLAS. */
      TEST_FAILS(qp_linalg_gemm_sub(ta, tb, m, nn, kk, 1.0, &a.dist, ai, aj, &b.dist, bi, bj, 0.0,
                                    &c.dist, n - m + 1, 2),
                 QP_ERR_INTERNAL);
      pair_destroy(&a);
      pair_destroy(&b);
      pair_destroy(&c);
    }
  for (int trans = 0; trans < 2; ++trans) {
    pair_create("A", trans ? k : n, trans ? n : k, 0, &a);
    pair_create("C", n, n, 1, &c);
    TEST_OK(qp_linalg_syrk(trans, 1.0, &a.cpu, 0.0, &c.cpu));
    TEST_OK(qp_linalg_syrk(trans, 1.0, &a.dist, 0.0, &c.dist));
    EXPECT_CLOSE(&c, 0, trans ? "syrk A^T A (full)" : "syrk A A^T (full)");
    pair_destroy(&a);
    pair_destroy(&c);
  }

  /* LU of a general matrix, then a solve. */
  pair_create("M", n, n, 0, &a);
  for (int64_t i = 0; i < n; ++i)
    a.cpu.data[i + i * n] += 3.0;
  for (int64_t lj = 0; lj < a.dist.local_cols; ++lj)
    for (int64_t li = 0; li < a.dist.local_rows; ++li)
      a.dist.data[li + lj * a.dist.ld] =
          a.cpu.data[qp_matrix_global_row(&a.dist, li) + qp_matrix_global_col(&a.dist, lj) * n];
  int *piv_cpu = malloc((size_t)n * sizeof *piv_cpu);
  int *piv_dist = malloc((size_t)qp_linalg_pivot_count(&a.dist) * sizeof *piv_dist);
  pair_create("B", n, k, 0, &b);
  TEST_OK(qp_linalg_getrf(&a.cpu, piv_cpu));
  TEST_OK(qp_linalg_getrf(&a.dist, piv_dist));
  TEST_OK(qp_linalg_getrs(&a.cpu, piv_cpu, &b.cpu));
  TEST_OK(qp_linalg_getrs(&a.dist, piv_dist, &b.dist));
  EXPECT_CLOSE(&b, 0, "getrf + getrs");
  free(piv_cpu);
  free(piv_dist);
  pair_destroy(&b);

  /* A sub-block copied to another offset, across layouts. */
  pair_create("C", 20, 30, 0, &c);
  TEST_OK(qp_linalg_copy_sub(11, 13, &a.cpu, 5, 7, &c.cpu, 3, 9));
  TEST_OK(qp_linalg_copy_sub(11, 13, &a.dist, 5, 7, &c.dist, 3, 9));
  EXPECT_CLOSE(&c, 0, "copy_sub");
  /* ... and to the same place of a matrix of another size (a local copy on every rank, no
   * pdgemr2d: dist.c), a window with ragged block edges. */
  TEST_OK(qp_linalg_copy_sub(11, 13, &a.cpu, 5, 7, &c.cpu, 5, 7));
  TEST_OK(qp_linalg_copy_sub(11, 13, &a.dist, 5, 7, &c.dist, 5, 7));
  EXPECT_CLOSE(&c, 0, "copy_sub in place");
  pair_destroy(&c);

  /* The operations that carry what differs between a whole and a spread matrix (matrix.h), on
   * a fresh matrix (A's two copies have been through factorisations that round apart). */
  pair_destroy(&a);
  pair_create("W", n, n, 0, &a);
  pair t;
  pair_create("A^T", a.cpu.cols, a.cpu.rows, 0, &t);
  TEST_OK(qp_linalg_transpose(&a.cpu, &t.cpu));
  TEST_OK(qp_linalg_transpose(&a.dist, &t.dist));
  EXPECT_CLOSE(&t, 0, "transpose");
  TEST_ASSERT(t.cpu.data[3 + 5 * t.cpu.ld] == a.cpu.data[5 + 3 * a.cpu.ld], "cpu transpose");
  /* clear_upper: each rank its own entries; the diagonal and below as they were. */
  TEST_OK(qp_linalg_clear_upper(&t.cpu));
  TEST_OK(qp_linalg_clear_upper(&t.dist));
  EXPECT_CLOSE(&t, 0, "clear_upper");
  for (int64_t j = 0; j < t.cpu.cols; ++j)
    for (int64_t i = 0; i < t.cpu.rows; ++i)
      TEST_ASSERT(t.cpu.data[i + j * t.cpu.ld] == (i < j ? 0.0 : a.cpu.data[j + i * a.cpu.ld]),
                  "cpu clear_upper at (%lld, %lld)", (long long)i, (long long)j);
  pair_destroy(&t);
  /* Column views: from a multiple of block x npcol a distributed range of columns is a
   * block-cyclic matrix of its own (the maps' batches, W's blocks): its entries, and a gemm
   * on it, equal the cpu columns'; from anywhere else it is refused. */
  const int64_t period = (int64_t)grid.block * grid.npcol;
  pair wide, gram;
  pair_create("wide", n, 2 * period + 5, 0, &wide);
  pair view;
  TEST_OK(qp_matrix_columns(&wide.cpu, period, period + 5, &view.cpu));
  TEST_OK(qp_matrix_columns(&wide.dist, period, period + 5, &view.dist));
  EXPECT_CLOSE(&view, 0, "columns from block x npcol");
  pair_create("gram", period + 5, period + 5, 0, &gram);
  TEST_OK(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &view.cpu, &view.cpu, 0.0, &gram.cpu));
  TEST_OK(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &view.dist, &view.dist, 0.0, &gram.dist));
  EXPECT_CLOSE(&gram, 0, "gemm on column views");
  pair_destroy(&gram);
  TEST_FAILS(qp_matrix_columns(&wide.dist, period - 1, 3, &view.dist), QP_ERR_INTERNAL);
  TEST_FAILS(qp_matrix_columns(&wide.dist, period, 2 * period, &view.dist), QP_ERR_INTERNAL);
  pair_destroy(&wide);
  /* align: A's window [5.., 7..] (11 x 13) lined up with positions [3.., 9..] of a 20 x 30
   * layout; every local position in the window reads A's entry, on every backend. */
  TEST_ASSERT(!qp_linalg_moves_data(qp_linalg_cpu_ops()) &&
                  qp_linalg_moves_data(qp_linalg_dist_ops()),
              "moves_data: cpu must not need a work matrix, dist must");
  pair_create("layout", 20, 30, 0, &c);
  qp_aligned on_cpu, on_dist;
  TEST_OK(qp_linalg_align(&a.cpu, 5, 7, 11, 13, &c.cpu, 3, 9, NULL, &on_cpu));
  TEST_OK(qp_linalg_align(&a.dist, 5, 7, 11, 13, &c.dist, 3, 9, &c.dist, &on_dist));
  double align_worst = 0;
  for (int64_t lj = 0; lj < c.dist.local_cols; ++lj)
    for (int64_t li = 0; li < c.dist.local_rows; ++li) {
      const int64_t gi = qp_matrix_global_row(&c.dist, li), gj = qp_matrix_global_col(&c.dist, lj);
      if (gi < 3 || gi >= 14 || gj < 9 || gj >= 22) continue;
      const double want = a.cpu.data[(gi - 3 + 5) + (gj - 9 + 7) * a.cpu.ld];
      align_worst = qp_test_worst(align_worst, fabs(qp_aligned_at(&on_dist, li, lj) - want));
      align_worst = qp_test_worst(align_worst, fabs(qp_aligned_at(&on_cpu, gi, gj) - want));
    }
  TEST_WITHIN(align_worst, 0.0, "align: an aligned entry differs from A's");
  TEST_ASSERT(qp_linalg_align(&a.dist, 5, 7, 11, 13, &c.dist, 3, 9, NULL, &on_dist) ==
                  QP_ERR_INTERNAL,
              "align on dist without a work matrix must be refused");
  TEST_ASSERT(qp_linalg_align(&a.cpu, 5, 7, 18, 13, &c.cpu, 3, 9, NULL, &on_cpu) == QP_ERR_INTERNAL,
              "a window beyond the layout must be refused");
  pair_destroy(&c);
  /* replicate: the whole matrix on every rank; sum_partials: each rank's part summed. */
  qp_matrix whole_work = {0};
  const double *whole = NULL;
  TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "whole", QP_TERM_TRANSIENT, a.cpu.rows, a.cpu.cols,
                           &whole_work));
  TEST_OK(qp_linalg_replicate(&a.dist, &whole_work, &whole));
  TEST_WITHIN(qp_test_max_rel_diff(a.cpu.data, whole, (size_t)(a.cpu.rows * a.cpu.cols)), 0.0,
              "replicate: the whole matrix differs");
  TEST_OK(qp_linalg_replicate(&a.cpu, NULL, &whole));
  TEST_ASSERT(whole == a.cpu.data, "replicate on cpu must hand back the matrix's own buffer");
  qp_matrix_destroy(&whole_work);
  double part = 0, all = 0;
  for (int64_t k = 0; k < qp_matrix_local_size(&a.dist); ++k)
    part += a.dist.data[k] * a.dist.data[k];
  for (int64_t k = 0; k < a.cpu.rows * a.cpu.cols; ++k)
    all += a.cpu.data[k] * a.cpu.data[k];
  TEST_OK(qp_linalg_sum_partials(qp_linalg_dist_ops(), &part, 1));
  TEST_WITHIN(fabs(part - all) / all, 1e-13, "sum_partials: |A|_F^2 over the ranks");
  double alone = 2.5;
  TEST_OK(qp_linalg_sum_partials(qp_linalg_cpu_ops(), &alone, 1));
  TEST_ASSERT(alone == 2.5, "sum_partials on cpu must leave x alone");
  pair_destroy(&a);

  check_condition_estimates();

  /* A singular factorisation is an error on every rank, naming the matrix. */
  pair_create("not SPD", n, n, 0, &a);
  for (int64_t lj = 0; lj < a.dist.local_cols; ++lj)
    for (int64_t li = 0; li < a.dist.local_rows; ++li)
      if (qp_matrix_global_row(&a.dist, li) == qp_matrix_global_col(&a.dist, lj))
        a.dist.data[li + lj * a.dist.ld] = -1.0;
  TEST_FAILS(qp_linalg_potrf(&a.dist), QP_ERR_NOT_POSDEF);
  pair_destroy(&a);

  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "%zu bytes still tracked",
              qp_budget_current(QP_SPACE_HOST));
  return qp_mpi_finish(&grid, "dist linalg", "all operations agree with the cpu backend");
}
