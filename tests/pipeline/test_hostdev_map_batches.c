/* test_hostdev_map_batches: the maps in batches under memory.device_limit (planner.c,
 * docs/memory-model.md "Maps in batches"), on the hostdev device emulation
 * (tests/support/hostdev.h). A problem with more maps than pixels or modes (120 maps of 48 pixels,
 * 21 modes), where the per-map device matrices outgrow the rest:
 *  - for each route (pixel-direct, harmonic SMW, harmonic projection), a device_limit equal to
 *    the device peak the model predicts at a chosen batch makes the planner pick that batch,
 *    with a last batch smaller than the others; F, b, y and C_hat equal the unbatched cpu
 *    run's to 1e-12, and both spaces' tracked peaks and terms equal the model's exactly
 *    (budget_check.h); the route's reason, which the results file records, names the batch;
 *  - SMW whitening 7 maps by a dense N_eff's factor (TQU, the switch) in batches of 3, 3, 1;
 *  - on an emulated device of that size (qp_hostdev_set_capacity) the batched plan fits where
 *    the unbatched run runs out of device memory;
 *  - a limit below what a batch of one map needs refuses the run before anything is
 *    allocated, naming the stage, its largest term and the batch;
 *  - SMW cross-spectra (maps2) at a limit that would batch the maps are refused, saying so.
 * Under mpiexec (tests/mpi/CMakeLists.txt: 2 and 4 ranks, grid block 8) the same on backend
 * hostdev-dist against dist: every rank's batch columns a block-cyclic matrix of their own,
 * SMW's V N_eff^-1 x kept batch by batch as each rank's local parts, the limit each rank's
 * device (the largest rank's peak decides), every rank refusing. The emulated device's size
 * is checked on one rank (hostdev_stages_n2 runs one out on every rank). */
#include <stdlib.h>
#include <string.h>

#include "budget_check.h"
#include "comm.h"
#include "device_capacity.h"
#include "driver.h"
#include "fixture.h"
#include "hostdev.h"
#include "results_compare.h"
#include "test_util.h"

/* The stage of that plan's device peak (the one a refusal names). */
static const char *worst_device_stage;

/* The device peak of the hostdev plan of cfg (no limit) had it `batch` maps on the device at
 * once, with the pixel-direct chunks at their least (what the planner's batch search tries). */
static double device_peak_at(qp_config *cfg, int64_t batch) {
  qp_problem p;
  qp_meter_sample baseline;
  cfg->device_limit = 0;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  qp_model_dims dims = p.plan->model_dims;
  qp_problem_free(&p);
  dims.map_batch = batch;
  if (dims.path == QP_MODEL_PIXEL_DIRECT) dims.fisher_chunk = dims.spectra_chunk = 1;
  qp_model model;
  TEST_OK(qp_model_predict(&dims, &model));
  int worst = 0;
  for (int s = 1; s < QP_STAGE_COUNT; ++s)
    if (qp_model_stage_peak_in(&model, s, QP_SPACE_DEVICE) >
        qp_model_stage_peak_in(&model, worst, QP_SPACE_DEVICE))
      worst = s;
  worst_device_stage = qp_stage_name((qp_stage_id)worst);
  double peak = (double)qp_model_peak_in(&model, QP_SPACE_DEVICE);
  TEST_OK(qp_comm_max(&peak, 1)); /* on a grid the largest rank's (each rank its device) */
  return peak;
}

static void set_route(qp_config *cfg, qp_path path, int method, const char *backend) {
  cfg->path = path;
  cfg->harmonic_method = method;
  snprintf(cfg->backend, sizeof cfg->backend, "%s", backend);
}

/* Runs cfg unbatched on cpu, then on hostdev with the device_limit of `batch` maps; compares
 * and checks the model. Returns that limit. */
static double check_batched(qp_config *cfg, qp_path path, int method, int64_t batch,
                            const char *what) {
  qp_meter_sample baseline;
  qp_problem p;
  set_route(cfg, path, method, "cpu");
  cfg->device_limit = 0;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  results cpu;
  results_keep(&p, &cpu);
  qp_problem_free(&p);

  set_route(cfg, path, method, "hostdev");
  const double limit = device_peak_at(cfg, batch);
  cfg->device_limit = limit;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  if (qp_comm_rank() == 0)
    printf("%s on %d rank(s), backend %s: %lld maps, n_pix %lld, n_modes %lld, device_limit %.0f "
           "B: batch %lld, chunks "
           "%lld/%lld, device peak %zu B, host peak %zu B\n  route: %s\n",
           what, qp_comm_size(), p.ops->name, (long long)p.n_maps, (long long)p.n_pix,
           (long long)p.n_modes, limit, (long long)p.plan->model_dims.map_batch,
           (long long)p.plan->model_dims.fisher_chunk, (long long)p.plan->model_dims.spectra_chunk,
           qp_model_peak_in(&p.plan->model, QP_SPACE_DEVICE), qp_model_peak(&p.plan->model),
           p.plan->path_reason);
  check_pieces(what, "maps in batches", p.plan->model_dims.map_batch, batch, p.n_maps,
               p.plan->path_reason);
  TEST_ASSERT((double)qp_model_peak_in(&p.plan->model, QP_SPACE_DEVICE) <= limit,
              "%s: device peak over the limit", what);
  compare_exact_and_free(&cpu, &p, what);
  return limit;
}

int main(int argc, char **argv) {
  qp_config cfg;
  qp_meter_sample baseline;
  qp_problem p;
  TEST_OK(qp_comm_init(&argc, &argv));
  /* 48 pixels (nside 2, full sky), 21 modes (ell 2..4), 3 parameters, 120 maps. */
  qp_fixture t = {.nside = 2,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = 4,
                  .lmax_signal = 4,
                  .bin_width = 1,
                  .sim_lmax = 4,
                  .n_maps = 120,
                  .noise_variance = 10.0,
                  .dl_flat = 100.0,
                  .seed = 21};
  TEST_OK(qp_fixture_write_ranked(&t, "map_batches_t", 8, &cfg));

  /* The batches: where each route's per-map matrices outweigh the rest of its device peak
   * (pixel-direct: 2 n_pix batch against fisher_run's 2 n_pix^2 more; projection: the batch's
   * n_pix + n_modes columns against fisher_run's K and C^-1 V^T), the last batch smaller. */
  check_batched(&cfg, QP_PATH_PIXEL_DIRECT, 0, 55, "pixel_direct");
  check_batched(&cfg, QP_PATH_HARMONIC, 1, 50, "harmonic smw");
  check_batched(&cfg, QP_PATH_HARMONIC, 2, 70, "harmonic projected");

  /* Cross-spectra on SMW hold every map of both sets on the device: at the limit of auto's
   * batches of 50 the cross plan would batch them, which SMW refuses, saying so. */
  {
    set_route(&cfg, QP_PATH_HARMONIC, 1, "hostdev");
    cfg.device_limit = device_peak_at(&cfg, 50);
    cfg.maps2 = malloc((size_t)cfg.n_maps * sizeof *cfg.maps2);
    TEST_ASSERT(cfg.maps2, "out of memory for maps2");
    memcpy(cfg.maps2, cfg.maps, (size_t)cfg.n_maps * sizeof *cfg.maps2);
    cfg.n_maps2 = cfg.n_maps;
    cfg.noise2_kind = QP_NOISE_VARIANCE;
    cfg.noise2_variance = cfg.noise2_variance_pol = 20.0;
    const qp_err refused = qp_fixture_run(&cfg, &p, &baseline);
    TEST_ASSERT(refused == QP_ERR_INPUT &&
                    strstr(qp_error_message(), "cross-spectra on harmonic (smw) need every map of "
                                               "both sets on the device at once"),
                "SMW cross-spectra in map batches: got %s: %s", qp_err_name(refused),
                qp_error_message());
    if (qp_comm_rank() == 0)
      printf("SMW cross-spectra in batches refused: %s\n", qp_error_message());
    qp_error_clear();
    TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device bytes left after the refusal");
    free(cfg.maps2);
    cfg.maps2 = NULL;
    cfg.n_maps2 = 0;
    cfg.device_limit = 0;
  }

  /* An emulated device of a batch of 10 (and a page per live block for their rounding): the
   * batched plan fits it; unbatched, the run runs out of device memory. */
  set_route(&cfg, QP_PATH_HARMONIC, 1, "hostdev");
  if (qp_comm_size() == 1) {
    const double limit10 = device_peak_at(&cfg, 10);
    qp_model_dims planned;
    check_capacity(&cfg, limit10, "harmonic smw", &planned);
    TEST_ASSERT(planned.map_batch == 10, "capacity: planned batch %lld, expected 10",
                (long long)planned.map_batch);
  }

  /* Below a batch of one map: refused before anything is allocated, naming the stage, its
   * largest device term and the batch. The stage is the model's (fisher_run here: hostdev's
   * emulated solver workspace, n_pix x 64 doubles, outweighs these tiny matrices from the LU
   * of basis_setup's last phase on). */
  cfg.device_limit = device_peak_at(&cfg, 1) - 8;
  char stage[64];
  snprintf(stage, sizeof stage, "stage %s", worst_device_stage);
  /* On a grid the refusal is the largest rank's, whose stage may not be this rank's worst. */
  if (qp_comm_size() > 1) snprintf(stage, sizeof stage, "stage ");
  qp_err err = qp_fixture_run(&cfg, &p, &baseline);
  TEST_ASSERT(err == QP_ERR_BUDGET, "device_limit below a batch of 1: got %s", qp_err_name(err));
  TEST_ASSERT(strstr(qp_error_message(), "memory.device_limit") &&
                  strstr(qp_error_message(), stage) &&
                  strstr(qp_error_message(), "maps in batches of 1 of 120"),
              "the refusal names the limit, the stage and the batch: %s", qp_error_message());
  if (qp_comm_rank() == 0) printf("refused: %s\n", qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device bytes left after the refusal");
  qp_config_free(&cfg);

  /* SMW whitens the maps by the Cholesky factor of a dense N_eff (TQU, dense N, the switch):
   * 7 maps in batches of 3, 3 and 1. */
  qp_fixture tqu = {.nside = 2,
                    .cut_deg = 0,
                    .ell_min = 2,
                    .lmax = 4,
                    .lmax_signal = 5,
                    .bin_width = 1,
                    .sim_lmax = 5,
                    .n_maps = 7,
                    .noise_variance = 1.0,
                    .dl_flat = 100.0,
                    .seed = 22,
                    .fields = QP_FIELDS_TQU,
                    .ee_ratio = 0.3,
                    .bb_ratio = 0.1,
                    .te_corr = 0.4};
  TEST_OK(qp_fixture_write_ranked(&tqu, "map_batches_tqu", 8, &cfg));
  set_route(&cfg, QP_PATH_HARMONIC, 1, "cpu");
  char noise[64];
  TEST_OK(qp_fixture_dense_noise(
      &cfg, qp_fixture_rank_name(noise, sizeof noise, "map_batches_dense_noise.h5"), 0.1));
  check_batched(&cfg, QP_PATH_HARMONIC, 1, 3, "TQU dense N, switch, harmonic smw");
  qp_config_free(&cfg);
  qp_comm_finalize();
  return TEST_RETURN();
}
