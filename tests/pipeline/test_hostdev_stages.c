/* test_hostdev_stages: every stage on the device path, tested on CPU. The hostdev backend
 * (tests/support/hostdev.h) keeps its "device" memory PROT_NONE outside its own operations, so a
 * stage that touched a device matrix from the host would crash this test; the stages reach
 * entries only through host windows (linalg/host_window.h). For each route (pixel-direct,
 * harmonic SMW, harmonic projection) on T with the switch, QU, and TQU with a dense N and the
 * switch:
 *  - F, b, y and C_hat equal the cpu backend's to 1e-12 (relative to the largest entry);
 *  - the memory model holds exactly on both spaces (budget_check.h): the device terms, hostdev's
 *    emulated library buffers (solver workspace, pivots: the backend's own terms, grown as
 *    cuSOLVER's are), the host staging each stage reserves, the host work matrices of align
 *    and replicate.
 * Then memory.device_limit: a limit that holds only a few products chunks fisher_run and
 * spectra_run on the device (same results) and fits an emulated device of that size
 * (qp_hostdev_set_capacity), where the unplanned run runs out of device memory; and a limit
 * below what cannot be chunked refuses the run before anything is allocated, naming it.
 * (Checkpoints of device runs: tests/pipeline/test_checkpoint_cli.c.)
 *
 * Under mpiexec (tests/mpi/CMakeLists.txt: 2 ranks, and 4 with the argument "T") the same
 * checks run on backend hostdev-dist against the dist backend: every rank's block-cyclic part
 * in its own emulated device, each rank's tracked peaks equal to its own model, the device
 * limit per rank (each rank its device), a refusal on every rank with nothing allocated on
 * any. Each rank writes its own copy of the fixture's files (same content), so that no two
 * ranks write one file. The argument "T" runs the T routes alone.
 *
 * With the test hook QP_TEST_HOSTDEV_TABLE=tiled (tests/mpi/CMakeLists.txt: 2 ranks) hostdev
 * runs cuda-dist's own table over the emulated devices (hostdev-tiled): the T routes against
 * dist, SMW's LU the tiled one (linalg/tiled/tiled_lu.c) as on hostdev-dist. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget_check.h"
#include "comm.h"
#include "driver.h"
#include "fixture.h"
#include "hostdev.h"
#include "results_compare.h"
#include "test_util.h"

/* Runs cfg on cpu, then on hostdev (with `device_limit`), compares and checks the model. */
static void check_route(qp_config *cfg, qp_path path, int method, double device_limit,
                        const char *what) {
  qp_meter_sample baseline;
  qp_problem p;
  cfg->path = path;
  cfg->harmonic_method = method;
  cfg->device_limit = 0;
  snprintf(cfg->backend, sizeof cfg->backend, "cpu");
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  results cpu;
  results_keep(&p, &cpu);
  qp_problem_free(&p);

  snprintf(cfg->backend, sizeof cfg->backend, "hostdev");
  cfg->device_limit = device_limit;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  if (qp_comm_rank() == 0)
    printf("%s on %d rank(s): backend %s, n_pix %lld, n_modes %lld, %d parameters, chunks "
           "%lld/%lld, device peak %.3f MiB, "
           "host peak %.3f MiB\n",
           what, qp_comm_size(), p.ops ? p.ops->name : "?", (long long)p.n_pix,
           (long long)p.n_modes, p.n_params, (long long)p.plan->model_dims.fisher_chunk,
           (long long)p.plan->model_dims.spectra_chunk,
           (double)qp_model_peak_in(&p.plan->model, QP_SPACE_DEVICE) / 1048576.0,
           (double)qp_model_peak(&p.plan->model) / 1048576.0);
  TEST_ASSERT(qp_model_peak_in(&p.plan->model, QP_SPACE_DEVICE) > 0, "%s: no device terms", what);
  compare(&cpu, &p, what);
  qp_check_budget_exact(&p);
  /* hostdev's emulated library buffers (hostdev.h) are predicted, so that the check above
   * holds them to the tracked bytes too: every route factors something on one rank, SMW's LU
   * holds pivots (hostdev-dist's distributed operations hold none). */
  if (qp_comm_size() == 1) {
    const qp_model_term *ws = qp_model_find(&p.plan->model, QP_TERM_HOSTDEV_WORKSPACE),
                        *piv = qp_model_find(&p.plan->model, QP_TERM_HOSTDEV_PIVOTS);
    TEST_ASSERT(ws && ws->space == QP_SPACE_DEVICE && ws->bytes > 0, "%s: no '%s' predicted", what,
                QP_TERM_HOSTDEV_WORKSPACE);
    TEST_ASSERT(!p.plan->smw || (piv && piv->bytes == (size_t)p.n_modes * 8),
                "%s: SMW's '%s' not predicted at 8 n_modes", what, QP_TERM_HOSTDEV_PIVOTS);
  }
  if (device_limit > 0)
    TEST_ASSERT(p.plan->model_dims.fisher_chunk < p.n_params &&
                    p.plan->model_dims.spectra_chunk < p.n_params,
                "%s: device_limit %.0f B did not chunk (%lld, %lld of %d)", what, device_limit,
                (long long)p.plan->model_dims.fisher_chunk,
                (long long)p.plan->model_dims.spectra_chunk, p.n_params);
  qp_problem_free(&p);
  results_free(&cpu);
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "%s: %zu device bytes left", what,
              qp_budget_current(QP_SPACE_DEVICE));
}

/* 1 under the test hook QP_TEST_HOSTDEV_TABLE=tiled on several ranks: hostdev runs cuda-dist's
 * own table (hostdev-tiled, linalg/tiled/tiled_table.h). */
static int tiled_table(void) {
  const char *table = getenv("QP_TEST_HOSTDEV_TABLE");
  return qp_comm_size() > 1 && table && strcmp(table, "tiled") == 0;
}

static void check_routes(qp_config *cfg, const char *label) {
  char what[128];
  snprintf(what, sizeof what, "%s, pixel_direct", label);
  check_route(cfg, QP_PATH_PIXEL_DIRECT, 0, 0, what);
  snprintf(what, sizeof what, "%s, harmonic smw", label);
  check_route(cfg, QP_PATH_HARMONIC, 1, 0, what);
  snprintf(what, sizeof what, "%s, harmonic projected", label);
  check_route(cfg, QP_PATH_HARMONIC, 2, 0, what);
}

/* The largest rank's local part of an n_pix^2 matrix, in bytes (n^2 x 8 on one rank). */
static double largest_local_square(const qp_problem *p) {
  double bytes = (double)qp_matrix_local_elements(p->ops, p->n_pix, p->n_pix) * 8.0;
  TEST_OK(qp_comm_max(&bytes, 1));
  return bytes;
}

int main(int argc, char **argv) {
  qp_config cfg;
  qp_meter_sample baseline;
  qp_problem p;
  char name[64];
  TEST_OK(qp_comm_init(&argc, &argv));
  const int only_t = argc > 1 && strcmp(argv[1], "T") == 0;

  qp_fixture t = {.name = qp_fixture_rank_name(name, sizeof name, "hostdev_t"),
                  .nside = 8,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 12,
                  .lmax_signal = 16,
                  .bin_width = 3,
                  .sim_lmax = 16,
                  .n_maps = 2,
                  .noise_variance = 10.0,
                  .dl_flat = 100.0,
                  .seed = 11};
  TEST_OK(qp_fixture_write(&t, &cfg));
  check_routes(&cfg, "T diagonal N, switch");
  {
    /* Cross-spectra (maps2, docs/science.md) on every route: a second map set (another draw, noise
     * variance 20) crossed with the first. */
    char name2[64];
    TEST_OK(qp_fixture_add_maps2(&t, qp_fixture_rank_name(name2, sizeof name2, "hostdev_t2"), 12,
                                 20.0, &cfg));
    check_route(&cfg, QP_PATH_PIXEL_DIRECT, 0, 0, "T cross-spectra (switch), pixel_direct");
    check_route(&cfg, QP_PATH_HARMONIC, 1, 0, "T cross-spectra (switch), harmonic smw");
    check_route(&cfg, QP_PATH_HARMONIC, 2, 0, "T cross-spectra (switch), harmonic projected");
    free(cfg.maps2);
    cfg.maps2 = NULL;
    cfg.n_maps2 = 0;
  }
  if (only_t || tiled_table()) {
    qp_config_free(&cfg);
    qp_comm_finalize();
    return TEST_RETURN();
  }
  qp_config_free(&cfg);

  /* More modes than pixels on SMW with the switch: hostdev's solver workspace, taken for
   * N_eff's Cholesky (n_pix) in basis_setup's first phase, grows for the LU of I + K Lambda
   * (n_modes) in its last: the model's two entries of the term, each exact in its phases. */
  char few_name[64];
  qp_fixture few = {.name = qp_fixture_rank_name(few_name, sizeof few_name, "hostdev_few"),
                    .nside = 8,
                    .cut_deg = 60,
                    .ell_min = 2,
                    .lmax = 12,
                    .lmax_signal = 16,
                    .bin_width = 3,
                    .sim_lmax = 16,
                    .n_maps = 2,
                    .noise_variance = 10.0,
                    .dl_flat = 100.0,
                    .seed = 14};
  TEST_OK(qp_fixture_write(&few, &cfg));
  check_route(&cfg, QP_PATH_HARMONIC, 1, 0, "T few pixels, harmonic smw");
  qp_config_free(&cfg);
  TEST_OK(qp_fixture_write(&t, &cfg));

  /* memory.device_limit of 4.5 n_pix^2 doubles (of the largest rank's local parts on several
   * ranks: the limit is each rank's device): fisher_run holds C, one product, the noise and
   * the streaming slot (4 n^2 and the Gram matrix), spectra_run C and 3 bin matrices of the 4
   * parameters. */
  cfg.path = QP_PATH_PIXEL_DIRECT;
  snprintf(cfg.backend, sizeof cfg.backend, "hostdev");
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  const double square = largest_local_square(&p);
  qp_problem_free(&p);
  /* On an emulated device of that size (and a few pages for the blocks' rounding), the
   * planned run fits; without the limit the plan holds every product and runs out of it. */
  qp_hostdev_set_capacity((size_t)(4.5 * square) + 64 * 4096);
  check_route(&cfg, QP_PATH_PIXEL_DIRECT, 0, 4.5 * square, "T, pixel_direct, device_limit 4.5 n^2");
  cfg.device_limit = 0;
  qp_err full = qp_fixture_run(&cfg, &p, &baseline);
  TEST_ASSERT(full == QP_ERR_NOMEM && strstr(qp_error_message(), "out of device memory"),
              "no device_limit on a device of 4.5 n^2: got %s: %s", qp_err_name(full),
              qp_error_message());
  if (qp_comm_rank() == 0) printf("unplanned: %s\n", qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device bytes left after running out");
  qp_hostdev_set_capacity(0);

  /* Below C and three slots (the least a chunk of one needs): refused before allocating. */
  cfg.device_limit = 2.5 * square;
  qp_err err = qp_fixture_run(&cfg, &p, &baseline);
  TEST_ASSERT(err == QP_ERR_BUDGET, "device_limit 2.5 n^2: got %s", qp_err_name(err));
  TEST_ASSERT(strstr(qp_error_message(), "memory.device_limit") != NULL,
              "the refusal names memory.device_limit: %s", qp_error_message());
  if (qp_comm_rank() == 0) printf("refused: %s\n", qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device bytes left after the refusal");

  qp_config_free(&cfg);

  qp_fixture qu = {.name = qp_fixture_rank_name(name, sizeof name, "hostdev_qu"),
                   .nside = 8,
                   .cut_deg = 20,
                   .ell_min = 2,
                   .lmax = 12,
                   .lmax_signal = 12,
                   .bin_width = 3,
                   .sim_lmax = 12,
                   .n_maps = 2,
                   .noise_variance = 1.0,
                   .dl_flat = 100.0,
                   .seed = 12,
                   .fields = QP_FIELDS_QU,
                   .ee_ratio = 0.3,
                   .bb_ratio = 0.1};
  TEST_OK(qp_fixture_write(&qu, &cfg));
  check_routes(&cfg, "QU diagonal N");
  qp_config_free(&cfg);

  /* TQU, a dense N and the switch. */
  qp_fixture tqu = {.name = qp_fixture_rank_name(name, sizeof name, "hostdev_tqu"),
                    .nside = 4,
                    .cut_deg = 0,
                    .ell_min = 2,
                    .lmax = 6,
                    .lmax_signal = 8,
                    .bin_width = 2,
                    .sim_lmax = 8,
                    .n_maps = 2,
                    .noise_variance = 1.0,
                    .dl_flat = 100.0,
                    .seed = 13,
                    .fields = QP_FIELDS_TQU,
                    .ee_ratio = 0.3,
                    .bb_ratio = 0.1,
                    .te_corr = 0.4};
  TEST_OK(qp_fixture_write(&tqu, &cfg));
  char noise[64];
  TEST_OK(qp_fixture_dense_noise(
      &cfg, qp_fixture_rank_name(noise, sizeof noise, "hostdev_dense_noise.h5"), 0.1));
  check_routes(&cfg, "TQU dense N, switch");
  qp_config_free(&cfg);
  qp_comm_finalize();
  return TEST_RETURN();
}
