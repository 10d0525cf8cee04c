/* test_run_output_cli: where `qmlpipe run` writes and where `report` and `validate` read
 * (argv[1]: qmlpipe, argv[2]: a C_ell file for `simulate --example`).
 *  - run --output PATH writes PATH (relative to the current directory), not the config's
 *    output; --output without a path is a usage error (2); a directory that does not exist, or
 *    a PATH that is a directory, is refused before the run (8) naming the path;
 *  - report and validate take a config (its output, relative to the config's directory, from
 *    any working directory) or a results path; a config whose results file does not exist yet
 *    is refused (8) naming both files; a config that does not parse, with its own status;
 *  - run started as one of several Slurm tasks without MPI is refused (9) naming the variable,
 *    before writing anything; so is QP_WARM_UP set to anything but 0 or 1 (6); QP_WARM_UP=0
 *    skips the warm-up and says so, and every run prints what its accounting cost.
 * Everything happens in run_output_cli.d. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "clock.h"
#include "qp_config.h"
#include "test_h5.h"
#include "test_util.h"

static char qmlpipe[4096];

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Runs qmlpipe with args; expects `status` and every word (NULL-terminated) on stderr, or on
 * stdout when status is 0. */
static void expect(const char *tag, const char *const *args, int status, const char *const *words) {
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
  qp_cli_free(&r);
}

/* /spectra/covariance of a results file: F^-1, so symmetric, its diagonal the square of
 * /spectra/error, and F times it the identity (docs/output.md). */
static void check_covariance(const char *path) {
  hsize_t nf = 0, nc = 0, ne = 0;
  double *f = qp_test_h5_read_doubles(path, "/fisher", &nf);
  double *c = qp_test_h5_read_doubles(path, "/spectra/covariance", &nc);
  double *e = qp_test_h5_read_doubles(path, "/spectra/error", &ne);
  TEST_ASSERT(f && c && e && nc == nf && ne * ne == nf && ne > 0,
              "%s: /fisher, /spectra/covariance (%llu values) and /spectra/error (%llu) unread "
              "or of other sizes",
              path, (unsigned long long)nc, (unsigned long long)ne);
  const size_t n = (size_t)ne;
  double *ct = malloc(n * n * sizeof *ct), *sd = malloc(n * sizeof *sd);
  double *fc = calloc(n * n, sizeof *fc), *id = calloc(n * n, sizeof *id);
  TEST_ASSERT(ct && sd && fc && id, "out of memory");
  for (size_t q = 0; q < n; ++q) {
    sd[q] = sqrt(c[q + q * n]);
    id[q + q * n] = 1.0;
    for (size_t r = 0; r < n; ++r) {
      ct[q + r * n] = c[r + q * n];
      for (size_t k = 0; k < n; ++k)
        fc[q + r * n] += f[q + k * n] * c[k + r * n];
    }
  }
  const double asym = qp_test_max_rel_diff(c, ct, n * n);
  const double err = qp_test_max_rel_diff(e, sd, n);
  const double ident = qp_test_max_diff(fc, id, n * n, 1.0);
  TEST_ASSERT(qp_test_within(asym, 1e-15), "%s: /spectra/covariance is not symmetric (%.3g)", path,
              asym);
  TEST_ASSERT(qp_test_within(err, 0.0),
              "%s: sqrt(diag /spectra/covariance) is not "
              "/spectra/error (%.3g)",
              path, err);
  TEST_ASSERT(qp_test_within(ident, 1e-9),
              "%s: F /spectra/covariance is not the identity "
              "(%.3g)",
              path, ident);
  fprintf(stderr, "covariance: %zu parameters, symmetric to %.3g, F C - I %.3g\n", n, asym, ident);
  free(f), free(c), free(e), free(ct), free(sd), free(fc), free(id);
}

int main(int argc, char **argv) {
  char cls[4096];
  int setup =
      qp_cli_setup_with_file(argc, argv, "test_run_output_cli", "run_output_cli.d", qmlpipe, cls);
  if (setup != 0) return setup;
  if (system("rm -rf ex sub") != 0) return 1;
  {
    const char *args[] = {"simulate", "--example", "ex", "--cls", cls, NULL};
    expect("simulate", args, 0, NULL);
  }
  TEST_ASSERT(mkdir("sub", 0755) == 0, "cannot create sub/");

  /* --output: usage and paths refused before the run. */
  {
    const char *args[] = {"run", "ex/config.yaml", "--output", NULL};
    const char *words[] = {"--output needs a path", NULL};
    expect("output_missing", args, 2, words);
  }
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "nodir/r.h5", NULL};
    const char *words[] = {"--output", "'nodir/r.h5'", "'nodir' does not exist", NULL};
    const double t0 = qp_clock_seconds();
    expect("output_no_dir", args, 8, words);
    TEST_ASSERT(qp_clock_seconds() - t0 < 10.0, "the missing directory was not found at once");
  }
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "sub", NULL};
    const char *words[] = {"'sub' is a directory", NULL};
    expect("output_is_dir", args, 8, words);
  }
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "sub/", NULL};
    const char *words[] = {"'sub/' ends in '/'", NULL};
    expect("output_slash", args, 8, words);
  }
  TEST_ASSERT(!exists("ex/results.h5"), "a refused run wrote ex/results.h5");

  /* report and validate on a config whose results do not exist yet. */
  {
    const char *args[] = {"report", "ex/config.yaml", NULL};
    const char *words[] = {"config 'ex/config.yaml'", "'ex/results.h5'", "qmlpipe run", NULL};
    expect("report_no_results", args, 8, words);
  }
  {
    const char *args[] = {"validate", "ex/config.yaml", NULL};
    const char *words[] = {"config 'ex/config.yaml'", "'ex/results.h5'", NULL};
    expect("validate_no_results", args, 8, words);
  }
  {
    const char *args[] = {"report", "ex/missing.yaml", NULL};
    const char *words[] = {"ex/missing.yaml", NULL};
    expect("report_missing_config", args, 8, words);
  }
  {
    FILE *f = fopen("sub/bad.yaml", "w");
    if (f) {
      fputs("maps: [a.fits]\nmask: m.fits\ncls: c.txt\nnoise: {variance: 1}\nlmax: 4\n"
            "outptu: x.h5\n",
            f);
      fclose(f);
    }
    const char *args[] = {"report", "sub/bad.yaml", NULL};
    const char *words[] = {"sub/bad.yaml", "outptu", NULL};
    expect("report_bad_config", args, 6, words);
  }
  {
    const char *args[] = {"report", "ex/config.yaml", "sub/x.h5", NULL};
    const char *words[] = {"expected one results file", NULL};
    expect("report_two_files", args, 2, words);
  }
  {
    const char *args[] = {"report", NULL};
    const char *words[] = {"missing the results file", NULL};
    expect("report_none", args, 2, words);
  }

  /* Several Slurm tasks without MPI: refused before anything is written. */
  setenv("SLURM_STEP_ID", "0", 1);
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "sub/refused.h5", NULL};
    const char *words[] = {"SLURM_STEP_NUM_TASKS=2", "launch one task", NULL};
    expect("refused_slurm", args, 9, words);
  }
  unsetenv("SLURM_STEP_ID");
  unsetenv("SLURM_STEP_NUM_TASKS");
#if !QP_HAVE_MPI
  /* In a build without MPI, Open MPI's launcher variables too (an MPI build would start MPI). */
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "sub/refused.h5", NULL};
    const char *words[] = {"OMPI_COMM_WORLD_SIZE=2", "-DQP_ENABLE_MPI=ON", NULL};
    expect("refused_ompi", args, 9, words);
  }
  unsetenv("OMPI_COMM_WORLD_SIZE");
#endif
  /* QP_WARM_UP (warm_up.h, the benchmark's switch): a value other than 0 or 1 is refused
   * before anything is written; 0 skips the warm-up and says so, and every run says what its
   * accounting cost (the line qmlpipe-bench reads). */
  setenv("QP_WARM_UP", "yes", 1);
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "sub/refused.h5", NULL};
    const char *words[] = {"QP_WARM_UP='yes'", "expected 1", NULL};
    expect("refused_warm_up", args, 6, words);
  }
  TEST_ASSERT(!exists("sub/refused.h5"), "a refused run wrote sub/refused.h5");
  {
    FILE *f = fopen("sub/fast.yaml", "w");
    if (f) {
      fputs("maps: [../ex/map_0000.fits]\nmask: ../ex/mask.fits\ncls: ../ex/cls.txt\n"
            "noise: {variance: 100}\nlmax: 12\npath: harmonic\nharmonic_method: projected\n"
            "output: fast.h5\n",
            f);
      fclose(f);
    }
    setenv("QP_WARM_UP", "0", 1);
    const char *args[] = {"run", "sub/fast.yaml", NULL};
    qp_cli_result r;
    qp_cli_run(qmlpipe, "run_no_warm_up", args, &r);
    TEST_ASSERT(r.exited && r.status == 0, "QP_WARM_UP=0: exit status %d; stderr:\n%s", r.status,
                r.err ? r.err : "");
    TEST_ASSERT(r.err && strstr(r.err, "warm-up skipped (QP_WARM_UP=0)") &&
                    !strstr(r.err, "[qmlpipe] warm-up 0"),
                "QP_WARM_UP=0 did not skip the warm-up, or did not say so:\n%s", r.err);
    TEST_ASSERT(r.err && strstr(r.err, "[qmlpipe] accounting ") &&
                    strstr(r.err, "timeline sampler ") && strstr(r.err, "; page commits "),
                "no accounting line (with the page commits) on stderr:\n%s", r.err);
    qp_cli_free(&r);
    unsetenv("QP_WARM_UP");
    qp_cli_run(qmlpipe, "run_warm_up", args, &r);
    TEST_ASSERT(r.exited && r.status == 0 && r.err && strstr(r.err, "[qmlpipe] warm-up ") &&
                    strstr(r.err, "[qmlpipe] accounting "),
                "the default run: status %d, no warm-up or accounting line:\n%s", r.status,
                r.err ? r.err : "");
    qp_cli_free(&r);
  }
  unsetenv("QP_WARM_UP");

  /* --output writes there (relative to the current directory), not the config's output. */
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", "--output", "sub/job-1.h5", NULL};
    const char *words[] = {"results: sub/job-1.h5", NULL};
    expect("run_output", args, 0, words);
  }
  TEST_ASSERT(exists("sub/job-1.h5"), "run --output did not write sub/job-1.h5");
  TEST_ASSERT(!exists("ex/results.h5"), "run --output also wrote the config's output");
  check_covariance("sub/job-1.h5");
  {
    const char *args[] = {"report", "sub/job-1.h5", "--ranks", NULL};
    qp_cli_result r;
    qp_cli_run(qmlpipe, "report_ranks_order", args, &r);
    TEST_ASSERT(r.exited && r.status != 2, "report FILE --ranks is a usage error");
    qp_cli_free(&r);
  }
  {
    const char *args[] = {"run", "ex/config.yaml", "--quiet", NULL};
    const char *words[] = {"results: ex/results.h5", NULL};
    expect("run_config_output", args, 0, words);
  }
  {
    const char *args[] = {"report", "ex/config.yaml", NULL};
    const char *words[] = {"memory report: ex/results.h5", NULL};
    expect("report_config", args, 0, words);
  }
  {
    /* The sanitizer build: a tolerance its RSS meets (ASan's shadow and quarantine, untracked),
     * for the same check of the two paths. */
    const char *args[] = {"validate",     "ex/config.yaml",
                          "sub/job-1.h5", QP_TEST_SANITIZED ? "--tolerance" : NULL,
                          "100",          NULL};
    const char *words[] = {"results.h5", "job-1.h5", NULL};
    expect("validate_mixed", args, 0, words);
  }
  /* From another working directory the config's output is still beside the config. */
  if (chdir("sub") == 0) {
    const char *args[] = {"report", "../ex/config.yaml", NULL};
    const char *words[] = {"memory report: ../ex/results.h5", NULL};
    expect("report_other_dir", args, 0, words);
    if (chdir("..") != 0) return 1;
  }

  if (qp_test_failures == 0) (void)system("rm -rf ex sub");
  if (qp_test_failures) fprintf(stderr, "test_run_output_cli: %d failure(s)\n", qp_test_failures);
  return qp_test_failures != 0;
}
