/* cmd_budget.c: `qmlpipe budget CONFIG.yaml`: the model's table for a config. Reads only the
 * headers and the mask (to count observed pixels); allocates nothing of size n_pix^2. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "inputs.h"

static void qp_budget_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe budget CONFIG.yaml\n"
          "  Prints, per stage, the persistent and transient memory terms with their exact\n"
          "  bytes and the peak, for the config's mask, maps, noise and bins, without\n"
          "  running anything big. Exit status 0 when it fits memory.host_limit, else %d.\n",
          qp_err_exit_status(QP_ERR_BUDGET));
}

int qp_cmd_budget(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    int help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    qp_budget_usage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  qp_config cfg;
  qp_err err = qp_config_load(argv[1], &cfg);
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  if (err == QP_OK) err = qp_inputs_plan(&p);
  if (err == QP_OK) {
    printf("route: %s\n", p.path_reason);
    qp_model_print(stdout, &p.model);
    if (cfg.host_limit > 0) printf("memory.host_limit %.3f GiB\n", cfg.host_limit / 1073741824.0);
    err = qp_inputs_check_limit(&p);
  }
  if (err != QP_OK) qp_error_print(stderr, 0);
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return qp_err_exit_status(err);
}
