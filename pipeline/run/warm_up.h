/* warm_up.h: the libraries' first use before a run reads its baseline (warm_up.c). */
#ifndef QP_WARM_UP_H
#define QP_WARM_UP_H

#include <stddef.h>
#include <stdint.h>

#include "blas_buffers.h"
#include "openblas_tuning.h"
#include "memory_model.h"
#include "matrix.h"
#include "meter.h"
#include "qp_error.h"

/** Kernels the warm-up runs besides those every route calls (qp_driver_warm_up_kernels). */
typedef enum qp_warm_up_kernels {
  QP_WARM_UP_LU = 1,        /* getrf, gecon, getrs: SMW's I + K Lambda */
  QP_WARM_UP_TRIANGLES = 2, /* trtri, trmm: pixel-direct's products with L^-1 */
  QP_WARM_UP_SOLVES = 4,    /* trsm: the harmonic routes' solves with L */
  QP_WARM_UP_EVERY = 7
} qp_warm_up_kernels;

/** Warms up the BLAS library for problems of order n_pix whose widest BLAS call is `width`
 *  columns (n_pix, or n_modes on the SMW route with a diagonal noise), so that its buffers
 *  exist before any stage is measured; also the threads' heaps and stacks (driver.c). Returns
 *  the meter sample taken after it. Thin by design (warm_up.c): each kernel once at order
 *  min(n_pix, 256), then panels 256 rows by threads x width columns (width capped at 65536;
 *  + 512 on one thread), which touch the same buffer pages as full-size work would. Transient
 * memory: three 256 x 256 matrices and the panels (2 KiB per column and thread), all tracked as
 * term "warm_up" and freed before it returns. */
/* Order of the device warm-up's matrices (qp_driver_warm_up_device). */
#define QP_DEVICE_WARM_UP_ORDER 512
/** A device backend's libraries once, on one process, before qp_driver_warm_up reads the
 *  baseline (their first use, not a stage's, pages in what they load); no-op on a host
 *  backend, on several ranks or under QP_WARM_UP=0. */
void qp_driver_warm_up_device(const qp_linalg_ops *ops, int64_t n_pix);
void qp_driver_warm_up(int64_t n_pix, int64_t width, qp_warm_up_kernels kernels,
                       qp_meter_sample *baseline);
/** The kernels of a route's stages beyond those of every route (gemm, syrk, potrf, its
 *  condition estimate, potri): a route that never calls the others' pays nothing for them
 *  (the projection's warm-up 0.016 -> 0.0 s on T nside 16, docs/benchmarks.md). */
qp_warm_up_kernels qp_driver_warm_up_kernels(qp_model_path path);
/** 0 when the environment says QP_WARM_UP=0: qp_driver_warm_up then only reads the baseline.
 *  A switch for measuring the warm-up's cost (qmlpipe-bench runs each problem both ways), not
 *  for users: without the warm-up the libraries' first use (OpenBLAS's buffers, code pages)
 *  lands in the stages' measured memory, and `validate` may find drift there. */
int qp_driver_warm_up_wanted(void);
/** QP_ERR_INPUT, naming the variable, when QP_WARM_UP is set to anything but 0 or 1. */
qp_err qp_driver_warm_up_check_env(void);
/** Wall-clock seconds the last qp_driver_warm_up of this process took (0 before the first):
 *  the accounting's own cost, printed by `qmlpipe run` and read by qmlpipe-bench. */
double qp_driver_warm_up_seconds(void);

#endif
