/* test_unbiased: over 400 simulated nside-8 maps with a Galactic cut, the mean of C_hat lies
 * within 3 sigma of the input C_l (sigma = sqrt(diag F^-1) / sqrt(400)) and the scatter of
 * C_hat is within 15% of sqrt(diag F^-1), for every multipole. The maps are drawn from the
 * model's own covariance (same C_l up to lmax_signal, same white noise), with a fixed seed.
 * 400 maps, not the minimum 200: C_hat at low ell is chi-square-like, so the sample scatter of
 * 200 maps has a ~6% standard deviation and a 15% bound would be only ~2.5 sigma over 15
 * multipoles (seen: one multipole at 1.19 with 200 maps, all within 5% with 2000). */
#include <math.h>
#include <stdlib.h>

#include "driver.h"
#include "fixture.h"
#include "test_util.h"

int main(void) {
  const int n_maps = 400;
  /* lmax 13 < lmax_signal 16: the maps carry signal up to 16, so the estimates are unbiased
   * only if the noise bias holds S_fixed of ell 14..16 too (the switch, QML.md 3). */
  qp_fixture f = {.name = "unbiased",
                  .nside = 8,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 13,
                  .lmax_signal = 16,
                  .bin_width = 1,
                  .sim_lmax = 16,
                  .n_maps = n_maps,
                  .noise_variance = 2.0,
                  .dl_flat = 20.0,
                  .seed = 2026};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem p;
  qp_meter_sample baseline;
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  const int np = p.n_params;
  int biased = 0, off_scatter = 0;
  printf("%4s %12s %12s %12s %8s %8s\n", "ell", "input", "mean C_hat", "sigma", "pull", "scatter");
  for (int q = 0; q < np; ++q) {
    double mean = 0, var = 0;
    for (int m = 0; m < n_maps; ++m)
      mean += p.cl[m * np + q];
    mean /= n_maps;
    for (int m = 0; m < n_maps; ++m)
      var += pow(p.cl[m * np + q] - mean, 2);
    double scatter = sqrt(var / (n_maps - 1));
    double input = qp_fixture_cl(&f, p.bin_lo[q]);
    double pull = (mean - input) / (p.error[q] / sqrt((double)n_maps));
    double ratio = scatter / p.error[q];
    printf("%4d %12.5g %12.5g %12.5g %8.2f %8.3f\n", p.bin_lo[q], input, mean, p.error[q], pull,
           ratio);
    if (!qp_test_within(fabs(pull), 3.0)) ++biased; /* a NaN pull counts as biased */
    if (!qp_test_within(fabs(ratio - 1.0), 0.15)) ++off_scatter;
  }
  TEST_ASSERT(biased == 0, "%d multipoles have a mean more than 3 sigma from the input", biased);
  TEST_ASSERT(off_scatter == 0, "%d multipoles have a scatter more than 15%% from sqrt(F^-1)",
              off_scatter);
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return TEST_RETURN();
}
