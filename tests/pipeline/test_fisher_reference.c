/* test_fisher_reference: on a small masked sky, F, the noise bias b and the raw quadratic y
 * of the pipeline equal a direct dense evaluation of QML.md 2,
 *   F_pq = 1/2 tr(C^-1 P_p C^-1 P_q), b_p = tr(N_eff E_p), y_p = x^T E_p x,
 * (N_eff = N + S_fixed: lmax 8 < lmax_signal 11 here, the switch of QML.md 3)
 * with C^-1 from dpotri and the products from dgemm, to 1e-10 relative; with a Gaussian beam,
 * for a noise variance map (diagonal N varying over the sky) and for a dense (correlated)
 * noise covariance from HDF5; and with `pixel_window: true`, whose reference weighs every
 * multipole of S and P_p by w_l^2 more, w_l HEALPix's T window of nside 4 (docs/science.md). */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "fits_map.h"
#include "fixture.h"
#include "h5_matrix.h"
#include "pixel_window.h"
#include "test_util.h"

/* P_l by the explicit recurrence, written out again here on purpose. */
static double legendre_at(int l, double z) {
  double p0 = 1.0, p1 = z;
  if (l == 0) return p0;
  for (int k = 2; k <= l; ++k) {
    double p2 = ((2.0 * k - 1.0) * z * p1 - (k - 1.0) * p0) / k;
    p0 = p1;
    p1 = p2;
  }
  return p1;
}

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* The correlated noise of the dense case: sigma^2 (I + 0.5 exp(-(1 - cos theta) / 0.02)). */
static double dense_noise(const double *ri, const double *rj, double var, int same) {
  return var * ((same ? 1.0 : 0.0) + 0.5 * exp(-(1.0 - dot3(ri, rj)) / 0.02));
}

static const double beam_fwhm_arcmin = 400.0;
/* w_l^T of the pixel-window case (HEALPix's table, read here on its own), NULL otherwise. */
static const double *window_t = NULL;

/* (2l+1)/(4 pi) B_l^2 (w_l^T)^2 for the Gaussian beam (and the pixel window), written out
 * again here. */
static double ell_weight(int l) {
  double sigma = beam_fwhm_arcmin / 60.0 * M_PI / 180.0 / sqrt(8.0 * log(2.0));
  double b = exp(-0.5 * l * (l + 1.0) * sigma * sigma);
  const double w = window_t ? window_t[l] : 1.0;
  return (2 * l + 1) / (4 * M_PI) * b * b * w * w;
}

static void check_against_reference(const qp_fixture *f, const qp_problem *p, const double *noise) {
  const int64_t n = p->n_pix;
  const int np = p->n_params;
  double *c = calloc((size_t)(n * n), sizeof *c);
  double *pb = calloc((size_t)(np * n * n), sizeof *pb);
  double *a = calloc((size_t)(np * n * n), sizeof *a);
  double *e = calloc((size_t)(n * n), sizeof *e);
  double *tmp = calloc((size_t)(n * n), sizeof *tmp);
  double *n_eff = calloc((size_t)(n * n), sizeof *n_eff);
  /* The maps, as the run read them (it keeps none). */
  double *maps = calloc((size_t)(p->n_maps * n), sizeof *maps);
  for (int64_t m = 0; m < p->n_maps; ++m)
    TEST_OK(qp_fixture_data_vector(p, p->cfg->maps[m], maps + m * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) {
      double z = dot3(p->vectors + 3 * i, p->vectors + 3 * j);
      if (z > 1) z = 1;
      if (z < -1) z = -1;
      double s = noise[i + j * n], fixed = 0;
      for (int l = f->ell_min; l <= f->lmax_signal; ++l) {
        double term = qp_fixture_cl(f, l) * ell_weight(l) * legendre_at(l, z);
        s += term;
        if (l > f->lmax) fixed += term;
      }
      c[i + j * n] = s;
      n_eff[i + j * n] = noise[i + j * n] + fixed;
      for (int b = 0; b < p->n_bins; ++b) {
        double v = 0;
        for (int l = p->bin_lo[b]; l <= p->bin_hi[b]; ++l)
          v += ell_weight(l) * legendre_at(l, z);
        pb[b * n * n + i + j * n] = v;
      }
    }
  TEST_ASSERT(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, c, (int)n) == 0, "reference potrf");
  TEST_ASSERT(LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (int)n, c, (int)n) == 0, "reference potri");
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < j; ++i)
      c[i + j * n] = c[j + i * n];
  for (int q = 0; q < np; ++q)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, c, (int)n,
                pb + q * n * n, (int)n, 0.0, a + q * n * n, (int)n);
  double worst_f = 0, worst_b = 0, worst_y = 0;
  for (int q = 0; q < np; ++q) {
    for (int r = 0; r < np; ++r) {
      double s = 0;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i)
          s += a[q * n * n + i + j * n] * a[r * n * n + j + i * n];
      double d = qp_test_rel_diff(0.5 * s, p->fisher[q + r * np]);
      worst_f = qp_test_worst(worst_f, d);
    }
    /* E_q = 1/2 A_q C^-1 */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 0.5,
                a + q * n * n, (int)n, c, (int)n, 0.0, e, (int)n);
    double b = 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i)
        b += n_eff[i + j * n] * e[j + i * n];
    double db = qp_test_rel_diff(b, p->noise_bias[q]);
    worst_b = qp_test_worst(worst_b, db);
    for (int64_t m = 0; m < p->n_maps; ++m) {
      const double *x = maps + m * n;
      cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, 1.0, e, (int)n, x, 1, 0.0, tmp, 1);
      double y = cblas_ddot((int)n, x, 1, tmp, 1);
      double dy = qp_test_rel_diff(y, p->yb[m * np + q]);
      worst_y = qp_test_worst(worst_y, dy);
    }
  }
  printf("%s: n_pix %lld, %d parameters: max relative difference F %.2e, b %.2e, y %.2e\n", f->name,
         (long long)n, np, worst_f, worst_b, worst_y);
  TEST_WITHIN(worst_f, 1e-10, "F differs from the dense reference");
  TEST_WITHIN(worst_b, 1e-10, "b differs from the dense reference");
  TEST_WITHIN(worst_y, 1e-10, "y differs from the dense reference");
  free(c);
  free(pb);
  free(a);
  free(e);
  free(tmp);
  free(n_eff);
  free(maps);
}

/* The variance map of the diagonal case: a different variance at every pixel. */
static double pixel_variance(double base, int64_t ring_pixel) {
  return base * (1.0 + 0.5 * sin(0.7 * (double)ring_pixel));
}

static void run_case(const char *name, int dense, int pixel_window) {
  qp_fixture f = {.name = name, .nside = 4, .cut_deg = 20, .ell_min = 2, .lmax = 8,
                  .lmax_signal = 11, .bin_width = 2, .sim_lmax = 11, .n_maps = 2,
                  .noise_variance = 0.5, .dl_flat = 10.0, .seed = 3};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  cfg.beam_fwhm_arcmin = beam_fwhm_arcmin;
  cfg.pixel_window = pixel_window;
  qp_pixel_window table = {0};
  if (pixel_window) {
    TEST_OK(qp_pixel_window_read(NULL, f.nside, f.lmax_signal, &table));
    window_t = table.t;
  }
  qp_problem p;
  qp_meter_sample baseline;
  /* A first run with uniform noise gives the observed geometry the noise files need. */
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  const int64_t n = p.n_pix, n_sky = p.n_sky;
  double *noise = calloc((size_t)(n * n), sizeof *noise);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      noise[i + j * n] =
          dense ? dense_noise(p.vectors + 3 * i, p.vectors + 3 * j, f.noise_variance, i == j)
                : (i == j ? pixel_variance(f.noise_variance, p.observed[i]) : 0);
  qp_problem_free(&p);
  char path[256];
  if (dense) {
    snprintf(path, sizeof path, "%s_noise.h5", name);
    TEST_OK(qp_h5_matrix_write(path, "/covariance", n, n, noise));
    cfg.noise_kind = QP_NOISE_COVARIANCE;
    snprintf(cfg.noise_dataset, sizeof cfg.noise_dataset, "/covariance");
  } else {
    double *sky = calloc((size_t)n_sky, sizeof *sky);
    for (int64_t i = 0; i < n_sky; ++i)
      sky[i] = pixel_variance(f.noise_variance, i);
    snprintf(path, sizeof path, "%s_variance.fits", name);
    const char *names[] = {"VARIANCE"};
    const double *columns[] = {sky};
    TEST_OK(qp_fits_map_write(path, f.nside, 1, names, columns));
    free(sky);
    cfg.noise_kind = QP_NOISE_VARIANCE_MAP;
  }
  snprintf(cfg.noise_file, sizeof cfg.noise_file, "%s", path);
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  TEST_ASSERT(!pixel_window ||
                  (p.pixel_window.t && strstr(p.pixel_window.text, "healpix nside 4: ")),
              "the run applied no pixel window");
  check_against_reference(&f, &p, noise);
  window_t = NULL;
  qp_pixel_window_free(&table);
  free(noise);
  qp_problem_free(&p);
  qp_config_free(&cfg);
}

int main(void) {
  run_case("reference_variance_map", 0, 0);
  run_case("reference_dense", 1, 0);
  run_case("reference_pixel_window", 0, 1);
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "budget blocks left alive");
  return TEST_RETURN();
}
