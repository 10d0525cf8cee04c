/* ylm.c: real spherical harmonics by the standard stable recursion in l at fixed m (ylm.h). */
#include "ylm.h"

#include <math.h>

/* lambda[m(2 lmax - m + 1)/2 + l] for l >= m: the triangle of lambda_lm, m-major. */
static inline int qp_tri(int lmax, int l, int m) { return m * (2 * lmax - m + 3) / 2 + (l - m); }

void qp_ylm_real(int ell_min, int lmax, double x, double phi, double *lambda, double *row) {
  const double sin_theta = sqrt(fmax(0.0, 1.0 - x * x));
  /* lambda_mm = (-1)^m sqrt((2m+1)/(4pi) (2m-1)!!/(2m)!!) sin^m: built up as a product. */
  double lmm = sqrt(1.0 / (4.0 * M_PI));
  for (int m = 0; m <= lmax; ++m) {
    if (m > 0) lmm *= -sqrt((2.0 * m + 1.0) / (2.0 * m)) * sin_theta;
    lambda[qp_tri(lmax, m, m)] = lmm;
    if (m + 1 <= lmax) lambda[qp_tri(lmax, m + 1, m)] = x * sqrt(2.0 * m + 3.0) * lmm;
    for (int l = m + 2; l <= lmax; ++l) {
      double a = sqrt((4.0 * l * l - 1.0) / ((double)l * l - (double)m * m));
      double b = sqrt((((double)(l - 1) * (l - 1)) - (double)m * m) /
                      (4.0 * (double)(l - 1) * (l - 1) - 1.0));
      lambda[qp_tri(lmax, l, m)] =
          a * (x * lambda[qp_tri(lmax, l - 1, m)] - b * lambda[qp_tri(lmax, l - 2, m)]);
    }
  }
  for (int l = ell_min; l <= lmax; ++l) {
    row[qp_ylm_index(l, 0, ell_min)] = lambda[qp_tri(lmax, l, 0)];
    for (int m = 1; m <= l; ++m) {
      double v = M_SQRT2 * lambda[qp_tri(lmax, l, m)];
      row[qp_ylm_index(l, m, ell_min)] = v * cos(m * phi);
      row[qp_ylm_index(l, -m, ell_min)] = v * sin(m * phi);
    }
  }
}
