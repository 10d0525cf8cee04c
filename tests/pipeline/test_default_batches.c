/* test_default_batches: many maps read in the default batches (planner_batch.c,
 * docs/memory-model.md "Maps in batches"), each batch one map at a time from its file
 * (inputs_maps.c). 41 maps of 192 pixels (T, nside 4, full sky), where the default batch (the
 * batch terms within 1/16 of the route's largest matrix) is a few maps:
 *  - on every route, auto-spectra, and the cross-spectra of pixel-direct and projection
 *    (maps2: SMW's cross-spectra hold every map at once), the run without a memory limit reads
 *    the maps in several batches, the last smaller, and the route's reason says so; its
 *    tracked bytes equal the model's in every stage and term (budget_check.h);
 *  - its F, b, y, C_hat, covariance and windows are those of the same backend's run in one
 *    batch of all 41 (hostdev under a 1 PiB memory.device_limit, where every map fits: the
 *    planner's fitting search then takes them all) within 1e-13, and the cpu run's within
 *    1e-12 (the largest difference printed). Not bitwise in general: the BLAS computes a
 *    product's columns with kernels that depend on how many there are (OpenBLAS: its tail
 *    columns past a multiple of the unroll, a product of one or two columns through gemv), so
 *    41 columns against batches of 6 differ in the last bits (~4e-15), where 40 against 6
 *    agreed to the bit.
 * Under mpiexec (tests/mpi/CMakeLists.txt: 2 ranks, grid block 8) the same on dist and
 * hostdev-dist: batches narrower than a block (one process column holds none of a batch's
 * columns), rank 0 reading every map and each rank holding one map at a time. */
#include <stdlib.h>
#include <string.h>

#include "budget_check.h"
#include "comm.h"
#include "driver.h"
#include "fixture.h"
#include "results_compare.h"
#include "test_util.h"

/* Every result of p within `tol` of r's (relative to each result's largest entry: 0 is
 * bitwise), the largest difference printed. */
static void compare_within(const results *r, const qp_problem *p, double tol, const char *what) {
  const size_t np = (size_t)r->np, nm = (size_t)r->n_maps;
  const double *cov = p->spectra_covariance ? p->spectra_covariance : p->fisher_inverse;
  const double d[6] = {qp_test_max_rel_diff(r->fisher, p->fisher, np * np),
                       qp_test_max_rel_diff(r->noise_bias, p->noise_bias, np),
                       qp_test_max_rel_diff(r->yb, p->yb, np * nm),
                       qp_test_max_rel_diff(r->cl, p->cl, np * nm),
                       qp_test_max_rel_diff(r->covariance, cov, np * np),
                       qp_test_max_rel_diff(r->window, p->window, np * (size_t)r->n_window)};
  static const char *const names[6] = {"F", "b", "y", "C_hat", "covariance", "window"};
  double worst = 0;
  for (int k = 0; k < 6; ++k) {
    TEST_WITHIN(d[k], tol, "%s: %s", what, names[k]);
    worst = qp_test_worst(worst, d[k]);
  }
  if (qp_comm_rank() == 0)
    printf("  %s on %s against one batch: largest relative difference %.3g%s\n", what, p->ops->name,
           worst, worst == 0 ? " (bitwise)" : "");
}

/* Runs cfg on `backend` under device_limit `limit` (0: none), checks the model exact and the
 * batch (`batched`: several, the last smaller, said in the reason; else all maps at once). */
static void run_checked(qp_config *cfg, const char *backend, double limit, int batched,
                        const char *what, qp_problem *p) {
  qp_meter_sample baseline;
  snprintf(cfg->backend, sizeof cfg->backend, "%s", backend);
  cfg->device_limit = limit;
  TEST_OK(qp_fixture_run(cfg, p, &baseline));
  qp_check_budget_exact(p);
  const int64_t batch = p->plan->model_dims.map_batch, n_maps = p->n_maps;
  if (qp_comm_rank() == 0)
    printf("%s, %s on %d rank(s): %lld maps in batches of %lld\n", what, p->ops->name,
           qp_comm_size(), (long long)n_maps, (long long)batch);
  if (!batched) {
    TEST_ASSERT(batch == n_maps, "%s on %s: batch %lld of %lld, expected all", what, backend,
                (long long)batch, (long long)n_maps);
    return;
  }
  TEST_ASSERT(batch < n_maps && (batch == 1 || n_maps % batch != 0),
              "%s on %s: batch %lld of %lld: want several, the last smaller", what, backend,
              (long long)batch, (long long)n_maps);
  char text[96];
  snprintf(text, sizeof text, "maps in batches of %lld of %lld (the default", (long long)batch,
           (long long)n_maps);
  TEST_ASSERT(strstr(p->plan->path_reason, text) != NULL, "%s on %s: the reason lacks '%s': %s",
              what, backend, text, p->plan->path_reason);
}

/* cfg's route in the default batches on cpu and hostdev, against hostdev in one batch. */
static void check_route(qp_config *cfg, qp_path path, int method, int batched, const char *what) {
  cfg->path = path;
  cfg->harmonic_method = method;
  qp_problem p;
  run_checked(cfg, "hostdev", 1125899906842624.0, 0, what, &p); /* 1 PiB: one batch */
  results one;
  results_keep(&p, &one);
  qp_problem_free(&p);
  run_checked(cfg, "hostdev", 0, batched, what, &p);
  compare_within(&one, &p, 1e-13, what);
  qp_problem_free(&p);
  run_checked(cfg, "cpu", 0, batched, what, &p);
  compare_within(&one, &p, 1e-12, what);
  qp_problem_free(&p);
  results_free(&one);
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "%s: device bytes left", what);
}

int main(int argc, char **argv) {
  TEST_OK(qp_comm_init(&argc, &argv));
  qp_config cfg;
  qp_fixture t = {.nside = 4,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = 8,
                  .lmax_signal = 8,
                  .bin_width = 2,
                  .sim_lmax = 8,
                  .n_maps = 41,
                  .noise_variance = 10.0,
                  .dl_flat = 100.0,
                  .seed = 31};
  TEST_OK(qp_fixture_write_ranked(&t, "default_batches", 8, &cfg));
  check_route(&cfg, QP_PATH_PIXEL_DIRECT, 0, 1, "pixel_direct");
  check_route(&cfg, QP_PATH_HARMONIC, 1, 1, "harmonic smw");
  check_route(&cfg, QP_PATH_HARMONIC, 2, 1, "harmonic projected");

  /* Cross-spectra: maps2 (column n_maps + k of the maps) read beside the maps, batch by batch;
   * SMW holds every map of both sets at once. */
  char name[256];
  t.name = qp_fixture_rank_name(name, sizeof name, "default_batches");
  char second[256];
  TEST_OK(qp_fixture_add_maps2(&t, qp_fixture_rank_name(second, sizeof second, "default_batches_b"),
                               32, 20.0, &cfg));
  check_route(&cfg, QP_PATH_PIXEL_DIRECT, 0, 1, "cross pixel_direct");
  check_route(&cfg, QP_PATH_HARMONIC, 2, 1, "cross harmonic projected");
  check_route(&cfg, QP_PATH_HARMONIC, 1, 0, "cross harmonic smw");
  qp_config_free(&cfg);
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "%zu bytes still allocated",
              qp_budget_current(QP_SPACE_HOST));
  qp_comm_finalize();
  return TEST_RETURN();
}
