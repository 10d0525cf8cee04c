/* ylm.h: real spherical harmonics (spin 0) at a point, for all (l, m) in a range of l.
 *
 * Y_l0 = lambda_l0(cos theta); for m > 0: Y_lm = sqrt(2) lambda_lm cos(m phi) and
 * Y_l,-m = sqrt(2) lambda_lm sin(m phi), with lambda_lm the orthonormalised associated Legendre
 * functions. By the addition theorem sum_m Y_lm(a) Y_lm(b) = (2l+1)/(4 pi) P_l(a . b), so a
 * map sum_lm a_lm Y_lm with a_lm ~ N(0, C_l) has exactly the covariance of signal.h. */
#ifndef QP_YLM_H
#define QP_YLM_H

/** Index of (l, m) in a row that starts at ell_min: l^2 - ell_min^2 + l + m. */
static inline int qp_ylm_index(int l, int m, int ell_min) {
  return l * l - ell_min * ell_min + l + m;
}
/** Number of (l, m) with ell_min <= l <= lmax. */
static inline int qp_ylm_count(int ell_min, int lmax) {
  return (lmax + 1) * (lmax + 1) - ell_min * ell_min;
}

/** row[qp_ylm_index(l, m, ell_min)] = Y_lm(theta, phi). `work` holds (lmax+1)(lmax+2)/2
 *  doubles. */
void qp_ylm_real(int ell_min, int lmax, double cos_theta, double phi, double *work, double *row);

#endif
