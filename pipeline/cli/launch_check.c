/* launch_check.c: see launch_check.h. */
#include "launch_check.h"

#include <errno.h>
#include <stdlib.h>

const char *qp_env_process(const char *name, void *ctx) {
  (void)ctx;
  return getenv(name);
}

/* The variable as a whole decimal number in *value; 0 when unset or not one. */
static int qp_env_long(qp_env_lookup lookup, void *ctx, const char *name, long *value) {
  const char *text = lookup(name, ctx);
  if (!text || !*text) return 0;
  char *end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno || *end != '\0') return 0;
  *value = v;
  return 1;
}

/* One sign of several processes: the variable, and the bound its value passes. */
typedef struct qp_launch_sign {
  const char *name;
  long above; /* a value above this means several processes */
  const char *what;
} qp_launch_sign;

qp_err qp_launch_check(int mpi_active, int mpi_built, qp_env_lookup lookup, void *ctx) {
  if (mpi_active) return QP_OK;
  static const qp_launch_sign signs[] = {
      {"OMPI_COMM_WORLD_SIZE", 1, "Open MPI's launcher started several processes"},
      {"PMI_SIZE", 1, "a PMI launcher (mpiexec, srun --mpi=pmi2) started several processes"},
      {"PMI_RANK", 0, "a PMI launcher (mpiexec, srun --mpi=pmi2) started several processes"},
      {"PMIX_RANK", 0, "a PMIx launcher (srun --mpi=pmix, mpiexec) started several processes"},
      {"SLURM_STEP_NUM_TASKS", 1, "srun started a step of several tasks"},
  };
  const char *name = NULL, *what = NULL;
  long value = 0;
  for (size_t i = 0; i < sizeof signs / sizeof signs[0] && !name; ++i) {
    long v = 0;
    if (qp_env_long(lookup, ctx, signs[i].name, &v) && v > signs[i].above) {
      name = signs[i].name;
      what = signs[i].what;
      value = v;
    }
  }
  /* Older srun without SLURM_STEP_NUM_TASKS: SLURM_NTASKS counts the step's tasks inside a
   * step (SLURM_STEP_ID set, or a task other than the first); in the batch script it is the
   * job's, and the script itself is one process. */
  long ntasks = 0, step = 0, procid = 0;
  if (!name && !lookup("SLURM_STEP_NUM_TASKS", ctx) &&
      qp_env_long(lookup, ctx, "SLURM_NTASKS", &ntasks) && ntasks > 1 &&
      (qp_env_long(lookup, ctx, "SLURM_STEP_ID", &step) ||
       (qp_env_long(lookup, ctx, "SLURM_PROCID", &procid) && procid > 0))) {
    name = "SLURM_NTASKS";
    what = "srun started a step of several tasks";
    value = ntasks;
  }
  if (!name) return QP_OK;
  if (!mpi_built)
    QP_FAIL(QP_ERR_MPI,
            "%s=%ld: %s, but this qmlpipe was built without MPI: each would run the whole "
            "analysis and write the same results file. Build with -DQP_ENABLE_MPI=ON "
            "-DQP_ENABLE_SCALAPACK=ON for a distributed run, or launch one task (srun -n 1 "
            "--mpi=none, or no mpiexec)",
            name, value, what);
  QP_FAIL(QP_ERR_MPI,
          "%s=%ld: %s, but MPI was not started (no MPI launcher's variables: srun --mpi=none?): "
          "each would run the whole analysis and write the same results file. Launch with "
          "srun --mpi=pmix (or pmi2, as the site's MPI supports) or mpiexec, or launch one task",
          name, value, what);
}
