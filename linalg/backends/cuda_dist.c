/* cuda_dist.c: "cuda-dist", the cuda backend on several ranks, a GPU per rank
 * (device_choice.c), with no distributed library (cuSOLVERMp is not available here): every
 * operation is a tiled algorithm (tiled.h) over the cuda table, the table itself
 * tiled_table.h's, whose every line but the local operations' bodies runs in CTest over
 * hostdev (test_tiled_table). */
#include "cuda_backend.h"
#include "tiled_table.h"

QP_TILED_TABLE(qp_cuda_dist_ops_table, "cuda-dist", qp_linalg_cuda_ops);

const qp_linalg_ops *qp_linalg_cuda_dist_ops(void) {
  return qp_linalg_dist_ops() && qp_linalg_cuda_ops() ? &qp_cuda_dist_ops_table : NULL;
}

/* Block-cyclic over the ranks, a GPU each. */
qp_err qp_linalg_cuda_dist_start(const qp_linalg_ops **ops) {
  *ops = NULL;
  QP_CHECK(qp_linalg_dist_ops() && qp_grid_current(), QP_ERR_MPI,
           "backend 'cuda-dist' needs MPI, ScaLAPACK's grid and its process grid (qmlpipe sets "
           "it up when started with mpiexec or srun)");
  QP_CALL(qp_cuda_init_for_rank());
  *ops = qp_linalg_cuda_dist_ops();
  return QP_OK;
}
