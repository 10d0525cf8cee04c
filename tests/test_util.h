/* test_util.h: the few checks tests share. A failed check prints where and why, and the test
 * program returns non-zero (CTest counts it failed). */
#ifndef QP_TEST_UTIL_H
#define QP_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qp_error.h"

static int qp_test_failures = 0;

#define TEST_ASSERT(cond, ...)                                                                 \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
      ++qp_test_failures;                                                                      \
    }                                                                                          \
  } while (0)

/* Calls a qp_err function that must succeed; prints the error when it does not. */
#define TEST_OK(expr)                                                                          \
  do {                                                                                         \
    qp_err test_err_ = (expr);                                                                 \
    if (test_err_ != QP_OK) {                                                                  \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #expr);                       \
      qp_error_print(stderr, 1);                                                               \
      ++qp_test_failures;                                                                      \
    }                                                                                          \
  } while (0)

/* Calls a qp_err function that must fail with `code`. */
#define TEST_FAILS(expr, code)                                                                 \
  do {                                                                                         \
    qp_err test_err_ = (expr);                                                                 \
    if (test_err_ != (code)) {                                                                 \
      fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n", __FILE__, __LINE__, #expr, \
              (int)test_err_, qp_err_name(test_err_), (int)(code));                            \
      ++qp_test_failures;                                                                      \
    } else {                                                                                   \
      fprintf(stderr, "  expected error: %s\n", qp_error_message());                          \
    }                                                                                          \
    qp_error_clear();                                                                          \
  } while (0)

/* Expects `code` from `expr` and every needle (string) in its message. */
#define EXPECT_ERROR(expr, code, ...)                                                          \
  do {                                                                                         \
    qp_err e_ = (expr);                                                                        \
    TEST_ASSERT(e_ == (code), "%s returned %d (%s), expected %d (%s)", #expr, (int)e_,         \
                qp_err_name(e_), (int)(code), qp_err_name(code));                              \
    const char *needles_[] = {__VA_ARGS__};                                                    \
    for (size_t k_ = 0; k_ < sizeof needles_ / sizeof needles_[0]; ++k_)                       \
      TEST_ASSERT(strstr(qp_error_message(), needles_[k_]) != NULL,                            \
                  "%s: message lacks '%s': %s", #expr, needles_[k_], qp_error_message());      \
    fprintf(stderr, "  expected error: %s\n", qp_error_message());                             \
    qp_error_clear();                                                                          \
  } while (0)

static inline double qp_test_rel_diff(double a, double b) {
  double scale = fmax(fabs(a), fabs(b));
  return scale > 0 ? fabs(a - b) / scale : 0.0;
}

#define TEST_RETURN() (qp_test_failures == 0 ? 0 : 1)

#endif
