/* job_limit.h: the memory this process may use, as its batch job or its operating system
 * enforces it: the cgroup limit of its own cgroup (v1 memory.limit_in_bytes, v2 memory.max,
 * walking up the hierarchy as Slurm nests job / step / task), Slurm's SLURM_MEM_PER_NODE and
 * SLURM_MEM_PER_CPU, and RLIMIT_AS. Generic: knows nothing of the analysis; the caller plans
 * to qp_job_limit.usable.
 *
 * Shared limits. A limit of the node (SLURM_MEM_PER_NODE) is divided among the ranks on this
 * node; so is a cgroup limit, since Slurm puts every task of a job step on a node into one job
 * (and step) cgroup: only a limit set on a cgroup whose directory is named "task_*" (a
 * per-task cgroup) is taken as this process's alone. The ranks on this node are the largest of
 * the caller's count (MPI's node-local size), SLURM_NTASKS_PER_NODE and the first number of
 * SLURM_TASKS_PER_NODE ("2(x3),1" -> 2): conservative when a step runs fewer tasks than the
 * job has. SLURM_MEM_PER_CPU x SLURM_CPUS_PER_TASK (default 1) and RLIMIT_AS are per process.
 *
 * The margin. Every limit enforced from outside (all but memory.host_limit) is lowered by
 * QP_JOB_LIMIT_MARGIN_FRACTION of it, at least QP_JOB_LIMIT_MARGIN_MIN_BYTES: the page cache a
 * cgroup charges (HDF5 and FITS files read and written), and what the model does not predict
 * (the calibrated overhead's spread, libraries' small buffers). memory.host_limit is the
 * user's own figure for the predicted peak and is used as given. RLIMIT_AS counts address
 * space, not memory: it is lowered as well by what is mapped but not resident when the limit
 * is read (VmSize - VmRSS: libraries' unread pages, reserved thread stacks and arenas) and by
 * QP_JOB_LIMIT_AS_PER_THREAD_BYTES for each thread the run will have.
 *
 * Errors: a Slurm variable that is set but not a whole number (in its unit) is an input error
 * (QP_ERR_INPUT naming it: a limit misread could let the job be killed); a cgroup file that
 * is missing or unreadable is skipped (not a cgroup of this machine, or hidden in a container)
 * and one that reads as neither a number nor "max" is skipped with a note. A value of 0 in
 * SLURM_MEM_PER_NODE (`--mem=0`, the whole node) sets no limit. QMLPIPE_IGNORE_JOB_LIMIT=1 turns
 * every outside source off (only memory.host_limit is used); any value but "", "0" and "1" is
 * an input error. */
#ifndef QP_JOB_LIMIT_H
#define QP_JOB_LIMIT_H

#include <stdint.h>

#include "qp_error.h"

/** The margin kept below a limit enforced from outside: this fraction of it ... */
#define QP_JOB_LIMIT_MARGIN_FRACTION 0.05
/** ... and at least this many bytes (64 MiB). */
#define QP_JOB_LIMIT_MARGIN_MIN_BYTES (64.0 * 1048576.0)

/** Address space each thread reserves beyond what is resident, kept aside under RLIMIT_AS:
 *  OpenBLAS's per-thread buffer (128 MiB, malloc'd by each worker at load: a worker refused it
 *  retries for ever, and every threaded BLAS call then waits on it), glibc's malloc arena of
 *  the thread (64 MiB reserved) and its stack (8 MiB). */
#define QP_JOB_LIMIT_AS_PER_THREAD_BYTES (200.0 * 1048576.0)

/** Where the sources are read: NULL fields take the running system's (tests point them at a
 *  directory tree and an environment of their own). */
typedef struct qp_job_env {
  const char *proc_self_cgroup;             /* default "/proc/self/cgroup" */
  const char *cgroup_root;                  /* default "/sys/fs/cgroup" */
  const char *(*get_env)(const char *name); /* default getenv */
  /* RLIMIT_AS in bytes and the address space mapped but not resident; both -1: read with
   * getrlimit and /proc/self/status. 0 or less for rlimit_as (when not -1): none. */
  double rlimit_as, unresident;
  /* Threads that will reserve address space (QP_JOB_LIMIT_AS_PER_THREAD_BYTES each) under
   * RLIMIT_AS; 0: the threads this process has now (/proc/self/status). */
  int threads;
  /* 1: node_ranks is the ranks really on this node (MPI's shared-memory group of a run on
   * several ranks), which Slurm's per-node task counts (SLURM_NTASKS_PER_NODE, the first
   * entry of SLURM_TASKS_PER_NODE: another node's under uneven placement) must not raise;
   * 0: the larger of node_ranks and Slurm's. */
  int node_ranks_exact;
} qp_job_env;

typedef struct qp_job_limit {
  double limit;     /* the deciding limit in bytes as found (after sharing), 0 when none */
  double margin;    /* bytes kept aside from it (0 for memory.host_limit) */
  double usable;    /* limit - margin: what the plan may use; 0 when there is no limit */
  int from_job;     /* 1 when an outside source decides, 0 for memory.host_limit or none */
  char source[768]; /* where the deciding limit came from, in words ("none" when none) */
  char notes[768];  /* sources skipped, and why ("" when none) */
} qp_job_limit;

/** RLIMIT_AS's soft limit (`ulimit -v`) in bytes: 0 when there is none, -1 when getrlimit
 *  fails (each caller decides what an unreadable limit means for it). */
double qp_address_space_limit(void);

/** The stack the calling thread's BLAS calls need: OpenBLAS's threaded drivers keep their job
 *  tables on the caller's stack, and its dgetrf (the SMW route's LU) died of SIGSEGV with
 *  `ulimit -s` below 4 MiB (Debian's OpenBLAS 0.3.21, measured; its Cholesky ran at 128 KiB;
 *  8 MiB, Linux's default, is what qmlpipe asks for). */
#define QP_STACK_WANTED_BYTES (8.0 * 1048576.0)
#define QP_STACK_NEEDED_BYTES (4.0 * 1048576.0)

/** Raises the soft stack limit (RLIMIT_STACK) to QP_STACK_WANTED_BYTES where it is lower and
 *  the hard limit allows (the main thread's stack grows to whatever the soft limit is when it
 *  faults, so raising it at run time is enough). Call first in main. Never fails. */
void qp_stack_limit_raise(void);

/** QP_ERR_BUDGET naming `ulimit -s` when the soft stack limit is below QP_STACK_NEEDED_BYTES
 *  (after qp_stack_limit_raise: the hard limit forbids more), else QP_OK. */
qp_err qp_stack_limit_check(void);

/** Finds the smallest of the limits enforced on this process and `configured` (bytes of
 *  memory.host_limit, 0 or less when not set), after each one's margin, and says where it came
 *  from. `node_ranks`: the ranks on this node as the caller knows them (1 when it does not).
 *  Not collective; reads a few small files. Errors: QP_ERR_INPUT for a malformed Slurm
 *  variable or QMLPIPE_IGNORE_JOB_LIMIT value (the message names it). */
qp_err qp_job_limit_find(const qp_job_env *env, double configured, int node_ranks,
                         qp_job_limit *out);

/** The margin kept below an outside limit of `bytes` (QP_JOB_LIMIT_MARGIN_*), never more
 *  than the limit itself. */
double qp_job_limit_margin(double bytes);

#endif
