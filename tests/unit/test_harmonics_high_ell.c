/* test_harmonics_high_ell: the basis of spin_harmonics.h at l up to 3071 (= 3 nside - 1 at nside
 * 1024) against mpmath (argv[1]: tests/data/legendre_high_ell.txt from
 * tools/make_legendre_reference.py, lambda_lm(theta) at 40 digits, no recursion).
 *
 * The points include m where lambda_mm ~ sin^m(theta) underflows (m log10 sin(theta) < -308)
 * while lambda_lm is O(1) at l = 3071: a plain double recursion returned 0 or denormals there
 * (the scaled recursion of spin_harmonics.c fixes it). Each value must be within 1e-12 of the
 * functions' scale plus what rounding cos(theta) to double costs (below); every T, Q and U
 * basis value at every point must be finite. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "spin_harmonics.h"
#include "test_util.h"

enum { LMAX = 3071 };

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s legendre_high_ell.txt\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  const int n = qp_harmonic_count(0, LMAX);
  double *work = malloc((size_t)qp_harmonics_work_size(LMAX) * sizeof *work);
  double *row[5];
  for (int k = 0; k < 5; ++k) row[k] = malloc((size_t)n * sizeof(double));
  char line[256];
  double theta_done = -1.0, worst_abs = 0.0, worst_rel = 0.0;
  int points = 0, underflow_zone = 0;
  while (fgets(line, sizeof line, f)) {
    double theta, ref;
    int l, m;
    if (line[0] == '#' || sscanf(line, "%lf %d %d %lf", &theta, &l, &m, &ref) != 4) continue;
    if (theta != theta_done) {
      /* phi = 0: t_l0 = lambda_l0, t_lm = sqrt(2) lambda_lm cos(0) for m > 0 */
      qp_harmonics_at(0, LMAX, theta, 0.0, work, row[0], row[1], row[2], row[3], row[4]);
      theta_done = theta;
      double largest = 0.0; /* NaN when any value is not finite */
      for (int k = 0; k < 5; ++k) largest = qp_test_worst(largest, qp_test_max_abs(row[k], (size_t)n));
      TEST_ASSERT(isfinite(largest), "theta %.6f: a basis value (T, Q or U) is not finite", theta);
    }
    const double got = row[0][qp_harmonic_index(l, m, 0)] / (m == 0 ? 1.0 : M_SQRT2);
    /* Beyond the recursion's own error (1e-12 of the functions' scale sqrt((2l+1)/(4pi))),
     * the input: x = cos theta is rounded to double, an error of ~eps / sin(theta) in theta,
     * times |d lambda / d theta| <= l scale: 4e-9 at theta 8e-4 (the polar ring of nside
     * 1024), 1e-11 on the equator. */
    const double scale = sqrt((2.0 * l + 1.0) / (4.0 * M_PI));
    const double tol = 1e-12 * scale + 2.0 * DBL_EPSILON * l * scale / sin(theta);
    const double err = fabs(got - ref);
    worst_abs = qp_test_worst(worst_abs, err);
    worst_rel = qp_test_worst(worst_rel, err / tol);
    TEST_WITHIN(err, tol, "theta %.6f l %d m %d: %.15g, reference %.15g", theta, l, m, got, ref);
    if (m * log10(sin(theta)) < -308 && fabs(ref) > 1e-3) ++underflow_zone;
    ++points;
  }
  fclose(f);
  printf("%d points (%d with |lambda| > 1e-3 where sin^m theta underflows): worst error %.2e, "
         "%.2f of its tolerance\n",
         points, underflow_zone, worst_abs, worst_rel);
  TEST_ASSERT(points >= 50, "only %d reference points read from %s", points, argv[1]);
  TEST_ASSERT(underflow_zone >= 3, "only %d points test the underflow zone", underflow_zone);
  free(work);
  for (int k = 0; k < 5; ++k) free(row[k]);
  return TEST_RETURN();
}
