/* test_harmonic_agreement: the three routes give the same answer (QML.md 5): pixel-direct,
 * harmonic by stable SMW and harmonic by projection agree on F, y and the noise bias b to
 * 1e-8 relative, for T, QU and TQU, with and without the switch (lmax < lmax_signal), with a
 * diagonal and with a dense (correlated) noise covariance. F is compared entry by entry
 * relative to sqrt(F_pp F_qq); y relative to its largest magnitude per spectrum; b relative
 * to its largest magnitude overall (the cross spectra's b is zero up to round-off here: the
 * noise does not correlate fields). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "h5_matrix.h"
#include "test_util.h"

typedef struct run {
  qp_problem p;
  qp_meter_sample baseline;
} run;

static double dot3(const double *a, const double *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Block-diagonal (per field) correlated noise: var (delta_ij + 0.3 exp(-(1 - cos)/0.05)). */
static void write_dense_noise(const qp_problem *p, double var, const char *path) {
  const int64_t n = p->n_pix, nt = p->n_obs_t, np = p->n_obs_p;
  double *noise = calloc((size_t)(n * n), sizeof *noise);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) {
      /* field and position of data entries i, j */
      int fi = i < nt ? 0 : (i < nt + np ? 1 : 2), fj = j < nt ? 0 : (j < nt + np ? 1 : 2);
      if (fi != fj) continue;
      int64_t pi = fi == 2 ? i - np : i, pj = fj == 2 ? j - np : j;
      double c = dot3(p->vectors + 3 * pi, p->vectors + 3 * pj);
      noise[i + j * n] = var * ((i == j ? 1.0 : 0.0) + 0.3 * exp(-(1.0 - c) / 0.05));
    }
  TEST_OK(qp_h5_matrix_write(path, "/covariance", n, n, noise));
  free(noise);
}

static double compare(const run *a, const run *b, const char *what, const char *label) {
  const qp_problem *p = &a->p, *q = &b->p;
  const int np = p->n_params, nb = p->n_bins;
  double worst = 0;
  if (strcmp(what, "F") == 0) {
    for (int i = 0; i < np; ++i)
      for (int j = 0; j < np; ++j) {
        double scale = sqrt(p->fisher[i + i * np] * p->fisher[j + j * np]);
        worst = qp_test_worst(worst, fabs(p->fisher[i + j * np] - q->fisher[i + j * np]) / scale);
      }
  } else {
    const int is_b = strcmp(what, "b") == 0;
    const int64_t rows = is_b ? 1 : p->n_maps;
    const int groups = is_b ? 1 : np / nb, size = is_b ? np : nb;
    for (int s = 0; s < groups; ++s) {
      double scale = 0, diff = 0;
      for (int64_t m = 0; m < rows; ++m)
        for (int k = s * size; k < (s + 1) * size; ++k) {
          double x = is_b ? p->noise_bias[k] : p->yb[m * np + k];
          double y = is_b ? q->noise_bias[k] : q->yb[m * np + k];
          scale = qp_test_worst(scale, fabs(x));
          diff = qp_test_worst(diff, fabs(x - y));
        }
      /* A NaN or infinity in x or y makes diff NaN or infinite, and so the error. */
      worst = qp_test_worst(worst, scale > 0 ? diff / scale : diff);
    }
  }
  TEST_WITHIN(worst, 1e-8, "%s: %s differs", label, what);
  return worst;
}

static void run_case(qp_fields fields, int switched, int dense) {
  static const char *const field_names[] = {"T", "QU", "TQU"};
  char name[64];
  snprintf(name, sizeof name, "agree_%s_%s_%s", field_names[fields],
           switched ? "switch" : "noswitch", dense ? "dense" : "diag");
  qp_fixture f = {.name = name,
                  .nside = 4,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = switched ? 7 : 9,
                  .lmax_signal = 9,
                  .bin_width = 2,
                  .sim_lmax = 9,
                  .n_maps = 2,
                  .noise_variance = 0.3,
                  .noise_variance_pol = 0.2,
                  .dl_flat = 30.0,
                  .seed = 9,
                  .fields = fields,
                  .ee_ratio = 0.3,
                  .bb_ratio = 0.1,
                  .te_corr = 0.5,
                  .n_spectra = fields == QP_FIELDS_T ? 1 : (fields == QP_FIELDS_QU ? 3 : 6),
                  .spectra = {QP_TT}};
  if (fields == QP_FIELDS_QU) {
    f.spectra[0] = QP_EE, f.spectra[1] = QP_BB, f.spectra[2] = QP_EB;
  } else if (fields == QP_FIELDS_TQU) {
    for (int s = 0; s < 6; ++s)
      f.spectra[s] = (qp_spectrum)s;
  }
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  run r[3];
  memset(r, 0, sizeof r);
  if (dense) {
    /* A first run gives the geometry the noise file needs. */
    TEST_OK(qp_fixture_run(&cfg, &r[0].p, &r[0].baseline));
    char path[128];
    snprintf(path, sizeof path, "%s_noise.h5", name);
    write_dense_noise(&r[0].p, f.noise_variance, path);
    qp_problem_free(&r[0].p);
    cfg.noise_kind = QP_NOISE_COVARIANCE;
    snprintf(cfg.noise_file, sizeof cfg.noise_file, "%s", path);
    snprintf(cfg.noise_dataset, sizeof cfg.noise_dataset, "/covariance");
  }
  const qp_path paths[3] = {QP_PATH_PIXEL_DIRECT, QP_PATH_HARMONIC, QP_PATH_HARMONIC};
  const int methods[3] = {0, 1, 2};
  for (int k = 0; k < 3; ++k) {
    cfg.path = paths[k];
    cfg.harmonic_method = methods[k];
    TEST_OK(qp_fixture_run(&cfg, &r[k].p, &r[k].baseline));
  }
  TEST_ASSERT(r[1].p.plan->smw == 1 && r[2].p.plan->smw == 0 &&
                  r[0].p.plan->path_used == QP_PATH_PIXEL_DIRECT,
              "%s: routes not as requested", name);
  for (int k = 1; k < 3; ++k) {
    char label[96];
    snprintf(label, sizeof label, "%s %s", name, k == 1 ? "smw" : "projected");
    double df = compare(&r[0], &r[k], "F", label), dy = compare(&r[0], &r[k], "y", label),
           db = compare(&r[0], &r[k], "b", label);
    printf("%-36s n_pix %4lld n_modes %4lld: F %.1e  y %.1e  b %.1e\n", label,
           (long long)r[k].p.n_pix, (long long)r[k].p.n_modes, df, dy, db);
  }
  for (int k = 0; k < 3; ++k)
    qp_problem_free(&r[k].p);
  qp_config_free(&cfg);
}

int main(void) {
  for (int fields = 0; fields < 3; ++fields)
    for (int switched = 0; switched < 2; ++switched)
      for (int dense = 0; dense < 2; ++dense)
        run_case((qp_fields)fields, switched, dense);
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "budget blocks left alive");
  return TEST_RETURN();
}
