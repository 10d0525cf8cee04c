/* plan_job.h: what `qmlpipe plan` makes of a plan for a batch system: the Slurm figures of the
 * job (memory per node with a margin, nodes, tasks, cpus, a --time estimated from the route's
 * flops), the plan as one JSON object (docs/plan-json.md) and a ready job script written
 * atomically (--sbatch FILE). */
#ifndef QP_PLAN_JOB_H
#define QP_PLAN_JOB_H

#include <stdint.h>
#include <stdio.h>

#include "memory_model.h"
#include "problem.h"

/** A plan request (the command line) and, once planned, the figures of the job. */
typedef struct qp_plan_job {
  /* sizing (budget and plan) */
  int ranks; /* 0: one process without MPI */
  int rows, cols, block, per_node;
  int grid_given, per_node_given;
  double mem_per_node;
  /* the job (plan only) */
  const char *sbatch; /* --sbatch FILE, or NULL */
  int force, json, keep_output;
  int job_limit;     /* --job-limit: plan to the limit the job enforces (as `run`) */
  int nodes;         /* --nodes (0: from ranks and --ranks-per-node) */
  int cpus_per_task; /* --cpus-per-task (default 1) */
  int gpus;          /* --gpus: GPUs per node, one rank each (0: not given) */
  const char *partition, *account;
  const char *checkpoint; /* --checkpoint DIR (with --sbatch): the script's run checkpoints to
                           * DIR and resumes, and the job requeues itself (QP_JOB_MAX_REQUEUE) */
  /* figures, filled after planning: peaks with the overhead, in bytes; for one process
   * without --ranks the node is the process */
  size_t rank_stage[QP_STAGE_COUNT], node_stage[QP_STAGE_COUNT];
  size_t rank_peak, node_peak;
  int fits; /* the plan fits memory.host_limit and --mem-per-node */
} qp_plan_job;

/** The --time estimate: the route's leading flop count at the measured or calibrated dgemm
 *  rate per core (flop_rate.h) times cpus per task and tasks, times the factor (the stages
 *  run below the dgemm rate: 53-57 GFLOP/s against 86 measured, docs/benchmarks.md; and the
 *  compute nodes may differ from the machine that planned), plus a fixed start-up (reading,
 *  planning, writing, the queue's own start). */
#define QP_JOB_TIME_FACTOR 3.0
#define QP_JOB_STARTUP_MINUTES 10
/** Memory margin over the largest node's predicted peak: 10%, at least 256 MiB. */
#define QP_JOB_MEM_MARGIN 0.10
#define QP_JOB_MEM_MARGIN_MIN ((size_t)256 << 20)
/** A script with --checkpoint requeues its job (`scontrol requeue`) when srun ends with a
 *  status that is not qmlpipe's own (a rank killed, a node lost, a step that could not start),
 *  while SLURM_RESTART_COUNT is below this: a fault that recurs does not loop. */
#define QP_JOB_MAX_REQUEUE 2
/** `qmlpipe validate`'s tolerance in the script's last step. */
#define QP_JOB_VALIDATE_TOLERANCE "0.05"

/** The Slurm figures of a planned job. */
typedef struct qp_job_figures {
  int64_t mem_mib;     /* --mem, per node, MiB: node peak + margin, rounded up */
  size_t margin_bytes; /* the margin */
  int nodes, tasks, tasks_per_node, cpus_per_task;
  double flops_per_core;  /* the rate used (flop_rate.h) */
  char rate_source[320];  /* where it came from */
  double compute_seconds; /* flops / (rate x cores), before the factor */
  int64_t minutes;        /* --time in whole minutes */
  char time[32];          /* --time as HH:MM:SS or D-HH:MM:SS */
  int mpi;                /* 1: srun --mpi=pmix with --grid; 0: one task, --mpi=none */
  int gpus_per_node;      /* --gpus-per-node: one per task on a node (backend cuda or --gpus);
                           * 0: a job without GPUs */
} qp_job_figures;

/** The figures of `job` (planned: its node peak filled) for problem `p`, its --time from the
 *  rate of qp_job_flop_rate (calibrated, else measured now). Fails only when the rate cannot
 *  be measured (no memory for its matrices). */
qp_err qp_job_figures_compute(const qp_problem *p, const qp_plan_job *job, qp_job_figures *f);

/** Formats `minutes` as Slurm's --time: HH:MM:SS below a day, D-HH:MM:SS from a day on
 *  (at most 365 days: a longer estimate is clamped to it). */
void qp_job_format_time(int64_t minutes, char out[32]);

/** Writes the plan as one JSON object (docs/plan-json.md) to `out`; `script` is the absolute
 *  path of the job script written, or NULL. */
void qp_job_print_json(FILE *out, const qp_problem *p, const qp_plan_job *job,
                       const qp_job_figures *f, const char *script);

/** Writes the job script `job->sbatch`: a private temporary beside it (atomic_file.h), made
 *  executable, then linked (no --force: QP_ERR_IO when the file exists) or renamed (--force)
 *  into place. `script` (PATH_MAX bytes) gets the absolute path written. QP_ERR_IO naming the
 *  file and the system's reason; QP_ERR_INPUT for paths a script cannot hold (control
 *  characters). */
qp_err qp_job_write_sbatch(const qp_problem *p, const qp_plan_job *job, const qp_job_figures *f,
                           char *script);

#endif
