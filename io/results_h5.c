/* results_h5.c: the results file of `qmlpipe run` (results_h5.h; layout in QML.md 6).
 *
 * The file is built in memory and written whole to a private temporary beside <path>, which
 * is renamed to <path> only once complete and flushed (base/h5_image.h, atomic_file.h); on
 * any failure the temporary is removed, so a failed run never leaves a partial (or a
 * stale-looking) results file, and an existing one stays as it was. */
#define _POSIX_C_SOURCE 200809L
#include "results_h5.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "h5_image.h"
#include "qp_config.h"
#include "report_h5.h"
#include "self_cost.h"

/* ---- attributes and datasets ---- */

/* Where we write: the HDF5 file and the path the user asked for (for messages). */
typedef struct qp_h5_out {
  hid_t file;
  const char *path;
} qp_h5_out;

/* Creates dataset `name` (a path under the file's root) and writes `data` (may be NULL when
 * the dataset is empty). `units`, when not NULL, becomes its "units" attribute. */
static qp_err qp_out_dataset(const qp_h5_out *o, const char *name, hid_t file_type, hid_t mem_type,
                             int rank, const hsize_t *dims, const void *data, const char *units) {
  qp_err err = QP_OK;
  hid_t space = -1, dset = -1;
  hsize_t count = 1;
  for (int i = 0; i < rank; ++i)
    count *= dims[i];
  QP_H5_GOTO(space = H5Screate_simple(rank, dims, NULL), done, "%s: dataset %s", o->path, name);
  QP_H5_GOTO(dset =
                 H5Dcreate2(o->file, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             done, "%s: cannot create dataset %s", o->path, name);
  if (count > 0)
    QP_H5_GOTO(
        QP_FAULT_H5("results_write", H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data)),
        done, "%s: cannot write dataset %s", o->path, name);
  if (units) QP_CALL_GOTO(qp_h5_attr_write_string(dset, o->path, "units", units), done);
done:
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  return err;
}

static qp_err qp_out_doubles(const qp_h5_out *o, const char *name, int rank, const hsize_t *dims,
                             const double *data, const char *units) {
  QP_CALL(qp_out_dataset(o, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rank, dims, data, units));
  return QP_OK;
}

static qp_err qp_out_ints(const qp_h5_out *o, const char *name, hsize_t n, const int *data) {
  QP_CALL(qp_out_dataset(o, name, H5T_STD_I32LE, H5T_NATIVE_INT, 1, &n, data, NULL));
  return QP_OK;
}

static qp_err qp_out_group(const qp_h5_out *o, const char *name) {
  qp_err err = QP_OK;
  hid_t g = -1;
  QP_H5_GOTO(g = H5Gcreate2(o->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), done,
             "%s: cannot create group %s", o->path, name);
done:
  if (g >= 0) H5Gclose(g);
  return err;
}

/* ---- the parts of the file ---- */

static const char *qp_fields_text(qp_fields f) {
  switch (f) {
  case QP_FIELDS_T: return "T";
  case QP_FIELDS_QU: return "QU";
  case QP_FIELDS_TQU: return "TQU";
  }
  return "?";
}

static const char *qp_path_text(qp_path p) {
  switch (p) {
  case QP_PATH_AUTO: return "auto";
  case QP_PATH_PIXEL_DIRECT: return "pixel_direct";
  case QP_PATH_HARMONIC: return "harmonic";
  }
  return "?";
}

static const char *qp_noise_text(qp_noise_kind k) {
  switch (k) {
  case QP_NOISE_VARIANCE: return "variance";
  case QP_NOISE_VARIANCE_MAP: return "variance_map";
  case QP_NOISE_COVARIANCE: return "covariance";
  }
  return "?";
}

static qp_err qp_results_check(const char *path, const qp_results *r) {
  QP_CHECK(r && r->config, QP_ERR_INTERNAL, "%s: results without a configuration", path);
  QP_CHECK(r->n_spectra >= 1 && r->n_spectra <= QP_SPECTRA_MAX && r->n_bins >= 1 &&
               r->n_params == (int64_t)r->n_spectra * r->n_bins && r->n_maps >= 0,
           QP_ERR_INTERNAL,
           "%s: inconsistent results: n_params %lld, n_spectra %d, n_bins %lld, n_maps %lld", path,
           (long long)r->n_params, r->n_spectra, (long long)r->n_bins, (long long)r->n_maps);
  QP_CHECK(r->spectra && r->bin_ell_min && r->bin_ell_max && r->fisher && r->noise_bias &&
               r->error && (r->n_maps == 0 || (r->yb && r->cl)),
           QP_ERR_INTERNAL, "%s: results with a missing array", path);
  return QP_OK;
}

/* A list of paths as one string, one path a line (vlen strings have no size limit in an
 * attribute); malloc'd, NULL when out of memory. */
static char *qp_results_path_lines(int n, const char (*paths)[QP_PATH_MAX]) {
  size_t len = 1;
  for (int i = 0; i < n && paths; ++i)
    len += strlen(paths[i]) + 1;
  char *text = malloc(len);
  if (!text) return NULL;
  text[0] = '\0';
  for (int i = 0, at = 0; i < n && paths; ++i)
    at += snprintf(text + at, len - (size_t)at, "%s%s", i ? "\n" : "", paths[i]);
  return text;
}

/* Cross-spectra: maps2 and noise2 as maps and noise are. */
static qp_err qp_results_cross_attrs(const qp_h5_out *o, const qp_config *c) {
  hid_t root = o->file;
  QP_CALL(qp_h5_attr_write_i64(root, o->path, "cross", c->n_maps2 > 0));
  if (c->n_maps2 == 0) return QP_OK;
  char *maps2 = qp_results_path_lines(c->n_maps2, c->maps2);
  QP_CHECK(maps2, QP_ERR_NOMEM, "%s: no memory for the maps2 attribute", o->path);
  qp_err err = qp_h5_attr_write_string(root, o->path, "maps2", maps2);
  free(maps2);
  QP_CALL(err);
  QP_CALL(qp_h5_attr_write_string(root, o->path, "noise2_kind", qp_noise_text(c->noise2_kind)));
  if (c->noise2_kind == QP_NOISE_VARIANCE) {
    QP_CALL(qp_h5_attr_write_f64(root, o->path, "noise2_variance", c->noise2_variance));
    QP_CALL(qp_h5_attr_write_f64(root, o->path, "noise2_variance_pol", c->noise2_variance_pol));
  } else {
    QP_CALL(qp_h5_attr_write_string(root, o->path, "noise2_file", c->noise2_file));
    if (c->noise2_kind == QP_NOISE_COVARIANCE)
      QP_CALL(qp_h5_attr_write_string(root, o->path, "noise2_dataset", c->noise2_dataset));
  }
  return QP_OK;
}

/* Every setting of the configuration and every dimension, as attributes of "/". */
static qp_err qp_results_root_attrs(const qp_h5_out *o, const qp_results *r) {
  qp_err err = QP_OK;
  const qp_config *c = r->config;
  hid_t root = o->file;
  char *maps = qp_results_path_lines(c->n_maps, c->maps);
  QP_CHECK_GOTO(maps, QP_ERR_NOMEM, done, "%s: no memory for the maps attribute", o->path);
  char spectra[QP_SPECTRA_MAX * 3 + 1] = "";
  for (int i = 0, at = 0; i < c->n_spectra && i < QP_SPECTRA_MAX; ++i)
    at += snprintf(spectra + at, sizeof spectra - (size_t)at, "%s%s", i ? "," : "",
                   qp_spectrum_name(c->spectra[i]));
  char created[32] = "";
  time_t now = time(NULL);
  struct tm utc;
  if (gmtime_r(&now, &utc)) strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &utc);

  const struct {
    const char *name, *value;
  } strs[] = {
      {"qmlpipe_version", QP_VERSION},
      {"created", created},
      {"config_file", c->source},
      {"maps", maps},
      {"mask", c->mask},
      {"mask_pol", c->mask_pol[0] ? c->mask_pol : c->mask},
      {"fields", qp_fields_text(c->fields)},
      {"cls", c->cls},
      {"noise_kind", qp_noise_text(c->noise_kind)},
      {"spectra", spectra},
      {"bins_file", c->bins_file},
      {"path", qp_path_text(c->path)},
      {"harmonic_method",
       c->harmonic_method == 1 ? "smw" : (c->harmonic_method == 2 ? "projected" : "auto")},
      {"path_used", r->path_used},
      {"path_reason", r->path_reason},
      {"pixel_window", r->pixel_window ? r->pixel_window : "none"},
      {"backend", c->backend},
      {"output", c->output},
  };
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; ++i)
    QP_CALL_GOTO(qp_h5_attr_write_string(root, o->path, strs[i].name, strs[i].value), done);
  if (c->noise_kind == QP_NOISE_VARIANCE) {
    QP_CALL_GOTO(qp_h5_attr_write_f64(root, o->path, "noise_variance", c->noise_variance), done);
    QP_CALL_GOTO(qp_h5_attr_write_f64(root, o->path, "noise_variance_pol", c->noise_variance_pol),
                 done);
  } else {
    QP_CALL_GOTO(qp_h5_attr_write_string(root, o->path, "noise_file", c->noise_file), done);
    if (c->noise_kind == QP_NOISE_COVARIANCE)
      QP_CALL_GOTO(qp_h5_attr_write_string(root, o->path, "noise_dataset", c->noise_dataset), done);
  }

  const struct {
    const char *name;
    int64_t value;
  } ints[] = {
      {"ell_min", c->ell_min},
      {"lmax", c->lmax},
      {"lmax_signal", c->lmax_signal},
      {"bin_width", c->bin_width},
      {"window_functions", c->window_functions},
      {"nside", r->nside},
      {"n_observed", r->n_observed},
      {"n_observed_t", r->n_observed_t},
      {"n_observed_pol", r->n_observed_pol},
      {"n_modes", r->n_modes},
      {"n_pix", r->n_pix},
      {"n_params", r->n_params},
      {"n_bins", r->n_bins},
      {"n_maps", r->n_maps},
      {"n_spectra", r->n_spectra},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i)
    QP_CALL_GOTO(qp_h5_attr_write_i64(root, o->path, ints[i].name, ints[i].value), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(root, o->path, "beam_fwhm_arcmin", c->beam_fwhm_arcmin), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(root, o->path, "host_limit", c->host_limit), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(root, o->path, "device_limit", c->device_limit), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(root, o->path, "sample_interval_ms", c->sample_interval_ms),
               done);
  QP_CALL_GOTO(qp_results_cross_attrs(o, c), done);
done:
  free(maps);
  return err;
}

/* /params: per parameter (index s * n_bins + b) its spectrum name, bin and ell range. */
static qp_err qp_results_params(const qp_h5_out *o, const qp_results *r) {
  qp_err err = QP_OK;
  const size_t np = (size_t)r->n_params, nb = (size_t)r->n_bins;
  int *bin = NULL, *lo = NULL, *hi = NULL;
  char *names = NULL;
  hid_t stype = -1;
  size_t width = 1;
  for (int s = 0; s < r->n_spectra; ++s) {
    size_t w = strlen(qp_spectrum_name(r->spectra[s]));
    if (w > width) width = w;
  }
  bin = malloc(np * sizeof *bin);
  lo = malloc(np * sizeof *lo);
  hi = malloc(np * sizeof *hi);
  names = calloc(np, width);
  QP_CHECK_GOTO(bin && lo && hi && names, QP_ERR_NOMEM, done,
                "%s: no memory for %zu parameter labels", o->path, np);
  for (size_t p = 0; p < np; ++p) {
    size_t s = p / nb, b = p % nb;
    const char *name = qp_spectrum_name(r->spectra[s]);
    memcpy(names + p * width, name, strlen(name)); /* null-padded, like numpy's S dtype */
    bin[p] = (int)b;
    lo[p] = r->bin_ell_min[b];
    hi[p] = r->bin_ell_max[b];
  }
  hsize_t dims[1] = {np};
  QP_H5_GOTO(stype = H5Tcopy(H5T_C_S1), done, "%s: /params/spectrum", o->path);
  QP_H5_GOTO(H5Tset_size(stype, width), done, "%s: /params/spectrum", o->path);
  QP_H5_GOTO(H5Tset_strpad(stype, H5T_STR_NULLPAD), done, "%s: /params/spectrum", o->path);
  QP_CALL_GOTO(qp_out_group(o, "/params"), done);
  QP_CALL_GOTO(qp_out_dataset(o, "/params/spectrum", stype, stype, 1, dims, names, NULL), done);
  QP_CALL_GOTO(qp_out_ints(o, "/params/bin", np, bin), done);
  QP_CALL_GOTO(qp_out_ints(o, "/params/ell_min", np, lo), done);
  QP_CALL_GOTO(qp_out_ints(o, "/params/ell_max", np, hi), done);
done:
  if (stype >= 0) H5Tclose(stype);
  free(names);
  free(hi);
  free(lo);
  free(bin);
  return err;
}

/* /spectra/window (n_params, n_window) and /spectra/window_ell, the multipole of each column. */
static qp_err qp_results_window(const qp_h5_out *o, const qp_results *r) {
  const hsize_t dims[2] = {(hsize_t)r->n_params, (hsize_t)r->n_window};
  const int per = r->window_ell_max - r->window_ell_min + 1;
  QP_CHECK(per > 0 && r->n_window == (int64_t)r->n_spectra * per, QP_ERR_INTERNAL,
           "%s: %lld window columns for %d spectra of ell %d..%d", o->path, (long long)r->n_window,
           r->n_spectra, r->window_ell_min, r->window_ell_max);
  int *ell = malloc((size_t)r->n_window * sizeof *ell);
  QP_CHECK(ell, QP_ERR_NOMEM, "%s: no memory for the window's multipoles", o->path);
  for (int64_t c = 0; c < r->n_window; ++c)
    ell[c] = r->window_ell_min + (int)(c % per);
  qp_err err = qp_out_doubles(o, "/spectra/window", 2, dims, r->window, NULL);
  if (err == QP_OK) err = qp_out_ints(o, "/spectra/window_ell", (hsize_t)r->n_window, ell);
  free(ell);
  QP_CALL(err);
  return QP_OK;
}

/* /budget's record of Slurm's gather type (results_h5.h): how sacct counted MaxRSS. */
static qp_err qp_results_gather(hid_t file, const qp_results *r) {
  hid_t budget = H5Gopen2(file, "budget", H5P_DEFAULT);
  QP_CHECK(budget >= 0, QP_ERR_IO, "cannot open /budget for slurm_jobacct_gather");
  qp_err err = qp_h5_attr_write_string(budget, "/budget", "slurm_jobacct_gather", r->slurm_gather);
  if (err == QP_OK)
    err = qp_h5_attr_write_string(budget, "/budget", "slurm_jobacct_gather_source",
                                  r->slurm_gather_source ? r->slurm_gather_source : "");
  H5Gclose(budget);
  return err;
}

static qp_err qp_results_datasets(const qp_h5_out *o, const qp_results *r) {
  const hsize_t np = (hsize_t)r->n_params, nm = (hsize_t)r->n_maps, nb = (hsize_t)r->n_bins;
  const hsize_t square[2] = {np, np}, per_map[2] = {nm, np};
  QP_CALL(qp_out_doubles(o, "/fisher", 2, square, r->fisher, NULL));
  QP_CALL(qp_out_group(o, "/spectra"));
  QP_CALL(qp_out_doubles(o, "/spectra/cl", 2, per_map, r->cl,
                         "C_ell in map units squared (not D_ell)"));
  QP_CALL(qp_out_doubles(o, "/spectra/yb", 2, per_map, r->yb, NULL));
  QP_CALL(qp_out_doubles(o, "/spectra/noise_bias", 1, &np, r->noise_bias, NULL));
  QP_CALL(qp_out_doubles(o, "/spectra/error", 1, &np, r->error, NULL));
  QP_CALL(qp_out_doubles(o, "/spectra/covariance", 2, square, r->covariance, NULL));
  if (r->window) QP_CALL(qp_results_window(o, r));
  QP_CALL(qp_out_group(o, "/bins"));
  QP_CALL(qp_out_ints(o, "/bins/ell_min", nb, r->bin_ell_min));
  QP_CALL(qp_out_ints(o, "/bins/ell_max", nb, r->bin_ell_max));
  QP_CALL(qp_results_params(o, r));
  QP_CALL(qp_out_group(o, "/diagnostics"));
  hid_t diag = H5Gopen2(o->file, "/diagnostics", H5P_DEFAULT);
  QP_CHECK(diag >= 0, QP_ERR_IO, "%s: cannot open /diagnostics", o->path);
  qp_err err = qp_h5_attr_write_f64(diag, o->path, "accuracy", r->accuracy);
  if (err == QP_OK) err = qp_h5_attr_write_f64(diag, o->path, "spectra_error", r->spectra_error);
  for (int i = 0; i < r->n_rcond && err == QP_OK; ++i) {
    char name[64];
    snprintf(name, sizeof name, "rcond_%s", r->rcond_names[i]);
    err = qp_h5_attr_write_f64(diag, o->path, name, r->rcond[i]);
  }
  H5Gclose(diag);
  QP_CALL(err);
  return QP_OK;
}

qp_err qp_results_write(const char *path, const qp_results *results) {
  qp_err err = QP_OK;
  hid_t file = H5I_INVALID_HID;
  qp_h5_out o = {-1, path};
  QP_CHECK(path && path[0], QP_ERR_INTERNAL, "qp_results_write: no path");
  QP_CALL(qp_results_check(path, results));
  /* HDF5 quiet while the file is built and saved: a failure (a full disk, an injected
   * fault) comes back as one message naming the dataset. */
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);

  /* Built in memory, then written whole beside the target and renamed (h5_image.h). */
  QP_CALL_GOTO(qp_h5_image_create(path, &file), done);
  o.file = file;
  QP_CALL_GOTO(qp_results_root_attrs(&o, results), done);
  QP_CALL_GOTO(qp_results_datasets(&o, results), done);
  const double cost = qp_self_cost_begin(); /* the budget's part of the file */
  QP_CALL_GOTO(qp_report_write(file, results->model, results->baseline), done);
  if (results->memory_limit_source)
    QP_CALL_GOTO(qp_report_write_limit(file, results->memory_limit, results->memory_limit_source),
                 done);
  if (results->device_context_source)
    QP_CALL_GOTO(qp_report_write_device_context(file, results->device_context_predicted,
                                                results->device_context_measured,
                                                results->device_context_source),
                 done);
  if (results->ranks) QP_CALL_GOTO(qp_report_write_ranks(file, results->ranks), done);
  if (results->slurm_gather) QP_CALL_GOTO(qp_results_gather(file, results), done);
  qp_self_cost_end(cost);
  hid_t saved = file;
  file = H5I_INVALID_HID; /* closed by the save, whatever its outcome */
  QP_CALL_GOTO(qp_h5_image_save(saved, path), done);
done:
  if (file >= 0) H5Fclose(file); /* in memory: nothing reaches the disk */
  qp_h5_quiet_end(&quiet);       /* and clears what a failure left on HDF5's stack */
  return err;
}
