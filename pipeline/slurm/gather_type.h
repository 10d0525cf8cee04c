/* gather_type.h: Slurm's JobAcctGatherType as the job's own slurm.conf says it, which `qmlpipe
 * run` records in the results file (/budget slurm_jobacct_gather) so that `qmlpipe validate
 * --sacct` knows how MaxRSS was counted without being told (docs/slurm.md, "Placement, gather
 * type and what validate says"): jobacct_gather/cgroup counts a task's anonymous memory, and
 * on a step of several nodes (Slurm 22.05) only the first node's tasks; .../linux its RSS. */
#ifndef QP_GATHER_TYPE_H
#define QP_GATHER_TYPE_H

typedef struct qp_slurm_gather {
  char type[96];    /* "jobacct_gather/linux" */
  char source[640]; /* "JobAcctGatherType in /etc/slurm/slurm.conf (SLURM_CONF)" */
} qp_slurm_gather;

/** Inside a Slurm job (SLURM_JOB_ID set): the JobAcctGatherType line of the slurm.conf the job
 *  sees (SLURM_CONF, which slurmd sets for configless sites too, else /etc/slurm/slurm.conf);
 *  the last one wins, as in Slurm. 1 when found; 0 outside a job, or without a readable
 *  regular file holding the key (nothing is recorded then; validate says so). Reads one small
 *  file, starts nothing, never fails the run. */
int qp_slurm_gather_find(qp_slurm_gather *g);

#endif
