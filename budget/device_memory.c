/* device_memory.c: the provider of the budget's device space (device_memory.h). */
#include "device_memory.h"

#include <stdatomic.h>

#include "qp_config.h"
#if QP_HAVE_CUDA
#include "alloc_device.h"
#endif

/* Set by the thread that chooses a backend, read by any (allocations, the meter's sampler). */
static _Atomic(const qp_device_memory *) qp_device_memory_set_one = NULL;

void qp_budget_device_memory_set(const qp_device_memory *provider) {
  atomic_store_explicit(&qp_device_memory_set_one, provider, memory_order_release);
}

const qp_device_memory *qp_budget_device_memory_get(void) {
  const qp_device_memory *p = atomic_load_explicit(&qp_device_memory_set_one, memory_order_acquire);
#if QP_HAVE_CUDA
  if (!p) p = qp_device_memory_cuda();
#endif
  return p;
}
