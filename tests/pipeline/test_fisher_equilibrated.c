/* test_fisher_equilibrated: the Fisher guard judges F after equilibration, in units of the error
 * bars (issue 38; stage_spectra.c).
 *
 * F's parameters differ in scale by decades (TT against BB at low noise), so rcond of F as it
 * stands is far below eps / accuracy although the estimates are well determined. Checked:
 * 1. T+Q+U, all six spectra unbinned to ell = 3 nside - 1, low noise: raw rcond(F) below the
 *    default floor (2.2e-10: the old guard refused it), yet the run passes at the default
 *    accuracy; C_hat equals a long-double Cholesky solve of the pipeline's F and y - b to 1e-9
 *    of the error bars, and the harmonic (projection) route equals pixel-direct to 1e-6 of
 *    them.
 * 2. A T+Q+U patch (|b| > 60 deg) to ell 23 in bins of 4 on the default route: the same checks.
 * 3. Truly degenerate: 10 unbinned multipoles from 3 pixels (at most 6 independent quadratic
 *    forms), refused as not positive definite or ill-conditioned. */
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conditioning.h"
#include "driver.h"
#include "fits_map.h"
#include "fixture.h"
#include "test_util.h"

/* rcond of F as it stands (dpotrf + dpocon on a copy): what the guard used to judge. */
static double raw_rcond(const double *f, int np) {
  double *a = malloc((size_t)np * np * sizeof *a);
  memcpy(a, f, (size_t)np * np * sizeof *a);
  double anorm = 0.0;
  for (int j = 0; j < np; ++j) {
    double s = 0.0;
    for (int i = 0; i < np; ++i)
      s += fabs(a[i + j * np]);
    anorm = s > anorm ? s : anorm;
  }
  double rcond = NAN;
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', np, a, np) == 0)
    (void)LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', np, a, np, anorm, &rcond);
  free(a);
  return rcond;
}

/* max over maps and parameters of |C_hat - c| / sigma, c solving F c = y - b by Cholesky in
 * long double (written out here, independent of LAPACK); NaN when anything is not finite. */
static double reference_error(const qp_problem *p) {
  const int np = p->n_params;
  long double *l = calloc((size_t)np * np, sizeof *l), *c = malloc((size_t)np * sizeof *c);
  double worst = 0.0;
  for (int j = 0; j < np; ++j) {
    long double d = p->fisher[j + j * np];
    for (int k = 0; k < j; ++k)
      d -= l[j + k * np] * l[j + k * np];
    if (!(d > 0)) worst = NAN;
    l[j + j * np] = sqrtl(d);
    for (int i = j + 1; i < np; ++i) {
      long double s = p->fisher[i + j * np];
      for (int k = 0; k < j; ++k)
        s -= l[i + k * np] * l[j + k * np];
      l[i + j * np] = s / l[j + j * np];
    }
  }
  for (int m = 0; m < p->n_maps; ++m) {
    for (int i = 0; i < np; ++i) { /* L z = y - b */
      long double s = (long double)p->yb[m * np + i] - p->noise_bias[i];
      for (int k = 0; k < i; ++k)
        s -= l[i + k * np] * c[k];
      c[i] = s / l[i + i * np];
    }
    for (int i = np - 1; i >= 0; --i) { /* L^T c = z */
      long double s = c[i];
      for (int k = i + 1; k < np; ++k)
        s -= l[k + i * np] * c[k];
      c[i] = s / l[i + i * np];
    }
    for (int q = 0; q < np; ++q)
      worst = qp_test_worst(worst, (double)fabsl(p->cl[m * np + q] - c[q]) / p->error[q]);
  }
  free(l);
  free(c);
  return worst;
}

/* max |a - b| / sigma over two runs' C_hat (sigma of the first). */
static double route_difference(const double *cl, const double *sigma, const qp_problem *p) {
  double worst = 0.0;
  const int np = p->n_params;
  for (int m = 0; m < p->n_maps; ++m)
    for (int q = 0; q < np; ++q)
      worst = qp_test_worst(worst, fabs(cl[m * np + q] - p->cl[m * np + q]) / sigma[q]);
  return worst;
}

/* Runs cfg on pixel-direct, checks the guard's figures and the reference solve, then on the
 * harmonic route (projection) and compares. `refused_before`: raw rcond(F) must be below the
 * default floor (the case the old guard refused). */
static void check_case(const char *label, qp_config *cfg, int refused_before) {
  qp_problem p;
  qp_meter_sample b;
  cfg->path = QP_PATH_PIXEL_DIRECT;
  TEST_OK(qp_fixture_run(cfg, &p, &b));
  if (!p.fisher) return;
  const int np = p.n_params;
  const double raw = raw_rcond(p.fisher, np), floor = qp_rcond_floor(cfg->accuracy);
  printf("%s: %d parameters, rcond(F) %.3g as it stands, %.3g equilibrated; error %.3g of the "
         "error bars (accuracy %.1e)\n",
         label, np, raw, p.rcond[QP_RCOND_FISHER], p.spectra_error, cfg->accuracy);
  if (refused_before)
    TEST_ASSERT(isfinite(raw) && raw < floor,
                "%s: rcond(F) %.3g is not below %.3g: no longer a scaling case", label, raw, floor);
  TEST_ASSERT(p.rcond[QP_RCOND_FISHER] >= floor, "%s: equilibrated rcond %.3g below %.3g", label,
              p.rcond[QP_RCOND_FISHER], floor);
  TEST_WITHIN(p.spectra_error, cfg->accuracy, "%s: the guard's error estimate", label);
  TEST_WITHIN(reference_error(&p), 1e-9, "%s: C_hat against a long-double solve, in sigma", label);
  double *cl = malloc((size_t)p.n_maps * np * sizeof *cl),
         *sigma = malloc((size_t)np * sizeof *sigma);
  memcpy(cl, p.cl, (size_t)p.n_maps * np * sizeof *cl);
  memcpy(sigma, p.error, (size_t)np * sizeof *sigma);
  qp_problem_free(&p);

  cfg->path = QP_PATH_HARMONIC;
  cfg->harmonic_method = 2; /* projected */
  TEST_OK(qp_fixture_run(cfg, &p, &b));
  if (p.cl) {
    const double d = route_difference(cl, sigma, &p);
    printf("%s: harmonic (projected) - pixel-direct: %.3g of the error bars\n", label, d);
    TEST_WITHIN(d, 1e-6, "%s: harmonic against pixel-direct, in sigma", label);
  }
  qp_problem_free(&p);
  cfg->harmonic_method = 0;
  free(cl);
  free(sigma);
}

static void fixture_six_spectra(qp_fixture *f) {
  f->fields = QP_FIELDS_TQU;
  f->noise_variance = 1e-4;
  f->noise_variance_pol = 2e-4;
  f->dl_flat = 1000.0;
  f->ee_ratio = 0.01;
  f->bb_ratio = 1e-4;
  f->te_corr = 0.5;
  f->n_spectra = 6;
  const qp_spectrum all[6] = {QP_TT, QP_EE, QP_BB, QP_TE, QP_TB, QP_EB};
  memcpy(f->spectra, all, sizeof all);
}

static void check_unbinned_full_sky(void) {
  qp_fixture f = {.name = "equil_full",
                  .nside = 4,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = 11,
                  .lmax_signal = 11,
                  .bin_width = 1,
                  .sim_lmax = 11,
                  .n_maps = 2,
                  .seed = 38};
  fixture_six_spectra(&f);
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  check_case("TQU nside 4, six spectra, ell 2..11 unbinned", &cfg, 1);
  qp_config_free(&cfg);
}

static void check_patch(void) {
  qp_fixture f = {.name = "equil_patch",
                  .nside = 8,
                  .cut_deg = 60,
                  .ell_min = 2,
                  .lmax = 23,
                  .lmax_signal = 23,
                  .bin_width = 4,
                  .sim_lmax = 23,
                  .n_maps = 2,
                  .seed = 39};
  fixture_six_spectra(&f);
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  check_case("TQU nside 8 patch |b| > 60, six spectra, ell 2..23 in bins of 4", &cfg, 1);
  qp_config_free(&cfg);
}

static void check_degenerate(void) {
  qp_fixture f = {.name = "equil_three",
                  .nside = 4,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = 11,
                  .lmax_signal = 11,
                  .bin_width = 1,
                  .sim_lmax = 11,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .dl_flat = 100.0,
                  .seed = 40};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  double mask[192] = {0};
  mask[5] = mask[77] = mask[150] = 1.0;
  const char *names[1] = {"MASK"};
  const double *cols[1] = {mask};
  TEST_OK(qp_fits_map_write(cfg.mask, 4, 1, names, cols));
  qp_problem p;
  qp_meter_sample b;
  cfg.path = QP_PATH_PIXEL_DIRECT;
  const qp_err err = qp_fixture_run(&cfg, &p, &b);
  printf("3 pixels, 10 multipoles: %s\n", err == QP_OK ? "accepted" : qp_error_message());
  TEST_ASSERT((err == QP_ERR_NOT_POSDEF || err == QP_ERR_NUMERICAL) &&
                  strstr(qp_error_message(), "Fisher matrix"),
              "10 multipoles from 3 pixels: status %d, '%s'", (int)err, qp_error_message());
  qp_error_clear();
  qp_config_free(&cfg);
}

int main(void) {
  check_unbinned_full_sky();
  check_patch();
  check_degenerate();
  return TEST_RETURN();
}
