/* alloc_device.c: cudaMalloc / cudaFree, the default device-memory provider of a build with
 * CUDA (alloc_device.h). */
#include "alloc_device.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "budget.h"
#include "bytes_text.h"

/* Statuses that mean "there is no GPU to use here" rather than a fault: the caller gets
 * QP_ERR_UNSUPPORTED, as in a build without CUDA. */
static int qp_cuda_status_no_device(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
         e == cudaErrorCallRequiresNewerDriver || e == cudaErrorDevicesUnavailable ||
         e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice ||
         e == cudaErrorSystemNotReady || e == cudaErrorInitializationError;
}

qp_err qp_device_memory_alloc(const char *term, size_t bytes, void **out) {
  *out = NULL;
  void *ptr = NULL;
  cudaError_t e = cudaMalloc(&ptr, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* a failed cudaMalloc is not sticky: clear it for later calls */
    QP_CHECK(e != cudaErrorMemoryAllocation, QP_ERR_NOMEM,
             "out of device memory allocating term '%s' (%s) in stage '%s'", term,
             qp_bytes_readable((double)bytes).text, qp_stage_current());
    QP_CHECK(!qp_cuda_status_no_device(e), QP_ERR_UNSUPPORTED,
             "term '%s': no CUDA device to allocate it on (%s: %s)", term, cudaGetErrorName(e),
             cudaGetErrorString(e));
    QP_FAIL(QP_ERR_GPU, "term '%s': cudaMalloc of %zu bytes failed (%s: %s)", term, bytes,
            cudaGetErrorName(e), cudaGetErrorString(e));
  }
  /* Synchronous memset: the block is zero before any stream can use it. */
  e = cudaMemset(ptr, 0, bytes);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    (void)cudaFree(ptr);
    QP_FAIL(QP_ERR_GPU, "term '%s': zero-filling %zu device bytes failed (%s: %s)", term, bytes,
            cudaGetErrorName(e), cudaGetErrorString(e));
  }
  *out = ptr;
  return QP_OK;
}

void qp_device_memory_free(void *ptr) {
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess)
    fprintf(stderr, "qmlpipe: cudaFree failed (%s: %s)\n", cudaGetErrorName(e),
            cudaGetErrorString(e));
}

const qp_device_memory *qp_device_memory_cuda(void) {
  static const qp_device_memory provider = {
      .name = "cuda", .alloc = qp_device_memory_alloc, .free = qp_device_memory_free};
  return &provider;
}
