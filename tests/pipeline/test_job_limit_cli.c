/* test_job_limit_cli: `qmlpipe run` (argv[1]) obeys the job's memory limit
 * (budget/job_limit.h) on the nside 8 example of `qmlpipe simulate --example` (C_ell argv[2]):
 *   (a) SLURM_MEM_PER_NODE below what cannot be chunked: exit 4 in well under a second of the
 *       child's CPU (its wall time is printed, not judged: load moves it), naming
 *       the source, the stage, the largest term and the shortfall; no results file;
 *   (b) SLURM_MEM_PER_NODE at 80% of the unchunked peak (plus the 64 MiB margin): fisher_run
 *       chunked, success, the chunks in the path reason, /budget memory_limit and
 *       memory_limit_source right, `report` printing them, the stages' RSS peaks under it;
 *   (c) RLIMIT_AS (`ulimit -v` in sh -c): exit 3 or 4 within seconds, never a hang;
 *   (d) a child memory cgroup (v1 or v2) with a limit, when /sys/fs/cgroup is writable here:
 *       the limit found and named; skipped with a message otherwise;
 *   (e) QMLPIPE_IGNORE_JOB_LIMIT=1 runs (b)'s limit unchunked; a malformed SLURM value is
 *       refused (exit 6) naming it. */
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "h5_attr.h"
#include "report_open.h"
#include "test_util.h"

static char qmlpipe[PATH_MAX];

static void run(const char *tag, const char *const *args, qp_cli_result *r) {
  qp_cli_run(qmlpipe, tag, args, r);
}

/* The lifetime peak (MiB, with overhead) `qmlpipe plan` prints for config.yaml. */
static double plan_peak(void) {
  const char *args[] = {"plan", "ex/config.yaml", NULL};
  qp_cli_result r;
  run("plan", args, &r);
  double peak = -1;
  const char *at = r.out ? strstr(r.out, "lifetime peak ") : NULL;
  if (at) sscanf(at, "lifetime peak %lf MiB", &peak);
  qp_cli_free(&r);
  return peak;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* (a) */
static void case_refused(void) {
  int before = qp_test_failures;
  setenv("SLURM_MEM_PER_NODE", "70", 1); /* 70 MiB less 64 MiB of margin: 6 MiB */
  const char *args[] = {"run", "ex/config.yaml", NULL};
  qp_cli_result r;
  run("refused", args, &r);
  unsetenv("SLURM_MEM_PER_NODE");
  TEST_ASSERT(r.exited && r.status == qp_err_exit_status(QP_ERR_BUDGET),
              "refused: exit %d (signal %d), expected %d", r.status, r.signal,
              qp_err_exit_status(QP_ERR_BUDGET));
  /* Refused before computing: the child's own CPU, not the wall, which moves with load. */
  TEST_ASSERT(qp_test_within(r.cpu_seconds, 5.0), "refused: took %.2f s of CPU", r.cpu_seconds);
  const char *words[] = {
      "exceeds the job's memory limit", "SLURM_MEM_PER_NODE=70", "stage ", "largest term", " by ",
      "nothing was allocated"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i)
    TEST_ASSERT(r.err && strstr(r.err, words[i]), "refused: stderr lacks '%s'", words[i]);
  TEST_ASSERT(!file_exists("ex/results.h5"), "refused: a results file was written");
  printf("(a) refused in %.3f s of CPU, %.3f s of wall: %s", r.cpu_seconds, r.seconds,
         r.err ? strstr(r.err, "qmlpipe: error") : "");
  if (qp_test_failures != before && r.err) fprintf(stderr, "--- stderr ---\n%s", r.err);
  qp_cli_free(&r);
}

/* (b) */
static void case_chunked(double peak_mib) {
  int before = qp_test_failures;
  const int mem = 64 + (int)(0.8 * peak_mib);
  char value[32];
  snprintf(value, sizeof value, "%d", mem);
  setenv("SLURM_MEM_PER_NODE", value, 1);
  const char *args[] = {"run", "ex/config.yaml", NULL};
  qp_cli_result r;
  run("chunked", args, &r);
  unsetenv("SLURM_MEM_PER_NODE");
  TEST_ASSERT(r.exited && r.status == 0, "chunked: exit %d (signal %d)", r.status, r.signal);
  char source[64];
  snprintf(source, sizeof source, "SLURM_MEM_PER_NODE=%d (MiB)", mem);
  TEST_ASSERT(r.err && strstr(r.err, "[qmlpipe] memory limit") && strstr(r.err, source),
              "chunked: stderr does not give the limit and '%s'", source);
  TEST_ASSERT(r.err && strstr(r.err, "chunks for the job's memory limit"),
              "chunked: the path reason names no chunks");
  /* The results file: /budget attributes, and the stages' measured RSS peaks. */
  hid_t file = -1, budget = -1;
  TEST_OK(qp_report_open("ex/results.h5", &file, &budget));
  if (budget >= 0) {
    int64_t limit = 0;
    char text[1024] = "";
    TEST_OK(qp_h5_attr_i64(budget, "/budget", "memory_limit", 1, &limit));
    TEST_OK(qp_h5_attr_string(budget, "/budget", "memory_limit_source", text, sizeof text));
    const double usable = (double)mem * 1048576.0 - 64.0 * 1048576.0;
    TEST_ASSERT(qp_test_within(fabs((double)limit - usable), 1.0),
                "chunked: memory_limit %lld, expected %.0f", (long long)limit, usable);
    TEST_ASSERT(strstr(text, source) != NULL, "chunked: memory_limit_source '%s'", text);
    const char *stages[] = {"covariance_setup", "basis_setup", "fisher_run", "spectra_run"};
    double worst = 0;
    for (int s = 0; s < 4; ++s) {
      hid_t g = H5Gopen2(budget, stages[s], H5P_DEFAULT);
      int64_t rss = -1;
      TEST_ASSERT(g >= 0, "chunked: no /budget/%s", stages[s]);
      if (g >= 0) {
        TEST_OK(qp_h5_attr_i64(g, stages[s], "rss_peak_bytes", 1, &rss));
        H5Gclose(g);
      }
      worst = qp_test_worst(worst, (double)rss);
    }
    printf("(b) SLURM_MEM_PER_NODE=%d MiB (unchunked peak %.1f MiB): usable %.1f MiB, largest "
           "stage RSS peak %.1f MiB\n",
           mem, peak_mib, usable / 1048576.0, worst / 1048576.0);
    TEST_ASSERT(worst > 0 && worst <= (double)mem * 1048576.0,
                "chunked: RSS peak %.1f MiB above the job's %d MiB", worst / 1048576.0, mem);
  }
  if (budget >= 0) H5Gclose(budget);
  if (file >= 0) H5Fclose(file);
  const char *report_args[] = {"report", "ex/results.h5", NULL};
  qp_cli_result rep;
  run("report", report_args, &rep);
  TEST_ASSERT(rep.exited && rep.status == 0 && rep.out && strstr(rep.out, "memory limit ") &&
                  strstr(rep.out, source),
              "report does not print the memory limit and its source");
  qp_cli_free(&rep);
  /* (e) The same limit ignored: unchunked. */
  setenv("SLURM_MEM_PER_NODE", value, 1);
  setenv("QMLPIPE_IGNORE_JOB_LIMIT", "1", 1);
  qp_cli_result ign;
  run("ignored", args, &ign);
  unsetenv("QMLPIPE_IGNORE_JOB_LIMIT");
  unsetenv("SLURM_MEM_PER_NODE");
  TEST_ASSERT(ign.exited && ign.status == 0 && ign.err && !strstr(ign.err, "chunks for") &&
                  strstr(ign.err, "QMLPIPE_IGNORE_JOB_LIMIT=1"),
              "ignored: exit %d, or chunked, or the note missing", ign.status);
  if (qp_test_failures != before && r.err) fprintf(stderr, "--- stderr ---\n%s", r.err);
  qp_cli_free(&ign);
  qp_cli_free(&r);
  remove("ex/results.h5");
}

/* (e) A malformed Slurm value. */
static void case_malformed(void) {
  setenv("SLURM_MEM_PER_NODE", "4G", 1);
  const char *args[] = {"run", "ex/config.yaml", NULL};
  qp_cli_result r;
  run("malformed", args, &r);
  unsetenv("SLURM_MEM_PER_NODE");
  TEST_ASSERT(r.exited && r.status == qp_err_exit_status(QP_ERR_INPUT) && r.err &&
                  strstr(r.err, "SLURM_MEM_PER_NODE='4G'"),
              "malformed: exit %d, stderr %s", r.status, r.err ? r.err : "");
  qp_cli_free(&r);
}

/* (c) */
static void case_rlimit_as(void) {
  if (QP_TEST_SANITIZED) { /* ASan reserves terabytes of shadow address space at start */
    printf("(c) skipped in the sanitizer build: ASan cannot start under ulimit -v\n");
    return;
  }
  int before = qp_test_failures;
  char script[PATH_MAX + 128];
  snprintf(script, sizeof script, "ulimit -v 200000 && exec '%s' run ex/config.yaml", qmlpipe);
  const char *args[] = {"-c", script, NULL};
  qp_cli_result r;
  qp_cli_run("/bin/sh", "rlimit", args, &r);
  TEST_ASSERT(r.exited && (r.status == 3 || r.status == 4),
              "rlimit_as: exit %d (signal %d), expected 3 or 4", r.status, r.signal);
  TEST_ASSERT(r.seconds < 30.0, "rlimit_as: took %.1f s", r.seconds);
  TEST_ASSERT(r.err && strstr(r.err, "RLIMIT_AS"), "rlimit_as: stderr does not name RLIMIT_AS");
  printf("(c) ulimit -v 200000: exit %d in %.2f s\n", r.status, r.seconds);
  if (qp_test_failures != before && r.err) fprintf(stderr, "--- stderr ---\n%s", r.err);
  qp_cli_free(&r);
}

/* (d) This process's memory cgroup, and a child of it made with a limit. */
static void case_cgroup(void) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  char line[1024], v1[512] = "", v2[512] = "";
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "0::", 3) == 0) snprintf(v2, sizeof v2, "%.500s", line + 3);
    char *m = strstr(line, ":memory:");
    if (m) snprintf(v1, sizeof v1, "%.500s", m + 8);
  }
  if (f) fclose(f);
  char dir[1200], file[1300];
  const char *limit_file = v1[0] ? "memory.limit_in_bytes" : "memory.max";
  snprintf(dir, sizeof dir, "/sys/fs/cgroup%s%s/qmlpipe_test_%d", v1[0] ? "/memory" : "",
           v1[0] ? v1 : v2, (int)getpid());
  if (mkdir(dir, 0755) != 0) {
    printf("(d) SKIPPED: cannot create a child cgroup %s: %s (cgroups not writable here)\n", dir,
           strerror(errno));
    return;
  }
  snprintf(file, sizeof file, "%s/%s", dir, limit_file);
  f = fopen(file, "w");
  int ok = f && fprintf(f, "%d\n", 512 << 20) > 0;
  if (f) ok = fclose(f) == 0 && ok;
  if (!ok) {
    printf("(d) SKIPPED: cannot write %s\n", file);
    rmdir(dir);
    return;
  }
  char script[PATH_MAX + 2600];
  snprintf(script, sizeof script, "echo $$ > '%s/cgroup.procs' && exec '%s' run ex/config.yaml",
           dir, qmlpipe);
  const char *args[] = {"-c", script, NULL};
  qp_cli_result r;
  qp_cli_run("/bin/sh", "cgroup", args, &r);
  TEST_ASSERT(r.exited && r.status == 0, "cgroup: exit %d", r.status);
  TEST_ASSERT(r.err && strstr(r.err, limit_file) && strstr(r.err, "qmlpipe_test_") &&
                  strstr(r.err, "0.500 GiB"),
              "cgroup: the 512 MiB limit of %s was not found: %s", dir, r.err ? r.err : "");
  printf("(d) child cgroup %s limited to 512 MiB: %s\n", dir, r.err ? "found" : "?");
  qp_cli_free(&r);
  remove("ex/results.h5");
  rmdir(dir);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: test_job_limit_cli QMLPIPE CLS\n");
    return 1;
  }
  char cls[PATH_MAX];
  if (!realpath(argv[2], cls)) return 1;
  int setup = qp_cli_setup(2, argv, "test_job_limit_cli", "job_limit_cli.d", qmlpipe);
  if (setup != 0) return setup;
  remove("ex/results.h5"); /* a results file of an earlier run must not pass for this one's */
  /* Only what each case sets. */
  const char *vars[] = {"SLURM_MEM_PER_NODE",   "SLURM_MEM_PER_CPU",
                        "SLURM_CPUS_PER_TASK",  "SLURM_NTASKS_PER_NODE",
                        "SLURM_TASKS_PER_NODE", "QMLPIPE_IGNORE_JOB_LIMIT"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i)
    unsetenv(vars[i]);
  const char *sim[] = {"simulate", "--example", "ex", "--cls", cls, "--nside", "8", NULL};
  qp_cli_result r;
  run("simulate", sim, &r);
  TEST_ASSERT(r.exited && r.status == 0, "simulate --example failed: %s", r.err ? r.err : "");
  qp_cli_free(&r);
  const double peak = plan_peak();
  TEST_ASSERT(peak > 0, "no lifetime peak from `qmlpipe plan`");
  if (qp_test_failures) return TEST_RETURN();
  case_refused();
  case_chunked(peak);
  case_malformed();
  case_rlimit_as();
  case_cgroup();
  return TEST_RETURN();
}
