/* test_plan_cli: `qmlpipe plan`, `budget` and `calibrate` without data. A config with
 * `dimensions:` in place of maps and mask (the harmonic calibration case: n_pix 59136,
 * n_modes 33274, lmax_signal 256, lmax 128) is planned (SMW, lifetime peak under 45 GiB),
 * refused against a 30 GiB host_limit before anything is allocated, and refused by `run`;
 * `calibrate` writes a calibration file whose overhead `budget` then reports, and whose dgemm
 * rate per core `plan --json` uses for the job's --time (without one, plan times a dgemm).
 * On a device backend with many maps, plan and budget print the map batch memory.device_limit
 * calls for, and refuse a limit that not even one map's batch fits; on the projection route,
 * the block of W's columns it calls for, and refuse a limit that not even one column fits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "qp_error.h"
#include "test_util.h"

static const char *qmlpipe;

/* Runs qmlpipe with `args`, stdout+stderr to out.txt; returns the exit status. */
static int run(const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s > plan_cli_out.txt 2>&1", qmlpipe, args);
  int status = system(cmd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int output_has(const char *text) {
  FILE *f = fopen("plan_cli_out.txt", "r");
  if (!f) return 0;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return strstr(buf, text) != NULL;
}

/* Writes `format` with its one %s replaced by `limit` to `path`. */
static void write_with_limit(const char *path, const char *format, const char *limit) {
  FILE *f = fopen(path, "w");
  fprintf(f, format, limit);
  fclose(f);
}

/* A device chunking the plan makes under `limit`: `plan` prints plan_text, `plan --json`
 * json_text (when not NULL) and `budget` budget_text. */
static void check_piece_printed(const char *path, const char *format, const char *limit,
                                const char *plan_text, const char *json_text,
                                const char *budget_text) {
  write_with_limit(path, format, limit);
  char args[256];
  snprintf(args, sizeof args, "plan %s", path);
  TEST_ASSERT(run(args) == 0 && output_has(plan_text), "%s: plan does not print '%s'", path,
              plan_text);
  snprintf(args, sizeof args, "plan %s --json", path);
  TEST_ASSERT(!json_text || (run(args) == 0 && output_has(json_text)),
              "%s: plan --json does not record '%s'", path, json_text);
  snprintf(args, sizeof args, "budget %s", path);
  TEST_ASSERT(run(args) == 0 && output_has(budget_text), "%s: budget does not print '%s'", path,
              budget_text);
}

static void write_config(const char *path, const char *limit) {
  FILE *f = fopen(path, "w");
  fprintf(f,
          "fields: QU\nspectra: [EE, BB]\nnoise: {variance: 1.0}\nlmax: 128\n"
          "dimensions: {n_pix: 59136, n_modes: 33274, lmax_signal: 256, lmax: 128, "
          "n_bins: 127}\npath: harmonic\n%s",
          limit);
  fclose(f);
}

int main(int argc, char **argv) {
  TEST_ASSERT(argc == 2, "usage: test_plan_cli QMLPIPE");
  if (argc != 2) return 1;
  qmlpipe = argv[1];

  write_config("plan_dims.yaml", "");
  TEST_ASSERT(run("plan plan_dims.yaml") == 0, "plan of the dimensions config failed");
  TEST_ASSERT(output_has("harmonic (smw)") && output_has("basis_setup"),
              "plan does not name the route and the stages");
  /* The lifetime peak (with overhead) is below 45 GiB = 46080 MiB. */
  FILE *f = fopen("plan_cli_out.txt", "r");
  char line[1024];
  double peak = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, " lifetime peak %lf MiB", &peak) == 1) break;
  if (f) fclose(f);
  printf("calibration case: lifetime peak %.1f MiB\n", peak);
  TEST_ASSERT(peak > 0 && peak < 45.0 * 1024, "lifetime peak %.1f MiB not under 45 GiB", peak);

  write_config("plan_small.yaml", "memory: {host_limit: 30GiB}\n");
  TEST_ASSERT(run("plan plan_small.yaml") == qp_err_exit_status(QP_ERR_BUDGET),
              "plan under 30 GiB did not refuse");
  TEST_ASSERT(output_has("exceeds memory.host_limit") && output_has("basis_setup"),
              "the refusal does not say which stage and limit");
  TEST_ASSERT(run("run plan_dims.yaml") == qp_err_exit_status(QP_ERR_INPUT) &&
                  output_has("cannot run"),
              "run of a dimensions config was not refused");

  TEST_ASSERT(run("calibrate --output plan_cal.txt --size 256") == 0, "calibrate failed");
  f = fopen("plan_cal.txt", "r");
  long long overhead = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "overhead_bytes %lld", &overhead) == 1) break;
  if (f) fclose(f);
  TEST_ASSERT(overhead > (1 << 20), "calibrated overhead %lld bytes", overhead);
  write_config("plan_cal.yaml", "memory: {calibration: plan_cal.txt}\n");
  TEST_ASSERT(run("budget plan_cal.yaml") == 0, "budget with a calibration failed");
  char expect[64];
  snprintf(expect, sizeof expect, "%lld B", overhead);
  TEST_ASSERT(output_has(expect), "budget does not report the calibrated overhead %s", expect);
  TEST_ASSERT(!output_has("measured here instead"),
              "a calibration made on this kernel was not taken as it is");
  /* A calibration made on another BLAS kernel (its blas_kernel line changed): its BLAS part is
   * not applied; budget says so and uses the footprint measured here. */
  FILE *other = fopen("plan_cal_other.txt", "w");
  f = fopen("plan_cal.txt", "r");
  while (other && f && fgets(line, sizeof line, f))
    fputs(strncmp(line, "blas_kernel ", 12) == 0 ? "blas_kernel OpenBLAS 0.3.21 NoSuchKernel\n"
                                                 : line,
          other);
  if (f) fclose(f);
  if (other) fclose(other);
  write_config("plan_cal_other.yaml", "memory: {calibration: plan_cal_other.txt}\n");
  TEST_ASSERT(run("budget plan_cal_other.yaml") == 0, "budget with another kernel's calibration "
                                                      "failed");
  TEST_ASSERT(output_has("measured on OpenBLAS 0.3.21 NoSuchKernel") &&
                  output_has("measured here instead") && output_has("overhead: BLAS buffers"),
              "another kernel's calibration was applied without a word");
  /* A blas_kernel without a name is refused, naming the file and line. */
  FILE *bad = fopen("plan_cal_noname.txt", "w");
  if (bad) {
    fprintf(bad, "overhead_bytes %lld\nblas_kernel \n", overhead);
    fclose(bad);
  }
  write_config("plan_cal_noname.yaml", "memory: {calibration: plan_cal_noname.txt}\n");
  TEST_ASSERT(run("budget plan_cal_noname.yaml") == qp_err_exit_status(QP_ERR_INPUT) &&
                  output_has("plan_cal_noname.txt' line 2: blas_kernel needs a name"),
              "a blas_kernel without a name was not refused by file and line");
  /* The job's --time: calibrate records the dgemm rate per core, plan uses it; without a
   * calibration file plan times a dgemm itself; the JSON says which and by how much. */
  long long mflops = -1;
  f = fopen("plan_cal.txt", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "dgemm_mflops_per_core %lld", &mflops) == 1) break;
  if (f) fclose(f);
  TEST_ASSERT(mflops >= 100, "calibrate recorded dgemm_mflops_per_core %lld (expected >= 100)",
              mflops);
  FILE *cal = fopen("plan_rate.txt", "w");
  fprintf(cal, "overhead_bytes %lld\ndgemm_mflops_per_core 2500\n", overhead);
  fclose(cal);
  write_config("plan_rate.yaml", "memory: {calibration: plan_rate.txt}\n");
  TEST_ASSERT(run("plan plan_rate.yaml --json") == 0 &&
                  output_has("\"flops_per_core\": 2.5e+09, \"rate_source\": "
                             "\"dgemm_mflops_per_core of the calibration file ") &&
                  output_has("plan_rate.txt\""),
              "plan --json does not take the calibrated rate 2.5e9");
  TEST_ASSERT(run("plan plan_dims.yaml --json") == 0 && output_has("timed by `plan`"),
              "plan without a calibration does not say it timed a dgemm");
  f = fopen("plan_cli_out.txt", "r");
  double measured = -1;
  const char *key = "\"flops_per_core\": ";
  while (f && fgets(line, sizeof line, f)) {
    const char *at = strstr(line, key);
    if (at) measured = strtod(at + strlen(key), NULL);
  }
  if (f) fclose(f);
  TEST_ASSERT(measured > 1e8 && measured < 1e12, "measured rate per core %g flop/s", measured);
  write_config("plan_badcal.yaml", "memory: {calibration: no_such_calibration.txt}\n");
  TEST_ASSERT(run("budget plan_badcal.yaml") == qp_err_exit_status(QP_ERR_IO) &&
                  output_has("no_such_calibration.txt"),
              "a missing calibration file is not named");

  /* 1000 maps on a device backend: memory.device_limit 41 GiB holds SMW's N_eff and V,
   * hostdev's emulated solver workspace (n_pix x 64 doubles, 28.9 MiB) and a batch of 372 maps
   * (0.74 MiB each) in basis_setup; plan, the JSON and budget say so. 27 GiB
   * does not hold even one map's: refused, naming the batch. */
  const char *const maps_dims =
      "fields: QU\nspectra: [EE, BB]\nnoise: {variance: 1.0}\nlmax: 128\npath: harmonic\n"
      "harmonic_method: smw\nbackend: hostdev\ndimensions: {n_pix: 59136, n_modes: 33274, "
      "lmax_signal: 256, lmax: 128, n_bins: 127, n_maps: 1000}\nmemory: {device_limit: %s}\n";
  check_piece_printed("plan_maps.yaml", maps_dims, "41GiB",
                      "maps in batches of 372 of 1000 on the device (memory.device_limit)",
                      "\"maps\": 372,", "map_batch=372");
  write_with_limit("plan_maps.yaml", maps_dims, "27GiB");
  TEST_ASSERT(run("plan plan_maps.yaml") == qp_err_exit_status(QP_ERR_BUDGET) &&
                  output_has("stage basis_setup") && output_has("maps in batches of 1 of 1000"),
              "a device_limit below one map's batch is not refused naming it");

  /* Projection on a device backend with more modes than pixels: 15 GiB holds C, V, hostdev's
   * solver workspace (n_pix x 64) and a block of 37820 of W's 39996 columns in basis_setup (W
   * whole needs 15.6 GiB there); plan, the
   * JSON and budget say so. 6 GiB does not hold even fisher_run's Z beside C and V: refused,
   * naming the block. */
  const char *const w_dims =
      "fields: T\nspectra: [TT]\nnoise: {variance: 1.0}\nlmax: 199\npath: harmonic\n"
      "harmonic_method: projected\nbackend: hostdev\ndimensions: {n_pix: 10000, n_modes: "
      "39996, lmax_signal: 199, lmax: 199, n_bins: 99, n_maps: 2}\n"
      "memory: {device_limit: %s}\n";
  check_piece_printed("plan_w.yaml", w_dims, "15GiB",
                      "W in blocks of 37820 of 39996 columns on the device (memory.device_limit)",
                      "\"w_block\": 37820,", "w_block=37820");
  write_with_limit("plan_w.yaml", w_dims, "6GiB");
  TEST_ASSERT(run("plan plan_w.yaml") == qp_err_exit_status(QP_ERR_BUDGET) &&
                  output_has("stage fisher_run") && output_has("W in blocks of 1 of 39996"),
              "a device_limit below a block of one column is not refused naming it");

  /* memory.host_limit on a device backend: C (n_pix^2, 763 MiB here) built on the host in
   * panels of columns (and V^T in panels of rows, Z and W's field blocks read in panels of
   * columns); plan, its JSON and budget say so. */
  const char *const panel_dims =
      "fields: T\nspectra: [TT]\nnoise: {variance: 1.0}\nlmax: 49\npath: harmonic\n"
      "harmonic_method: projected\nbackend: hostdev\ndimensions: {n_pix: 10000, n_modes: "
      "2496, lmax_signal: 49, lmax: 49, n_bins: 48, n_maps: 2}\n"
      "memory: {host_limit: %s}\n";
  /* The panel follows from the limit less the overhead, whose BLAS part is measured on the
   * kernel that runs (and grows with the threads): a calibration of 68 MiB for this process's
   * kernel (its blas_kernel line, from `calibrate` above) makes the figure the same on every
   * machine. */
  FILE *panel_cal = fopen("plan_panels_cal.txt", "w");
  f = fopen("plan_cal.txt", "r");
  if (panel_cal) fprintf(panel_cal, "overhead_bytes %d\n", 68 << 20);
  while (panel_cal && f && fgets(line, sizeof line, f))
    if (strncmp(line, "blas_kernel ", 12) == 0) fputs(line, panel_cal);
  if (f) fclose(f);
  if (panel_cal) fclose(panel_cal);
  check_piece_printed("plan_panels.yaml", panel_dims, "500MiB, calibration: plan_panels_cal.txt",
                      "host windows in panels of 5657 local lines (columns of the pixel "
                      "matrices, rows of V^T and the maps, columns of Z and W's field blocks; "
                      "memory.host_limit)",
                      "\"host_panel\": 5657}", "host_panel=5657");
  return TEST_RETURN();
}
