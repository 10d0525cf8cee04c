/* cmd_common.c: see cmd_common.h. */
#include "cmd_common.h"

#include <string.h>

#include "inputs.h"

int qp_cmd_with_plan(int argc, char **argv, void (*usage)(FILE *out),
                     void (*print)(const qp_problem *p)) {
  if (argc != 2 || argv[1][0] == '-') {
    int help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    usage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  qp_config cfg;
  qp_err err = qp_config_load(argv[1], &cfg);
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  if (err == QP_OK) err = qp_inputs_plan(&p);
  if (err == QP_OK) {
    print(&p);
    err = qp_inputs_check_limit(&p);
  }
  if (err != QP_OK) qp_error_print(stderr, 0);
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return qp_err_exit_status(err);
}
