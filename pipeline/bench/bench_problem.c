/* bench_problem.c: the problems qmlpipe-bench simulates and the configs it writes (bench.h). */
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
#include "fits_map.h"
#include "simulate.h"

/* The simulated map(s), the mask and the spectrum in `dir` (flat D_ell, white noise of
 * variance 1, seed 7), named as the config of qp_bench_config expects them. */
qp_err qp_bench_inputs(const char *dir, const qp_bench_problem *b) {
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
  const char *name[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  /* map_*.fits, then map2_*.fits for the route `cross` (maps2: another draw, seed 8, noise
   * variance 2: the timing does not depend on the maps' values). */
  for (int set = 0; set < 2; ++set) {
    sim.seed = set ? 8 : 7;
    sim.noise_variance = pol.noise_variance_pol = set ? 2.0 : 1.0;
    QP_CALL_GOTO(qp_simulate_sky(&cls, &sim, &pol, sky), done);
    for (int k = 0; k < b->n_maps; ++k) {
      snprintf(path, sizeof path, "%.3900s/map%s_%04d.fits", dir, set ? "2" : "", k);
      const double *col[3];
      for (int c = 0; c < n_col; ++c)
        col[c] = sky + ((int64_t)k * n_col + c) * n_sky;
      QP_CALL_GOTO(qp_fits_map_write(path, b->nside, n_col, name, col), done);
    }
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
qp_err qp_bench_config(const char *dir, const qp_bench_problem *b, const char *route, char *config,
                       size_t size) {
  static const char *spectra[3] = {"[TT]", "[EE, BB, EB]", "[TT, EE, BB, TE, TB, EB]"};
  static const char *noise[3] = {"{variance: 1}", "{variance_p: 1}",
                                 "{variance_t: 1, variance_p: 1}"};
  static const char *fields[3] = {"T", "QU", "TQU"};
  static const char *noise2[3] = {"{variance: 2}", "{variance_p: 2}",
                                  "{variance_t: 2, variance_p: 2}"};
  /* cross-spectra (maps2): pixel-direct (`cross`), `cross-projected` or `cross-smw` */
  const int cross_projected = strcmp(route, "cross-projected") == 0,
            cross_smw = strcmp(route, "cross-smw") == 0;
  const int cross = strcmp(route, "cross") == 0 || cross_projected || cross_smw;
  const char *path = strcmp(route, "auto") == 0                                   ? "auto"
                     : strcmp(route, "pixel") == 0 || strcmp(route, "cross") == 0 ? "pixel_direct"
                                                                                  : "harmonic";
  QP_CHECK(strcmp(route, "auto") == 0 || strcmp(route, "pixel") == 0 || strcmp(route, "smw") == 0 ||
               strcmp(route, "projected") == 0 || cross,
           QP_ERR_INPUT,
           "qmlpipe-bench: unknown route '%s' (auto, pixel, smw, projected, cross, "
           "cross-projected, cross-smw)",
           route);
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
  if (strcmp(path, "harmonic") == 0)
    fprintf(f, "harmonic_method: %s\n", cross_projected ? "projected" : cross_smw ? "smw" : route);
  if (cross) {
    fprintf(f, "maps2: [");
    for (int k = 0; k < b->n_maps; ++k)
      fprintf(f, "%smap2_%04d.fits", k ? ", " : "", k);
    fprintf(f, "]\nnoise2: %s\n", noise2[b->fields]);
  }
  fprintf(f, "backend: cpu\noutput: results-%s.h5\n", route);
  QP_CHECK(fclose(f) == 0, QP_ERR_IO, "cannot write '%s'", config);
  return QP_OK;
}

/* --fields T|QU|TQU; 0 with a message when it is none of them. */
int qp_bench_fields(const char *text, qp_fields *fields) {
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
int qp_bench_find_problem(const char *name, const qp_bench_problem *custom, qp_bench_problem *b) {
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
