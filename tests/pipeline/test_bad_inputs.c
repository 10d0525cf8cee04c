/* test_bad_inputs: the real qmlpipe binary (argv[1]), run as a child process on bad inputs,
 * fails with the documented exit status (qp_err_exit_status of the expected code), says on
 * stderr what is wrong in words a user can act on, and leaves neither a results file nor a
 * temporary (QP_ATOMIC_TEMP_MARK, base/atomic_file.h) behind. A positive control first proves that
 * the harness sees a success. The polarisation cases (10-15) use a TQU fixture and end with a
 * positive control of their own: TQU, all six spectra, mask_pol narrower than mask, noise
 * {variance_t, variance_p}.
 *
 * Everything happens in a private directory (bad_inputs.d) under the working directory, so
 * that the leftover-file checks cannot see files of tests running beside this one. Files are
 * removed at the start and, when every case passed, at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_run.h"
#include "clock.h"
#include "fits_map.h"
#include "fixture.h"
#include "h5_matrix.h"
#include "simulate.h"
#include "test_util.h"

extern char **environ;

#define WORK_DIR "bad_inputs.d"
#define BASE "bad"     /* the fixture's file prefix */
#define POL BASE "pol" /* the polarised (TQU) fixture's file prefix */
#define BASE_NSIDE 8
#define BASE_LMAX 10 /* <= 3 nside - 1 for nside 4 too, so case nside reaches the maps */

static char qmlpipe_path[PATH_MAX];
static int64_t base_n_pix;     /* observed pixels of the base mask */
static int64_t first_observed; /* RING index of the first observed pixel */

/* ---------------------------------------------------------------------------------------- */
/* Files */

/* Names of the temporaries in the cwd (comma-separated into out); their count. */
static int find_tmp_files(char *out, size_t size) { return qp_test_find_temps(".", out, size); }

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* A constant nside-`nside` map with one optional special pixel (pixel < 0: none). */
static qp_err write_map(const char *path, int64_t nside, double value, int64_t pixel,
                        double special) {
  const int64_t n_sky = 12 * nside * nside;
  double *sky = malloc((size_t)n_sky * sizeof *sky);
  if (!sky) return QP_ERR_NOMEM;
  for (int64_t i = 0; i < n_sky; ++i)
    sky[i] = value;
  if (pixel >= 0) sky[pixel] = special;
  const char *names[] = {"TEMPERATURE"};
  const double *columns[] = {sky};
  qp_err err = qp_fits_map_write(path, nside, 1, names, columns);
  free(sky);
  return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Configs */

typedef struct case_config {
  const char *maps;    /* YAML list; default the fixture's map */
  const char *mask;    /* default the fixture's mask */
  const char *fields;  /* default T */
  const char *spectra; /* YAML list; default [TT] */
  const char *noise;   /* YAML mapping; default {variance: 1} */
  int lmax;            /* default BASE_LMAX */
  int lmax_signal;     /* default lmax */
  const char *memory;  /* YAML mapping; default {host_limit: 8GiB} */
  const char *extra;   /* more lines (e.g. mask_pol), or NULL */
} case_config;

/* Writes <name>.yaml in the cwd (output <name>_results.h5); paths are relative to it. */
static int write_config(const char *name, const case_config *c) {
  char path[256];
  snprintf(path, sizeof path, "%s.yaml", name);
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  const int lmax = c->lmax ? c->lmax : BASE_LMAX;
  const int lmax_signal = c->lmax_signal ? c->lmax_signal : lmax;
  fprintf(f,
          "# case %s of test_bad_inputs\n"
          "maps: %s\n"
          "mask: %s\n"
          "fields: %s\n"
          "cls: " BASE "_cls.txt\n"
          "noise: %s\n"
          "spectra: %s\n"
          "ell_min: 2\n"
          "lmax: %d\n"
          "lmax_signal: %d\n"
          "bin_width: 3\n"
          "path: pixel_direct\n"
          "backend: cpu\n"
          "output: %s_results.h5\n"
          "memory: %s\n"
          "%s",
          name, c->maps ? c->maps : "[" BASE "_map_0000.fits]",
          c->mask ? c->mask : BASE "_mask.fits", c->fields ? c->fields : "T",
          c->noise ? c->noise : "{variance: 1.0}", c->spectra ? c->spectra : "[TT]", lmax,
          lmax_signal, name, c->memory ? c->memory : "{host_limit: 8GiB}",
          c->extra ? c->extra : "");
  return fclose(f) == 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Running qmlpipe */

typedef qp_cli_result run_result;

/* Runs `qmlpipe args...` (NULL-terminated) with stdout in <tag>.out, stderr in <tag>.err. */
static void run_qmlpipe(const char *tag, const char *const *args, run_result *r) {
  qp_cli_run(qmlpipe_path, tag, args, r);
}

/* (a) exit status qp_err_exit_status(code); (b) stderr contains every word; (c) no results
 * file at `output` (NULL: none expected to be checked) and no temporary in the cwd. */
static void expect_failure(const char *tag, const run_result *r, qp_err code,
                           const char *const *words, const char *output) {
  const int want = qp_err_exit_status(code);
  TEST_ASSERT(r->started, "%s: qmlpipe did not start", tag);
  TEST_ASSERT(r->exited, "%s: qmlpipe did not exit normally (signal %d: %s)", tag, r->signal,
              r->signal ? strsignal(r->signal) : "?");
  TEST_ASSERT(!r->exited || r->status != 0, "%s: qmlpipe exited 0 on a bad input", tag);
  TEST_ASSERT(!r->exited || r->status == want, "%s: exit status %d, expected %d (%s)", tag,
              r->status, want, qp_err_name(code));
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(strstr(r->err, words[i]) != NULL, "%s: stderr lacks '%s'", tag, words[i]);
  if (output)
    TEST_ASSERT(!file_exists(output), "%s: results file '%s' exists after a failed run", tag,
                output);
  char tmp[1024];
  int n_tmp = find_tmp_files(tmp, sizeof tmp);
  TEST_ASSERT(n_tmp == 0, "%s: temporary files left behind: %s", tag, tmp);
}

/* Runs `qmlpipe run <name>.yaml` and checks it fails as described. */
static void run_bad_config(const char *name, qp_err code, const char *const *words, run_result *r) {
  char config[256], output[256];
  snprintf(config, sizeof config, "%s.yaml", name);
  snprintf(output, sizeof output, "%s_results.h5", name);
  const char *args[] = {"run", config, NULL};
  run_qmlpipe(name, args, r);
  expect_failure(name, r, code, words, output);
}

/* Prints "case NAME: ok", or the failure with the child's stderr. */
static void report(const char *name, int failures_before, const run_result *r) {
  if (qp_test_failures == failures_before) {
    printf("case %s: ok (qmlpipe %.2f s)\n", name, r ? r->seconds : 0.0);
  } else {
    printf("case %s: FAILED (%d check(s))\n", name, qp_test_failures - failures_before);
    if (r && r->err) fprintf(stderr, "  --- stderr of qmlpipe (%s) ---\n%s  ---\n", name, r->err);
  }
  fflush(stdout);
}

/* ---------------------------------------------------------------------------------------- */
/* The base problem */

/* The observed (nonzero) pixels of a mask file: their number, the first one's RING index. */
static int64_t count_observed(const char *path, int64_t *first, int64_t *n_sky) {
  qp_healpix_info info;
  int failures = qp_test_failures;
  TEST_OK(qp_fits_map_info(path, &info));
  if (qp_test_failures != failures) return 0;
  double *mask = malloc((size_t)info.n_sky * sizeof *mask);
  TEST_OK(qp_fits_map_read(path, &info, 0, mask));
  int64_t n = 0;
  if (first) *first = -1;
  for (int64_t i = 0; i < info.n_sky; ++i)
    if (mask[i] != 0.0) {
      if (first && *first < 0) *first = i;
      ++n;
    }
  free(mask);
  if (n_sky) *n_sky = info.n_sky;
  return n;
}

/* BASE: temperature maps (one column). POL: the same problem with fields TQU (maps with
 * columns I, Q, U, as healpy writes them) and the same mask. Both C_ell files hold TT, EE,
 * BB and TE. */
static int make_base(void) {
  qp_fixture f = {.name = BASE,
                  .nside = BASE_NSIDE,
                  .cut_deg = 30,
                  .ell_min = 2,
                  .lmax = BASE_LMAX,
                  .lmax_signal = BASE_LMAX,
                  .bin_width = 3,
                  .sim_lmax = BASE_LMAX,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .cl_flat = 1.0,
                  .seed = 7,
                  .ee_ratio = 0.5,
                  .bb_ratio = 0.2,
                  .te_corr = 0.3};
  qp_config cfg;
  int failures = qp_test_failures;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_config_free(&cfg);
  f.name = POL;
  f.fields = QP_FIELDS_TQU;
  f.noise_variance_pol = 2.0;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_config_free(&cfg);
  if (qp_test_failures != failures) return 0;
  /* The observed pixels of the mask it wrote (case not_posdef needs their number). */
  int64_t n_sky = 0;
  base_n_pix = count_observed(BASE "_mask.fits", &first_observed, &n_sky);
  TEST_ASSERT(base_n_pix > 0 && base_n_pix < n_sky,
              "base mask should be partial, has %lld of %lld pixels", (long long)base_n_pix,
              (long long)n_sky);
  printf("base problem: nside %d, %lld observed pixels, lmax %d\n", BASE_NSIDE,
         (long long)base_n_pix, BASE_LMAX);
  return qp_test_failures == failures;
}

/* ---------------------------------------------------------------------------------------- */
/* The cases */

/* 0. The valid base config runs, exits 0 and writes its results file. */
static int case_control(void) {
  int before = qp_test_failures;
  case_config c = {0};
  TEST_ASSERT(write_config("control", &c), "cannot write control.yaml");
  const char *args[] = {"run", "control.yaml", NULL};
  run_result r;
  run_qmlpipe("control", args, &r);
  TEST_ASSERT(r.exited && r.status == 0, "control: exit status %d (signal %d), expected 0",
              r.status, r.signal);
  TEST_ASSERT(file_exists("control_results.h5"), "control: no results file written");
  char tmp[1024];
  TEST_ASSERT(find_tmp_files(tmp, sizeof tmp) == 0, "control: temporary files left: %s", tmp);
  unlink("control_results.h5");
  report("control", before, &r);
  qp_cli_free(&r);
  return qp_test_failures == before;
}

/* 1. A map path that does not exist: QP_ERR_IO naming the path. */
static void case_missing_file(void) {
  int before = qp_test_failures;
  case_config c = {.maps = "[no_such_map_0000.fits]"};
  TEST_ASSERT(write_config("missing_file", &c), "cannot write config");
  const char *words[] = {"no_such_map_0000.fits", NULL};
  run_result r;
  run_bad_config("missing_file", QP_ERR_IO, words, &r);
  report("missing_file", before, &r);
  qp_cli_free(&r);
}

/* The config's grid of 2 x 2 ranks on one process: refused, it was ignored (issue 38; the
 * command line's --grid is checked by `run` itself). */
static void case_grid_one_process(void) {
  int before = qp_test_failures;
  case_config c = {0};
  TEST_ASSERT(write_config("grid_one", &c), "cannot write config");
  FILE *f = fopen("grid_one.yaml", "a");
  TEST_ASSERT(f && fputs("grid: {rows: 2, cols: 2}\n", f) >= 0 && fclose(f) == 0,
              "cannot add the grid to grid_one.yaml");
  const char *args[] = {"run", "grid_one.yaml", NULL};
  const char *words[] = {"grid 2 x 2 needs 4 MPI ranks", "runs on one process", NULL};
  run_result r;
  run_qmlpipe("grid_one", args, &r);
  expect_failure("grid_one", &r, QP_ERR_INPUT, words, "grid_one_results.h5");
  report("grid_one", before, &r);
  qp_cli_free(&r);
}

/* 2. Map nside 8 against a mask of nside 4. */
static void case_wrong_nside(void) {
  int before = qp_test_failures;
  TEST_OK(write_map("nside4_mask.fits", 4, 1.0, -1, 0.0));
  case_config c = {.mask = "nside4_mask.fits"};
  TEST_ASSERT(write_config("wrong_nside", &c), "cannot write config");
  const char *words[] = {"nside", BASE "_map_0000.fits", "nside4_mask.fits", NULL};
  run_result r;
  run_bad_config("wrong_nside", QP_ERR_INPUT, words, &r);
  report("wrong_nside", before, &r);
  qp_cli_free(&r);
}

/* 3. A NaN at an observed pixel of a map. */
static void case_nan_in_map(void) {
  int before = qp_test_failures;
  TEST_OK(write_map("nan_map.fits", BASE_NSIDE, 0.5, first_observed, NAN));
  case_config c = {.maps = "[" BASE "_map_0000.fits, nan_map.fits]"};
  TEST_ASSERT(write_config("nan_in_map", &c), "cannot write config");
  char pixel[32];
  snprintf(pixel, sizeof pixel, "pixel %lld", (long long)first_observed);
  const char *words[] = {"NaN", "nan_map.fits", pixel, NULL};
  run_result r;
  run_bad_config("nan_in_map", QP_ERR_INPUT, words, &r);
  report("nan_in_map", before, &r);
  qp_cli_free(&r);
}

/* 4. A mask of zeros only. */
static void case_empty_mask(void) {
  int before = qp_test_failures;
  TEST_OK(write_map("empty_mask.fits", BASE_NSIDE, 0.0, -1, 0.0));
  case_config c = {.mask = "empty_mask.fits"};
  TEST_ASSERT(write_config("empty_mask", &c), "cannot write config");
  const char *words[] = {"empty", "empty_mask.fits", NULL};
  run_result r;
  run_bad_config("empty_mask", QP_ERR_INPUT, words, &r);
  report("empty_mask", before, &r);
  qp_cli_free(&r);
}

/* 5. lmax = 3 nside, one above the largest the mask's nside allows (the fixture's C_ell file
 *    ends at 3 nside, so the C_ell check passes and the nside check is the one reached). */
static void case_lmax_too_large(void) {
  int before = qp_test_failures;
  case_config c = {.lmax = 3 * BASE_NSIDE};
  TEST_ASSERT(write_config("lmax_too_large", &c), "cannot write config");
  char limit[64];
  snprintf(limit, sizeof limit, "3 nside - 1 = %d", 3 * BASE_NSIDE - 1);
  const char *words[] = {"lmax", "nside", limit, NULL};
  run_result r;
  run_bad_config("lmax_too_large", QP_ERR_INPUT, words, &r);
  report("lmax_too_large", before, &r);
  qp_cli_free(&r);
}

/* 6. A dense noise covariance with a negative eigenvalue: the identity with 1 -> -1 on the
 *    diagonal at the middle pixel. */
static void case_noise_not_posdef(void) {
  int before = qp_test_failures;
  const int64_t n = base_n_pix;
  double *cov = calloc((size_t)(n * n), sizeof *cov);
  for (int64_t i = 0; i < n; ++i)
    cov[i + i * n] = 1.0;
  cov[(n / 2) + (n / 2) * n] = -1.0;
  TEST_OK(qp_h5_matrix_write("indefinite_noise.h5", "/covariance", n, n, cov));
  free(cov);
  case_config c = {.noise = "{covariance: indefinite_noise.h5}"};
  TEST_ASSERT(write_config("noise_not_posdef", &c), "cannot write config");
  const char *words[] = {"indefinite_noise.h5", "not positive definite", NULL};
  run_result r;
  run_bad_config("noise_not_posdef", QP_ERR_NOT_POSDEF, words, &r);
  report("noise_not_posdef", before, &r);
  qp_cli_free(&r);
}

/* 7. A predicted peak above memory.host_limit: QP_ERR_BUDGET, refused before allocating: fast,
 *    and no stage after covariance_setup started. */
static void case_host_limit(void) {
  int before = qp_test_failures;
  case_config c = {.memory = "{host_limit: 1MiB}"};
  TEST_ASSERT(write_config("host_limit", &c), "cannot write config");
  const char *words[] = {"exceeds memory.host_limit", " by ", NULL};
  run_result r;
  run_bad_config("host_limit", QP_ERR_BUDGET, words, &r);
  /* Fast, judged on the child's own CPU time (wall time moves with the machine's load: 0.22-0.32
   * s of wall at load 8 on 2 cores, against a 0.5 s limit once). Under the sanitizer build a
   * process starts and runs several times slower: 5 s there. */
  const double quick = QP_TEST_SANITIZED ? 5.0 : 0.5;
  printf("host_limit: refused in %.3f s of CPU (limit %.1f s), %.3f s of wall (not judged)\n",
         r.cpu_seconds, quick, r.seconds);
  TEST_ASSERT(qp_test_within(r.cpu_seconds, quick),
              "host_limit: the refused run used %.2f s of CPU (expected under %.1f s)",
              r.cpu_seconds, quick);
  TEST_ASSERT(strstr(r.err, "[qmlpipe] fisher_run") == NULL,
              "host_limit: fisher_run started although the budget was exceeded");
  TEST_ASSERT(strstr(r.err, "[qmlpipe] basis_setup") == NULL,
              "host_limit: basis_setup started although the budget was exceeded");
  report("host_limit", before, &r);
  qp_cli_free(&r);
}

/* 8. A misspelt key. */
static void case_unknown_key(void) {
  int before = qp_test_failures;
  case_config c = {.extra = "lmax_sginal: 10\n"};
  TEST_ASSERT(write_config("unknown_key", &c), "cannot write config");
  const char *words[] = {"unknown key", "lmax_sginal", "unknown_key.yaml", NULL};
  run_result r;
  run_bad_config("unknown_key", QP_ERR_INPUT, words, &r);
  report("unknown_key", before, &r);
  qp_cli_free(&r);
}

/* 9. `qmlpipe budget` on the host_limit config, and `qmlpipe run` without arguments. */
static void case_budget_cli(void) {
  int before = qp_test_failures;
  const char *budget_args[] = {"budget", "host_limit.yaml", NULL};
  run_result r;
  run_qmlpipe("budget_cli", budget_args, &r);
  const char *words[] = {"exceeds memory.host_limit", " by ", NULL};
  expect_failure("budget_cli", &r, QP_ERR_BUDGET, words, "host_limit_results.h5");
  report("budget_cli", before, &r);
  qp_cli_free(&r);

  before = qp_test_failures;
  const char *run_args[] = {"run", NULL};
  run_qmlpipe("run_no_args", run_args, &r);
  TEST_ASSERT(r.exited && r.status == 2, "run_no_args: exit status %d (signal %d), expected 2",
              r.status, r.signal);
  TEST_ASSERT(strstr(r.err, "usage: qmlpipe run") != NULL, "run_no_args: no usage on stderr");
  report("run_no_args", before, &r);
  qp_cli_free(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* Polarisation */

/* 10. fields QU with the temperature-only map (one column). */
static void case_qu_one_column_map(void) {
  int before = qp_test_failures;
  case_config c = {.fields = "QU", .spectra = "[EE, BB]"};
  TEST_ASSERT(write_config("qu_one_column_map", &c), "cannot write config");
  const char *words[] = {BASE "_map_0000.fits", "1 column", "Q and U", NULL};
  run_result r;
  run_bad_config("qu_one_column_map", QP_ERR_INPUT, words, &r);
  report("qu_one_column_map", before, &r);
  qp_cli_free(&r);
}

/* 11. mask_pol of nside 4 against a mask of nside 8. */
static void case_mask_pol_nside(void) {
  int before = qp_test_failures;
  TEST_OK(write_map("nside4_mask_pol.fits", 4, 1.0, -1, 0.0));
  case_config c = {.maps = "[" POL "_map_0000.fits]",
                   .fields = "TQU",
                   .spectra = "[TT, EE, BB, TE]",
                   .extra = "mask_pol: nside4_mask_pol.fits\n"};
  TEST_ASSERT(write_config("mask_pol_nside", &c), "cannot write config");
  const char *words[] = {"nside", "nside4_mask_pol.fits", BASE "_mask.fits", NULL};
  run_result r;
  run_bad_config("mask_pol_nside", QP_ERR_INPUT, words, &r);
  report("mask_pol_nside", before, &r);
  qp_cli_free(&r);
}

/* 12. spectra [TE] with fields QU: a config error. */
static void case_te_without_t(void) {
  int before = qp_test_failures;
  case_config c = {.maps = "[" POL "_map_0000.fits]", .fields = "QU", .spectra = "[TE]"};
  TEST_ASSERT(write_config("te_without_t", &c), "cannot write config");
  const char *words[] = {"te_without_t.yaml", "TE", "fields QU", NULL};
  run_result r;
  run_bad_config("te_without_t", QP_ERR_INPUT, words, &r);
  report("te_without_t", before, &r);
  qp_cli_free(&r);
}

/* 13. lmax_signal below lmax. */
static void case_lmax_signal_small(void) {
  int before = qp_test_failures;
  case_config c = {.maps = "[" POL "_map_0000.fits]",
                   .fields = "TQU",
                   .spectra = "[TT, EE, BB, TE]",
                   .lmax_signal = BASE_LMAX - 2};
  TEST_ASSERT(write_config("lmax_signal_small", &c), "cannot write config");
  const char *words[] = {"lmax_signal_small.yaml", "lmax_signal", "must be >= lmax", NULL};
  run_result r;
  run_bad_config("lmax_signal_small", QP_ERR_INPUT, words, &r);
  report("lmax_signal_small", before, &r);
  qp_cli_free(&r);
}

/* 14. fields QU with a noise variance map of one column (T only). */
static void case_qu_one_column_variance(void) {
  int before = qp_test_failures;
  TEST_OK(write_map("variance_t_only.fits", BASE_NSIDE, 1.0, -1, 0.0));
  case_config c = {.maps = "[" POL "_map_0000.fits]",
                   .fields = "QU",
                   .spectra = "[EE, BB]",
                   .noise = "{variance_map: variance_t_only.fits}"};
  TEST_ASSERT(write_config("qu_one_column_variance", &c), "cannot write config");
  const char *words[] = {"noise variance map", "variance_t_only.fits", "1 column", "Q and U", NULL};
  run_result r;
  run_bad_config("qu_one_column_variance", QP_ERR_INPUT, words, &r);
  report("qu_one_column_variance", before, &r);
  qp_cli_free(&r);
}

/* 15. Positive control of polarisation: TQU, all six spectra, a wider cut for Q and U
 *     (mask_pol), noise {variance_t, variance_p}: exit 0, a results file, and the positions
 *     are the mask's T pixels plus mask_pol's polarisation pixels. */
static void case_pol_control(void) {
  int before = qp_test_failures;
  const int64_t n_sky = 12 * BASE_NSIDE * BASE_NSIDE;
  double *sky = malloc((size_t)n_sky * sizeof *sky);
  qp_simulate_galactic_mask(BASE_NSIDE, 50.0, sky);
  const char *names[] = {"MASK"};
  const double *columns[] = {sky};
  TEST_OK(qp_fits_map_write("pol_mask_wide.fits", BASE_NSIDE, 1, names, columns));
  free(sky);
  const int64_t n_obs_p = count_observed("pol_mask_wide.fits", NULL, NULL);
  TEST_ASSERT(n_obs_p > 0 && n_obs_p < base_n_pix,
              "pol_control: mask_pol should observe fewer pixels (%lld) than the mask (%lld)",
              (long long)n_obs_p, (long long)base_n_pix);
  case_config c = {.maps = "[" POL "_map_0000.fits]",
                   .fields = "TQU",
                   .spectra = "[TT, EE, BB, TE, TB, EB]",
                   .noise = "{variance_t: 1.0, variance_p: 2.0}",
                   .extra = "mask_pol: pol_mask_wide.fits\n"};
  TEST_ASSERT(write_config("pol_control", &c), "cannot write config");
  const char *args[] = {"run", "pol_control.yaml", NULL};
  run_result r;
  run_qmlpipe("pol_control", args, &r);
  TEST_ASSERT(r.exited && r.status == 0, "pol_control: exit status %d (signal %d), expected 0",
              r.status, r.signal);
  TEST_ASSERT(file_exists("pol_control_results.h5"), "pol_control: no results file written");
  char positions[64];
  snprintf(positions, sizeof positions, "%lld observed pixels", (long long)(base_n_pix + n_obs_p));
  TEST_ASSERT(strstr(r.out, positions) != NULL, "pol_control: stdout lacks '%s'", positions);
  TEST_ASSERT(strstr(r.out, "18 parameter(s)") != NULL,
              "pol_control: stdout lacks '18 parameter(s)' (6 spectra x 3 bins)");
  char tmp[1024];
  TEST_ASSERT(find_tmp_files(tmp, sizeof tmp) == 0, "pol_control: temporary files left: %s", tmp);
  unlink("pol_control_results.h5");
  report("pol_control", before, &r);
  if (qp_test_failures != before) fprintf(stderr, "  --- stdout ---\n%s  ---\n", r.out);
  qp_cli_free(&r);
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup(argc, argv, "test_bad_inputs", WORK_DIR, qmlpipe_path);
  if (setup != 0) return setup;
  double t0 = qp_clock_seconds();
  if (!make_base()) return TEST_RETURN();
  if (!case_control()) {
    fprintf(stderr, "the valid base config failed: the cases below would prove nothing\n");
    return TEST_RETURN();
  }
  case_missing_file();
  case_wrong_nside();
  case_nan_in_map();
  case_empty_mask();
  case_lmax_too_large();
  case_grid_one_process();
  case_noise_not_posdef();
  case_host_limit();
  case_unknown_key();
  case_budget_cli();
  case_qu_one_column_map();
  case_mask_pol_nside();
  case_te_without_t();
  case_lmax_signal_small();
  case_qu_one_column_variance();
  case_pol_control();
  printf("%d failed check(s), %.2f s\n", qp_test_failures, qp_clock_seconds() - t0);
  if (qp_test_failures == 0) qp_cli_remove_files(".");
  return TEST_RETURN();
}
