/* calibration.h: the measured constants of the memory model, in a small text file.
 *
 * `qmlpipe calibrate` measures the process's overhead (program, libraries, OpenBLAS buffers
 * per thread after the same warm-up a run does) on the machine where jobs will run and writes
 *   # qmlpipe calibration ...
 *   overhead_bytes 24178688       (the sum of the next three)
 *   program_bytes 3407872
 *   blas_bytes 20185088
 *   hdf5_bytes 585728
 *   threads 2
 *   blas_kernel OpenBLAS 0.3.21 Haswell   (the library and kernel blas_bytes was measured on)
 *   dgemm_mflops_per_core 38000   (optional: the dgemm rate per core, all threads busy)
 * `qmlpipe budget`, `plan` and `run` read it (memory.calibration in the config, else the file
 * named by $QMLPIPE_CALIBRATION) and use overhead_bytes as the model's overhead term; without
 * one (builtin, overhead_bytes 0) the program uses its own default (pipeline/memory_model.h). */
#ifndef QP_CALIBRATION_H
#define QP_CALIBRATION_H

#include <stddef.h>

#include "qp_error.h"

typedef struct qp_calibration {
  size_t overhead_bytes;        /* the sum of the parts below (0 without a file: builtin) */
  size_t program_bytes;         /* the program and its libraries at start */
  size_t blas_bytes;            /* OpenBLAS buffers touched by the warm-up, all threads */
  size_t hdf5_bytes;            /* the HDF5 library's own state once initialised */
  int threads;                  /* OpenMP threads when measured (the overhead grows with them) */
  size_t dgemm_mflops_per_core; /* the dgemm rate per core (MFLOP/s), 0 when not measured:
                                 * the rate of the --time `plan` writes into a job script */
  /* The BLAS library and kernel blas_bytes was measured on ("" in files from before it was
   * recorded). The planner uses blas_bytes only on the same kernel; elsewhere it measures the
   * BLAS part again (pipeline/planner.c): the buffers follow the kernel's blocking. */
  char blas_kernel[112];
  int blas_stale;   /* set by the planner's caller: blas_kernel is not the running kernel's */
  char source[512]; /* the file it came from, or "built-in default" */
  int builtin;      /* 1: no file; the model picks its default by problem size */
} qp_calibration;

/** Reads `path` ("" or NULL: $QMLPIPE_CALIBRATION, else the built-in default). QP_ERR_IO for a
 *  file that cannot be opened, QP_ERR_INPUT (naming file and line) for a malformed one: a
 *  value that is not a whole number from 0 to 2^56 (QP_SIZE_TERM_MAX), or threads beyond int;
 *  blas_kernel takes the rest of its line as text (at most 111 characters). */
qp_err qp_calibration_load(const char *path, qp_calibration *cal);
/** Writes a calibration file atomically (a private temporary beside it, then rename:
 *  atomic_file.h). */
qp_err qp_calibration_write(const char *path, const qp_calibration *cal);

#endif
