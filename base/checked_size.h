/* checked_size.h: size arithmetic that cannot wrap.
 *
 * Every byte count of qmlpipe that is not already bounded (the model's terms, the allocator's
 * requests, the planner's sums, sizes read from files and the command line) is computed with
 * these, not with a bare `(size_t)a * b`: a product that does not fit is reported, not wrapped.
 * They are __builtin_*_overflow behind one name; on overflow they saturate (*out = SIZE_MAX or
 * the int64 bound) so that a caller may carry on to a message, and they return 0.
 *
 * The bare products left are bounded by an earlier check: the stages' buffers (products,
 * bin matrices, maps, F, the harmonic workspaces of n_modes or (lmax + 1)^2 entries) are each
 * a model term, checked below 2^56 bytes by the plan before anything is allocated; arrays of
 * bins, multipoles or C_ell rows are bounded by lmax <= 46339 (config.h); arrays per rank by
 * the communicator's size or, from a file, by report_ranks.c's check of n_ranks.
 *
 * The model's rule (model.h): no single term may exceed QP_SIZE_TERM_MAX = 2^56 bytes (64 PiB,
 * far beyond any machine), and neither may the overhead. A stage or lifetime peak is a sum of
 * at most QP_TERMS_MAX terms plus the overhead, at most (96 + 1) x 2^56 < 2^63 bytes: sums of
 * checked terms need no check of their own (the _Static_assert in model.c holds this). */
#ifndef QP_CHECKED_SIZE_H
#define QP_CHECKED_SIZE_H

#include <stddef.h>
#include <stdint.h>

/** The largest byte count of one model term, allocation or matrix read from a file: 2^56. */
#define QP_SIZE_TERM_MAX ((size_t)1 << 56)

/** *out = a * b; returns 1 when it fits a size_t, else 0 with *out = SIZE_MAX. */
static inline int qp_size_mul(size_t a, size_t b, size_t *out) {
  if (__builtin_mul_overflow(a, b, out)) {
    *out = SIZE_MAX;
    return 0;
  }
  return 1;
}

/** *out = a + b; returns 1 when it fits a size_t, else 0 with *out = SIZE_MAX. */
static inline int qp_size_add(size_t a, size_t b, size_t *out) {
  if (__builtin_add_overflow(a, b, out)) {
    *out = SIZE_MAX;
    return 0;
  }
  return 1;
}

/** *out = count x elem_size bytes for a count held in an int64 (a dimension); returns 1 when
 *  the count is not negative and the product fits a size_t, else 0 with *out = SIZE_MAX. */
static inline int qp_size_bytes(int64_t count, size_t elem_size, size_t *out) {
  if (count < 0) {
    *out = SIZE_MAX;
    return 0;
  }
  return qp_size_mul((size_t)count, elem_size, out);
}

/** *out = a * b in int64 (counts: 12 nside^2, n_pix n_maps); returns 1 when it fits, else 0
 *  with *out = INT64_MAX or INT64_MIN (by the sign of the exact product). */
static inline int qp_i64_mul(int64_t a, int64_t b, int64_t *out) {
  if (__builtin_mul_overflow(a, b, out)) {
    *out = (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return 0;
  }
  return 1;
}

/** *out = a + b in int64; returns 1 when it fits, else 0 with *out saturated. */
static inline int qp_i64_add(int64_t a, int64_t b, int64_t *out) {
  if (__builtin_add_overflow(a, b, out)) {
    *out = a < 0 ? INT64_MIN : INT64_MAX;
    return 0;
  }
  return 1;
}

#endif
