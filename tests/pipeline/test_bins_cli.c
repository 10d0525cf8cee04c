/* test_bins_cli: the `bins:` file of a config, through `qmlpipe plan` (argv[1]), which reads
 * it before anything large. A bins file is one bin a line, "ell_min ell_max": two integers,
 * nothing else but a comment after '#'; blank and comment lines of any length. Anything else
 * is refused with the bad-input status (6) naming the file and the line; a file that cannot
 * be read (missing, a directory) with the I/O status (8) naming the file and why.
 *
 * Files go to a private directory (bins_cli.d), removed when every check passed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "fixture.h"
#include "test_util.h"

#define WORK_DIR "bins_cli.d"

static char qmlpipe[4096];

/* <name>.yaml for the fixture's data with `bins: <bins>` (lmax 10, ell_min 2). */
static void write_config(const char *name, const char *bins) {
  char path[256];
  snprintf(path, sizeof path, "%s.yaml", name);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f,
          "maps: [bins_map_0000.fits]\nmask: bins_mask.fits\ncls: bins_cls.txt\n"
          "noise: {variance: 1.0}\nell_min: 2\nlmax: 10\nbins: %s\npath: pixel_direct\n",
          bins);
  fclose(f);
}

/* `qmlpipe plan <name>.yaml` with bins file <name>.txt holding `text` (NULL: the file is
 * not written, `bins` names it). Expects exit status `status` and every word on stderr
 * (status 0: on stdout). */
static void expect(const char *name, const char *text, int status, const char *const *words) {
  char bins[256], config[256];
  snprintf(bins, sizeof bins, "%s.txt", name);
  if (text) qp_test_write_text(bins, text);
  write_config(name, bins);
  snprintf(config, sizeof config, "%s.yaml", name);
  const char *args[] = {"plan", config, NULL};
  qp_cli_result r;
  qp_cli_run(qmlpipe, name, args, &r);
  const int before = qp_test_failures;
  TEST_ASSERT(r.exited && r.status == status, "%s: exit status %d (signal %d), expected %d", name,
              r.status, r.signal, status);
  const char *where = status == 0 ? r.out : r.err;
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(strstr(where, words[i]) != NULL, "%s: %s lacks '%s'", name,
                status == 0 ? "stdout" : "stderr", words[i]);
  if (qp_test_failures != before)
    fprintf(stderr, "  --- stdout ---\n%s  --- stderr ---\n%s  ---\n", r.out, r.err);
  else
    printf("%s: ok%s%s", name, status ? ": " : "\n", status ? r.err : "");
  qp_cli_free(&r);
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup(argc, argv, "test_bins_cli", WORK_DIR, qmlpipe);
  if (setup != 0) return setup;
  qp_fixture f = {.name = "bins",
                  .nside = 4,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 10,
                  .lmax_signal = 10,
                  .bin_width = 1,
                  .sim_lmax = 10,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .cl_flat = 1.0,
                  .seed = 3};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_config_free(&cfg);
  const int input = qp_err_exit_status(QP_ERR_INPUT), io = qp_err_exit_status(QP_ERR_IO);

  /* Positive control: comments (whole-line and trailing), blank lines, CRLF, a '+' sign. */
  const char *good[] = {"3 parameters", NULL};
  expect("bins_good", "# ell_min ell_max\n\n2 4\r\n  5 7   # second bin\n\t+8 10\n", 0, good);

  /* Text after the two integers. */
  const char *junk[] = {"bins_junk.txt", "line 2", "junk", NULL};
  expect("bins_junk", "# bins\n2 5 junk\n", input, junk);
  /* A third number. */
  const char *three[] = {"bins_three.txt", "line 1", NULL};
  expect("bins_three", "2 5 8\n", input, three);
  /* One number only. */
  const char *one[] = {"bins_one.txt", "line 2", NULL};
  expect("bins_one", "2 5\n6\n", input, one);
  /* Not integers. */
  const char *frac[] = {"bins_frac.txt", "line 2", "10.9", NULL};
  expect("bins_frac", "2 5\n6 10.9\n", input, frac);
  const char *hex[] = {"bins_hex.txt", "line 1", "0x5", NULL};
  expect("bins_hex", "2 0x5\n", input, hex);
  /* Beyond int. */
  const char *big[] = {"bins_big.txt", "line 1", "99999999999", "out of range", NULL};
  expect("bins_big", "2 99999999999\n", input, big);

  /* A line longer than any buffer is one line: here two bins' worth of numbers on line 1 ... */
  char text[2048];
  snprintf(text, sizeof text, "2 5%700s7 9\n", "");
  const char *long_data[] = {"bins_long_data.txt", "line 1", NULL};
  expect("bins_long_data", text, input, long_data);
  /* ... and a comment of any length is a comment, digits and all. */
  int used = snprintf(text, sizeof text, "#");
  for (int i = 0; i < 400; ++i)
    used += snprintf(text + used, sizeof text - (size_t)used, " 1");
  snprintf(text + used, sizeof text - (size_t)used, "\n2 5\n");
  const char *long_comment[] = {"1 parameters", NULL};
  expect("bins_long_comment", text, 0, long_comment);

  /* The order and the range of the bins. */
  const char *overlap[] = {"bins_overlap.txt", "line 2", "overlaps", NULL};
  expect("bins_overlap", "2 5\n5 8\n", input, overlap);
  const char *descending[] = {"bins_descending.txt", "line 2", NULL};
  expect("bins_descending", "6 8\n2 4\n", input, descending);
  const char *reversed[] = {"bins_reversed.txt", "line 1", "5 3", NULL};
  expect("bins_reversed", "5 3\n", input, reversed);
  const char *below[] = {"bins_below.txt", "line 1", "ell_min", NULL};
  expect("bins_below", "-1 5\n", input, below);
  const char *above[] = {"bins_above.txt", "line 2", "lmax", NULL};
  expect("bins_above", "2 5\n6 11\n", input, above);
  const char *empty[] = {"bins_empty.txt", "no bins", NULL};
  expect("bins_empty", "# nothing here\n\n", input, empty);

  /* Files that cannot be read: I/O errors naming the file and the reason. */
  const char *missing[] = {"bins_missing.txt", "No such file", NULL};
  expect("bins_missing", NULL, io, missing);
  TEST_ASSERT(mkdir("bins_dir.txt", 0755) == 0 || errno == EEXIST, "cannot make a directory");
  const char *dir[] = {"bins_dir.txt", "directory", NULL};
  expect("bins_dir", NULL, io, dir);
  rmdir("bins_dir.txt");

  if (qp_test_failures == 0) qp_cli_remove_files(".");
  return TEST_RETURN();
}
