/* meter_device_provider.c: the device meter of a build without CUDA (meter_device.h), read
 * through the device-memory provider (device_memory.h). With no provider, or one without a
 * meter, there is no device. The test backend hostdev sets a provider whose meter reports the
 * bytes it has mapped, and takes the baseline in qp_hostdev_init, so that its device meter
 * compares with the tracked device bytes as a GPU's would. meter_device.c replaces this file in
 * builds with CUDA. */
#include "meter_device.h"

#include <stdatomic.h>

#include "device_memory.h"

/* Written by the thread that takes the baseline, read by any (the timeline's sampler too):
 * `provider` is published last, with release order, so a reader that sees it also sees the
 * baseline. NULL: no baseline. */
static struct {
  _Atomic(const qp_device_memory *) provider;
  int64_t baseline;
} qp_provider_meter = {.provider = NULL, .baseline = -1};

qp_err qp_meter_device_baseline(void) {
  const qp_device_memory *p = qp_budget_device_memory_get();
  QP_CHECK(p && p->meter, QP_ERR_UNSUPPORTED,
           "no device: this build of qmlpipe has no CUDA (-DQP_ENABLE_CUDA=ON)");
  int64_t used = -1, total = -1;
  p->meter(&used, &total);
  atomic_store_explicit(&qp_provider_meter.provider, NULL, memory_order_release);
  qp_provider_meter.baseline = used;
  atomic_store_explicit(&qp_provider_meter.provider, p, memory_order_release);
  return QP_OK;
}

void qp_meter_device_read(qp_device_sample *sample) {
  *sample = (qp_device_sample){-1, -1, -1};
  const qp_device_memory *p =
      atomic_load_explicit(&qp_provider_meter.provider, memory_order_acquire);
  if (!p) return;
  int64_t used = -1, total = -1;
  p->meter(&used, &total);
  sample->baseline = qp_provider_meter.baseline;
  sample->total = total;
  sample->used = used - qp_provider_meter.baseline;
}

void qp_meter_device_clear(void) {
  atomic_store_explicit(&qp_provider_meter.provider, NULL, memory_order_release);
}

const char *qp_meter_device_name(void) {
  const qp_device_memory *p =
      atomic_load_explicit(&qp_provider_meter.provider, memory_order_acquire);
  return p ? p->name : "no device";
}
