/* compare_results.c: compares the results of two qmlpipe runs (REFERENCE.h5 OTHER.h5 [TOL]):
 * the Fisher matrix, y, the noise bias, C_hat and its error bars must agree to TOL relative
 * (default 1e-10), measured as max |a - b| / max |a| over each dataset with the suite's one
 * NaN-aware comparison (qp_test_max_rel_diff and TEST_WITHIN of tests/test_util.h): a NaN or
 * an infinity in either file fails, wherever it is. Exit 0 when they agree, 1 otherwise, 2 on a
 * bad command line. The conditioning figures of /diagnostics (rcond_*) must agree too.
 */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_h5.h"
#include "test_util.h"


/* How many of v[0..n) are NaN or infinite. */
static size_t count_not_finite(const double *v, hsize_t n) {
  size_t bad = 0;
  for (hsize_t i = 0; i < n; ++i)
    bad += !isfinite(v[i]);
  return bad;
}

/* /diagnostics' rcond_<matrix> of one file (NaN: not formed on the route, or missing). */
static double read_rcond(const char *path, const char *name) {
  double v = NAN;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) {
    if (H5LTget_attribute_double(f, "diagnostics", name, &v) < 0) v = NAN;
    H5Fclose(f);
  }
  H5Eclear2(H5E_DEFAULT);
  return v;
}

/* The conditioning guards judge the same figures on any number of ranks (issue 38): each
 * rcond the reference formed agrees, and none is formed in one file only. The Cholesky ones
 * to 1e-6 relative (the estimates take the same dlacn2 steps; their solves differ by
 * rounding). The LU one (SMW's I + K Lambda) to 25%: like dgecon, the estimate applies the
 * factors without the row interchanges, (LU)^-1 = A^-1 P^T, so its vectors, and the lower
 * bound they reach, follow the pivots, which near-ties make differ between OpenBLAS's
 * recursive dgetrf and pdgetrf (7% on smw_QU's 2x1 grid). */
static void check_rcond(const char *reference, const char *other) {
  static const char *const names[] = {"rcond_covariance", "rcond_noise", "rcond_smw_kernel",
                                      "rcond_fisher"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    const double a = read_rcond(reference, names[k]), b = read_rcond(other, names[k]);
    if (isnan(a) && isnan(b)) continue;
    const double rel = qp_test_rel_diff(a, b), tolerance = k == 2 ? 0.25 : 1e-6;
    printf("%-20s %.6g and %.6g  rel. difference %.3e  %s\n", names[k], a, b, rel,
           qp_test_within(rel, tolerance) ? "ok" : "DIFFERENT");
    TEST_WITHIN(rel, tolerance, "/diagnostics %s: %s against %s", names[k], other, reference);
  }
}

int main(int argc, char **argv) {
  char *end = NULL;
  const double tolerance = argc > 3 ? strtod(argv[3], &end) : 1e-10;
  if (argc < 3 || argc > 4 || (end && (*end != '\0' || end == argv[3])) ||
      !(isfinite(tolerance) && tolerance >= 0)) {
    fprintf(stderr, "usage: compare_results REFERENCE.h5 OTHER.h5 [TOLERANCE >= 0]\n");
    return 2;
  }
  static const char *const names[] = {"fisher", "spectra/yb", "spectra/noise_bias", "spectra/cl",
                                      "spectra/error"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    hsize_t na = 0, nb = 0;
    double *a = qp_test_h5_read_doubles(argv[1], names[k], &na), *b = qp_test_h5_read_doubles(argv[2], names[k], &nb);
    TEST_ASSERT(a && b && na == nb, "%s: cannot compare (missing, or sizes %llu and %llu)",
                names[k], (unsigned long long)na, (unsigned long long)nb);
    if (a && b && na == nb) {
      const double rel = qp_test_max_rel_diff(a, b, (size_t)na);
      const size_t bad_a = count_not_finite(a, na), bad_b = count_not_finite(b, nb);
      printf("%-20s %6llu values  max rel. difference %.3e  %s", names[k], (unsigned long long)na,
             rel,
             qp_test_within(rel, tolerance) ? "ok" : (isfinite(rel) ? "TOO LARGE" : "NOT FINITE"));
      if (bad_a || bad_b)
        printf("  (NaN or inf: %zu in the reference, %zu in the other)", bad_a, bad_b);
      putchar('\n');
      TEST_WITHIN(rel, tolerance, "%s: %s against %s", names[k], argv[2], argv[1]);
    }
    free(a);
    free(b);
  }
  check_rcond(argv[1], argv[2]);
  return TEST_RETURN();
}
