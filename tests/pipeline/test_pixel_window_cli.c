/* test_pixel_window_cli: the pixel window from the command line (argv[1]: qmlpipe, argv[2]: a
 * C_ell file).
 *  - `simulate --pixel-window` draws what synfast(pixwin=True) draws: the same maps (to 1e-12
 *    of their largest value) as `simulate` without it from C_l^XY w_l^X w_l^Y (w^T for T, w^P
 *    for E and B), the same seed, for T and for TQU; and not the maps without the window.
 *  - `simulate --example --pixel-window` writes `pixel_window: true` into the example's config;
 *    its results' attribute pixel_window names HEALPix's table of the nside ("none" without).
 *  - `plan` prints the same with and without the window (it reads the table, a few KiB).
 *  - The refusals from the command line: an nside without a table (simulate, exit 6; run,
 *    exit 6), a pixel_window_file that is missing (plan and simulate, exit 8), another nside's
 *    table (run, exit 6), --example with --pixel-window-file (exit 2).
 * Everything happens in pixel_window_cli.d. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "cls_text.h"
#include "fits_map.h"
#include "h5_attr.h"
#include "pixel_window.h"
#include "test_util.h"

static char qmlpipe[4096], cls_path[4096];

/* Runs qmlpipe; expects `status` and every word (NULL-terminated) on stderr (stdout when 0).
 * Returns its stdout (malloc'd) for the caller, who frees it. */
static char *expect(const char *tag, const char *const *args, int status,
                    const char *const *words) {
  qp_cli_result r;
  qp_cli_run(qmlpipe, tag, args, &r);
  TEST_ASSERT(r.started && r.exited && r.status == status,
              "%s: exit status %d (signal %d), expected %d; stderr:\n%s", tag, r.status, r.signal,
              status, r.err ? r.err : "");
  const char *where = status == 0 ? r.out : r.err;
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(where && strstr(where, words[i]) != NULL, "%s: %s lacks '%s':\n%s", tag,
                status == 0 ? "stdout" : "stderr", words[i], where ? where : "");
  if (status != 0 && r.err) fprintf(stderr, "  %s: %s", tag, r.err);
  char *out = r.out;
  r.out = NULL;
  qp_cli_free(&r);
  return out;
}

/* Column c of map file `path` (n_sky values, malloc'd). */
static double *read_column(const char *path, int c, int64_t *n_sky) {
  qp_healpix_info info;
  TEST_OK(qp_fits_map_info(path, &info));
  *n_sky = info.n_sky;
  double *v = calloc((size_t)info.n_sky, sizeof *v);
  TEST_OK(qp_fits_map_read(path, &info, c, v));
  return v;
}

/* simulate --pixel-window against simulate of the windowed C_ell, for `fields`. */
static void check_simulate(const char *fields, int n_col) {
  const int64_t nside = 8;
  const int lmax = 3 * (int)nside - 1;
  qp_cls cls;
  TEST_OK(qp_cls_read(cls_path, &cls));
  qp_pixel_window w;
  TEST_OK(qp_pixel_window_read(NULL, nside, lmax, &w));
  if (!w.t) return;
  static const int fields_of[6][2] = {{0, 0}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, {1, 1}};
  for (int s = 0; s < 6; ++s)
    for (int l = 0; l <= cls.lmax; ++l) {
      const double wa = l > lmax ? 0 : fields_of[s][0] ? w.p[l] : w.t[l];
      const double wb = l > lmax ? 0 : fields_of[s][1] ? w.p[l] : w.t[l];
      cls.cl[s][l] *= wa * wb;
    }
  TEST_OK(qp_cls_write("cls_windowed.txt", &cls));
  qp_cls_free(&cls);
  const char *base[] = {"simulate", "--nside", "8",     "--fields", fields, "--seed", "7",
                        "--cls",    NULL,      "--out", NULL,       NULL,   NULL};
  const char *args[3][13];
  const char *cls_of[3] = {cls_path, "cls_windowed.txt", cls_path};
  const char *out_of[3] = {"windowed", "by_cls", "none"};
  for (int k = 0; k < 3; ++k) {
    memcpy(args[k], base, sizeof base);
    args[k][8] = cls_of[k];
    args[k][10] = out_of[k];
    args[k][11] = k == 0 ? "--pixel-window" : NULL;
    free(expect(out_of[k], args[k], 0, NULL));
  }
  double worst = 0, moved = 0;
  for (int c = 0; c < n_col; ++c) {
    int64_t n = 0;
    double *a = read_column("windowed_0000.fits", c, &n);
    double *b = read_column("by_cls_0000.fits", c, &n);
    double *z = read_column("none_0000.fits", c, &n);
    worst = qp_test_worst(worst, qp_test_max_rel_diff(b, a, (size_t)n));
    moved = qp_test_worst(moved, qp_test_max_rel_diff(z, a, (size_t)n));
    free(a);
    free(b);
    free(z);
  }
  printf("simulate --fields %s --pixel-window: against the windowed C_ell %.2e of the largest "
         "value, against no window %.2e\n",
         fields, worst, moved);
  TEST_WITHIN(worst, 1e-12, "simulate --pixel-window (%s) differs from the windowed C_ell", fields);
  TEST_ASSERT(moved > 1e-3, "simulate --pixel-window (%s) left the maps as they were (%.2e)",
              fields, moved);
  qp_pixel_window_free(&w);
}

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  char buf[4096];
  size_t n = 0;
  int ok = in && out;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
    ok = fwrite(buf, 1, n, out) == n;
  TEST_ASSERT(ok, "cannot copy '%s' to '%s'", from, to);
  if (in) fclose(in);
  if (out) fclose(out);
}

/* The root attribute pixel_window of a results file ("" when unread). */
static void results_window(const char *path, char *text, size_t size) {
  text[0] = '\0';
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) TEST_OK(qp_h5_attr_string(f, path, "pixel_window", text, size));
  if (f >= 0) H5Fclose(f);
}

static void check_example(void) {
  const char *make[] = {"simulate", "--example", "ex", "--cls",          cls_path, "--nside",
                        "8",        "--lmax",    "12", "--pixel-window", NULL};
  free(expect("example", make, 0, NULL));
  char *config = qp_cli_slurp("ex/config.yaml");
  TEST_ASSERT(strstr(config, "\npixel_window: true\n"), "the example's config:\n%s", config);
  free(config);
  const char *run[] = {"run", "ex/config.yaml", NULL};
  free(expect("example_run", run, 0, NULL));
  char text[8192], want[8192];
  char dir[4096];
  TEST_OK(qp_pixel_window_default_path(8, dir, sizeof dir));
  snprintf(want, sizeof want, "healpix nside 8: %s", dir);
  results_window("ex/results.h5", text, sizeof text);
  TEST_ASSERT(strcmp(text, want) == 0, "attribute pixel_window '%s', expected '%s'", text, want);

  /* plan reads the table, and prints what it printed without it. */
  const char *plan[] = {"plan", "ex/config.yaml", NULL};
  char *with = expect("plan_window", plan, 0, NULL);
  config = qp_cli_slurp("ex/config.yaml");
  char *at = strstr(config, "pixel_window: true\n");
  if (at)
    memmove(at, at + strlen("pixel_window: true\n"),
            strlen(at + strlen("pixel_window: true\n")) + 1);
  qp_test_write_text("ex/config.yaml", config);
  char *without = expect("plan_none", plan, 0, NULL);
  TEST_ASSERT(with && without && strcmp(with, without) == 0,
              "plan differs with the pixel window:\n%s\nwithout:\n%s", with, without);
  free(with);
  free(without);
  free(expect("example_run_none", run, 0, NULL));
  results_window("ex/results.h5", text, sizeof text);
  TEST_ASSERT(strcmp(text, "none") == 0, "attribute pixel_window '%s', expected 'none'", text);

  /* Another nside's table: refused by run before any stage (exit 6). */
  char bad[8192];
  TEST_OK(qp_pixel_window_default_path(16, dir, sizeof dir));
  snprintf(bad, sizeof bad, "%spixel_window: true\npixel_window_file: %s\n", config, dir);
  qp_test_write_text("ex/config.yaml", bad);
  const char *nside_words[] = {"NSIDE = 16", "the maps' nside is 8", NULL};
  free(expect("run_other_nside", run, 6, nside_words));
  /* A table that is missing: plan says so (exit 8), naming it. */
  snprintf(bad, sizeof bad, "%spixel_window: true\npixel_window_file: no_such_table.fits\n",
           config);
  qp_test_write_text("ex/config.yaml", bad);
  const char *missing_words[] = {"pixel window table", "no_such_table.fits", NULL};
  free(expect("plan_missing_table", plan, 8, missing_words));
  /* The config's output naming its table: refused before the run (8), the table untouched. */
  TEST_OK(qp_pixel_window_default_path(8, dir, sizeof dir));
  copy_file(dir, "ex/table.fits");
  const char *results_line = "output: results.h5\n";
  char *line = strstr(config, results_line);
  if (line) memmove(line, line + strlen(results_line), strlen(line + strlen(results_line)) + 1);
  snprintf(bad, sizeof bad,
           "%spixel_window: true\npixel_window_file: table.fits\noutput: table.fits\n", config);
  qp_test_write_text("ex/config.yaml", bad);
  const char *output_words[] = {"table.fits", "(pixel_window_file)", NULL};
  free(expect("run_output_is_table", run, 8, output_words));
  qp_pixel_window w;
  TEST_OK(qp_pixel_window_read("ex/table.fits", 8, 32, &w));
  qp_pixel_window_free(&w);
  free(config);
}

static void check_refusals(void) {
  /* nside 6: HEALPix has no table; simulate refuses (6), and so does run on nside-6 maps. */
  const char *sim6[] = {"simulate", "--cls", cls_path, "--nside", "6",          "--lmax",
                        "10",       "--out", "m6",     "--mask",  "mask6.fits", "--pixel-window",
                        NULL};
  const char *no_table[] = {"no pixel window table for nside 6", "pixel_window_file", NULL};
  free(expect("simulate_nside6", sim6, 6, no_table));
  sim6[11] = NULL;
  free(expect("simulate_nside6_plain", sim6, 0, NULL));
  char config[8192];
  snprintf(config, sizeof config,
           "maps: m6_0000.fits\nmask: mask6.fits\ncls: %s\nnoise: {variance: 1.0}\nlmax: 10\n"
           "pixel_window: true\n",
           cls_path);
  qp_test_write_text("six.yaml", config);
  const char *run6[] = {"run", "six.yaml", NULL};
  free(expect("run_nside6", run6, 6, no_table));
  const char *missing[] = {
      "simulate",           "--cls", cls_path, "--nside", "8", "--out", "mm", "--pixel-window-file",
      "no_such_table.fits", NULL};
  const char *missing_words[] = {"pixel window table", "no_such_table.fits", NULL};
  free(expect("simulate_missing_table", missing, 8, missing_words));
  const char *example[] = {"simulate", "--example",           "ex2",    "--cls",
                           cls_path,   "--pixel-window-file", "t.fits", NULL};
  const char *example_words[] = {"--example takes --pixel-window", NULL};
  free(expect("example_table", example, 2, example_words));
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup_with_file(argc, argv, "test_pixel_window_cli", "pixel_window_cli.d",
                                     qmlpipe, cls_path);
  if (setup != 0) return setup;
  check_simulate("T", 1);
  check_simulate("TQU", 3);
  check_example();
  check_refusals();
  return TEST_RETURN();
}
