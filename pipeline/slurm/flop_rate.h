/* flop_rate.h: this machine's dgemm rate, measured in the process: the rate behind the --time
 * that `qmlpipe plan` writes into a job script, the figure `qmlpipe calibrate` records, and
 * the yardstick of `qmlpipe-bench`. */
#ifndef QP_FLOP_RATE_H
#define QP_FLOP_RATE_H

#include <stddef.h>
#include <stdint.h>

#include "calibration.h"
#include "qp_error.h"

/** Best of three n x n x n dgemm runs on the CPU backend with all OpenMP threads: in flop/s of
 *  wall-clock time, and (per_core, may be NULL) in flop/s of the process's CPU time, the rate
 *  of one busy core, which holds on a loaded machine where the wall-clock rate does not.
 *  Three n x n matrices, tracked as transient terms, freed before it returns. */
qp_err qp_dgemm_rate(int64_t n, double *flops_per_second, double *per_core);

/** The order of the dgemm `plan` times when no calibration file gives a rate: ~2 GFLOP, a
 *  fraction of a second, and within ~15% of the large-matrix rate of OpenBLAS. */
#define QP_JOB_RATE_DGEMM_N 1024

/** The flop/s per core for a job's --time: the calibration file's dgemm_mflops_per_core
 *  (`qmlpipe calibrate` on a compute node) when it has one, else a dgemm of order
 *  QP_JOB_RATE_DGEMM_N timed now on this machine, divided by its OpenMP threads. `source`
 *  says which, for the script's comment. */
qp_err qp_job_flop_rate(const qp_calibration *cal, double *per_core, char *source, size_t size);

#endif
