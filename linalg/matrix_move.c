/* matrix_move.c: moving entries between spaces and layouts (matrix.h): downloads and uploads
 * of local blocks, copies between layouts, and the alignment and replication that give a
 * stage one body for every backend. */
#include <string.h>

#include "matrix.h"
#include "matrix_check.h"

static qp_err qp_check_block(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                             int64_t cols, int64_t ld) {
  QP_CHECK(li >= 0 && lj >= 0 && rows >= 0 && cols >= 0 && li + rows <= m->local_rows &&
               lj + cols <= m->local_cols && ld >= (rows > 0 ? rows : 1),
           QP_ERR_INTERNAL,
           "host copy of %lldx%lld at (%lld, %lld) of '%s' (%lldx%lld local, ld %lld)",
           (long long)rows, (long long)cols, (long long)li, (long long)lj, m->name,
           (long long)m->local_rows, (long long)m->local_cols, (long long)ld);
  return QP_OK;
}

/* dst[.., ldd] <- src[.., lds], rows x cols, column by column (host memory). */
static void qp_copy_columns(const double *src, int64_t lds, double *dst, int64_t ldd,
                            int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j)
    memcpy(dst + j * ldd, src + j * lds, (size_t)rows * sizeof(double));
}

qp_err qp_linalg_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows, int64_t cols,
                          double *host, int64_t ld) {
  QP_CALL(qp_check_block(m, li, lj, rows, cols, ld));
  if (rows == 0 || cols == 0) return QP_OK;
  if (m->space == QP_SPACE_DEVICE) {
    QP_NEED_OP(m, download);
    QP_CALL(m->ops->download(m, li, lj, rows, cols, host, ld));
    return QP_OK;
  }
  qp_copy_columns(m->data + li + lj * m->ld, m->ld, host, ld, rows, cols);
  return QP_OK;
}

qp_err qp_linalg_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                        int64_t rows, int64_t cols) {
  QP_CALL(qp_check_block(m, li, lj, rows, cols, ld));
  if (rows == 0 || cols == 0) return QP_OK;
  if (m->space == QP_SPACE_DEVICE) {
    QP_NEED_OP(m, upload);
    QP_CALL(m->ops->upload(host, ld, m, li, lj, rows, cols));
    return QP_OK;
  }
  qp_copy_columns(host, ld, m->data + li + lj * m->ld, m->ld, rows, cols);
  return QP_OK;
}

qp_err qp_linalg_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                          qp_matrix *b, int64_t bi, int64_t bj) {
  /* B's table copies, unless A alone is on the device (a distributed device window into a
   * host work matrix: qp_linalg_align), whose table must open it. */
  const qp_matrix *by = a->space == QP_SPACE_DEVICE && b->space == QP_SPACE_HOST ? a : b;
  QP_NEED_OP(by, copy_sub);
  QP_CHECK(ai >= 0 && aj >= 0 && bi >= 0 && bj >= 0 && ai + rows <= a->rows &&
               aj + cols <= a->cols && bi + rows <= b->rows && bj + cols <= b->cols,
           QP_ERR_INTERNAL, "copy of %lldx%lld from '%s' to '%s' out of bounds", (long long)rows,
           (long long)cols, a->name, b->name);
  if (rows == 0 || cols == 0) return QP_OK;
  QP_CALL(by->ops->copy_sub(rows, cols, a, ai, aj, b, bi, bj));
  return QP_OK;
}

int qp_linalg_moves_data(const qp_linalg_ops *ops) { return ops && ops->moves_data; }

qp_err qp_linalg_align(const qp_matrix *a, int64_t ai, int64_t aj, int64_t rows, int64_t cols,
                       const qp_matrix *layout, int64_t bi, int64_t bj, qp_matrix *work,
                       qp_aligned *out) {
  QP_CHECK(ai >= 0 && aj >= 0 && bi >= 0 && bj >= 0 && ai + rows <= a->rows &&
               aj + cols <= a->cols && bi + rows <= layout->rows && bj + cols <= layout->cols,
           QP_ERR_INTERNAL, "window of %lldx%lld of '%s' out of bounds of '%s'", (long long)rows,
           (long long)cols, a->name, layout->name);
  if (!qp_linalg_moves_data(a->ops)) {
    /* Every entry is here: layout position (li, lj) = (gi, gj) reads A at the shifted index. */
    *out = (qp_aligned){a->data, a->ld, ai - bi, aj - bj};
    return QP_OK;
  }
  QP_CHECK(work && work->rows == layout->rows && work->cols == layout->cols, QP_ERR_INTERNAL,
           "aligning '%s' with '%s' needs a work matrix of its shape", a->name, layout->name);
  if (a->space == QP_SPACE_DEVICE && !a->grid) {
    /* A local device matrix: the window comes down into the host work matrix. */
    QP_CHECK(work->space == QP_SPACE_HOST && !work->grid, QP_ERR_INTERNAL,
             "aligning device matrix '%s' needs a local host work matrix", a->name);
    QP_CALL(qp_linalg_download(a, ai, aj, rows, cols, work->data + bi + bj * work->ld, work->ld));
  } else {
    /* Over the ranks (from the device into the host work matrix on a distributed device
     * backend: qp_linalg_copy_sub). */
    QP_CHECK(work->space == QP_SPACE_HOST, QP_ERR_INTERNAL,
             "aligning '%s' needs a host work matrix", a->name);
    QP_CALL(qp_linalg_copy_sub(rows, cols, a, ai, aj, work, bi, bj));
  }
  *out = (qp_aligned){work->data, work->ld, 0, 0};
  return QP_OK;
}

/* work <- this rank's entries of the distributed device matrix a, each at its global place:
 * a block-cyclic tile (block x block locally) is one contiguous tile globally, so one
 * download per tile. */
static qp_err qp_replicate_tiles(const qp_matrix *a, qp_matrix *work) {
  const int64_t nb = a->grid->block;
  for (int64_t lj = 0; lj < a->local_cols; lj += nb)
    for (int64_t li = 0; li < a->local_rows; li += nb) {
      const int64_t rows = a->local_rows - li < nb ? a->local_rows - li : nb;
      const int64_t cols = a->local_cols - lj < nb ? a->local_cols - lj : nb;
      double *at =
          work->data + qp_matrix_global_row(a, li) + qp_matrix_global_col(a, lj) * work->ld;
      QP_CALL(qp_linalg_download(a, li, lj, rows, cols, at, work->ld));
    }
  return QP_OK;
}

qp_err qp_linalg_replicate(const qp_matrix *a, qp_matrix *work, const double **whole) {
  if (!qp_linalg_moves_data(a->ops)) {
    QP_CHECK(a->ld == a->rows || a->cols <= 1, QP_ERR_INTERNAL,
             "'%s' is a view with a leading dimension of its own: copy it first", a->name);
    *whole = a->data;
    return QP_OK;
  }
  QP_CHECK(work && !work->grid && work->space == QP_SPACE_HOST && work->rows == a->rows &&
               work->cols == a->cols,
           QP_ERR_INTERNAL, "making '%s' whole needs a local host work matrix of its shape",
           a->name);
  if (a->space == QP_SPACE_DEVICE && !a->grid) {
    QP_CALL(qp_linalg_download(a, 0, 0, a->rows, a->cols, work->data, work->ld));
    *whole = work->data;
    return QP_OK;
  }
  /* Each rank puts its entries in place (zeros elsewhere); one sum makes the whole. */
  memset(work->data, 0, (size_t)(work->rows * work->cols) * sizeof(double));
  if (a->space == QP_SPACE_DEVICE) {
    QP_CALL(qp_replicate_tiles(a, work));
  } else {
    for (int64_t lj = 0; lj < a->local_cols; ++lj)
      for (int64_t li = 0; li < a->local_rows; ++li)
        work->data[qp_matrix_global_row(a, li) + qp_matrix_global_col(a, lj) * work->ld] =
            a->data[li + lj * a->ld];
  }
  QP_CALL(qp_linalg_sum_partials(a->ops, work->data, work->rows * work->cols));
  *whole = work->data;
  return QP_OK;
}

