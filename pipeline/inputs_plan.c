/* inputs_plan.c: what the plan needs from the inputs, before anything large exists
 * (inputs.h): the mask(s) and their counts, the C_ell, the bins, a variance map's figures;
 * what covariance_setup reads: inputs.c. */
#include "inputs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bins_text.h"
#include "blas_buffers.h"
#include "calibration.h"
#include "comm.h"
#include "covariance_terms.h"
#include "input_file.h"
#include "legendre.h"
#include "mode_layout.h"

/* Bins from the config: bin_width or a file of "ell_min ell_max" rows (io/bins_text.h). */
static qp_err qp_inputs_bins(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  p->n_bins = 0;
  if (cfg->bins_file[0]) {
    qp_bins bins;
    QP_CALL(qp_bins_read(cfg->bins_file, cfg->ell_min, cfg->lmax, &bins));
    p->bin_lo = bins.lo;
    p->bin_hi = bins.hi;
    p->n_bins = bins.n;
    return QP_OK;
  }
  int cap = cfg->lmax - cfg->ell_min + 1;
  p->bin_lo = malloc((size_t)cap * sizeof *p->bin_lo);
  p->bin_hi = malloc((size_t)cap * sizeof *p->bin_hi);
  QP_CHECK(p->bin_lo && p->bin_hi, QP_ERR_NOMEM, "out of memory for %d bins", cap);
  for (int lo = cfg->ell_min; lo <= cfg->lmax; lo += cfg->bin_width) {
    p->bin_lo[p->n_bins] = lo;
    p->bin_hi[p->n_bins] =
        lo + cfg->bin_width - 1 < cfg->lmax ? lo + cfg->bin_width - 1 : cfg->lmax;
    p->n_bins++;
  }
  return QP_OK;
}

/* The plan's inputs of a `dimensions:` config: the sizes are given, nothing is read. */
static qp_err qp_inputs_plan_dimensions(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  p->nside = cfg->dim_nside;
  p->n_sky = 12 * p->nside * p->nside; /* bounded: nside <= 2^29 (config.h), 3 x 2^60 */
  QP_CHECK(!p->nside || cfg->lmax_signal <= 3 * p->nside - 1, QP_ERR_INPUT,
           "config '%s': lmax_signal = %d exceeds 3 nside - 1 = %lld", cfg->source,
           cfg->lmax_signal, (long long)(3 * p->nside - 1));
  const int64_t n = cfg->dim_n_pix;
  const int64_t per = qp_has_t(cfg) + 2 * qp_has_p(cfg); /* data entries per position pair */
  QP_CHECK(n % per == 0, QP_ERR_INPUT,
           "config '%s': dimensions.n_pix = %lld must be a multiple of %lld for fields %s "
           "(T at n pixels, Q and U at as many)",
           cfg->source, (long long)n, (long long)per,
           cfg->fields == QP_FIELDS_T ? "T" : (cfg->fields == QP_FIELDS_QU ? "QU" : "TQU"));
  p->n_obs_t = qp_has_t(cfg) ? n / per : 0;
  p->n_obs_p = qp_has_p(cfg) ? n / per : 0;
  p->n_observed = p->n_obs_t + p->n_obs_p;
  p->n_pix = n;
  p->n_maps = cfg->dim_n_maps;
  p->n_bins = (int)cfg->dim_n_bins;
  p->n_params = p->n_bins * cfg->n_spectra;
  qp_harmonic_layout(p);
  if (cfg->dim_n_modes > 0) p->n_modes = cfg->dim_n_modes;
  return QP_OK;
}

/* The variance map's figures for the plan (planner.h, qp_noise_figures), in one sky buffer
 * `sky` (what the masks were read into) and an index of one mask's observed pixels (the size of
 * covariance_setup's observed_index, which the model predicts beside its own sky buffer, so the
 * plan holds no more than that stage): each field's mean, least and largest variance over its
 * observed pixels, summed in the data vector's order (T, then Q, then U, each by ascending RING
 * index) as qp_inputs_read_data sums them. A map that covariance_setup will refuse (nside,
 * columns, a value at an observed pixel) gives none: the stage names what is wrong, in its own
 * order. */
static qp_err qp_inputs_variance_figures(const qp_problem *p, double *sky,
                                         qp_noise_figures *noise) {
  const qp_config *cfg = p->cfg;
  qp_healpix_info info;
  int column[3];
  if (qp_fits_map_info(cfg->noise_file, &info) != QP_OK || info.nside != p->nside ||
      qp_inputs_columns(p, cfg->noise_file, "noise variance map", &info, column) != QP_OK) {
    qp_error_clear();
    return QP_OK;
  }
  const int64_t largest = p->n_obs_t > p->n_obs_p ? p->n_obs_t : p->n_obs_p;
  int64_t *observed = NULL, n = 0;
  QP_CALL(qp_budget_alloc_array(QP_TERM_OBSERVED_INDEX, QP_TERM_TRANSIENT,
                                (size_t)(largest > 0 ? largest : 1), sizeof *observed,
                                (void **)&observed));
  qp_err err = QP_OK;
  int known = 1;
  double sum[2] = {0.0, 0.0}, least[2] = {INFINITY, INFINITY}, most[2] = {0.0, 0.0};
  for (int f = 0; f < 3 && known && err == QP_OK; ++f) {
    if (column[f] < 0) continue;
    if (f < 2) { /* T's mask, then the polarisation's, for Q and U (read and checked before) */
      err = qp_inputs_read_mask(p, f == 0 ? cfg->mask : qp_mask_pol(cfg), sky, &n);
      for (int64_t i = 0, k = 0; err == QP_OK && i < p->n_sky; ++i)
        if (sky[i] != 0.0 && !qp_is_unseen(sky[i])) observed[k++] = i;
    }
    if (err != QP_OK) break;
    if (qp_fits_map_read(cfg->noise_file, &info, column[f], sky) != QP_OK) {
      qp_error_clear();
      known = 0;
      break;
    }
    const int g = f > 0;
    for (int64_t k = 0; k < n && known; ++k) {
      const double v = sky[observed[k]];
      known = isfinite(v) && !qp_is_unseen(v) && v > 0.0 && v <= QP_INPUTS_VALUE_MAX;
      sum[g] += v;
      least[g] = v < least[g] ? v : least[g];
      most[g] = v > most[g] ? v : most[g];
    }
  }
  qp_budget_free(observed);
  QP_CALL(err);
  if (!known) return QP_OK;
  const int64_t count[2] = {p->n_obs_t, 2 * p->n_obs_p};
  for (int g = 0; g < 2; ++g) {
    noise->mean[g] = count[g] > 0 ? sum[g] / (double)count[g] : 0.0;
    noise->least[g] = least[g];
    noise->most[g] = most[g];
  }
  noise->known = 1;
  return QP_OK;
}

/* What the plan needs from the files: the mask's nside, its observed pixels (and mask_pol's),
 * the C_ell, a variance map's figures. Checks that lmax fits the mask and the C_ell file. */
static qp_err qp_inputs_read_plan_files(qp_problem *p, qp_noise_figures *noise) {
  const qp_config *cfg = p->cfg;
  /* The mask first: its nside bounds lmax, the first thing a user gets wrong. */
  qp_healpix_info mask_info;
  QP_CALL(qp_input_check("mask file", cfg->mask, QP_INPUT_ANY_SIZE));
  QP_CALL(qp_fits_map_info(cfg->mask, &mask_info));
  p->nside = mask_info.nside;
  p->n_sky = mask_info.n_sky;
  QP_CHECK(cfg->lmax <= 3 * p->nside - 1, QP_ERR_INPUT,
           "lmax = %d exceeds 3 nside - 1 = %lld for the mask '%s' (nside %lld)", cfg->lmax,
           (long long)(3 * p->nside - 1), cfg->mask, (long long)p->nside);
  QP_CHECK(cfg->lmax_signal <= 3 * p->nside - 1, QP_ERR_INPUT,
           "lmax_signal = %d exceeds 3 nside - 1 = %lld for the mask '%s' (nside %lld)",
           cfg->lmax_signal, (long long)(3 * p->nside - 1), cfg->mask, (long long)p->nside);
  int pol_spectra = 0;
  for (int s = 0; s < cfg->n_spectra; ++s)
    pol_spectra |= cfg->spectra[s] != QP_TT;
  QP_CHECK(!pol_spectra || cfg->ell_min >= 2, QP_ERR_INPUT,
           "config '%s': ell_min = %d, but polarisation spectra start at ell 2", cfg->source,
           cfg->ell_min);
  QP_CALL(qp_cls_read(cfg->cls, &p->cls));
  QP_CHECK(p->cls.lmax >= cfg->lmax_signal, QP_ERR_INPUT,
           "C_ell file '%s' ends at ell %d, but lmax_signal is %d", cfg->cls, p->cls.lmax,
           cfg->lmax_signal);
  /* The pixel window of the mask's nside, to lmax_signal (a few KiB: the plan reads it too,
   * so that a missing or short table is said before anything large is allocated). */
  if (cfg->pixel_window)
    QP_CALL(
        qp_pixel_window_read(cfg->pixel_window_file, p->nside, cfg->lmax_signal, &p->pixel_window));

  double *sky = NULL;
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, p->n_sky, &sky));
  qp_err err = QP_OK;
  p->n_obs_t = p->n_obs_p = 0;
  if (qp_has_t(cfg)) err = qp_inputs_read_mask(p, cfg->mask, sky, &p->n_obs_t);
  if (err == QP_OK && qp_has_p(cfg))
    err = qp_inputs_read_mask(p, qp_mask_pol(cfg), sky, &p->n_obs_p);
  /* A variance map's figures, for the SMW check (not with the switch: SMW then inverts
   * N_eff, dense, which basis_setup measures), in the same sky buffer. */
  if (err == QP_OK && cfg->noise_kind == QP_NOISE_VARIANCE_MAP && cfg->lmax >= cfg->lmax_signal)
    err = qp_inputs_variance_figures(p, sky, noise);
  qp_budget_free(sky);
  QP_CALL(err);
  return QP_OK;
}

/* Rank 0's plan inputs to every rank (a no-op on one process). */
static qp_err qp_inputs_share_plan(qp_problem *p, qp_noise_figures *noise) {
  if (qp_comm_size() == 1) return QP_OK;
  int64_t v[6] = {p->nside, p->n_sky, p->n_obs_t, p->n_obs_p, p->cls.lmax, p->cls.n_columns};
  QP_CALL(qp_comm_bcast(v, sizeof v));
  QP_CALL(qp_comm_bcast(noise, sizeof *noise));
  p->nside = v[0];
  p->n_sky = v[1];
  p->n_obs_t = v[2];
  p->n_obs_p = v[3];
  const int reader = qp_inputs_reader();
  p->cls.lmax = (int)v[4];
  p->cls.n_columns = (int)v[5];
  for (int s = 0; s < 6; ++s) {
    if (!reader) {
      p->cls.cl[s] = calloc((size_t)(p->cls.lmax + 1), sizeof(double));
      QP_CHECK(p->cls.cl[s], QP_ERR_NOMEM, "out of memory for the C_ell (lmax %d)", p->cls.lmax);
    }
    QP_CALL(qp_comm_bcast(p->cls.cl[s], (size_t)(p->cls.lmax + 1) * sizeof(double)));
  }
  if (p->cfg->pixel_window) {
    qp_pixel_window *w = &p->pixel_window;
    const size_t bytes = (size_t)(p->cfg->lmax_signal + 1) * sizeof(double);
    if (!reader) {
      w->lmax = p->cfg->lmax_signal;
      w->t = malloc(bytes);
      w->p = malloc(bytes);
      QP_CHECK(w->t && w->p, QP_ERR_NOMEM, "out of memory for the pixel window (lmax %d)", w->lmax);
    }
    QP_CALL(qp_comm_bcast(w->t, bytes));
    QP_CALL(qp_comm_bcast(w->p, bytes));
    QP_CALL(qp_comm_bcast(w->path, sizeof w->path));
    QP_CALL(qp_comm_bcast(w->text, sizeof w->text));
  }
  return QP_OK;
}

/* A calibration's BLAS part holds for the library and kernel it was measured on: the buffers
 * follow the kernel's blocking (SkylakeX packs 384 rows a column where Haswell packs 256). On
 * another, or where the file does not say (files from before it was recorded), the planner
 * uses the footprint measured here instead, and rank 0 says so: never applied silently. */
static void qp_inputs_check_calibration_kernel(qp_calibration *cal) {
  if (cal->builtin) return;
  const qp_blas_footprint f = qp_blas_buffer_footprint();
  char running[sizeof cal->blas_kernel];
  snprintf(running, sizeof running, "%.63s %.47s", f.library, f.kernel);
  cal->blas_stale = strcmp(cal->blas_kernel, running) != 0;
  if (cal->blas_stale && qp_comm_rank() == 0)
    fprintf(stderr,
            "[qmlpipe] calibration '%s': its BLAS buffers were measured on %s, this process runs "
            "%s: that part is measured here instead (run `qmlpipe calibrate` on this node type "
            "to calibrate it)\n",
            cal->source, cal->blas_kernel[0] ? cal->blas_kernel : "an unrecorded kernel", running);
}

qp_err qp_inputs_check_files(const qp_config *cfg) {
  char role[64];
  for (int m = 0; m < cfg->n_maps; ++m) {
    snprintf(role, sizeof role, "map file (maps[%d])", m);
    QP_CALL(qp_input_check(role, cfg->maps[m], QP_INPUT_ANY_SIZE));
  }
  for (int m = 0; m < cfg->n_maps2; ++m) {
    snprintf(role, sizeof role, "map file (maps2[%d])", m);
    QP_CALL(qp_input_check(role, cfg->maps2[m], QP_INPUT_ANY_SIZE));
  }
  if (cfg->n_maps2 > 0 && cfg->noise2_kind != QP_NOISE_VARIANCE)
    QP_CALL(qp_input_check(cfg->noise2_kind == QP_NOISE_COVARIANCE
                               ? "noise covariance file (noise2.covariance)"
                               : "noise variance map (noise2.variance_map)",
                           cfg->noise2_file, QP_INPUT_ANY_SIZE));
  const int noise_file = cfg->noise_kind != QP_NOISE_VARIANCE;
  const struct {
    const char *role, *path;
  } files[] = {
      {"mask file", cfg->mask},
      {"mask_pol file", cfg->mask_pol},
      {"C_ell file", cfg->cls},
      {cfg->noise_kind == QP_NOISE_COVARIANCE ? "noise covariance file (noise.covariance)"
                                              : "noise variance map (noise.variance_map)",
       noise_file ? cfg->noise_file : ""},
      {"bins file", cfg->bins_file},
      {"pixel window table (pixel_window_file)", cfg->pixel_window ? cfg->pixel_window_file : ""},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i)
    if (files[i].path[0]) QP_CALL(qp_input_check(files[i].role, files[i].path, QP_INPUT_ANY_SIZE));
  return QP_OK;
}

qp_err qp_inputs_plan(qp_problem *p, qp_noise_figures *noise) {
  const qp_config *cfg = p->cfg;
  memset(noise, 0, sizeof *noise);
  QP_CALL(qp_calibration_load(cfg->calibration, &p->calibration));
  qp_inputs_check_calibration_kernel(&p->calibration);
  if (cfg->has_dimensions) return qp_inputs_plan_dimensions(p);

  /* With MPI, rank 0 reads the mask(s) and the C_ell file; the others get what they hold. */
  QP_CALL(qp_comm_agree(qp_inputs_reader() ? qp_inputs_read_plan_files(p, noise) : QP_OK));
  QP_CALL(qp_inputs_share_plan(p, noise));
  p->n_observed = p->n_obs_t + p->n_obs_p;
  p->n_pix = p->n_obs_t + 2 * p->n_obs_p;
  p->n_maps = cfg->n_maps;

  QP_CALL(qp_inputs_bins(p));
  p->n_params = p->n_bins * cfg->n_spectra;
  p->ell_weight = malloc((size_t)(cfg->lmax_signal + 1) * sizeof *p->ell_weight);
  QP_CHECK(p->ell_weight, QP_ERR_NOMEM, "out of memory for %d multipole weights",
           cfg->lmax_signal + 1);
  for (int l = 0; l <= cfg->lmax_signal; ++l) {
    double b = qp_beam_gaussian(l, cfg->beam_fwhm_arcmin);
    p->ell_weight[l] = (2.0 * l + 1.0) / (4.0 * M_PI) * b * b;
  }

  qp_harmonic_layout(p);
  /* The noise's mean variance per field, for the fields' scales (field_scale.h) and the
   * planner's SMW check: the config's scalar variances, or the variance map's means (bitwise
   * those qp_inputs_read_data finds again). */
  if (cfg->noise_kind == QP_NOISE_VARIANCE) {
    p->noise_field_mean[0] = cfg->noise_variance;
    p->noise_field_mean[1] =
        cfg->noise_variance_pol > 0 ? cfg->noise_variance_pol : cfg->noise_variance;
  } else if (noise->known) {
    p->noise_field_mean[0] = noise->mean[0];
    p->noise_field_mean[1] = noise->mean[1];
  }
  return QP_OK;
}
