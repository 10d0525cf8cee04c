/* cuda_pinned.c: host <-> device copies through pinned staging (cuda_private.h).
 *
 * A copy from or to pageable memory (every host window, staging block and map the stages
 * hand over) is staged by the driver through a pinned buffer of its own, one chunk at a time,
 * synchronously: 10-30 GB/s on PCIe Gen5 where pinned memory reaches 40-55 (docs/gpu.md). Here
 * the backend holds two pinned halves of QP_PINNED_STAGING_BYTES / 2 (a host term of the
 * budget, page-locked with cudaHostRegister) and cuts the copy into pieces that fit one half
 * (copy_pieces.h, whose arithmetic is tested on CPU): the host packs piece k + 1 into one half
 * while the device's DMA engine copies piece k out of the other, an event per half saying
 * when its copy is done. Downloads run the same pipeline the other way round. Copies smaller
 * than one half, and device-to-device ones, go straight through cudaMemcpy2DAsync. */
#include <string.h>

#include "copy_pieces.h"
#include "cuda_private.h"

enum { QP_PINNED_HALF = (int)(QP_PINNED_STAGING_BYTES / 2 / sizeof(double)) }; /* doubles */

qp_err qp_cuda_pinned_events(void) {
  qp_cuda_context *c = &qp_cuda_ctx;
  for (int h = 0; h < 2; ++h)
    QP_CALL(qp_cuda_status(cudaEventCreateWithFlags(&c->pinned_done[h], cudaEventDisableTiming),
                           "cudaEventCreate for the pinned staging"));
  return QP_OK;
}

/* Where the block's pages enter RSS depends on the driver: on one H200 node (driver 580,
 * kernel 6.18) cudaHostRegister made all 16 MiB resident at once, on an earlier one they
 * entered at the first copy through them. Taken at init, before the run's baseline, the block
 * was in the baseline on the first node and 16 MiB below the model in every stage (validate
 * failed on pixel_direct QU and TQU). So it is taken when the first stage holds the backend's
 * terms, after the baseline, and written before it is registered: resident there on any
 * driver, where the model counts it from. */
qp_err qp_cuda_pinned_hold(void) {
  qp_cuda_context *c = &qp_cuda_ctx;
  if (c->pinned_registered) return QP_OK;
  void *block = NULL;
  QP_CALL(qp_budget_alloc(QP_TERM_PINNED_STAGING, QP_TERM_PERSISTENT, QP_SPACE_HOST,
                          QP_PINNED_STAGING_BYTES, &block));
  memset(block, 0, QP_PINNED_STAGING_BYTES);
  /* cudaHostRegister pins the pages the range covers, no alignment needed (since CUDA 4.1);
   * the block starts 64 bytes into a 2 MiB-aligned mapping of its own (budget/alloc.c), so
   * the pages it pins are its own. */
  const cudaError_t status =
      cudaHostRegister(block, QP_PINNED_STAGING_BYTES, cudaHostRegisterDefault);
  if (status != cudaSuccess) {
    qp_budget_free(block);
    QP_CALL(qp_cuda_status(status, "cudaHostRegister of the pinned staging"));
  }
  c->pinned[0] = block;
  c->pinned[1] = c->pinned[0] + QP_PINNED_HALF;
  c->pinned_registered = 1;
  return QP_OK;
}

void qp_cuda_pinned_destroy(void) {
  qp_cuda_context *c = &qp_cuda_ctx;
  if (c->stream) (void)cudaStreamSynchronize(c->stream);
  for (int h = 0; h < 2; ++h)
    if (c->pinned_done[h]) (void)cudaEventDestroy(c->pinned_done[h]);
  if (c->pinned_registered) (void)cudaHostUnregister(c->pinned[0]);
  qp_budget_free(c->pinned[0]);
  c->pinned[0] = c->pinned[1] = NULL;
  c->pinned_done[0] = c->pinned_done[1] = NULL;
  c->pinned_registered = 0;
}

/* Queues the device side of piece p: half `h` <-> the device block at dev[.., dld]. */
static qp_err qp_pinned_piece(qp_copy_piece p, int h, double *device, int64_t dld,
                              enum cudaMemcpyKind kind, const char *what) {
  qp_cuda_context *c = &qp_cuda_ctx;
  double *at = device + p.row0 + p.col0 * dld;
  const size_t packed = (size_t)p.rows * sizeof(double), strided = (size_t)dld * sizeof(double);
  const cudaError_t status = kind == cudaMemcpyHostToDevice
                                 ? cudaMemcpy2DAsync(at, strided, c->pinned[h], packed, packed,
                                                     (size_t)p.cols, kind, c->stream)
                                 : cudaMemcpy2DAsync(c->pinned[h], packed, at, strided, packed,
                                                     (size_t)p.cols, kind, c->stream);
  QP_CALL(qp_cuda_status(status, what));
  QP_CALL(qp_cuda_status(cudaEventRecord(c->pinned_done[h], c->stream), what));
  return QP_OK;
}

qp_err qp_cuda_pinned_copy(double *dst, int64_t dld, const double *src, int64_t sld, int64_t rows,
                           int64_t cols, enum cudaMemcpyKind kind, const char *what) {
  qp_cuda_context *c = &qp_cuda_ctx;
  const int upload = kind == cudaMemcpyHostToDevice;
  const int64_t count = qp_copy_piece_count(rows, cols, QP_PINNED_HALF);
  qp_err err = QP_OK;
  for (int64_t t = 0; t < count && err == QP_OK; ++t) {
    const qp_copy_piece p = qp_copy_piece_at(rows, cols, QP_PINNED_HALF, t);
    const int h = (int)(t & 1);
    if (upload) { /* half h is free once its previous piece (t - 2) has reached the device */
      err = qp_cuda_status(cudaEventSynchronize(c->pinned_done[h]), what);
      if (err == QP_OK) qp_copy_pack(src, sld, p, c->pinned[h]);
      if (err == QP_OK) err = qp_pinned_piece(p, h, dst, dld, kind, what);
    } else { /* queue piece t, then unpack piece t - 1 while it runs */
      err = qp_pinned_piece(p, h, (double *)src, sld, kind, what);
      if (err == QP_OK && t > 0) {
        err = qp_cuda_status(cudaEventSynchronize(c->pinned_done[h ^ 1]), what);
        if (err == QP_OK)
          qp_copy_unpack(c->pinned[h ^ 1], qp_copy_piece_at(rows, cols, QP_PINNED_HALF, t - 1), dst,
                         dld);
      }
    }
  }
  if (err == QP_OK && !upload && count > 0) {
    const int h = (int)((count - 1) & 1);
    err = qp_cuda_status(cudaEventSynchronize(c->pinned_done[h]), what);
    if (err == QP_OK)
      qp_copy_unpack(c->pinned[h], qp_copy_piece_at(rows, cols, QP_PINNED_HALF, count - 1), dst,
                     dld);
  }
  /* Nothing queued may outlive the call: the caller reuses or frees its host side at once.
   * After an error the first message stands; the drain only makes the return safe. */
  if (err != QP_OK) {
    (void)cudaStreamSynchronize(c->stream);
    qp_error_trace(__FILE__, __LINE__, __func__);
    return err;
  }
  QP_CALL(qp_cuda_status(cudaStreamSynchronize(c->stream), what));
  return QP_OK;
}
