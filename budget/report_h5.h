/* report_h5.h: the /budget group of a results (or report) file, and reading it back.
 *
 * Layout (docs/output.md): /budget has attributes overhead_predicted_bytes,
 * baseline_rss_bytes, cgroup_version, hwm_reset; one subgroup per stage
 * (/budget/<stage>) with attributes (seconds, flops, gflops_per_s, tracked_*,
 * predicted_carried/peak/persistent_bytes, rss_start/end/peak_bytes,
 * measured_peak_rise_bytes = rss_peak - rss_start, predicted_peak_rise_bytes =
 * predicted_peak - predicted_carried, ratio_peak_rise = predicted/measured,
 * cgroup_start/end/peak_bytes) and a compound dataset "terms" with one row per term
 * (name, kind, space, predicted_bytes, tracked_peak_bytes, tracked_start_bytes,
 * tracked_end_bytes). */
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
