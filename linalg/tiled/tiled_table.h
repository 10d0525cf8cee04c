/* tiled_table.h: a distributed backend table made of the tiled algorithms (tiled.h) over a
 * local table, for a device per rank with no distributed library: the cuda table over MPI
 * (cuda_dist.c, "cuda-dist") is one; tests make one over hostdev (test_tiled_table.c), so that
 * everything but the local operations' bodies runs in CTest.
 *
 * QP_TILED_TABLE(ident, "name", local) defines `static const qp_linalg_ops ident`: matrices
 * block-cyclic over qp_grid_current(), local parts in `local()`'s space, every operation the
 * tiled one, download/upload the local table's on the local part, partial sums over every
 * rank, host work matrices dist's; its held buffers the tiled blocks and the local table's
 * own. What the tiled algorithms do not have is absent (NULL: "backend 'name' has no
 * potri"): potri and trace_product, which dist has not either (the stages sum partial
 * products). */
#ifndef QP_TILED_TABLE_H
#define QP_TILED_TABLE_H

#include "tiled.h"

/* The operations every tiled table shares (tiled_table.c). */
qp_err qp_tiled_table_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                               int64_t cols, double *host, int64_t ld);
qp_err qp_tiled_table_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li,
                             int64_t lj, int64_t rows, int64_t cols);
qp_err qp_tiled_table_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                               int64_t aj, qp_matrix *b, int64_t bi, int64_t bj);
qp_err qp_tiled_table_sum_partials(double *x, int64_t count);
/** Holds `term` for a table over `local`: the tiled blocks in local's space, the rest local's. */
qp_err qp_tiled_table_hold(const qp_linalg_ops *local, const char *term, size_t bytes);
void qp_tiled_table_release(const qp_linalg_ops *local);

#define QP_TILED_TABLE(ident, label, local)                                                      \
  static qp_err ident##_hold(const char *term, size_t bytes) {                                   \
    return qp_tiled_table_hold(local(), term, bytes);                                            \
  }                                                                                              \
  static void ident##_release(void) { qp_tiled_table_release(local()); }                         \
  static const qp_linalg_ops ident = {                                                           \
      .name = label,                                                                             \
      .distributed = 1,                                                                          \
      .space = QP_SPACE_DEVICE,                                                                  \
      .moves_data = 1,                                                                           \
      .host_table = qp_linalg_dist_ops,                                                          \
      .local_table = local,                                                                      \
      .download = qp_tiled_table_download,                                                       \
      .upload = qp_tiled_table_upload,                                                           \
      .potrf = qp_tiled_potrf,                                                                   \
      .getrf = qp_tiled_getrf,                                                                   \
      .getrs = qp_tiled_getrs,                                                                   \
      .potrs = qp_tiled_potrs,                                                                   \
      .gecon = qp_tiled_gecon,                                                                   \
      .trtri = qp_tiled_trtri,                                                                   \
      .trmm = qp_tiled_trmm,                                                                     \
      .trsm = qp_tiled_trsm,                                                                     \
      .gemm = qp_tiled_gemm,                                                                     \
      .syrk = qp_tiled_syrk,                                                                     \
      .copy_sub = qp_tiled_table_copy_sub,                                                       \
      .norm1 = qp_tiled_norm1,                                                                   \
      .pocon = qp_tiled_pocon,                                                                   \
      .transpose = qp_tiled_transpose,                                                           \
      .clear_upper = qp_tiled_clear_upper,                                                       \
      .scale = qp_tiled_scale,                                                                   \
      .sum_partials = qp_tiled_table_sum_partials,                                               \
      .release_workspaces = ident##_release,                                                     \
      .hold_workspace = ident##_hold,                                                            \
  }

#endif
