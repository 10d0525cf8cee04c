/* field_scale.c: the fields' units and SMW's conditioning bound (field_scale.h). */
#include "field_scale.h"

#include <float.h>
#include <math.h>

double qp_rcond_floor(double accuracy) { return DBL_EPSILON / accuracy; }

/* 2^-round(log2(d) / 2): d brought to [1/2, 2) by a power of 4, whose root is exact. */
static double qp_power_of_two_scale(double d) {
  if (!(isfinite(d) && d > 0)) return 1.0;
  int e = 0;
  (void)frexp(d, &e); /* d = m 2^e, m in [1/2, 1) */
  return ldexp(1.0, -(e / 2));
}

qp_run_scale qp_field_scale(const qp_problem *p, int ell_from, int ell_to, int with_noise) {
  double signal[2] = {0.0, 0.0};
  for (int l = ell_from < 0 ? 0 : ell_from; l <= ell_to && l <= p->cfg->lmax_signal; ++l) {
    signal[0] += qp_field_weight(p, 0, 0, l) * p->cls.cl[QP_TT][l];
    if (l >= 2)
      signal[1] += qp_field_weight(p, 1, 1, l) * 0.5 * (p->cls.cl[QP_EE][l] + p->cls.cl[QP_BB][l]);
  }
  qp_run_scale s = {.runs = 2, .end = {p->n_obs_t, p->n_pix}};
  for (int f = 0; f < 2; ++f)
    s.factor[f] = qp_power_of_two_scale(signal[f] + (with_noise ? p->noise_field_mean[f] : 0.0));
  return s;
}

/* The unscaled bound of qp_signal_eigen_bound_scaled for field 0 (T) or 1 (Q and U), 0 when
 * the field is absent. */
static double qp_signal_eigen_bound_field(const qp_problem *p, int field) {
  if (field == 0 ? p->n_obs_t == 0 : p->n_obs_p == 0) return 0.0;
  double largest = 0.0;
  for (int l = p->cfg->ell_min; l <= p->cfg->lmax; ++l) {
    double c = field == 0 ? p->cls.cl[QP_TT][l]
               : l >= 2   ? p->cls.cl[QP_EE][l] + p->cls.cl[QP_BB][l]
                          : 0.0;
    c *= qp_field_weight(p, field, field, l) * 4.0 * M_PI / (2.0 * l + 1.0); /* B_l^2 w_l^2 */
    largest = c > largest ? c : largest;
  }
  return 3.0 * (double)p->n_sky / (4.0 * M_PI) * largest;
}

double qp_signal_eigen_bound_scaled(const qp_problem *p, const qp_run_scale *scale) {
  double bound = 0.0;
  for (int f = 0; f < 2; ++f) {
    const double s = f < scale->runs ? scale->factor[f] : 1.0;
    bound += s * s * qp_signal_eigen_bound_field(p, f);
  }
  return bound;
}

double qp_smw_covariance_rcond(const qp_problem *p, const qp_run_scale *scale, double rcond_noise,
                               double noise_max) {
  return noise_max > 0 ? rcond_noise / (1.0 + qp_signal_eigen_bound_scaled(p, scale) / noise_max)
                       : 0.0;
}

void qp_scaled_noise_diagonal(const qp_problem *p, const qp_run_scale *scale,
                              const double *variance, double *rcond, double *largest) {
  double lo = INFINITY, hi = 0.0;
  for (int64_t i = 0; i < p->n_pix; ++i) {
    const double f = qp_run_scale_at(scale, i);
    const double v = fabs(variance ? variance[i] : p->noise_field_mean[i >= p->n_obs_t]) * f * f;
    if (!isfinite(v)) lo = NAN;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  *largest = hi;
  *rcond = isnan(lo) ? NAN : hi > 0 ? lo / hi : 0.0;
}
