/* test_sbatch_cli: `qmlpipe plan --sbatch FILE` and `plan --json` on the small example of
 * `qmlpipe simulate --example`. The job scripts for one process and for 2 ranks pass `bash -n`
 * (and shellcheck when installed), hold the #SBATCH lines of the plan (--mem=<MiB>M,
 * --ntasks, --time as HH:MM:SS) and an srun line whose --grid is the plan's (from --json);
 * each script, run without Slurm (a stand-in srun on PATH that runs the command itself for
 * --mpi=none, else mpiexec -n $SLURM_NTASKS), completes with its report and validation, and
 * its results equal a direct `qmlpipe run` to 1e-12 relative. `--json` parses (Debian's
 * /usr/bin/python3). The failure paths give a message and an exit status: an existing file
 * without --force (and --force replacing it), a missing or unwritable directory, bad numbers
 * and names; `run --grid` refuses 2x2x2, abc, 0x2 and a grid that is not the number of ranks.
 * `plan --sbatch --checkpoint DIR`: the script asks for --requeue, runs `run --checkpoint DIR
 * --resume` (completes, DIR left empty), and after an srun status that is not qmlpipe's own
 * (137, 1) requeues its job (a stand-in scontrol records `requeue JOBID`) while
 * SLURM_RESTART_COUNT is below 2; qmlpipe's own status (4), a third failure and a refused
 * requeue end it with srun's status and say why; --checkpoint without --sbatch is exit 2, in a
 * missing directory exit 8.
 *   test_sbatch_cli QMLPIPE CLS_FILE MPIEXEC|none */
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "qp_error.h"
#include "test_h5.h"
#include "test_util.h"

static char qmlpipe[PATH_MAX];

/* Runs a shell command line (output to `log`); returns its exit status. */
static int shell(const char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int shell(const char *log, const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(cmd, sizeof cmd - 64, fmt, ap);
  va_end(ap);
  if (n < 0 || n >= (int)sizeof cmd - 64) return -1;
  snprintf(cmd + n, sizeof cmd - (size_t)n, " > %s 2>&1", log);
  const int status = system(cmd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs qmlpipe with `args` (NULL-terminated); returns the exit status, output in r. */
static int qp(qp_cli_result *r, const char *const *args) {
  qp_cli_free(r);
  qp_cli_run(qmlpipe, "sbatch_cli", args, r);
  return r->exited ? r->status : -1;
}

/* The results of `got` against `ref`: every dataset to 1e-12 relative (NaN-aware). */
static void compare_results(const char *ref, const char *got) {
  static const char *const names[] = {"fisher", "spectra/yb", "spectra/noise_bias", "spectra/cl",
                                      "spectra/error"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    hsize_t na = 0, nb = 0;
    double *a = qp_test_h5_read_doubles(ref, names[k], &na),
           *b = qp_test_h5_read_doubles(got, names[k], &nb);
    TEST_ASSERT(a && b && na == nb && na > 0, "%s: cannot compare %s with %s", names[k], got, ref);
    if (a && b && na == nb) {
      const double rel = qp_test_max_rel_diff(a, b, (size_t)na);
      printf("  %-20s max rel. difference %.3e\n", names[k], rel);
      TEST_WITHIN(rel, 1e-12, "%s: %s against %s", names[k], got, ref);
    }
    free(a);
    free(b);
  }
}

/* The line of `text` that starts with `prefix`, copied to `line` ("" when none). */
static int line_starting(const char *text, const char *prefix, char *line, size_t size) {
  line[0] = '\0';
  for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
    if (strncmp(s, prefix, strlen(prefix)) == 0) {
      size_t n = strcspn(s, "\n");
      if (n >= size) n = size - 1;
      memcpy(line, s, n);
      line[n] = '\0';
      return 1;
    }
  }
  return 0;
}

/* Checks the #SBATCH lines and the srun line of a script; `grid` "RxC" or NULL (one task). */
static void check_script(const char *path, int ntasks, const char *grid) {
  char *text = qp_cli_slurp(path);
  char line[512];
  struct stat st;
  TEST_ASSERT(stat(path, &st) == 0 && (st.st_mode & S_IXUSR), "%s is not executable", path);
  TEST_ASSERT(strncmp(text, "#!/bin/bash\n", 12) == 0, "%s: no #!/bin/bash", path);
  TEST_ASSERT(shell("sbatch_cli_bash.log", "bash -n %s", path) == 0, "bash -n %s failed", path);
  if (shell("sbatch_cli_which.log", "command -v shellcheck") == 0)
    TEST_ASSERT(shell("sbatch_cli_shellcheck.log", "shellcheck %s", path) == 0,
                "shellcheck %s failed (sbatch_cli_shellcheck.log)", path);
  long long mem = 0;
  char unit = 0;
  TEST_ASSERT(line_starting(text, "#SBATCH --mem=", line, sizeof line) &&
                  sscanf(line, "#SBATCH --mem=%lld%c", &mem, &unit) == 2 && unit == 'M' &&
                  mem >= 256,
              "%s: no #SBATCH --mem=<MiB>M of at least the margin ('%s')", path, line);
  int n = 0;
  TEST_ASSERT(line_starting(text, "#SBATCH --ntasks=", line, sizeof line) &&
                  sscanf(line, "#SBATCH --ntasks=%d", &n) == 1 && n == ntasks,
              "%s: #SBATCH --ntasks is not %d ('%s')", path, ntasks, line);
  int h = -1, m = -1, s = -1;
  char rest = 0;
  TEST_ASSERT(line_starting(text, "#SBATCH --time=", line, sizeof line) &&
                  sscanf(line, "#SBATCH --time=%2d:%2d:%2d%c", &h, &m, &s, &rest) == 3 &&
                  strlen(line) == strlen("#SBATCH --time=HH:MM:SS") && m < 60 && s == 0 &&
                  h * 60 + m >= 10,
              "%s: #SBATCH --time is not HH:MM:SS of at least 10 minutes ('%s')", path, line);
  TEST_ASSERT(line_starting(text, "srun ", line, sizeof line) &&
                  strstr(line, grid ? "--mpi=pmix" : "--mpi=none"),
              "%s: srun line '%s' does not use %s", path, line, grid ? "pmix" : "none");
  /* A rank that dies must end the step, not leave the others waiting in MPI (issue 41). */
  if (grid)
    TEST_ASSERT(strstr(line, "--kill-on-bad-exit=1") != NULL,
                "%s: srun line '%s' lacks --kill-on-bad-exit=1", path, line);
  const char *run = strstr(text, "\"$qmlpipe\" run \"$config\" --output \"$results\"");
  TEST_ASSERT(run != NULL, "%s: no run line", path);
  if (run && grid) {
    char want[64];
    snprintf(want, sizeof want, "--grid %s --block ", grid);
    TEST_ASSERT(strstr(run, want) != NULL, "%s: the run line does not pass %s", path, want);
  } else if (run) {
    TEST_ASSERT(strstr(run, "--grid") == NULL || strstr(run, "--grid") > strchr(run, '\n'),
                "%s: a one-process run line passes --grid", path);
  }
  TEST_ASSERT(strstr(text, "\"$qmlpipe\" report \"$results\"") &&
                  strstr(text, "\"$qmlpipe\" validate \"$results\" --tolerance 0.05"),
              "%s: no report and validate of the results", path);
  free(text);
}

/* Runs a script without Slurm, the stand-in srun first on PATH. */
static int run_script(const char *script, int job_id, int ntasks) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return -1;
  return shell("sbatch_cli_job.log",
               "env PATH=%s/bin:\"$PATH\" SLURM_JOB_ID=%d SLURM_NTASKS=%d SLURM_SUBMIT_DIR=%s "
               "OMPI_MCA_rmaps_base_oversubscribe=1 bash %s",
               cwd, job_id, ntasks, cwd, script);
}

/* bin2: a stand-in srun that ends with $QP_STANDIN_SRUN (a step that failed so) and a
 * stand-in scontrol that appends its arguments to scontrol.log and ends with
 * $QP_STANDIN_SCONTROL (default 0). */
static void write_failing_slurm(void) {
  mkdir("bin2", 0755);
  FILE *f = fopen("bin2/srun", "w");
  if (!f) return;
  fprintf(f, "#!/bin/bash\nexit \"${QP_STANDIN_SRUN:?}\"\n");
  fclose(f);
  f = fopen("bin2/scontrol", "w");
  if (!f) return;
  fprintf(f, "#!/bin/bash\necho \"$*\" >>scontrol.log\nexit \"${QP_STANDIN_SCONTROL:-0}\"\n");
  fclose(f);
  chmod("bin2/srun", 0755);
  chmod("bin2/scontrol", 0755);
}

/* ckjob.sh after an srun that ended with `srun_status`, SLURM_RESTART_COUNT `restarts` (-1:
 * unset) and scontrol ending with `scontrol_status`: its exit status; scontrol.log and
 * sbatch_cli_requeue.log hold what it did and said. */
static int requeue_case(int srun_status, int restarts, int scontrol_status) {
  char cwd[PATH_MAX], count[64] = "";
  if (!getcwd(cwd, sizeof cwd)) return -1;
  if (restarts >= 0) snprintf(count, sizeof count, "SLURM_RESTART_COUNT=%d", restarts);
  remove("scontrol.log");
  return shell("sbatch_cli_requeue.log",
               "env PATH=%s/bin2:\"$PATH\" SLURM_JOB_ID=4242 %s QP_STANDIN_SRUN=%d "
               "QP_STANDIN_SCONTROL=%d bash ckjob.sh",
               cwd, count, srun_status, scontrol_status);
}

/* The stand-in for srun: options skipped; --mpi=none runs the command, else mpiexec. */
static void write_srun(const char *mpiexec) {
  mkdir("bin", 0755);
  FILE *f = fopen("bin/srun", "w");
  if (!f) return;
  fprintf(f,
          "#!/bin/bash\nmpi=pmix\nwhile [[ $# -gt 0 && $1 == -* ]]; do\n"
          "  case $1 in --mpi=*) mpi=${1#--mpi=} ;; esac\n  shift\ndone\n"
          "if [[ $mpi == none ]]; then exec \"$@\"; fi\n"
          "exec '%s' -n \"${SLURM_NTASKS:?}\" --oversubscribe --allow-run-as-root \"$@\"\n",
          mpiexec);
  fclose(f);
  chmod("bin/srun", 0755);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_sbatch_cli QMLPIPE CLS_FILE MPIEXEC|none\n");
    return 2;
  }
  int rc = qp_cli_setup(argc, argv, "test_sbatch_cli", "sbatch_cli", qmlpipe);
  if (rc != 0) return rc;
  char cls[PATH_MAX];
  if (argv[2][0] == '/')
    snprintf(cls, sizeof cls, "%s", argv[2]);
  else if (!realpath(argv[2], cls))
    return 1;
  const int mpi = strcmp(argv[3], "none") != 0;
  shell("sbatch_cli_rm.log", "rm -rf ex bin bin2 ro ck ckjob.sh ckjob2.sh");
  qp_cli_result r = {0};
  const int io = qp_err_exit_status(QP_ERR_IO);

  TEST_ASSERT(qp(&r, (const char *const[]){"simulate", "--example", "ex", "--cls", cls, NULL}) == 0,
              "simulate --example failed: %s", r.err);
  TEST_ASSERT(qp(&r, (const char *const[]){"run", "ex/config.yaml", "--quiet", "--output",
                                           "direct.h5", NULL}) == 0,
              "direct run failed: %s", r.err);

  /* One process. */
  TEST_ASSERT(
      qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "job1.sh", NULL}) == 0 &&
          strstr(r.out, "job script:"),
      "plan --sbatch job1.sh failed: %s", r.err);
  check_script("job1.sh", 1, NULL);

  /* 2 ranks, both on one node: the grid from --json. */
  TEST_ASSERT(shell("sbatch_cli_json.txt",
                    "%s plan ex/config.yaml --ranks 2 --ranks-per-node 2 "
                    "--json 2>/dev/null",
                    qmlpipe) == 0,
              "plan --json failed");
  TEST_ASSERT(shell("sbatch_cli_py.log",
                    "/usr/bin/python3 -c 'import json,sys; json.load(sys.stdin)'"
                    " < sbatch_cli_json.txt") == 0,
              "plan --json is not JSON (sbatch_cli_py.log)");
  TEST_ASSERT(shell("sbatch_cli_grid.txt",
                    "/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); "
                    "g=d[\"grid\"]; print(\"%%dx%%d\" %% (g[\"rows\"], g[\"cols\"]), "
                    "d[\"sbatch\"][\"ntasks\"], d[\"sbatch\"][\"time\"], d[\"fits\"])' "
                    "< sbatch_cli_json.txt") == 0,
              "the JSON lacks grid or sbatch");
  char *g = qp_cli_slurp("sbatch_cli_grid.txt");
  char grid[64] = "";
  int ntasks = 0;
  TEST_ASSERT(sscanf(g, "%63s %d", grid, &ntasks) == 2 && ntasks == 2 && strstr(g, "True"),
              "JSON figures '%s'", g);
  free(g);
  /* A string with a quote and a backslash is escaped: a config path that holds them. */
  shell("sbatch_cli_cp.log", "mkdir -p 'ex/a\"b\\c' && cp ex/*.fits ex/cls.txt ex/config.yaml "
                             "'ex/a\"b\\c/'");
  TEST_ASSERT(shell("sbatch_cli_py2.log",
                    "%s plan 'ex/a\"b\\c/config.yaml' --json 2>/dev/null | /usr/bin/python3 -c "
                    "'import json,sys; d=json.load(sys.stdin); assert d[\"config\"].endswith("
                    "chr(34)+\"b\"+chr(92)+\"c/config.yaml\"), d[\"config\"]'",
                    qmlpipe) == 0,
              "plan --json does not escape a path with a quote and a backslash");

  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--ranks", "2",
                                           "--ranks-per-node", "2", "--sbatch", "job2.sh", NULL}) ==
                  0,
              "plan --ranks 2 --sbatch job2.sh failed: %s", r.err);
  check_script("job2.sh", 2, grid);
  char *text = qp_cli_slurp("job2.sh");
  TEST_ASSERT(strstr(text, "#SBATCH --ntasks-per-node=2\n") && strstr(text, "#SBATCH --nodes=1\n"),
              "job2.sh: not 1 node of 2 tasks");
  free(text);

  /* The scripts, run without Slurm. */
  write_srun(mpi ? argv[3] : "mpiexec");
  rc = run_script("job1.sh", 101, 1);
  TEST_ASSERT(rc == 0, "job1.sh exited %d (sbatch_cli_job.log)", rc);
  if (rc == 0) compare_results("direct.h5", "ex/results-101.h5");
  if (mpi) {
    rc = run_script("job2.sh", 102, 2);
    TEST_ASSERT(rc == 0, "job2.sh exited %d (sbatch_cli_job.log)", rc);
    if (rc == 0) compare_results("direct.h5", "ex/results-102.h5");
  } else {
    printf("no MPI: the 2-rank script is not run\n");
  }

  /* --checkpoint: restartable, requeues itself after a status that is not qmlpipe's own. */
  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "ckjob.sh",
                                           "--checkpoint", "ck", NULL}) == 0,
              "plan --sbatch ckjob.sh --checkpoint ck failed: %s", r.err);
  check_script("ckjob.sh", 1, NULL);
  text = qp_cli_slurp("ckjob.sh");
  TEST_ASSERT(strstr(text, "#SBATCH --requeue\n") && strstr(text, "#SBATCH --open-mode=append\n") &&
                  strstr(text, "max_requeue=2\n") && strstr(text, "/ck'\n") &&
                  strstr(text, "--checkpoint \"$checkpoint\" --resume || rc=$?"),
              "ckjob.sh does not checkpoint, resume and requeue");
  free(text);
  rc = run_script("ckjob.sh", 103, 1);
  TEST_ASSERT(rc == 0, "ckjob.sh exited %d (sbatch_cli_job.log)", rc);
  if (rc == 0) compare_results("direct.h5", "ex/results-103.h5");
  TEST_ASSERT(shell("sbatch_cli_ck.log", "ls ck/stage-* 2>/dev/null | grep -q .") != 0,
              "ckjob.sh left a checkpoint in ck/");
  write_failing_slurm();
  static const struct {
    int srun, restarts, scontrol, requeued;
    const char *says;
  } cases[] = {
      {137, -1, 0, 1,
       "srun ended with status 137 (a rank killed or a node lost, not qmlpipe's "
       "own status): requeueing it (restart 1 of at most 2)"},
      {1, 1, 0, 1, "requeueing it (restart 2 of at most 2)"},
      {137, 2, 0, 0, "not requeued (already requeued 2 time(s))"},
      {4, -1, 0, 0, "srun ended with status 4; not requeued (qmlpipe's own status)"},
      {143, -1, 0, 0, "not requeued (qmlpipe's own status)"},
      {137, -1, 1, 0, "not requeued (scontrol requeue refused)"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    rc = requeue_case(cases[k].srun, cases[k].restarts, cases[k].scontrol);
    char *said = qp_cli_slurp("sbatch_cli_requeue.log");
    char *called = access("scontrol.log", F_OK) == 0 ? qp_cli_slurp("scontrol.log") : NULL;
    TEST_ASSERT(rc == cases[k].srun && said && strstr(said, cases[k].says),
                "srun status %d, restarts %d: exit %d, said '%s'", cases[k].srun, cases[k].restarts,
                rc, said ? said : "");
    TEST_ASSERT(cases[k].requeued || cases[k].scontrol
                    ? called && strcmp(called, "requeue 4242\n") == 0
                    : called == NULL,
                "srun status %d, restarts %d: scontrol called '%s'", cases[k].srun,
                cases[k].restarts, called ? called : "(not)");
    free(said);
    free(called);
  }
  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--checkpoint", "ck", NULL}) ==
                      2 &&
                  strstr(r.err, "--checkpoint is the job script's: it needs --sbatch FILE"),
              "--checkpoint without --sbatch: exit %d: %s", r.status, r.err);
  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "ckjob2.sh",
                                           "--checkpoint", "nodir/ck", NULL}) == io &&
                  strstr(r.err, "--checkpoint 'nodir/ck': cannot resolve the directory"),
              "--checkpoint in a missing directory: exit %d: %s", r.status, r.err);

  /* Failure paths. */
  TEST_ASSERT(
      qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "job1.sh", NULL}) == io &&
          strstr(r.err, "exists") && strstr(r.err, "--force"),
      "an existing script was not refused (%d): %s", r.status, r.err);
  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "job1.sh",
                                           "--force", "--cpus-per-task", "4", "--partition",
                                           "short", "--account", "cmb", NULL}) == 0,
              "--force did not replace the script: %s", r.err);
  text = qp_cli_slurp("job1.sh");
  TEST_ASSERT(strstr(text, "#SBATCH --cpus-per-task=4\n") &&
                  strstr(text, "#SBATCH --partition=short\n") &&
                  strstr(text, "#SBATCH --account=cmb\n"),
              "the replaced script lacks the new options");
  free(text);
  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "nodir/job.sh",
                                           NULL}) == io &&
                  strstr(r.err, "nodir/job.sh") && strstr(r.err, "'nodir' does not exist"),
              "a missing directory (%d): %s", r.status, r.err);
  if (geteuid() != 0) {
    mkdir("ro", 0555);
    TEST_ASSERT(qp(&r, (const char *const[]){"plan", "ex/config.yaml", "--sbatch", "ro/job.sh",
                                             NULL}) == io &&
                    strstr(r.err, "ro/job.sh") && strstr(r.err, "ermission"),
                "an unwritable directory (%d): %s", r.status, r.err);
  }
  static const char *const bad[][4] = {
      {"--cpus-per-task", "0", NULL}, {"--nodes", "abc", NULL},
      {"--ranks", "-1", NULL},        {"--mem-per-node", "lots", NULL},
      {"--partition", "a b", NULL},   {"--account", "x;rm", NULL},
      {"--sbatch", "", NULL},         {"--ranks", "4", "--nodes", "3"},
      {"--grid", "2x2x2", NULL},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    const char *args[8] = {"plan",    "ex/config.yaml", bad[k][0], bad[k][1],
                           bad[k][2], bad[k][3],        NULL};
    TEST_ASSERT(qp(&r, args) == 2 && strstr(r.err, "qmlpipe: ") && strstr(r.err, "usage:"),
                "plan %s %s: exit %d, not 2 with a message: %s", bad[k][0], bad[k][1], r.status,
                r.err);
  }
  static const char *const bad_grid[] = {"2x2x2", "abc", "0x2", "2x", "x2", "1x-1"};
  for (size_t k = 0; k < sizeof bad_grid / sizeof bad_grid[0]; ++k)
    TEST_ASSERT(
        qp(&r, (const char *const[]){"run", "ex/config.yaml", "--grid", bad_grid[k], NULL}) == 2 &&
            strstr(r.err, "--grid"),
        "run --grid %s: exit %d, not 2: %s", bad_grid[k], r.status, r.err);
  TEST_ASSERT(qp(&r, (const char *const[]){"run", "ex/config.yaml", "--block", "0", NULL}) == 2,
              "run --block 0: exit %d", r.status);
  TEST_ASSERT(qp(&r, (const char *const[]){"run", "ex/config.yaml", "--grid", "2x2", NULL}) == 2 &&
                  strstr(r.err, "needs 4 ranks"),
              "run --grid 2x2 on one process: exit %d: %s", r.status, r.err);
  TEST_ASSERT(qp(&r, (const char *const[]){"run", "--help", NULL}) == 0 &&
                  strstr(r.out, "--grid RxC") && strstr(r.out, "--block B"),
              "run --help does not document --grid and --block");
  TEST_ASSERT(qp(&r, (const char *const[]){"plan", "--help", NULL}) == 0 &&
                  strstr(r.out, "--sbatch FILE") && strstr(r.out, "--json"),
              "plan --help does not document --sbatch and --json");
  /* No temporary file left behind. */
  TEST_ASSERT(shell("sbatch_cli_ls.log", "ls job1.sh.* job2.sh.* 2>/dev/null | grep -q .") != 0,
              "a temporary job script was left behind");
  qp_cli_free(&r);
  return TEST_RETURN();
}
