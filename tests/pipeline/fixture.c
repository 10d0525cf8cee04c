/* fixture.c: see fixture.h. */
#include "fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "cls_text.h"
#include "comm.h"
#include "driver.h"
#include "fits_map.h"
#include "h5_matrix.h"
#include "simulate.h"

double qp_fixture_cl(const qp_fixture *f, int l) {
  if (l < 2) return 0.0;
  return f->cl_flat > 0 ? f->cl_flat : 2.0 * M_PI * f->dl_flat / ((double)l * (l + 1));
}

double qp_fixture_cl_spectrum(const qp_fixture *f, qp_spectrum s, int l) {
  const double tt = qp_fixture_cl(f, l), ee = f->ee_ratio * tt;
  switch (s) {
  case QP_TT: return tt;
  case QP_EE: return ee;
  case QP_BB: return f->bb_ratio * tt;
  case QP_TE: return f->te_corr * sqrt(tt * ee);
  default: return 0.0;
  }
}

qp_err qp_fixture_write(const qp_fixture *f, qp_config *cfg) {
  qp_config_defaults(cfg);
  const int64_t n_sky = 12 * f->nside * f->nside;
  qp_cls cls = {0};
  cls.lmax = (int)(3 * f->nside);
  cls.n_columns = 4;
  for (int s = 0; s < 6; ++s)
    cls.cl[s] = calloc((size_t)cls.lmax + 1, sizeof(double));
  for (int sp = 0; sp < 6; ++sp)
    for (int l = 0; l <= cls.lmax; ++l)
      cls.cl[sp][l] = qp_fixture_cl_spectrum(f, sp, l);
  snprintf(cfg->cls, sizeof cfg->cls, "%s_cls.txt", f->name);
  qp_err err = qp_cls_write(cfg->cls, &cls);
  double *sky = NULL;
  const int n_col = qp_simulate_columns(f->fields);
  if (err == QP_OK)
    err = QP_ALLOC_DOUBLES("fixture_sky", QP_TERM_TRANSIENT, n_sky * n_col * f->n_maps, &sky);
  qp_sim_options sim = {.nside = f->nside,
                        .ell_min = f->ell_min,
                        .lmax = f->sim_lmax,
                        .noise_variance = f->noise_variance,
                        .n_maps = f->n_maps,
                        .seed = f->seed};
  qp_sim_pol pol = {.fields = f->fields,
                    .noise_variance_pol =
                        f->noise_variance_pol > 0 ? f->noise_variance_pol : f->noise_variance};
  if (err == QP_OK) err = qp_simulate_sky(&cls, &sim, &pol, sky);
  const char *names[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  cfg->n_maps = f->n_maps;
  cfg->maps = calloc((size_t)f->n_maps, sizeof *cfg->maps);
  for (int k = 0; err == QP_OK && k < f->n_maps; ++k) {
    snprintf(cfg->maps[k], sizeof cfg->maps[k], "%s_map_%04d.fits", f->name, k);
    const double *col[3];
    for (int c = 0; c < n_col; ++c)
      col[c] = sky + ((int64_t)k * n_col + c) * n_sky;
    err = qp_fits_map_write(cfg->maps[k], f->nside, n_col, names, col);
  }
  if (err == QP_OK) {
    qp_simulate_galactic_mask(f->nside, f->cut_deg, sky);
    snprintf(cfg->mask, sizeof cfg->mask, "%s_mask.fits", f->name);
    const double *col[] = {sky};
    const char *mask_name[] = {"MASK"};
    err = qp_fits_map_write(cfg->mask, f->nside, 1, mask_name, col);
  }
  qp_budget_free(sky);
  qp_cls_free(&cls);
  cfg->ell_min = f->ell_min;
  cfg->lmax = f->lmax;
  cfg->lmax_signal = f->lmax_signal;
  cfg->bin_width = f->bin_width;
  cfg->noise_kind = QP_NOISE_VARIANCE;
  cfg->noise_variance = f->noise_variance;
  cfg->noise_variance_pol = f->noise_variance_pol > 0 ? f->noise_variance_pol : f->noise_variance;
  cfg->fields = f->fields;
  static const qp_spectrum defaults[3][4] = {{QP_TT}, {QP_EE, QP_BB}, {QP_TT, QP_EE, QP_BB, QP_TE}};
  static const int n_defaults[3] = {1, 2, 4};
  cfg->n_spectra = f->n_spectra ? f->n_spectra : n_defaults[f->fields];
  for (int i = 0; i < cfg->n_spectra; ++i)
    cfg->spectra[i] = f->n_spectra ? f->spectra[i] : defaults[f->fields][i];
  cfg->path = QP_PATH_PIXEL_DIRECT;
  snprintf(cfg->output, sizeof cfg->output, "%s_results.h5", f->name);
  snprintf(cfg->source, sizeof cfg->source, "(test %s)", f->name);
  return err;
}

qp_err qp_fixture_run(const qp_config *cfg, qp_problem *p, qp_meter_sample *baseline) {
  qp_run_options options = {.progress = 0, .write_results = 0};
  QP_CALL(qp_driver_run(cfg, &options, p, baseline));
  return QP_OK;
}

qp_err qp_fixture_data_vector(const qp_problem *p, const char *path, double *x) {
  qp_healpix_info info;
  QP_CALL(qp_fits_map_info(path, &info));
  QP_CHECK(info.nside == p->nside, QP_ERR_INPUT, "%s: nside %lld, the run's %lld", path,
           (long long)info.nside, (long long)p->nside);
  double *sky = malloc((size_t)info.n_sky * sizeof *sky);
  QP_CHECK(sky, QP_ERR_NOMEM, "%s: no memory for a sky", path);
  const int t = p->cfg->fields != QP_FIELDS_QU, pol = p->cfg->fields != QP_FIELDS_T;
  const int q_column = info.n_columns >= 3 ? 1 : 0;
  qp_err err = QP_OK;
  if (t) err = qp_fits_map_read(path, &info, 0, sky);
  for (int64_t k = 0; err == QP_OK && k < p->n_obs_t; ++k)
    x[k] = sky[p->observed[k]];
  for (int c = 0; pol && c < 2 && err == QP_OK; ++c) {
    err = qp_fits_map_read(path, &info, q_column + c, sky);
    for (int64_t k = 0; err == QP_OK && k < p->n_obs_p; ++k)
      x[p->n_obs_t + c * p->n_obs_p + k] = sky[p->observed[p->n_obs_t + k]];
  }
  free(sky);
  QP_CALL(err);
  return QP_OK;
}

qp_err qp_fixture_add_maps2(const qp_fixture *f, const char *name, uint64_t seed, double variance,
                            qp_config *cfg) {
  qp_fixture b = *f;
  b.name = name;
  b.seed = seed;
  b.noise_variance = variance;
  b.noise_variance_pol = variance;
  qp_config second;
  QP_CALL(qp_fixture_write(&b, &second));
  free(cfg->maps2);
  cfg->maps2 = second.maps;
  cfg->n_maps2 = second.n_maps;
  second.maps = NULL;
  second.n_maps = 0;
  qp_config_free(&second);
  cfg->noise2_kind = QP_NOISE_VARIANCE;
  cfg->noise2_variance = cfg->noise2_variance_pol = variance;
  return QP_OK;
}

qp_err qp_fixture_dense_noise(qp_config *cfg, const char *path, double off_diagonal) {
  qp_problem p;
  qp_meter_sample baseline;
  QP_CALL(qp_fixture_run(cfg, &p, &baseline));
  const int64_t n = p.n_pix;
  qp_problem_free(&p);
  double *noise = calloc((size_t)(n * n), sizeof *noise);
  QP_CHECK(noise, QP_ERR_NOMEM, "fixture: no memory for a %lld x %lld noise", (long long)n,
           (long long)n);
  for (int64_t i = 0; i < n; ++i) {
    noise[i + i * n] = 1.0 + 0.01 * (double)(i % 5);
    if (i > 0) noise[i + (i - 1) * n] = noise[(i - 1) + i * n] = off_diagonal;
  }
  qp_err err = qp_h5_matrix_write(path, "/covariance", n, n, noise);
  free(noise);
  QP_CALL(err);
  cfg->noise_kind = QP_NOISE_COVARIANCE;
  snprintf(cfg->noise_file, sizeof cfg->noise_file, "%s", path);
  snprintf(cfg->noise_dataset, sizeof cfg->noise_dataset, "/covariance");
  return QP_OK;
}

const char *qp_fixture_rank_name(char *buf, size_t size, const char *name) {
  if (qp_comm_size() == 1) return name;
  snprintf(buf, size, "%s_r%d", name, qp_comm_rank());
  return buf;
}

qp_err qp_fixture_write_ranked(qp_fixture *f, const char *name, int grid_block, qp_config *cfg) {
  char file[256];
  f->name = qp_fixture_rank_name(file, sizeof file, name);
  const qp_err err = qp_fixture_write(f, cfg);
  f->name = NULL;
  if (err == QP_OK) cfg->grid_block = grid_block;
  return err;
}
