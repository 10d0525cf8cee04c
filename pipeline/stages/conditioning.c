/* conditioning.c: condition estimates and finiteness checks (conditioning.h). */
#include "conditioning.h"

#include <float.h>
#include <math.h>

static const char *const qp_rcond_names[QP_RCOND_COUNT] = {"covariance", "noise", "smw_kernel",
                                                           "fisher"};

const char *qp_rcond_name(qp_rcond_id id) {
  return id >= 0 && id < QP_RCOND_COUNT ? qp_rcond_names[id] : "?";
}

double qp_rcond_floor(double accuracy) { return DBL_EPSILON / accuracy; }

double qp_rcond_diagonal(const double *d, int64_t n) {
  double lo = INFINITY, hi = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = fabs(d[i]);
    if (!isfinite(a)) return NAN;
    lo = a < lo ? a : lo;
    hi = a > hi ? a : hi;
  }
  return hi > 0 ? lo / hi : 0.0;
}

qp_err qp_conditioning_check(qp_problem *p, qp_rcond_id id, double rcond, const char *what,
                             const char *advice) {
  p->rcond[id] = rcond;
  const double floor = qp_rcond_floor(p->cfg->accuracy);
  QP_CHECK(isfinite(rcond) && rcond >= floor, QP_ERR_NUMERICAL,
           "stage %s: %s is too ill-conditioned for double precision: rcond = %.3g, so results "
           "would carry relative errors of ~%.1e, above accuracy %.1e (rcond must be >= %.3g)%s%s",
           qp_stage_label(), what, rcond,
           rcond > 0 ? DBL_EPSILON / rcond : INFINITY, p->cfg->accuracy, floor,
           advice && advice[0] ? "; " : "", advice ? advice : "");
  return QP_OK;
}

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
    signal[0] += p->ell_weight[l] * p->cls.cl[QP_TT][l];
    if (l >= 2) signal[1] += p->ell_weight[l] * 0.5 * (p->cls.cl[QP_EE][l] + p->cls.cl[QP_BB][l]);
  }
  qp_run_scale s = {.runs = 2, .end = {p->n_obs_t, p->n_pix}};
  for (int f = 0; f < 2; ++f)
    s.factor[f] =
        qp_power_of_two_scale(signal[f] + (with_noise ? p->noise_field_mean[f] : 0.0));
  return s;
}

qp_err qp_conditioned_potrf(qp_problem *p, qp_matrix *a, qp_rcond_id id, const char *what,
                            const char *advice, const qp_run_scale *scale, double *anorm_out) {
  double anorm = 0.0, rcond = 0.0;
  if (scale) QP_CALL(qp_linalg_scale(a, scale, scale));
  QP_CALL(qp_linalg_norm1(a, &anorm));
  if (anorm_out) *anorm_out = anorm;
  QP_CHECK(isfinite(anorm), QP_ERR_NUMERICAL, "stage %s: %s holds a value that is not finite",
           qp_stage_label(), what);
  QP_CALL(qp_linalg_potrf(a));
  QP_CALL(qp_linalg_pocon(a, anorm, &rcond));
  if (scale) {
    const qp_run_scale back = qp_run_scale_reciprocal(scale);
    QP_CALL(qp_linalg_scale(a, &back, NULL)); /* F L -> L, exactly */
  }
  QP_CALL(qp_conditioning_check(p, id, rcond, what, advice));
  return QP_OK;
}

/* The error of C_hat in error bars, eps / rcond(Fe) x the largest signal-to-noise (the
 * header says why); refused only above `accuracy`, recorded either way. */
qp_err qp_spectra_error_check(qp_problem *p) {
  const int64_t np = p->n_params, n_maps = p->n_maps;
  double snr = 1.0;
  for (int64_t m = 0; m < n_maps; ++m)
    for (int64_t q = 0; q < np; ++q) {
      const double s = fabs(p->cl[m * np + q]) * sqrt(p->fisher[q + q * np]);
      snr = s > snr ? s : snr;
    }
  const double rcond = p->rcond[QP_RCOND_FISHER];
  const double error = rcond > 0 ? DBL_EPSILON / rcond * snr : INFINITY;
  p->spectra_error = error;
  QP_CHECK(isfinite(error) && error <= p->cfg->accuracy, QP_ERR_NUMERICAL,
           "stage spectra_run: the Fisher matrix F is too ill-conditioned for double precision: "
           "rcond = %.3g after equilibration (unit diagonal), so C_hat would carry rounding "
           "errors of up to ~%.1e of its error bars (signal-to-noise up to %.3g), above "
           "accuracy %.1e; some bins are nearly unconstrained or degenerate with others: use "
           "wider bins, fewer spectra or a larger ell_min",
           rcond, error, snr, p->cfg->accuracy);
  return QP_OK;
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
    c *= p->ell_weight[l] * 4.0 * M_PI / (2.0 * l + 1.0); /* B_l^2 */
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

qp_err qp_check_finite(const double *values, int64_t n, const char *stage, const char *quantity) {
  for (int64_t i = 0; i < n; ++i)
    QP_CHECK(isfinite(values[i]), QP_ERR_NUMERICAL,
             "stage %s: %s holds a value that is not finite (%g at index %lld of %lld); nothing "
             "was written",
             stage, quantity, values[i], (long long)i, (long long)n);
  return QP_OK;
}
