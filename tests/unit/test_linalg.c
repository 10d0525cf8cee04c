/* test_linalg.c: the linear algebra layer through its public qp_linalg_* calls with the cpu
 * backend (linalg/matrix.c, linalg/backends/cpu.c).
 *
 * Backend lookup; Cholesky (potrf) with a solve (potrs), the inverse (potri, mirrored full)
 * and the triangular inverse (trtri); trmm, trsm, gemm and syrk against naive loops in every
 * side and transposition; trace_product; the errors: a matrix that is not positive definite
 * (naming the matrix, the failing minor and the stage), shapes that do not agree, a leading
 * dimension beyond the 32-bit BLAS integer; the flops a stage is charged; no bytes left. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "matrix.h"
#include "qp_config.h"
#include "test_util.h"
#if QP_HAVE_CUDA
#include "cuda_backend.h"
#endif

enum { N = 50 };

#define AT(m, i, j) ((m)->data[(i) + (int64_t)(j) * (m)->ld])

static const qp_linalg_ops *ops;

/* A fixed linear congruential generator (Knuth's MMIX constants): values in [-1, 1). */
static uint64_t lcg_state = 12345;
static double lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(lcg_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void fill_random(qp_matrix *m) {
  for (int64_t j = 0; j < m->cols; ++j)
    for (int64_t i = 0; i < m->rows; ++i)
      AT(m, i, j) = lcg();
}

static void copy_matrix(const qp_matrix *src, qp_matrix *dst) {
  for (int64_t j = 0; j < src->cols; ++j)
    for (int64_t i = 0; i < src->rows; ++i)
      AT(dst, i, j) = AT(src, i, j);
}

static qp_matrix make(const char *term, int64_t rows, int64_t cols) {
  qp_matrix m;
  qp_err err = qp_matrix_create(ops, term, QP_TERM_TRANSIENT, rows, cols, &m);
  if (err != QP_OK) {
    qp_error_print(stderr, 1);
    exit(1);
  }
  return m;
}

/* op(X)_ij for X stored column-major; `lower`: entries above the diagonal read as zero. */
static double op_at(const qp_matrix *x, int trans, int lower, int64_t i, int64_t j) {
  int64_t r = trans ? j : i, c = trans ? i : j;
  if (lower && c > r) return 0.0;
  return AT(x, r, c);
}

/* max |got - ref| / max |ref| over a rows x cols block. The maxima go through qp_test_worst
 * (test_util.h), so a NaN stays; an infinity makes the difference infinite, or NaN (inf / inf,
 * inf - inf): either way the result fails qp_test_within. */
static double rel_error(const qp_matrix *got, const double *ref, int64_t rows, int64_t cols) {
  double diff = 0.0, scale = 0.0;
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      diff = qp_test_worst(diff, fabs(AT(got, i, j) - ref[i + j * rows]));
      scale = qp_test_worst(scale, fabs(ref[i + j * rows]));
    }
  return scale > 0 ? diff / scale : diff;
}

/* max |X Y - I| with X, Y n x n (`lower`: both read as lower triangular); NaN when a product
 * is NaN. */
static double identity_error(const qp_matrix *x, const qp_matrix *y, int lower) {
  double err = 0.0;
  for (int64_t i = 0; i < x->rows; ++i)
    for (int64_t j = 0; j < y->cols; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < x->cols; ++k)
        s += op_at(x, 0, lower, i, k) * op_at(y, 0, lower, k, j);
      err = qp_test_worst(err, fabs(s - (i == j ? 1.0 : 0.0)));
    }
  return err;
}

static int is_symmetric(const qp_matrix *m) {
  for (int64_t j = 0; j < m->cols; ++j)
    for (int64_t i = 0; i < j; ++i)
      if (AT(m, i, j) != AT(m, j, i)) return 0;
  return 1;
}


static void test_backend(void) {
  const qp_linalg_ops *o = (const qp_linalg_ops *)&o;
  TEST_OK(qp_linalg_backend("cpu", &o));
  TEST_ASSERT(o != NULL && o == qp_linalg_cpu_ops() && strcmp(o->name, "cpu") == 0,
              "cpu backend lookup gave %p", (const void *)o);
  ops = o;
#if QP_HAVE_CUDA
  /* With CUDA: the table when there is a device (tests/gpu test it), else "no CUDA device". */
  if (qp_cuda_device_count(NULL, 0) > 0) {
    TEST_OK(qp_linalg_backend("cuda", &o));
    TEST_ASSERT(o != NULL && strcmp(o->name, "cuda") == 0, "cuda backend lookup gave %p",
                (const void *)o);
    qp_cuda_finalize();
  } else {
    EXPECT_ERROR(qp_linalg_backend("cuda", &o), QP_ERR_UNSUPPORTED, "cuda", "no CUDA device");
    TEST_ASSERT(o == NULL, "failed lookup left ops %p", (const void *)o);
  }
#else
  EXPECT_ERROR(qp_linalg_backend("cuda", &o), QP_ERR_UNSUPPORTED, "cuda", "not built with CUDA");
  TEST_ASSERT(o == NULL, "failed lookup left ops %p", (const void *)o);
#endif
  /* Without ScaLAPACK: unsupported; with it but no MPI grid (not under mpiexec): an MPI error. */
  EXPECT_ERROR(qp_linalg_backend("dist", &o), qp_linalg_dist_ops() ? QP_ERR_MPI : QP_ERR_UNSUPPORTED,
               "dist");
  EXPECT_ERROR(qp_linalg_backend("nonsense", &o), QP_ERR_INPUT, "nonsense");
  TEST_ASSERT(o == NULL, "failed lookup left ops %p", (const void *)o);
}

/* A = B B^T + n I, naive. */
static void make_spd(qp_matrix *a) {
  qp_matrix b = make("spd_factor", a->rows, a->rows);
  fill_random(&b);
  for (int64_t i = 0; i < a->rows; ++i)
    for (int64_t j = 0; j < a->rows; ++j) {
      double s = i == j ? (double)a->rows : 0.0;
      for (int64_t k = 0; k < a->rows; ++k)
        s += AT(&b, i, k) * AT(&b, j, k);
      AT(a, i, j) = s;
    }
  qp_matrix_destroy(&b);
}

/* potrf + potrs, potri, trtri; fills *l_out with the factor L (upper half: A's entries). */
static void test_cholesky(const qp_matrix *a, qp_matrix *l_out) {
  qp_matrix l = make("L", N, N);
  copy_matrix(a, &l);
  TEST_OK(qp_linalg_potrf(&l));
  /* L L^T == A (lower factor only). */
  double ref_err = 0.0;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < N; ++k)
        s += op_at(&l, 0, 1, i, k) * op_at(&l, 0, 1, j, k);
      ref_err = qp_test_worst(ref_err, fabs(s - AT(a, i, j)) / fabs(AT(a, i, i)));
    }
  TEST_WITHIN(ref_err, 1e-13, "L L^T differs from A");
  TEST_ASSERT(AT(&l, 0, N - 1) == AT(a, 0, N - 1), "potrf wrote the upper half");

  /* Solve with 3 right-hand sides. */
  enum { NRHS = 3 };
  qp_matrix b = make("rhs", N, NRHS), x = make("solution", N, NRHS);
  fill_random(&b);
  copy_matrix(&b, &x);
  TEST_OK(qp_linalg_potrs(&l, &x));
  for (int64_t c = 0; c < NRHS; ++c) {
    double res = 0.0, norm_b = 0.0;
    for (int64_t i = 0; i < N; ++i) {
      double s = 0.0;
      for (int64_t k = 0; k < N; ++k)
        s += AT(a, i, k) * AT(&x, k, c);
      res += (s - AT(&b, i, c)) * (s - AT(&b, i, c));
      norm_b += AT(&b, i, c) * AT(&b, i, c);
    }
    double rel = sqrt(res / norm_b);
    TEST_WITHIN(rel, 1e-12, "potrs: column %lld relative residual", (long long)c);
  }
  /* potrs with too few rows in b. */
  qp_matrix short_b = make("short_rhs", N - 1, 1);
  EXPECT_ERROR(qp_linalg_potrs(&l, &short_b), QP_ERR_INTERNAL, "L", "short_rhs");
  qp_matrix_destroy(&short_b);

  /* potri: the full inverse. */
  qp_matrix inv = make("A_inverse", N, N);
  copy_matrix(&l, &inv);
  TEST_OK(qp_linalg_potri(&inv));
  TEST_ASSERT(is_symmetric(&inv), "potri result is not mirrored full");
  double e = identity_error(a, &inv, 0);
  TEST_WITHIN(e, 1e-10, "A A^-1 differs from I");
  e = identity_error(&inv, a, 0);
  TEST_WITHIN(e, 1e-10, "A^-1 A differs from I");

  /* trtri: L^-1 (lower). */
  qp_matrix linv = make("L_inverse", N, N);
  copy_matrix(&l, &linv);
  TEST_OK(qp_linalg_trtri(&linv));
  e = identity_error(&l, &linv, 1);
  TEST_WITHIN(e, 1e-10, "L L^-1 differs from I");
  e = identity_error(&linv, &l, 1);
  TEST_WITHIN(e, 1e-10, "L^-1 L differs from I");

  qp_matrix nonsquare = make("nonsquare", 4, 3);
  EXPECT_ERROR(qp_linalg_potrf(&nonsquare), QP_ERR_INTERNAL, "nonsquare");
  EXPECT_ERROR(qp_linalg_trtri(&nonsquare), QP_ERR_INTERNAL, "nonsquare");
  EXPECT_ERROR(qp_linalg_potri(&nonsquare), QP_ERR_INTERNAL, "nonsquare");
  qp_matrix_destroy(&nonsquare);

  qp_matrix_destroy(&b);
  qp_matrix_destroy(&x);
  qp_matrix_destroy(&inv);
  qp_matrix_destroy(&linv);
  *l_out = l;
}

/* trmm and trsm in all four side/transposition cases against naive products. */
static void test_triangular(const qp_matrix *l) {
  enum { M = 7 };
  const double alpha = 0.75;
  for (int side = 0; side <= 1; ++side)
    for (int trans = 0; trans <= 1; ++trans) {
      int64_t rows = side == QP_LEFT ? N : M, cols = side == QP_LEFT ? M : N;
      qp_matrix b = make("tri_b", rows, cols), orig = make("tri_orig", rows, cols);
      fill_random(&b);
      copy_matrix(&b, &orig);
      double *ref = calloc((size_t)(rows * cols), sizeof *ref);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double s = 0.0;
          if (side == QP_LEFT)
            for (int64_t k = 0; k < N; ++k)
              s += op_at(l, trans, 1, i, k) * AT(&orig, k, j);
          else
            for (int64_t k = 0; k < N; ++k)
              s += AT(&orig, i, k) * op_at(l, trans, 1, k, j);
          ref[i + j * rows] = alpha * s;
        }
      TEST_OK(qp_linalg_trmm((qp_side)side, (qp_trans)trans, alpha, l, &b));
      double e = rel_error(&b, ref, rows, cols);
      TEST_WITHIN(e, 1e-12, "trmm side %d trans %d: relative error", side, trans);

      /* trsm with 1/alpha undoes it. */
      TEST_OK(qp_linalg_trsm((qp_side)side, (qp_trans)trans, 1.0 / alpha, l, &b));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          ref[i + j * rows] = AT(&orig, i, j);
      e = rel_error(&b, ref, rows, cols);
      TEST_WITHIN(e, 1e-12, "trsm side %d trans %d after trmm: relative error", side, trans);
      /* trsm on its own: L x = B solved, checked by multiplying back. */
      TEST_OK(qp_linalg_trsm((qp_side)side, (qp_trans)trans, alpha, l, &b));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double s = 0.0;
          if (side == QP_LEFT)
            for (int64_t k = 0; k < N; ++k)
              s += op_at(l, trans, 1, i, k) * AT(&b, k, j);
          else
            for (int64_t k = 0; k < N; ++k)
              s += AT(&b, i, k) * op_at(l, trans, 1, k, j);
          ref[i + j * rows] = s;
        }
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          AT(&b, i, j) = alpha * AT(&orig, i, j);
      e = rel_error(&b, ref, rows, cols);
      TEST_WITHIN(e, 1e-12, "trsm side %d trans %d: op(L) X differs from alpha B", side, trans);
      free(ref);
      /* The wrong side for this shape. */
      EXPECT_ERROR(qp_linalg_trmm((qp_side)!side, (qp_trans)trans, alpha, l, &b), QP_ERR_INTERNAL,
                   "tri_b");
      EXPECT_ERROR(qp_linalg_trsm((qp_side)!side, (qp_trans)trans, alpha, l, &b), QP_ERR_INTERNAL,
                   "tri_b");
      qp_matrix_destroy(&b);
      qp_matrix_destroy(&orig);
    }
}

static void test_gemm(void) {
  enum { M = 13, K = 11, NN = 9 };
  const double alpha = 1.25, beta = -0.5;
  for (int ta = 0; ta <= 1; ++ta)
    for (int tb = 0; tb <= 1; ++tb) {
      qp_matrix a = make("gemm_a", ta ? K : M, ta ? M : K);
      qp_matrix b = make("gemm_b", tb ? NN : K, tb ? K : NN);
      qp_matrix c = make("gemm_c", M, NN);
      fill_random(&a);
      fill_random(&b);
      fill_random(&c);
      double ref[M * NN];
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < NN; ++j) {
          double s = 0.0;
          for (int64_t k = 0; k < K; ++k)
            s += op_at(&a, ta, 0, i, k) * op_at(&b, tb, 0, k, j);
          ref[i + j * M] = alpha * s + beta * AT(&c, i, j);
        }
      TEST_OK(qp_linalg_gemm((qp_trans)ta, (qp_trans)tb, alpha, &a, &b, beta, &c));
      double e = rel_error(&c, ref, M, NN);
      TEST_WITHIN(e, 1e-12, "gemm ta %d tb %d: relative error", ta, tb);
      /* Transposing only one operand no longer agrees in shape. */
      EXPECT_ERROR(qp_linalg_gemm((qp_trans)!ta, (qp_trans)tb, alpha, &a, &b, beta, &c),
                   QP_ERR_INTERNAL, "gemm_a", "gemm_b", "gemm_c");
      qp_matrix_destroy(&a);
      qp_matrix_destroy(&b);
      qp_matrix_destroy(&c);
    }
  /* Inner dimensions 4 vs 5, and a result of the wrong size. */
  qp_matrix a = make("mismatch_a", 3, 4), b = make("mismatch_b", 5, 2),
            c = make("mismatch_c", 3, 2);
  fill_random(&c);
  double c00 = AT(&c, 0, 0);
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &b, 0.0, &c), QP_ERR_INTERNAL,
               "mismatch_a", "mismatch_b");
  TEST_ASSERT(AT(&c, 0, 0) == c00, "a failed gemm wrote its result");
  qp_matrix b2 = make("mismatch_b2", 4, 2), c2 = make("mismatch_c2", 3, 3);
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &b2, 0.0, &c2), QP_ERR_INTERNAL,
               "mismatch_c2");
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&c);
  qp_matrix_destroy(&b2);
  qp_matrix_destroy(&c2);
}

static void test_syrk(void) {
  enum { NS = 12, K = 17 };
  const double alpha = 0.6, beta = 2.0;
  for (int trans = 0; trans <= 1; ++trans) {
    qp_matrix a = make("syrk_a", trans ? K : NS, trans ? NS : K);
    qp_matrix c = make("syrk_c", NS, NS);
    fill_random(&a);
    fill_random(&c);
    qp_matrix_symmetrize_lower(&c);
    double ref[NS * NS];
    for (int64_t i = 0; i < NS; ++i)
      for (int64_t j = 0; j < NS; ++j) {
        double s = 0.0;
        /* op(A) op(A)^T with op(A) = A (n x k) or A^T. */
        for (int64_t k = 0; k < K; ++k)
          s += op_at(&a, trans, 0, i, k) * op_at(&a, trans, 0, j, k);
        ref[i + j * NS] = alpha * s + beta * AT(&c, i, j);
      }
    TEST_OK(qp_linalg_syrk((qp_trans)trans, alpha, &a, beta, &c));
    double e = rel_error(&c, ref, NS, NS);
    TEST_WITHIN(e, 1e-12, "syrk trans %d: relative error", trans);
    TEST_ASSERT(is_symmetric(&c), "syrk trans %d: result not mirrored full", trans);
    EXPECT_ERROR(qp_linalg_syrk((qp_trans)!trans, alpha, &a, beta, &c), QP_ERR_INTERNAL, "syrk_c");
    qp_matrix_destroy(&a);
    qp_matrix_destroy(&c);
  }
}

/* The tiled mirror (tiles of 64): several tiles, a partial last one, and ld > rows; the
 * lower triangle and the diagonal untouched. */
static void test_symmetrize_tiles(void) {
  enum { NT = 150, LD = 157 };
  double *data = calloc((size_t)LD * NT, sizeof *data);
  TEST_ASSERT(data != NULL, "out of memory");
  if (!data) return;
  for (int64_t j = 0; j < NT; ++j)
    for (int64_t i = 0; i < LD; ++i)
      data[i + j * LD] = i >= j && i < NT ? (double)(i * 1000 + j) : -1.0;
  qp_matrix m;
  TEST_OK(qp_matrix_view(ops, "symmetrize", data, NT, NT, LD, &m));
  qp_matrix_symmetrize_lower(&m);
  int wrong = 0;
  for (int64_t j = 0; j < NT; ++j)
    for (int64_t i = 0; i < LD; ++i) {
      const double want = i >= NT ? -1.0 : i >= j ? (double)(i * 1000 + j) : (double)(j * 1000 + i);
      wrong += data[i + j * LD] != want;
    }
  TEST_ASSERT(wrong == 0, "symmetrize_lower: %d entries wrong (or rows beyond the matrix written)",
              wrong);
  free(data);
}

static void test_trace_product(void) {
  enum { R = 8, C = 5 };
  qp_matrix a = make("trace_a", R, C), b = make("trace_b", C, R);
  fill_random(&a);
  fill_random(&b);
  double ref = 0.0, got = 0.0;
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j)
      ref += AT(&a, i, j) * AT(&b, j, i);
  TEST_OK(qp_linalg_trace_product(&a, &b, &got));
  TEST_WITHIN(qp_test_rel_diff(got, ref), 1e-12, "trace_product %.17g, naive %.17g", got, ref);
  /* tr(A B) = tr(B A). */
  double got_ba = 0.0;
  TEST_OK(qp_linalg_trace_product(&b, &a, &got_ba));
  TEST_WITHIN(qp_test_rel_diff(got_ba, ref), 1e-12, "tr(B A) %.17g, naive %.17g", got_ba, ref);
  EXPECT_ERROR(qp_linalg_trace_product(&a, &a, &got), QP_ERR_INTERNAL, "trace_a");
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
}

/* diag(1, -1, 1): the leading minor of order 2 is negative. */
static void test_not_posdef(void) {
  qp_matrix m = make("test_matrix", 3, 3);
  AT(&m, 0, 0) = 1.0;
  AT(&m, 1, 1) = -1.0;
  AT(&m, 2, 2) = 1.0;
  EXPECT_ERROR(qp_linalg_potrf(&m), QP_ERR_NOT_POSDEF, "test_matrix", "order 2");
  qp_matrix_destroy(&m);

  m = make("test_matrix", 3, 3);
  AT(&m, 0, 0) = 1.0;
  AT(&m, 1, 1) = -1.0;
  AT(&m, 2, 2) = 1.0;
  TEST_OK(qp_stage_push("unit_stage"));
  EXPECT_ERROR(qp_linalg_potrf(&m), QP_ERR_NOT_POSDEF, "test_matrix", "order 2", "unit_stage");
  TEST_OK(qp_stage_pop());
  const qp_stage_record *r = qp_stage_record_find("unit_stage");
  TEST_ASSERT(r != NULL && r->flops == 0.0, "a failed potrf charged %g flops", r ? r->flops : -1.0);
  qp_matrix_destroy(&m);

  /* A singular triangular factor: trtri fails naming it. */
  m = make("singular_factor", 3, 3);
  AT(&m, 0, 0) = 1.0;
  AT(&m, 2, 2) = 1.0;
  EXPECT_ERROR(qp_linalg_trtri(&m), QP_ERR_NOT_POSDEF, "singular_factor", "row 2");
  qp_matrix_destroy(&m);
}

/* A leading dimension beyond INT_MAX fails before BLAS sees it (the buffer holds one double;
 * BLAS with ld = 3e9 on a 1x1 matrix would read nothing beyond it, but the wrapped int would
 * be negative and make BLAS abort). */
static void test_blas_int_limit(void) {
  double buf[4] = {2.0, 0.0, 0.0, 0.0};
  qp_matrix v;
  TEST_OK(qp_matrix_view(ops, "huge_ld_view", buf, 1, 1, 3000000000LL, &v));
  TEST_ASSERT(v.owns == 0 && v.ld == 3000000000LL && v.data == buf, "view fields wrong");
  qp_matrix one = make("one_by_one", 1, 1), out = make("one_by_one_out", 1, 1);
  AT(&one, 0, 0) = 3.0;
  AT(&out, 0, 0) = 7.0;
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &v, &one, 0.0, &out), QP_ERR_UNSUPPORTED,
               "32-bit", "3000000000");
  TEST_ASSERT(AT(&out, 0, 0) == 7.0, "gemm wrote its result despite the error");
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &one, &v, 0.0, &out), QP_ERR_UNSUPPORTED,
               "32-bit");
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &one, &one, 0.0, &v), QP_ERR_UNSUPPORTED,
               "32-bit");
  TEST_ASSERT(buf[0] == 2.0, "gemm wrote into the view despite the error");
  EXPECT_ERROR(qp_linalg_potrf(&v), QP_ERR_UNSUPPORTED, "32-bit");
  EXPECT_ERROR(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &v, &out), QP_ERR_UNSUPPORTED, "32-bit");
  EXPECT_ERROR(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &one, &v), QP_ERR_UNSUPPORTED, "32-bit");
  EXPECT_ERROR(qp_linalg_syrk(QP_NOTRANS, 1.0, &v, 0.0, &out), QP_ERR_UNSUPPORTED, "32-bit");
  EXPECT_ERROR(qp_linalg_trace_product(&v, &one, &buf[1]), QP_ERR_UNSUPPORTED, "32-bit");
  TEST_ASSERT(buf[0] == 2.0 && AT(&out, 0, 0) == 7.0, "a failed call wrote its result");
  qp_matrix_destroy(&v); /* a view: frees nothing */
  TEST_ASSERT(buf[0] == 2.0, "destroying a view touched its buffer");

  /* A view's ld below its rows is refused; a handle without a backend has no operations. */
  EXPECT_ERROR(qp_matrix_view(ops, "bad_view", buf, 4, 1, 2, &v), QP_ERR_INTERNAL, "bad_view");
  TEST_OK(qp_matrix_view(NULL, "no_backend", buf, 1, 1, 1, &v));
  EXPECT_ERROR(qp_linalg_potrf(&v), QP_ERR_UNSUPPORTED, "potrf");
  qp_matrix_destroy(&one);
  qp_matrix_destroy(&out);
}

/* One potrf of order N in a stage charges N^3/3 flops to it and to the enclosing stage. */
static void test_flops(const qp_matrix *a) {
  qp_matrix l = make("flops_L", N, N);
  copy_matrix(a, &l);
  TEST_OK(qp_stage_push("flops_outer"));
  TEST_OK(qp_stage_push("flops_stage"));
  TEST_OK(qp_linalg_potrf(&l));
  TEST_OK(qp_stage_pop());
  qp_matrix c = make("flops_c", 4, 6), x = make("flops_x", 4, 5), y = make("flops_y", 5, 6);
  TEST_OK(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &x, &y, 0.0, &c));
  TEST_OK(qp_stage_pop());
  double expected = (double)N * N * N / 3.0;
  const qp_stage_record *r = qp_stage_record_find("flops_stage");
  const qp_stage_record *outer = qp_stage_record_find("flops_outer");
  TEST_ASSERT(r != NULL && outer != NULL, "flops stage records missing");
  if (r)
    TEST_WITHIN(qp_test_rel_diff(r->flops, expected), 1e-15,
                "potrf of order %d charged %.17g flops, expected %.17g", N, r->flops, expected);
  if (outer)
    TEST_WITHIN(qp_test_rel_diff(outer->flops, expected + 2.0 * 4 * 6 * 5), 1e-15,
                "outer stage charged %.17g flops, expected %.17g", outer->flops,
                expected + 2.0 * 4 * 6 * 5);
  qp_matrix_destroy(&l);
  qp_matrix_destroy(&c);
  qp_matrix_destroy(&x);
  qp_matrix_destroy(&y);
}

/* What differs between a whole matrix and a spread one, on the cpu backend: transpose, align
 * (index arithmetic, no work matrix), replicate (the matrix's own buffer), sum_partials (a
 * no-op). */
static void test_layout_ops(void) {
  qp_matrix a = make("A", 7, 5), t = make("A^T", 5, 7);
  fill_random(&a);
  TEST_OK(qp_linalg_transpose(&a, &t));
  double worst = 0;
  for (int64_t j = 0; j < 5; ++j)
    for (int64_t i = 0; i < 7; ++i)
      worst = qp_test_worst(worst, fabs(AT(&t, j, i) - AT(&a, i, j)));
  TEST_WITHIN(worst, 0.0, "transpose");
  TEST_ASSERT(qp_linalg_transpose(&a, &a) == QP_ERR_INTERNAL, "transpose into a wrong shape");
  TEST_ASSERT(!qp_linalg_moves_data(ops), "cpu: aligning must not need a work matrix");
  qp_matrix layout;
  TEST_OK(qp_matrix_view(ops, "layout", NULL, 9, 9, 9, &layout));
  qp_aligned w;
  TEST_OK(qp_linalg_align(&a, 2, 1, 4, 3, &layout, 5, 6, NULL, &w));
  worst = 0;
  for (int64_t j = 6; j < 9; ++j)
    for (int64_t i = 5; i < 9; ++i)
      worst = qp_test_worst(worst, fabs(qp_aligned_at(&w, i, j) - AT(&a, i - 5 + 2, j - 6 + 1)));
  TEST_WITHIN(worst, 0.0, "align");
  TEST_ASSERT(qp_linalg_align(&a, 2, 1, 6, 3, &layout, 5, 6, NULL, &w) == QP_ERR_INTERNAL,
              "a window beyond A must be refused");
  const double *whole = NULL;
  TEST_OK(qp_linalg_replicate(&a, NULL, &whole));
  TEST_ASSERT(whole == a.data, "replicate must hand back the matrix's own buffer");
  double x[2] = {1.5, -2.0};
  TEST_OK(qp_linalg_sum_partials(ops, x, 2));
  TEST_ASSERT(x[0] == 1.5 && x[1] == -2.0, "sum_partials must leave x alone on one process");
  qp_matrix_destroy(&t);
  qp_matrix_destroy(&a);
}

/* copy_sub: a block of two large matrices (their columns on every thread, the blocks apart)
 * and, within one matrix, a block over one that overlaps it (in order, as memmove): the same
 * entries as an element-by-element copy, both ways. */
static void test_copy_sub(void) {
  enum { R = 1200, C = 1100 }; /* 1.3e6 entries: above the threaded copy's threshold */
  qp_matrix a = make("copy_a", R, C), b = make("copy_b", R, C);
  fill_random(&a);
  fill_random(&b);
  qp_matrix before = make("copy_before", R, C);
  copy_matrix(&b, &before);
  TEST_OK(qp_linalg_copy_sub(R - 7, C - 5, &a, 3, 2, &b, 4, 5));
  int64_t wrong = 0;
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < R; ++i) {
      const int inside = i >= 4 && i < 4 + R - 7 && j >= 5 && j < 5 + C - 5;
      const double want = inside ? AT(&a, i - 4 + 3, j - 5 + 2) : AT(&before, i, j);
      wrong += !(AT(&b, i, j) == want);
    }
  TEST_ASSERT(wrong == 0, "copy_sub between two matrices: %lld entries wrong", (long long)wrong);
  /* Within b: rows [0, R - 1) of each column to rows [1, R): the blocks overlap. */
  copy_matrix(&b, &before);
  TEST_OK(qp_linalg_copy_sub(R - 1, C, &b, 0, 0, &b, 1, 0));
  wrong = 0;
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < R; ++i)
      wrong += !(AT(&b, i, j) == (i == 0 ? AT(&before, 0, j) : AT(&before, i - 1, j)));
  TEST_ASSERT(wrong == 0, "copy_sub over itself: %lld entries wrong", (long long)wrong);
  qp_matrix_destroy(&before);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&a);
}

int main(void) {
  test_backend();
  if (!ops) return 1;
  qp_matrix a = make("A", N, N), l;
  make_spd(&a);
  test_cholesky(&a, &l);
  test_triangular(&l);
  test_gemm();
  test_syrk();
  test_symmetrize_tiles();
  test_trace_product();
  test_not_posdef();
  test_blas_int_limit();
  test_flops(&a);
  test_layout_ops();
  test_copy_sub();
  qp_matrix_destroy(&l);
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&a); /* safe twice */
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "%zu host bytes still live",
              qp_budget_current(QP_SPACE_HOST));
  if (qp_budget_current(QP_SPACE_HOST) != 0) qp_budget_dump_live(stderr);
  if (qp_test_failures == 0) printf("test_linalg: all checks passed\n");
  return TEST_RETURN();
}
