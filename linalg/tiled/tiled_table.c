/* tiled_table.c: what every tiled table (tiled_table.h) shares. */
#include "tiled_table.h"

#include "comm.h"

/* A local part is a matrix of the local table's space with its own leading dimension: the
 * local table copies it. */
qp_err qp_tiled_table_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                               int64_t cols, double *host, int64_t ld) {
  return qp_linalg_local_ops(m->ops)->download(m, li, lj, rows, cols, host, ld);
}

qp_err qp_tiled_table_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li,
                             int64_t lj, int64_t rows, int64_t cols) {
  return qp_linalg_local_ops(m->ops)->upload(host, ld, m, li, lj, rows, cols);
}

/* Between block-cyclic matrices (a device one into a host work matrix: qp_linalg_align) the
 * tiled copy; local matrices (a rank's stack of local parts) as the local table copies them. */
qp_err qp_tiled_table_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                               int64_t aj, qp_matrix *b, int64_t bi, int64_t bj) {
  if (!a->grid && !b->grid)
    return qp_linalg_local_ops(a->ops)->copy_sub(rows, cols, a, ai, aj, b, bi, bj);
  return qp_tiled_copy_sub(rows, cols, a, ai, aj, b, bi, bj);
}

/* The grid spans every rank (grid.h). */
qp_err qp_tiled_table_sum_partials(double *x, int64_t count) { return qp_comm_sum(x, count); }

qp_err qp_tiled_table_hold(const qp_linalg_ops *local, const char *term, size_t bytes) {
  QP_CALL(qp_tiled_hold(term, local->space, bytes));
  return local->hold_workspace ? local->hold_workspace(term, bytes) : QP_OK;
}

void qp_tiled_table_release(const qp_linalg_ops *local) {
  qp_tiled_release();
  if (local->release_workspaces) local->release_workspaces();
}
