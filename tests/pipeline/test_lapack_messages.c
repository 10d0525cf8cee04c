/* test_lapack_messages: a failed factorisation is reported with the pipeline's context around
 * LAPACK's own detail (the row, the leading minor), both in one message.
 *
 * 1. Fisher, end to end through the qmlpipe binary (argv[1]): a Gaussian beam of 100000
 *    arcmin makes B_l^2 underflow to 0 for every l >= 2, so every bin matrix and the whole
 *    Fisher matrix are 0: spectra_run finds F_pp = 0 before its Cholesky (which equilibrates
 *    by diag(F)^-1/2). The run must exit with the not-positive-definite status and print "the
 *    Fisher matrix ... not positive definite" and the parameter, spectrum and bin at fault.
 * 2. SMW, in process: I + K Lambda exactly singular needs Lambda to cancel K to the last bit,
 *    which no config file can promise (a C_ell file must be >= 0), so the test crafts it. Four
 *    modes (T, l = 0 and 1) with C_1 = 0: Lambda = diag(lambda_0, 0, 0, 0), and row 0 of
 *    I + K Lambda is (1 + lambda_0 K_00, 0, 0, 0). A first basis_setup with C_0 = 0 (W = K
 *    exactly) reads K_00; a second one with C_0 chosen so that fl(C_0 B_0^2 K_00) = -1 makes
 *    that row exactly zero, which LU with partial pivoting keeps exactly zero to its last
 *    pivot: getrf reports U(i,i) = 0, while |I + K Lambda|_1 stays >= 1 (the other columns
 *    are those of I). basis_setup must fail saying "I + K Lambda is singular" and U(i,i) = 0.
 *
 * Files go to a private directory (lapack_messages.d), removed when every check passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "driver.h"
#include "fixture.h"
#include "inputs.h"
#include "stages.h"
#include "test_util.h"

#define WORK_DIR "lapack_messages.d"

static char qmlpipe[4096];

static void fisher_not_posdef(void) {
  qp_fixture f = {.name = "fisher_zero",
                  .nside = 4,
                  .cut_deg = 30,
                  .ell_min = 2,
                  .lmax = 8,
                  .lmax_signal = 8,
                  .bin_width = 3,
                  .sim_lmax = 8,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .cl_flat = 1.0,
                  .seed = 11};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_config_free(&cfg);
  FILE *y = fopen("fisher_zero.yaml", "w");
  TEST_ASSERT(y != NULL, "cannot write fisher_zero.yaml");
  if (!y) return;
  fprintf(y, "maps: [fisher_zero_map_0000.fits]\nmask: fisher_zero_mask.fits\n"
             "cls: fisher_zero_cls.txt\nnoise: {variance: 1.0}\nlmax: 8\nbin_width: 3\n"
             "beam_fwhm_arcmin: 100000\npath: pixel_direct\n"
             "output: fisher_zero_results.h5\n");
  fclose(y);
  const char *args[] = {"run", "fisher_zero.yaml", NULL};
  qp_cli_result r;
  qp_cli_run(qmlpipe, "fisher_zero", args, &r);
  TEST_ASSERT(r.exited && r.status == qp_err_exit_status(QP_ERR_NOT_POSDEF),
              "fisher_zero: exit status %d (signal %d), expected %d", r.status, r.signal,
              qp_err_exit_status(QP_ERR_NOT_POSDEF));
  const char *words[] = {"the Fisher matrix (3 parameters) is not positive definite",
                         "parameter 0 (TT, ell 2-4) has F_pp = 0", "no pixel constrains it"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i)
    TEST_ASSERT(strstr(r.err, words[i]) != NULL, "fisher_zero: stderr lacks '%s':\n%s", words[i],
                r.err);
  printf("fisher_zero: %s", r.err);
  qp_cli_free(&r);
}

/* Plans the four-mode SMW problem and runs covariance_setup and basis_setup; *c0 (when not
 * NULL) replaces C_0^TT after the plan read the C_ell file. */
static qp_err smw_basis(const qp_config *cfg, const double *c0, qp_problem *p) {
  memset(p, 0, sizeof *p);
  p->cfg = cfg;
  QP_CALL(qp_driver_backend(cfg, &p->ops));
  p->plan = &p->plan_store; /* this test owns the plan */
  const qp_limit_inputs limit = {.config = cfg->host_limit};
  QP_CALL(qp_plan_limit(&limit, &p->plan_store));
  qp_noise_figures noise;
  QP_CALL(qp_inputs_plan(p, &noise));
  QP_CALL(qp_plan_build(p, &noise, &p->plan_store));
  if (c0) p->cls.cl[QP_TT][0] = *c0;
  QP_CALL(qp_stage_covariance_setup(p));
  QP_CALL(qp_stage_basis_setup(p));
  return QP_OK;
}

static void smw_singular(void) {
  /* The fixture's C_l is 0 below l = 2: C_1 = 0, and C_0 = 0 in the first pass. */
  qp_fixture f = {.name = "smw_four_modes",
                  .nside = 2,
                  .cut_deg = 0,
                  .ell_min = 0,
                  .lmax = 1,
                  .lmax_signal = 1,
                  .bin_width = 1,
                  .sim_lmax = 1,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .cl_flat = 1.0,
                  .seed = 5};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  cfg.path = QP_PATH_HARMONIC;
  cfg.harmonic_method = 1; /* smw */

  qp_problem p;
  TEST_OK(smw_basis(&cfg, NULL, &p));
  TEST_ASSERT(p.plan->smw && p.n_modes == 4 && p.kernel.data != NULL,
              "the four-mode problem did not take the SMW route (smw %d, %lld modes)", p.plan->smw,
              (long long)p.n_modes);
  const double k = p.kernel.data ? p.kernel.data[0] : NAN; /* K_00, mode (l, m) = (0, 0) */
  /* B_0^2 as basis_setup forms it from the weight of l = 0 (harmonic_route.c, qp_mode_weight). */
  const double beam2 = p.ell_weight ? p.ell_weight[0] * 4.0 * M_PI / (2.0 * 0 + 1.0) : NAN;
  qp_problem_free(&p);
  TEST_ASSERT(isfinite(k) && k > 0 && isfinite(beam2) && beam2 > 0, "K = %g, B_0^2 = %g", k, beam2);

  /* C_0 with fl(fl(C_0 B_0^2) k) = -1: from -1 / (B_0^2 k), a few steps either way. */
  double c0 = -1.0 / (beam2 * k);
  int found = 0;
  for (int step = 0; step < 64 && !found; ++step) {
    const double c = c0 * beam2;
    if (c * k == -1.0) {
      found = 1;
    } else {
      c0 = nextafter(c0, (c * k < -1.0) ? 0.0 : -INFINITY);
    }
  }
  TEST_ASSERT(found, "no C_0 cancels K = %.17g (B_0^2 = %.17g)", k, beam2);
  if (!found) {
    qp_config_free(&cfg);
    return;
  }
  printf("smw_singular: K = %.17g, C_0 = %.17g\n", k, c0);
  EXPECT_ERROR(smw_basis(&cfg, &c0, &p), QP_ERR_NOT_POSDEF,
               "the SMW kernel I + K Lambda is singular",
               "matrix 'I_plus_K_Lambda' (4 x 4) is singular: U(", ") = 0",
               "use harmonic_method: projected");
  qp_problem_free(&p);
  qp_config_free(&cfg);
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup(argc, argv, "test_lapack_messages", WORK_DIR, qmlpipe);
  if (setup != 0) return setup;
  fisher_not_posdef();
  smw_singular();
  if (qp_test_failures == 0) qp_cli_remove_files(".");
  return TEST_RETURN();
}
