/* driver.h: runs an analysis: the four stages inside their budget stages, then the results
 * file. Used by `qmlpipe run` and by the tests. */
#ifndef QP_DRIVER_H
#define QP_DRIVER_H

#include "problem.h"

typedef struct qp_run_options {
  int progress;        /* progress lines on stderr */
  int write_results;   /* 1: write cfg->output */
  int resume;          /* 1: continue from the newest checkpoint in cfg->checkpoint */
} qp_run_options;

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

/** The linear-algebra backend of a run: the config's, or the distributed one (its process
 *  grid set up from the config's grid block) when MPI runs several ranks or backend is dist. */
qp_err qp_driver_backend(const qp_config *cfg, const qp_linalg_ops **ops);

/** Runs every stage on `cfg`. On success `p` holds the results (free it with
 *  qp_problem_free); on failure nothing is written and `p` is freed. */
qp_err qp_driver_run(const qp_config *cfg, const qp_run_options *options, qp_problem *p,
                     qp_meter_sample *baseline);

#endif
