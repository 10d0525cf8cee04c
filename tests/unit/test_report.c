/* test_report.c: the results file and its /budget report (io/results_h5.c,
 * budget/report_h5.c).
 *
 * Builds a small model by hand, allocates under its names inside two stages (with one term
 * the model sizes wrongly and one it lacks), writes a tiny results file, and reads it back
 * with the HDF5 API: datasets, stage attributes, the terms table with its drift, no temporary
 * file left behind, a failed write leaving nothing, and the printed report. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "budget.h"
#include "config.h"
#include "h5_attr.h"
#include "meter.h"
#include "memory_model.h"
#include "qp_config.h"
#include "report_h5.h"
#include "results_h5.h"
#include "terms.h"
#include "test_util.h"

enum {
  C_BYTES = 64 * 64 * 8,        /* "C": predicted and allocated alike */
  SKY_BYTES = 3072 * 8,         /* "sky_buffer": transient of covariance_setup */
  MAPS_PREDICTED = 512 * 8,     /* "map_buffer": the model is 8 bytes short ... */
  MAPS_ALLOCATED = 512 * 8 + 8, /* ... of what the code allocates: drift */
  GRAM_BYTES = 1024 * 8         /* "gram" in basis_setup: not in the model at all */
};

static void add_term(qp_model *m, const char *name, qp_term_kind kind, size_t bytes,
                     qp_stage_id from, qp_stage_id to) {
  qp_model_add(m, name, kind, qp_model_vector_bytes((int64_t)bytes, 1), from, to, "test");
}

/* Number of entries of `dir` (other than . and ..); *tmp_found counts temporaries
 * (QP_ATOMIC_TEMP_MARK). */
static int count_entries(const char *dir, int *tmp_found) {
  DIR *d = opendir(dir);
  int n = 0;
  *tmp_found = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    ++n;
    if (strstr(e->d_name, QP_ATOMIC_TEMP_MARK)) ++*tmp_found;
  }
  closedir(d);
  return n;
}

static int64_t attr_i64(hid_t loc, const char *obj, const char *name) {
  int64_t v = INT64_MIN;
  hid_t a = H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(a >= 0, "attribute %s of %s missing", name, obj);
  if (a >= 0) {
    TEST_ASSERT(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0, "reading %s", name);
    H5Aclose(a);
  }
  return v;
}

static void attr_str(hid_t loc, const char *obj, const char *name, char *buf, size_t size) {
  buf[0] = '\0';
  hid_t a = H5Aopen_by_name(loc, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(a >= 0, "attribute %s of %s missing", name, obj);
  if (a < 0) return;
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8); /* qmlpipe writes its strings as UTF-8, as h5py does */
  char *text = NULL;
  TEST_ASSERT(H5Aread(a, t, &text) >= 0, "reading %s", name);
  if (text) snprintf(buf, size, "%s", text);
  H5free_memory(text);
  H5Tclose(t);
  H5Aclose(a);
}

/* The columns of a terms row the test looks at: HDF5 converts the compound by field name. */
typedef struct term_row {
  char name[QP_TERM_NAME_MAX];
  int64_t predicted_bytes, tracked_peak_bytes;
} term_row;

static int read_terms(hid_t file, const char *dataset, term_row *rows, int max) {
  hid_t d = H5Dopen2(file, dataset, H5P_DEFAULT);
  TEST_ASSERT(d >= 0, "dataset %s missing", dataset);
  if (d < 0) return 0;
  hid_t s = H5Dget_space(d);
  int n = (int)H5Sget_simple_extent_npoints(s);
  TEST_ASSERT(n > 0 && n <= max, "%s has %d rows", dataset, n);
  hid_t name = H5Tcopy(H5T_C_S1);
  H5Tset_size(name, QP_TERM_NAME_MAX);
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(term_row));
  H5Tinsert(t, "name", HOFFSET(term_row, name), name);
  H5Tinsert(t, "predicted_bytes", HOFFSET(term_row, predicted_bytes), H5T_NATIVE_INT64);
  H5Tinsert(t, "tracked_peak_bytes", HOFFSET(term_row, tracked_peak_bytes), H5T_NATIVE_INT64);
  if (n > 0 && n <= max)
    TEST_ASSERT(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0, "reading %s", dataset);
  else n = 0;
  H5Tclose(t);
  H5Tclose(name);
  H5Sclose(s);
  H5Dclose(d);
  return n;
}

static void check_row(const term_row *rows, int n, const char *stage, const char *name,
                      int64_t predicted, int64_t tracked) {
  for (int i = 0; i < n; ++i) {
    if (strcmp(rows[i].name, name) != 0) continue;
    TEST_ASSERT(rows[i].predicted_bytes == predicted, "%s/%s: predicted %lld, expected %lld",
                stage, name, (long long)rows[i].predicted_bytes, (long long)predicted);
    TEST_ASSERT(rows[i].tracked_peak_bytes == tracked, "%s/%s: tracked %lld, expected %lld",
                stage, name, (long long)rows[i].tracked_peak_bytes, (long long)tracked);
    return;
  }
  TEST_ASSERT(0, "%s: no terms row '%s'", stage, name);
}

static void check_file(const char *path, const double *fisher, const qp_meter_sample *baseline) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  TEST_ASSERT(f >= 0, "cannot reopen %s", path);
  if (f < 0) return;

  double back[4] = {0};
  hid_t d = H5Dopen2(f, "/fisher", H5P_DEFAULT);
  TEST_ASSERT(d >= 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back) >= 0,
              "reading /fisher");
  if (d >= 0) H5Dclose(d);
  for (int i = 0; i < 4; ++i)
    TEST_ASSERT(back[i] == fisher[i], "/fisher[%d] = %g, expected %g", i, back[i], fisher[i]);

  char text[256];
  attr_str(f, "/", "qmlpipe_version", text, sizeof text);
  TEST_ASSERT(strcmp(text, QP_VERSION) == 0, "qmlpipe_version '%s'", text);
  attr_str(f, "/", "spectra", text, sizeof text);
  TEST_ASSERT(strcmp(text, "TT") == 0, "spectra '%s'", text);
  attr_str(f, "/spectra/cl", "units", text, sizeof text);
  TEST_ASSERT(strstr(text, "not D_ell") != NULL, "units of /spectra/cl '%s'", text);
  TEST_ASSERT(attr_i64(f, "/", "n_params") == 2, "root attribute n_params");

  char spectrum[2][2];
  d = H5Dopen2(f, "/params/spectrum", H5P_DEFAULT);
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, 2);
  H5Tset_strpad(st, H5T_STR_NULLPAD);
  TEST_ASSERT(d >= 0 && H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, spectrum) >= 0,
              "reading /params/spectrum");
  TEST_ASSERT(memcmp(spectrum, "TTTT", 4) == 0, "/params/spectrum is not TT, TT");
  H5Tclose(st);
  if (d >= 0) H5Dclose(d);

  TEST_ASSERT(attr_i64(f, "/budget", "baseline_rss_bytes") == baseline->rss,
              "baseline_rss_bytes");
  const char *cov = "/budget/covariance_setup", *basis = "/budget/basis_setup";
  int64_t v = attr_i64(f, cov, "tracked_peak_bytes");
  TEST_ASSERT(v == C_BYTES + SKY_BYTES + MAPS_ALLOCATED, "covariance tracked_peak_bytes %lld",
              (long long)v);
  v = attr_i64(f, cov, "predicted_peak_bytes");
  TEST_ASSERT(v == C_BYTES + SKY_BYTES + MAPS_PREDICTED, "covariance predicted_peak_bytes %lld",
              (long long)v);
  TEST_ASSERT(attr_i64(f, cov, "predicted_carried_bytes") == 0, "covariance carried");
  TEST_ASSERT(attr_i64(f, cov, "predicted_peak_absolute_bytes") ==
                  (int64_t)QP_MODEL_DEFAULT_OVERHEAD + C_BYTES + SKY_BYTES + MAPS_PREDICTED,
              "covariance predicted_peak_absolute_bytes");
  TEST_ASSERT(attr_i64(f, cov, "drift_terms") == 1, "covariance drift_terms");
  v = attr_i64(f, basis, "tracked_peak_bytes");
  TEST_ASSERT(v == C_BYTES + MAPS_ALLOCATED + GRAM_BYTES, "basis tracked_peak_bytes %lld",
              (long long)v);
  TEST_ASSERT(attr_i64(f, basis, "predicted_carried_bytes") == C_BYTES + MAPS_PREDICTED,
              "basis carried");
  TEST_ASSERT(attr_i64(f, basis, "drift_terms") == 2, "basis drift_terms");

  term_row rows[16];
  int n = read_terms(f, "/budget/covariance_setup/terms", rows, 16);
  TEST_ASSERT(n == 3, "covariance_setup has %d terms rows, expected 3", n);
  check_row(rows, n, "covariance_setup", QP_TERM_COVARIANCE, C_BYTES, C_BYTES);
  check_row(rows, n, "covariance_setup", QP_TERM_SKY_BUFFER, SKY_BYTES, SKY_BYTES);
  check_row(rows, n, "covariance_setup", QP_TERM_MAP_BUFFER, MAPS_PREDICTED, MAPS_ALLOCATED);
  n = read_terms(f, "/budget/basis_setup/terms", rows, 16);
  TEST_ASSERT(n == 3, "basis_setup has %d terms rows, expected 3", n);
  check_row(rows, n, "basis_setup", QP_TERM_COVARIANCE, C_BYTES, C_BYTES);
  check_row(rows, n, "basis_setup", QP_TERM_MAP_BUFFER, MAPS_PREDICTED, MAPS_ALLOCATED);
  check_row(rows, n, "basis_setup", QP_TERM_GRAM, 0, GRAM_BYTES);
  H5Fclose(f);
}

static void check_print(const char *path) {
  FILE *out = tmpfile();
  TEST_ASSERT(out != NULL, "tmpfile");
  if (!out) return;
  TEST_OK(qp_report_print(path, out));
  long size = ftell(out);
  rewind(out);
  char *text = calloc((size_t)size + 1, 1);
  if (text && fread(text, 1, (size_t)size, out) == (size_t)size) {
    TEST_ASSERT(strstr(text, "covariance_setup") != NULL, "report lacks covariance_setup");
    TEST_ASSERT(strstr(text, "basis_setup") != NULL, "report lacks basis_setup");
    TEST_ASSERT(strstr(text, "DRIFT") != NULL, "report marks no drift");
    TEST_ASSERT(strstr(text, "rounding error up to 2.5e-14 of the error bars (accuracy 1e-06") !=
                    NULL,
                "report lacks the spectra's rounding error (/diagnostics spectra_error)");
    fputs(text, stderr); /* shown by ctest --output-on-failure / -V */
  } else {
    TEST_ASSERT(0, "cannot read the printed report back");
  }
  free(text);
  fclose(out);
}

/* /budget's baseline_rss_bytes replaced by an array of 4096 int64 (a hostile or damaged file:
 * it once overwrote report's stack): the report refuses it by name, and so does the shared
 * reader (qp_h5_attr_i64) that validate and the rank table use. Restored after. */
static void check_array_attribute(const char *path) {
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t g = f >= 0 ? H5Gopen2(f, "/budget", H5P_DEFAULT) : -1;
  TEST_ASSERT(g >= 0, "opening %s's /budget", path);
  if (g < 0) {
    if (f >= 0) H5Fclose(f);
    return;
  }
  long long saved = 0;
  hid_t a = H5Aopen(g, "baseline_rss_bytes", H5P_DEFAULT);
  TEST_ASSERT(a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, &saved) >= 0, "reading baseline_rss_bytes");
  if (a >= 0) H5Aclose(a);
  H5Adelete(g, "baseline_rss_bytes");
  static long long big[4096];
  for (int i = 0; i < 4096; ++i) big[i] = 0x4141414141414141LL;
  hsize_t dims[1] = {4096};
  hid_t space = H5Screate_simple(1, dims, NULL);
  a = H5Acreate2(g, "baseline_rss_bytes", H5T_NATIVE_LLONG, space, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(a >= 0 && H5Awrite(a, H5T_NATIVE_LLONG, big) >= 0, "writing the array attribute");
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  H5Gclose(g);
  H5Fclose(f);

  FILE *out = tmpfile();
  EXPECT_ERROR(qp_report_print(path, out ? out : stdout), QP_ERR_INPUT, "baseline_rss_bytes",
               "holds 4096 values where qmlpipe writes one", path);
  if (out) fclose(out);
  int64_t v = 0;
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  g = f >= 0 ? H5Gopen2(f, "/budget", H5P_DEFAULT) : -1;
  if (g >= 0) {
    EXPECT_ERROR(qp_h5_attr_i64(g, "/budget", "baseline_rss_bytes", 1, &v), QP_ERR_INPUT,
                 "'baseline_rss_bytes' holds 4096 values");
    H5Adelete(g, "baseline_rss_bytes");
    TEST_OK(qp_h5_attr_write_i64(g, "/budget", "baseline_rss_bytes", (int64_t)saved));
    H5Gclose(g);
  }
  if (f >= 0) H5Fclose(f);
  check_print(path); /* whole again */
}

int main(void) {
  char dir[] = "test_report_XXXXXX";
  TEST_ASSERT(mkdtemp(dir) != NULL, "mkdtemp");
  char path[256], bad[256], plain[256];
  snprintf(path, sizeof path, "%s/results.h5", dir);
  snprintf(bad, sizeof bad, "%s/no_such_dir/results.h5", dir);
  snprintf(plain, sizeof plain, "%s/plain.h5", dir);

  qp_model model;
  qp_model_init(&model, QP_STAGE_COUNT, qp_stage_names);
  model.overhead_bytes = QP_MODEL_DEFAULT_OVERHEAD;
  add_term(&model, QP_TERM_COVARIANCE, QP_TERM_PERSISTENT, C_BYTES, QP_STAGE_COVARIANCE_SETUP,
           QP_STAGE_SPECTRA_RUN);
  add_term(&model, QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, SKY_BYTES, QP_STAGE_COVARIANCE_SETUP,
           QP_STAGE_COVARIANCE_SETUP);
  add_term(&model, QP_TERM_MAP_BUFFER, QP_TERM_PERSISTENT, MAPS_PREDICTED,
           QP_STAGE_COVARIANCE_SETUP, QP_STAGE_SPECTRA_RUN);

  qp_budget_reset();
  qp_meter_sample baseline;
  qp_meter_read(&baseline);
  void *c = NULL, *sky = NULL, *maps = NULL, *gram = NULL;
  TEST_OK(qp_stage_push("covariance_setup"));
  TEST_OK(qp_budget_alloc(QP_TERM_COVARIANCE, QP_TERM_PERSISTENT, QP_SPACE_HOST, C_BYTES, &c));
  TEST_OK(qp_budget_alloc(QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, QP_SPACE_HOST, SKY_BYTES, &sky));
  TEST_OK(qp_budget_alloc(QP_TERM_MAP_BUFFER, QP_TERM_PERSISTENT, QP_SPACE_HOST, MAPS_ALLOCATED,
                          &maps));
  qp_budget_free(sky);
  TEST_OK(qp_stage_pop());
  TEST_OK(qp_stage_push("basis_setup"));
  TEST_OK(qp_budget_alloc(QP_TERM_GRAM, QP_TERM_TRANSIENT, QP_SPACE_HOST, GRAM_BYTES, &gram));
  qp_stage_add_flops(1e6);
  qp_budget_free(gram);
  TEST_OK(qp_stage_pop());

  qp_config cfg;
  qp_config_defaults(&cfg);
  cfg.lmax = cfg.lmax_signal = 5;
  const qp_spectrum spectra[1] = {QP_TT};
  const int ell_min[2] = {2, 4}, ell_max[2] = {3, 5};
  const double fisher[4] = {2.0, 0.5, 0.5, 3.0};
  const double yb[2] = {1.5, 2.5}, noise_bias[2] = {0.25, 0.125}, cl[2] = {0.5, 0.75};
  const double error[2] = {0.75, 0.625};
  const double covariance[4] = {0.5625, 0.0625, 0.0625, 0.390625};
  qp_results res = {.config = &cfg, .nside = 2, .n_observed = 40, .n_pix = 40, .n_params = 2,
                    .n_bins = 2, .n_maps = 1, .n_spectra = 1, .spectra = spectra,
                    .bin_ell_min = ell_min, .bin_ell_max = ell_max, .fisher = fisher, .yb = yb,
                    .noise_bias = noise_bias, .cl = cl, .error = error,
                    .covariance = covariance,
                    .path_used = "pixel_direct", .path_reason = "test_report",
                    .model = &model, .baseline = &baseline, .accuracy = 1e-6,
                    .spectra_error = 2.5e-14};

  TEST_OK(qp_results_write(path, &res));
  int tmp_found = 0;
  int n = count_entries(dir, &tmp_found);
  TEST_ASSERT(n == 1 && tmp_found == 0, "%s holds %d entries (%d temporary), expected only "
              "results.h5", dir, n, tmp_found);
  check_file(path, fisher, &baseline);
  check_print(path);
  check_array_attribute(path);

  /* A path in a directory that does not exist: QP_ERR_IO, and nothing left anywhere. */
  TEST_FAILS(qp_results_write(bad, &res), QP_ERR_IO);
  n = count_entries(dir, &tmp_found);
  TEST_ASSERT(n == 1 && tmp_found == 0, "after the failed write %s holds %d entries", dir, n);

  /* Reading back: a missing file is an I/O error, an HDF5 file without /budget bad input. */
  TEST_FAILS(qp_report_print(bad, stdout), QP_ERR_IO);
  hid_t f = H5Fcreate(plain, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(f >= 0, "creating %s", plain);
  if (f >= 0) H5Fclose(f);
  TEST_FAILS(qp_report_print(plain, stdout), QP_ERR_INPUT);

  qp_budget_free(c);
  qp_budget_free(maps);
  TEST_ASSERT(qp_budget_dump_live(stderr) == 0, "blocks left alive");
  remove(plain);
  remove(path);
  TEST_ASSERT(rmdir(dir) == 0, "cannot remove %s (files left in it?)", dir);
  return TEST_RETURN();
}
