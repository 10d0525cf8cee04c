/* meter_device.h: what the CUDA device says about its memory (the device meter).
 *
 * cudaMemGetInfo gives the bytes in use on the whole device (total - free). Usage is reported
 * above a baseline taken once the CUDA context and the cuBLAS/cuSOLVER handles exist (the
 * cuda backend takes it in qp_cuda_init), so that what the context and the libraries hold is
 * the device's constant overhead and the rest compares with the tracked device bytes
 * (budget.h). The figures cover every process on the device: they mean this process's memory
 * only when it has the GPU to itself (one rank per GPU, no MPS).
 *
 * Reading never creates a CUDA context: before a baseline, or in a build without CUDA and
 * without a device-memory provider with a meter (device_memory.h), every figure is -1. In a
 * build without CUDA the meter reads that provider: the test backend hostdev
 * (tests/support/hostdev.h) reports the bytes it has mapped, page-rounded, and takes the baseline
 * in qp_hostdev_init. Not collective over MPI. */
#ifndef QP_METER_DEVICE_H
#define QP_METER_DEVICE_H

#include <stdint.h>

#include "qp_error.h"

typedef struct qp_device_sample {
  int64_t used;     /* bytes in use now minus the baseline, or -1 */
  int64_t baseline; /* bytes in use when the baseline was taken, or -1 */
  int64_t total;    /* the device's memory, or -1 */
} qp_device_sample;

/** Takes the baseline on the calling thread's current device, which must already have a CUDA
 *  context (without CUDA: the provider's figure now). Errors: QP_ERR_UNSUPPORTED without CUDA
 *  and without a metered provider ("no device"), QP_ERR_GPU when cudaMemGetInfo fails. Taking it again replaces it (e.g. after a warm-up). */
qp_err qp_meter_device_baseline(void);
/** Reads the device meter now (never fails; -1 figures when there is no baseline). Safe from
 *  any thread: it reads the device the baseline was taken on. */
void qp_meter_device_read(qp_device_sample *sample);
/** Forgets the baseline (the cuda backend's teardown); reads give -1 again. */
void qp_meter_device_clear(void);
/** "no device", or the metered device, e.g. "cuda:0 NVIDIA H100 80GB HBM3", or the provider's
 *  name ("hostdev ..."). */
const char *qp_meter_device_name(void);

#endif
