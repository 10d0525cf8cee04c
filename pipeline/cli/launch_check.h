/* launch_check.h: is this process one of several started by a launcher (mpiexec, srun -n N)
 * while MPI is not running? Then every copy would run the whole analysis and race on the one
 * results file; `qmlpipe run` refuses instead (exit 9). */
#ifndef QP_LAUNCH_CHECK_H
#define QP_LAUNCH_CHECK_H

#include "qp_error.h"

/** Looks up an environment variable: its value, or NULL when unset. `ctx` is the caller's. */
typedef const char *(*qp_env_lookup)(const char *name, void *ctx);

/** qp_env_lookup over the process environment (getenv); `ctx` is unused. */
const char *qp_env_process(const char *name, void *ctx);

/** Decides whether a run may start as a single process.
 *
 *  @param mpi_active  1 when MPI is running (qp_comm_active()): the launcher's processes are
 *                     ranks of one job, nothing to refuse.
 *  @param mpi_built   1 when this build has MPI (QP_HAVE_MPI): chooses the advice given.
 *  @param lookup,ctx  the environment to read (qp_env_process for the real one).
 *
 *  Signs of several processes, read from the launchers' variables (whole decimal numbers;
 *  anything else is ignored):
 *   - Open MPI: OMPI_COMM_WORLD_SIZE > 1;
 *   - PMI-1/PMI-2 (MPICH, Intel MPI, srun --mpi=pmi2): PMI_SIZE > 1, or PMI_RANK > 0;
 *   - PMIx (srun --mpi=pmix, Open MPI 5): PMIX_RANK > 0 (PMIx exports no size);
 *   - Slurm: inside an srun step of several tasks, SLURM_STEP_NUM_TASKS > 1, or when that is
 *     absent SLURM_NTASKS > 1 together with SLURM_STEP_ID or SLURM_PROCID > 0. A batch script
 *     (sbatch -n 16 runs it once, with SLURM_NTASKS=16 but no step variables) is one process.
 *
 *  Not collective. Returns QP_OK, or QP_ERR_MPI (exit 9) with a message naming the variable,
 *  its value and what to do (build with -DQP_ENABLE_MPI=ON, or launch one task). */
qp_err qp_launch_check(int mpi_active, int mpi_built, qp_env_lookup lookup, void *ctx);

#endif
