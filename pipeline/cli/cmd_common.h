/* cmd_common.h: what `qmlpipe budget` and `qmlpipe plan` share: load the config, plan the run
 * (nothing large is allocated), print, check memory.host_limit. */
#ifndef QP_CMD_COMMON_H
#define QP_CMD_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "cmd_args.h"
#include "plan_job.h"
#include "problem.h"

/** The sizing options both commands take, for their usage text. */
#define QP_SIZING_HELP                                                                             \
  "  Sizing a distributed job (no MPI needed; docs/distributed.md):\n"                             \
  "    --ranks P           the job's MPI ranks (at most 65536): prints every rank's and\n"         \
  "                        node's peaks\n"                                                         \
  "    --grid RxC          the process grid (default: the squarest, or with --mem-per-node\n"      \
  "                        the one whose largest node is smallest)\n"                              \
  "    --block B           ScaLAPACK block size (default 64, at most 4096)\n"                      \
  "    --ranks-per-node K  consecutive ranks sharing a node (default 1)\n"                         \
  "    --mem-per-node M    a node's memory, e.g. 180GiB: the grid is chosen to fit it, and\n"      \
  "                        without memory.host_limit each rank plans for M / K\n"

/** Runs `CONFIG.yaml` through the plan and hands the problem to `print` (text, not with
 *  --json); then, when `finish` is given (plan), hands it the problem and the job's figures
 *  and `err`, the plan's limit check (0 when it fits): finish writes the JSON and the job
 *  script and returns its own status. `job_options`: 1 accepts --sbatch, --json and the job's
 *  options (plan). Returns the exit status (0, 2 for usage, QP_ERR_BUDGET's when the plan
 *  exceeds memory.host_limit, another error's). */
int qp_cmd_with_plan(int argc, char **argv, void (*usage)(FILE *out),
                     void (*print)(const qp_problem *p), int job_options,
                     qp_err (*finish)(const qp_problem *p, qp_plan_job *job, qp_err err));

#endif
