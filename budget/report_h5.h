/* report_h5.h: the /budget group of a results (or report) file, and reading it back.
 *
 * /budget holds the run's baseline and overhead; /budget/<stage> one group per stage with the
 * predicted figures (carried, peak, persistent, rise), the tracked ones (start, peak, end),
 * the measured ones (RSS at start and end, VmHWM, cgroup usage), their ratios, time and flops,
 * and a compound dataset "terms" with each term's predicted and tracked bytes; and, when the
 * sampler ran (timeline.h), /budget/timeline: the samples as columns (t_seconds, rss_bytes,
 * cgroup_bytes, tracked_bytes, stage_index) and the stage boundaries ("events"). Every
 * attribute and column is listed in docs/output.md. */
#ifndef QP_REPORT_H5_H
#define QP_REPORT_H5_H

#include <hdf5.h>
#include <stdio.h>

#include "model.h"
#include "qp_error.h"

/** Writes /budget under `file` from the stage records (budget.h) and the model. `baseline`
 *  is the meter sample taken before the first stage (after warm-up). Writes /budget/timeline
 *  too when the timeline holds samples (qp_timeline_get).
 *  Errors: QP_ERR_IO with HDF5's message; QP_ERR_INTERNAL while the timeline sampler still
 *  runs (stop it with qp_timeline_stop first). */
qp_err qp_report_write(hid_t file, const qp_model *model, const qp_meter_sample *baseline);
/** Writes the host memory limit a run planned to as attributes of /budget (written first by
 *  qp_report_write): memory_limit (int64 bytes, 0 when none) and memory_limit_source (string:
 *  "memory.host_limit", the cgroup, Slurm variable or RLIMIT_AS it came from, or "none").
 *  QP_ERR_IO on HDF5 failures. */
qp_err qp_report_write_limit(hid_t file, double bytes, const char *source);
/** Writes a device run's context as attributes of /budget (written first by qp_report_write):
 *  device_context_predicted_bytes (what the plan reserved: memory.device_overhead or the
 *  backend's default) and device_context_measured_bytes (the device meter's baseline, taken
 *  after the context and the library handles exist; -1 without a metered device), and
 *  device_context_source. QP_ERR_IO on HDF5 failures. */
qp_err qp_report_write_device_context(hid_t file, double predicted, int64_t measured,
                                      const char *source);
/** Prints the report of a results file: per stage, predicted beside measured, and one line
 *  about the timeline when the file has one (samples, final interval, largest RSS seen). */
qp_err qp_report_print(const char *path, FILE *out);

#endif
