/* legendre.c: beam transfer functions. */
#include "legendre.h"

#include <math.h>

double qp_beam_gaussian(int l, double fwhm_arcmin) {
  if (fwhm_arcmin <= 0.0) return 1.0;
  double fwhm = fwhm_arcmin * M_PI / (180.0 * 60.0);
  double sigma = fwhm / sqrt(8.0 * log(2.0));
  return exp(-0.5 * (double)l * (double)(l + 1) * sigma * sigma);
}
