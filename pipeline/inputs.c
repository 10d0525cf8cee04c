/* inputs.c: reading and checking the inputs of an analysis (inputs.h). */
#include "inputs.h"

#include <chealpix.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bins_text.h"
#include "calibration.h"
#include "driver.h"
#include "fits_map.h"
#include "h5_matrix.h"
#include "comm.h"
#include "harmonic_route.h"
#include "spin_harmonics.h"
#include "conditioning.h"
#include "legendre.h"
#include "terms.h"

/* HEALPix marks unobserved pixels with this value (healpy's UNSEEN). */
#define QP_HEALPIX_UNSEEN (-1.6375e30)

static int qp_is_unseen(double v) { return fabs(v - QP_HEALPIX_UNSEEN) < 1e-5 * 1.6375e30; }

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

/* The masks: T's is `mask`; Q and U's is `mask_pol`, or `mask` when that is not given. */
static int qp_has_t(const qp_config *cfg) { return cfg->fields != QP_FIELDS_QU; }
static int qp_has_p(const qp_config *cfg) { return cfg->fields != QP_FIELDS_T; }
static const char *qp_mask_pol(const qp_config *cfg) {
  return cfg->mask_pol[0] ? cfg->mask_pol : cfg->mask;
}

/* Reads a mask into `sky` and counts its observed pixels (nonzero, not UNSEEN). */
static qp_err qp_inputs_read_mask(const qp_problem *p, const char *path, double *sky,
                                  int64_t *n_observed) {
  qp_healpix_info info;
  QP_CALL(qp_fits_map_info(path, &info));
  QP_CHECK(info.nside == p->nside, QP_ERR_INPUT,
           "mask '%s' has nside %lld but the mask '%s' has nside %lld", path, (long long)info.nside,
           p->cfg->mask, (long long)p->nside);
  QP_CALL(qp_fits_map_read(path, &info, 0, sky));
  int64_t n = 0;
  for (int64_t i = 0; i < p->n_sky; ++i) {
    QP_CHECK(isfinite(sky[i]), QP_ERR_INPUT, "mask '%s' has a non-finite value at RING pixel %lld",
             path, (long long)i);
    if (sky[i] != 0.0 && !qp_is_unseen(sky[i])) ++n;
  }
  QP_CHECK(n > 0, QP_ERR_INPUT, "mask '%s' is empty: no pixel is observed (nonzero)", path);
  *n_observed = n;
  return QP_OK;
}

int64_t qp_inputs_blas_width(const qp_problem *p, qp_model_path path) {
  const int dense = p->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  return path == QP_MODEL_HARMONIC_SMW && !dense ? p->n_modes : p->n_pix;
}

/* The model of one route: pixel-direct, SMW or projection; its dimensions to *dims_out when
 * that is not NULL. */
static qp_err qp_inputs_model(const qp_problem *p, qp_model_path path, int64_t fisher_chunk,
                              int64_t spectra_chunk, qp_model *model, qp_model_dims *dims_out) {
  const qp_config *cfg = p->cfg;
  qp_model_dims dims = {
      .path = path,
      .n_modes = p->n_modes,
      .switched = p->switched,
      .n_sky = p->n_sky,
      .n_positions = p->n_observed,
      .n_pix = p->n_pix,
      .n_maps = p->n_maps,
      .n_params = p->n_params,
      .fisher_chunk = fisher_chunk,
      .spectra_chunk = spectra_chunk,
      .noise_dense = cfg->noise_kind == QP_NOISE_COVARIANCE,
      .reader = qp_comm_rank() == 0,
  };
  const qp_grid *grid = p->ops && p->ops->distributed ? qp_grid_current() : NULL;
  if (p->plan_grid.nprow > 0) {
    grid = &p->plan_grid;
    dims.reader = grid->myrow == 0 && grid->mycol == 0;
  }
  if (grid) {
    dims.grid_rows = grid->nprow;
    dims.grid_cols = grid->npcol;
    dims.grid_row = grid->myrow;
    dims.grid_col = grid->mycol;
    dims.block = grid->block;
  }
  for (int f = 0; f < 3; ++f) dims.n_fields += p->field_offset[f] >= 0;
  dims.n_lm = (int64_t)(cfg->lmax + 1) * (cfg->lmax + 1);
  QP_CALL(qp_model_predict(&dims, model));
  if (dims_out) *dims_out = dims;
  /* At most 2^56 from a calibration file (calibration.h); the built-in one is 57 MiB plus
   * 2 KiB per column and thread up to 65536 columns, plus 8 MiB: far below. */
  model->overhead_bytes =
      p->calibration.builtin ? QP_MODEL_DEFAULT_OVERHEAD : p->calibration.overhead_bytes;
  if (p->calibration.builtin && p->n_pix > 2048) /* the wide warm-up (driver.c) */
    model->overhead_bytes = QP_MODEL_DEFAULT_OVERHEAD_LARGE +
                            qp_driver_warm_up_panel_bytes(qp_inputs_blas_width(p, path));
  if (p->calibration.builtin && grid) model->overhead_bytes += QP_MODEL_DEFAULT_OVERHEAD_MPI;
  model->overhead_parts[0] = p->calibration.program_bytes;
  model->overhead_parts[1] = p->calibration.blas_bytes;
  model->overhead_parts[2] = p->calibration.hdf5_bytes;
  return QP_OK;
}

/* Whether the pixel-direct plan of chunks (f, s) keeps `stage` inside `limit`. A plan with a
 * term beyond 2^56 bytes (the model refuses it, model->oversize_term) does not, and its error
 * is forgotten: smaller chunks may do. The model decides that on each term's whole size, the
 * same on every rank. */
static qp_err qp_inputs_chunk_fits(const qp_problem *p, int64_t f, int64_t s, qp_stage_id stage,
                                   double limit, qp_model *model, int *fits) {
  qp_err err = qp_inputs_model(p, QP_MODEL_PIXEL_DIRECT, f, s, model, NULL);
  if (err == QP_ERR_INPUT && model->oversize_term[0]) {
    qp_error_clear();
    *fits = 0;
    return QP_OK;
  }
  QP_CALL(err);
  /* Bounded: a stage peak and the overhead stay below 2^63 (model.h). */
  *fits = (double)(qp_model_stage_peak(model, stage) + model->overhead_bytes) <= limit;
  return QP_OK;
}

/* The planner's chunks for the pixel-direct path: all parameters at once when that fits
 * memory.host_limit, else the largest chunks that keep fisher_run and spectra_run inside it
 * (products streamed and re-formed, bin matrices built a chunk at a time). When even one
 * product per chunk does not fit, the chunks stay 1 and the limit check refuses the run,
 * naming the term that does not fit; when even that plan cannot be sized (a term beyond 2^56
 * bytes), the model's error names the term. */
static qp_err qp_inputs_chunks(const qp_problem *p, int64_t *fisher_chunk,
                               int64_t *spectra_chunk, qp_model *model) {
  const double limit = p->host_limit;
  const int64_t np = p->n_params;
  *fisher_chunk = *spectra_chunk = np;
  if (limit <= 0) {
    QP_CALL(qp_inputs_model(p, QP_MODEL_PIXEL_DIRECT, np, np, model, NULL));
    return QP_OK;
  }
  /* fisher_run's peak does not depend on spectra_run's chunk: it is searched with the bin
   * matrices at 1, so that their size cannot make the products' chunk smaller. */
  const qp_stage_id stage[2] = {QP_STAGE_FISHER_RUN, QP_STAGE_SPECTRA_RUN};
  int64_t *chunk[2] = {fisher_chunk, spectra_chunk};
  *spectra_chunk = 1;
  for (int s = 0; s < 2; ++s) {
    if (s == 1) *spectra_chunk = np;
    int fits = 0;
    while (*chunk[s] > 1) {
      QP_CALL(
          qp_inputs_chunk_fits(p, *fisher_chunk, *spectra_chunk, stage[s], limit, model, &fits));
      if (fits) break;
      --*chunk[s];
    }
  }
  /* Distributed, every rank runs the same chunks: the smallest any rank needs. */
  double smallest[2] = {-(double)*fisher_chunk, -(double)*spectra_chunk};
  QP_CALL(qp_comm_max(smallest, 2));
  *fisher_chunk = (int64_t)-smallest[0];
  *spectra_chunk = (int64_t)-smallest[1];
  QP_CALL(qp_inputs_model(p, QP_MODEL_PIXEL_DIRECT, *fisher_chunk, *spectra_chunk, model, NULL));
  return QP_OK;
}

qp_err qp_inputs_remodel(qp_problem *p) {
  const qp_model_dims d = p->model_dims;
  QP_CALL(qp_inputs_model(p, d.path, d.fisher_chunk, d.spectra_chunk, &p->model, &p->model_dims));
  return QP_OK;
}

/* Leading flop counts of the three routes (QML.md 3, "Choosing the path"). */
static double qp_route_cost(const qp_problem *p, qp_model_path path) {
  const double n = (double)p->n_pix, nm = (double)p->n_modes, np = (double)p->n_params;
  const int dense = p->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  switch (path) {
  case QP_MODEL_PIXEL_DIRECT: return n * n * n / 3.0 + (np + 1.0) * 2.0 * n * n * n;
  case QP_MODEL_HARMONIC_SMW:
    return nm * nm * n + 2.3 * nm * nm * nm + (dense ? n * n * n / 3.0 + nm * n * n : 0.0);
  case QP_MODEL_HARMONIC_PROJECTED: return n * n * n / 3.0 + 2.0 * nm * n * n + nm * nm * n;
  }
  return 0;
}

/* Picks the route: the config's, or among those it allows the cheapest whose predicted peak
 * fits memory.host_limit (the cheapest of all when none fits: the limit check then refuses
 * it, saying by how much). Writes the reason to p->path_reason and sets p->model. */
static qp_err qp_inputs_choose_path(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  static const char *const names[3] = {"pixel_direct", "harmonic (smw)", "harmonic (projected)"};
  int allowed[3] = {cfg->path != QP_PATH_HARMONIC, cfg->path != QP_PATH_PIXEL_DIRECT,
                    cfg->path != QP_PATH_PIXEL_DIRECT};
  if (cfg->harmonic_method == 1) allowed[2] = 0;
  if (cfg->harmonic_method == 2) allowed[1] = 0;
  if (p->n_modes == 0) allowed[1] = allowed[2] = 0;
  QP_CHECK(allowed[0] || allowed[1] || allowed[2], QP_ERR_INPUT,
           "config '%s': the harmonic path has no modes (lmax %d)", cfg->source, cfg->lmax);
  /* SMW inverts N: a noise too ill-conditioned for cfg->accuracy rules it out when another
   * route is allowed (conditioning.h); when it is the only one, its stage refuses the run. */
  if (p->smw_refused[0] && allowed[1] && (allowed[0] || allowed[2])) allowed[1] = 0;
  double cost[3], peak[3];
  int best = -1, best_fit = -1;
  int64_t fisher_chunk = p->n_params, spectra_chunk = p->n_params;
  /* A route whose model has a term beyond 2^56 bytes cannot be sized: it is left out (the
   * same on every rank: the model decides on whole sizes); when no route is left, the first
   * one's error is the plan's. */
  char unsized[3][128] = {"", "", ""}, first_unsized[1024] = "";
  for (int r = 0; r < 3; ++r) {
    if (!allowed[r]) continue;
    qp_err err = r == 0 ? qp_inputs_chunks(p, &fisher_chunk, &spectra_chunk, &p->model)
                        : qp_inputs_model(p, (qp_model_path)r, p->n_params, p->n_params, &p->model, &p->model_dims);
    if (err == QP_ERR_INPUT && p->model.oversize_term[0]) {
      snprintf(unsized[r], sizeof unsized[r], "term '%s' needs %.3g bytes", p->model.oversize_term,
               p->model.oversize_bytes);
      if (!first_unsized[0])
        snprintf(first_unsized, sizeof first_unsized, "%s", qp_error_message());
      qp_error_clear();
      continue;
    }
    QP_CALL(err);
    cost[r] = qp_route_cost(p, (qp_model_path)r);
    if (r == 0 && fisher_chunk < p->n_params) {
      /* Streaming re-forms the later products: ~n_params^2 / (2 chunk) more of them. */
      double extra = 0;
      for (int64_t first = fisher_chunk; first < p->n_params; first += fisher_chunk)
        extra += (double)(p->n_params - first);
      cost[r] += extra * 2.0 * pow((double)p->n_pix, 3);
    }
    peak[r] = (double)(qp_model_peak(&p->model) + p->model.overhead_bytes);
    QP_CALL(qp_comm_max(&peak[r], 1)); /* distributed: the largest rank decides */
    if (best < 0 || cost[r] < cost[best]) best = r;
    if ((p->host_limit <= 0 || peak[r] <= p->host_limit) &&
        (best_fit < 0 || cost[r] < cost[best_fit]))
      best_fit = r;
  }
  QP_CHECK(best >= 0, QP_ERR_INPUT, "config '%s': %s", cfg->source, first_unsized);
  const int chosen = best_fit >= 0 ? best_fit : best;
  int n_allowed = allowed[0] + allowed[1] + allowed[2];
  int used = 0;
  used += snprintf(p->path_reason, sizeof p->path_reason, "%s: ", names[chosen]);
  if (n_allowed == 1) {
    used += snprintf(p->path_reason + used, sizeof p->path_reason - (size_t)used,
                     "the only route the config allows");
  } else {
    used += snprintf(p->path_reason + used, sizeof p->path_reason - (size_t)used,
                     "%s leading cost of the routes allowed",
                     chosen == best ? "lowest" : "lowest fitting the memory limit:");
    for (int r = 0; r < 3 && used < (int)sizeof p->path_reason; ++r)
      if (allowed[r] && unsized[r][0])
        used += snprintf(p->path_reason + used, sizeof p->path_reason - (size_t)used,
                         "; %s: cannot be sized (%s)", names[r], unsized[r]);
      else if (allowed[r])
        used +=
            snprintf(p->path_reason + used, sizeof p->path_reason - (size_t)used,
                     "; %s %.2e flop, peak %.2f GiB", names[r], cost[r], peak[r] / 1073741824.0);
  }
  if (p->smw_refused[0] && !allowed[1])
    snprintf(p->path_reason + strlen(p->path_reason),
             sizeof p->path_reason - strlen(p->path_reason), "; harmonic (smw) skipped: %s",
             p->smw_refused);
  p->path_used = chosen == 0 ? QP_PATH_PIXEL_DIRECT : QP_PATH_HARMONIC;
  p->smw = chosen == 1;
  p->plan_flops = cost[chosen];
  if (chosen == 0) {
    QP_CALL(qp_inputs_model(p, QP_MODEL_PIXEL_DIRECT, fisher_chunk, spectra_chunk, &p->model, &p->model_dims));
    if (fisher_chunk < p->n_params || spectra_chunk < p->n_params)
      snprintf(p->path_reason + strlen(p->path_reason),
               sizeof p->path_reason - strlen(p->path_reason),
               "; chunks for %s %.3f GiB: %lld of %lld products held in fisher_run, %lld "
               "bin matrices at a time in spectra_run",
               p->limit_from_job ? "the job's memory limit" : "memory.host_limit",
               p->host_limit / 1073741824.0, (long long)fisher_chunk, (long long)p->n_params,
               (long long)spectra_chunk);
  } else {
    QP_CALL(qp_inputs_model(p, (qp_model_path)chosen, p->n_params, p->n_params, &p->model, &p->model_dims));
  }
  return QP_OK;
}

/* The plan of a `dimensions:` config: the sizes are given, nothing is read. */
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
  p->switched = cfg->lmax < cfg->lmax_signal;
  qp_harmonic_layout(p);
  if (cfg->dim_n_modes > 0) p->n_modes = cfg->dim_n_modes;
  QP_CALL(qp_inputs_choose_path(p));
  return QP_OK;
}

/* With MPI, rank 0 reads (it alone holds the sky buffer) and every rank gets what is small:
 * the plan's counts and C_ell, the positions, maps and variances are replicated; a read error
 * on rank 0 is every rank's. */
static int qp_inputs_reader(void) { return qp_comm_rank() == 0; }

/* What the plan needs from the files: the mask's nside, its observed pixels (and mask_pol's),
 * the C_ell. Checks that lmax fits the mask and the C_ell file. */
static qp_err qp_inputs_read_plan_files(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  /* The mask first: its nside bounds lmax, the first thing a user gets wrong. */
  qp_healpix_info mask_info;
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

  double *sky = NULL;
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, p->n_sky, &sky));
  qp_err err = QP_OK;
  p->n_obs_t = p->n_obs_p = 0;
  if (qp_has_t(cfg)) err = qp_inputs_read_mask(p, cfg->mask, sky, &p->n_obs_t);
  if (err == QP_OK && qp_has_p(cfg))
    err = qp_inputs_read_mask(p, qp_mask_pol(cfg), sky, &p->n_obs_p);
  qp_budget_free(sky);
  QP_CALL(err);
  return QP_OK;
}

/* Rank 0's plan inputs to every rank (a no-op on one process). */
static qp_err qp_inputs_share_plan(qp_problem *p) {
  if (qp_comm_size() == 1) return QP_OK;
  int64_t v[6] = {p->nside, p->n_sky, p->n_obs_t, p->n_obs_p, p->cls.lmax, p->cls.n_columns};
  QP_CALL(qp_comm_bcast(v, sizeof v));
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
  return QP_OK;
}

qp_err qp_inputs_plan(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  if (!p->limit_source[0]) {
    p->host_limit = cfg->host_limit > 0 ? cfg->host_limit : 0.0;
    p->limit_from_job = 0;
    snprintf(p->limit_source, sizeof p->limit_source, "%s",
             cfg->host_limit > 0 ? "memory.host_limit" : "none");
  }
  QP_CALL(qp_calibration_load(cfg->calibration, &p->calibration));
  if (cfg->has_dimensions) {
    QP_CALL(qp_inputs_plan_dimensions(p));
    return QP_OK;
  }
  QP_CHECK(!cfg->pixel_window, QP_ERR_UNSUPPORTED, "config '%s': pixel_window is not supported yet",
           cfg->source);

  /* With MPI, rank 0 reads the mask(s) and the C_ell file; the others get what they hold. */
  QP_CALL(qp_comm_agree(qp_inputs_reader() ? qp_inputs_read_plan_files(p) : QP_OK));
  QP_CALL(qp_inputs_share_plan(p));
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

  p->switched = cfg->lmax < cfg->lmax_signal;
  qp_harmonic_layout(p);
  /* Scalar variances give N's conditioning before anything is read (a variance map's comes
   * with the data: qp_inputs_reroute_smw). With the switch SMW inverts N_eff = N + S_fixed
   * instead, dense, whose rcond basis_setup estimates. */
  if (cfg->noise_kind == QP_NOISE_VARIANCE && !p->switched) {
    double v[2] = {cfg->noise_variance,
                   cfg->noise_variance_pol > 0 ? cfg->noise_variance_pol : cfg->noise_variance};
    const int first = qp_has_t(cfg) ? 0 : 1, count = qp_has_p(cfg) ? 2 - first : 1;
    qp_inputs_smw_noise_check(p, qp_rcond_diagonal(v + first, count),
                              qp_largest(v + first, count));
  }
  QP_CALL(qp_inputs_choose_path(p));
  return QP_OK;
}

void qp_inputs_smw_noise_check(qp_problem *p, double rcond, double noise_max) {
  p->rcond[QP_RCOND_NOISE] = rcond;
  const double floor = qp_rcond_floor(p->cfg->accuracy);
  /* C's conditioning as SMW bounds it (harmonic_route.c, qp_basis_smw): known from the variances
   * and the C_ell alone, so that `auto` can leave SMW before anything is built. */
  const double rcond_c = qp_smw_covariance_rcond(p, rcond, noise_max);
  if (!(isfinite(rcond) && rcond >= floor))
    snprintf(p->smw_refused, sizeof p->smw_refused,
             "it inverts N, whose rcond %.3g (smallest / largest variance) would give relative "
             "errors of ~%.1e, above accuracy %.1e",
             rcond, rcond > 0 ? DBL_EPSILON / rcond : INFINITY, p->cfg->accuracy);
  else if (!(isfinite(rcond_c) && rcond_c >= floor))
    snprintf(p->smw_refused, sizeof p->smw_refused,
             "its bound of rcond(C), rcond(N) / (1 + lambda_max(S) / lambda_max(N)) = %.3g, "
             "is below %.3g (accuracy %.1e)",
             rcond_c, floor, p->cfg->accuracy);
}

qp_err qp_inputs_reroute_smw(qp_problem *p) {
  if (p->path_used != QP_PATH_HARMONIC || !p->smw || !p->noise_variance || p->switched)
    return QP_OK;
  qp_inputs_smw_noise_check(p, qp_rcond_diagonal(p->noise_variance, p->n_pix),
                            qp_largest(p->noise_variance, p->n_pix));
  if (!p->smw_refused[0]) return QP_OK;
  QP_CALL(qp_inputs_choose_path(p));
  if (p->smw) return QP_OK; /* the only route allowed: basis_setup refuses it */
  QP_CALL(qp_comm_agree(qp_inputs_check_limit(p)));
  if (p->progress) fprintf(stderr, "[qmlpipe] path changed to %s\n", p->path_reason);
  return QP_OK;
}

qp_err qp_inputs_touch_libraries(const qp_problem *p) {
  /* What covariance_setup will call for the first time: the pixel geometry (chealpix, libm)
   * and a map file's header and first column (cfitsio). Their code and data pages then belong
   * to the baseline: ~0.6 MiB that otherwise appeared in covariance_setup untracked. */
  double v[3];
  pix2vec_ring64(p->nside > 0 ? p->nside : 1, 0, v);
  /* And the harmonic basis of basis_setup (pix2ang, sincos): 64 KiB of libm code otherwise
   * paged in there. */
  double theta, phi, work[6], basis[5][9];
  pix2ang_ring64(p->nside > 0 ? p->nside : 1, 0, &theta, &phi);
  qp_harmonics_at(0, 2, theta, phi, work, basis[0], basis[1], basis[2], basis[3], basis[4]);
  if (p->cfg->has_dimensions || p->cfg->n_maps == 0 || !qp_inputs_reader()) return QP_OK;
  qp_healpix_info info;
  QP_CALL(qp_fits_map_info(p->cfg->maps[0], &info));
  return QP_OK;
}

/* Appends the observed pixels of the mask in p->sky as positions from *k on. */
static void qp_inputs_positions(qp_problem *p, int64_t *k) {
  for (int64_t i = 0; i < p->n_sky; ++i) {
    if (p->sky[i] == 0.0 || qp_is_unseen(p->sky[i])) continue;
    p->observed[*k] = i;
    pix2vec_ring64(p->nside, i, p->vectors + 3 * *k);
    ++*k;
  }
}

/* The mask(s) into the positions (rank 0 only with MPI). */
static qp_err qp_inputs_read_positions(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  int64_t k = 0, n = 0;
  if (qp_has_t(cfg)) {
    QP_CALL(qp_inputs_read_mask(p, cfg->mask, p->sky, &n));
    QP_CHECK(n == p->n_obs_t, QP_ERR_INPUT, "mask '%s' changed during the run", cfg->mask);
    qp_inputs_positions(p, &k);
  }
  if (qp_has_p(cfg)) {
    QP_CALL(qp_inputs_read_mask(p, qp_mask_pol(cfg), p->sky, &n));
    QP_CHECK(n == p->n_obs_p, QP_ERR_INPUT, "mask '%s' changed during the run", qp_mask_pol(cfg));
    qp_inputs_positions(p, &k);
  }
  return QP_OK;
}


qp_err qp_inputs_read_geometry(qp_problem *p) {
  const int reader = qp_inputs_reader();
  if (reader) QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, p->n_sky, &p->sky));
  QP_CALL(qp_budget_alloc_array(QP_TERM_OBSERVED_INDEX, QP_TERM_PERSISTENT, (size_t)p->n_observed,
                                sizeof(int64_t), (void **)&p->observed));
  QP_CALL(
      QP_ALLOC_DOUBLES(QP_TERM_PIXEL_VECTORS, QP_TERM_PERSISTENT, 3 * p->n_observed, &p->vectors));
  QP_CALL(qp_comm_agree(reader ? qp_inputs_read_positions(p) : QP_OK));
  QP_CALL(qp_comm_bcast(p->observed, (size_t)p->n_observed * sizeof(int64_t)));
  QP_CALL(qp_comm_bcast(p->vectors, (size_t)(3 * p->n_observed) * sizeof(double)));
  return QP_OK;
}

qp_err qp_inputs_check_limit(const qp_problem *p) {
  const double limit = p->host_limit;
  if (limit <= 0) return QP_OK;
  const qp_model *m = &p->model;
  const size_t need = qp_model_peak(m) + m->overhead_bytes; /* below 2^63: model.h */
  if ((double)need <= limit) return QP_OK;
  /* Name the stage of the peak and its largest term: what the user would have to shrink. */
  qp_stage_id worst = QP_STAGE_COVARIANCE_SETUP;
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    if (qp_model_stage_peak(m, (qp_stage_id)s) > qp_model_stage_peak(m, worst))
      worst = (qp_stage_id)s;
  const qp_model_term *largest = NULL;
  for (int i = 0; i < m->n_terms; ++i)
    if (qp_model_term_alive(&m->terms[i], worst) &&
        (!largest || m->terms[i].bytes > largest->bytes))
      largest = &m->terms[i];
  const double gib = 1073741824.0;
  if (p->limit_from_job)
    QP_FAIL(QP_ERR_BUDGET,
            "predicted peak %.3f GiB (stage %s, largest term '%s' %.3f GiB, overhead %.3f GiB) "
            "exceeds the job's memory limit %.3f GiB (%s) by %.3f GiB; "
            "nothing was allocated for it. Ask the batch system for more memory per rank, "
            "mask fewer pixels, or use fewer bins",
            (double)need / gib, qp_stage_name(worst), largest ? largest->name : "?",
            largest ? (double)largest->bytes / gib : 0.0, (double)m->overhead_bytes / gib,
            limit / gib, p->limit_source, ((double)need - limit) / gib);
  QP_FAIL(QP_ERR_BUDGET,
          "predicted peak %.3f GiB (stage %s, largest term '%s' %.3f GiB, overhead %.3f GiB) "
          "exceeds memory.host_limit %.3f GiB by %.3f GiB; nothing was allocated for it. "
          "Raise the limit, mask fewer pixels, or use fewer bins",
          (double)need / gib, qp_stage_name(worst), largest ? largest->name : "?",
          largest ? (double)largest->bytes / gib : 0.0, (double)m->overhead_bytes / gib,
          limit / gib, ((double)need - limit) / gib);
}

/* sqrt(DBL_MAX): the largest value whose square is finite. */
static const double qp_inputs_value_max = 1.3407807929942596e154;

/* Copies the sky map's values at positions [first, first + count) into x, checking each. */
static qp_err qp_inputs_gather(const qp_problem *p, const double *sky, int64_t first, int64_t count,
                               const char *path, const char *what, int positive, double *x) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t pixel = p->observed[first + k];
    double v = sky[pixel];
    QP_CHECK(isfinite(v) && !qp_is_unseen(v), QP_ERR_INPUT,
             "%s '%s' has a %s value at observed RING pixel %lld", what, path,
             isnan(v) ? "NaN" : (isfinite(v) ? "UNSEEN" : "infinite"), (long long)pixel);
    QP_CHECK(!positive || v > 0.0, QP_ERR_INPUT,
             "%s '%s' has a non-positive variance %g at observed RING pixel %lld", what, path, v,
             (long long)pixel);
    /* The quadratic forms square the values: one whose square overflows can only give inf or
     * NaN downstream (1e200 at one pixel made /spectra/cl NaN with exit 0). */
    QP_CHECK(fabs(v) <= qp_inputs_value_max, QP_ERR_INPUT,
             "%s '%s' has the value %g at observed RING pixel %lld, whose square overflows a "
             "double (|value| must be <= %.3g): rescale the map (e.g. K to uK is 1e6)",
             what, path, v, (long long)pixel, qp_inputs_value_max);
    x[k] = v;
  }
  return QP_OK;
}

/* Which columns of a file hold T, Q and U (-1: not used). healpy's files are I, Q, U: with
 * three or more columns those are columns 0, 1, 2; a file with exactly two columns holds Q
 * and U; a one-column file holds T. */
static qp_err qp_inputs_columns(const qp_problem *p, const char *path, const char *what,
                                const qp_healpix_info *info, int column[3]) {
  const qp_config *cfg = p->cfg;
  column[0] = column[1] = column[2] = -1;
  if (qp_has_t(cfg)) {
    /* A two-column file holds Q and U (see above): no temperature to read there. */
    QP_CHECK(info->n_columns != 2, QP_ERR_INPUT,
             "%s '%s' has 2 columns (%s, %s), read as Q and U, but fields %s need a "
             "temperature column (healpy's layout: I, Q, U)",
             what, path, info->column_names[0], info->column_names[1],
             cfg->fields == QP_FIELDS_T ? "T" : "TQU");
    column[0] = 0;
  }
  if (qp_has_p(cfg)) {
    QP_CHECK(info->n_columns >= 2, QP_ERR_INPUT,
             "%s '%s' has %d column(s) (%s), but fields %s need Q and U columns (healpy's "
             "layout: I, Q, U)",
             what, path, info->n_columns, info->column_names[0],
             cfg->fields == QP_FIELDS_QU ? "QU" : "TQU");
    QP_CHECK(cfg->fields == QP_FIELDS_QU || info->n_columns >= 3, QP_ERR_INPUT,
             "%s '%s' has 2 columns, but fields TQU need I, Q and U", what, path);
    column[1] = info->n_columns >= 3 ? 1 : 0;
    column[2] = column[1] + 1;
  }
  return QP_OK;
}

/* Reads every field a file holds for the analysis into x (length n_pix, data-vector order). */
static qp_err qp_inputs_read_fields(const qp_problem *p, const char *path, const char *what,
                                    int positive, double *x) {
  qp_healpix_info info;
  QP_CALL(qp_fits_map_info(path, &info));
  QP_CHECK(info.nside == p->nside, QP_ERR_INPUT,
           "%s '%s' has nside %lld but the mask '%s' has nside %lld", what, path,
           (long long)info.nside, p->cfg->mask, (long long)p->nside);
  int column[3];
  QP_CALL(qp_inputs_columns(p, path, what, &info, column));
  const int64_t first[3] = {0, p->n_obs_t, p->n_obs_t};
  const int64_t count[3] = {p->n_obs_t, p->n_obs_p, p->n_obs_p};
  const int64_t offset[3] = {0, p->n_obs_t, p->n_obs_t + p->n_obs_p};
  for (int f = 0; f < 3; ++f) {
    if (column[f] < 0) continue;
    QP_CALL(qp_fits_map_read(path, &info, column[f], p->sky));
    QP_CALL(qp_inputs_gather(p, p->sky, first[f], count[f], path, what, positive, x + offset[f]));
  }
  return QP_OK;
}

static qp_err qp_inputs_dense_noise(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  int64_t rows, cols;
  QP_CALL(qp_h5_matrix_info(cfg->noise_file, cfg->noise_dataset, &rows, &cols));
  QP_CHECK(rows == p->n_pix && cols == p->n_pix, QP_ERR_INPUT,
           "noise covariance '%s' dataset '%s' is %lld x %lld, but the data vector has %lld "
           "entries (T at the observed pixels of the mask '%s', then Q and U at those of "
           "mask_pol)",
           cfg->noise_file, cfg->noise_dataset, (long long)rows, (long long)cols,
           (long long)p->n_pix, cfg->mask);
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_NOISE, QP_TERM_PERSISTENT, rows, cols, &p->noise));
  if (p->noise.grid) {
    /* Distributed: every rank reads its own blocks (and checks them against their mirror
     * blocks in the file); nothing of size n_pix^2 goes through one rank. */
    const qp_grid *g = p->noise.grid;
    QP_CALL(qp_h5_matrix_read_block_cyclic(cfg->noise_file, cfg->noise_dataset, rows, g->block,
                                           g->nprow, g->npcol, g->myrow, g->mycol,
                                           p->noise.data, p->noise.ld));
    return QP_OK;
  }
  QP_CALL(qp_h5_matrix_read(cfg->noise_file, cfg->noise_dataset, rows, cols, p->noise.data));
  const double *n = p->noise.data;
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = j; i < rows; ++i) {
      double a = n[i + j * rows], b = n[j + i * rows];
      QP_CHECK(isfinite(a), QP_ERR_INPUT,
               "noise covariance '%s' has a non-finite entry (%lld, %lld)", cfg->noise_file,
               (long long)i, (long long)j);
      QP_CHECK(fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b)), QP_ERR_INPUT,
               "noise covariance '%s' is not symmetric: entry (%lld, %lld) = %.17g but (%lld, "
               "%lld) = %.17g",
               cfg->noise_file, (long long)i, (long long)j, a, (long long)j, (long long)i, b);
    }
  return QP_OK;
}

/* The maps and a variance map (rank 0 only with MPI). */
static qp_err qp_inputs_read_map_files(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  for (int m = 0; m < cfg->n_maps; ++m)
    QP_CALL(qp_inputs_read_fields(p, cfg->maps[m], "map", 0, p->maps + m * p->n_pix));
  if (cfg->noise_kind == QP_NOISE_VARIANCE_MAP)
    QP_CALL(qp_inputs_read_fields(p, cfg->noise_file, "noise variance map", 1, p->noise_variance));
  return QP_OK;
}

qp_err qp_inputs_read_data(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_MAPS, QP_TERM_PERSISTENT, p->n_pix * p->n_maps, &p->maps));
  switch (cfg->noise_kind) {
  case QP_NOISE_VARIANCE:
  case QP_NOISE_VARIANCE_MAP:
    QP_CALL(
        QP_ALLOC_DOUBLES(QP_TERM_NOISE_VARIANCE, QP_TERM_PERSISTENT, p->n_pix, &p->noise_variance));
    if (cfg->noise_kind == QP_NOISE_VARIANCE)
      for (int64_t k = 0; k < p->n_pix; ++k)
        p->noise_variance[k] = k < p->n_obs_t ? cfg->noise_variance : cfg->noise_variance_pol;
    break;
  case QP_NOISE_COVARIANCE:
    /* Distributed, a rank may find a bad block alone: every rank learns it here. */
    QP_CALL(qp_comm_agree(qp_inputs_dense_noise(p)));
    break;
  }
  QP_CALL(qp_comm_agree(qp_inputs_reader() ? qp_inputs_read_map_files(p) : QP_OK));
  QP_CALL(qp_comm_bcast(p->maps, (size_t)(p->n_pix * p->n_maps) * sizeof(double)));
  if (p->noise_variance)
    QP_CALL(qp_comm_bcast(p->noise_variance, (size_t)p->n_pix * sizeof(double)));
  return QP_OK;
}
