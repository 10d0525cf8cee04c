/* meter_device.c: the device meter from cudaMemGetInfo (meter_device.h). Built with CUDA only;
 * meter_device_provider.c stands in for it otherwise. */
#include "meter_device.h"

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdio.h>

/* Written by the thread that takes the baseline, read by any (the timeline's sampler thread
 * too): `device` is published last, with release order, so a reader that sees it also sees
 * the figures. -1: no baseline. */
static struct {
  atomic_int device;
  int64_t baseline, total;
  char name[300];
} qp_device_meter = {.device = -1, .baseline = -1, .total = -1, .name = "no device"};

qp_err qp_meter_device_baseline(void) {
  int device = -1;
  cudaError_t e = cudaGetDevice(&device);
  size_t free_bytes = 0, total_bytes = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_bytes, &total_bytes);
  QP_CHECK(e == cudaSuccess, QP_ERR_GPU, "device meter: cudaMemGetInfo failed (%s: %s)",
           cudaGetErrorName(e), cudaGetErrorString(e));
  struct cudaDeviceProp prop;
  const char *model = cudaGetDeviceProperties(&prop, device) == cudaSuccess ? prop.name : "?";
  atomic_store_explicit(&qp_device_meter.device, -1, memory_order_release);
  qp_device_meter.baseline = (int64_t)(total_bytes - free_bytes);
  qp_device_meter.total = (int64_t)total_bytes;
  snprintf(qp_device_meter.name, sizeof qp_device_meter.name, "cuda:%d %s", device, model);
  atomic_store_explicit(&qp_device_meter.device, device, memory_order_release);
  return QP_OK;
}

void qp_meter_device_read(qp_device_sample *s) {
  *s = (qp_device_sample){-1, -1, -1};
  int device = atomic_load_explicit(&qp_device_meter.device, memory_order_acquire);
  if (device < 0) return;
  /* A new thread's current device is 0: name the metered one, so that no other device gets a
   * context from this read. */
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess ||
      (current != device && cudaSetDevice(device) != cudaSuccess))
    return;
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  s->baseline = qp_device_meter.baseline;
  s->total = (int64_t)total_bytes;
  s->used = (int64_t)(total_bytes - free_bytes) - qp_device_meter.baseline;
}

void qp_meter_device_clear(void) {
  atomic_store_explicit(&qp_device_meter.device, -1, memory_order_release);
  snprintf(qp_device_meter.name, sizeof qp_device_meter.name, "no device");
}

const char *qp_meter_device_name(void) { return qp_device_meter.name; }
