/* cross_inputs.c: see cross_inputs.h. */
#include "cross_inputs.h"

#include <chealpix.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fits_map.h"
#include "pixel_matrices.h"
#include "problem.h"
#include "simulate.h"

static double *zeros(int64_t count) {
  double *v = calloc((size_t)(count > 0 ? count : 1), sizeof *v);
  if (!v) {
    fprintf(stderr, "cross_inputs: out of memory for %lld values\n", (long long)count);
    abort();
  }
  return v;
}

/* splitmix64, then Box-Muller: the noise of A and B, reproducible from the case's seed. */
static double uniform01(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}
static double gaussian(uint64_t *state) {
  const double r = sqrt(-2.0 * log(uniform01(state)));
  return r * cos(2.0 * M_PI * uniform01(state));
}

/* The fiducial: C^TT = 2 pi 30 / (l (l + 1)) (D_l flat), EE = 0.3 TT, BB = 0.1 TT and the
 * correlations TE 0.5, TB 0.1, EB -0.1 (a positive definite 3 x 3 block at every l): every
 * block of S is nonzero. */
static void fiducial(int lmax, qp_cls *cls) {
  memset(cls, 0, sizeof *cls);
  cls->lmax = lmax;
  cls->n_columns = 6;
  for (int s = 0; s < 6; ++s)
    cls->cl[s] = zeros(lmax + 1);
  for (int l = 2; l <= lmax; ++l) {
    const double tt = 2.0 * M_PI * 30.0 / ((double)l * (l + 1)), ee = 0.3 * tt, bb = 0.1 * tt;
    cls->cl[QP_TT][l] = tt;
    cls->cl[QP_EE][l] = ee;
    cls->cl[QP_BB][l] = bb;
    cls->cl[QP_TE][l] = 0.5 * sqrt(tt * ee);
    cls->cl[QP_TB][l] = 0.1 * sqrt(tt * bb);
    cls->cl[QP_EB][l] = -0.1 * sqrt(ee * bb);
  }
}

/* The problem the builder reads: the mask's positions (T, then Q and U on the same mask), the
 * requested spectra with bins of one multipole over [ell_min, lmax] (so P_q is P_ell of
 * window column q), the fiducial, and (2l+1)/(4 pi) B_l^2 with the Gaussian beam written out:
 * B_l = exp(-l (l + 1) sigma^2 / 2), sigma = FWHM / sqrt(8 ln 2). */
static void builder_problem(const qp_cross_case *c, const qp_cross_sky *sky, const double *mask,
                            qp_config *cfg, qp_problem *p) {
  qp_config_defaults(cfg);
  cfg->fields = c->fields;
  cfg->ell_min = c->ell_min;
  cfg->lmax = c->lmax;
  cfg->lmax_signal = c->lmax_signal;
  cfg->n_spectra = c->n_spectra;
  for (int s = 0; s < c->n_spectra; ++s)
    cfg->spectra[s] = c->spectra[s];
  memset(p, 0, sizeof *p);
  p->cfg = cfg;
  p->plan = &p->plan_store; /* no plan: the pixel matrices whole (qp_host_panel) */
  p->nside = c->nside;
  p->n_sky = 12 * c->nside * c->nside;
  int64_t n_obs = 0;
  for (int64_t i = 0; i < p->n_sky; ++i)
    n_obs += mask[i] != 0;
  p->n_obs_t = c->fields == QP_FIELDS_QU ? 0 : n_obs;
  p->n_obs_p = c->fields == QP_FIELDS_T ? 0 : n_obs;
  p->n_observed = p->n_obs_t + p->n_obs_p;
  p->n_pix = p->n_obs_t + 2 * p->n_obs_p;
  p->observed = malloc((size_t)p->n_observed * sizeof *p->observed);
  p->vectors = zeros(3 * p->n_observed);
  for (int64_t i = 0, k = 0; i < p->n_sky; ++i)
    if (mask[i] != 0) {
      if (p->n_obs_t) p->observed[k] = i;
      if (p->n_obs_p) p->observed[p->n_obs_t + k] = i;
      ++k;
    }
  for (int64_t k = 0; k < p->n_observed; ++k)
    pix2vec_ring64(c->nside, p->observed[k], p->vectors + 3 * k);
  p->n_bins = c->lmax - c->ell_min + 1;
  p->n_params = p->n_bins * c->n_spectra;
  p->bin_lo = malloc((size_t)p->n_bins * sizeof *p->bin_lo);
  p->bin_hi = malloc((size_t)p->n_bins * sizeof *p->bin_hi);
  for (int b = 0; b < p->n_bins; ++b)
    p->bin_lo[b] = p->bin_hi[b] = c->ell_min + b;
  p->cls = sky->cls;
  p->ell_weight = zeros(c->lmax_signal + 1);
  const double sigma = c->beam_fwhm_arcmin / 60.0 * M_PI / 180.0 / sqrt(8.0 * log(2.0));
  for (int l = 0; l <= c->lmax_signal; ++l) {
    const double b = exp(-0.5 * l * (l + 1.0) * sigma * sigma);
    p->ell_weight[l] = (2.0 * l + 1.0) / (4.0 * M_PI) * b * b;
  }
}

static void builder_free(qp_problem *p) {
  free(p->observed), free(p->vectors), free(p->bin_lo), free(p->bin_hi), free(p->ell_weight);
}

/* Signal of every map (no noise), then A and B each with its own noise, written as FITS, and
 * the data vectors [T | Q | U] of the fields at the observed pixels. */
static int write_maps(const qp_cross_case *c, qp_cross_sky *sky, const qp_problem *p) {
  const int64_t n_sky = p->n_sky;
  const int n_col = qp_simulate_columns(c->fields);
  double *signal = zeros(n_sky * n_col * c->n_maps);
  const qp_sim_options sim = {.nside = c->nside,
                              .ell_min = c->ell_min,
                              .lmax = c->lmax_signal,
                              .noise_variance = 0,
                              .beam_fwhm_arcmin = c->beam_fwhm_arcmin,
                              .n_maps = c->n_maps,
                              .seed = c->seed};
  const qp_sim_pol pol = {.fields = c->fields, .noise_variance_pol = 0};
  int failed = qp_simulate_sky(&sky->cls, &sim, &pol, signal) != QP_OK;
  double *map = zeros(n_sky * n_col);
  uint64_t state = c->seed * 7919u + 17u;
  static const char *const names[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  const double *cols[] = {map, map + n_sky, map + 2 * n_sky};
  for (int set = 0; !failed && set < 2; ++set)
    for (int k = 0; !failed && k < c->n_maps; ++k) {
      for (int col = 0; col < n_col; ++col) {
        const double var = col == 0 && c->fields != QP_FIELDS_QU ? c->var_t[set] : c->var_p[set];
        const double *s = signal + ((int64_t)k * n_col + col) * n_sky;
        for (int64_t i = 0; i < n_sky; ++i)
          map[col * n_sky + i] = s[i] + sqrt(var) * gaussian(&state);
      }
      snprintf(sky->maps[set][k], sizeof sky->maps[set][k], "%s_%c_%04d.fits", c->name, "AB"[set],
               k);
      failed = qp_fits_map_write(sky->maps[set][k], c->nside, n_col, names, cols) != QP_OK;
      /* x: T at the T positions, then Q and U at the polarised ones (column 1 and 2). */
      double *x = sky->x[set] + (int64_t)k * sky->n;
      for (int64_t e = 0; e < sky->n; ++e) {
        const int64_t pos = e < p->n_obs_t + p->n_obs_p ? e : e - p->n_obs_p;
        const int col = e < p->n_obs_t ? 0 : (e < p->n_obs_t + p->n_obs_p ? 1 : 2);
        x[e] = map[col * n_sky + p->observed[pos]];
      }
    }
  if (failed) fprintf(stderr, "%s: simulating or writing the maps failed\n", c->name);
  free(signal);
  free(map);
  return failed;
}

int qp_cross_sky_make(const qp_cross_case *c, qp_cross_sky *sky) {
  memset(sky, 0, sizeof *sky);
  fiducial((int)(3 * c->nside - 1), &sky->cls);
  snprintf(sky->cls_file, sizeof sky->cls_file, "%s_cls.txt", c->name);
  snprintf(sky->mask_file, sizeof sky->mask_file, "%s_mask.fits", c->name);
  const int64_t n_sky = 12 * c->nside * c->nside;
  double *mask = zeros(n_sky);
  qp_simulate_galactic_mask(c->nside, c->cut_deg, mask);
  const char *mask_name[] = {"MASK"};
  const double *mask_col[] = {mask};
  int failed = qp_cls_write(sky->cls_file, &sky->cls) != QP_OK ||
               qp_fits_map_write(sky->mask_file, c->nside, 1, mask_name, mask_col) != QP_OK;
  /* The config's bins: bin_width multipoles from ell_min, the last one cut at lmax. */
  sky->bin_lo = malloc((size_t)(c->lmax - c->ell_min + 1) * sizeof *sky->bin_lo);
  sky->bin_hi = malloc((size_t)(c->lmax - c->ell_min + 1) * sizeof *sky->bin_hi);
  for (int lo = c->ell_min; lo <= c->lmax; lo += c->bin_width, ++sky->n_bins) {
    sky->bin_lo[sky->n_bins] = lo;
    sky->bin_hi[sky->n_bins] = lo + c->bin_width - 1 < c->lmax ? lo + c->bin_width - 1 : c->lmax;
  }
  qp_config cfg;
  qp_problem p;
  builder_problem(c, sky, mask, &cfg, &p);
  const int64_t n = sky->n = p.n_pix, nn = n * n;
  sky->x[0] = zeros(n * c->n_maps);
  sky->x[1] = zeros(n * c->n_maps);
  if (!failed) failed = write_maps(c, sky, &p);
  sky->s = zeros(nn);
  sky->p_ell = zeros((int64_t)p.n_params * nn);
  failed = failed || qp_pixel_matrices_build(&p, sky->s, 0, p.n_params, sky->p_ell, (size_t)nn);
  if (!failed && c->lmax < c->lmax_signal) {
    sky->s_fixed = zeros(nn);
    failed = qp_pixel_matrices_build_columns(&p, sky->s_fixed, c->lmax + 1, c->lmax_signal, 0, 0,
                                             NULL, NULL) != QP_OK;
  }
  for (int set = 0; set < 2; ++set) {
    sky->noise[set] = zeros(nn);
    for (int64_t i = 0; i < n; ++i)
      sky->noise[set][i + i * n] = i < p.n_obs_t ? c->var_t[set] : c->var_p[set];
  }
  if (failed) fprintf(stderr, "%s: the inputs or the pixel matrices failed\n", c->name);
  builder_free(&p);
  free(mask);
  return failed;
}

void qp_cross_sky_free(qp_cross_sky *sky) {
  qp_cls_free(&sky->cls);
  free(sky->bin_lo), free(sky->bin_hi), free(sky->s), free(sky->s_fixed), free(sky->p_ell);
  for (int set = 0; set < 2; ++set)
    free(sky->noise[set]), free(sky->x[set]);
  memset(sky, 0, sizeof *sky);
}
