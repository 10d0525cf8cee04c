/* legendre.h: Legendre polynomials and the per-multipole weights of the T covariance. */
#ifndef QP_LEGENDRE_H
#define QP_LEGENDRE_H

/** p[l] = P_l(z) for l = 0..lmax by the three-term recurrence (stable upward for |z| <= 1). */
static inline void qp_legendre(int lmax, double z, double *p) {
  p[0] = 1.0;
  if (lmax >= 1) p[1] = z;
  for (int l = 2; l <= lmax; ++l)
    p[l] = ((double)(2 * l - 1) * z * p[l - 1] - (double)(l - 1) * p[l - 2]) / (double)l;
}

/** Gaussian beam transfer B_l for a FWHM in arcmin (1 for fwhm 0). */
double qp_beam_gaussian(int l, double fwhm_arcmin);

#endif
