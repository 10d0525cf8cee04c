/* bench.c: qmlpipe-bench, the benchmark program (not a test): per stage seconds and GFLOP/s
 * of a simulated temperature analysis, beside this machine's dgemm GFLOP/s measured in the
 * same run. Figures go to docs/benchmarks.md.
 *
 *   qmlpipe-bench [--nside 16] [--cut 20] [--lmax 47] [--bin-width 1] [--n-maps 1]
 *                 [--fields T|QU|TQU] [--routes pixel,smw,projected]
 *                 [--dgemm-n 3000] [--repeat 2] [--dir /tmp/qmlpipe-bench]
 * QU estimates EE, BB, EB; TQU all six spectra.
 *
 * Each repetition runs the whole pipeline again in the same process and prints its table.
 * The first run pays for committing fresh pages (on the project's VMs ~2 s per GB the first
 * time memory is touched, ~0.05 s per GB after); later runs show the stages' own speed. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cls_text.h"
#include "cmd_common.h"
#include "driver.h"
#include "fits_map.h"
#include "flop_rate.h"
#include "simulate.h"

static qp_err qp_bench_inputs(const char *dir, int64_t nside, double cut, int lmax, int n_maps,
                              qp_fields fields, qp_config *cfg) {
  QP_CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST, QP_ERR_IO, "cannot create '%s'", dir);
  qp_cls cls = {0};
  const int cls_lmax = 3 * (int)nside;
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
  const int64_t n_sky = 12 * nside * nside;
  const int n_col = qp_simulate_columns(fields);
  double *sky = NULL;
  qp_err err = QP_OK;
  QP_CALL_GOTO(QP_ALLOC_DOUBLES("bench_sky", QP_TERM_TRANSIENT, n_sky * n_col * n_maps, &sky),
               done);
  qp_sim_options sim = {.nside = nside, .ell_min = 2, .lmax = lmax, .noise_variance = 1.0,
                        .n_maps = n_maps, .seed = 7};
  qp_sim_pol pol = {.fields = fields, .noise_variance_pol = 1.0};
  QP_CALL_GOTO(qp_simulate_sky(&cls, &sim, &pol, sky), done);
  const char *name[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  cfg->n_maps = n_maps;
  cfg->maps = calloc((size_t)n_maps, sizeof *cfg->maps);
  for (int k = 0; k < n_maps; ++k) {
    snprintf(cfg->maps[k], sizeof cfg->maps[k], "%s/map_%04d.fits", dir, k);
    const double *col[3];
    for (int c = 0; c < n_col; ++c) col[c] = sky + ((int64_t)k * n_col + c) * n_sky;
    QP_CALL_GOTO(qp_fits_map_write(cfg->maps[k], nside, n_col, name, col), done);
  }
  qp_simulate_galactic_mask(nside, cut, sky);
  snprintf(cfg->mask, sizeof cfg->mask, "%s/mask.fits", dir);
  const char *mask_name[] = {"MASK"};
  const double *col[] = {sky};
  QP_CALL_GOTO(qp_fits_map_write(cfg->mask, nside, 1, mask_name, col), done);
  snprintf(cfg->cls, sizeof cfg->cls, "%s/cls.txt", dir);
  QP_CALL_GOTO(qp_cls_write(cfg->cls, &cls), done);
done:
  qp_budget_free(sky);
  qp_cls_free(&cls);
  return err;
}

/* One route, `repeat` times, each printing its table. */
static qp_err qp_bench_route(qp_config *cfg, const char *route, int repeat, double dgemm) {
  cfg->path = strcmp(route, "pixel") == 0 ? QP_PATH_PIXEL_DIRECT : QP_PATH_HARMONIC;
  cfg->harmonic_method = strcmp(route, "smw") == 0 ? 1 : (strcmp(route, "projected") == 0 ? 2 : 0);
  QP_CHECK(cfg->path == QP_PATH_PIXEL_DIRECT || cfg->harmonic_method, QP_ERR_INPUT,
           "qmlpipe-bench: unknown route '%s' (pixel, smw, projected)", route);
  qp_run_options options = {.progress = 0, .write_results = 0};
  for (int run = 1; run <= repeat; ++run) {
    qp_meter_sample baseline;
    qp_problem p;
    QP_CALL(qp_driver_run(cfg, &options, &p, &baseline));
    printf("route %s, run %d of %d%s: n_pix %lld, n_modes %lld, %d parameters\n", route, run,
           repeat, run == 1 ? " (fresh pages)" : "", (long long)p.n_pix, (long long)p.n_modes,
           p.n_params);
    printf("%-18s %10s %12s %10s %12s %12s\n", "stage", "seconds", "GFLOP", "GFLOP/s",
           "of dgemm", "peak MiB");
    double total = 0;
    for (int s = 0; s < QP_STAGE_COUNT; ++s) {
      const qp_stage_record *r = qp_stage_record_find(qp_stage_name((qp_stage_id)s));
      double rate = r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0;
      total += r->seconds;
      printf("%-18s %10.3f %12.2f %10.2f %11.1f%% %12.1f\n", r->name, r->seconds,
             r->flops * 1e-9, rate, 100.0 * rate / dgemm,
             (double)(r->meter_end.hwm - baseline.rss) / 1048576.0);
    }
    printf("%-18s %10.3f\n", "total", total);
    qp_problem_free(&p);
  }
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

int main(int argc, char **argv) {
  int nside = 16, dgemm_n = 3000, lmax = 47, bin_width = 1, n_maps = 1, repeat = 2;
  double cut = 20.0;
  const char *dir = "/tmp/qmlpipe-bench", *routes = "pixel";
  qp_fields fields = QP_FIELDS_T;
  static const struct option options[] = {
      {"nside", required_argument, NULL, 'n'},   {"cut", required_argument, NULL, 'c'},
      {"lmax", required_argument, NULL, 'l'},    {"bin-width", required_argument, NULL, 'b'},
      {"n-maps", required_argument, NULL, 'm'},  {"dgemm-n", required_argument, NULL, 'g'},
      {"dir", required_argument, NULL, 'd'},     {"repeat", required_argument, NULL, 'r'},
      {"routes", required_argument, NULL, 'R'},  {"fields", required_argument, NULL, 'f'},
      {NULL, 0, NULL, 0}};
  int ok = 1;
  for (int c; ok && (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
    switch (c) {
    case 'n': ok = qp_cmd_parse_count("--nside", optarg, 1, 8192, &nside); break;
    case 'c': ok = qp_cmd_parse_real("--cut", optarg, 0, 90, &cut); break;
    case 'l': ok = qp_cmd_parse_count("--lmax", optarg, 2, QP_LMAX_MAX, &lmax); break;
    case 'b': ok = qp_cmd_parse_count("--bin-width", optarg, 1, QP_LMAX_MAX, &bin_width); break;
    case 'm': ok = qp_cmd_parse_count("--n-maps", optarg, 1, 1 << 20, &n_maps); break;
    case 'g': ok = qp_cmd_parse_count("--dgemm-n", optarg, 16, 1 << 15, &dgemm_n); break;
    case 'd': dir = optarg; break;
    case 'r': ok = qp_cmd_parse_count("--repeat", optarg, 1, 1000, &repeat); break;
    case 'R': routes = optarg; break;
    case 'f': ok = qp_bench_fields(optarg, &fields); break;
    default: ok = 0;
    }
  }
  if (!ok || optind < argc) {
    fprintf(stderr, "qmlpipe-bench: bad usage%s%s (options: see the comment in bench.c)\n",
            ok ? ": unexpected argument " : "", ok ? argv[optind] : "");
    return 2;
  }
  qp_config cfg;
  qp_config_defaults(&cfg);
  cfg.lmax = cfg.lmax_signal = lmax;
  cfg.bin_width = bin_width;
  cfg.fields = fields;
  static const qp_spectrum spectra[3][6] = {
      {QP_TT}, {QP_EE, QP_BB, QP_EB}, {QP_TT, QP_EE, QP_BB, QP_TE, QP_TB, QP_EB}};
  static const int n_spectra[3] = {1, 3, 6};
  cfg.n_spectra = n_spectra[fields];
  for (int s = 0; s < cfg.n_spectra; ++s) cfg.spectra[s] = spectra[fields][s];
  cfg.noise_kind = QP_NOISE_VARIANCE;
  cfg.noise_variance = cfg.noise_variance_pol = 1.0;
  qp_err err = qp_bench_inputs(dir, nside, cut, lmax, n_maps, fields, &cfg);
  double dgemm = 0;
  if (err == QP_OK) err = qp_dgemm_rate(dgemm_n, &dgemm, NULL);
  dgemm *= 1e-9; /* GFLOP/s */
  if (err == QP_OK)
    printf("qmlpipe-bench: %s, nside %lld, |b| > %.0f deg, ell 2..%d, bin width %d, %d map(s)\n"
           "dgemm %lld^3: %.2f GFLOP/s (best of 3, this process)\n",
           fields == QP_FIELDS_T ? "T" : (fields == QP_FIELDS_QU ? "QU" : "TQU"),
           (long long)nside, cut, lmax, bin_width, n_maps, (long long)dgemm_n, dgemm);
  char list[256];
  snprintf(list, sizeof list, "%s", routes);
  for (char *route = strtok(list, ","); err == QP_OK && route; route = strtok(NULL, ","))
    err = qp_bench_route(&cfg, route, repeat, dgemm);
  if (err != QP_OK) {
    qp_error_print(stderr, 1);
    qp_config_free(&cfg);
    return qp_err_exit_status(err);
  }
  qp_config_free(&cfg);
  return 0;
}
