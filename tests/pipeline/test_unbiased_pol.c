/* test_unbiased_pol: all six spectra (TT EE BB TE TB EB) from 1000 simulated TQU maps at
 * nside 8 with a Galactic cut (qmlpipe's own polarised simulations, healpy's convention):
 *  - per multipole, the mean of C_hat is within 4 sigma of the input (sigma = sqrt(diag F^-1) /
 *    sqrt(1000)), and per spectrum the pulls' chi^2 / n_bins < 2.5 (90 parameters: a 3-sigma
 *    bound would fail one of them by chance one run in five);
 *  - per multipole, the scatter of C_hat is within 15% of sqrt(diag F^-1) (1000 maps put the
 *    sample scatter's own error near 3%). TB and EB are zero in the input. */
#include <math.h>

#include "fixture.h"
#include "test_util.h"

int main(void) {
  const int n_maps = 1000;
  qp_fixture f = {.name = "unbiased_pol",
                  .nside = 8,
                  .cut_deg = 20,
                  .ell_min = 2,
                  .lmax = 16,
                  .lmax_signal = 16,
                  .bin_width = 1,
                  .sim_lmax = 16,
                  .n_maps = n_maps,
                  .noise_variance = 2.0,
                  .noise_variance_pol = 0.5,
                  .dl_flat = 20.0,
                  .seed = 77,
                  .fields = QP_FIELDS_TQU,
                  .ee_ratio = 0.3,
                  .bb_ratio = 0.1,
                  .te_corr = 0.5,
                  .n_spectra = 6,
                  .spectra = {QP_TT, QP_EE, QP_BB, QP_TE, QP_TB, QP_EB}};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem p;
  qp_meter_sample baseline;
  TEST_OK(qp_fixture_run(&cfg, &p, &baseline));
  const int np = p.n_params;
  printf("TQU nside 8, n_pix %lld, %d parameters, %d maps\n", (long long)p.n_pix, np, n_maps);
  printf("%3s %4s %12s %12s %10s %7s %8s\n", "X", "ell", "input", "mean", "sigma", "pull",
         "scatter");
  for (int s = 0; s < cfg.n_spectra; ++s) {
    double chi2 = 0;
    for (int b = 0; b < p.n_bins; ++b) {
      const int q = s * p.n_bins + b, l = p.bin_lo[b];
      double mean = 0, var = 0;
      for (int m = 0; m < n_maps; ++m)
        mean += p.cl[m * np + q];
      mean /= n_maps;
      for (int m = 0; m < n_maps; ++m)
        var += pow(p.cl[m * np + q] - mean, 2);
      double scatter = sqrt(var / (n_maps - 1)) / p.error[q];
      double input = qp_fixture_cl_spectrum(&f, cfg.spectra[s], l);
      double pull = (mean - input) / (p.error[q] / sqrt((double)n_maps));
      chi2 += pull * pull;
      printf("%3s %4d %12.5g %12.5g %10.4g %7.2f %8.3f\n", qp_spectrum_name(cfg.spectra[s]), l,
             input, mean, p.error[q], pull, scatter);
      TEST_WITHIN(fabs(pull), 4.0, "%s ell %d: mean %.5g vs input %.5g (%.1f sigma)",
                  qp_spectrum_name(cfg.spectra[s]), l, mean, input, pull);
      TEST_WITHIN(fabs(scatter - 1.0), 0.15, "%s ell %d: scatter %.3f of sqrt(F^-1)",
                  qp_spectrum_name(cfg.spectra[s]), l, scatter);
    }
    printf("%s: chi^2 of the pulls %.1f for %d multipoles\n", qp_spectrum_name(cfg.spectra[s]),
           chi2, p.n_bins);
    TEST_WITHIN(chi2 / p.n_bins, 2.5, "%s: chi^2 / n", qp_spectrum_name(cfg.spectra[s]));
  }
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return TEST_RETURN();
}
