/* hostdev_dist.c: the test backend hostdev on several ranks (hostdev.h): "hostdev-dist", the
 * tiled algorithms over the one-rank table in batches, and "hostdev-tiled", cuda-dist's own
 * table over it. */
#include "hostdev_private.h"

#include <stdlib.h>
#include <string.h>

#include "tiled.h"
#include "tiled_table.h"

/* The local parts of block-cyclic matrices, each rank's in its own emulated device: the host
 * matrices beside them are dist's (work matrices of align and replicate, staging is their
 * local parts), a rank's partial sums are completed over the ranks as dist's are. */
static qp_err qp_hostdev_sum_partials(double *x, int64_t count) {
  return qp_linalg_sum_partials(qp_linalg_dist_ops(), x, count);
}

/* Its buffers: the tiled algorithms' held blocks and its local table's (the diagonal blocks'
 * Cholesky). */
static qp_err qp_hostdev_dist_hold_workspace(const char *term, size_t bytes) {
  QP_CALL(qp_tiled_hold(term, QP_SPACE_DEVICE, bytes));
  return qp_hostdev_hold_workspace(term, bytes);
}

static void qp_hostdev_dist_release_workspaces(void) {
  qp_tiled_release();
  qp_hostdev_release_workspaces();
}

/* The tiled operations, each a batch (above). */
#define QP_HOSTDEV_BATCHED(call)                                                                 \
  do {                                                                                           \
    qp_hostdev_batch_begin();                                                                    \
    const qp_err status_ = (call);                                                               \
    qp_hostdev_batch_end();                                                                      \
    return status_;                                                                              \
  } while (0)

static qp_err qp_hostdev_dist_potrf(qp_matrix *a) { QP_HOSTDEV_BATCHED(qp_tiled_potrf(a)); }
static qp_err qp_hostdev_dist_trsm(qp_side side, qp_trans trans, double alpha,
                                   const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_trsm(side, trans, alpha, l, b));
}
static qp_err qp_hostdev_dist_trmm(qp_side side, qp_trans trans, double alpha,
                                   const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_trmm(side, trans, alpha, l, b));
}
static qp_err qp_hostdev_dist_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                                   const qp_matrix *b, double beta, qp_matrix *c) {
  QP_HOSTDEV_BATCHED(qp_tiled_gemm(ta, tb, alpha, a, b, beta, c));
}
static qp_err qp_hostdev_dist_syrk(qp_trans trans, double alpha, const qp_matrix *a,
                                   double beta, qp_matrix *c) {
  QP_HOSTDEV_BATCHED(qp_tiled_syrk(trans, alpha, a, beta, c));
}
static qp_err qp_hostdev_dist_norm1(const qp_matrix *a, double *out) {
  QP_HOSTDEV_BATCHED(qp_tiled_norm1(a, out));
}
static qp_err qp_hostdev_dist_pocon(const qp_matrix *l, double anorm, double *rcond) {
  QP_HOSTDEV_BATCHED(qp_tiled_pocon(l, anorm, rcond));
}
static qp_err qp_hostdev_dist_trtri(qp_matrix *l) { QP_HOSTDEV_BATCHED(qp_tiled_trtri(l)); }
static qp_err qp_hostdev_dist_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_transpose(a, b));
}
static qp_err qp_hostdev_dist_clear_upper(qp_matrix *a) {
  QP_HOSTDEV_BATCHED(qp_tiled_clear_upper(a));
}
static qp_err qp_hostdev_dist_scale(qp_matrix *a, const qp_run_scale *rows,
                                    const qp_run_scale *cols) {
  QP_HOSTDEV_BATCHED(qp_tiled_scale(a, rows, cols));
}
static qp_err qp_hostdev_dist_getrf(qp_matrix *a, int *pivots) {
  QP_HOSTDEV_BATCHED(qp_tiled_getrf(a, pivots));
}
static qp_err qp_hostdev_dist_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_getrs(lu, pivots, b));
}
static qp_err qp_hostdev_dist_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_potrs(l, b));
}
static qp_err qp_hostdev_dist_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  QP_HOSTDEV_BATCHED(qp_tiled_gecon(lu, anorm, rcond));
}
static qp_err qp_hostdev_dist_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a,
                                       int64_t ai, int64_t aj, qp_matrix *b, int64_t bi,
                                       int64_t bj) {
  QP_HOSTDEV_BATCHED(qp_tiled_table_copy_sub(rows, cols, a, ai, aj, b, bi, bj));
}

/* Every operation is a tiled algorithm (linalg/tiled/tiled.h) over hostdev's local operations, in
 * batches: what a GPU per rank runs (the cuda table as the local one), exercised here on the
 * emulated devices. */
static const qp_linalg_ops qp_hostdev_dist_ops_table = {
    QP_HOSTDEV_SHARED_OPS,
    .getrf = qp_hostdev_dist_getrf,
    .getrs = qp_hostdev_dist_getrs,
    .potrs = qp_hostdev_dist_potrs,
    .gecon = qp_hostdev_dist_gecon,
    .potrf = qp_hostdev_dist_potrf,
    .trmm = qp_hostdev_dist_trmm,
    .trsm = qp_hostdev_dist_trsm,
    .gemm = qp_hostdev_dist_gemm,
    .syrk = qp_hostdev_dist_syrk,
    .norm1 = qp_hostdev_dist_norm1,
    .pocon = qp_hostdev_dist_pocon,
    .trtri = qp_hostdev_dist_trtri,
    .copy_sub = qp_hostdev_dist_copy_sub,
    .transpose = qp_hostdev_dist_transpose,
    .clear_upper = qp_hostdev_dist_clear_upper,
    .scale = qp_hostdev_dist_scale,
    .name = "hostdev-dist",
    .distributed = 1,
    .host_table = qp_linalg_dist_ops,
    .local_table = qp_linalg_hostdev_ops,
    .sum_partials = qp_hostdev_sum_partials,
    .hold_workspace = qp_hostdev_dist_hold_workspace,
    .release_workspaces = qp_hostdev_dist_release_workspaces,
};

const qp_linalg_ops *qp_linalg_hostdev_dist_ops(void) {
  return qp_linalg_dist_ops() ? &qp_hostdev_dist_ops_table : NULL;
}

/* cuda-dist's table (tiled_table.h) with hostdev as its local table instead of cuda: every
 * line of the GPU-per-rank backend but the cuda operations' bodies, on the emulated devices,
 * unbatched (each local step opens its operands alone, as each cuda call stands alone). */
QP_TILED_TABLE(qp_hostdev_tiled_ops_table, "hostdev-tiled", qp_linalg_hostdev_ops);

const qp_linalg_ops *qp_linalg_hostdev_tiled_ops(void) {
  return qp_linalg_dist_ops() ? &qp_hostdev_tiled_ops_table : NULL;
}

/* ---- the starts the test library installs in the rows of backends.c ---- */

/* A table on several ranks: ScaLAPACK's grid, then the emulated device. */
static qp_err qp_hostdev_ranks_start(const char *name, const qp_linalg_ops *table,
                                     const qp_linalg_ops **ops) {
  *ops = NULL;
  QP_CHECK(table, QP_ERR_UNSUPPORTED,
           "backend '%s' is not available in this build of qmlpipe (configure with "
           "-DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON)", name);
  QP_CHECK(qp_grid_current(), QP_ERR_MPI,
           "backend '%s' needs its MPI process grid (qmlpipe sets it up when started with "
           "mpiexec or srun)", name);
  QP_CALL(qp_hostdev_init());
  *ops = table;
  return QP_OK;
}

qp_err qp_hostdev_tiled_start(const qp_linalg_ops **ops) {
  return qp_hostdev_ranks_start("hostdev-tiled", qp_linalg_hostdev_tiled_ops(), ops);
}

/* The test hook QP_TEST_HOSTDEV_TABLE=tiled (docs/gpu.md): hostdev on several ranks runs
 * cuda-dist's own table over the emulated devices (hostdev-tiled) instead of hostdev-dist. */
qp_err qp_hostdev_dist_start(const qp_linalg_ops **ops) {
  const char *table = getenv("QP_TEST_HOSTDEV_TABLE");
  if (table && strcmp(table, "tiled") == 0) return qp_hostdev_tiled_start(ops);
  return qp_hostdev_ranks_start("hostdev-dist", qp_linalg_hostdev_dist_ops(), ops);
}
