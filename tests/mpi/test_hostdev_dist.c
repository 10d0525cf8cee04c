/* test_hostdev_dist.c: the distributed device emulation (hostdev-dist, tests/support/hostdev.h)
 * against the dist backend on the same block-cyclic matrices: every operation is a tiled
 * algorithm over hostdev's local operations (linalg/tiled/tiled.h: dist's to rounding, test_tiled
 * checks each); its tables (host: dist, local: hostdev); align into a host work matrix of
 * another layout and replicate; and a collective operation whose operand one rank refuses (a
 * view past its block) returning that error on every rank, none left waiting. Run under
 * mpiexec with -n 1, 2, 4; args: grid rows, cols, block size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "host_window.h"
#include "hostdev.h"
#include "matrix.h"
#include "mpi_check.h"
#include "test_util.h"

/* A rows x cols matrix on dist and its twin on hostdev-dist, entries a function of the global
 * position (the same on every rank and backend). */
typedef struct twin {
  qp_matrix dist, dev;
} twin;

static double entry(int64_t gi, int64_t gj, int spd, int64_t n) {
  const double v = sin(0.37 * (double)(gi + 1) * (double)(gj + 2)) * 0.5;
  if (!spd) return v;
  return (gi == gj ? (double)n : 0.0) + 0.5 * sin(0.37 * (double)(gi + gj + 2));
}

static void twin_make(const qp_linalg_ops *dev, const char *name, int64_t rows, int64_t cols,
                      int spd, twin *t) {
  TEST_OK(qp_matrix_create(qp_linalg_dist_ops(), name, QP_TERM_TRANSIENT, rows, cols, &t->dist));
  TEST_OK(qp_matrix_create(dev, name, QP_TERM_TRANSIENT, rows, cols, &t->dev));
  for (int64_t lj = 0; lj < t->dist.local_cols; ++lj)
    for (int64_t li = 0; li < t->dist.local_rows; ++li)
      t->dist.data[li + lj * t->dist.ld] =
          entry(qp_matrix_global_row(&t->dist, li), qp_matrix_global_col(&t->dist, lj), spd, rows);
  qp_host_window w;
  TEST_OK(qp_host_window_open(&t->dev, 0, t->dev.local_cols, QP_ACCESS_WRITE, &w));
  for (int64_t lj = 0; lj < t->dist.local_cols; ++lj)
    memcpy(w.data + lj * w.ld, t->dist.data + lj * t->dist.ld,
           (size_t)t->dist.local_rows * sizeof(double));
  TEST_OK(qp_host_window_close(&w));
}

/* Largest |difference| between the twins' local entries, over every rank (NaN-aware). */
static double twin_diff(const twin *t) {
  qp_host_window w;
  TEST_OK(qp_host_window_read(&t->dev, 0, t->dev.local_cols, &w));
  double worst = 0;
  for (int64_t lj = 0; lj < t->dist.local_cols; ++lj)
    worst = qp_test_worst(worst, qp_test_max_diff(w.data + lj * w.ld, t->dist.data + lj * t->dist.ld,
                                                  (size_t)t->dist.local_rows, 1.0));
  qp_host_window_discard(&w);
  return qp_mpi_worst(worst);
}

static void twin_free(twin *t) {
  qp_matrix_destroy(&t->dist);
  qp_matrix_destroy(&t->dev);
}

int main(int argc, char **argv) {
  qp_grid grid;
  qp_mpi_start(&argc, &argv, &grid);
  const qp_linalg_ops *dev = qp_mpi_hostdev_dist();
  TEST_ASSERT(strcmp(dev->name, "hostdev-dist") == 0 && dev->distributed &&
                  qp_linalg_on_device(dev) && qp_linalg_moves_data(dev) &&
                  qp_linalg_host_ops(dev) == qp_linalg_dist_ops() &&
                  qp_linalg_local_ops(dev) == qp_linalg_hostdev_ops(),
              "hostdev-dist's tables: host dist, local hostdev");
  const int64_t n = 45, k = 19; /* not multiples of the block: ragged edges */

  twin a, b, c;
  twin_make(dev, "A", n, n, 1, &a);
  TEST_OK(qp_linalg_potrf(&a.dist));
  TEST_OK(qp_linalg_potrf(&a.dev));
  /* compared below the diagonal: the tiled potrf leaves the diagonal blocks' upper part
   * updated (tiled.h), which clear_upper then clears on both */
  TEST_OK(qp_linalg_clear_upper(&a.dist));
  TEST_OK(qp_linalg_clear_upper(&a.dev));
  TEST_WITHIN(twin_diff(&a), 1e-13, "potrf: hostdev-dist differs from dist");
  twin_make(dev, "B", n, k, 0, &b);
  TEST_OK(qp_linalg_trsm(QP_LEFT, QP_TRANS, 0.5, &a.dist, &b.dist));
  TEST_OK(qp_linalg_trsm(QP_LEFT, QP_TRANS, 0.5, &a.dev, &b.dev));
  TEST_WITHIN(twin_diff(&b), 1e-13, "trsm");
  twin_make(dev, "C", k, k, 0, &c);
  TEST_OK(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.5, &b.dist, &b.dist, 0.5, &c.dist));
  TEST_OK(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.5, &b.dev, &b.dev, 0.5, &c.dev));
  TEST_WITHIN(twin_diff(&c), 1e-13, "gemm");
  double norm_dist = 0, norm_dev = 0;
  TEST_OK(qp_linalg_norm1(&c.dist, &norm_dist));
  TEST_OK(qp_linalg_norm1(&c.dev, &norm_dev));
  TEST_WITHIN(qp_test_rel_diff(norm_dist, norm_dev), 1e-15,
              "norm1: %.17g on dist, %.17g on hostdev-dist", norm_dist, norm_dev);
  TEST_FAILS(qp_linalg_potri(&a.dev), QP_ERR_UNSUPPORTED); /* as on dist */

  /* align: B's window [3.., 2..] (11 x 9) lined up with [5.., 4..] of a 20 x 17 layout, into
   * a host (dist) work matrix: a redistribution from the devices. */
  twin layout;
  twin_make(dev, "layout", 20, 17, 0, &layout);
  qp_matrix work;
  TEST_OK(qp_matrix_create(qp_linalg_host_ops(dev), "align work", QP_TERM_TRANSIENT, 20, 17,
                           &work));
  qp_aligned on_dist, on_dev;
  TEST_OK(qp_linalg_align(&b.dist, 3, 2, 11, 9, &layout.dist, 5, 4, &layout.dist, &on_dist));
  TEST_OK(qp_linalg_align(&b.dev, 3, 2, 11, 9, &layout.dev, 5, 4, &work, &on_dev));
  double worst = 0;
  for (int64_t lj = 0; lj < work.local_cols; ++lj)
    for (int64_t li = 0; li < work.local_rows; ++li) {
      const int64_t gi = qp_matrix_global_row(&work, li), gj = qp_matrix_global_col(&work, lj);
      if (gi < 5 || gi >= 16 || gj < 4 || gj >= 13) continue;
      worst = qp_test_worst(worst, fabs(qp_aligned_at(&on_dev, li, lj) -
                                        qp_aligned_at(&on_dist, li, lj)));
    }
  TEST_WITHIN(worst, 1e-13, "align: hostdev-dist's window differs from dist's");
  qp_matrix_destroy(&work);
  twin_free(&layout);

  /* replicate: C whole on every rank, from every rank's device tiles. */
  qp_matrix whole_dist, whole_dev;
  TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "whole", QP_TERM_TRANSIENT, k, k, &whole_dist));
  TEST_OK(qp_matrix_create(qp_linalg_cpu_ops(), "whole", QP_TERM_TRANSIENT, k, k, &whole_dev));
  const double *from_dist = NULL, *from_dev = NULL;
  TEST_OK(qp_linalg_replicate(&c.dist, &whole_dist, &from_dist));
  TEST_OK(qp_linalg_replicate(&c.dev, &whole_dev, &from_dev));
  TEST_WITHIN(qp_test_max_rel_diff(from_dist, from_dev, (size_t)(k * k)), 1e-13,
              "replicate: hostdev-dist's whole matrix differs from dist's");
  qp_matrix_destroy(&whole_dist);
  qp_matrix_destroy(&whole_dev);

  /* A collective operation whose operand the last rank refuses (a view one entry past its
   * block there): every rank returns that rank's error, none hangs in the tiled gemm's
   * gathers. */
  const int last = qp_comm_size() - 1;
  qp_matrix stray = c.dev;
  stray.owns = 0;
  if (qp_comm_rank() == last && qp_comm_size() > 1) stray.data += 1;
  const qp_err err = qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &b.dev, &b.dev, 0.0, &stray);
  if (qp_comm_size() > 1) {
    char want[32];
    snprintf(want, sizeof want, "(rank %d)", last);
    TEST_ASSERT(err == QP_ERR_INTERNAL && strstr(qp_error_message(), "hostdev gemm") &&
                    strstr(qp_error_message(), "live hostdev block") &&
                    (qp_comm_rank() == last || strstr(qp_error_message(), want)),
                "a refused operand on rank %d: got %s: %s", last, qp_err_name(err),
                qp_error_message());
    if (qp_comm_rank() == 0) printf("refused on every rank: %s\n", qp_error_message());
    qp_error_clear();
  } else {
    TEST_OK(err);
  }
  /* hostdev's own table handed a block-cyclic matrix (no table does: hostdev-dist's
   * operations are tiled and pass local views) refuses it by name, on every rank alike */
  EXPECT_ERROR(qp_linalg_hostdev_ops()->potrf(&a.dev), QP_ERR_INTERNAL, "hostdev potrf",
               "is block-cyclic");
  twin_free(&a);
  twin_free(&b);
  twin_free(&c);
  qp_linalg_release_workspaces(dev); /* the diagonal blocks' Cholesky workspace */

  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0 && qp_hostdev_mapped_bytes() == 0,
              "%zu device bytes still tracked", qp_budget_current(QP_SPACE_DEVICE));
  return qp_mpi_finish(&grid, "hostdev-dist",
                       "every operation equals dist's (the tiled ones to rounding)");
}
