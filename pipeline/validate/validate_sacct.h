/* validate_sacct.h: the memory model checked against Slurm's accounting of the job that wrote a
 * results file (`qmlpipe validate RESULTS --sacct FILE [--cgroup-peak BYTES|FILE]`,
 * docs/slurm.md): the largest rank's predicted peak against the MaxRSS of the job's srun step,
 * the largest node's against the job cgroup's peak. */
#ifndef QP_VALIDATE_SACCT_H
#define QP_VALIDATE_SACCT_H

#include <stdio.h>

#include "qp_error.h"
#include "validate_set.h"

/* Slurm's JobAcctGatherType: how MaxRSS counts (docs/slurm.md). */
enum { QP_SACCT_GATHER_CGROUP = 0, QP_SACCT_GATHER_LINUX = 1 };

typedef struct qp_sacct_request {
  const char *results; /* the results file the job wrote */
  const char *sacct;   /* `sacct -j JOB --parsable2 --noconvert -o ...` output */
  const char *cgroup;  /* --cgroup-peak: bytes, or a file of "job step bytes" lines; or NULL */
  int gather;          /* --sacct-gather: QP_SACCT_GATHER_*; -1: as the run recorded it */
  double tolerance;
  const qp_val_set *set; /* what validate read of `results` (its file 0): the stages' peaks */
} qp_sacct_request;

/** Prints the job table to `out`; *n_failed counts the comparisons beyond the tolerance (an
 *  OUT_OF_MEMORY step counts as one). The nodes are the hosts the ranks recorded
 *  (/budget/ranks/host; blocks of ranks_per_node in older files). The gather type is
 *  --sacct-gather's, else the one the run recorded, else cgroup. QP_ERR_INPUT when the sacct
 *  output is malformed, has no srun step or no MaxRSS for it, or a step did not complete for
 *  another reason; QP_ERR_UNSUPPORTED (after the table) when sacct's MaxRSS of a multi-node
 *  step is below what a rank on another node than MaxRSSNode measured itself under
 *  jobacct_gather/cgroup (its undercount: the figure can neither pass nor fail the model);
 *  the results file's errors as they come. */
qp_err qp_validate_sacct(const qp_sacct_request *request, FILE *out, int *n_failed);

#endif
