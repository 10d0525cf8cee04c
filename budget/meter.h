/* meter.h: what the operating system says about this process's memory.
 *
 * RSS and its high-water mark come from /proc/self/status (VmRSS, VmHWM); the high-water mark
 * is reset by writing "5" to /proc/self/clear_refs, which a stage does at its start. The
 * cgroup figures are what a batch system charges: the process's own cgroup (from
 * /proc/self/cgroup), v2 memory.current / memory.peak or v1 memory.usage_in_bytes /
 * memory.max_usage_in_bytes; -1 where they cannot be read. The cgroup peak is the peak since
 * the cgroup began: qmlpipe never resets it (the batch system's accounting reads it too).
 * device_used is the device meter's reading (meter_device.h): -1 without a CUDA device. */
#ifndef QP_METER_H
#define QP_METER_H

#include <stdint.h>

typedef struct qp_meter_sample {
  int64_t rss;            /* VmRSS, bytes */
  int64_t hwm;            /* VmHWM, bytes */
  int64_t rss_shared;     /* RssFile + RssShmem: the file-backed and shared pages of VmRSS
                           * (libraries, MPI's shared-memory segments), which Slurm's
                           * jobacct_gather/cgroup leaves out of MaxRSS; bytes, or -1 */
  int64_t cgroup_current; /* bytes, or -1 */
  int64_t cgroup_peak;    /* bytes, or -1 */
  int hwm_reset;          /* 1 if the last reset of VmHWM succeeded */
  int cgroup_peak_reset;  /* 1 if the last reset of the cgroup peak succeeded */
  int64_t device_used;    /* device bytes in use above its baseline (meter_device.h), or -1 */
} qp_meter_sample;

/** Reads all meters now (never fails: missing figures are -1). */
void qp_meter_read(qp_meter_sample *sample);
/** Resets VmHWM; *hwm_reset says whether it worked. *cgroup_peak_reset is always 0. */
void qp_meter_reset_peaks(int *hwm_reset, int *cgroup_peak_reset);
/** The cgroup version found (1 or 2), or 0 when none is readable. */
int qp_meter_cgroup_version(void);

#endif
