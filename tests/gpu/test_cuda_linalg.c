/* test_cuda_linalg.c: the cuda backend (linalg/backends/cuda*.c) against the cpu backend, operation
 * by operation, and its device budget (budget/alloc.c's device space, budget/meter_device.c).
 *
 * Every operation of the table runs on the same random inputs on both backends (SPD matrices
 * for the Cholesky family, a row-permuted diagonally dominant one for LU, so that pivoting is
 * exercised and the pivots are unique), and the device results, copied back, must agree with
 * the host ones to 1e-12 relative to the largest entry; syrk and potri must come back exactly
 * symmetric, getrf's pivots equal. The failures: not positive definite (naming the matrix,
 * the minor and the stage), singular LU and triangular factors, a host matrix handed to the
 * cuda table. The budget: the tracked device bytes equal what was asked for, term by term
 * (matrices, the cuBLAS workspace, the largest cuSOLVER workspace query, the pivots, the
 * reduction, the info word), stage records see the device bytes, the device meter sees an
 * allocation, copies are counted, and everything returns to zero at the end.
 *
 * Without a device (or without a driver) it prints why and returns 77, which CTest reports as
 * skipped (SKIP_RETURN_CODE in tests/gpu/CMakeLists.txt); with QP_REQUIRE_GPU=1 in the
 * environment it fails instead, so that on a GPU node a broken driver is not read as a skip. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "cuda_backend.h"
#include "matrix.h"
#include "meter.h"
#include "meter_device.h"
#include "test_util.h"

enum { QP_TEST_SKIP = 77, N = 203, M = 37, NRHS = 5 };
static const double QP_TOLERANCE = 1e-12;

#define AT(m, i, j) ((m)->data[(i) + (int64_t)(j) * (m)->ld])

static const qp_linalg_ops *cpu;
static size_t solver_max, host_solver_max; /* the largest cuSOLVER workspace queried so far */
static int64_t pivots_max, reduction_max;  /* the largest n given to getrf/getrs, trace + 1 */

/* A fixed linear congruential generator (Knuth's MMIX constants): values in [-1, 1). */
static uint64_t lcg_state = 20240611;
static double lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(lcg_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void die_on(qp_err err, const char *what) {
  if (err == QP_OK) return;
  fprintf(stderr, "test_cuda_linalg: %s failed\n", what);
  qp_error_print(stderr, 1);
  exit(1);
}

static qp_matrix host(const char *term, int64_t rows, int64_t cols) {
  qp_matrix m;
  die_on(qp_matrix_create(cpu, term, QP_TERM_TRANSIENT, rows, cols, &m), term);
  return m;
}

static void fill_random(qp_matrix *m) {
  for (int64_t j = 0; j < m->cols; ++j)
    for (int64_t i = 0; i < m->rows; ++i)
      AT(m, i, j) = lcg();
}

static qp_matrix host_random(const char *term, int64_t rows, int64_t cols) {
  qp_matrix m = host(term, rows, cols);
  fill_random(&m);
  return m;
}

static qp_matrix host_copy(const char *term, const qp_matrix *src) {
  qp_matrix m = host(term, src->rows, src->cols);
  for (int64_t j = 0; j < src->cols; ++j)
    for (int64_t i = 0; i < src->rows; ++i)
      AT(&m, i, j) = AT(src, i, j);
  return m;
}

/* A device copy of a host matrix. */
static qp_matrix upload(const char *term, const qp_matrix *h) {
  qp_matrix d;
  die_on(qp_cuda_matrix_upload(h, term, QP_TERM_TRANSIENT, &d), term);
  return d;
}

/* The pinned staging is taken when the first stage holds the backend's terms (the table's
 * hold_workspace), not at init: host memory tracked by exactly its bytes, and resident at once
 * (the model counts it from that stage; on an H200 node cudaHostRegister made it resident at
 * init, before the run's baseline, and validate failed). Then a copy of more than one half
 * goes through it both ways, bitwise. */
static void test_pinned_hold(const qp_linalg_ops *gpu) {
  const size_t host0 = qp_budget_current(QP_SPACE_HOST);
  qp_meter_sample before, after;
  qp_meter_read(&before);
  TEST_OK(qp_linalg_hold_workspace(gpu, QP_TERM_PINNED_STAGING, QP_PINNED_STAGING_BYTES));
  qp_meter_read(&after);
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) - host0 == QP_PINNED_STAGING_BYTES,
              "holding the pinned staging tracked %zu host bytes, expected %zu",
              qp_budget_current(QP_SPACE_HOST) - host0, (size_t)QP_PINNED_STAGING_BYTES);
  TEST_ASSERT(before.rss >= 0 && after.rss - before.rss >= (int64_t)QP_PINNED_STAGING_BYTES,
              "the pinned staging is not resident once held: RSS rose %lld bytes, expected %zu",
              (long long)(after.rss - before.rss), (size_t)QP_PINNED_STAGING_BYTES);
  TEST_OK(qp_linalg_hold_workspace(gpu, QP_TERM_PINNED_STAGING, QP_PINNED_STAGING_BYTES));
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) - host0 == QP_PINNED_STAGING_BYTES,
              "holding the pinned staging twice took it twice");
  /* 1200 x 1000 doubles: 9.6 MB, more than one half (8 MiB), in pieces of whole columns */
  qp_matrix h = host_random("pinned_source", 1200, 1000), d = upload("pinned_device", &h);
  qp_matrix back = host("pinned_back", 1200, 1000);
  TEST_OK(qp_linalg_download(&d, 0, 0, 1200, 1000, back.data, back.ld));
  int same = 1;
  for (int64_t j = 0; j < h.cols; ++j)
    for (int64_t i = 0; i < h.rows; ++i)
      same = same && AT(&back, i, j) == AT(&h, i, j);
  TEST_ASSERT(same, "a round trip through the pinned staging changed the matrix");
  qp_matrix_destroy(&back);
  qp_matrix_destroy(&d);
  qp_matrix_destroy(&h);
}

/* max |got - ref| / max |ref| (lower: over the lower triangle only). The maxima go through
 * qp_test_worst (test_util.h), so a NaN stays; an infinity makes the difference infinite, or
 * NaN (inf / inf, inf - inf): either way the result fails qp_test_within. */
static double rel_diff(const qp_matrix *got, const qp_matrix *ref, int lower) {
  double diff = 0.0, scale = 0.0;
  for (int64_t j = 0; j < ref->cols; ++j)
    for (int64_t i = lower ? j : 0; i < ref->rows; ++i) {
      diff = qp_test_worst(diff, fabs(AT(got, i, j) - AT(ref, i, j)));
      scale = qp_test_worst(scale, fabs(AT(ref, i, j)));
    }
  return scale > 0 ? diff / scale : diff;
}

static int is_symmetric(const qp_matrix *m) {
  for (int64_t j = 0; j < m->cols; ++j)
    for (int64_t i = 0; i < j; ++i)
      if (AT(m, i, j) != AT(m, j, i)) return 0;
  return 1;
}

/* Copies the device matrix back and compares it with the host result; returns the copy's
 * symmetry (for the operations that promise it). */
static int expect_close(const qp_matrix *dev, const qp_matrix *ref, int lower, const char *what) {
  qp_matrix got = host("fetched", dev->rows, dev->cols);
  die_on(qp_cuda_matrix_copy(dev, &got), "download");
  double e = rel_diff(&got, ref, lower);
  TEST_WITHIN(e, QP_TOLERANCE, "%s: cuda and cpu differ (relative)", what);
  fprintf(stderr, "  %-34s relative difference %.3g\n", what, e);
  int symmetric = is_symmetric(&got);
  qp_matrix_destroy(&got);
  return symmetric;
}

/* Notes the workspace an operation of order n asks for, as the backend will hold it. */
static void note_solver(qp_cuda_solver_op op, int64_t n) {
  size_t device_bytes = 0, host_bytes = 0;
  die_on(qp_cuda_solver_workspace(op, n, &device_bytes, &host_bytes), "workspace query");
  /* The table's answer, which the memory model predicts from (matrix.h), is the same query. */
  static const qp_linalg_op table_op[] = {QP_OP_POTRF, QP_OP_POTRI, QP_OP_TRTRI, QP_OP_GETRF};
  qp_workspace w[QP_WORKSPACES_MAX];
  int count = 0;
  die_on(qp_linalg_workspaces(qp_linalg_cuda_ops(), table_op[op], n, 0, w, &count),
         "the table's workspaces");
  TEST_ASSERT(count >= 2 && w[0].bytes == device_bytes && w[1].bytes == host_bytes,
              "the table's workspaces of operation %d at order %lld differ from the query", (int)op,
              (long long)n);
  if (device_bytes > solver_max) solver_max = device_bytes;
  if (host_bytes > host_solver_max) host_solver_max = host_bytes;
}

static size_t term_bytes(const char *name, qp_space space) {
  for (int i = 0; i < qp_budget_term_count(); ++i) {
    const qp_term_stats *t = qp_budget_term(i);
    if (t->space == space && strcmp(t->name, name) == 0) return t->current;
  }
  return 0;
}

/* A = B B^T + n I. */
static qp_matrix host_spd(const char *term) {
  qp_matrix b = host_random("spd_factor", N, N), a = host(term, N, N);
  for (int64_t i = 0; i < N; ++i)
    AT(&a, i, i) = (double)N;
  die_on(qp_linalg_gemm(QP_NOTRANS, QP_TRANS, 1.0, &b, &b, 1.0, &a), "B B^T");
  qp_matrix_destroy(&b);
  return a;
}

/* potrf, potrs, potri, trtri on both backends; *l_host gets the cpu factor, *l_dev the cuda
 * one (for the triangular tests). */
static void test_cholesky(qp_matrix *l_host, qp_matrix *l_dev) {
  qp_matrix a = host_spd("spd");
  qp_matrix l = host_copy("L", &a), dl = upload("L", &a);
  TEST_OK(qp_linalg_potrf(&l));
  note_solver(QP_CUDA_POTRF, N);
  TEST_OK(qp_linalg_potrf(&dl));
  expect_close(&dl, &l, 1, "potrf (lower factor)");

  qp_matrix b = host_random("rhs", N, NRHS), db = upload("rhs", &b);
  TEST_OK(qp_linalg_potrs(&l, &b));
  TEST_OK(qp_linalg_potrs(&dl, &db));
  expect_close(&db, &b, 0, "potrs");

  qp_matrix inv = host_copy("A_inverse", &l), dinv = upload("A_inverse", &l);
  TEST_OK(qp_linalg_potri(&inv));
  note_solver(QP_CUDA_POTRI, N);
  TEST_OK(qp_linalg_potri(&dinv));
  TEST_ASSERT(expect_close(&dinv, &inv, 0, "potri (full inverse)"),
              "potri: the device inverse is not exactly symmetric");

  qp_matrix linv = host_copy("L_inverse", &l), dlinv = upload("L_inverse", &l);
  TEST_OK(qp_linalg_trtri(&linv));
  note_solver(QP_CUDA_TRTRI, N);
  TEST_OK(qp_linalg_trtri(&dlinv));
  expect_close(&dlinv, &linv, 1, "trtri (lower)");

  qp_matrix *all[] = {&a, &b, &db, &inv, &dinv, &linv, &dlinv};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    qp_matrix_destroy(all[k]);
  *l_host = l;
  *l_dev = dl;
}

static void test_triangular(const qp_matrix *l, const qp_matrix *dl) {
  const double alpha = 0.75;
  char what[64];
  for (int solve = 0; solve <= 1; ++solve)
    for (int side = 0; side <= 1; ++side)
      for (int trans = 0; trans <= 1; ++trans) {
        int64_t rows = side == QP_LEFT ? N : M, cols = side == QP_LEFT ? M : N;
        qp_matrix b = host_random("tri_b", rows, cols), db = upload("tri_b", &b);
        if (solve) {
          TEST_OK(qp_linalg_trsm((qp_side)side, (qp_trans)trans, alpha, l, &b));
          TEST_OK(qp_linalg_trsm((qp_side)side, (qp_trans)trans, alpha, dl, &db));
        } else {
          TEST_OK(qp_linalg_trmm((qp_side)side, (qp_trans)trans, alpha, l, &b));
          TEST_OK(qp_linalg_trmm((qp_side)side, (qp_trans)trans, alpha, dl, &db));
        }
        snprintf(what, sizeof what, "%s side %d trans %d", solve ? "trsm" : "trmm", side, trans);
        expect_close(&db, &b, 0, what);
        qp_matrix_destroy(&b);
        qp_matrix_destroy(&db);
      }
}

static void test_gemm_syrk(void) {
  enum { GM = 131, GK = 77, GN = 95 };
  char what[64];
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      qp_matrix a = host_random("gemm_a", ta ? GK : GM, ta ? GM : GK);
      qp_matrix b = host_random("gemm_b", tb ? GN : GK, tb ? GK : GN);
      qp_matrix c = host_random("gemm_c", GM, GN);
      qp_matrix da = upload("gemm_a", &a), dbm = upload("gemm_b", &b), dc = upload("gemm_c", &c);
      TEST_OK(qp_linalg_gemm((qp_trans)ta, (qp_trans)tb, 1.25, &a, &b, -0.5, &c));
      TEST_OK(qp_linalg_gemm((qp_trans)ta, (qp_trans)tb, 1.25, &da, &dbm, -0.5, &dc));
      snprintf(what, sizeof what, "gemm ta %d tb %d", ta, tb);
      expect_close(&dc, &c, 0, what);
      qp_matrix *all[] = {&a, &b, &c, &da, &dbm, &dc};
      for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
        qp_matrix_destroy(all[k]);
    }
  for (int trans = 0; trans <= 1; ++trans) {
    qp_matrix a = host_random("syrk_a", trans ? GK : N, trans ? N : GK);
    qp_matrix c = host_random("syrk_c", N, N);
    qp_matrix_symmetrize_lower(&c);
    qp_matrix da = upload("syrk_a", &a), dc = upload("syrk_c", &c);
    TEST_OK(qp_linalg_syrk((qp_trans)trans, 0.6, &a, 2.0, &c));
    TEST_OK(qp_linalg_syrk((qp_trans)trans, 0.6, &da, 2.0, &dc));
    snprintf(what, sizeof what, "syrk trans %d (full)", trans);
    TEST_ASSERT(expect_close(&dc, &c, 0, what), "syrk trans %d: device result not symmetric",
                trans);
    qp_matrix *all[] = {&a, &c, &da, &dc};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
      qp_matrix_destroy(all[k]);
  }
}

/* P (R + n I) with a random row permutation P: partial pivoting must undo P, and each pivot is
 * the one entry of size ~n in its column, so both backends choose the same ones. */
static void test_lu(void) {
  qp_matrix g = host_random("lu_source", N, N), a = host("lu", N, N);
  for (int64_t i = 0; i < N; ++i)
    AT(&g, i, i) += (double)N;
  int64_t perm[N];
  for (int64_t i = 0; i < N; ++i)
    perm[i] = i;
  for (int64_t i = N - 1; i > 0; --i) {
    int64_t k = (int64_t)((lcg() + 1.0) * 0.5 * (double)(i + 1)) % (i + 1), t = perm[i];
    perm[i] = perm[k];
    perm[k] = t;
  }
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < N; ++i)
      AT(&a, perm[i], j) = AT(&g, i, j);
  qp_matrix da = upload("lu", &a);
  int piv_host[N], piv_dev[N];
  double anorm = 0, anorm_dev = 0;
  TEST_OK(qp_linalg_norm1(&a, &anorm));
  TEST_OK(qp_linalg_norm1(&da, &anorm_dev));
  TEST_WITHIN(qp_test_rel_diff(anorm_dev, anorm), QP_TOLERANCE, "norm1: cuda %.17g, cpu %.17g",
              anorm_dev, anorm);
  TEST_OK(qp_linalg_getrf(&a, piv_host));
  note_solver(QP_CUDA_GETRF, N);
  pivots_max = N;
  TEST_OK(qp_linalg_getrf(&da, piv_dev));
  expect_close(&da, &a, 0, "getrf (L and U)");
  int same = 1, swaps = 0;
  for (int64_t i = 0; i < N; ++i) {
    same = same && piv_host[i] == piv_dev[i];
    swaps += piv_host[i] != i + 1;
  }
  TEST_ASSERT(same, "getrf: the cuda pivots differ from the cpu ones");
  TEST_ASSERT(swaps > N / 2, "getrf: only %d row swaps; the test matrix should need many", swaps);
  double rcond = 0, rcond_dev = 0;
  TEST_OK(qp_linalg_gecon(&a, anorm, &rcond));
  TEST_OK(qp_linalg_gecon(&da, anorm, &rcond_dev));
  TEST_WITHIN(qp_test_rel_diff(rcond_dev, rcond), QP_TOLERANCE, "gecon: cuda %.17g, cpu %.17g",
              rcond_dev, rcond);
  fprintf(stderr, "  %-34s cuda %.6g, cpu %.6g\n", "gecon (rcond)", rcond_dev, rcond);

  qp_matrix b = host_random("lu_rhs", N, NRHS), db = upload("lu_rhs", &b);
  TEST_OK(qp_linalg_getrs(&a, piv_host, &b));
  TEST_OK(qp_linalg_getrs(&da, piv_dev, &db));
  expect_close(&db, &b, 0, "getrs");
  qp_matrix *all[] = {&g, &a, &da, &b, &db};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    qp_matrix_destroy(all[k]);
}

static void test_trace(void) {
  qp_matrix a = host_random("trace_a", N, M), b = host_random("trace_b", M, N);
  qp_matrix da = upload("trace_a", &a), db = upload("trace_b", &b);
  double ref = 0, got = 0;
  TEST_OK(qp_linalg_trace_product(&a, &b, &ref));
  TEST_OK(qp_linalg_trace_product(&da, &db, &got));
  TEST_WITHIN(qp_test_rel_diff(got, ref), QP_TOLERANCE, "tr(A B): cuda %.17g, cpu %.17g", got, ref);
  TEST_OK(qp_linalg_trace_product(&b, &a, &ref));
  TEST_OK(qp_linalg_trace_product(&db, &da, &got));
  TEST_WITHIN(qp_test_rel_diff(got, ref), QP_TOLERANCE, "tr(B A): cuda %.17g, cpu %.17g", got, ref);
  reduction_max = N + 1; /* the columns of B, plus the total */
  fprintf(stderr, "  %-34s relative difference %.3g\n", "trace_product",
          qp_test_rel_diff(got, ref));
  qp_matrix *all[] = {&a, &b, &da, &db};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    qp_matrix_destroy(all[k]);
}

/* The table's host <-> device blocks (download, upload), copy_sub and transpose move entries
 * without arithmetic: exact. norm1 and pocon against the cpu backend; a NaN reaches the norm. */
static void test_moves_and_estimates(const qp_matrix *l, const qp_matrix *dl) {
  qp_matrix h = host_random("moves", M, N), d = upload("moves", &h);
  uint64_t to_device0, to_host0, to_device1, to_host1;
  qp_cuda_transfer_bytes(&to_device0, &to_host0);
  enum { LI = 3, LJ = 5, R = 20, C = 30, LD = 25 };
  double block[LD * C];
  TEST_OK(qp_linalg_download(&d, LI, LJ, R, C, block, LD));
  int same = 1;
  for (int j = 0; j < C; ++j)
    for (int i = 0; i < R; ++i)
      same = same && block[i + j * LD] == AT(&h, LI + i, LJ + j);
  TEST_ASSERT(same, "download: the block differs from the host matrix");
  for (int j = 0; j < C; ++j)
    for (int i = 0; i < R; ++i)
      block[i + j * LD] = -1000.0 - i - 100.0 * j;
  TEST_OK(qp_linalg_upload(block, LD, &d, 1, 2, R, C));
  for (int j = 0; j < C; ++j)
    for (int i = 0; i < R; ++i)
      AT(&h, 1 + i, 2 + j) = block[i + j * LD];
  qp_cuda_transfer_bytes(&to_device1, &to_host1);
  const uint64_t block_bytes = (uint64_t)R * C * sizeof(double);
  TEST_ASSERT(to_device1 - to_device0 == block_bytes && to_host1 - to_host0 == block_bytes,
              "blocks counted %llu up and %llu down, expected %llu each",
              (unsigned long long)(to_device1 - to_device0),
              (unsigned long long)(to_host1 - to_host0), (unsigned long long)block_bytes);
  expect_close(&d, &h, 0, "upload of a block");
  TEST_ASSERT(qp_linalg_host_ops(d.ops) == cpu && qp_linalg_on_device(d.ops),
              "the cuda table's host table or space is wrong");

  qp_matrix hs = host("sub", N, M), ds = upload("sub", &hs);
  TEST_OK(qp_linalg_copy_sub(R, C / 2, &h, 4, 7, &hs, 9, 2));
  TEST_OK(qp_linalg_copy_sub(R, C / 2, &d, 4, 7, &ds, 9, 2));
  expect_close(&ds, &hs, 0, "copy_sub");

  qp_matrix ht = host("transposed", N, M), dt = upload("transposed", &ht);
  TEST_OK(qp_linalg_transpose(&h, &ht));
  TEST_OK(qp_linalg_transpose(&d, &dt));
  expect_close(&dt, &ht, 0, "transpose");

  qp_matrix hu = host("cleared", N, N), du = upload("cleared", &hu);
  TEST_OK(qp_matrix_clear_upper_local(&hu));
  TEST_OK(qp_linalg_clear_upper(&du));
  expect_close(&du, &hu, 0, "clear_upper");

  /* scale: rows and columns by runs of factors (the guards' powers of 2), then rows alone */
  const qp_run_scale runs = {.runs = 2, .end = {20, N}, .factor = {0.5, 4.0}};
  TEST_OK(qp_linalg_scale(&h, &runs, &runs));
  TEST_OK(qp_linalg_scale(&d, &runs, &runs));
  TEST_OK(qp_linalg_scale(&h, &runs, NULL));
  TEST_OK(qp_linalg_scale(&d, &runs, NULL));
  expect_close(&d, &h, 0, "scale (rows and columns, rows)");

  double norm = 0, norm_dev = 0;
  TEST_OK(qp_linalg_norm1(&h, &norm));
  TEST_OK(qp_linalg_norm1(&d, &norm_dev));
  TEST_WITHIN(qp_test_rel_diff(norm_dev, norm), QP_TOLERANCE, "norm1: cuda %.17g, cpu %.17g",
              norm_dev, norm);
  const double nan = NAN;
  TEST_OK(qp_linalg_upload(&nan, 1, &d, M - 1, N - 1, 1, 1));
  TEST_OK(qp_linalg_norm1(&d, &norm_dev));
  TEST_ASSERT(isnan(norm_dev), "norm1 of a matrix with a NaN: %g, expected NaN", norm_dev);

  /* pocon with the Cholesky factor of test_cholesky's A (anorm: any positive value serves
   * the comparison; the same on both). */
  double rcond = 0, rcond_dev = 0;
  TEST_OK(qp_linalg_pocon(l, 3.0 * N, &rcond));
  TEST_OK(qp_linalg_pocon(dl, 3.0 * N, &rcond_dev));
  TEST_WITHIN(qp_test_rel_diff(rcond_dev, rcond), QP_TOLERANCE, "pocon: cuda %.17g, cpu %.17g",
              rcond_dev, rcond);
  fprintf(stderr, "  %-34s cuda %.6g, cpu %.6g\n", "pocon (rcond)", rcond_dev, rcond);
  TEST_OK(qp_linalg_pocon(dl, 0.0, &rcond_dev));
  TEST_ASSERT(rcond_dev == 0.0, "pocon with anorm 0: %g, expected 0", rcond_dev);
  qp_matrix *all[] = {&h, &d, &hs, &ds, &ht, &dt, &hu, &du};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    qp_matrix_destroy(all[k]);
}

static void test_errors(void) {
  qp_matrix h = host("not_posdef", 3, 3);
  AT(&h, 0, 0) = 1.0;
  AT(&h, 1, 1) = -1.0;
  AT(&h, 2, 2) = 1.0;
  qp_matrix d = upload("gpu_not_posdef", &h);
  note_solver(QP_CUDA_POTRF, 3);
  TEST_OK(qp_stage_push("gpu_unit_stage"));
  EXPECT_ERROR(qp_linalg_potrf(&d), QP_ERR_NOT_POSDEF, "gpu_not_posdef", "order 2",
               "gpu_unit_stage");
  TEST_OK(qp_stage_pop());
  qp_matrix_destroy(&d);

  /* A zero matrix: U(1,1) = 0; a zero triangular factor: singular at row 1. */
  qp_matrix z = host("zero", 3, 3), dz = upload("gpu_singular", &z);
  note_solver(QP_CUDA_GETRF, 3);
  int piv[3];
  EXPECT_ERROR(qp_linalg_getrf(&dz, piv), QP_ERR_NOT_POSDEF, "gpu_singular", "singular");
  qp_matrix_destroy(&dz);
  dz = upload("gpu_singular_factor", &z);
  note_solver(QP_CUDA_TRTRI, 3);
  EXPECT_ERROR(qp_linalg_trtri(&dz), QP_ERR_NOT_POSDEF, "gpu_singular_factor", "row 1");
  qp_matrix_destroy(&dz);

  /* A host buffer behind the cuda table is refused before any library sees it. */
  /* (A handle whose space says host: the table's own views and matrices say device.) */
  qp_matrix wrong = h;
  wrong.owns = 0;
  wrong.ops = qp_linalg_cuda_ops();
  snprintf(wrong.name, sizeof wrong.name, "host_behind_cuda");
  EXPECT_ERROR(qp_linalg_potrf(&wrong), QP_ERR_INTERNAL, "host_behind_cuda", "host memory");
  qp_matrix_destroy(&h);
  qp_matrix_destroy(&z);
}

/* A stage sees device bytes like host ones; the meter sees the allocation; copies count. */
static void test_budget_stage_meter(void) {
  const int64_t rows = 4096, cols = 2048; /* 64 MiB */
  const size_t bytes = (size_t)rows * (size_t)cols * sizeof(double);
  size_t start = qp_budget_current(QP_SPACE_DEVICE);
  qp_device_sample before, after;
  qp_meter_device_read(&before);
  TEST_ASSERT(before.used >= 0 && before.total > 0, "device meter: used %lld, total %lld",
              (long long)before.used, (long long)before.total);
  TEST_OK(qp_stage_push("gpu_budget_stage"));
  qp_matrix big;
  TEST_OK(qp_cuda_matrix_create("gpu_big", QP_TERM_TRANSIENT, rows, cols, &big));
  qp_meter_device_read(&after);
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == start + bytes,
              "device current %zu, "
              "expected %zu",
              qp_budget_current(QP_SPACE_DEVICE), start + bytes);
  int64_t delta = after.used - before.used;
  fprintf(stderr, "  device meter: %s, %lld bytes above the baseline, +%lld for %zu tracked\n",
          qp_meter_device_name(), (long long)after.used, (long long)delta, bytes);
  /* The driver rounds allocations up (2 MiB pages); nothing else runs on the device. */
  TEST_ASSERT(delta >= (int64_t)bytes && delta <= (int64_t)bytes + (16 << 20),
              "device meter rose by %lld for a %zu-byte matrix", (long long)delta, bytes);
  qp_matrix_destroy(&big);
  TEST_OK(qp_stage_pop());
  const qp_stage_record *r = qp_stage_record_find("gpu_budget_stage");
  TEST_ASSERT(r != NULL, "no record of gpu_budget_stage");
  if (r) {
    TEST_ASSERT(r->device_tracked_at_start == start && r->device_tracked_at_end == start &&
                    r->device_tracked_peak == start + bytes,
                "stage device bytes %zu / %zu / %zu, expected %zu / %zu / %zu",
                r->device_tracked_at_start, r->device_tracked_peak, r->device_tracked_at_end, start,
                start + bytes, start);
    TEST_ASSERT(r->meter_start.device_used >= 0 && r->meter_end.device_used >= 0,
                "stage meters lack the device: %lld, %lld", (long long)r->meter_start.device_used,
                (long long)r->meter_end.device_used);
    int found = 0;
    for (int i = 0; i < r->n_terms; ++i)
      if (strcmp(r->terms[i].name, "gpu_big") == 0 && r->terms[i].space == QP_SPACE_DEVICE) {
        found = 1;
        TEST_ASSERT(r->terms[i].peak == bytes && r->terms[i].at_end == 0,
                    "stage term gpu_big: peak %zu, end %zu", r->terms[i].peak, r->terms[i].at_end);
      }
    TEST_ASSERT(found, "the stage record lacks the device term gpu_big");
  }

  uint64_t to_device0, to_host0, to_device1, to_host1;
  qp_cuda_transfer_bytes(&to_device0, &to_host0);
  qp_matrix h = host_random("copy_source", 100, 7), d = upload("copy_target", &h);
  TEST_OK(qp_cuda_matrix_copy(&d, &h));
  qp_cuda_transfer_bytes(&to_device1, &to_host1);
  TEST_ASSERT(to_device1 - to_device0 == 5600 && to_host1 - to_host0 == 5600,
              "copies counted %llu to the device and %llu to the host, expected 5600 each",
              (unsigned long long)(to_device1 - to_device0),
              (unsigned long long)(to_host1 - to_host0));
  qp_matrix_destroy(&h);
  qp_matrix_destroy(&d);
}

/* What the context holds now must be exactly what the operations asked for. */
static void check_context_terms(const qp_cuda_device_info *info, size_t matrices) {
  struct {
    const char *term;
    qp_space space;
    size_t expected;
  } want[] = {
      {QP_TERM_CUBLAS_WORKSPACE, QP_SPACE_DEVICE, info->cublas_workspace},
      {QP_TERM_CUSOLVER_INFO, QP_SPACE_DEVICE, sizeof(int)},
      {QP_TERM_CUSOLVER_WORKSPACE, QP_SPACE_DEVICE, solver_max},
      {QP_TERM_CUSOLVER_HOST_WORKSPACE, QP_SPACE_HOST, host_solver_max},
      {QP_TERM_DEVICE_PIVOTS, QP_SPACE_DEVICE, (size_t)pivots_max * sizeof(int64_t)},
      {QP_TERM_DEVICE_REDUCTION, QP_SPACE_DEVICE, (size_t)reduction_max * sizeof(double)},
  };
  size_t device_total = matrices;
  for (size_t k = 0; k < sizeof want / sizeof want[0]; ++k) {
    size_t got = term_bytes(want[k].term, want[k].space);
    TEST_ASSERT(got == want[k].expected, "term '%s' (%s): %zu bytes tracked, %zu asked for",
                want[k].term, qp_space_name(want[k].space), got, want[k].expected);
    fprintf(stderr, "  %-26s %12zu bytes (%s)\n", want[k].term, got, qp_space_name(want[k].space));
    if (want[k].space == QP_SPACE_DEVICE) device_total += want[k].expected;
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == device_total,
              "%zu device bytes tracked, %zu expected", qp_budget_current(QP_SPACE_DEVICE),
              device_total);
}

int main(void) {
  cpu = qp_linalg_cpu_ops();
  const qp_linalg_ops *gpu = NULL;
  qp_err err = qp_linalg_backend("cuda", &gpu);
  if (err == QP_ERR_UNSUPPORTED) {
    /* On a GPU node a broken driver must not read as "skipped" (docs/gpu.md). */
    const char *require = getenv("QP_REQUIRE_GPU");
    if (require && strcmp(require, "1") == 0) {
      fprintf(stderr,
              "test_cuda_linalg: FAILED: QP_REQUIRE_GPU=1 and the cuda backend cannot "
              "start: %s\n",
              qp_error_message());
      return 1;
    }
    printf("test_cuda_linalg: skipped: %s\n", qp_error_message());
    return QP_TEST_SKIP;
  }
  die_on(err, "qp_linalg_backend(\"cuda\")");
  qp_cuda_device_info info;
  die_on(qp_cuda_device_get(&info), "qp_cuda_device_get");
  printf("test_cuda_linalg: device %d: %s (sm_%d%d, %.1f GiB), cuBLAS workspace %zu bytes, "
         "synchronise after every call: %s\n",
         info.device, info.name, info.cc_major, info.cc_minor,
         (double)info.total_bytes / 1073741824.0, info.cublas_workspace,
         qp_cuda_sync_checking() ? "yes (debug)" : "no (release)");
  TEST_ASSERT(gpu == qp_linalg_cuda_ops() && strcmp(gpu->name, "cuda") == 0, "lookup gave %p",
              (const void *)gpu);
  {
    qp_workspace w[QP_WORKSPACES_MAX];
    int count = 0;
    die_on(qp_linalg_workspaces(gpu, QP_OP_INIT, 1, 0, w, &count), "the table's workspaces");
    TEST_ASSERT(count == 3 && w[0].bytes == info.cublas_workspace && w[1].bytes == sizeof(int) &&
                    w[2].space == QP_SPACE_HOST && w[2].bytes == QP_PINNED_STAGING_BYTES,
                "the table's start-up buffers differ from what init holds (%d of them)", count);
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == info.cublas_workspace + sizeof(int),
              "after init %zu device bytes, expected the cuBLAS workspace and the info word",
              qp_budget_current(QP_SPACE_DEVICE));

  test_pinned_hold(gpu);
  qp_matrix l, dl;
  test_cholesky(&l, &dl);
  test_triangular(&l, &dl);
  test_moves_and_estimates(&l, &dl);
  test_gemm_syrk();
  test_lu();
  test_trace();
  test_errors();
  check_context_terms(&info, (size_t)dl.rows * (size_t)dl.cols * sizeof(double));
  test_budget_stage_meter();
  qp_matrix_destroy(&l);
  qp_matrix_destroy(&dl);

  qp_cuda_release_workspaces();
  {
    qp_workspace w[QP_WORKSPACES_MAX];
    int count = 0;
    die_on(qp_linalg_workspaces(gpu, QP_OP_INIT, 1, 0, w, &count), "the table's workspaces");
    TEST_ASSERT(count == 3 && w[0].bytes == info.cublas_workspace && w[1].bytes == sizeof(int) &&
                    w[2].space == QP_SPACE_HOST && w[2].bytes == QP_PINNED_STAGING_BYTES,
                "the table's start-up buffers differ from what init holds (%d of them)", count);
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == info.cublas_workspace + sizeof(int),
              "after releasing the workspaces %zu device bytes remain",
              qp_budget_current(QP_SPACE_DEVICE));
  qp_cuda_finalize();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0 && qp_budget_current(QP_SPACE_HOST) == 0,
              "after finalize: %zu device and %zu host bytes still live",
              qp_budget_current(QP_SPACE_DEVICE), qp_budget_current(QP_SPACE_HOST));
  if (qp_budget_dump_live(stderr) != 0) ++qp_test_failures;
  TEST_ASSERT(qp_linalg_cuda_ops() == NULL, "the table outlived the context");
  if (qp_test_failures == 0) printf("test_cuda_linalg: all checks passed\n");
  return TEST_RETURN();
}
