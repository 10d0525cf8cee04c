/* cmd_common.h: what `qmlpipe budget` and `qmlpipe plan` share: load the config, plan the run
 * (nothing large is allocated), print, check memory.host_limit. */
#ifndef QP_CMD_COMMON_H
#define QP_CMD_COMMON_H

#include <stdio.h>

#include "problem.h"

/** Runs `CONFIG.yaml` through the plan and hands the problem to `print`; returns the exit
 *  status (0, 2 for usage, QP_ERR_BUDGET's when the plan exceeds memory.host_limit). */
int qp_cmd_with_plan(int argc, char **argv, void (*usage)(FILE *out),
                     void (*print)(const qp_problem *p));

#endif
