/* test_pixel_window_fisher: `pixel_window: true` in F, b and y (docs/science.md, "Beam and
 * pixel window"): w^T of the maps' nside multiplies the T side of S and of every P_p, w^P the
 * Q/U side, per multipole as the beam does (TE and TB the product).
 *  - The direction, on the full sky (QU, nside 8, single-ell bins, white noise sigma^2 Omega =
 *    C^EE = 2 C^BB = 1): F_ll = (2l+1)/2 (w^2 / (w^2 C_l + sigma^2 Omega))^2, w = w_l^P; the
 *    window only lowers F (the signal shrinks against the same noise), and F_ll with it over
 *    F_ll without is that formula's ratio (HEALPix's quadrature error cancels in it) to 1e-6.
 *  - Every route against a dense reference: TQU, all six spectra, on a masked sky with the
 *    switch (lmax 7 < lmax_signal 9): pixel-direct, harmonic SMW and harmonic projection equal
 *    F = 1/2 tr(C^-1 P_p C^-1 P_q), b = tr(N_eff E_p), y = x^T E_p x to 1e-10 relative, with C
 *    and P_p built here from the harmonic basis (spin_harmonics.h, itself checked against
 *    healpy) as V^T Lambda V, the T rows of V times w_l^T and the E and B rows times w_l^P of
 *    HEALPix's table read on its own (not the pipeline's). */
#include <cblas.h>
#include <chealpix.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "pixel_window.h"
#include "spin_harmonics.h"
#include "test_util.h"

/* ---- the full-sky direction ---- */

static void check_full_sky(void) {
  const int64_t nside = 8;
  const double omega = 4.0 * M_PI / (12.0 * nside * nside);
  qp_fixture f = {.name = "pixwin_fullsky",
                  .nside = nside,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = (int)nside - 1,
                  .lmax_signal = (int)nside - 1,
                  .bin_width = 1,
                  .sim_lmax = (int)nside - 1,
                  .n_maps = 1,
                  .noise_variance = 1.0 / omega,
                  .cl_flat = 1.0,
                  .seed = 12,
                  .fields = QP_FIELDS_QU,
                  .ee_ratio = 1.0,
                  .bb_ratio = 0.5};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem off, on;
  qp_meter_sample baseline;
  TEST_OK(qp_fixture_run(&cfg, &off, &baseline));
  cfg.pixel_window = 1;
  TEST_OK(qp_fixture_run(&cfg, &on, &baseline));
  qp_pixel_window w;
  TEST_OK(qp_pixel_window_read(NULL, nside, f.lmax_signal, &w));
  const int np = on.n_params;
  double worst = 0;
  int lowered = 0;
  for (int q = 0; q < np && w.p; ++q) {
    const qp_spectrum s = cfg.spectra[q / on.n_bins];
    const int l = on.bin_lo[q % on.n_bins];
    const double c = qp_fixture_cl_spectrum(&f, s, l), noise = f.noise_variance * omega;
    const double w2 = w.p[l] * w.p[l];
    const double with = w2 / (w2 * c + noise), without = 1.0 / (c + noise);
    const double ratio = on.fisher[q + q * np] / off.fisher[q + q * np];
    worst = qp_test_worst(worst, qp_test_rel_diff(ratio, with * with / (without * without)));
    lowered += on.fisher[q + q * np] < off.fisher[q + q * np];
  }
  printf("QU full sky nside %lld, EE and BB, ell 2..%d: F_ll with the pixel window lower at %d of "
         "%d; its ratio to F_ll without against the analytic one: worst %.2e\n",
         (long long)nside, f.lmax, lowered, np, worst);
  TEST_ASSERT(lowered == np, "the pixel window raised F_ll at %d of %d multipoles", np - lowered,
              np);
  TEST_WITHIN(worst, 1e-6, "F_ll(window) / F_ll(none) differs from the analytic ratio");
  qp_pixel_window_free(&w);
  qp_problem_free(&off);
  qp_problem_free(&on);
  qp_config_free(&cfg);
}

/* ---- the dense reference ---- */

typedef struct basis {
  int n_modes;  /* (l, m) with 0 <= l <= lmax */
  double *v[3]; /* the T, E, B rows over the data vector: n_pix x n_modes, column-major */
  int *ell;     /* multipole of each mode */
} basis;

/* The rows of V, T at the T entries, E and B at Q and U ([T | Q | U], positions T then Q/U),
 * each mode times the pixel window of its field at its l (w NULL: none). */
static basis make_basis(const qp_problem *p, int lmax, const qp_pixel_window *w) {
  basis b;
  b.n_modes = qp_harmonic_count(0, lmax);
  const int64_t n = p->n_pix, nt = p->n_obs_t, np = p->n_obs_p;
  for (int f = 0; f < 3; ++f)
    b.v[f] = calloc((size_t)(b.n_modes * n), sizeof(double));
  b.ell = malloc((size_t)b.n_modes * sizeof(int));
  for (int l = 0; l <= lmax; ++l)
    for (int m = -l; m <= l; ++m)
      b.ell[qp_harmonic_index(l, m, 0)] = l;
  double *work = malloc((size_t)qp_harmonics_work_size(lmax) * sizeof(double));
  double *row[5];
  for (int k = 0; k < 5; ++k)
    row[k] = malloc((size_t)b.n_modes * sizeof(double));
  for (int64_t pos = 0; pos < p->n_observed; ++pos) {
    double theta, phi;
    pix2ang_ring64(p->nside, p->observed[pos], &theta, &phi);
    qp_harmonics_at(0, lmax, theta, phi, work, row[0], row[1], row[2], row[3], row[4]);
    for (int k = 0; k < b.n_modes; ++k) {
      const double wt = w ? w->t[b.ell[k]] : 1.0, wp = w ? w->p[b.ell[k]] : 1.0;
      if (pos < nt) {
        b.v[0][k * n + pos] = wt * row[0][k];
      } else {
        b.v[1][k * n + pos] = wp * row[1][k];
        b.v[1][k * n + pos + np] = wp * row[2][k];
        b.v[2][k * n + pos] = wp * row[3][k];
        b.v[2][k * n + pos + np] = wp * row[4][k];
      }
    }
  }
  free(work);
  for (int k = 0; k < 5; ++k)
    free(row[k]);
  return b;
}

static void free_basis(basis *b) {
  for (int f = 0; f < 3; ++f)
    free(b->v[f]);
  free(b->ell);
}

/* out += sum over modes of c(l) (v_X v_Y^T + v_Y v_X^T for X != Y, v_X v_X^T for X == Y). */
static void add_pair(const basis *b, int64_t n, int x, int y, const double *c, double *out) {
  double *scaled = malloc((size_t)(b->n_modes * n) * sizeof(double));
  for (int k = 0; k < b->n_modes; ++k)
    for (int64_t i = 0; i < n; ++i)
      scaled[k * n + i] = c[b->ell[k]] * b->v[x][k * n + i];
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, b->n_modes, 1.0, scaled,
              (int)n, b->v[y], (int)n, 1.0, out, (int)n);
  if (x != y)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, b->n_modes, 1.0, b->v[y],
                (int)n, scaled, (int)n, 1.0, out, (int)n);
  free(scaled);
}

static const int spectrum_fields[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

/* The worst relative differences of the run's F, b and y from the dense formulas. */
static void check_route(const char *label, const qp_problem *p, const basis *b) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix;
  const int np = p->n_params, lmax_signal = cfg->lmax_signal;
  double *c = calloc((size_t)(n * n), sizeof *c), *n_eff = calloc((size_t)(n * n), sizeof *c);
  double *pq = calloc((size_t)(np * n * n), sizeof *pq),
         *a = calloc((size_t)(np * n * n), sizeof *a);
  double *e = calloc((size_t)(n * n), sizeof *e), *tmp = calloc((size_t)n, sizeof *tmp);
  double *coeff = calloc((size_t)(lmax_signal + 1), sizeof *coeff);
  /* The maps, as the run read them (it keeps none). */
  double *maps = calloc((size_t)(p->n_maps * n), sizeof *maps);
  for (int64_t m = 0; m < p->n_maps; ++m)
    TEST_OK(qp_fixture_data_vector(p, cfg->maps[m], maps + m * n));
  /* N: white, per field; S over [ell_min, lmax_signal]; N_eff = N + S over (lmax, lmax_signal]. */
  for (int64_t i = 0; i < n; ++i)
    c[i + i * n] = n_eff[i + i * n] =
        i < p->n_obs_t ? cfg->noise_variance : cfg->noise_variance_pol;
  for (int s = 0; s < 6; ++s) {
    for (int l = 0; l <= lmax_signal; ++l)
      coeff[l] = l >= cfg->ell_min ? p->cls.cl[s][l] : 0.0;
    add_pair(b, n, spectrum_fields[s][0], spectrum_fields[s][1], coeff, c);
    for (int l = 0; l <= lmax_signal; ++l)
      coeff[l] = l > cfg->lmax ? p->cls.cl[s][l] : 0.0;
    add_pair(b, n, spectrum_fields[s][0], spectrum_fields[s][1], coeff, n_eff);
  }
  for (int q = 0; q < np; ++q) {
    const int bin = q % p->n_bins;
    const qp_spectrum s = cfg->spectra[q / p->n_bins];
    for (int l = 0; l <= lmax_signal; ++l)
      coeff[l] = l >= p->bin_lo[bin] && l <= p->bin_hi[bin] ? 1.0 : 0.0;
    add_pair(b, n, spectrum_fields[s][0], spectrum_fields[s][1], coeff, pq + q * n * n);
  }
  TEST_ASSERT(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (int)n, c, (int)n) == 0, "reference potrf");
  TEST_ASSERT(LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (int)n, c, (int)n) == 0, "reference potri");
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < j; ++i)
      c[i + j * n] = c[j + i * n];
  for (int q = 0; q < np; ++q)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, c, (int)n,
                pq + q * n * n, (int)n, 0.0, a + q * n * n, (int)n);
  double worst_f = 0, worst_b = 0, worst_y = 0;
  for (int q = 0; q < np; ++q) {
    for (int r = 0; r < np; ++r) {
      double t = 0;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i)
          t += a[q * n * n + i + j * n] * a[r * n * n + j + i * n];
      /* relative to sqrt(F_qq F_rr): the cross spectra's F_qr may be near 0 */
      const double scale = sqrt(fabs(p->fisher[q + q * np] * p->fisher[r + r * np]));
      worst_f = qp_test_worst(worst_f, fabs(0.5 * t - p->fisher[q + r * np]) / scale);
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 0.5,
                a + q * n * n, (int)n, c, (int)n, 0.0, e, (int)n); /* E_q = 1/2 C^-1 P_q C^-1 */
    double bias = 0, scale_b = 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i) {
        bias += n_eff[i + j * n] * e[j + i * n];
        scale_b += fabs(n_eff[i + j * n] * e[j + i * n]);
      }
    /* relative to the sum of magnitudes: a cross spectrum's b is ~0 (uncorrelated noise) */
    worst_b = qp_test_worst(worst_b, fabs(bias - p->noise_bias[q]) / scale_b);
    for (int64_t m = 0; m < p->n_maps; ++m) {
      const double *x = maps + m * n;
      cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, 1.0, e, (int)n, x, 1, 0.0, tmp, 1);
      worst_y = qp_test_worst(
          worst_y, qp_test_rel_diff(cblas_ddot((int)n, x, 1, tmp, 1), p->yb[m * np + q]));
    }
  }
  printf("%-34s n_pix %lld, %d parameters: F %.2e, b %.2e, y %.2e\n", label, (long long)n, np,
         worst_f, worst_b, worst_y);
  TEST_WITHIN(worst_f, 1e-10, "%s: F differs from the dense reference", label);
  TEST_WITHIN(worst_b, 1e-10, "%s: b differs from the dense reference", label);
  TEST_WITHIN(worst_y, 1e-10, "%s: y differs from the dense reference", label);
  free(c);
  free(n_eff);
  free(pq);
  free(a);
  free(e);
  free(tmp);
  free(coeff);
  free(maps);
}

static void check_routes(void) {
  qp_fixture f = {.name = "pixwin_tqu",
                  .nside = 4,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 7,
                  .lmax_signal = 9,
                  .bin_width = 2,
                  .sim_lmax = 9,
                  .n_maps = 2,
                  .noise_variance = 0.3,
                  .noise_variance_pol = 0.2,
                  .dl_flat = 30.0,
                  .seed = 9,
                  .fields = QP_FIELDS_TQU,
                  .ee_ratio = 0.3,
                  .bb_ratio = 0.1,
                  .te_corr = 0.5,
                  .n_spectra = 6,
                  .spectra = {QP_TT, QP_EE, QP_BB, QP_TE, QP_TB, QP_EB}};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  cfg.pixel_window = 1;
  qp_pixel_window w;
  TEST_OK(qp_pixel_window_read(NULL, f.nside, f.lmax_signal, &w));
  static const char *const names[3] = {"TQU pixel_direct", "TQU harmonic smw",
                                       "TQU harmonic projected"};
  const qp_path paths[3] = {QP_PATH_PIXEL_DIRECT, QP_PATH_HARMONIC, QP_PATH_HARMONIC};
  for (int k = 0; k < 3 && w.t; ++k) {
    cfg.path = paths[k];
    cfg.harmonic_method = k; /* 0 auto (unused), 1 smw, 2 projected */
    qp_problem p;
    qp_meter_sample baseline;
    TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
    TEST_ASSERT(p.plan->path_used == paths[k] && (k == 0 || p.plan->smw == (k == 1)),
                "%s: not the route asked for", names[k]);
    basis b = make_basis(&p, f.lmax_signal, &w);
    check_route(names[k], &p, &b);
    free_basis(&b);
    qp_problem_free(&p);
  }
  qp_pixel_window_free(&w);
  qp_config_free(&cfg);
}

int main(void) {
  check_full_sky();
  check_routes();
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "budget blocks left alive");
  return TEST_RETURN();
}
