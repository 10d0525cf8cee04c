/* report_h5.h: the /budget group of a results (or report) file, and reading it back.
 *
 * /budget holds the run's baseline and overhead; /budget/<stage> one group per stage with the
 * predicted figures (carried, peak, persistent, rise), the tracked ones (start, peak, end),
 * the measured ones (RSS at start and end, VmHWM, cgroup usage), their ratios, time and flops,
 * and a compound dataset "terms" with each term's predicted and tracked bytes. Every attribute
 * and column is listed in docs/output.md. */
#ifndef QP_REPORT_H5_H
#define QP_REPORT_H5_H

#include <hdf5.h>
#include <stdio.h>

#include "model.h"
#include "qp_error.h"

/** Writes /budget under `file` from the stage records (budget.h) and the model. `baseline`
 *  is the meter sample taken before the first stage (after warm-up). */
qp_err qp_report_write(hid_t file, const qp_model *model, const qp_meter_sample *baseline);
/** Prints the report of a results file: per stage, predicted beside measured. */
qp_err qp_report_print(const char *path, FILE *out);

#endif
