/* test_device_choice.c: one GPU per rank (linalg/backends/device_choice.h) on any machine: the
 * local rank from each launcher's variable, their order, the round robin over the visible devices,
 * no variable, and the refusals (a malformed variable, no device). The variables are set here
 * with setenv, the device counts given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_choice.h"
#include "test_util.h"

static const char *const variables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                        "MPI_LOCALRANKID"};

static void clear_all(void) {
  for (size_t k = 0; k < 3; ++k)
    unsetenv(variables[k]);
}

/* Expects `count` devices with the current environment to give `device` from `source`. */
static void expect_choice(int count, int device, int local_rank, const char *source) {
  qp_device_choice c;
  TEST_OK(qp_device_choose(count, &c));
  TEST_ASSERT(c.device == device && c.local_rank == local_rank,
              "count %d: device %d local rank %d, expected %d and %d", count, c.device,
              c.local_rank, device, local_rank);
  TEST_ASSERT(source ? (c.source && strcmp(c.source, source) == 0) : c.source == NULL,
              "count %d: source %s, expected %s", count, c.source ? c.source : "(none)",
              source ? source : "(none)");
}

int main(void) {
  clear_all();
  /* A process started without a launcher takes device 0. */
  expect_choice(4, 0, -1, NULL);

  /* Each launcher's variable alone; 4 ranks on 4 GPUs take one each, 6 on 4 wrap round. */
  for (size_t k = 0; k < 3; ++k) {
    clear_all();
    setenv(variables[k], "3", 1);
    expect_choice(4, 3, 3, variables[k]);
    setenv(variables[k], "5", 1);
    expect_choice(4, 1, 5, variables[k]);
    expect_choice(1, 0, 5, variables[k]);
  }

  /* The order: Open MPI's before Slurm's before MPICH's. */
  clear_all();
  setenv("MPI_LOCALRANKID", "1", 1);
  setenv("SLURM_LOCALID", "2", 1);
  expect_choice(8, 2, 2, "SLURM_LOCALID");
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "7", 1);
  expect_choice(8, 7, 7, "OMPI_COMM_WORLD_LOCAL_RANK");

  /* CUDA_VISIBLE_DEVICES is the runtime's: with two visible devices (count 2) local rank 3
   * takes index 1 of the visible set, whatever physical GPUs the variable names. */
  setenv("CUDA_VISIBLE_DEVICES", "4,5", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  expect_choice(2, 1, 3, "OMPI_COMM_WORLD_LOCAL_RANK");
  unsetenv("CUDA_VISIBLE_DEVICES");

  /* Refusals: a malformed variable is named with its value, not read as rank 0. */
  const char *bad[] = {"", "x", "-1", "2a", "99999999999"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
    clear_all();
    setenv("SLURM_LOCALID", bad[k], 1);
    qp_device_choice c;
    char needle[64];
    snprintf(needle, sizeof needle, "SLURM_LOCALID='%s'", bad[k]);
    EXPECT_ERROR(qp_device_choose(4, &c), QP_ERR_INPUT, needle, "local rank");
  }
  clear_all();
  qp_device_choice c;
  EXPECT_ERROR(qp_device_choose(0, &c), QP_ERR_UNSUPPORTED, "no CUDA device");

  if (qp_test_failures == 0) printf("test_device_choice: all checks passed\n");
  return TEST_RETURN();
}
