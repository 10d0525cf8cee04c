/* meter_device_none.c: the device meter of a build without CUDA: there is no device
 * (meter_device.h). meter_device.c replaces this file in builds with CUDA. */
#include "meter_device.h"

qp_err qp_meter_device_baseline(void) {
  QP_FAIL(QP_ERR_UNSUPPORTED, "no device: this build of qmlpipe has no CUDA (-DQP_ENABLE_CUDA=ON)");
}

void qp_meter_device_read(qp_device_sample *sample) { *sample = (qp_device_sample){-1, -1, -1}; }

void qp_meter_device_clear(void) {}

const char *qp_meter_device_name(void) { return "no device"; }
