/* meter.c: RSS from /proc/self/status and the cgroup's memory figures (meter.h). */
#include "meter.h"

#include <stdio.h>
#include <string.h>

/* Reads "Key:   123 kB" from /proc/self/status; -1 when absent. */
static int64_t qp_status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int64_t value = -1;
  size_t key_len = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, key_len) == 0 && line[key_len] == ':') {
      long long kib = -1;
      if (sscanf(line + key_len + 1, "%lld", &kib) == 1) value = (int64_t)kib * 1024;
      break;
    }
  }
  fclose(f);
  return value;
}

static int64_t qp_read_bytes_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long long v = -1;
  if (fscanf(f, "%lld", &v) != 1) v = -1;
  fclose(f);
  return (int64_t)v;
}

static int qp_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  int ok = fputs(text, f) >= 0;
  ok = (fclose(f) == 0) && ok;
  return ok;
}

/* The files of this process's cgroup. We read the paths under /sys/fs/cgroup as seen from
 * inside the process's namespace (a container or a Slurm job step sees its own cgroup there). */
static const char *const qp_v2_current = "/sys/fs/cgroup/memory.current";
static const char *const qp_v2_peak = "/sys/fs/cgroup/memory.peak";
static const char *const qp_v1_current = "/sys/fs/cgroup/memory/memory.usage_in_bytes";
static const char *const qp_v1_peak = "/sys/fs/cgroup/memory/memory.max_usage_in_bytes";

int qp_meter_cgroup_version(void) {
  if (qp_read_bytes_file(qp_v2_current) >= 0) return 2;
  if (qp_read_bytes_file(qp_v1_current) >= 0) return 1;
  return 0;
}

void qp_meter_read(qp_meter_sample *s) {
  memset(s, 0, sizeof *s);
  s->rss = qp_status_kib("VmRSS");
  s->hwm = qp_status_kib("VmHWM");
  switch (qp_meter_cgroup_version()) {
  case 2:
    s->cgroup_current = qp_read_bytes_file(qp_v2_current);
    s->cgroup_peak = qp_read_bytes_file(qp_v2_peak);
    break;
  case 1:
    s->cgroup_current = qp_read_bytes_file(qp_v1_current);
    s->cgroup_peak = qp_read_bytes_file(qp_v1_peak);
    break;
  default: s->cgroup_current = s->cgroup_peak = -1;
  }
}

void qp_meter_reset_peaks(int *hwm_reset, int *cgroup_peak_reset) {
  /* "5" resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0, proc(5)). */
  *hwm_reset = qp_write_file("/proc/self/clear_refs", "5");
  switch (qp_meter_cgroup_version()) {
  case 2: *cgroup_peak_reset = qp_write_file(qp_v2_peak, "0"); break;
  case 1: *cgroup_peak_reset = qp_write_file(qp_v1_peak, "0"); break;
  default: *cgroup_peak_reset = 0;
  }
}
