/* bench.c: qmlpipe-bench, the benchmark program (not a test). For each problem and route it
 * runs `qmlpipe run` (a fresh process each time, as a user would) `--repeat` times and prints
 * each stage's seconds and GFLOP/s, the time outside the stages (the warm-up, and the rest:
 * start, plan, inputs, memory timeline, report and results file, exit), the whole run's wall
 * time and peak RSS, beside the run's BLAS floor (bench_floor.h) and this machine's dgemm
 * rate, both measured in the benchmark's own process. Figures go to docs/benchmarks.md.
 *
 *   qmlpipe-bench [--problems t16,qu16] [--routes auto] [--repeat 3] [--no-ab] [--dgemm-n 3000]
 *                 [--dir /tmp/qmlpipe-bench] [--qmlpipe PATH]
 *                 [--nside 16 --cut 20 --lmax 47 --bin-width 1 --n-maps 1 --fields T]
 *
 * Problems: the three of issue 14, Galactic cut 20 deg, unbinned: t16 (T, nside 16, ell
 * 2..47, 3 maps), qu16 (QU with EE BB EB, nside 16, ell 2..47, 1 map), t32 (T, nside 32, ell
 * 2..95, 3 maps; ~40 s a run, so not in the default list); `custom` is the one the other
 * options describe (QU estimates EE BB EB, TQU all six spectra). Routes: auto (the config's
 * `path: auto`), pixel, smw, projected. qmlpipe: PATH, else the `qmlpipe` beside this program.
 * The best of the repetitions is the run of least wall time; the machine's other load shows
 * in the spread between them. */
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

#include "bench_floor.h"
#include "openblas_tuning.h"
#include "clock.h"
#include "cls_text.h"
#include "cmd_common.h"
#include "fits_map.h"
#include "flop_rate.h"
#include "inputs.h"
#include "planner.h"
#include "simulate.h"
#include "warm_up.h"

extern char **environ;

typedef struct {
  const char *name;
  int nside, lmax, bin_width, n_maps;
  double cut;
  qp_fields fields;
} qp_bench_problem;

/* What one `qmlpipe run` printed and took. */
typedef struct {
  double wall, warm_up, baseline_mib, peak_mib;
  double accounting, sampler_cpu; /* its "[qmlpipe] accounting" line; -1 when not printed */
  double commit_seconds, commit_mib; /* the same line's page commits; -1 when not printed */
  double stage_seconds[QP_STAGE_COUNT], stage_rate[QP_STAGE_COUNT];
  char path[64];
} qp_bench_run;

/* The simulated map(s), the mask and the spectrum in `dir` (flat D_ell, white noise of
 * variance 1, seed 7), named as the config of qp_bench_config expects them. */
static qp_err qp_bench_inputs(const char *dir, const qp_bench_problem *b) {
  QP_CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST, QP_ERR_IO, "cannot create '%s'", dir);
  qp_cls cls = {0};
  const int cls_lmax = 3 * b->nside;
  cls.lmax = cls_lmax;
  cls.n_columns = 4;
  for (int s = 0; s < 6; ++s)
    cls.cl[s] = calloc((size_t)cls_lmax + 1, sizeof(double));
  for (int l = 2; l <= cls_lmax; ++l) {
    cls.cl[QP_TT][l] = 1000.0 / ((double)l * (l + 1)); /* flat D_l */
    cls.cl[QP_EE][l] = 0.1 * cls.cl[QP_TT][l];
    cls.cl[QP_BB][l] = 0.01 * cls.cl[QP_TT][l];
    cls.cl[QP_TE][l] = 0.3 * sqrt(cls.cl[QP_TT][l] * cls.cl[QP_EE][l]);
  }
  const int64_t n_sky = 12 * (int64_t)b->nside * b->nside;
  const int n_col = qp_simulate_columns(b->fields);
  double *sky = NULL;
  qp_err err = QP_OK;
  char path[PATH_MAX];
  QP_CALL_GOTO(QP_ALLOC_DOUBLES("bench_sky", QP_TERM_TRANSIENT, n_sky * n_col * b->n_maps, &sky),
               done);
  qp_sim_options sim = {.nside = b->nside,
                        .ell_min = 2,
                        .lmax = b->lmax,
                        .noise_variance = 1.0,
                        .n_maps = b->n_maps,
                        .seed = 7};
  qp_sim_pol pol = {.fields = b->fields, .noise_variance_pol = 1.0};
  QP_CALL_GOTO(qp_simulate_sky(&cls, &sim, &pol, sky), done);
  const char *name[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  for (int k = 0; k < b->n_maps; ++k) {
    snprintf(path, sizeof path, "%.3900s/map_%04d.fits", dir, k);
    const double *col[3];
    for (int c = 0; c < n_col; ++c)
      col[c] = sky + ((int64_t)k * n_col + c) * n_sky;
    QP_CALL_GOTO(qp_fits_map_write(path, b->nside, n_col, name, col), done);
  }
  qp_simulate_galactic_mask(b->nside, b->cut, sky);
  snprintf(path, sizeof path, "%.3900s/mask.fits", dir);
  const char *mask_name[] = {"MASK"};
  const double *col[] = {sky};
  QP_CALL_GOTO(qp_fits_map_write(path, b->nside, 1, mask_name, col), done);
  snprintf(path, sizeof path, "%.3900s/cls.txt", dir);
  QP_CALL_GOTO(qp_cls_write(path, &cls), done);
done:
  qp_budget_free(sky);
  qp_cls_free(&cls);
  return err;
}

/* `dir`/config-<route>.yaml for one route (paths relative to the config). */
static qp_err qp_bench_config(const char *dir, const qp_bench_problem *b, const char *route,
                              char *config, size_t size) {
  static const char *spectra[3] = {"[TT]", "[EE, BB, EB]", "[TT, EE, BB, TE, TB, EB]"};
  static const char *noise[3] = {"{variance: 1}", "{variance_p: 1}",
                                 "{variance: 1, variance_p: 1}"};
  static const char *fields[3] = {"T", "QU", "TQU"};
  const char *path = strcmp(route, "auto") == 0    ? "auto"
                     : strcmp(route, "pixel") == 0 ? "pixel_direct"
                                                   : "harmonic";
  QP_CHECK(strcmp(route, "auto") == 0 || strcmp(route, "pixel") == 0 || strcmp(route, "smw") == 0 ||
               strcmp(route, "projected") == 0,
           QP_ERR_INPUT, "qmlpipe-bench: unknown route '%s' (auto, pixel, smw, projected)", route);
  snprintf(config, size, "%.3900s/config-%s.yaml", dir, route);
  FILE *f = fopen(config, "w");
  QP_CHECK(f, QP_ERR_IO, "cannot write '%s': %s", config, strerror(errno));
  fprintf(f, "maps: [");
  for (int k = 0; k < b->n_maps; ++k)
    fprintf(f, "%smap_%04d.fits", k ? ", " : "", k);
  fprintf(f,
          "]\nmask: mask.fits\nfields: %s\ncls: cls.txt\nnoise: %s\nspectra: %s\n"
          "ell_min: 2\nlmax: %d\nbin_width: %d\npath: %s\n",
          fields[b->fields], noise[b->fields], spectra[b->fields], b->lmax, b->bin_width, path);
  if (strcmp(path, "harmonic") == 0) fprintf(f, "harmonic_method: %s\n", route);
  fprintf(f, "backend: cpu\noutput: results-%s.h5\n", route);
  QP_CHECK(fclose(f) == 0, QP_ERR_IO, "cannot write '%s'", config);
  return QP_OK;
}

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
  while (environ[n_env]) ++n_env;
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

/* What a measurement in a child process hands back. */
typedef struct qp_bench_measured {
  double value[3];
  char detail[512];
} qp_bench_measured;
typedef qp_err (*qp_bench_measure)(const void *arg, qp_bench_measured *out);

/* Runs `measure` in a forked child and reads its figures back through a pipe. The dgemm and
 * the floor allocate hundreds of MiB; done here they would raise this process's resident
 * high-water mark, which Linux hands on to every child spawned afterwards (exec records the
 * old address space's high-water mark in the child's ru_maxrss), so each run's "peak RSS"
 * would have been this process's (227.5 MiB on T nside 16 after the 3000^3 dgemm, where the
 * run's own is ~140 MiB). This process itself never calls BLAS, so forking is safe. */
static qp_err qp_bench_in_child(qp_bench_measure measure, const void *arg,
                                qp_bench_measured *out) {
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
  QP_CHECK(waitpid(pid, &status, 0) == pid, QP_ERR_IO, "qmlpipe-bench: wait: %s",
           strerror(errno));
  QP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof *out,
           QP_ERR_LIBRARY, "qmlpipe-bench: the measuring child failed (status %d)", status);
  return QP_OK;
}

static qp_err qp_bench_dgemm(const void *arg, qp_bench_measured *out) {
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
  printf("  %-34s %9.3f %9s %8.1f%% of the wall (CPU seconds of its thread)\n",
         "timeline sampler", best->sampler_cpu, "", 100.0 * best->sampler_cpu / best->wall);
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
static void qp_bench_print_beyond_floor(const qp_bench_run *best, double floor,
                                        double bias_solve) {
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
static qp_err qp_bench_route(const char *qmlpipe, const char *dir, const qp_bench_problem *b,
                             const char *route, int repeat, int ab, double dgemm) {
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
  return QP_OK;
}

/* --fields T|QU|TQU; 0 with a message when it is none of them. */
static int qp_bench_fields(const char *text, qp_fields *fields) {
  static const struct {
    const char *name;
    qp_fields fields;
  } known[3] = {{"T", QP_FIELDS_T}, {"QU", QP_FIELDS_QU}, {"TQU", QP_FIELDS_TQU}};
  for (int k = 0; k < 3; ++k)
    if (strcmp(text, known[k].name) == 0) {
      *fields = known[k].fields;
      return 1;
    }
  fprintf(stderr, "qmlpipe-bench: --fields '%s' is not T, QU or TQU\n", text);
  return 0;
}

/* The problem a name stands for: a preset of issue 14, or `custom`; 0 when unknown. */
static int qp_bench_find_problem(const char *name, const qp_bench_problem *custom,
                                 qp_bench_problem *b) {
  static const qp_bench_problem presets[3] = {{"t16", 16, 47, 1, 3, 20.0, QP_FIELDS_T},
                                              {"qu16", 16, 47, 1, 1, 20.0, QP_FIELDS_QU},
                                              {"t32", 32, 95, 1, 3, 20.0, QP_FIELDS_T}};
  for (int k = 0; k < 3; ++k)
    if (strcmp(name, presets[k].name) == 0) {
      *b = presets[k];
      return 1;
    }
  if (strcmp(name, "custom") == 0) {
    *b = *custom;
    return 1;
  }
  fprintf(stderr, "qmlpipe-bench: unknown problem '%s' (t16, qu16, t32, custom)\n", name);
  return 0;
}

static const char qp_bench_usage[] =
    "usage: qmlpipe-bench [OPTIONS]\n"
    "  Runs `qmlpipe run` on simulated problems (a fresh process each run) and prints each\n"
    "  stage's seconds and GFLOP/s, the warm-up and the rest outside the stages, the wall time,\n"
    "  the peak RSS and wall / BLAS floor (docs/benchmarks.md).\n"
    "  --problems LIST   t16, qu16, t32 (issue 14's; t32 ~30 s a run) or custom (default t16,qu16)\n"
    "  --routes LIST     auto, pixel, smw, projected (default auto)\n"
    "  --repeat K        runs per problem and route; the best is printed (default 3)\n"
    "  --no-ab           no runs without the warm-up (by default each run is followed by one\n"
    "                    with QP_WARM_UP=0, and the best walls' difference is the warm-up's cost)\n"
    "  --dgemm-n N       order of the dgemm that measures this machine (default 3000)\n"
    "  --dir DIR         where the problems are simulated (default /tmp/qmlpipe-bench)\n"
    "  --qmlpipe PATH    the qmlpipe to run (default: the one beside this program)\n"
    "  custom problem:   --nside N --cut DEG --lmax L --bin-width W --n-maps K --fields T|QU|TQU\n"
    "  --help            this text\n";

int main(int argc, char **argv) {
  int dgemm_n = 3000, repeat = 3, ab = 1;
  qp_bench_problem custom = {"custom", 16, 47, 1, 1, 20.0, QP_FIELDS_T};
  const char *dir = "/tmp/qmlpipe-bench", *routes = "auto", *problems = "t16,qu16";
  const char *qmlpipe = NULL;
  static const struct option options[] = {{"nside", required_argument, NULL, 'n'},
                                          {"cut", required_argument, NULL, 'c'},
                                          {"lmax", required_argument, NULL, 'l'},
                                          {"bin-width", required_argument, NULL, 'b'},
                                          {"n-maps", required_argument, NULL, 'm'},
                                          {"dgemm-n", required_argument, NULL, 'g'},
                                          {"dir", required_argument, NULL, 'd'},
                                          {"repeat", required_argument, NULL, 'r'},
                                          {"routes", required_argument, NULL, 'R'},
                                          {"fields", required_argument, NULL, 'f'},
                                          {"problems", required_argument, NULL, 'P'},
                                          {"qmlpipe", required_argument, NULL, 'q'},
                                          {"no-ab", no_argument, NULL, 'A'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
  int ok = 1;
  for (int c; ok && (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
    switch (c) {
    case 'n': ok = qp_cmd_parse_count("--nside", optarg, 1, 8192, &custom.nside); break;
    case 'c': ok = qp_cmd_parse_real("--cut", optarg, 0, 90, &custom.cut); break;
    case 'l': ok = qp_cmd_parse_count("--lmax", optarg, 2, QP_LMAX_MAX, &custom.lmax); break;
    case 'b':
      ok = qp_cmd_parse_count("--bin-width", optarg, 1, QP_LMAX_MAX, &custom.bin_width);
      break;
    case 'm': ok = qp_cmd_parse_count("--n-maps", optarg, 1, 1 << 20, &custom.n_maps); break;
    case 'g': ok = qp_cmd_parse_count("--dgemm-n", optarg, 16, 1 << 15, &dgemm_n); break;
    case 'd': dir = optarg; break;
    case 'r': ok = qp_cmd_parse_count("--repeat", optarg, 1, 1000, &repeat); break;
    case 'R': routes = optarg; break;
    case 'f': ok = qp_bench_fields(optarg, &custom.fields); break;
    case 'P': problems = optarg; break;
    case 'q': qmlpipe = optarg; break;
    case 'A': ab = 0; break;
    case 'h': fputs(qp_bench_usage, stdout); return 0;
    default: ok = 0;
    }
  }
  if (!ok || optind < argc) {
    fprintf(stderr, "qmlpipe-bench: bad usage%s%s\n%s", ok ? ": unexpected argument " : "",
            ok ? argv[optind] : "", qp_bench_usage);
    return 2;
  }
  /* The qmlpipe beside this program (both are built into build/pipeline/). */
  char self[PATH_MAX], sibling[PATH_MAX + 16];
  if (!qmlpipe) {
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    char *slash = strrchr(self, '/');
    snprintf(sibling, sizeof sibling, "%.*s/qmlpipe", slash ? (int)(slash - self) : 1,
             slash ? self : ".");
    qmlpipe = sibling;
  }
  qp_err err = QP_OK;
  QP_CHECK_GOTO(strlen(dir) < 3800, QP_ERR_INPUT, done, "qmlpipe-bench: --dir is too long");
  QP_CHECK_GOTO(mkdir(dir, 0755) == 0 || errno == EEXIST, QP_ERR_IO, done, "cannot create '%s'",
                dir);
  qp_bench_measured rate;
  QP_CALL_GOTO(qp_bench_in_child(qp_bench_dgemm, &dgemm_n, &rate), done);
  const double dgemm = rate.value[0] * 1e-9; /* GFLOP/s */
  printf("qmlpipe-bench: dgemm %d^3 %.2f GFLOP/s (best of 3, a child of this process); %s\n",
         dgemm_n, dgemm, qmlpipe);
  char plist[256], rlist[256];
  snprintf(plist, sizeof plist, "%s", problems);
  char *psave = NULL, *rsave = NULL;
  for (char *name = strtok_r(plist, ",", &psave); name; name = strtok_r(NULL, ",", &psave)) {
    qp_bench_problem b;
    QP_CHECK_GOTO(qp_bench_find_problem(name, &custom, &b), QP_ERR_INPUT, done,
                  "qmlpipe-bench: --problems '%s'", problems);
    char pdir[PATH_MAX];
    snprintf(pdir, sizeof pdir, "%.3800s/%s", dir, b.name);
    QP_CALL_GOTO(qp_bench_inputs(pdir, &b), done);
    printf("problem %s: %s, nside %d, |b| > %.0f deg, ell 2..%d, bin width %d, %d map(s)\n", b.name,
           b.fields == QP_FIELDS_T ? "T" : (b.fields == QP_FIELDS_QU ? "QU" : "TQU"), b.nside,
           b.cut, b.lmax, b.bin_width, b.n_maps);
    snprintf(rlist, sizeof rlist, "%s", routes);
    for (char *route = strtok_r(rlist, ",", &rsave); route; route = strtok_r(NULL, ",", &rsave))
      QP_CALL_GOTO(qp_bench_route(qmlpipe, pdir, &b, route, repeat, ab, dgemm), done);
  }
done:
  if (err != QP_OK) {
    qp_error_print(stderr, 1);
    return qp_err_exit_status(err);
  }
  return 0;
}
