/* test_fisher_fullsky_pol: the full-sky analytic Fisher matrix for EE and BB (QML.md 5):
 * with isotropic white noise sigma^2 per pixel of solid angle Omega in Q and U, no beam and
 * single-ell bins, F is diagonal with F_ll = (2l+1)/2 (C_l + sigma^2 Omega)^-2 for EE and for
 * BB alike, up to HEALPix's quadrature error (ell < nside). Checked to 1e-3, on QU at nside 8
 * (n_pix 1536) with C^EE = 1, C^BB = 0.5 and sigma^2 Omega = 1. */
#include <math.h>

#include "fixture.h"
#include "test_util.h"

int main(void) {
  const int64_t nside = 8;
  const double omega = 4.0 * M_PI / (12.0 * nside * nside);
  qp_fixture f = {.name = "fullsky_pol",
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
                  .seed = 12,
                  .fields = QP_FIELDS_QU,
                  .ee_ratio = 1.0,
                  .bb_ratio = 0.5};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem p;
  qp_meter_sample baseline;
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  TEST_ASSERT(p.n_pix == 2 * 12 * nside * nside, "QU full sky: n_pix %lld", (long long)p.n_pix);
  const int np = p.n_params;
  double worst_diag = 0, worst_off = 0;
  for (int q = 0; q < np; ++q) {
    const qp_spectrum s = cfg.spectra[q / p.n_bins];
    const int l = p.bin_lo[q % p.n_bins];
    double c = qp_fixture_cl_spectrum(&f, s, l) + f.noise_variance * omega;
    double expected = (2.0 * l + 1.0) / 2.0 / (c * c);
    double d = fabs(p.fisher[q + q * np] / expected - 1.0);
    worst_diag = qp_test_worst(worst_diag, d);
    for (int r = 0; r < np; ++r)
      if (r != q)
        worst_off = qp_test_worst(worst_off, fabs(p.fisher[q + r * np]) /
                                                 sqrt(p.fisher[q + q * np] * p.fisher[r + r * np]));
  }
  printf("QU full sky nside %lld, EE and BB, ell 2..%d: max |F_ll / analytic - 1| = %.3e, max "
         "off-diagonal %.3e of the diagonal\n",
         (long long)nside, f.lmax, worst_diag, worst_off);
  TEST_WITHIN(worst_diag, 1e-3, "diagonal deviates from the analytic Fisher");
  TEST_WITHIN(worst_off, 1e-3, "largest off-diagonal, relative to the diagonal");
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return TEST_RETURN();
}
