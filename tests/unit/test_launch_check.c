/* test_launch_check: qp_launch_check (pipeline/cli/launch_check.h) on given environments: which
 * launches are several processes without MPI (refused, QP_ERR_MPI = exit 9, naming the
 * variable and the way out), and which are one process (a plain run, sbatch's batch script,
 * srun -n 1, a value that is not a number) or ranks of a running MPI job. */
#include <string.h>

#include "launch_check.h"
#include "test_util.h"

/* An environment: NULL-terminated "NAME=value" strings. */
static const char *lookup(const char *name, void *ctx) {
  const size_t n = strlen(name);
  for (const char *const *e = ctx; *e; ++e)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}

/* Expects one process (QP_OK) for `env`, with MPI active or not and built or not. */
static void expect_ok(int line, int mpi_active, int mpi_built, const char *const *env) {
  qp_err err = qp_launch_check(mpi_active, mpi_built, lookup, (void *)env);
  TEST_ASSERT(err == QP_OK, "line %d: refused (%s): %s", line, qp_err_name(err),
              qp_error_message());
  qp_error_clear();
}

static void expect_refused(int line, int mpi_built, const char *const *env, const char *var,
                           const char *advice) {
  qp_err err = qp_launch_check(0, mpi_built, lookup, (void *)env);
  TEST_ASSERT(err == QP_ERR_MPI && qp_err_exit_status(err) == 9,
              "line %d: expected QP_ERR_MPI, got %s", line, qp_err_name(err));
  TEST_ASSERT(strstr(qp_error_message(), var) != NULL, "line %d: message lacks '%s': %s", line,
              var, qp_error_message());
  TEST_ASSERT(strstr(qp_error_message(), advice) != NULL, "line %d: message lacks '%s': %s",
              line, advice, qp_error_message());
  fprintf(stderr, "  expected refusal: %s\n", qp_error_message());
  qp_error_clear();
}

int main(void) {
  const char *none[] = {NULL};
  expect_ok(__LINE__, 0, 0, none);
  expect_ok(__LINE__, 0, 1, none);

  /* mpiexec -n 2 (Open MPI), a build without MPI: refused with the build advice. */
  const char *ompi2[] = {"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1", "PMIX_RANK=1", NULL};
  expect_refused(__LINE__, 0, ompi2, "OMPI_COMM_WORLD_SIZE=2", "-DQP_ENABLE_MPI=ON");
  /* ... and in an MPI build MPI is running then: the ranks of one job. */
  expect_ok(__LINE__, 1, 1, ompi2);
  /* mpiexec -n 1: one process. */
  const char *ompi1[] = {"OMPI_COMM_WORLD_SIZE=1", "OMPI_COMM_WORLD_RANK=0", "PMIX_RANK=0", NULL};
  expect_ok(__LINE__, 0, 0, ompi1);

  /* MPICH/Intel MPI hydra or srun --mpi=pmi2. */
  const char *pmi4[] = {"PMI_SIZE=4", "PMI_RANK=0", NULL};
  expect_refused(__LINE__, 0, pmi4, "PMI_SIZE=4", "launch one task");
  const char *pmi_rank3[] = {"PMI_RANK=3", NULL};
  expect_refused(__LINE__, 0, pmi_rank3, "PMI_RANK=3", "-DQP_ENABLE_MPI=ON");
  /* srun --mpi=pmix: rank 0 sees PMIX_RANK=0, the step's task count says the rest. */
  const char *pmix0[] = {"PMIX_RANK=0",          "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=4",
                         "SLURM_NTASKS=4",       "SLURM_PROCID=0",  NULL};
  expect_refused(__LINE__, 0, pmix0, "SLURM_STEP_NUM_TASKS=4", "srun -n 1");
  const char *pmix2[] = {"PMIX_RANK=2", NULL};
  expect_refused(__LINE__, 0, pmix2, "PMIX_RANK=2", "-DQP_ENABLE_MPI=ON");

  /* The batch script of `sbatch -n 16`: the job's SLURM_NTASKS, no step: one process. */
  const char *batch[] = {"SLURM_JOB_ID=42", "SLURM_NTASKS=16", "SLURM_NPROCS=16",
                         "SLURM_NNODES=4",  "SLURM_PROCID=0",  "SLURM_LOCALID=0", NULL};
  expect_ok(__LINE__, 0, 0, batch);
  expect_ok(__LINE__, 0, 1, batch);
  /* srun -n 1 --mpi=none inside that job: one process. */
  const char *step1[] = {"SLURM_JOB_ID=42",        "SLURM_NTASKS=1", "SLURM_STEP_ID=0",
                         "SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0", NULL};
  expect_ok(__LINE__, 0, 0, step1);
  expect_ok(__LINE__, 0, 1, step1);
  /* srun -n 4 --mpi=none: four tasks, no MPI variables. Without MPI built: build advice; with
   * MPI built but not started: the launcher advice. */
  const char *step4[] = {"SLURM_JOB_ID=42",        "SLURM_NTASKS=4", "SLURM_STEP_ID=1",
                         "SLURM_STEP_NUM_TASKS=4", "SLURM_PROCID=2", NULL};
  expect_refused(__LINE__, 0, step4, "SLURM_STEP_NUM_TASKS=4", "-DQP_ENABLE_MPI=ON");
  expect_refused(__LINE__, 1, step4, "SLURM_STEP_NUM_TASKS=4", "srun --mpi=pmix");
  /* An srun without SLURM_STEP_NUM_TASKS: SLURM_NTASKS inside a step. */
  const char *old_step[] = {"SLURM_NTASKS=2", "SLURM_STEP_ID=0", "SLURM_PROCID=0", NULL};
  expect_refused(__LINE__, 0, old_step, "SLURM_NTASKS=2", "launch one task");
  const char *old_task1[] = {"SLURM_NTASKS=2", "SLURM_PROCID=1", NULL};
  expect_refused(__LINE__, 0, old_task1, "SLURM_NTASKS=2", "launch one task");
  /* ... but SLURM_STEP_NUM_TASKS, when present, is the step's count and wins. */
  const char *step_wins[] = {"SLURM_NTASKS=8", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=1",
                             NULL};
  expect_ok(__LINE__, 0, 0, step_wins);

  /* Values that are not whole numbers are not signs of anything. */
  const char *junk[] = {"OMPI_COMM_WORLD_SIZE=two", "PMI_SIZE=", "PMIX_RANK=1x",
                        "SLURM_STEP_NUM_TASKS=4 ", NULL};
  expect_ok(__LINE__, 0, 0, junk);

  if (qp_test_failures) fprintf(stderr, "test_launch_check: %d failure(s)\n", qp_test_failures);
  return qp_test_failures != 0;
}
