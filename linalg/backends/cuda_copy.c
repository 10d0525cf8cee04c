/* cuda_copy.c: device matrices and the copies between host and device (cuda_backend.h). Every byte
 * that crosses is counted in the context (qp_cuda_transfer_bytes), so that a report can say
 * what the host <-> device traffic of a stage was. */
#include <stdio.h>
#include <string.h>

#include "cuda_private.h"

qp_err qp_cuda_matrix_create(const char *term, qp_term_kind kind, int64_t rows, int64_t cols,
                             qp_matrix *m) {
  memset(m, 0, sizeof *m);
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL,
           "device matrix '%s': the cuda backend is not initialised (qp_cuda_init)", term);
  QP_CHECK(rows >= 0 && cols >= 0, QP_ERR_INTERNAL, "matrix '%s' of negative size", term);
  QP_CHECK(cols == 0 || (uint64_t)rows <= SIZE_MAX / sizeof(double) / (uint64_t)cols, QP_ERR_NOMEM,
           "matrix '%s': %lld x %lld elements overflow the address space", term, (long long)rows,
           (long long)cols);
  void *data = NULL;
  QP_CALL(qp_budget_alloc(term, kind, QP_SPACE_DEVICE, (size_t)rows * (size_t)cols * sizeof(double),
                          &data));
  *m = (qp_matrix){.rows = rows,
                   .cols = cols,
                   .ld = rows > 0 ? rows : 1,
                   .data = data,
                   .local_rows = rows,
                   .local_cols = cols,
                   .space = QP_SPACE_DEVICE,
                   .ops = qp_linalg_cuda_ops(),
                   .owns = 1};
  snprintf(m->name, sizeof m->name, "%s", term);
  return QP_OK;
}

qp_err qp_cuda_matrix_view(const char *name, double *device_data, int64_t rows, int64_t cols,
                           int64_t ld, qp_matrix *m) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL,
           "device view '%s': the cuda backend is not initialised (qp_cuda_init)", name);
  QP_CALL(qp_matrix_view(qp_linalg_cuda_ops(), name, device_data, rows, cols, ld, m));
  m->space = QP_SPACE_DEVICE;
  return QP_OK;
}

qp_err qp_cuda_copy_2d(double *dst, int64_t dld, const double *src, int64_t sld, int64_t rows,
                       int64_t cols, enum cudaMemcpyKind kind, const char *what) {
  if (rows == 0 || cols == 0) return QP_OK;
  size_t width = (size_t)rows * sizeof(double);
  const int crosses = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost;
  if (crosses && qp_cuda_ctx.pinned_registered &&
      (uint64_t)rows * (uint64_t)cols * sizeof(double) >= QP_PINNED_STAGING_BYTES / 2) {
    /* a large copy of pageable host memory: through the pinned halves (cuda_pinned.c) */
    QP_CALL(qp_cuda_pinned_copy(dst, dld, src, sld, rows, cols, kind, what));
  } else {
    /* One strided copy (cudaMemcpy2D) whatever the leading dimensions: columns are the rows
     * of the 2-D copy. The stream is synchronised before this returns, so the host side may
     * be reused at once. */
    QP_CALL(qp_cuda_status(cudaMemcpy2DAsync(dst, (size_t)dld * sizeof(double), src,
                                             (size_t)sld * sizeof(double), width, (size_t)cols,
                                             kind, qp_cuda_ctx.stream),
                           what));
    QP_CALL(qp_cuda_status(cudaStreamSynchronize(qp_cuda_ctx.stream), what));
  }
  uint64_t bytes = (uint64_t)width * (uint64_t)cols;
  if (kind == cudaMemcpyHostToDevice) qp_cuda_ctx.to_device += bytes;
  if (kind == cudaMemcpyDeviceToHost) qp_cuda_ctx.to_host += bytes;
  return QP_OK;
}

qp_err qp_cuda_matrix_copy(const qp_matrix *src, qp_matrix *dst) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL,
           "copy of '%s' to '%s': the cuda backend is not initialised", src->name, dst->name);
  QP_CHECK(src->rows == dst->rows && src->cols == dst->cols, QP_ERR_INTERNAL,
           "copy of '%s' (%lld x %lld) to '%s' (%lld x %lld): shapes differ", src->name,
           (long long)src->rows, (long long)src->cols, dst->name, (long long)dst->rows,
           (long long)dst->cols);
  int from_device = src->space == QP_SPACE_DEVICE, to_device = dst->space == QP_SPACE_DEVICE;
  enum cudaMemcpyKind kind = from_device
                                 ? (to_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                 : (to_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  char what[2 * QP_TERM_NAME_MAX + 32];
  snprintf(what, sizeof what, "copying '%s' to '%s'", src->name, dst->name);
  QP_CALL(qp_cuda_copy_2d(dst->data, dst->ld, src->data, src->ld, src->rows, src->cols, kind,
                          what));
  return QP_OK;
}

/* The table's download/upload: a block of a device matrix to or from a host array. matrix.c
 * has checked the block against the matrix and the host leading dimension. */
qp_err qp_cuda_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows, int64_t cols,
                        double *host, int64_t ld) {
  QP_CALL(qp_cuda_check_operand(m, "download"));
  char what[QP_TERM_NAME_MAX + 32];
  snprintf(what, sizeof what, "downloading '%s'", m->name);
  QP_CALL(qp_cuda_copy_2d(host, ld, m->data + li + lj * m->ld, m->ld, rows, cols,
                          cudaMemcpyDeviceToHost, what));
  return QP_OK;
}

qp_err qp_cuda_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                      int64_t rows, int64_t cols) {
  QP_CALL(qp_cuda_check_operand(m, "upload"));
  char what[QP_TERM_NAME_MAX + 32];
  snprintf(what, sizeof what, "uploading '%s'", m->name);
  QP_CALL(qp_cuda_copy_2d(m->data + li + lj * m->ld, m->ld, host, ld, rows, cols,
                          cudaMemcpyHostToDevice, what));
  return QP_OK;
}

/* B[bi.., bj..] <- A[ai.., aj..] on the device (matrix.c has checked the bounds). The two
 * windows must not overlap (cudaMemcpy2D's rule; cpu.c's memmove would allow it): the stages'
 * copies never do (fisher_run's, within one stack, moves a column onto an earlier one). */
qp_err qp_cuda_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                        qp_matrix *b, int64_t bi, int64_t bj) {
  QP_CALL(qp_cuda_check_operand(a, "copy_sub"));
  QP_CALL(qp_cuda_check_operand(b, "copy_sub"));
  char what[2 * QP_TERM_NAME_MAX + 32];
  snprintf(what, sizeof what, "copying part of '%s' to '%s'", a->name, b->name);
  QP_CALL(qp_cuda_copy_2d(b->data + bi + bj * b->ld, b->ld, a->data + ai + aj * a->ld, a->ld, rows,
                          cols, cudaMemcpyDeviceToDevice, what));
  return QP_OK;
}

qp_err qp_cuda_matrix_upload(const qp_matrix *host, const char *term, qp_term_kind kind,
                             qp_matrix *device) {
  QP_CALL(qp_cuda_matrix_create(term, kind, host->rows, host->cols, device));
  qp_err err = qp_cuda_matrix_copy(host, device);
  if (err != QP_OK) {
    qp_matrix_destroy(device);
    qp_error_trace(__FILE__, __LINE__, __func__);
  }
  return err;
}

void qp_cuda_transfer_bytes(uint64_t *to_device, uint64_t *to_host) {
  *to_device = qp_cuda_ctx.to_device;
  *to_host = qp_cuda_ctx.to_host;
}
