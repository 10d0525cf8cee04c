/* test_nan_checks.c: the suite's one NaN-aware comparison (tests/test_util.h) fed NaN, +inf
 * and -inf, so that no numerical check of the suite can "match" a broken result.
 *
 * 1. qp_test_within: passes only a finite error <= the tolerance (the bound itself included);
 *    NaN, +inf, -inf errors and a NaN tolerance fail.
 * 2. qp_test_worst keeps a NaN however it arrives (where fmax drops it: checked too, as the
 *    reason for all this), and the larger of two finite errors.
 * 3. qp_test_rel_diff, qp_test_max_diff, qp_test_max_abs, qp_test_max_rel_diff: NaN, +inf or
 *    -inf in the reference, in the result or in the scale, at the first, middle and last index,
 *    makes the error NaN (and qp_test_within fail); finite values within and outside the
 *    tolerance pass and fail.
 * 4. TEST_WITHIN itself. It counts a failure in qp_test_failures, the counter whose value is
 *    this program's exit status (TEST_RETURN), so a deliberate failure would fail the test:
 *    expect_within() saves the counter, runs TEST_WITHIN, checks that the counter rose by
 *    exactly one (a failure) or not at all (a pass), and restores the saved value. The macro's
 *    message for a deliberate failure appears on stderr, after a line saying it is expected. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "test_util.h"

enum { N = 7 }; /* first, middle and last: 0, 3, 6 */

static const double bad_values[] = {NAN, -NAN, INFINITY, -INFINITY};
static const char *const bad_names[] = {"NaN", "-NaN", "+inf", "-inf"};
enum { N_BAD = sizeof bad_values / sizeof bad_values[0] };
static const int positions[] = {0, N / 2, N - 1};

/* A reference and a result 1e-12 relative apart at most (scale 4). */
static void fill(double *ref, double *got) {
  for (int i = 0; i < N; ++i) {
    ref[i] = i == 2 ? -4.0 : 1.0 + 0.25 * i; /* largest |ref| 4, with a sign */
    got[i] = ref[i] + (i == 5 ? 4e-12 : 0.0);
  }
}

/* 1. The within check. */
static void check_within(void) {
  TEST_ASSERT(qp_test_within(0.0, 0.0), "0 within 0");
  TEST_ASSERT(qp_test_within(1e-12, 1e-12), "the tolerance itself passes");
  TEST_ASSERT(!qp_test_within(nextafter(1e-12, 1.0), 1e-12), "just above the tolerance passed");
  TEST_ASSERT(qp_test_within(DBL_MAX, INFINITY), "a finite error within an infinite tolerance");
  for (int k = 0; k < N_BAD; ++k) {
    TEST_ASSERT(!qp_test_within(bad_values[k], 1.0), "an error of %s passed", bad_names[k]);
    TEST_ASSERT(!qp_test_within(bad_values[k], INFINITY), "%s passed an infinite tolerance",
                bad_names[k]);
  }
  TEST_ASSERT(!qp_test_within(0.0, NAN), "a NaN tolerance passed");
}

/* 2. The NaN-keeping maximum. */
static void check_worst(void) {
  TEST_ASSERT(qp_test_worst(1.0, 2.0) == 2.0 && qp_test_worst(2.0, 1.0) == 2.0, "max of 1, 2");
  TEST_ASSERT(qp_test_worst(0.0, INFINITY) == INFINITY, "max with +inf");
  TEST_ASSERT(isnan(qp_test_worst(0.0, NAN)) && isnan(qp_test_worst(NAN, 0.0)) &&
                  isnan(qp_test_worst(NAN, NAN)) && isnan(qp_test_worst(INFINITY, NAN)),
              "qp_test_worst dropped a NaN");
  /* Accumulated over an array with a NaN at the first, middle and last index. */
  for (int p = 0; p < 3; ++p) {
    double v[N], worst = 0.0, with_fmax = 0.0;
    for (int i = 0; i < N; ++i)
      v[i] = 1e-14 * i;
    v[positions[p]] = NAN;
    for (int i = 0; i < N; ++i) {
      worst = qp_test_worst(worst, v[i]);
      with_fmax = fmax(with_fmax, v[i]);
    }
    TEST_ASSERT(isnan(worst), "a NaN at index %d was dropped", positions[p]);
    TEST_ASSERT(!qp_test_within(worst, 1e-10), "a NaN at index %d passed", positions[p]);
    /* The defect this replaces: fmax skips the NaN and the "error" looks tiny. */
    TEST_ASSERT(!isnan(with_fmax) && with_fmax <= 1e-10, "fmax kept the NaN at index %d (%g)",
                positions[p], with_fmax);
  }
}

/* 3a. One pair. */
static void check_rel_diff(void) {
  TEST_ASSERT(qp_test_rel_diff(0.0, 0.0) == 0.0, "0 vs 0");
  TEST_ASSERT(qp_test_rel_diff(2.0, 2.0) == 0.0, "2 vs 2");
  const double d = qp_test_rel_diff(1.0, 1.0 + 1e-12);
  TEST_ASSERT(qp_test_within(d, 2e-12) && !qp_test_within(d, 1e-13), "1 vs 1 + 1e-12: %g", d);
  TEST_ASSERT(qp_test_within(qp_test_rel_diff(-3.0, -3.0 * (1 + 1e-9)), 1.1e-9), "negatives");
  for (int k = 0; k < N_BAD; ++k) {
    const double x = bad_values[k];
    TEST_ASSERT(isnan(qp_test_rel_diff(x, 1.0)), "%s as the first value", bad_names[k]);
    TEST_ASSERT(isnan(qp_test_rel_diff(1.0, x)), "%s as the second value", bad_names[k]);
    TEST_ASSERT(isnan(qp_test_rel_diff(x, x)), "%s against itself", bad_names[k]);
    TEST_ASSERT(!qp_test_within(qp_test_rel_diff(x, x), 1.0), "%s vs itself passed", bad_names[k]);
  }
}

/* 3b. Arrays: max_diff, max_abs, max_rel_diff, with a bad value in the reference or the
 * result at the first, middle and last index, and bad scales. */
static void check_arrays(void) {
  double ref[N], got[N];
  fill(ref, got);
  /* Finite: max |got - ref| = 4e-12 (index 5), max |ref| = 4 (index 2): relative 1e-12. */
  TEST_ASSERT(qp_test_max_abs(ref, N) == 4.0, "max |ref| %g, expected 4", qp_test_max_abs(ref, N));
  TEST_ASSERT(qp_test_max_abs(ref, 0) == 0.0, "max |ref| of nothing");
  double e = qp_test_max_diff(got, ref, N, 1.0);
  TEST_ASSERT(qp_test_within(e, 4.1e-12) && !qp_test_within(e, 3.9e-12), "absolute %g", e);
  e = qp_test_max_diff(got, ref, N, 4.0);
  TEST_ASSERT(qp_test_within(e, 1.01e-12) && !qp_test_within(e, 0.99e-12), "scaled %g", e);
  e = qp_test_max_rel_diff(ref, got, N);
  TEST_ASSERT(qp_test_within(e, 1.01e-12) && !qp_test_within(e, 0.99e-12), "relative %g", e);
  TEST_ASSERT(qp_test_max_rel_diff(ref, ref, N) == 0.0, "a reference against itself");
  /* An all-zero reference: the absolute difference. */
  const double zeros[3] = {0, 0, 0}, small[3] = {0, 3e-15, 0};
  TEST_ASSERT(qp_test_max_rel_diff(zeros, small, 3) == 3e-15, "all-zero reference: %g",
              qp_test_max_rel_diff(zeros, small, 3));
  TEST_ASSERT(qp_test_max_rel_diff(zeros, zeros, 3) == 0.0, "zeros against zeros");

  for (int k = 0; k < N_BAD; ++k)
    for (int p = 0; p < 3; ++p) {
      const int at = positions[p];
      for (int side = 0; side < 3; ++side) { /* in the reference, the result, both */
        fill(ref, got);
        if (side != 1) ref[at] = bad_values[k];
        if (side != 0) got[at] = bad_values[k];
        static const char *const where[] = {"reference", "result", "reference and result"};
        const double md = qp_test_max_diff(got, ref, N, 4.0), ma = qp_test_max_abs(ref, N);
        const double mr = qp_test_max_rel_diff(ref, got, N),
                     mr_swapped = qp_test_max_rel_diff(got, ref, N);
        TEST_ASSERT(isnan(md) && !qp_test_within(md, 1.0), "max_diff: %s at %d in the %s gave %g",
                    bad_names[k], at, where[side], md);
        TEST_ASSERT(isnan(mr) && !qp_test_within(mr, 1.0),
                    "max_rel_diff: %s at %d in the %s gave %g", bad_names[k], at, where[side], mr);
        TEST_ASSERT(isnan(mr_swapped), "max_rel_diff (swapped): %s at %d in the %s gave %g",
                    bad_names[k], at, where[side], mr_swapped);
        if (side != 1) TEST_ASSERT(isnan(ma), "max_abs: %s at %d gave %g", bad_names[k], at, ma);
      }
    }
  /* Bad scales. */
  fill(ref, got);
  const double bad_scales[] = {NAN, INFINITY, -INFINITY, 0.0, -1.0};
  for (size_t s = 0; s < sizeof bad_scales / sizeof bad_scales[0]; ++s) {
    e = qp_test_max_diff(got, ref, N, bad_scales[s]);
    TEST_ASSERT(isnan(e) && !qp_test_within(e, 1.0), "max_diff with scale %g gave %g",
                bad_scales[s], e);
  }
}

/* 4. TEST_WITHIN: expect_within(err, tol, pass) runs the macro on (err, tol) and checks that
 * it counted no failure (pass) or exactly one (!pass), then restores qp_test_failures so that
 * a deliberate failure does not fail this program. */
static void expect_within(double err, double tol, int pass, const char *what) {
  const int saved = qp_test_failures;
  if (!pass) fprintf(stderr, "  expected failure (%s):\n  ", what);
  TEST_WITHIN(err, tol, "%s", what);
  const int counted = qp_test_failures - saved;
  qp_test_failures = saved; /* undo the deliberate failure */
  TEST_ASSERT(counted == (pass ? 0 : 1), "TEST_WITHIN(%g, %g) (%s): %d failure(s), expected %d",
              err, tol, what, counted, pass ? 0 : 1);
}

static void check_macro(void) {
  expect_within(0.0, 1e-12, 1, "zero");
  expect_within(1e-12, 1e-12, 1, "at the tolerance");
  expect_within(5e-13, 1e-12, 1, "within");
  expect_within(2e-12, 1e-12, 0, "outside");
  expect_within(NAN, 1e-12, 0, "NaN");
  expect_within(-NAN, 1e-12, 0, "-NaN");
  expect_within(INFINITY, 1e-12, 0, "+inf");
  expect_within(-INFINITY, 1e-12, 0, "-inf");
  expect_within(0.0, NAN, 0, "NaN tolerance");
  /* Through the helpers, as the tests use them: a NaN result at the last index. */
  double ref[N], got[N];
  fill(ref, got);
  got[N - 1] = NAN;
  expect_within(qp_test_max_rel_diff(ref, got, N), 1e-10, 0, "max_rel_diff with a NaN result");
  fill(ref, got);
  expect_within(qp_test_max_rel_diff(ref, got, N), 1e-10, 1, "max_rel_diff, finite");
}

int main(void) {
  check_within();
  check_worst();
  check_rel_diff();
  check_arrays();
  check_macro();
  if (qp_test_failures == 0) printf("test_nan_checks: all checks passed\n");
  return TEST_RETURN();
}
