/* test_hostdev_w_blocks: the projection route's W = Y^T Y in column blocks under
 * memory.device_limit (harmonic_route.c, planner.c, docs/memory-model.md "W in blocks"), on the
 * hostdev device emulation (tests/support/hostdev.h). Problems with more modes than pixels, where W
 * (n_modes^2) outweighs the rest of the device peak:
 *  - T, QU and TQU: a device_limit that holds W whole changes nothing (the cpu run's estimates
 *    to the bit; on several ranks dist's to 1e-12: hostdev-dist's products and solves are the
 *    tiled algorithms, linalg/tiled/tiled.h); a device_limit equal to the device peak the model
 * predicts at a chosen block makes the planner pick that block, with a last block narrower than the
 * others; F, b, y and C_hat equal the unchunked cpu run's to 1e-12, both spaces' tracked peaks and
 *    terms equal the model's exactly (budget_check.h), and the route's reason, which the
 *    results file records, names the block;
 *  - on an emulated device of that size (qp_hostdev_set_capacity) the chunked plan fits where
 *    the unchunked run runs out of device memory;
 *  - SMW, whose LU of I + K Lambda needs all of n_modes^2 (and its fisher_run K, the LU and G),
 *    is refused under that limit before anything is allocated, and harmonic_method auto takes
 *    projection in blocks instead;
 *  - a limit below what the least block leaves (fisher_run's Z) refuses the run, naming the
 *    stage and its largest term.
 * Under mpiexec (tests/mpi/CMakeLists.txt: 2 and 4 ranks, grids 1 x 2 and 2 x 2 of block 8)
 * the same on backend hostdev-dist against dist: the blocks are multiples of block x process
 * columns (16), each formed whole by a distributed gemm into each rank's local columns of a
 * distributed host W, the limit each rank's device (the largest rank's peak decides). The
 * emulated device's size is checked on one rank (hostdev_stages_n2 runs one out on every
 * rank). */
#include <string.h>

#include "budget_check.h"
#include "comm.h"
#include "device_capacity.h"
#include "driver.h"
#include "fixture.h"
#include "hostdev.h"
#include "results_compare.h"
#include "test_util.h"

static void set_route(qp_config *cfg, int method, const char *backend) {
  cfg->path = QP_PATH_HARMONIC;
  cfg->harmonic_method = method;
  snprintf(cfg->backend, sizeof cfg->backend, "%s", backend);
}

/* The model of the hostdev projection plan of cfg (no limit) with W in blocks of `w_block`. */
static void model_at(qp_config *cfg, int64_t w_block, qp_model *model) {
  qp_problem p;
  qp_meter_sample baseline;
  set_route(cfg, 2, "hostdev");
  cfg->device_limit = 0;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  qp_model_dims dims = p.plan->model_dims;
  qp_problem_free(&p);
  dims.w_block = w_block;
  TEST_OK(qp_model_predict(&dims, model));
}

/* The largest rank's device peak of that model (each rank its own device). */
static double device_peak_at(qp_config *cfg, int64_t w_block) {
  qp_model model;
  model_at(cfg, w_block, &model);
  double peak = (double)qp_model_peak_in(&model, QP_SPACE_DEVICE);
  TEST_OK(qp_comm_max(&peak, 1));
  return peak;
}

/* The columns a block is a multiple of: 1 on one process, block x process columns on the
 * 1 x 2 and 2 x 2 grids of block 8 that the fixtures get under mpiexec (planner.c,
 * qp_plan_w_block). */
static int64_t block_unit(void) { return qp_comm_size() == 1 ? 1 : 8 * 2; }

/* Runs cfg unchunked on cpu, then projection on hostdev with the device_limit of W in blocks
 * of `w_block`; compares and checks the model. Returns that limit. */
static double check_blocks(qp_config *cfg, int64_t w_block, const char *what) {
  qp_meter_sample baseline;
  qp_problem p;
  set_route(cfg, 2, "cpu");
  cfg->device_limit = 0;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  results cpu;
  results_keep(&p, &cpu);
  qp_problem_free(&p);

  const double whole = device_peak_at(cfg, 0), limit = device_peak_at(cfg, w_block);
  TEST_ASSERT(limit < whole, "%s: W in blocks of %lld does not lower the device peak", what,
              (long long)w_block);
  /* A limit that holds W whole: nothing changes, the cpu run's estimates to the bit. */
  set_route(cfg, 2, "hostdev");
  cfg->device_limit = whole;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  const size_t np = (size_t)p.n_params, n_maps = (size_t)p.n_maps;
  TEST_ASSERT(p.plan->model_dims.w_block == 0 && !strstr(p.plan->path_reason, "W in blocks"),
              "%s: W whole fits, yet planned in blocks of %lld", what,
              (long long)p.plan->model_dims.w_block);
  {
    /* The host backends never form W (qp_model_w_windows: F from Y's windows, z from Z), and
     * hostdev-dist's tiled products and solves sum in another order than PBLAS's: the same
     * estimates to rounding. */
    double worst = qp_test_max_rel_diff(cpu.fisher, p.fisher, np * np);
    worst = qp_test_worst(worst, qp_test_max_rel_diff(cpu.noise_bias, p.noise_bias, np));
    worst = qp_test_worst(worst, qp_test_max_rel_diff(cpu.cl, p.cl, np * n_maps));
    TEST_WITHIN(worst, 1e-12, "%s: W whole under a limit that holds it: not the %s run's", what,
                qp_comm_size() == 1 ? "cpu" : "dist");
  }
  qp_problem_free(&p);

  cfg->device_limit = limit;
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  if (qp_comm_rank() == 0)
    printf("%s on %d rank(s), backend %s: n_pix %lld, n_modes %lld, device_limit %.0f B (W "
           "whole: %.0f B): w_block %lld, device peak %zu B, host peak %zu B\n  route: %s\n",
           what, qp_comm_size(), p.ops->name, (long long)p.n_pix, (long long)p.n_modes, limit,
           whole, (long long)p.plan->model_dims.w_block,
           qp_model_peak_in(&p.plan->model, QP_SPACE_DEVICE), qp_model_peak(&p.plan->model),
           p.plan->path_reason);
  check_pieces(what, "W in blocks", p.plan->model_dims.w_block, w_block, p.n_modes,
               p.plan->path_reason);
  /* W's blocks by gemm, not syrk: how far from the cpu run's syrk W they take F and C_hat. */
  if (qp_comm_rank() == 0)
    printf("  max relative difference from cpu: F %.2e, C_hat %.2e\n",
           qp_test_max_rel_diff(cpu.fisher, p.fisher, np * np),
           qp_test_max_rel_diff(cpu.cl, p.cl, np * n_maps));
  compare_exact_and_free(&cpu, &p, what);
  return limit;
}

int main(int argc, char **argv) {
  qp_config cfg;
  qp_meter_sample baseline;
  qp_problem p;
  TEST_OK(qp_comm_init(&argc, &argv));
  const int one_rank = qp_comm_size() == 1;
  /* T: nside 4 with a cut, l 2..11: 140 modes, more than the 80 pixels. The blocks: multiples
   * of 16 (block_unit on 2 ranks), the last narrower. */
  qp_fixture t = {.nside = 4,
                  .cut_deg = 40,
                  .ell_min = 2,
                  .lmax = 11,
                  .lmax_signal = 11,
                  .bin_width = 3,
                  .sim_lmax = 11,
                  .n_maps = 3,
                  .noise_variance = 1.0,
                  .dl_flat = 100.0,
                  .seed = 31};
  TEST_OK(qp_fixture_write_ranked(&t, "w_blocks_t", 8, &cfg));
  const int64_t t_block = 96;
  const double limit = check_blocks(&cfg, t_block, "T projection");

  /* An emulated device of that size (and a page per live block for their rounding): the
   * chunked plan fits it; with W whole, the run runs out of device memory. */
  set_route(&cfg, 2, "hostdev");
  if (one_rank) {
    qp_model_dims planned;
    check_capacity(&cfg, limit, "T projection", &planned);
    TEST_ASSERT(planned.w_block == t_block, "capacity: planned block %lld, expected %lld",
                (long long)planned.w_block, (long long)t_block);
  }

  /* SMW under the same limit: its LU of I + K Lambda cannot be chunked, so `smw` is refused
   * before anything is allocated (exit status 4), naming the stage and the term... */
  set_route(&cfg, 1, "hostdev");
  cfg.device_limit = limit;
  qp_err err = qp_fixture_run(&cfg, &p, &baseline);
  TEST_ASSERT(err == QP_ERR_BUDGET && qp_err_exit_status(err) == 4, "smw under the limit: got %s",
              qp_err_name(err));
  TEST_ASSERT(strstr(qp_error_message(), "memory.device_limit") &&
                  strstr(qp_error_message(), "stage fisher_run") &&
                  strstr(qp_error_message(), "largest device term 'K'") &&
                  strstr(qp_error_message(), "SMW's LU of I + K Lambda"),
              "the refusal names the limit, the stage, the term and SMW's LU: %s",
              qp_error_message());
  if (qp_comm_rank() == 0) printf("smw refused: %s\n", qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device bytes left after the refusal");
  /* ... and harmonic_method auto takes projection with W in blocks. */
  set_route(&cfg, 0, "hostdev");
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  TEST_ASSERT(!p.plan->smw && p.plan->model_dims.w_block == t_block,
              "auto under the limit: smw %d, block %lld (expected projection, %lld): %s",
              p.plan->smw, (long long)p.plan->model_dims.w_block, (long long)t_block,
              p.plan->path_reason);
  qp_check_budget_exact(&p);
  qp_problem_free(&p);

  /* Below what the least block leaves: fisher_run's Z = C^-1 V^T (n_pix x n_modes) is not
   * chunked, and the run is refused before anything is allocated. */
  qp_model least;
  model_at(&cfg, block_unit(), &least);
  set_route(&cfg, 2, "hostdev");
  double fisher_peak = (double)qp_model_stage_peak_in(&least, QP_STAGE_FISHER_RUN, QP_SPACE_DEVICE);
  TEST_OK(qp_comm_max(&fisher_peak, 1));
  cfg.device_limit = fisher_peak - 8;
  err = qp_fixture_run(&cfg, &p, &baseline);
  TEST_ASSERT(err == QP_ERR_BUDGET, "below the least block: got %s", qp_err_name(err));
  char least_text[64];
  snprintf(least_text, sizeof least_text, "W in blocks of %lld of", (long long)block_unit());
  TEST_ASSERT(strstr(qp_error_message(), "stage fisher_run") &&
                  strstr(qp_error_message(), least_text),
              "the refusal names the stage and the block: %s", qp_error_message());
  if (qp_comm_rank() == 0) printf("refused: %s\n", qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device bytes left after the refusal");
  qp_config_free(&cfg);

  /* The same sky in QU (280 modes, 160 pixels) and TQU (420, 240). */
  const struct {
    const char *name, *what;
    qp_fields fields;
    int64_t block;
  } pol[2] = {{"w_blocks_qu", "QU projection", QP_FIELDS_QU, 208},
              {"w_blocks_tqu", "TQU projection", QP_FIELDS_TQU, 304}};
  for (int k = 0; k < 2; ++k) {
    qp_fixture f = t;
    f.fields = pol[k].fields;
    f.n_maps = 2;
    f.seed = 32 + (uint64_t)k;
    f.ee_ratio = 0.3;
    f.bb_ratio = 0.1;
    f.te_corr = pol[k].fields == QP_FIELDS_TQU ? 0.4 : 0.0;
    TEST_OK(qp_fixture_write_ranked(&f, pol[k].name, 8, &cfg));
    check_blocks(&cfg, pol[k].block, pol[k].what);
    qp_config_free(&cfg);
  }
  qp_comm_finalize();
  return TEST_RETURN();
}
