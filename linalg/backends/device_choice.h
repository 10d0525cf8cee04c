/* device_choice.h: which GPU a process takes, one GPU per rank, as a pure function of the
 * launcher's environment and the number of devices it sees. No CUDA in it, so that it is
 * built and tested on every machine (tests/unit/test_device_choice.c); qp_linalg_backend
 * ("cuda") hands its answer to qp_cuda_init.
 *
 * The local rank (the rank among the processes of one node) comes from the first of these
 * that is set: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI's mpiexec), SLURM_LOCALID (srun),
 * MPI_LOCALRANKID (MPICH's Hydra, Intel MPI). The device is local_rank % device_count, so that
 * N ranks on a node with N GPUs take one each, and more ranks than GPUs share them round
 * robin. CUDA_VISIBLE_DEVICES is not read here: the CUDA runtime applies it before it counts
 * devices, so the count and the index are within the visible set (CUDA_VISIBLE_DEVICES=2,3
 * and local rank 1 gives index 1, the physical GPU 3). Not collective. */
#ifndef QP_DEVICE_CHOICE_H
#define QP_DEVICE_CHOICE_H

#include "qp_error.h"

typedef struct qp_device_choice {
  int device;         /* index among the visible devices */
  int local_rank;     /* -1 when no launcher variable is set (device 0) */
  const char *source; /* the variable the local rank came from, or NULL */
} qp_device_choice;

/** The device for this process among `device_count` visible ones (see the top of the file).
 *  Errors: QP_ERR_UNSUPPORTED for device_count < 1; QP_ERR_INPUT for a launcher variable
 *  that is set but is not a non-negative integer (the message names it and its value). */
qp_err qp_device_choose(int device_count, qp_device_choice *choice);

#endif
