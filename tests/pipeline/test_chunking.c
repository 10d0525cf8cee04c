/* test_chunking: under memory.host_limit at about half the unchunked peak, the planner holds
 * fewer products in fisher_run (streaming the rest) and fewer bin matrices in spectra_run;
 * the tracked bytes equal the chunked model's exactly, the run's measured peak RSS (VmHWM of
 * every stage) stays below the limit, and F, b, y and
 * C_hat equal the unchunked run's to 1e-12 relative. The same for cross-spectra (maps2) in bins
 * of two multipoles, whose covariance M and window functions come chunk by chunk too
 * (stage_fisher.c, qp_cross_t_column). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "test_util.h"

/* Every stage of a chunked run: tracked peak == predicted, measured peak RSS under `limit`
 * (not in the sanitizer build: ASan's shadow and quarantine are resident, untracked); `print`
 * each stage's measured peak. */
static void check_stages(const qp_problem *p, double limit, const char *label, int print) {
  for (int s = 0; s < QP_STAGE_COUNT; ++s) {
    const qp_stage_record *r = qp_stage_record_find(qp_stage_name((qp_stage_id)s));
    if (print)
      printf("  %-16s measured peak RSS %.1f MiB\n", r->name, r->meter_end.hwm / 1048576.0);
    TEST_ASSERT(r->tracked_peak == qp_model_stage_peak(&p->plan->model, (qp_stage_id)s),
                "%s%s: tracked peak %zu B, predicted %zu B", label, r->name, r->tracked_peak,
                qp_model_stage_peak(&p->plan->model, (qp_stage_id)s));
    TEST_ASSERT(QP_TEST_SANITIZED || (double)r->meter_end.hwm < limit,
                "%s%s: measured peak %.1f MiB above the limit %.1f MiB", label, r->name,
                r->meter_end.hwm / 1048576.0, limit / 1048576.0);
  }
}

/* Cross-spectra: the fixture's maps crossed with another draw (noise variance 9), bins of 2. */
static void check_cross(const qp_fixture *base) {
  qp_fixture a = *base;
  a.name = "chunking_xa";
  a.bin_width = 2;
  qp_config cfg;
  TEST_OK(qp_fixture_write(&a, &cfg));
  TEST_OK(qp_fixture_add_maps2(&a, "chunking_xb", 22, 9.0, &cfg));
  qp_problem whole, chunked;
  qp_meter_sample b0, b1;
  cfg.path = QP_PATH_PIXEL_DIRECT;
  TEST_OK(qp_fixture_run(&cfg, &whole, &b0));
  const size_t unchunked = qp_model_peak(&whole.plan->model) + whole.plan->model.overhead_bytes;
  /* The unchunked results kept aside, the rest freed: the chunked run's bytes are its own. */
  const int64_t np = whole.n_params, nm = whole.n_maps, nw = whole.plan->model_dims.n_window;
  const int64_t counts[6] = {np * np, np, nm * np, nm * np, np * np, np * nw};
  const double *from[6] = {whole.fisher, whole.noise_bias,         whole.yb,
                           whole.cl,     whole.spectra_covariance, whole.window};
  double *kept[6];
  for (int k = 0; k < 6; ++k) {
    kept[k] = malloc((size_t)counts[k] * sizeof **kept);
    memcpy(kept[k], from[k], (size_t)counts[k] * sizeof **kept);
  }
  qp_problem_free(&whole);
  /* C, C_B and R = L_B^-1 S L_A^-T beside the products: at 0.85 of the unchunked peak, not 1/2
   * (where even one product a chunk would not fit): chunks of 2 here, the last one short. */
  cfg.host_limit = 0.85 * (double)unchunked;
  if (qp_fixture_run(&cfg, &chunked, &b1) != QP_OK) {
    TEST_ASSERT(0, "cross: the chunked run failed: %s", qp_error_message());
    for (int k = 0; k < 6; ++k)
      free(kept[k]);
    qp_config_free(&cfg);
    return;
  }
  const qp_model_dims *d = &chunked.plan->model_dims;
  printf("cross: %d parameters, %lld window columns: unchunked peak %.1f MiB; limit %.1f MiB -> "
         "fisher chunk %lld\n",
         chunked.n_params, (long long)nw, unchunked / 1048576.0, cfg.host_limit / 1048576.0,
         (long long)d->fisher_chunk);
  TEST_ASSERT(d->fisher_chunk < np, "cross: the planner did not chunk (fisher %lld)",
              (long long)d->fisher_chunk);
  check_stages(&chunked, cfg.host_limit, "cross ", 0);
  static const char *const names[6] = {"F", "b", "y", "C_hat", "covariance", "window"};
  const double *got[6] = {chunked.fisher, chunked.noise_bias,         chunked.yb,
                          chunked.cl,     chunked.spectra_covariance, chunked.window};
  for (int k = 0; k < 6; ++k) {
    const double dk = qp_test_max_rel_diff(kept[k], got[k], (size_t)counts[k]);
    printf("cross chunked vs unchunked: %s %.2e\n", names[k], dk);
    TEST_WITHIN(dk, 1e-12, "cross: chunked %s differs from the unchunked", names[k]);
    free(kept[k]);
  }
  qp_problem_free(&chunked);
  qp_config_free(&cfg);
}

int main(void) {
  qp_fixture f = {.name = "chunking",
                  .nside = 16,
                  .cut_deg = 30,
                  .ell_min = 2,
                  .lmax = 15,
                  .lmax_signal = 18,
                  .bin_width = 1,
                  .sim_lmax = 18,
                  .n_maps = 3,
                  .noise_variance = 5.0,
                  .dl_flat = 100.0,
                  .seed = 21};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_problem whole, chunked;
  qp_meter_sample b0, b1;
  TEST_OK(qp_fixture_run(&cfg, &whole, &b0));
  const size_t unchunked = qp_model_peak(&whole.plan->model) + whole.plan->model.overhead_bytes;
  /* Keep the unchunked results and free the rest, so that the chunked run's RSS is its own. */
  const int64_t np = whole.n_params, nm = whole.n_maps;
  double *keep = malloc((size_t)(np * np + np + 2 * nm * np) * sizeof *keep);
  double *fisher = keep, *bias = fisher + np * np, *yb = bias + np, *cl = yb + nm * np;
  memcpy(fisher, whole.fisher, (size_t)(np * np) * sizeof *keep);
  memcpy(bias, whole.noise_bias, (size_t)np * sizeof *keep);
  memcpy(yb, whole.yb, (size_t)(nm * np) * sizeof *keep);
  memcpy(cl, whole.cl, (size_t)(nm * np) * sizeof *keep);
  qp_problem_free(&whole);
  cfg.host_limit = 0.5 * (double)unchunked;
  TEST_OK(qp_fixture_run(&cfg, &chunked, &b1));
  const qp_model_dims *d = &chunked.plan->model_dims;
  printf("n_pix %lld, %d parameters: unchunked peak %.1f MiB; limit %.1f MiB -> fisher chunk "
         "%lld, spectra chunk %lld, predicted peak %.1f MiB\n",
         (long long)chunked.n_pix, chunked.n_params, unchunked / 1048576.0,
         cfg.host_limit / 1048576.0, (long long)d->fisher_chunk, (long long)d->spectra_chunk,
         (qp_model_peak(&chunked.plan->model) + chunked.plan->model.overhead_bytes) / 1048576.0);
  TEST_ASSERT(d->fisher_chunk < chunked.n_params && d->spectra_chunk < chunked.n_params,
              "the planner did not chunk (fisher %lld, spectra %lld)", (long long)d->fisher_chunk,
              (long long)d->spectra_chunk);
  check_stages(&chunked, cfg.host_limit, "", 1);

  double df = qp_test_max_rel_diff(fisher, chunked.fisher, (size_t)(np * np));
  double db = qp_test_max_rel_diff(bias, chunked.noise_bias, (size_t)np);
  double dy = qp_test_max_rel_diff(yb, chunked.yb, (size_t)(nm * np));
  double dc = qp_test_max_rel_diff(cl, chunked.cl, (size_t)(nm * np));
  printf("chunked vs unchunked: F %.2e, b %.2e, y %.2e, C_hat %.2e\n", df, db, dy, dc);
  TEST_WITHIN(df, 1e-12, "chunked F differs from the unchunked");
  TEST_WITHIN(db, 1e-12, "chunked b differs from the unchunked");
  TEST_WITHIN(dy, 1e-12, "chunked y differs from the unchunked");
  TEST_WITHIN(dc, 1e-12, "chunked C_hat differs from the unchunked");
  free(keep);
  qp_problem_free(&chunked);
  qp_config_free(&cfg);
  check_cross(&f);
  return TEST_RETURN();
}
