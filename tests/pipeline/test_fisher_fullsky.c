/* test_fisher_fullsky: on the full sky with isotropic white noise sigma^2 per pixel of solid
 * angle Omega, single-ell bins and no beam, the Fisher matrix is diagonal with
 *   F_ll = (2l+1)/2 (C_l + sigma^2 Omega)^-2        (QML.md 5)
 * up to HEALPix's error as a quadrature: ~3e-5 at nside 16 for ell < nside with noise ~
 * signal. Checked to 1e-3 (diagonal, relative) and 1e-3 (off-diagonal, relative to the
 * geometric mean of the diagonals). */
#include <math.h>

#include "driver.h"
#include "fixture.h"
#include "test_util.h"

int main(void) {
  const int64_t nside = 16;
  const double omega = 4.0 * M_PI / (12.0 * nside * nside);
  /* C_l = 1 and sigma^2 Omega = 1: noise equal to signal at every ell. */
  qp_fixture f = {.name = "fullsky",
                  .nside = nside,
                  .cut_deg = 0,
                  .ell_min = 2,
                  .lmax = (int)nside - 1,
                  .lmax_signal = (int)nside - 1,
                  .bin_width = 1,
                  .sim_lmax = (int)nside - 1,
                  .n_maps = 1,
                  .noise_variance = 1.0 / omega,
                  .cl_flat = 1.0,
                  .seed = 11};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem p;
  qp_meter_sample baseline;
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  TEST_ASSERT(p.n_pix == 12 * nside * nside, "full sky: n_pix %lld", (long long)p.n_pix);
  const int np = p.n_params;
  double worst_diag = 0, worst_off = 0;
  for (int q = 0; q < np; ++q) {
    int l = p.bin_lo[q];
    double cl = qp_fixture_cl(&f, l) + f.noise_variance * omega;
    double expected = (2.0 * l + 1.0) / 2.0 / (cl * cl);
    double d = fabs(p.fisher[q + q * np] / expected - 1.0);
    worst_diag = qp_test_worst(worst_diag, d);
    for (int r = 0; r < np; ++r) {
      if (r == q) continue;
      double off = fabs(p.fisher[q + r * np]) / sqrt(p.fisher[q + q * np] * p.fisher[r + r * np]);
      worst_off = qp_test_worst(worst_off, off);
    }
  }
  printf("full sky nside %lld, ell 2..%d: max |F_ll / analytic - 1| = %.3e, max off-diagonal "
         "%.3e of the diagonal\n",
         (long long)nside, f.lmax, worst_diag, worst_off);
  TEST_WITHIN(worst_diag, 1e-3, "diagonal deviates from the analytic Fisher");
  TEST_WITHIN(worst_off, 1e-3, "largest off-diagonal, relative to the diagonal");
  /* F must be symmetric positive definite: error bars exist for every parameter. */
  for (int q = 0; q < np; ++q)
    TEST_ASSERT(isfinite(p.error[q]) && p.error[q] > 0, "error bar %d is %g", q, p.error[q]);
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return TEST_RETURN();
}
