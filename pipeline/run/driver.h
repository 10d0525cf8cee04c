/* driver.h: runs an analysis: the four stages inside their budget stages, then the results
 * file. Used by `qmlpipe run` and by the tests. */
#ifndef QP_DRIVER_H
#define QP_DRIVER_H

#include "problem.h"
#include "warm_up.h"

typedef struct qp_run_options {
  int progress;      /* progress lines on stderr */
  int write_results; /* 1: write cfg->output */
  int resume;        /* 1: continue from the newest checkpoint in cfg->checkpoint */
  /* Slurm's JobAcctGatherType and where it was read (slurm/gather_type.h), recorded in the
   * results for `validate --sacct`; NULL outside a Slurm job or when not found. */
  const char *slurm_gather, *slurm_gather_source;
} qp_run_options;

/** The linear-algebra backend of a run: the config's, or the distributed one (its process
 *  grid set up from the config's grid block) when MPI runs several ranks or backend is dist. */
qp_err qp_driver_backend(const qp_config *cfg, const qp_linalg_ops **ops);

/** Runs every stage on `cfg`. On success `p` holds the results (free it with
 *  qp_problem_free); on failure nothing is written and `p` is freed. */
qp_err qp_driver_run(const qp_config *cfg, const qp_run_options *options, qp_problem *p,
                     qp_meter_sample *baseline);

#endif
