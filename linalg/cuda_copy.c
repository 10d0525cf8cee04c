/* cuda_copy.c: device matrices and the copies between host and device (cuda.h). Every byte
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

qp_err qp_cuda_matrix_copy(const qp_matrix *src, qp_matrix *dst) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL,
           "copy of '%s' to '%s': the cuda backend is not initialised", src->name, dst->name);
  QP_CHECK(src->rows == dst->rows && src->cols == dst->cols, QP_ERR_INTERNAL,
           "copy of '%s' (%lld x %lld) to '%s' (%lld x %lld): shapes differ", src->name,
           (long long)src->rows, (long long)src->cols, dst->name, (long long)dst->rows,
           (long long)dst->cols);
  if (src->rows == 0 || src->cols == 0) return QP_OK;
  int from_device = src->space == QP_SPACE_DEVICE, to_device = dst->space == QP_SPACE_DEVICE;
  enum cudaMemcpyKind kind = from_device
                                 ? (to_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                 : (to_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  char what[2 * QP_TERM_NAME_MAX + 32];
  snprintf(what, sizeof what, "copying '%s' to '%s'", src->name, dst->name);
  size_t width = (size_t)src->rows * sizeof(double);
  /* One strided copy (cudaMemcpy2D) whatever the leading dimensions: columns are the rows of
   * the 2-D copy. From and to pageable host memory the runtime stages it: the stream is
   * synchronised before this returns, so the host side may be reused at once. */
  QP_CALL(qp_cuda_status(cudaMemcpy2DAsync(dst->data, (size_t)dst->ld * sizeof(double), src->data,
                                           (size_t)src->ld * sizeof(double), width,
                                           (size_t)src->cols, kind, qp_cuda_ctx.stream),
                         what));
  QP_CALL(qp_cuda_status(cudaStreamSynchronize(qp_cuda_ctx.stream), what));
  uint64_t bytes = (uint64_t)width * (uint64_t)src->cols;
  if (!from_device && to_device) qp_cuda_ctx.to_device += bytes;
  if (from_device && !to_device) qp_cuda_ctx.to_host += bytes;
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
