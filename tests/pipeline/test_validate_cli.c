/* test_validate_cli: `qmlpipe validate` run as a child process of the real binary (argv[1]).
 *
 * A small temperature problem is run with `qmlpipe run`; then `qmlpipe validate` on its
 * results file:
 *   - with a loose tolerance (0.5) and no size floor: exit 0, a table naming every stage and
 *     the error distribution;
 *   - with a tolerance of 1e-7: exit qp_err_exit_status(QP_ERR_BUDGET), since no RSS
 *     measurement (whole pages, plus what the libraries hold) equals its prediction that
 *     closely, and the failing stages listed;
 *   - on a missing file and on a file that is not HDF5: the QP_ERR_IO status, naming the file;
 *   - without arguments, and with a bad --tolerance: exit 2 with the usage;
 *   - with --sacct (argv[2]: tests/data/sacct/job1_cpu.sacct, captured from a job of the real
 *     Slurm fixture) and --cgroup-peak (argv[3], the fixture's TaskEpilog file): the job table,
 *     exit 0 at a tolerance the small problem meets against that bigger job, exit 4 at 5%;
 *     variants written here: K suffixes, --parsable's trailing '|', columns reordered (exit
 *     0); no header, a cut line, a bad MaxRSS, no srun step, a FAILED step (exit 6, naming
 *     the file and line where there is one); an OUT_OF_MEMORY step (exit 4); --sacct with two
 *     results files (exit 2); --sacct-gather cgroup against linux: the rank's predictions
 *     differ by the baseline's shared pages the table states; a bad --sacct-gather (exit 2).
 * Everything happens in a private directory (validate_cli.d) under the working directory;
 * its files are removed at the start and, when every check passed, at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "fixture.h"
#include "test_util.h"

extern char **environ;

#define WORK_DIR "validate_cli.d"
#define NAME "val" /* the fixture's file prefix */

static char qmlpipe_path[PATH_MAX];
static const char *const stages[] = {"covariance_setup", "basis_setup", "fisher_run",
                                     "spectra_run"};

typedef qp_cli_result run_result;

/* Runs `qmlpipe args...` (NULL-terminated) with stdout in <tag>.out, stderr in <tag>.err. */
static void run_qmlpipe(const char *tag, const char *const *args, run_result *r) {
  qp_cli_run(qmlpipe_path, tag, args, r);
}

/* Checks the exit status; on any failure of the case prints the child's output. */
static void expect_status(const char *tag, const run_result *r, int want, int before) {
  TEST_ASSERT(r->exited && r->status == want, "%s: exit status %d (exited %d), expected %d", tag,
              r->status, r->exited, want);
  if (qp_test_failures != before)
    fprintf(stderr, "  --- stdout of %s ---\n%s  --- stderr ---\n%s  ---\n", tag, r->out, r->err);
  else
    printf("case %s: ok (exit %d)\n", tag, r->status);
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup(argc, argv, "test_validate_cli", WORK_DIR, qmlpipe_path);
  if (setup != 0) return setup;

  /* nside 16, |b| > 30 deg (1536 pixels), ell 2..21 in two bins: C is 18 MiB, a second. */
  qp_fixture f = {.name = NAME,
                  .nside = 16,
                  .cut_deg = 30,
                  .ell_min = 2,
                  .lmax = 21,
                  .lmax_signal = 21,
                  .bin_width = 10,
                  .sim_lmax = 21,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .dl_flat = 100.0,
                  .seed = 11};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_config_free(&cfg);
  FILE *yaml = fopen(NAME ".yaml", "w");
  TEST_ASSERT(yaml, "cannot write " NAME ".yaml");
  if (!yaml) return TEST_RETURN();
  fprintf(yaml, "maps: [" NAME "_map_0000.fits]\nmask: " NAME "_mask.fits\nfields: T\n"
                "cls: " NAME "_cls.txt\nnoise: {variance: 1.0}\nspectra: [TT]\nell_min: 2\n"
                "lmax: 21\nbin_width: 10\npath: pixel_direct\nbackend: cpu\n"
                "output: " NAME "_results.h5\n");
  TEST_ASSERT(fclose(yaml) == 0, "cannot write " NAME ".yaml");
  if (qp_test_failures) return TEST_RETURN();

  run_result r;
  int before = qp_test_failures;
  const char *run_args[] = {"run", NAME ".yaml", "--quiet", NULL};
  run_qmlpipe("run", run_args, &r);
  expect_status("run", &r, 0, before);
  qp_cli_free(&r);
  if (qp_test_failures) return TEST_RETURN();

  /* 1. Loose tolerance: exit 0, every stage in the table, the distribution printed. In the
   *    sanitizer build ASan's shadow and quarantine put RSS 50% and more above the prediction:
   *    a tolerance of 100 (10000%) there, for the same table. */
  before = qp_test_failures;
  const char *loose_tolerance = QP_TEST_SANITIZED ? "100" : "0.5";
  const char *loose[] = {"validate",         "--tolerance", loose_tolerance, "--min-bytes", "0",
                         NAME "_results.h5", NULL};
  run_qmlpipe("loose", loose, &r);
  for (size_t s = 0; s < sizeof stages / sizeof stages[0]; ++s)
    TEST_ASSERT(strstr(r.out, stages[s]) != NULL, "loose: the table lacks stage %s", stages[s]);
  TEST_ASSERT(strstr(r.out, "pixel_direct") != NULL, "loose: the table lacks path_used");
  TEST_ASSERT(strstr(r.out, "1536") != NULL, "loose: the table lacks n_pix 1536");
  TEST_ASSERT(strstr(r.out, "error distribution") != NULL, "loose: no error distribution");
  TEST_ASSERT(strstr(r.out, "4 judged stage(s), 0 failed") != NULL,
              "loose: expected '4 judged stage(s), 0 failed'");
  TEST_ASSERT(strstr(r.out, "FAIL") == NULL, "loose: a stage is marked FAIL");
  expect_status("loose", &r, 0, before);
  qp_cli_free(&r);

  /* 2. A tolerance no measurement meets: QP_ERR_BUDGET, and the failures named. */
  before = qp_test_failures;
  const char *tight[] = {"validate", "--tolerance",      "0.0000001", "--min-bytes",
                         "0",        NAME "_results.h5", NULL};
  run_qmlpipe("tight", tight, &r);
  TEST_ASSERT(strstr(r.out, "failed:") != NULL, "tight: stdout lists no failed stage");
  for (size_t s = 0; s < sizeof stages / sizeof stages[0]; ++s)
    TEST_ASSERT(strstr(r.out, stages[s]) != NULL, "tight: the table lacks stage %s", stages[s]);
  TEST_ASSERT(strstr(r.err, "memory validation failed") != NULL,
              "tight: stderr lacks 'memory validation failed'");
  expect_status("tight", &r, qp_err_exit_status(QP_ERR_BUDGET), before);
  qp_cli_free(&r);

  /* 3. A missing file: QP_ERR_IO, naming it. */
  before = qp_test_failures;
  const char *missing[] = {"validate", "--min-bytes", "0", "no_such_results.h5", NULL};
  run_qmlpipe("missing", missing, &r);
  TEST_ASSERT(strstr(r.err, "no_such_results.h5") != NULL, "missing: stderr lacks the file");
  expect_status("missing", &r, qp_err_exit_status(QP_ERR_IO), before);
  qp_cli_free(&r);

  /* 4. A file that is not HDF5 (a text file; a .yaml would stand for its config's output),
   *    beside the good one: QP_ERR_IO, naming it. */
  before = qp_test_failures;
  FILE *text = fopen(NAME "_notes.txt", "w");
  if (text) {
    fputs("not a results file\n", text);
    fclose(text);
  }
  const char *not_h5[] = {"validate", NAME "_results.h5", NAME "_notes.txt", NULL};
  run_qmlpipe("not_h5", not_h5, &r);
  TEST_ASSERT(strstr(r.err, NAME "_notes.txt") != NULL, "not_h5: stderr lacks the file");
  expect_status("not_h5", &r, qp_err_exit_status(QP_ERR_IO), before);
  qp_cli_free(&r);

  /* 5. No arguments; a bad tolerance: usage, exit 2. */
  before = qp_test_failures;
  const char *none[] = {"validate", NULL};
  run_qmlpipe("no_args", none, &r);
  TEST_ASSERT(strstr(r.err, "usage: qmlpipe validate") != NULL, "no_args: no usage on stderr");
  expect_status("no_args", &r, 2, before);
  qp_cli_free(&r);
  before = qp_test_failures;
  const char *bad_tol[] = {"validate", "--tolerance", "two", NAME "_results.h5", NULL};
  run_qmlpipe("bad_tolerance", bad_tol, &r);
  TEST_ASSERT(strstr(r.err, "--tolerance") != NULL, "bad_tolerance: stderr lacks --tolerance");
  expect_status("bad_tolerance", &r, 2, before);
  qp_cli_free(&r);

  /* 6. Slurm's accounting (--sacct, --cgroup-peak). */
  if (argc >= 4) {
    const char *sacct = argv[2], *peaks = argv[3];
    before = qp_test_failures;
    const char *ok[] = {
        "validate", "--tolerance", "0.95",          "--min-bytes", "0", NAME "_results.h5",
        "--sacct",  sacct,         "--cgroup-peak", peaks,         NULL};
    run_qmlpipe("sacct_ok", ok, &r);
    TEST_ASSERT(strstr(r.out, "sacct MaxRSS of step 1.0 (task 0, localhost)") != NULL,
                "sacct_ok: no rank row for step 1.0");
    TEST_ASSERT(strstr(r.out, "402.77") != NULL, "sacct_ok: MaxRSS 402.77 MiB not shown");
    TEST_ASSERT(strstr(r.out, "416.43") != NULL, "sacct_ok: cgroup peak 416.43 MiB not shown");
    TEST_ASSERT(strstr(r.out, "every step COMPLETED") != NULL, "sacct_ok: no COMPLETED line");
    expect_status("sacct_ok", &r, 0, before);
    qp_cli_free(&r);

    before = qp_test_failures;
    const char *tight_job[] = {"validate",         "--tolerance", "0.05", "--min-bytes", "0",
                               NAME "_results.h5", "--sacct",     sacct,  NULL};
    run_qmlpipe("sacct_tight", tight_job, &r);
    TEST_ASSERT(strstr(r.out, "FAIL") != NULL, "sacct_tight: no FAIL in the job table");
    TEST_ASSERT(strstr(r.out, "(no --cgroup-peak: not compared)") != NULL,
                "sacct_tight: the node row should say it is not compared");
    expect_status("sacct_tight", &r, qp_err_exit_status(QP_ERR_BUDGET), before);
    qp_cli_free(&r);

    /* name, text, expected status, text expected on stderr (NULL: none checked) */
    const struct {
      const char *name, *text;
      int status;
      const char *err;
    } variants[] = {
        {"sacct_suffix.txt",
         "JobID|JobName|State|ExitCode|MaxRSS\n1|qmlpipe|COMPLETED|0:0|\n"
         "1.batch|batch|COMPLETED|0:0|3868K\n1.0|qmlpipe|COMPLETED|0:0|412432K\n",
         0, NULL},
        {"sacct_parsable.txt",
         "JobID|State|MaxRSS|\n1|COMPLETED||\n1.batch|COMPLETED|3960832|\n"
         "1.0|COMPLETED|0.39G|\n",
         0, NULL},
        {"sacct_reordered.txt",
         "MaxRSS|State|JobID\n|COMPLETED|7\n3960832|COMPLETED|7.batch\n1000|COMPLETED|7.0\n"
         "422330368|COMPLETED|7.1\n",
         0, NULL},
        {"sacct_noheader.txt", "1|qmlpipe|COMPLETED|0:0|\n1.0|qmlpipe|COMPLETED|0:0|422330368\n", 6,
         "sacct_noheader.txt:1: the header lacks the column JobID State MaxRSS"},
        {"sacct_nopipe.txt", "JobID State MaxRSS\n1 COMPLETED 3\n", 6,
         "sacct_nopipe.txt:1: not `sacct --parsable2` output"},
        {"sacct_cut.txt",
         "JobID|JobName|State|ExitCode|MaxRSS\n1|qmlpipe|COMPLETED|0:0|\n1.0|qmlpipe|COMPL\n", 6,
         "sacct_cut.txt:3: 3 field(s), the header has 5"},
        {"sacct_badrss.txt", "JobID|State|MaxRSS\n1|COMPLETED|\n1.0|COMPLETED|400Q\n", 6,
         "sacct_badrss.txt:3: MaxRSS '400Q' of 1.0 is not a size"},
        {"sacct_nostep.txt", "JobID|State|MaxRSS\n1|COMPLETED|\n1.batch|COMPLETED|422330368\n", 6,
         "has no srun step"},
        {"sacct_failed.txt",
         "JobID|State|MaxRSS\n1|FAILED|\n1.batch|FAILED|3960832\n"
         "1.0|COMPLETED|422330368\n",
         6, "job 1 did not complete (1 FAILED, 1.batch FAILED)"},
        {"sacct_oom.txt",
         "JobID|State|MaxRSS\n1|FAILED|\n1.batch|FAILED|3960832\n"
         "1.0|OUT_OF_MEMORY|301596672\n",
         4, "ran out of memory"},
        {"sacct_empty.txt", "", 6, "no sacct header line"},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
      before = qp_test_failures;
      qp_test_write_text(variants[v].name, variants[v].text);
      const char *args[] = {"validate",         "--tolerance", "0.95",           "--min-bytes", "0",
                            NAME "_results.h5", "--sacct",     variants[v].name, NULL};
      run_qmlpipe(variants[v].name, args, &r);
      if (variants[v].err)
        TEST_ASSERT(strstr(r.err, variants[v].err) != NULL, "%s: stderr lacks '%s'",
                    variants[v].name, variants[v].err);
      expect_status(variants[v].name, &r,
                    variants[v].status == 0   ? 0
                    : variants[v].status == 4 ? qp_err_exit_status(QP_ERR_BUDGET)
                                              : qp_err_exit_status(QP_ERR_INPUT),
                    before);
      qp_cli_free(&r);
    }

    /* jobacct_gather/cgroup (default) counts anonymous memory: the rank's prediction is the
     * linux one less the baseline's shared pages, which the table states. */
    before = qp_test_failures;
    double pred_gather[2] = {NAN, NAN}, shared = NAN;
    for (int g = 0; g < 2; ++g) {
      const char *args[] = {"validate", "--tolerance", "0.95",           NAME "_results.h5",
                            "--sacct",  sacct,         "--sacct-gather", g ? "linux" : "cgroup",
                            NULL};
      run_qmlpipe(g ? "sacct_gather_linux" : "sacct_gather_cgroup", args, &r);
      const char *row = strstr(r.out, "\n  rank ");
      const char *bar = row ? strchr(row + 1, '|') : NULL;
      if (bar) pred_gather[g] = strtod(bar + 1, NULL);
      const char *note = strstr(r.out, "less its baseline's file-backed and shared pages, ");
      if (!g && note)
        shared = strtod(note + strlen("less its baseline's file-backed and shared pages, "), NULL);
      TEST_ASSERT(g || note, "sacct_gather_cgroup: no line on the shared pages taken off");
      expect_status(g ? "sacct_gather_linux" : "sacct_gather_cgroup", &r, 0, before);
      qp_cli_free(&r);
    }
    /* A process with libraries mapped has some file-backed pages (several MiB). */
    TEST_ASSERT(shared > 1.0, "sacct_gather: shared pages %.2f MiB, expected > 1 MiB", shared);
    /* MiB printed with 2 decimals: each figure within 0.005 */
    TEST_WITHIN(fabs(pred_gather[1] - pred_gather[0] - shared), 0.011,
                "sacct_gather: linux %.2f - cgroup %.2f MiB should be the shared %.2f MiB",
                pred_gather[1], pred_gather[0], shared);
    const char *bad_gather[] = {
        "validate", NAME "_results.h5", "--sacct", sacct, "--sacct-gather", "slurm", NULL};
    run_qmlpipe("sacct_gather_bad", bad_gather, &r);
    TEST_ASSERT(strstr(r.err, "--sacct-gather expects cgroup or linux") != NULL,
                "sacct_gather_bad: stderr lacks the expected values");
    expect_status("sacct_gather_bad", &r, 2, before);
    qp_cli_free(&r);

    before = qp_test_failures;
    const char *two[] = {"validate", NAME "_results.h5", NAME "_results.h5", "--sacct", sacct,
                         NULL};
    run_qmlpipe("sacct_two_files", two, &r);
    TEST_ASSERT(strstr(r.err, "exactly one results file") != NULL,
                "sacct_two_files: stderr lacks 'exactly one results file'");
    expect_status("sacct_two_files", &r, 2, before);
    qp_cli_free(&r);
  }
  printf("%d failed check(s)\n", qp_test_failures);
  if (qp_test_failures == 0) qp_cli_remove_files(".");
  return TEST_RETURN();
}
