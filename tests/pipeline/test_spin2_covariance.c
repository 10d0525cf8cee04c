/* test_spin2_covariance: the pixel-space covariance of pixel_matrices.c (Legendre and Wigner d
 * of the angle between two pixels, Q/U rotated from the great circle to the meridians) equals
 * V^T Lambda V built from the harmonic basis (spin_harmonics.c, itself checked against healpy) to
 * 1e-10 of its largest entry: for QU and TQU, for S with all six spectra nonzero and for the
 * derivative of every spectrum, at nside 4 and 8 on the full sky, which holds coincident
 * (i = j) and antipodal pixel pairs. Again with pixel windows w^T and w^P that differ (made up,
 * far from 1): S and every P carry w^X_l w^Y_l on the XY block (T: w^T; E and B: w^P), which
 * is V^T Lambda V with the T rows of V times w^T and the E and B rows times w^P. */
#include <cblas.h>
#include <chealpix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pixel_matrices.h"
#include "spin_harmonics.h"
#include "test_util.h"

typedef struct basis {
  int n_modes;
  double *v[3]; /* T, E, B rows: n_modes x n_pix each, row-major by mode (mode stride n_pix) */
  int *ell;     /* multipole of each mode */
} basis;

/* The rows of V for T, E and B over the data vector [T | Q | U] of the problem. */
static basis make_basis(const qp_problem *p, int lmax) {
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
      if (pos < nt) {
        b.v[0][k * n + pos] = row[0][k];
      } else {
        int64_t q = pos, u = pos + np; /* Q at index pos, U at pos + n_obs_p */
        b.v[1][k * n + q] = row[1][k];
        b.v[1][k * n + u] = row[2][k];
        b.v[2][k * n + q] = row[3][k];
        b.v[2][k * n + u] = row[4][k];
      }
    }
  }
  free(work);
  for (int k = 0; k < 5; ++k)
    free(row[k]);
  return b;
}

/* (2l+1)/(4 pi) is in the basis already: sum_m t_lm(a) t_lm(b) = (2l+1)/(4 pi) P_l(a.b).
 * out += sum over modes of c_XY(l) (v_X v_Y^T + v_Y v_X^T for X != Y, v_X v_X^T for X == Y). */
static void add_pair(const basis *b, int64_t n, int x, int y, const double *c, double *out) {
  double *scaled = malloc((size_t)(b->n_modes * n) * sizeof(double));
  for (int k = 0; k < b->n_modes; ++k)
    for (int64_t i = 0; i < n; ++i)
      scaled[k * n + i] = c[b->ell[k]] * b->v[x][k * n + i];
  /* out (n x n, column-major) += scaled^T-as-columns times v_Y: both are n x n_modes with
   * leading dimension n when read column-major. */
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, b->n_modes, 1.0, scaled,
              (int)n, b->v[y], (int)n, 1.0, out, (int)n);
  if (x != y)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, b->n_modes, 1.0, b->v[y],
                (int)n, scaled, (int)n, 1.0, out, (int)n);
  free(scaled);
}

static const int spectrum_fields[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

/* Made-up pixel windows, far from 1 and unlike each other (w^P undefined, 0, below l = 2). */
static double window_t(int l) { return exp(-0.01 * l * (l + 1.0)); }
static double window_p(int l) { return l < 2 ? 0.0 : 0.3 + 0.6 / (1.0 + 0.1 * l); }
static double field_window(int field, int l) { return field == 0 ? window_t(l) : window_p(l); }

static void run_case(int64_t nside, qp_fields fields, int windowed) {
  const int lmax = (int)(3 * nside - 1);
  const int64_t n_sky = 12 * nside * nside;
  qp_config cfg;
  qp_config_defaults(&cfg);
  cfg.fields = fields;
  cfg.ell_min = 2;
  cfg.lmax = cfg.lmax_signal = lmax;
  int has_t = fields == QP_FIELDS_TQU;
  cfg.n_spectra = 0;
  for (int s = 0; s < 6; ++s)
    if (has_t || (s == QP_EE || s == QP_BB || s == QP_EB)) cfg.spectra[cfg.n_spectra++] = s;
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  p.plan = &p.plan_store; /* no plan: the pixel matrices whole (qp_host_panel) */
  p.nside = nside;
  p.n_sky = n_sky;
  p.n_obs_t = has_t ? n_sky : 0;
  p.n_obs_p = n_sky;
  p.n_observed = p.n_obs_t + p.n_obs_p;
  p.n_pix = p.n_obs_t + 2 * p.n_obs_p;
  p.observed = malloc((size_t)p.n_observed * sizeof(int64_t));
  p.vectors = malloc((size_t)(3 * p.n_observed) * sizeof(double));
  for (int64_t k = 0; k < p.n_observed; ++k) {
    p.observed[k] = k < p.n_obs_t ? k : k - p.n_obs_t;
    pix2vec_ring64(nside, p.observed[k], p.vectors + 3 * k);
  }
  int lo = 2, hi = lmax;
  p.n_bins = 1;
  p.bin_lo = &lo;
  p.bin_hi = &hi;
  p.n_params = cfg.n_spectra;
  p.ell_weight = malloc((size_t)(lmax + 1) * sizeof(double));
  p.cls.lmax = lmax;
  for (int s = 0; s < 6; ++s) p.cls.cl[s] = calloc((size_t)(lmax + 1), sizeof(double));
  if (windowed) {
    p.pixel_window.lmax = lmax;
    p.pixel_window.t = malloc((size_t)(lmax + 1) * sizeof(double));
    p.pixel_window.p = malloc((size_t)(lmax + 1) * sizeof(double));
    for (int l = 0; l <= lmax; ++l)
      p.pixel_window.t[l] = window_t(l);
    for (int l = 0; l <= lmax; ++l)
      p.pixel_window.p[l] = window_p(l);
  }
  for (int l = 0; l <= lmax; ++l) {
    p.ell_weight[l] = (2.0 * l + 1.0) / (4.0 * M_PI);
    double tt = 1.0 / (1.0 + l), ee = 0.3 / (1.0 + l), bb = 0.1 / (1.0 + 0.5 * l);
    p.cls.cl[QP_TT][l] = tt;
    p.cls.cl[QP_EE][l] = ee;
    p.cls.cl[QP_BB][l] = bb;
    p.cls.cl[QP_TE][l] = 0.4 * sqrt(tt * ee);
    p.cls.cl[QP_TB][l] = 0.2 * sqrt(tt * bb);
    p.cls.cl[QP_EB][l] = -0.3 * sqrt(ee * bb);
  }
  const int64_t n = p.n_pix;
  basis b = make_basis(&p, lmax);
  double *mine = calloc((size_t)(n * n), sizeof(double));
  double *ref = calloc((size_t)(n * n), sizeof(double));
  double *coeff = malloc((size_t)(lmax + 1) * sizeof(double));
  const char *label = fields == QP_FIELDS_QU ? (windowed ? "QU, pixel windows" : "QU")
                                             : (windowed ? "TQU, pixel windows" : "TQU");

  /* S with every spectrum the fields carry. */
  qp_pixel_matrices_build(&p, mine, 0, 0, NULL, 0);
  for (int s = 0; s < 6; ++s) {
    if (!has_t && spectrum_fields[s][0] == 0) continue;
    for (int l = 0; l <= lmax; ++l) {
      coeff[l] = l >= 2 ? p.cls.cl[s][l] : 0;
      if (windowed)
        coeff[l] *= field_window(spectrum_fields[s][0], l) * field_window(spectrum_fields[s][1], l);
    }
    add_pair(&b, n, spectrum_fields[s][0], spectrum_fields[s][1], coeff, ref);
  }
  double d = qp_test_max_rel_diff(ref, mine, (size_t)(n * n));
  printf("%s nside %lld, lmax %d: S (all spectra) differs from V^T Lambda V by %.2e\n", label,
         (long long)nside, lmax, d);
  TEST_WITHIN(d, 1e-10, "%s nside %lld: S differs", label, (long long)nside);

  /* dS/dC^X over the bin 2..lmax, for every spectrum. */
  for (int q = 0; q < cfg.n_spectra; ++q) {
    qp_spectrum s = cfg.spectra[q];
    memset(ref, 0, (size_t)(n * n) * sizeof(double));
    qp_pixel_matrices_build(&p, NULL, q, 1, mine, (size_t)(n * n));
    for (int l = 0; l <= lmax; ++l) {
      coeff[l] = l >= 2 ? 1.0 : 0;
      if (windowed)
        coeff[l] *= field_window(spectrum_fields[s][0], l) * field_window(spectrum_fields[s][1], l);
    }
    add_pair(&b, n, spectrum_fields[s][0], spectrum_fields[s][1], coeff, ref);
    d = qp_test_max_rel_diff(ref, mine, (size_t)(n * n));
    printf("  P_%s differs by %.2e\n", qp_spectrum_name(s), d);
    TEST_WITHIN(d, 1e-10, "%s nside %lld: P_%s differs", label, (long long)nside,
                qp_spectrum_name(s));
  }
  free(mine);
  free(ref);
  free(coeff);
  for (int f = 0; f < 3; ++f)
    free(b.v[f]);
  free(b.ell);
  free(p.observed);
  free(p.vectors);
  free(p.ell_weight);
  qp_pixel_window_free(&p.pixel_window);
  for (int s = 0; s < 6; ++s) free(p.cls.cl[s]);
}

int main(void) {
  for (int64_t nside = 4; nside <= 8; nside *= 2) {
    for (int windowed = 0; windowed <= 1; ++windowed) {
      run_case(nside, QP_FIELDS_QU, windowed);
      run_case(nside, QP_FIELDS_TQU, windowed);
    }
  }
  return TEST_RETURN();
}
