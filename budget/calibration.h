/* calibration.h: the measured constants of the memory model, in a small text file.
 *
 * `qmlpipe calibrate` measures the process's overhead (program, libraries, OpenBLAS buffers
 * per thread after the same warm-up a run does) on the machine where jobs will run and writes
 *   # qmlpipe calibration ...
 *   overhead_bytes 24178688
 *   threads 2
 * `qmlpipe budget`, `plan` and `run` read it (memory.calibration in the config, else the file
 * named by $QMLPIPE_CALIBRATION) and use overhead_bytes as the model's overhead term; without
 * one they use QP_MODEL_DEFAULT_OVERHEAD (model.h). */
#ifndef QP_CALIBRATION_H
#define QP_CALIBRATION_H

#include <stddef.h>

#include "qp_error.h"

typedef struct qp_calibration {
  size_t overhead_bytes;
  int threads; /* OpenMP threads when measured (the overhead grows with them) */
  char source[512]; /* the file it came from, or "built-in default" */
} qp_calibration;

/** Reads `path` ("" or NULL: $QMLPIPE_CALIBRATION, else the built-in default). QP_ERR_IO for a
 *  file that cannot be opened, QP_ERR_INPUT (naming file and line) for a malformed one. */
qp_err qp_calibration_load(const char *path, qp_calibration *cal);
/** Writes a calibration file atomically (temporary name, then rename). */
qp_err qp_calibration_write(const char *path, const qp_calibration *cal);

#endif
