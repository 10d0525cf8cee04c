/* device_memory.h: where the tracked allocator's device space comes from (budget.h).
 *
 * qp_budget_alloc keeps the accounting of device blocks (terms, stages, the live list); a
 * provider only maps and unmaps them. In a build with CUDA the default provider is cudaMalloc
 * (alloc_device.c); a build without CUDA has none, and the device space is QP_ERR_UNSUPPORTED
 * until one is set. The test backend hostdev (tests/support/hostdev.h) sets its own, host memory
 * kept inaccessible outside its operations, so that the device path runs on a machine without a
 * GPU.
 *
 * Each block remembers the provider that allocated it, so that a block is freed by its own
 * provider even when another is set meanwhile. */
#ifndef QP_DEVICE_MEMORY_H
#define QP_DEVICE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "qp_error.h"

typedef struct qp_device_memory {
  const char *name; /* what the device meter names, e.g. "hostdev (host memory, test-only)" */
  /** `bytes` (> 0) of zero-filled device memory charged to `term` (for messages). Errors:
   *  QP_ERR_NOMEM for out of device memory (naming the term), others as the provider says. */
  qp_err (*alloc)(const char *term, size_t bytes, void **out);
  /** Frees a block of this provider's alloc (a failure is printed: free cannot fail). */
  void (*free)(void *ptr);
  /** The device's bytes in use and its total, as the device would say (a driver's rounding
   *  included); NULL where the device meter reads the device itself (the CUDA meter). Called
   *  from any thread (the timeline's sampler too). */
  void (*meter)(int64_t *used, int64_t *total);
} qp_device_memory;

/** Makes `provider` (static storage; NULL: back to the default) the source of every later
 *  device allocation. Blocks already allocated keep their provider. */
void qp_budget_device_memory_set(const qp_device_memory *provider);
/** The provider device allocations go to now: the one set, else the default (cudaMalloc in a
 *  build with CUDA), else NULL. */
const qp_device_memory *qp_budget_device_memory_get(void);

#endif
