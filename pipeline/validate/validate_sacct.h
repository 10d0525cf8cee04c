/* validate_sacct.h: the memory model checked against Slurm's accounting of the job that wrote a
 * results file (`qmlpipe validate RESULTS --sacct FILE [--cgroup-peak BYTES|FILE]`,
 * docs/slurm.md): the largest rank's predicted peak against the MaxRSS of the job's srun step,
 * the largest node's against the job cgroup's peak. */
#ifndef QP_VALIDATE_SACCT_H
#define QP_VALIDATE_SACCT_H

#include <stdio.h>

#include "qp_error.h"
#include "validate_set.h"

typedef struct qp_sacct_request {
  const char *results; /* the results file the job wrote */
  const char *sacct;   /* `sacct -j JOB --parsable2 --noconvert -o ...` output */
  const char *cgroup;  /* --cgroup-peak: bytes, or a file of "job step bytes" lines; or NULL */
  int gather_linux;    /* MaxRSS from jobacct_gather/linux (the tasks' RSS); 0: .../cgroup */
  double tolerance;
  const qp_val_set *set; /* what validate read of `results` (its file 0): the stages' peaks */
} qp_sacct_request;

/** Prints the job table to `out`; *n_failed counts the comparisons beyond the tolerance (an
 *  OUT_OF_MEMORY step counts as one). QP_ERR_INPUT when the sacct output is malformed, has
 *  no srun step or no MaxRSS for it, or a step did not complete for another reason; the
 *  results file's errors as they come. */
qp_err qp_validate_sacct(const qp_sacct_request *request, FILE *out, int *n_failed);

#endif
