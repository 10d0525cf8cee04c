/* condition_estimate.h: LAPACK's 1-norm condition estimate (dpocon, dgecon) for a backend that
 * can solve with a matrix's factors but has no estimator of its own (the cuda backend:
 * cuSOLVER has none).
 *
 * The estimator (dlacn2, Hager and Higham) asks only for products of A^-1 and A^-T with
 * n-vectors, by reverse communication: the loop runs here on the host on n-vectors, and the
 * backend applies each product (for the cuda backend: the vector to the device, two
 * triangular solves with the factors there, back). This part has no CUDA in it, so that it is
 * tested on CPU against LAPACK's own dpocon and dgecon (tests/unit/test_condition_estimate.c),
 * the solves included. What dpocon and dgecon add (dlatrs's scaling against overflow inside
 * the solves) is left out: a solve that overflows makes the estimate of |A^-1| infinite or NaN,
 * which gives rcond 0, i.e. singular to working precision, as LAPACK would say. Not
 * collective. */
#ifndef QP_CONDITION_ESTIMATE_H
#define QP_CONDITION_ESTIMATE_H

#include <stdint.h>

#include "qp_error.h"

/* One triangular solve x <- op(T)^-1 x with a triangle of the factor matrix. */
typedef struct qp_triangular_solve {
  int upper;     /* 1: the upper triangle, 0: the lower */
  int transpose; /* 1: op(T) = T^T */
  int unit;      /* 1: unit diagonal (not read) */
} qp_triangular_solve;

typedef enum qp_factor_kind {
  QP_FACTOR_CHOLESKY, /* lower L of A = L L^T (potrf) */
  QP_FACTOR_LU        /* unit lower L and upper U of P A = L U in one matrix (getrf) */
} qp_factor_kind;

/** The two solves, in order, that apply A^-1 (kase 1) or A^-T (kase 2) to a vector: L^-T L^-1
 *  for both kases of a Cholesky factor (A^-1 is symmetric); U^-1 L^-1 and L^-T U^-T for LU,
 *  without the row permutation (it does not change a 1-norm; LAPACK's dgecon leaves it out
 *  too). The order and triangles of LAPACK's dpocon and dgecon. */
void qp_condition_solves(qp_factor_kind kind, int kase, qp_triangular_solve solves[2]);

/** x <- A^-1 x (kase 1) or A^-T x (kase 2), x of n doubles in host memory. */
typedef qp_err (*qp_inverse_apply)(void *context, int kase, double *x);

/** *rcond = 1 / (anorm |A^-1|_1), |A^-1|_1 estimated by dlacn2 with `apply` (about five
 *  calls), for an n x n matrix named `name` (in messages). LAPACK's conventions: 1 for n = 0,
 *  0 when anorm or the estimate is 0, NaN for a NaN anorm; 0 when the estimate is not finite.
 *  Errors: QP_ERR_LIBRARY for a negative anorm (a bug of the caller), QP_ERR_UNSUPPORTED for
 *  n beyond LAPACK's int, QP_ERR_NOMEM for the 3 n-vectors (plain O(n) scratch, as cpu.c's
 *  estimator workspaces), and `apply`'s. */
qp_err qp_condition_estimate(int64_t n, double anorm, qp_inverse_apply apply, void *context,
                             const char *name, double *rcond);

#endif
