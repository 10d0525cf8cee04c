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

#include "bench.h"
#include "cmd_common.h"

static const char qp_bench_usage[] =
    "usage: qmlpipe-bench [OPTIONS]\n"
    "  Runs `qmlpipe run` on simulated problems (a fresh process each run) and prints each\n"
    "  stage's seconds and GFLOP/s, the warm-up and the rest outside the stages, the wall time,\n"
    "  the peak RSS and wall / BLAS floor (docs/benchmarks.md).\n"
    "  --problems LIST   t16, qu16, t32 (issue 14's; t32 ~30 s a run) or custom (default "
    "t16,qu16)\n"
    "  --routes LIST     auto, pixel, smw, projected, cross, cross-projected, cross-smw\n"
    "                    (cross-spectra of a second map set on that route; beside its\n"
    "                    auto route, prints cross / auto) (default auto)\n"
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
    /* Each route's wall, for the cross / auto ratios of the routes run both ways. */
    static const char *const autos[3] = {"pixel", "projected", "smw"},
                             *crosses[3] = {"cross", "cross-projected", "cross-smw"};
    double wall = 0, auto_wall[3] = {0, 0, 0}, cross_wall[3] = {0, 0, 0};
    for (char *route = strtok_r(rlist, ",", &rsave); route; route = strtok_r(NULL, ",", &rsave)) {
      QP_CALL_GOTO(qp_bench_route(qmlpipe, pdir, &b, route, repeat, ab, dgemm, &wall), done);
      for (int r = 0; r < 3; ++r) {
        if (strcmp(route, autos[r]) == 0) auto_wall[r] = wall;
        if (strcmp(route, crosses[r]) == 0) cross_wall[r] = wall;
      }
    }
    for (int r = 0; r < 3; ++r)
      if (auto_wall[r] > 0 && cross_wall[r] > 0)
        printf("problem %s: cross / auto wall (%s, best of %d each, this run) %.2f\n", b.name,
               autos[r], repeat, cross_wall[r] / auto_wall[r]);
  }
done:
  if (err != QP_OK) {
    qp_error_print(stderr, 1);
    return qp_err_exit_status(err);
  }
  return 0;
}
