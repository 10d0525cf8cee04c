/* tiled_check.h: what the tests of the tiled algorithms (test_tiled.c, test_tiled_move.c)
 * share: their matrices, the NaN-aware comparison over every rank, and the check that an
 * operation took workspace blocks of exactly its sizes. */
#ifndef QP_TILED_CHECK_H
#define QP_TILED_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "mpi_check.h"
#include "test_util.h"
#include "tiled.h"

enum { SPD, GENERAL, LOWER, PIVOTED };

static inline double entry(int kind, int64_t gi, int64_t gj, int64_t n) {
  const double v = 0.5 * sin(0.37 * (double)(gi + 1) * (double)(gj + 2));
  if (kind == GENERAL) return v;
  /* PIVOTED: a permutation (row i's 1 in column 7 i + 3 mod n) plus GENERAL / n: well
   * conditioned, and partial pivoting interchanges rows at every step */
  if (kind == PIVOTED) return (gj == (7 * gi + 3) % n ? 1.0 : 0.0) + v / (double)n;
  if (kind == SPD) return (gi == gj ? (double)n : 0.0) + 0.5 * sin(0.37 * (double)(gi + gj + 2));
  if (gi == gj) return 2.0 + 0.25 * cos((double)gi); /* LOWER: well conditioned */
  return gi > gj ? v / (double)n : 0.0;
}

/* A matrix of `ops` with entries entry(kind, ...); `nan_upper`: its strict upper triangle NaN
 * (what nothing may read of a triangular operand). */
static inline void make(const qp_linalg_ops *ops, const char *name, int kind, int nan_upper,
                 int64_t rows, int64_t cols, qp_matrix *m) {
  TEST_OK(qp_matrix_create(ops, name, QP_TERM_TRANSIENT, rows, cols, m));
  double *host = malloc((size_t)(m->local_rows * m->local_cols + 1) * sizeof *host);
  for (int64_t lj = 0; lj < m->local_cols; ++lj)
    for (int64_t li = 0; li < m->local_rows; ++li) {
      const int64_t gi = qp_matrix_global_row(m, li), gj = qp_matrix_global_col(m, lj);
      host[li + lj * m->local_rows] =
          nan_upper && gj > gi ? NAN : entry(kind, gi, gj, rows);
    }
  TEST_OK(qp_linalg_upload(host, m->local_rows > 0 ? m->local_rows : 1, m, 0, 0, m->local_rows,
                           m->local_cols));
  free(host);
}

/* Largest |got - ref| over every rank's entries (the lower triangle only when `lower`),
 * relative to the largest |ref|; NaN when any compared entry is. */
static inline double compare(const qp_matrix *ref, const qp_matrix *got, int lower) {
  const int64_t count = ref->local_rows * ref->local_cols;
  double *a = malloc((size_t)(count + 1) * sizeof *a), *b = malloc((size_t)(count + 1) * sizeof *b);
  const int64_t ld = ref->local_rows > 0 ? ref->local_rows : 1;
  TEST_OK(qp_linalg_download(ref, 0, 0, ref->local_rows, ref->local_cols, a, ld));
  TEST_OK(qp_linalg_download(got, 0, 0, got->local_rows, got->local_cols, b, ld));
  double worst[2] = {0, 0}; /* the largest difference, the largest reference */
  for (int64_t lj = 0; lj < ref->local_cols; ++lj)
    for (int64_t li = 0; li < ref->local_rows; ++li) {
      if (lower && qp_matrix_global_col(ref, lj) > qp_matrix_global_row(ref, li)) continue;
      const double x = a[li + lj * ld], y = b[li + lj * ld];
      worst[0] = qp_test_worst(worst[0], isfinite(x) && isfinite(y) ? fabs(x - y) : NAN);
      worst[1] = qp_test_worst(worst[1], isfinite(x) ? fabs(x) : NAN);
    }
  free(a);
  free(b);
  const double diff = qp_mpi_worst(worst[0]), scale = qp_mpi_worst(worst[1]);
  return scale > 0 ? diff / scale : diff;
}

/* |A X - B| / |B| for X of any distributed table (n x k), A = PIVOTED and B = GENERAL made
 * afresh on dist, A X by pdgemm: a check of a solve that shares no code with getrs (dist's
 * getrs is the tiled one). NaN-aware, over every rank. */
static inline double lu_residual(const qp_matrix *x) {
  const qp_linalg_ops *dist = qp_linalg_dist_ops();
  qp_matrix a, b, xd, ax;
  make(dist, "A", PIVOTED, 0, x->rows, x->rows, &a);
  make(dist, "B", GENERAL, 0, x->rows, x->cols, &b);
  TEST_OK(qp_matrix_create(dist, "X", QP_TERM_TRANSIENT, x->rows, x->cols, &xd));
  TEST_OK(qp_matrix_create(dist, "AX", QP_TERM_TRANSIENT, x->rows, x->cols, &ax));
  const int64_t ld = xd.local_rows > 0 ? xd.local_rows : 1;
  double *host = malloc((size_t)(xd.local_rows * xd.local_cols + 1) * sizeof *host);
  TEST_OK(qp_linalg_download(x, 0, 0, x->local_rows, x->local_cols, host, ld));
  TEST_OK(qp_linalg_upload(host, ld, &xd, 0, 0, xd.local_rows, xd.local_cols));
  free(host);
  TEST_OK(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &xd, 0.0, &ax));
  const double r = compare(&b, &ax, 0);
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&xd);
  qp_matrix_destroy(&ax);
  return r;
}

/* Bytes term `term` in `space` has ever allocated (0 before its first block). */
static inline size_t term_total(const char *term, qp_space space) {
  for (int i = 0; i < qp_budget_term_count(); ++i) {
    const qp_term_stats *t = qp_budget_term(i);
    if (t->space == space && strcmp(t->name, term) == 0) return t->total;
  }
  return 0;
}

/* Runs `call` and checks that it took one host and one local-space block of `sizes`. */
#define EXPECT_WORKSPACE(call, sizes, local_space, what)                                        \
  do {                                                                                          \
    const size_t host0_ = term_total(QP_TERM_TILED_HOST, QP_SPACE_HOST);                        \
    const size_t local0_ = term_total(QP_TERM_TILED_PANELS, local_space);                       \
    TEST_OK(call);                                                                              \
    const qp_tiled_sizes s_ = (sizes);                                                          \
    TEST_ASSERT(term_total(QP_TERM_TILED_HOST, QP_SPACE_HOST) - host0_ ==                       \
                        (size_t)qp_tiled_host_doubles(&s_) * 8 &&                               \
                    term_total(QP_TERM_TILED_PANELS, local_space) - local0_ ==                  \
                        (size_t)qp_tiled_local_doubles(&s_) * 8,                                \
                "%s: workspace of %zu host and %zu local bytes, sizes say %lld and %lld", what, \
                term_total(QP_TERM_TILED_HOST, QP_SPACE_HOST) - host0_,                         \
                term_total(QP_TERM_TILED_PANELS, local_space) - local0_,                        \
                (long long)qp_tiled_host_doubles(&s_) * 8,                                      \
                (long long)qp_tiled_local_doubles(&s_) * 8);                                    \
  } while (0)

#endif
