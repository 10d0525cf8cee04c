/* warm_up.h: the libraries' first use before a run reads its baseline (warm_up.c). */
#ifndef QP_WARM_UP_H
#define QP_WARM_UP_H

#include <stddef.h>
#include <stdint.h>

#include "meter.h"

/** Warms up the BLAS library for problems of order n_pix whose widest BLAS call is `width`
 *  columns (n_pix, or n_modes on the SMW route with a diagonal noise), so that its buffers
 *  exist before any stage is measured; also the threads' heaps and stacks (driver.c). Returns
 *  the meter sample taken after it. Transient memory: three n x n matrices (n = min(n_pix,
 *  2048)), above n_pix 2048 also 512 x 16384 panels and a 256 x (threads x width) one (width
 *  capped at 65536), all tracked as term "warm_up" and freed before it returns. */
void qp_driver_warm_up(int64_t n_pix, int64_t width, qp_meter_sample *baseline);
/** What the warm-up's widest panel adds to OpenBLAS's buffers, in bytes, beyond the 16384-wide
 *  panels of every run above n_pix 2048: 2 KiB per column and thread (GEMM_Q = 256 doubles),
 *  measured with `qmlpipe calibrate --size` 16384 / 23808 / 40448 on 2 threads (+32, +61,
 *  +126 MiB); 0 when the panel is not wider than 16384 columns. */
size_t qp_driver_warm_up_panel_bytes(int64_t width);
/** Wall-clock seconds the last qp_driver_warm_up of this process took (0 before the first):
 *  the accounting's own cost, printed by `qmlpipe run` and read by qmlpipe-bench. */
double qp_driver_warm_up_seconds(void);

#endif
