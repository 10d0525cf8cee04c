/* test_checked_size: the checked size arithmetic of base/checked_size.h at and around the
 * 64-bit bounds: exact results where they fit, a 0 return and a saturated result where they
 * do not, negative int64 counts refused. */
#include <stdint.h>

#include "checked_size.h"
#include "test_util.h"

int main(void) {
  size_t s = 0;
  TEST_ASSERT(qp_size_mul(0, SIZE_MAX, &s) && s == 0, "0 x SIZE_MAX");
  TEST_ASSERT(qp_size_mul((size_t)1 << 32, ((size_t)1 << 32) - 1, &s) &&
                  s == SIZE_MAX - ((size_t)1 << 32) + 1,
              "2^32 (2^32 - 1) = %zu", s);
  TEST_ASSERT(!qp_size_mul((size_t)1 << 32, (size_t)1 << 32, &s) && s == SIZE_MAX,
              "2^32 x 2^32 did not overflow (%zu)", s);
  /* The matrix: 1518500250^2 x 8 = 2^64 + 3.3e9. */
  size_t n2 = 0;
  TEST_ASSERT(qp_size_mul(1518500250u, 1518500250u, &n2), "n_pix^2 fits");
  TEST_ASSERT(!qp_size_mul(n2, 8, &s) && s == SIZE_MAX, "n_pix^2 x 8 did not overflow");
  TEST_ASSERT(qp_size_mul(1518500249u, 1518500249u, &n2) && qp_size_mul(n2, 8, &s) &&
                  s == (size_t)1518500249u * 1518500249u * 8u,
              "1518500249^2 x 8 does fit: %zu", s);

  TEST_ASSERT(qp_size_add(SIZE_MAX - 1, 1, &s) && s == SIZE_MAX, "SIZE_MAX - 1 + 1");
  TEST_ASSERT(!qp_size_add(SIZE_MAX, 1, &s) && s == SIZE_MAX, "SIZE_MAX + 1 did not overflow");

  TEST_ASSERT(qp_size_bytes(0, 8, &s) && s == 0, "0 elements");
  TEST_ASSERT(qp_size_bytes(INT64_MAX / 8, 8, &s) && s == (size_t)(INT64_MAX / 8) * 8,
              "INT64_MAX / 8 doubles");
  TEST_ASSERT(!qp_size_bytes(-1, 8, &s) && s == SIZE_MAX, "a negative count was accepted");
  TEST_ASSERT(!qp_size_bytes(INT64_MAX, 8, &s) && s == SIZE_MAX, "INT64_MAX doubles fit?");

  int64_t i = 0;
  TEST_ASSERT(qp_i64_mul(12, (int64_t)1 << 29, &i) && qp_i64_mul(i, (int64_t)1 << 29, &i) &&
                  i == (int64_t)12 << 58,
              "12 nside^2 at nside 2^29 = %lld", (long long)i);
  TEST_ASSERT(!qp_i64_mul(12, (int64_t)1000000000 * 1000000000, &i) && i == INT64_MAX,
              "12 x 10^18 did not overflow");
  TEST_ASSERT(!qp_i64_mul(-3, INT64_MAX, &i) && i == INT64_MIN, "-3 INT64_MAX saturates low");
  TEST_ASSERT(qp_i64_add(INT64_MAX - 1, 1, &i) && i == INT64_MAX, "INT64_MAX - 1 + 1");
  TEST_ASSERT(!qp_i64_add(INT64_MAX, 1, &i) && i == INT64_MAX, "INT64_MAX + 1");
  TEST_ASSERT(!qp_i64_add(INT64_MIN, -1, &i) && i == INT64_MIN, "INT64_MIN - 1");

  /* The model's rule: 96 terms and the overhead at 2^56 each sum below 2^63. */
  s = 0;
  for (int t = 0; t < 97; ++t)
    TEST_ASSERT(qp_size_add(s, QP_SIZE_TERM_MAX, &s), "term %d", t);
  TEST_ASSERT(s < (size_t)1 << 63, "97 terms of 2^56 reach 2^63");
  return TEST_RETURN();
}
