/* bench_run.c: one problem's runs on one route, each `qmlpipe run` a spawned process whose
 * output is parsed, and the measurements made in a forked child (bench.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_floor.h"
#include "clock.h"
#include "flop_rate.h"
#include "inputs.h"
#include "planner.h"
#include "warm_up.h"

extern char **environ;

/* Reads the stage table, path and baseline from `qmlpipe run`'s stdout, the warm-up's seconds
 * from its progress lines (-1 when it does not print them: a qmlpipe before they existed). */
static qp_err qp_bench_parse(const char *out, const char *err, qp_bench_run *run) {
  char line[1024];
  int stages = 0;
  FILE *f = fopen(out, "r");
  QP_CHECK(f, QP_ERR_IO, "cannot read '%s'", out);
  while (fgets(line, sizeof line, f)) {
    char name[64];
    double seconds, rate;
    const char *path = strstr(line, ", path ");
    if (strncmp(line, "qmlpipe run:", 12) == 0 && path)
      snprintf(run->path, sizeof run->path, "%.*s", (int)strcspn(path + 7, "\n"), path + 7);
    (void)sscanf(line, "baseline RSS %lf MiB", &run->baseline_mib);
    if (sscanf(line, "%63s %lf %lf", name, &seconds, &rate) == 3)
      for (int s = 0; s < QP_STAGE_COUNT; ++s)
        if (strcmp(name, qp_stage_name((qp_stage_id)s)) == 0) {
          run->stage_seconds[s] = seconds;
          run->stage_rate[s] = rate;
          ++stages;
        }
  }
  fclose(f);
  QP_CHECK(stages == QP_STAGE_COUNT, QP_ERR_INTERNAL, "'%s' holds %d of the %d stages' lines", out,
           stages, QP_STAGE_COUNT);
  run->warm_up = run->accounting = run->sampler_cpu = run->commit_seconds = run->commit_mib = -1;
  f = fopen(err, "r");
  QP_CHECK(f, QP_ERR_IO, "cannot read '%s'", err);
  while (fgets(line, sizeof line, f)) {
    (void)sscanf(line, "[qmlpipe] warm-up %lf s", &run->warm_up);
    const char *sampler = strstr(line, "timeline sampler ");
    if (sscanf(line, "[qmlpipe] accounting %lf s", &run->accounting) == 1 && sampler)
      (void)sscanf(sampler, "timeline sampler %lf s CPU", &run->sampler_cpu);
    const char *commits = strstr(line, "page commits ");
    if (commits)
      (void)sscanf(commits, "page commits %lf s for %lf MiB", &run->commit_seconds,
                   &run->commit_mib);
  }
  fclose(f);
  return QP_OK;
}

/* One `qmlpipe run CONFIG`, its stdout and stderr into files beside the config, timed from the
 * spawn to the exit; its peak RSS from the kernel's accounting of the child. `warm_up` 0 runs
 * it with QP_WARM_UP=0 (warm_up.h): the run without the warm-up, whose wall time against the
 * default run's is what the warm-up costs. */
static qp_err qp_bench_spawn(const char *qmlpipe, const char *config, const char *route, int k,
                             int warm_up, qp_bench_run *run) {
  char out[PATH_MAX + 32], err[PATH_MAX + 32];
  const char *tag = warm_up ? "" : "-nowarm";
  snprintf(out, sizeof out, "%.*s%s-%d.out", (int)(strlen(config) - 5), config, tag, k);
  snprintf(err, sizeof err, "%.*s%s-%d.err", (int)(strlen(config) - 5), config, tag, k);
  /* This environment less any QP_WARM_UP, plus QP_WARM_UP=0 when asked. */
  int n_env = 0;
  while (environ[n_env])
    ++n_env;
  char **env = malloc((size_t)(n_env + 2) * sizeof *env);
  QP_CHECK(env, QP_ERR_NOMEM, "qmlpipe-bench: out of memory for the environment");
  int kept = 0;
  for (int i = 0; i < n_env; ++i)
    if (strncmp(environ[i], "QP_WARM_UP=", 11) != 0) env[kept++] = environ[i];
  if (!warm_up) env[kept++] = "QP_WARM_UP=0";
  env[kept] = NULL;
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&io, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  char *argv[] = {(char *)qmlpipe, "run", (char *)config, NULL};
  pid_t pid;
  fflush(NULL);
  const double t0 = qp_clock_seconds();
  const int rc = posix_spawn(&pid, qmlpipe, &io, NULL, argv, env);
  posix_spawn_file_actions_destroy(&io);
  free(env);
  QP_CHECK(rc == 0, QP_ERR_IO, "cannot start '%s': %s", qmlpipe, strerror(rc));
  int status = 0;
  struct rusage usage;
  QP_CHECK(wait4(pid, &status, 0, &usage) == pid, QP_ERR_IO, "wait for '%s': %s", qmlpipe,
           strerror(errno));
  memset(run, 0, sizeof *run);
  run->wall = qp_clock_seconds() - t0;
  run->peak_mib = (double)usage.ru_maxrss / 1024.0;
  QP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, QP_ERR_INTERNAL,
           "`%s run %s` (route %s) failed: status %d; see '%s'", qmlpipe, config, route, status,
           err);
  return qp_bench_parse(out, err, run);
}

/* Runs `measure` in a forked child and reads its figures back through a pipe. The dgemm and
 * the floor allocate hundreds of MiB; done here they would raise this process's resident
 * high-water mark, which Linux hands on to every child spawned afterwards (exec records the
 * old address space's high-water mark in the child's ru_maxrss), so each run's "peak RSS"
 * would have been this process's (227.5 MiB on T nside 16 after the 3000^3 dgemm, where the
 * run's own is ~140 MiB). This process itself never calls BLAS, so forking is safe. */
qp_err qp_bench_in_child(qp_bench_measure measure, const void *arg, qp_bench_measured *out) {
  int fd[2];
  QP_CHECK(pipe(fd) == 0, QP_ERR_IO, "qmlpipe-bench: pipe: %s", strerror(errno));
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    qp_bench_measured m;
    memset(&m, 0, sizeof m);
    const qp_err err = measure(arg, &m);
    if (err != QP_OK) {
      qp_error_print(stderr, 1);
      _exit(qp_err_exit_status(err));
    }
    _exit(write(fd[1], &m, sizeof m) == (ssize_t)sizeof m ? 0 : 8);
  }
  close(fd[1]);
  QP_CHECK(pid > 0, QP_ERR_IO, "qmlpipe-bench: fork: %s", strerror(errno));
  ssize_t got = 0, n;
  while (got < (ssize_t)sizeof *out &&
         (n = read(fd[0], (char *)out + got, sizeof *out - (size_t)got)) > 0)
    got += n;
  close(fd[0]);
  int status = 0;
  QP_CHECK(waitpid(pid, &status, 0) == pid, QP_ERR_IO, "qmlpipe-bench: wait: %s", strerror(errno));
  QP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof *out,
           QP_ERR_LIBRARY, "qmlpipe-bench: the measuring child failed (status %d)", status);
  return QP_OK;
}

qp_err qp_bench_dgemm(const void *arg, qp_bench_measured *out) {
  return qp_dgemm_rate(*(const int *)arg, &out->value[0], NULL);
}

/* The floor of the problem the config describes, on the route the run took. */
typedef struct qp_bench_floor_arg {
  const char *config;
  const qp_bench_run *run;
} qp_bench_floor_arg;

static qp_err qp_bench_floor_measure(const void *arg, qp_bench_measured *out) {
  const qp_bench_floor_arg *a = arg;
  qp_config cfg;
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  p.plan = &p.plan_store; /* this command's: the route the run took replaces the planned one */
  qp_err err = qp_config_load(a->config, &cfg);
  const qp_limit_inputs limit = {.config = err == QP_OK ? cfg.host_limit : 0.0};
  qp_noise_figures noise;
  if (err == QP_OK) err = qp_plan_limit(&limit, &p.plan_store);
  if (err == QP_OK) err = qp_inputs_plan(&p, &noise);
  if (err == QP_OK) err = qp_plan_build(&p, &noise, &p.plan_store);
  if (err == QP_OK) {
    const char *path = a->run->path;
    p.plan_store.path_used =
        strncmp(path, "harmonic", 8) == 0 ? QP_PATH_HARMONIC : QP_PATH_PIXEL_DIRECT;
    p.plan_store.smw = strstr(path, "smw") != NULL;
    /* The kernels in the state they meet in a run: OpenBLAS's pool settled as main.c leaves
     * it, glibc's thresholds and OpenBLAS's buffers as the warm-up leaves them. Measured cold
     * in a fresh process the floor's potrf took 0.050-0.057 s at n 1984 against 0.035-0.039
     * in a run (its job tables mapped and unmapped per recursion step, its buffers' first
     * pages), which flattered wall / floor by ~7% on T nside 16 (docs/benchmarks.md). */
    (void)qp_blas_threads_settle();
    qp_meter_sample warm;
    qp_driver_warm_up(p.n_pix, qp_plan_blas_width(&p, p.plan, p.plan->model_dims.path),
                      qp_driver_warm_up_kernels(p.plan->model_dims.path), &warm);
    err = qp_bench_floor(&p, &out->value[0], &out->value[1], &out->value[2], out->detail,
                         sizeof out->detail);
  }
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return err;
}

static void qp_bench_print_run(const qp_bench_run *r, int k, int repeat, int warm_up) {
  double stages = 0;
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    stages += r->stage_seconds[s];
  char warm[32] = "skipped";
  if (warm_up) snprintf(warm, sizeof warm, "not printed");
  if (r->warm_up >= 0) snprintf(warm, sizeof warm, "%.3f s", r->warm_up);
  printf("  run %d of %d%s: wall %.3f s, stages %.3f s, outside %.3f s (warm-up %s), baseline "
         "RSS %.1f MiB, peak RSS %.1f MiB\n",
         k, repeat, warm_up ? "" : " (QP_WARM_UP=0)", r->wall, stages, r->wall - stages, warm,
         r->baseline_mib, r->peak_mib);
}

/* What the accounting costs the best run: the warm-up, by the difference of the best walls
 * with and without it (the stages pay the libraries' first use themselves without it, so its
 * own seconds overstate it), at most its own seconds (a difference above them is the spread of
 * the runs: 0.24 s of a 3.5 s run against a 0.09 s warm-up was seen with 3 runs each), and what
 * the run timed of its meters, stage records, timeline and report, with the sampler thread's
 * CPU seconds. */
static void qp_bench_print_accounting(const qp_bench_run *best, const qp_bench_run *bare,
                                      int repeat) {
  if (best->accounting < 0) return; /* a qmlpipe before the line existed */
  const double inside = best->accounting + (best->sampler_cpu > 0 ? best->sampler_cpu : 0.0);
  printf("  %-34s %9.3f %9s %8.1f%% of the wall (meters, stage records, timeline start and "
         "stop, report)\n",
         "accounting inside the run", best->accounting, "", 100.0 * best->accounting / best->wall);
  printf("  %-34s %9.3f %9s %8.1f%% of the wall (CPU seconds of its thread)\n", "timeline sampler",
         best->sampler_cpu, "", 100.0 * best->sampler_cpu / best->wall);
  if (!bare) return;
  const double difference = best->wall - bare->wall;
  const int capped = best->warm_up >= 0 && difference > best->warm_up;
  const double warm = capped ? best->warm_up : difference;
  printf("  %-34s %9.3f %9s %8.1f%% of the wall (best of %d with it %.3f s, without %.3f s%s)\n",
         "warm-up, its cost in the wall", warm, "", 100.0 * warm / best->wall, repeat, best->wall,
         bare->wall, capped ? "; the difference, above its own seconds, is the runs' spread" : "");
  printf("  %-34s %9.3f %9s %8.1f%% of the wall (the three above)\n", "accounting's own cost",
         warm + inside, "", 100.0 * (warm + inside) / best->wall);
}

/* Two costs of the run that the floor leaves out, each with the ratio it leaves: the
 * projection's second triangular solve (Z = L^-T Y for the noise bias, as large as the floor's
 * first; SMW's floor holds its bias's getrs), and the commits of the run's fresh pages (the
 * floor fills its operands before its clock starts), which on this project's VMs cost 0.6-1
 * GB/s when the host has taken the guest's freed pages back and ~20 GB/s when it has not. */
static void qp_bench_print_beyond_floor(const qp_bench_run *best, double floor, double bias_solve) {
  if (floor <= 0) return;
  double with = floor;
  if (bias_solve > 0) {
    with += bias_solve;
    printf("  %-34s %9.3f %9s %8.1f%% of the wall; wall / (floor + it) %.2f\n",
           "noise bias's trsm, outside floor", bias_solve, "", 100.0 * bias_solve / best->wall,
           best->wall / with);
  }
  if (best->commit_seconds >= 0) {
    with += best->commit_seconds;
    printf("  %-34s %9.3f %9s %8.1f%% of the wall (%.1f MiB, %.2f GB/s); wall / (floor + the "
           "above) %.2f\n",
           "page commits of fresh blocks", best->commit_seconds, "",
           100.0 * best->commit_seconds / best->wall, best->commit_mib,
           best->commit_seconds > 0 ? best->commit_mib * 1048576.0 / best->commit_seconds * 1e-9
                                    : 0.0,
           best->wall / with);
  }
}

/* One problem on one route: `repeat` runs (each followed by one without the warm-up when
 * `ab`, so that both see the same load), the best one's table, the floor. */
qp_err qp_bench_route(const char *qmlpipe, const char *dir, const qp_bench_problem *b,
                      const char *route, int repeat, int ab, double dgemm, double *wall) {
  char config[PATH_MAX];
  QP_CALL(qp_bench_config(dir, b, route, config, sizeof config));
  qp_bench_run best = {0}, bare = {0}, run;
  for (int k = 1; k <= repeat; ++k) {
    QP_CALL(qp_bench_spawn(qmlpipe, config, route, k, 1, &run));
    qp_bench_print_run(&run, k, repeat, 1);
    if (k == 1 || run.wall < best.wall) best = run;
    if (!ab) continue;
    QP_CALL(qp_bench_spawn(qmlpipe, config, route, k, 0, &run));
    qp_bench_print_run(&run, k, repeat, 0);
    if (k == 1 || run.wall < bare.wall) bare = run;
  }
  /* The floor's best of `repeat` too, each in a fresh child: the same load shows in both. */
  qp_bench_measured measured, trial;
  const qp_bench_floor_arg floor_arg = {config, &best};
  for (int k = 1; k <= repeat; ++k) {
    QP_CALL(qp_bench_in_child(qp_bench_floor_measure, &floor_arg, &trial));
    if (k == 1 || trial.value[0] < measured.value[0]) measured = trial;
  }
  const double floor = measured.value[0], floor_flops = measured.value[1];
  const double bias_solve = measured.value[2];
  const char *detail = measured.detail;
  printf("  best of %d (runs and floor), route %s (%s):\n", repeat, route, best.path);
  /* "of floor": of the floor kernels' own rate at this run's sizes, the most the BLAS gives
   * at them (below the dgemm of --dgemm-n on small problems). */
  const double floor_rate = floor > 0 ? floor_flops / floor * 1e-9 : 0.0;
  printf("  %-34s %9s %9s %9s %9s\n", "", "seconds", "GFLOP/s", "of dgemm", "of floor");
  double stages = 0;
  for (int s = 0; s < QP_STAGE_COUNT; ++s) {
    stages += best.stage_seconds[s];
    printf("  %-34s %9.3f %9.2f %8.1f%% %8.1f%%\n", qp_stage_name((qp_stage_id)s),
           best.stage_seconds[s], best.stage_rate[s], 100.0 * best.stage_rate[s] / dgemm,
           floor_rate > 0 ? 100.0 * best.stage_rate[s] / floor_rate : 0.0);
  }
  const double outside = best.wall - stages;
  printf("  %-34s %9.3f\n", "stages", stages);
  if (best.warm_up >= 0) {
    printf("  %-34s %9.3f %9s %8.1f%% of the wall\n", "warm-up", best.warm_up, "",
           100.0 * best.warm_up / best.wall);
    printf("  %-34s %9.3f %9s %8.1f%% of the wall\n", "rest outside the stages (*)",
           outside - best.warm_up, "", 100.0 * (outside - best.warm_up) / best.wall);
  }
  printf("  %-34s %9.3f %9s %8.1f%% of the wall\n", "outside the stages", outside, "",
         100.0 * outside / best.wall);
  printf("  %-34s %9.3f\n", "wall (qmlpipe run, spawn to exit)", best.wall);
  printf("  %-34s %9.3f %9.2f %8.1f%%   %s\n", "BLAS floor", floor, floor_rate,
         100.0 * floor_rate / dgemm, detail);
  qp_bench_print_accounting(&best, ab ? &bare : NULL, repeat);
  qp_bench_print_beyond_floor(&best, floor, bias_solve);
  printf("  wall / floor %.2f; baseline RSS %.1f MiB; peak RSS %.1f MiB\n",
         floor > 0 ? best.wall / floor : 0.0, best.baseline_mib, best.peak_mib);
  printf("  (*) process start and exit, config, plan, inputs' libraries, memory timeline, "
         "report and results file\n");
  *wall = best.wall;
  return QP_OK;
}
