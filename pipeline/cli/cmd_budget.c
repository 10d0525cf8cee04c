/* cmd_budget.c: `qmlpipe budget CONFIG.yaml`: the model's table for a config. Reads only the
 * headers and the mask (to count observed pixels); allocates nothing of size n_pix^2. */
#include <stdio.h>
#include <string.h>

#include "bytes_text.h"
#include "commands.h"
#include "cmd_common.h"

static void qp_budget_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe budget CONFIG.yaml [--ranks P [--grid RxC] [--block B] [--ranks-per-node K]\n"
          "       [--mem-per-node M]]\n"
          "  Prints, per stage, the persistent and transient memory terms with their exact\n"
          "  bytes and the peak, for the config's mask, maps, noise and bins, without\n"
          "  running anything big. Exit status 0 when it fits memory.host_limit, else %d.\n"
          QP_SIZING_HELP,
          qp_err_exit_status(QP_ERR_BUDGET));
}

static void qp_budget_print(const qp_problem *p) {
  printf("route: %s\n", p->plan->path_reason);
  if (p->plan->model_dims.cross_maps) printf("cross-spectra: maps crossed with maps2\n");
  qp_model_print(stdout, &p->plan->model_dims, &p->plan->model);
  /* The plan's limit: memory.host_limit, or without it the --mem-per-node share. */
  if (p->plan->host_limit > 0)
    printf("memory.host_limit %s\n", qp_bytes_readable(p->plan->host_limit).text);
}

int qp_cmd_budget(int argc, char **argv) {
  return qp_cmd_with_plan(argc, argv, qp_budget_usage, qp_budget_print, 0, NULL);
}
