/* test_high_snr: at high signal-to-noise (white noise 1e-7 of C^EE at low ell in noise power),
 * the SMW kernel W = (I + K Lambda)^-1 K (computed by LU, so nothing forces its symmetry)
 * stays symmetric to 1e-8, the Fisher matrix stays positive definite (its Cholesky succeeds:
 * spectra_run inverts it) and agrees with the projection route to 1e-6 relative. The
 * textbook form K - K (Lambda^-1 + K)^-1 K would lose 9-14 digits here; the stable
 * W = (I + K Lambda)^-1 K does not. QU at nside 8 with a Galactic cut. */
#include <math.h>
#include <string.h>

#include "fixture.h"
#include "test_util.h"

int main(void) {
  const double omega = 4.0 * M_PI / 768.0;
  qp_fixture f = {.name = "high_snr",
                  .nside = 8,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 16,
                  .lmax_signal = 16,
                  .bin_width = 1,
                  .sim_lmax = 16,
                  .n_maps = 2,
                  .noise_variance = 1e-7 / omega,
                  .cl_flat = 1.0,
                  .seed = 4,
                  .fields = QP_FIELDS_QU,
                  .ee_ratio = 1.0,
                  .bb_ratio = 0.1};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem smw, proj;
  qp_meter_sample baseline;
  cfg.path = QP_PATH_HARMONIC;
  cfg.harmonic_method = 1;
  TEST_OK(qp_fixture_run(&cfg, &smw, &baseline));
  cfg.harmonic_method = 2;
  TEST_OK(qp_fixture_run(&cfg, &proj, &baseline));
  const int np = smw.n_params;
  double asym = 0, diff = 0;
  const int64_t nm = smw.n_modes;
  const double *w = smw.kernel.data;
  for (int64_t i = 0; i < nm; ++i)
    for (int64_t j = 0; j < nm; ++j)
      asym = qp_test_worst(asym, fabs(w[i + j * nm] - w[j + i * nm]));
  asym /= qp_test_max_abs(w, (size_t)(nm * nm));
  for (int i = 0; i < np; ++i)
    for (int j = 0; j < np; ++j) {
      double scale = sqrt(smw.fisher[i + i * np] * smw.fisher[j + j * np]);
      diff = qp_test_worst(diff, fabs(smw.fisher[i + j * np] - proj.fisher[i + j * np]) / scale);
    }
  int finite = 1;
  for (int q = 0; q < np; ++q)
    finite &= isfinite(smw.error[q]) && smw.error[q] > 0;
  printf("QU nside 8, noise power 1e-7 of C^EE: SMW W asymmetry %.2e, SMW vs projection %.2e, "
         "all error bars finite: %s\n",
         asym, diff, finite ? "yes" : "no");
  TEST_WITHIN(asym, 1e-8, "SMW W asymmetric, relative to its largest entry");
  TEST_ASSERT(finite, "an SMW error bar is not finite: F^-1 failed");
  TEST_WITHIN(diff, 1e-6, "SMW and projection F differ");
  qp_problem_free(&smw);
  qp_problem_free(&proj);
  qp_config_free(&cfg);
  return TEST_RETURN();
}
