/* test_numerical_guards: the guards of issue "correct at every size", each made to happen.
 * 1. Products whose stride passes the 32-bit BLAS integer (n_pix > 46340): with the hook
 *    QP_TEST_BLAS_INT_MAX lowered below n_pix^2, fisher_run sums the Gram matrix and the
 *    streamed dots without BLAS; F, b, y and C_hat equal the BLAS run's to 1e-12, unchunked
 *    (syrk path) and chunked (gemm path). Before, that run failed in fisher_run.
 * 2. Conditioning: one pixel of variance 1e-12 in a variance map. SMW (forced) is refused,
 *    naming N and its rcond; `harmonic_method: auto` moves to projection and says why; the
 *    result equals pixel-direct's to 1e-8. Before, SMW returned spectra 0.6% off, exit 0.
 * 3. Variance 1e-300 everywhere: every route is refused with exit 5 (SMW on I + K Lambda,
 *    which before returned TT ~ 3e5 with exit 0).
 * 4. A map value whose square overflows (1e200) at an observed pixel: a clear input error
 *    naming the file and pixel (before: NaN in /spectra/cl, exit 0). One just below that
 *    limit (1.3e154) still overflows y: exit 5 from the finiteness check of spectra_run.
 * 5. The rcond figures a run records, and the two checks called directly: a Fisher rcond below
 *    the floor, a NaN in a result (qp_check_finite), each naming what is at fault.
 * 6. The fields' units (issue 38 item 2): T+Q+U with T in units 2^17 smaller runs on every
 *    route with the same rcond and C_hat scaled exactly (check_field_units). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conditioning.h"
#include "fits_map.h"
#include "fixture.h"
#include "test_util.h"

typedef struct kept {
  int64_t np, nm;
  double *fisher, *bias, *yb, *cl;
} kept;

static kept keep(const qp_problem *p) {
  kept k = {p->n_params, p->n_maps, NULL, NULL, NULL, NULL};
  const size_t np = (size_t)k.np, nm = (size_t)k.nm;
  k.fisher = malloc(np * np * sizeof(double));
  k.bias = malloc(np * sizeof(double));
  k.yb = malloc(nm * np * sizeof(double));
  k.cl = malloc(nm * np * sizeof(double));
  memcpy(k.fisher, p->fisher, np * np * sizeof(double));
  memcpy(k.bias, p->noise_bias, np * sizeof(double));
  memcpy(k.yb, p->yb, nm * np * sizeof(double));
  memcpy(k.cl, p->cl, nm * np * sizeof(double));
  return k;
}

static void kept_free(kept *k) {
  free(k->fisher);
  free(k->bias);
  free(k->yb);
  free(k->cl);
}

/* The largest difference of F, b, y, C_hat from the reference, relative to each one's scale. */
static double compare(const kept *ref, const qp_problem *p, const char *label) {
  const size_t np = (size_t)ref->np, nm = (size_t)ref->nm;
  double df = qp_test_max_rel_diff(ref->fisher, p->fisher, np * np);
  double db = qp_test_max_rel_diff(ref->bias, p->noise_bias, np);
  double dy = qp_test_max_rel_diff(ref->yb, p->yb, nm * np);
  double dc = qp_test_max_rel_diff(ref->cl, p->cl, nm * np);
  printf("%s: F %.2e, b %.2e, y %.2e, C_hat %.2e\n", label, df, db, dy, dc);
  return qp_test_worst(qp_test_worst(df, db), qp_test_worst(dy, dc));
}

static void check_blas_split(void) {
  qp_fixture f = {.name = "guards_split",
                  .nside = 8,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 12,
                  .lmax_signal = 14,
                  .bin_width = 2,
                  .sim_lmax = 14,
                  .n_maps = 2,
                  .noise_variance = 5.0,
                  .dl_flat = 100.0,
                  .seed = 5};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  cfg.path = QP_PATH_PIXEL_DIRECT;
  qp_problem p;
  qp_meter_sample b;
  TEST_OK(qp_fixture_run(&cfg, &p, &b));
  kept ref = keep(&p);
  const size_t tracked = qp_model_peak(&p.plan->model), overhead = p.plan->model.overhead_bytes;
  printf("split: n_pix %lld (n_pix^2 = %lld), %d parameters\n", (long long)p.n_pix,
         (long long)(p.n_pix * p.n_pix), p.n_params);
  qp_problem_free(&p);
  setenv("QP_TEST_BLAS_INT_MAX", "1000", 1); /* far below n_pix^2: every dot without BLAS */
  TEST_OK(qp_fixture_run(&cfg, &p, &b));
  TEST_WITHIN(compare(&ref, &p, "dots without BLAS, unchunked"), 1e-12, "unchunked split");
  qp_problem_free(&p);
  cfg.host_limit = (double)overhead + 0.6 * (double)tracked; /* streamed: the gemm of dots */
  TEST_OK(qp_fixture_run(&cfg, &p, &b));
  TEST_ASSERT(p.plan->model_dims.fisher_chunk < p.n_params, "the run was not chunked");
  TEST_WITHIN(compare(&ref, &p, "dots without BLAS, chunked"), 1e-12, "chunked split");
  qp_problem_free(&p);
  /* A malformed hook is said and ignored (it was read as 1000 before): the BLAS path, bitwise
   * the reference (== is false for NaN, so a NaN fails too). */
  cfg.host_limit = 0;
  setenv("QP_TEST_BLAS_INT_MAX", "1000abc", 1);
  TEST_OK(qp_fixture_run(&cfg, &p, &b));
  const double malformed = compare(&ref, &p, "malformed hook ignored");
  TEST_ASSERT(malformed == 0.0, "QP_TEST_BLAS_INT_MAX=1000abc changed the results by %.3g",
              malformed);
  qp_problem_free(&p);
  unsetenv("QP_TEST_BLAS_INT_MAX");
  kept_free(&ref);
  qp_config_free(&cfg);
}

/* A variance map of the fixture's nside: `value` everywhere, `odd` at RING pixel `at`. */
static void write_variance_map(const char *path, int64_t nside, double value, double odd,
                               int64_t at) {
  const int64_t n = 12 * nside * nside;
  double *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; ++i)
    v[i] = value;
  if (at >= 0) v[at] = odd;
  const char *names[1] = {"T_VARIANCE"};
  const double *cols[1] = {v};
  TEST_OK(qp_fits_map_write(path, nside, 1, names, cols));
  free(v);
}

static void check_smw_conditioning(void) {
  qp_fixture f = {.name = "guards_smw",
                  .nside = 8,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 10,
                  .lmax_signal = 10,
                  .bin_width = 3,
                  .sim_lmax = 10,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .dl_flat = 100.0,
                  .seed = 9};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem p;
  qp_meter_sample b;
  cfg.path = QP_PATH_PIXEL_DIRECT;
  TEST_OK(qp_fixture_run(&cfg, &p, &b)); /* for an observed pixel */
  const int64_t odd = p.observed[p.n_observed / 2];
  qp_problem_free(&p);
  write_variance_map("guards_smw_variance.fits", f.nside, 1.0, 1e-12, odd);
  cfg.noise_kind = QP_NOISE_VARIANCE_MAP;
  snprintf(cfg.noise_file, sizeof cfg.noise_file, "guards_smw_variance.fits");
  TEST_OK(qp_fixture_run(&cfg, &p, &b));
  kept ref = keep(&p);
  printf("pixel-direct: rcond C %.3g, F %.3g\n", p.rcond[QP_RCOND_COVARIANCE],
         p.rcond[QP_RCOND_FISHER]);
  TEST_ASSERT(isfinite(p.rcond[QP_RCOND_COVARIANCE]) && isfinite(p.rcond[QP_RCOND_FISHER]),
              "pixel-direct recorded no rcond of C or F");
  qp_problem_free(&p);

  cfg.path = QP_PATH_HARMONIC;
  cfg.harmonic_method = 1; /* smw, forced */
  /* N is inverted exactly; what the tiny variance ruins is C's bound (and I + K Lambda, rcond
   * 1.6e-15): forced through both guards by hand, SMW's C_hat was 2.6e-4 off pixel-direct's
   * (docs/numerical-checks.md). */
  EXPECT_ERROR(qp_fixture_run(&cfg, &p, &b), QP_ERR_NUMERICAL, "(SMW's bound",
               "rcond = ", "harmonic_method: projected");
  cfg.harmonic_method = 0; /* auto: SMW would be cheapest, but is skipped */
  TEST_OK(qp_fixture_run(&cfg, &p, &b));
  printf("auto: %s\n", p.plan->path_reason);
  TEST_ASSERT(!p.plan->smw && strstr(p.plan->path_reason, "harmonic (smw) skipped"),
              "auto did not leave SMW: %s", p.plan->path_reason);
  TEST_WITHIN(compare(&ref, &p, "projection vs pixel-direct, one variance 1e-12"), 1e-8,
              "the route auto chose differs from pixel-direct");
  qp_problem_free(&p);
  kept_free(&ref);

  /* Cross-spectra on SMW judge each set's N: the same tiny variance in noise2 (maps: a plain
   * variance of 1) is refused by C_B's bound, naming maps2's covariance. */
  cfg.noise_kind = QP_NOISE_VARIANCE;
  cfg.maps2 = malloc((size_t)cfg.n_maps * sizeof *cfg.maps2);
  TEST_ASSERT(cfg.maps2, "out of memory for maps2");
  memcpy(cfg.maps2, cfg.maps, (size_t)cfg.n_maps * sizeof *cfg.maps2);
  cfg.n_maps2 = cfg.n_maps;
  cfg.noise2_kind = QP_NOISE_VARIANCE_MAP;
  snprintf(cfg.noise2_file, sizeof cfg.noise2_file, "guards_smw_variance.fits");
  cfg.path = QP_PATH_HARMONIC;
  cfg.harmonic_method = 1;
  EXPECT_ERROR(qp_fixture_run(&cfg, &p, &b), QP_ERR_NUMERICAL, "the covariance of maps2 C_B",
               "(SMW's bound", "harmonic_method: projected");
  /* Scalar noise2 variances are judged at plan time (planner_route.c): `auto` leaves SMW for
   * maps2's noise before any work, where it used to pick SMW and have basis_setup refuse it.
   * C_B = S + 1e-30 is ill-conditioned on every route; what matters is who says so. */
  cfg.noise2_kind = QP_NOISE_VARIANCE;
  cfg.noise2_variance = cfg.noise2_variance_pol = 1e-30;
  cfg.harmonic_method = 0;
  {
    const qp_err err = qp_fixture_run(&cfg, &p, &b);
    const char *msg = err == QP_OK ? "" : qp_error_message();
    printf("auto, noise2 {variance: 1e-30}: %s\n", err == QP_OK ? "ran" : msg);
    TEST_ASSERT(!strstr(msg, "SMW's bound"), "auto still chose SMW for a noise2 it refuses: %s",
                msg);
    if (err == QP_OK) qp_problem_free(&p);
    qp_error_clear();
  }
  free(cfg.maps2);
  cfg.maps2 = NULL;
  cfg.n_maps2 = 0;
  cfg.noise_kind = QP_NOISE_VARIANCE_MAP;

  /* Nearly no noise anywhere: every route is refused, none returns numbers. */
  write_variance_map("guards_smw_variance.fits", f.nside, 1e-300, 1e-300, -1);
  const char *route[3] = {"pixel_direct", "smw", "projected"};
  for (int r = 0; r < 3; ++r) {
    cfg.path = r == 0 ? QP_PATH_PIXEL_DIRECT : QP_PATH_HARMONIC;
    cfg.harmonic_method = r;
    qp_err e = qp_fixture_run(&cfg, &p, &b);
    printf("variance 1e-300, %s: %s\n", route[r], e ? qp_error_message() : "ran");
    TEST_ASSERT(e == QP_ERR_NUMERICAL,
                "%s with variance 1e-300 returned %d (%s), expected a "
                "numerical error",
                route[r], (int)e, qp_err_name(e));
    TEST_ASSERT(e == QP_OK || strstr(qp_error_message(), "rcond") ||
                    strstr(qp_error_message(), "not positive definite"),
                "%s: the message names neither an rcond nor a failed factorisation", route[r]);
    qp_error_clear();
  }
  qp_config_free(&cfg);
}

/* Scalar variances decide before anything is read: TQU with a Q/U variance 1e-12 of T's. */
static void check_plan_time_skip(void) {
  qp_fixture f = {.name = "guards_plan",
                  .nside = 4,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = 6,
                  .lmax_signal = 6,
                  .bin_width = 2,
                  .sim_lmax = 6,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .noise_variance_pol = 1e-12,
                  .dl_flat = 100.0,
                  .seed = 7,
                  .fields = QP_FIELDS_TQU,
                  .ee_ratio = 0.1,
                  .bb_ratio = 0.01,
                  .te_corr = 0.3};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  cfg.path = QP_PATH_HARMONIC;
  qp_problem p;
  qp_meter_sample b;
  /* Projection then meets the same noise in C = S + N: Q and U carry almost no noise and
   * fewer signal modes than pixels, so C is singular too, and says so (the plan's choice is
   * what is checked here; path_reason outlives the failed run). */
  EXPECT_ERROR(qp_fixture_run(&cfg, &p, &b), QP_ERR_NUMERICAL, "covariance C = S + N", "rcond");
  printf("plan-time: %s\n", p.plan->path_reason);
  TEST_ASSERT(!p.plan->smw && strstr(p.plan->path_reason, "harmonic (smw) skipped") &&
                  strstr(p.plan->path_reason, "its bound of rcond(C)"),
              "the plan kept SMW with variances 1 and 1e-12: %s", p.plan->path_reason);
  qp_config_free(&cfg);
}

static void check_overflowing_map(void) {
  /* Signal and noise of 1e-6: C^-1 scales the map up by ~1e6 before it is squared. */
  qp_fixture f = {.name = "guards_big",
                  .nside = 4,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = 6,
                  .lmax_signal = 6,
                  .bin_width = 1,
                  .sim_lmax = 6,
                  .n_maps = 1,
                  .noise_variance = 1e-6,
                  .cl_flat = 1e-6,
                  .seed = 3};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  double v[192];
  for (int i = 0; i < 192; ++i)
    v[i] = 1.0;
  v[17] = 1e200;
  const char *names[1] = {"TEMPERATURE"};
  const double *cols[1] = {v};
  TEST_OK(qp_fits_map_write(cfg.maps[0], 4, 1, names, cols));
  qp_problem p;
  qp_meter_sample b;
  EXPECT_ERROR(qp_fixture_run(&cfg, &p, &b), QP_ERR_INPUT, cfg.maps[0], "RING pixel 17",
               "square overflows");
  /* Just inside that limit the quadratic form y = x^T E x still overflows: the last check
   * before writing stops it, naming the stage and the quantity. */
  v[17] = 1.3e154;
  TEST_OK(qp_fits_map_write(cfg.maps[0], 4, 1, names, cols));
  EXPECT_ERROR(qp_fixture_run(&cfg, &p, &b), QP_ERR_NUMERICAL, "spectra_run", "not finite");
  qp_config_free(&cfg);
}

static void check_direct(void) {
  qp_config cfg;
  qp_config_defaults(&cfg);
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  /* accuracy 1e-6: the floor is eps / 1e-6 = 2.2e-10 */
  TEST_OK(qp_conditioning_check(&p, QP_RCOND_FISHER, 1e-9, "the Fisher matrix F", "advice"));
  EXPECT_ERROR(
      qp_conditioning_check(&p, QP_RCOND_FISHER, 1e-11, "the Fisher matrix F", "use wider bins"),
      QP_ERR_NUMERICAL, "the Fisher matrix F", "rcond = 1e-11", "use wider bins");
  EXPECT_ERROR(qp_conditioning_check(&p, QP_RCOND_SMW, NAN, "the SMW kernel", ""), QP_ERR_NUMERICAL,
               "the SMW kernel", "nan");
  cfg.accuracy = 1e-3; /* a looser accuracy accepts what 1e-6 refused */
  TEST_OK(qp_conditioning_check(&p, QP_RCOND_FISHER, 1e-11, "the Fisher matrix F", ""));
  TEST_ASSERT(qp_rcond_diagonal((double[]){2.0, 4.0, 1e-3}, 3) == 1e-3 / 4.0,
              "rcond of a diagonal");
  double y[4] = {1.0, 2.0, NAN, 3.0};
  EXPECT_ERROR(qp_check_finite(y, 4, "spectra_run", "C_hat (/spectra/cl)"), QP_ERR_NUMERICAL,
               "spectra_run", "C_hat (/spectra/cl)", "index 2");
  y[2] = INFINITY;
  EXPECT_ERROR(qp_check_finite(y, 4, "fisher_run", "the Fisher matrix F"), QP_ERR_NUMERICAL,
               "fisher_run", "inf");
  y[2] = 0.0;
  TEST_OK(qp_check_finite(y, 4, "fisher_run", "F"));
}

/* The Fisher guard in error bars (qp_spectra_error_check): eps / rcond(Fe) x the largest
 * signal-to-noise |C_hat_p| sqrt(F_pp), against accuracy 1e-6. */
static void check_spectra_error(void) {
  qp_config cfg;
  qp_config_defaults(&cfg);
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  double fisher[4] = {1e12, 0.0, 0.0, 1e-12}; /* scales 24 decades apart, equilibrated 1 */
  double cl[2] = {3e-6, 5e5};                 /* signal-to-noise 3 and 0.5 */
  p.fisher = fisher;
  p.cl = cl;
  p.n_params = 2;
  p.n_maps = 1;
  p.rcond[QP_RCOND_FISHER] = 1.0;
  TEST_OK(qp_spectra_error_check(&p));
  TEST_WITHIN(fabs(p.spectra_error - 3.0 * DBL_EPSILON) / DBL_EPSILON, 1e-12,
              "error = eps x 3: %.3g", p.spectra_error);
  p.rcond[QP_RCOND_FISHER] = 1e-9; /* a signal-to-noise of 3 x 4.5e9 eps: 6.7e-7 of sigma, ok */
  TEST_OK(qp_spectra_error_check(&p));
  cl[0] = 3e-5; /* signal-to-noise 30: 6.7e-6 of the error bars, refused */
  EXPECT_ERROR(qp_spectra_error_check(&p), QP_ERR_NUMERICAL, "spectra_run",
               "rcond = 1e-09 after equilibration", "~6.7e-06 of its error bars",
               "signal-to-noise up to 30", "accuracy 1.0e-06");
  TEST_ASSERT(p.spectra_error > 6.6e-6 && p.spectra_error < 6.7e-6,
              "the refused error is still recorded: %.3g", p.spectra_error);
  p.rcond[QP_RCOND_FISHER] = NAN; /* not estimated: never passes */
  EXPECT_ERROR(qp_spectra_error_check(&p), QP_ERR_NUMERICAL, "Fisher matrix F");
  cfg.accuracy = 1e-3; /* a looser accuracy accepts the 6.7e-6 */
  p.rcond[QP_RCOND_FISHER] = 1e-9;
  TEST_OK(qp_spectra_error_check(&p));
}

/* The fields' units do not matter (issue 38): T+Q+U with T in units 2^17 times smaller (C^TT,
 * N_T x 2^34, C^TE x 2^17, T maps x 2^17, exactly) was refused on every route, raw rcond(C)
 * being ~2^-34 of the equilibrated one; now every route runs, records the same rcond of C as
 * in the original units, and gives C_hat scaled exactly by the units (TT 2^34, TE 2^17, EE
 * and BB 1) to 1e-12. */
static void check_field_units(void) {
  const double t = 131072.0; /* 2^17 */
  qp_fixture base = {.name = "guards_units",
                     .nside = 4,
                     .cut_deg = 20,
                     .ell_min = 2,
                     .lmax = 8,
                     .lmax_signal = 8,
                     .bin_width = 2,
                     .sim_lmax = 8,
                     .n_maps = 1,
                     .noise_variance = 10.0,
                     .noise_variance_pol = 0.5,
                     .dl_flat = 100.0,
                     .seed = 11,
                     .fields = QP_FIELDS_TQU,
                     .ee_ratio = 0.1,
                     .bb_ratio = 0.05,
                     .te_corr = 0.3};
  qp_fixture scaled = base;
  scaled.name = "guards_units_scaled";
  scaled.dl_flat *= t * t;
  scaled.noise_variance *= t * t;
  scaled.ee_ratio /= t * t;
  scaled.bb_ratio /= t * t;
  qp_config a, c;
  TEST_OK(qp_fixture_write(&base, &a));
  TEST_OK(qp_fixture_write(&scaled, &c));
  /* The simulator draws the same sky in the new units: T x 2^17, Q and U the same (its factor
   * of the TEB covariance judged EE against TT's scale before, and drew no E signal here).
   * Bitwise here; 1e-13 allows a BLAS that sums in another order from call to call. */
  qp_healpix_info info;
  TEST_OK(qp_fits_map_info(a.maps[0], &info));
  double *sky = malloc(6 * (size_t)info.n_sky * sizeof *sky);
  for (int col = 0; col < 3; ++col) {
    TEST_OK(qp_fits_map_read(a.maps[0], &info, col, sky + col * info.n_sky));
    TEST_OK(qp_fits_map_read(c.maps[0], &info, col, sky + (3 + col) * info.n_sky));
  }
  double worst_sky = 0.0;
  for (int f = 0; f < 3; ++f) {
    for (int64_t i = 0; i < info.n_sky; ++i)
      sky[f * info.n_sky + i] *= f == 0 ? t : 1.0;
    worst_sky = qp_test_worst(
        worst_sky,
        qp_test_max_rel_diff(sky + f * info.n_sky, sky + (3 + f) * info.n_sky, (size_t)info.n_sky));
  }
  printf("simulated sky in T's new units: worst relative difference %.2e\n", worst_sky);
  TEST_WITHIN(worst_sky, 1e-13, "simulate: not the same sky in T's new units");
  free(sky);
  const char *route[3] = {"pixel_direct", "smw", "projected"};
  for (int r = 0; r < 3; ++r) {
    a.path = c.path = r == 0 ? QP_PATH_PIXEL_DIRECT : QP_PATH_HARMONIC;
    a.harmonic_method = c.harmonic_method = r;
    qp_problem p, q;
    qp_meter_sample b;
    TEST_OK(qp_fixture_run(&a, &p, &b));
    const qp_err e = qp_fixture_run(&c, &q, &b);
    printf("%s, T in units 2^17 smaller: %s\n", route[r], e ? qp_error_message() : "ran");
    TEST_ASSERT(e == QP_OK, "%s refused T+Q+U for T's units", route[r]);
    if (e == QP_OK) {
      printf("  rcond C %.6g and %.6g\n", p.rcond[QP_RCOND_COVARIANCE],
             q.rcond[QP_RCOND_COVARIANCE]);
      TEST_WITHIN(qp_test_rel_diff(p.rcond[QP_RCOND_COVARIANCE], q.rcond[QP_RCOND_COVARIANCE]),
                  1e-12, "%s: rcond(C) depends on T's units", route[r]);
      double worst = 0.0;
      for (int64_t k = 0; k < p.n_params; ++k) {
        const qp_spectrum s = p.cfg->spectra[k / p.n_bins];
        const double unit = s == QP_TT ? t * t : s == QP_TE ? t : 1.0;
        worst = qp_test_worst(worst, qp_test_rel_diff(p.cl[k] * unit, q.cl[k]));
      }
      printf("  C_hat in the two units: worst relative difference %.2e\n", worst);
      TEST_WITHIN(worst, 1e-12, "%s: C_hat depends on T's units", route[r]);
      qp_problem_free(&q);
    }
    qp_problem_free(&p);
  }
  qp_config_free(&a);
  qp_config_free(&c);
}

int main(void) {
  check_field_units();
  check_direct();
  check_spectra_error();
  check_overflowing_map();
  check_plan_time_skip();
  check_blas_split();
  check_smw_conditioning();
  return TEST_RETURN();
}
