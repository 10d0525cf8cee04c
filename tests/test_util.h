/* test_util.h: the few checks tests share. A failed check prints where and why, and the test
 * program returns non-zero (CTest counts it failed). */
#ifndef QP_TEST_UTIL_H
#define QP_TEST_UTIL_H

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atomic_file.h"
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

/* ---- The one NaN-aware comparison --------------------------------------------------------
 * Every numerical comparison of the suite goes through these. `fmax(worst, d)` and
 * `if (d > worst)` skip a NaN, so an all-NaN result would "match"; here a NaN or an infinity
 * anywhere makes the error NaN, and qp_test_within passes only a finite error within the
 * tolerance. tests/unit/test_nan_checks.c feeds them NaN and infinities and expects failures. */

/** 1 only when `err` is finite and err <= tol. */
static inline int qp_test_within(double err, double tol) { return isfinite(err) && err <= tol; }

/** The larger of two errors, NaN when either is NaN (unlike fmax). */
static inline double qp_test_worst(double worst, double err) {
  return isnan(worst) || isnan(err) ? NAN : (err > worst ? err : worst);
}

/** |a - b| / max(|a|, |b|) (0 when both are 0); NaN when either is not finite. */
static inline double qp_test_rel_diff(double a, double b) {
  if (!isfinite(a) || !isfinite(b)) return NAN;
  double scale = fmax(fabs(a), fabs(b));
  return scale > 0 ? fabs(a - b) / scale : 0.0;
}

/** max_i |a_i - b_i| / scale (scale > 0; 1 for an absolute difference); NaN when any a_i or
 *  b_i is not finite, or the scale is not finite and positive. */
static inline double qp_test_max_diff(const double *a, const double *b, size_t n, double scale) {
  if (!(isfinite(scale) && scale > 0)) return NAN;
  double worst = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(a[i]) || !isfinite(b[i])) return NAN;
    worst = qp_test_worst(worst, fabs(a[i] - b[i]) / scale);
  }
  return worst;
}

/** max_i |v_i| (NaN when any v_i is not finite): the scale of a reference. */
static inline double qp_test_max_abs(const double *v, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; ++i) worst = qp_test_worst(worst, isfinite(v[i]) ? fabs(v[i]) : NAN);
  return worst;
}

/** max_i |got_i - ref_i| / max_i |ref_i| (the absolute difference when ref is all zero); NaN
 *  when any ref_i or got_i is not finite. The relative error of a result against a reference. */
static inline double qp_test_max_rel_diff(const double *ref, const double *got, size_t n) {
  const double scale = qp_test_max_abs(ref, n); /* NaN stays NaN: qp_test_max_diff refuses it */
  return qp_test_max_diff(got, ref, n, scale == 0 ? 1.0 : scale);
}

/** Fails unless `err` is finite and within `tol`; says which error, its value and why. */
#define TEST_WITHIN(err, tol, ...)                                                             \
  do {                                                                                         \
    const double tw_err_ = (err), tw_tol_ = (tol);                                             \
    if (!qp_test_within(tw_err_, tw_tol_)) {                                                   \
      fprintf(stderr, "%s:%d: check failed: %s = %.3e, tolerance %.1e%s: ", __FILE__,          \
              __LINE__, #err, tw_err_, tw_tol_, isfinite(tw_err_) ? "" : " (not finite)");      \
      fprintf(stderr, __VA_ARGS__);                                                            \
      fputc('\n', stderr);                                                                     \
      ++qp_test_failures;                                                                      \
    }                                                                                          \
  } while (0)

/** Writes `text` to `path` (a test's input file); a failure to write fails the test. */
static inline void qp_test_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  TEST_ASSERT(f != NULL, "cannot write the test file '%s'", path);
  if (!f) return;
  fputs(text, f);
  TEST_ASSERT(fclose(f) == 0, "cannot write the test file '%s'", path);
}

/** The temporaries of base/atomic_file.h (names holding QP_ATOMIC_TEMP_MARK) in `dir`: their
 *  number (-1 when `dir` cannot be read) and, when `names` is not NULL, their names
 *  comma-separated into it. Writers must leave none behind, whatever happened. */
static inline int qp_test_find_temps(const char *dir, char *names, size_t size) {
  if (names && size) names[0] = '\0';
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (!strstr(e->d_name, QP_ATOMIC_TEMP_MARK)) continue;
    if (names && size) {
      const size_t len = strlen(names);
      snprintf(names + len, size - len, "%s%s", n ? ", " : "", e->d_name);
    }
    ++n;
  }
  closedir(d);
  return n;
}

/** The temporaries of `target` made on this host (atomic_file.h) left in its directory: their
 *  number. Unlike qp_test_find_temps, blind to other tests' files in a shared directory. */
static inline int qp_test_temps_of(const char *target) {
  char prefix[QP_ATOMIC_PATH_MAX];
  if (!qp_atomic_temp_prefix(target, prefix, sizeof prefix)) return -1;
  char *slash = strrchr(prefix, '/'); /* "<dir>/.<name>.qmlpipe-tmp.<host>." */
  *slash = '\0';
  DIR *d = opendir(prefix);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += strncmp(e->d_name, slash + 1, strlen(slash + 1)) == 0;
  closedir(d);
  return n;
}

#define TEST_RETURN() (qp_test_failures == 0 ? 0 : 1)

/* 1 in the sanitizer build (-DQP_SANITIZE=address,undefined, cmake/qp_sanitize.cmake, which
 * defines QP_SANITIZED). ASan's shadow memory, redzones and allocator quarantine add resident
 * memory the budget does not track (10-40% of a stage's peak here, up to 300 MiB), ASan cannot
 * start under `ulimit -v`, and the instrumentation slows every process several-fold. A test
 * skips its assertions on measured RSS, on RLIMIT_AS and on wall time there, saying so where it
 * does; every other check (the tracked bytes against the model included) still runs. */
#ifdef QP_SANITIZED
#define QP_TEST_SANITIZED 1
#else
#define QP_TEST_SANITIZED 0
#endif

#endif
