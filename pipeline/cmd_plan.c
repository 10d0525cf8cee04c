/* cmd_plan.c: `qmlpipe plan CONFIG.yaml`: the planner's decision for a config (route, chunks)
 * and the predicted peak of every stage, against memory.host_limit. Reads the mask (or takes
 * the config's `dimensions:`); allocates nothing of size n_pix^2. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "cmd_common.h"

static void qp_plan_usage(FILE *out) {
  fprintf(out, "usage: qmlpipe plan CONFIG.yaml [--ranks P [--grid RxC] [--block B] [--ranks-per-node K]\n"
          "       [--mem-per-node M]]\n"
               "  Prints the route the planner picks (path, harmonic method, chunks of the\n"
               "  pixel-direct products and bin matrices under memory.host_limit), why, and the\n"
               "  predicted peak of each stage. `qmlpipe budget` prints the terms of that plan.\n"
               "  A config may give `dimensions: {n_pix, n_modes, lmax_signal, lmax, n_bins}` in\n"
               "  place of maps and mask to size a job before having data. Exit status 0 when the\n"
               "  plan fits memory.host_limit (and --mem-per-node), else %d.\n" QP_SIZING_HELP,
          qp_err_exit_status(QP_ERR_BUDGET));
}

static void qp_plan_print(const qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const qp_model *m = &p->model;
  const double mib = 1048576.0;
  printf("qmlpipe plan: %s\n", cfg->source);
  printf("  n_pix %lld (T %lld, Q/U %lld pixels), n_modes %lld, %d parameters, %lld map(s)\n",
         (long long)p->n_pix, (long long)p->n_obs_t, (long long)p->n_obs_p,
         (long long)p->n_modes, p->n_params, (long long)p->n_maps);
  printf("  route: %s\n", p->path_reason);
  if (p->path_used == QP_PATH_PIXEL_DIRECT)
    printf("  fisher_run holds %lld of %d products; spectra_run builds %lld bin matrices at a "
           "time\n",
           (long long)m->dims.fisher_chunk, p->n_params, (long long)m->dims.spectra_chunk);
  printf("  %-18s %16s %16s\n", "stage", "peak MiB", "with overhead");
  for (int s = 0; s < QP_STAGE_COUNT; ++s) {
    size_t peak = qp_model_stage_peak(m, (qp_stage_id)s);
    printf("  %-18s %16.2f %16.2f\n", qp_stage_name((qp_stage_id)s), peak / mib,
           (peak + m->overhead_bytes) / mib);
  }
  size_t need = qp_model_peak(m) + m->overhead_bytes;
  if (cfg->host_limit > 0)
    printf("  lifetime peak %.2f MiB of memory.host_limit %.2f MiB: %s\n", need / mib,
           cfg->host_limit / mib, (double)need <= cfg->host_limit ? "fits" : "does not fit");
  else
    printf("  lifetime peak %.2f MiB (no memory.host_limit set)\n", need / mib);
}

int qp_cmd_plan(int argc, char **argv) {
  return qp_cmd_with_plan(argc, argv, qp_plan_usage, qp_plan_print);
}
