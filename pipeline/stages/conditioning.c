/* conditioning.c: condition estimates and finiteness checks (conditioning.h). */
#include "conditioning.h"

#include <float.h>
#include <math.h>

static const char *const qp_rcond_names[QP_RCOND_COUNT] = {"covariance", "noise", "smw_kernel",
                                                           "fisher"};

const char *qp_rcond_name(qp_rcond_id id) {
  return id >= 0 && id < QP_RCOND_COUNT ? qp_rcond_names[id] : "?";
}

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
           qp_stage_label(), what, rcond, rcond > 0 ? DBL_EPSILON / rcond : INFINITY,
           p->cfg->accuracy, floor, advice && advice[0] ? "; " : "", advice ? advice : "");
  return QP_OK;
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

qp_err qp_check_finite(const double *values, int64_t n, const char *stage, const char *quantity) {
  for (int64_t i = 0; i < n; ++i)
    QP_CHECK(isfinite(values[i]), QP_ERR_NUMERICAL,
             "stage %s: %s holds a value that is not finite (%g at index %lld of %lld); nothing "
             "was written",
             stage, quantity, values[i], (long long)i, (long long)n);
  return QP_OK;
}
