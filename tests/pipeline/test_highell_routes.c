/* test_highell_routes: the three routes agree end to end (the qmlpipe binary) on a QU problem
 * whose signal model reaches ell 383 = 3 nside - 1 at nside 128, through the switch: EE, BB
 * and EB are estimated on ell 2..33 (bins of 16) and ell 34..383 stay in the model in
 * N_eff = N + S_fixed (the high-ell Wigner sums of pixel_matrices.c). A disc of 6.8 deg
 * (695 positions, n_pix 1390), diagonal noise of 1 muK^2 per Q and U pixel (the noise power
 * 6.4e-5 muK^2 sr matches C^EE near ell 383), C_ell of tests/data/cls_planck2015_highell.txt,
 * two maps drawn from N(0, S + N) of the patch. pixel_direct, harmonic smw and harmonic
 * projected must agree: F scale-free (|dF_pq| / sqrt(F_pp F_qq)) to 1e-8, C_hat to 1e-8 of
 * the error bars sqrt(diag F^-1), the error bars, y (per spectrum) and the noise bias b to
 * 1e-8 relative; every dataset finite; C_hat within 6 sigma of the fiducial. The bins are
 * wide because a 14-deg patch barely separates E from B below ell ~ 30: here cond(F) is 4e3,
 * while bins [2-17] [18-25] [26-32] give 2e5, bins of 13 to ell 40 8e5 and bins of 8 to ell 32
 * 7e10, where C_hat differs between routes by ~cond(F) x 1e-13 of sigma (1e-7 for the last)
 * although F agrees to 1e-13. Two maps and the three runs take ~25 s on 2 busy cores.
 *
 * usage: test_highell_routes PATH_OF_QMLPIPE CLS_FILE */
#include <chealpix.h>
#include <errno.h>
#include <hdf5.h>
#include <lapacke.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "clock.h"
#include "cls_text.h"
#include "fits_map.h"
#include "pixel_matrices.h"
#include "test_util.h"

enum { NSIDE = 128, LMAX = 33, LMAX_SIGNAL = 383, BIN_WIDTH = 16, N_MAPS = 2, N_ROUTES = 3 };
static const double disc_theta = 1.0, disc_phi = 0.7, disc_radius_deg = 6.8;
static const double noise_variance = 1.0; /* muK^2 per pixel, Q and U */
static const double tolerance = 1e-8;

static const char *const route_names[N_ROUTES] = {"pixel_direct", "smw", "projected"};
static const char *const route_keys[N_ROUTES] = {"path: pixel_direct\n",
                                                 "path: harmonic\nharmonic_method: smw\n",
                                                 "path: harmonic\nharmonic_method: projected\n"};
static const char *const route_banner[N_ROUTES] = {"path pixel_direct", "path harmonic (smw)",
                                                   "path harmonic (projected)"};

/* splitmix64, then Box-Muller: a reproducible standard normal stream. */
static uint64_t rng_state = 0x5eed0128u;
static double uniform01(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}
static double gaussian(void) {
  return sqrt(-2.0 * log(uniform01())) * cos(2.0 * M_PI * uniform01());
}

/* The RING pixels whose centres lie within the disc (ascending). */
static int64_t disc_pixels(int64_t **out) {
  const int64_t n_sky = 12 * (int64_t)NSIDE * NSIDE;
  double centre[3];
  ang2vec(disc_theta, disc_phi, centre);
  const double cos_r = cos(disc_radius_deg * M_PI / 180.0);
  int64_t *pixels = malloc((size_t)n_sky * sizeof *pixels), n = 0;
  for (int64_t p = 0; p < n_sky; ++p) {
    double v[3];
    pix2vec_ring64(NSIDE, p, v);
    if (v[0] * centre[0] + v[1] * centre[1] + v[2] * centre[2] > cos_r) pixels[n++] = p;
  }
  *out = pixels;
  return n;
}

/* Writes mask.fits and map_0000.fits.. (I = 0, Q, U; zero outside the disc): each map drawn
 * from N(0, S + N) of the patch, S to LMAX_SIGNAL (pixel_matrices.c), by its Cholesky factor. */
static int write_inputs(const qp_cls *cls, const int64_t *pixels, int64_t n_obs) {
  const int64_t n_sky = 12 * (int64_t)NSIDE * NSIDE;
  qp_config cfg;
  qp_config_defaults(&cfg);
  cfg.fields = QP_FIELDS_QU;
  cfg.ell_min = 2;
  cfg.lmax = cfg.lmax_signal = LMAX_SIGNAL;
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  p.nside = NSIDE;
  p.n_sky = n_sky;
  p.n_obs_p = p.n_observed = n_obs;
  p.n_pix = 2 * n_obs;
  p.observed = (int64_t *)pixels;
  p.vectors = malloc((size_t)(3 * n_obs) * sizeof(double));
  for (int64_t k = 0; k < n_obs; ++k)
    pix2vec_ring64(NSIDE, pixels[k], p.vectors + 3 * k);
  p.cls = *cls;
  p.ell_weight = malloc((size_t)(LMAX_SIGNAL + 1) * sizeof(double));
  for (int l = 0; l <= LMAX_SIGNAL; ++l)
    p.ell_weight[l] = (2.0 * l + 1.0) / (4.0 * M_PI);
  const int64_t n = p.n_pix;
  double *c = calloc((size_t)(n * n), sizeof *c);
  qp_pixel_matrices_build(&p, c, 0, 0, NULL, 0);
  for (int64_t i = 0; i < n; ++i)
    c[i + i * n] += noise_variance;
  int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, c, (lapack_int)n);
  TEST_ASSERT(info == 0, "Cholesky of S + N of the patch: info %d", info);

  double *sky = calloc((size_t)(3 * n_sky), sizeof *sky), *z = malloc((size_t)n * sizeof *z);
  const char *names[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  const double *cols[] = {sky, sky + n_sky, sky + 2 * n_sky};
  for (int m = 0; info == 0 && m < N_MAPS; ++m) {
    for (int64_t i = 0; i < n; ++i)
      z[i] = gaussian();
    for (int64_t i = 0; i < n; ++i) { /* x = L z */
      double x = 0;
      for (int64_t k = 0; k <= i; ++k)
        x += c[i + k * n] * z[k];
      sky[(i < n_obs ? 1 : 2) * n_sky + pixels[i % n_obs]] = x;
    }
    char path[64];
    snprintf(path, sizeof path, "map_%04d.fits", m);
    TEST_OK(qp_fits_map_write(path, NSIDE, 3, names, cols));
  }
  memset(sky, 0, (size_t)n_sky * sizeof *sky);
  for (int64_t k = 0; k < n_obs; ++k)
    sky[pixels[k]] = 1.0;
  const char *mask_name[] = {"MASK"};
  TEST_OK(qp_fits_map_write("mask.fits", NSIDE, 1, mask_name, cols));
  free(sky);
  free(z);
  free(c);
  free(p.vectors);
  free(p.ell_weight);
  return info == 0 && qp_test_failures == 0 ? 0 : 1;
}

typedef struct results {
  int64_t n_params;
  double *fisher, *cl, *error, *yb, *noise_bias; /* as in the file (row-major) */
} results;

static double *read_dataset(hid_t file, const char *name, int64_t expect, const char *path) {
  double *out = NULL;
  hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  if (set < 0) {
    TEST_ASSERT(0, "%s: no dataset %s", path, name);
    return NULL;
  }
  hid_t space = H5Dget_space(set);
  const int64_t count = (int64_t)H5Sget_simple_extent_npoints(space);
  TEST_ASSERT(count == expect, "%s: %s has %lld values, expected %lld", path, name,
              (long long)count, (long long)expect);
  if (count == expect) {
    out = malloc((size_t)count * sizeof *out);
    if (H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
      TEST_ASSERT(0, "%s: cannot read %s", path, name);
      free(out);
      out = NULL;
    }
  }
  H5Sclose(space);
  H5Dclose(set);
  return out;
}

static int read_results(const char *path, int64_t n_params, results *r) {
  memset(r, 0, sizeof *r);
  r->n_params = n_params;
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    TEST_ASSERT(0, "cannot open %s", path);
    return 1;
  }
  r->fisher = read_dataset(file, "/fisher", n_params * n_params, path);
  r->cl = read_dataset(file, "/spectra/cl", N_MAPS * n_params, path);
  r->error = read_dataset(file, "/spectra/error", n_params, path);
  r->yb = read_dataset(file, "/spectra/yb", N_MAPS * n_params, path);
  r->noise_bias = read_dataset(file, "/spectra/noise_bias", n_params, path);
  H5Fclose(file);
  return r->fisher && r->cl && r->error && r->yb && r->noise_bias ? 0 : 1;
}

static void free_results(results *r) {
  free(r->fisher);
  free(r->cl);
  free(r->error);
  free(r->yb);
  free(r->noise_bias);
}

/* Every dataset finite (qp_test_max_abs is NaN when any value is not). */
static void check_finite(const results *r, const char *route) {
  const int64_t np = r->n_params;
  const struct {
    const double *v;
    int64_t n;
    const char *name;
  } sets[] = {{r->fisher, np * np, "fisher"},
              {r->cl, N_MAPS * np, "cl"},
              {r->error, np, "error"},
              {r->yb, N_MAPS * np, "yb"},
              {r->noise_bias, np, "noise_bias"}};
  for (size_t k = 0; k < sizeof sets / sizeof sets[0]; ++k)
    TEST_ASSERT(isfinite(qp_test_max_abs(sets[k].v, (size_t)sets[k].n)),
                "%s: %s has a value that is not finite", route, sets[k].name);
}

/* Agreement of route `b` with the reference `a` (pixel-direct). */
static void compare(const results *a, const results *b, const char *route) {
  const int64_t np = a->n_params, n_bins = np / 3;
  double *x = malloc((size_t)(N_MAPS * np * np) * sizeof *x);
  double *y = malloc((size_t)(N_MAPS * np * np) * sizeof *y);
  /* F scale-free: F_pq / sqrt(F_pp F_qq), both with the reference's diagonal. */
  for (int64_t k = 0; k < np * np; ++k) {
    const int64_t i = k % np, j = k / np;
    const double s = sqrt(a->fisher[i + i * np] * a->fisher[j + j * np]);
    x[k] = a->fisher[k] / s;
    y[k] = b->fisher[k] / s;
  }
  const double df = qp_test_max_diff(x, y, (size_t)(np * np), 1.0);
  /* C_hat in units of the reference's error bars. */
  for (int64_t k = 0; k < N_MAPS * np; ++k) {
    x[k] = a->cl[k] / a->error[k % np];
    y[k] = b->cl[k] / a->error[k % np];
  }
  const double dc = qp_test_max_diff(x, y, (size_t)(N_MAPS * np), 1.0);
  /* Error bars relative, each to itself. */
  for (int64_t k = 0; k < np; ++k) {
    x[k] = 1.0;
    y[k] = b->error[k] / a->error[k];
  }
  const double de = qp_test_max_diff(x, y, (size_t)np, 1.0);
  /* y relative to its largest magnitude per spectrum (over maps and bins). */
  double dy = 0;
  for (int s = 0; s < 3; ++s) {
    int64_t n = 0;
    for (int m = 0; m < N_MAPS; ++m)
      for (int64_t q = s * n_bins; q < (s + 1) * n_bins; ++q, ++n) {
        x[n] = a->yb[m * np + q];
        y[n] = b->yb[m * np + q];
      }
    dy = qp_test_worst(dy, qp_test_max_diff(x, y, (size_t)n, qp_test_max_abs(x, (size_t)n)));
  }
  /* b relative to its largest magnitude. */
  const double db = qp_test_max_diff(a->noise_bias, b->noise_bias, (size_t)np,
                                     qp_test_max_abs(a->noise_bias, (size_t)np));
  printf("%-9s vs pixel_direct: F %.2e  C_hat %.2e sigma  error %.2e  y %.2e  b %.2e\n", route, df,
         dc, de, dy, db);
  TEST_WITHIN(df, tolerance, "%s: F (scale-free)", route);
  TEST_WITHIN(dc, tolerance, "%s: C_hat / sigma", route);
  TEST_WITHIN(de, tolerance, "%s: error bars", route);
  TEST_WITHIN(dy, tolerance, "%s: y", route);
  TEST_WITHIN(db, tolerance, "%s: noise bias", route);
  free(x);
  free(y);
}

int main(int argc, char **argv) {
  char program[PATH_MAX], cls_path[PATH_MAX];
  if (argc < 3 || !realpath(argv[2], cls_path)) {
    fprintf(stderr, "usage: test_highell_routes PATH_OF_QMLPIPE CLS_FILE (%s)\n",
            argc < 3 ? "missing" : strerror(errno));
    return 2;
  }
  int rc = qp_cli_setup(argc, argv, "test_highell_routes", "highell_routes", program);
  if (rc != 0) return rc;
  const double t0 = qp_clock_seconds();
  qp_cls cls;
  memset(&cls, 0, sizeof cls);
  TEST_OK(qp_cls_read(cls_path, &cls));
  if (qp_test_failures || cls.lmax < LMAX_SIGNAL) {
    fprintf(stderr, "%s must reach ell %d\n", cls_path, LMAX_SIGNAL);
    return 1;
  }
  int64_t *pixels = NULL;
  const int64_t n_obs = disc_pixels(&pixels);
  printf("nside %d, disc of %.1f deg: %lld positions (n_pix %lld), lmax %d, lmax_signal %d, "
         "bins of %d from ell 2, EE BB EB\n",
         NSIDE, disc_radius_deg, (long long)n_obs, (long long)(2 * n_obs), LMAX, LMAX_SIGNAL,
         BIN_WIDTH);
  const int inputs_failed = write_inputs(&cls, pixels, n_obs);
  const int64_t n_bins = (LMAX - 2 + BIN_WIDTH) / BIN_WIDTH, n_params = 3 * n_bins;
  double fiducial[3 * ((LMAX - 2 + BIN_WIDTH) / BIN_WIDTH)]; /* EE, BB, EB averaged per bin */
  static const qp_spectrum spectra[3] = {QP_EE, QP_BB, QP_EB};
  for (int64_t q = 0; q < n_params; ++q) {
    const int64_t b = q % n_bins, lo = 2 + b * BIN_WIDTH;
    const int64_t hi = lo + BIN_WIDTH - 1 < LMAX ? lo + BIN_WIDTH - 1 : LMAX;
    fiducial[q] = 0;
    for (int64_t l = lo; l <= hi; ++l)
      fiducial[q] += cls.cl[spectra[q / n_bins]][l] / (double)(hi - lo + 1);
  }
  qp_cls_free(&cls);
  free(pixels);
  printf("maps and mask written in %.1f s\n", qp_clock_seconds() - t0);
  if (inputs_failed) return TEST_RETURN();

  results r[N_ROUTES];
  int have[N_ROUTES] = {0};
  for (int k = 0; k < N_ROUTES; ++k) {
    char config[64], output[64];
    snprintf(config, sizeof config, "config_%s.yaml", route_names[k]);
    snprintf(output, sizeof output, "results_%s.h5", route_names[k]);
    FILE *f = fopen(config, "w");
    TEST_ASSERT(f != NULL, "cannot write %s", config);
    if (!f) continue;
    fprintf(f,
            "maps: [map_0000.fits, map_0001.fits]\nmask: mask.fits\nfields: QU\ncls: %s\n"
            "noise: {variance_p: %.17g}\nspectra: [EE, BB, EB]\nell_min: 2\nlmax: %d\n"
            "lmax_signal: %d\nbin_width: %d\n%soutput: %s\n",
            cls_path, noise_variance, LMAX, LMAX_SIGNAL, BIN_WIDTH, route_keys[k], output);
    fclose(f);
    const char *args[] = {"run", config, NULL};
    qp_cli_result run;
    qp_cli_run(program, route_names[k], args, &run);
    printf("%-12s qmlpipe run: exit %d, %.1f s\n", route_names[k], run.exited ? run.status : -1,
           run.seconds);
    TEST_ASSERT(run.exited && run.status == 0, "%s: qmlpipe run failed: %s", route_names[k],
                run.err);
    TEST_ASSERT(strstr(run.out, route_banner[k]) != NULL, "%s: route not as asked: %s",
                route_names[k], run.out);
    if (run.exited && run.status == 0) have[k] = read_results(output, n_params, &r[k]) == 0;
    if (have[k]) check_finite(&r[k], route_names[k]);
    qp_cli_free(&run);
  }
  if (have[0]) {
    /* A sanity check of the whole chain (maps drawn from the model): C_hat within 6 sigma of
     * the fiducial's bin average. Loose on purpose: the expectation is a Fisher-weighted
     * average inside the bin, not the flat one, and sigma is mostly cosmic variance here. */
    printf("pixel_direct C_hat (fiducial bin average, sigma; both maps):\n");
    for (int64_t q = 0; q < n_params; ++q) {
      printf("  %s bin %lld: %10.3e (%10.3e, %9.3e):", qp_spectrum_name(spectra[q / n_bins]),
             (long long)(q % n_bins), r[0].cl[q], fiducial[q], r[0].error[q]);
      for (int m = 0; m < N_MAPS; ++m) {
        const double pull = (r[0].cl[m * n_params + q] - fiducial[q]) / r[0].error[q];
        printf(" %+.2f sigma", pull);
        TEST_WITHIN(fabs(pull), 6.0, "map %d parameter %lld: C_hat far from the fiducial", m,
                    (long long)q);
      }
      printf("\n");
    }
  }
  for (int k = 1; k < N_ROUTES; ++k)
    if (have[0] && have[k]) compare(&r[0], &r[k], route_names[k]);
  for (int k = 0; k < N_ROUTES; ++k)
    if (have[k]) free_results(&r[k]);
  printf("total %.1f s\n", qp_clock_seconds() - t0);
  if (qp_test_failures == 0) qp_cli_remove_files("."); /* ~17 MB of maps and results */
  return TEST_RETURN();
}
