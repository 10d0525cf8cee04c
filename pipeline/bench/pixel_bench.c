/* pixel_bench.c: times qp_pixel_matrices_build, the Legendre/Wigner pair sums behind S and the
 * bin matrices P_p (covariance_setup, fisher_run and spectra_run of the pixel route).
 *   qp-pixel-bench NSIDE FIELDS(T|QU|TQU) N_BINS [REPEATS [PANEL]]
 * The sky outside |b| < 20 deg (Galactic pixels, as `qmlpipe simulate --galactic-cut 20` masks
 * it), lmax = 3 nside - 1, bins of equal width: prints seconds (best of REPEATS) for S alone
 * and for S with N_BINS bin matrices of TT (or EE), and the time per pair of positions. With
 * PANEL, also S built a panel of PANEL columns at a time into one n_pix x PANEL buffer (as a
 * device run under memory.host_limit builds C: pixel_matrices.h), its time against the whole
 * build's, and whether every panel equals the whole build's columns to the bit. */
#define _GNU_SOURCE /* M_PI */
#include <chealpix.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pixel_matrices.h"

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s NSIDE T|QU|TQU N_BINS [REPEATS]\n", argv[0]);
    return 2;
  }
  const int64_t nside = atoll(argv[1]);
  const int n_bins = atoi(argv[3]), repeats = argc > 4 ? atoi(argv[4]) : 3;
  const qp_fields fields = strcmp(argv[2], "T") == 0    ? QP_FIELDS_T
                           : strcmp(argv[2], "QU") == 0 ? QP_FIELDS_QU
                                                        : QP_FIELDS_TQU;
  if (nside < 1 || n_bins < 1 || repeats < 1) return 2;
  /* One spectrum (TT, or EE without T) over 2..3 nside - 1. */
  const int lmax = (int)(3 * nside - 1);
  qp_config cfg;
  qp_config_defaults(&cfg);
  cfg.n_spectra = 1;
  cfg.spectra[0] = fields == QP_FIELDS_QU ? QP_EE : QP_TT;
  cfg.fields = fields;
  cfg.ell_min = 2;
  cfg.lmax = cfg.lmax_signal = lmax;
  const int64_t n_sky = 12 * nside * nside;
  qp_problem p = {.cfg = &cfg, .nside = nside, .n_sky = n_sky};
  p.plan = &p.plan_store; /* no plan: the pixel matrices whole (qp_host_panel) */
  /* The observed positions: T ones first, then polarised ones (pixel_matrices.h). */
  const double z_cut = sin(20.0 * M_PI / 180.0);
  int64_t *kept = malloc((size_t)n_sky * sizeof *kept), n_kept = 0;
  for (int64_t pix = 0; pix < n_sky; ++pix) {
    double v[3];
    pix2vec_ring64(nside, pix, v);
    if (fabs(v[2]) > z_cut) kept[n_kept++] = pix;
  }
  const int with_t = fields != QP_FIELDS_QU, with_p = fields != QP_FIELDS_T;
  p.n_obs_t = with_t ? n_kept : 0;
  p.n_obs_p = with_p ? n_kept : 0;
  p.n_observed = p.n_obs_t + p.n_obs_p;
  p.n_pix = p.n_obs_t + 2 * p.n_obs_p;
  p.observed = malloc((size_t)p.n_observed * sizeof(int64_t));
  p.vectors = malloc((size_t)(3 * p.n_observed) * sizeof(double));
  for (int64_t k = 0; k < p.n_observed; ++k) {
    p.observed[k] = kept[k % n_kept];
    pix2vec_ring64(nside, p.observed[k], p.vectors + 3 * k);
  }
  free(kept);
  int *lo = malloc((size_t)n_bins * sizeof *lo), *hi = malloc((size_t)n_bins * sizeof *hi);
  for (int b = 0; b < n_bins; ++b) {
    lo[b] = 2 + b * (lmax - 1) / n_bins;
    hi[b] = 2 + (b + 1) * (lmax - 1) / n_bins - 1;
  }
  p.n_bins = n_bins;
  p.bin_lo = lo;
  p.bin_hi = hi;
  p.n_params = n_bins;
  p.ell_weight = malloc((size_t)(lmax + 1) * sizeof(double));
  p.cls.lmax = lmax;
  for (int s = 0; s < 6; ++s)
    p.cls.cl[s] = calloc((size_t)(lmax + 1), sizeof(double));
  for (int l = 0; l <= lmax; ++l) {
    p.ell_weight[l] = (2.0 * l + 1.0) / (4.0 * M_PI);
    p.cls.cl[QP_TT][l] = p.cls.cl[QP_EE][l] = 1.0 / (1.0 + l);
    p.cls.cl[QP_BB][l] = 0.1 / (1.0 + l);
  }
  const int64_t n = p.n_pix;
  double *cov = calloc((size_t)(n * n), sizeof(double));
  double *slots = calloc((size_t)(n * n) * (size_t)n_bins, sizeof(double));
  if (!cov || !slots) return 3;
  double best_s = 1e300, best_all = 1e300;
  for (int r = 0; r < repeats; ++r) {
    double t0 = omp_get_wtime();
    if (qp_pixel_matrices_build(&p, cov, 0, 0, NULL, 0) != QP_OK) return 1;
    double t1 = omp_get_wtime();
    if (qp_pixel_matrices_build(&p, cov, 0, n_bins, slots, (size_t)(n * n)) != QP_OK) return 1;
    double t2 = omp_get_wtime();
    best_s = fmin(best_s, t1 - t0);
    best_all = fmin(best_all, t2 - t1);
  }
  const int64_t panel = argc > 5 ? atoll(argv[5]) : 0;
  if (panel > 0 && panel < n) {
    /* The whole build once more into zeros (the builds above added S to cov), then the panels:
     * each into the zeroed panel buffer, checked against the whole build's columns. */
    double *whole = calloc((size_t)(n * n), sizeof(double)),
           *part = malloc((size_t)(n * panel) * sizeof(double));
    if (!whole || !part) return 3;
    if (qp_pixel_matrices_build(&p, whole, 0, 0, NULL, 0) != QP_OK) return 1;
    double t0, best_panels = 1e300;
    int64_t differ = 0;
    for (int r = 0; r < repeats; ++r) {
      double t_panels = 0.0;
      for (int64_t c0 = 0; c0 < n; c0 += panel) {
        const int64_t cols = n - c0 < panel ? n - c0 : panel;
        memset(part, 0, (size_t)(n * cols) * sizeof(double));
        const qp_pixel_columns pc = {c0, cols, n};
        t0 = omp_get_wtime();
        if (qp_pixel_matrices_build_columns(&p, part, cfg.ell_min, lmax, 0, 0, NULL, &pc) != QP_OK)
          return 1;
        t_panels += omp_get_wtime() - t0;
        if (r == 0)
          for (int64_t k = 0; k < n * cols; ++k)
            differ += memcmp(&part[k], &whole[c0 * n + k], sizeof(double)) != 0;
      }
      best_panels = fmin(best_panels, t_panels);
    }
    printf("S in panels of %lld of %lld columns: %.3f s (best of %d), %.2f x the whole build "
           "(S above, into pages already touched); entries differing from the whole build's: "
           "%lld\n",
           (long long)panel, (long long)n, best_panels, repeats, best_panels / best_s,
           (long long)differ);
    free(whole);
    free(part);
    if (differ) return 1;
  }
  const double pairs = 0.5 * (double)p.n_observed * (double)(p.n_observed + 1);
  printf("nside %lld %s n_pix %lld lmax %d threads %d: S %.3f s (%.1f ns per pair), S + %d bin "
         "matrices %.3f s\n",
         (long long)nside, argv[2], (long long)n, lmax, omp_get_max_threads(), best_s,
         1e9 * best_s / pairs, n_bins, best_all);
  return 0;
}
