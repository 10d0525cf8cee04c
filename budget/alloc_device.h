/* alloc_device.h: cudaMalloc as the budget's device-memory provider (device_memory.h),
 * private to budget/.
 *
 * Built only with CUDA (QP_HAVE_CUDA), where it is the default provider. alloc.c keeps the
 * accounting; these functions only talk to the CUDA runtime and turn its status into qp_err. */
#ifndef QP_ALLOC_DEVICE_H
#define QP_ALLOC_DEVICE_H

#include <stddef.h>

#include "device_memory.h"
#include "qp_error.h"

/** cudaMalloc of `bytes` (> 0) on the calling thread's current device, zero-filled so that a
 *  device block starts like a host one. Errors: QP_ERR_NOMEM (out of device memory, naming the
 *  term), QP_ERR_UNSUPPORTED (no usable CUDA device or driver), QP_ERR_GPU (anything else,
 *  with the runtime's message). */
qp_err qp_device_memory_alloc(const char *term, size_t bytes, void **out);
/** cudaFree; a failure is printed (free cannot fail in the allocator's interface). */
void qp_device_memory_free(void *ptr);
/** The provider of these two (no meter: the CUDA meter, meter_device.c, reads the device). */
const qp_device_memory *qp_device_memory_cuda(void);

#endif
