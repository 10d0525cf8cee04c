/* calibration.c: reading and writing the calibration file (calibration.h). */
#include "calibration.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "checked_size.h"
#include "input_file.h"

qp_err qp_calibration_load(const char *path, qp_calibration *cal) {
  memset(cal, 0, sizeof *cal);
  if (!path || !path[0]) path = getenv("QMLPIPE_CALIBRATION");
  if (!path || !path[0]) {
    snprintf(cal->source, sizeof cal->source, "built-in default");
    cal->builtin = 1;
    return QP_OK;
  }
  snprintf(cal->source, sizeof cal->source, "%s", path);
  /* A regular text file only (input_file.h): /dev/zero would feed the loop below forever. */
  FILE *f = NULL;
  QP_CALL(qp_input_fopen("calibration file", path, QP_INPUT_TEXT_MAX_BYTES, &f));
  char line[512];
  int line_no = 0, have_overhead = 0;
  qp_err err = QP_OK;
  while (err == QP_OK && fgets(line, sizeof line, f)) {
    ++line_no;
    char key[64];
    long long value = 0;
    int used = 0;
    char *s = line + strspn(line, " \t");
    if (*s == '#' || *s == '\n' || *s == '\0') continue;
    if (strncmp(s, "blas_kernel", 11) == 0 && (s[11] == ' ' || s[11] == '\t')) {
      const char *text = s + 11 + strspn(s + 11, " \t");
      const size_t n = strcspn(text, "\r\n");
      if (n == 0 || n >= sizeof cal->blas_kernel) {
        err = qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                           "calibration file '%s' line %d: blas_kernel needs a name of 1 to %zu "
                           "characters",
                           path, line_no, sizeof cal->blas_kernel - 1);
        continue;
      }
      memcpy(cal->blas_kernel, text, n);
      cal->blas_kernel[n] = '\0';
      continue;
    }
    /* The value: a whole decimal number (strtoll, checked), at most 2^56 (checked_size.h):
     * the model adds the overhead to its peaks, which stay below 2^63 only so. */
    char *end = NULL;
    int parsed = sscanf(s, "%63s %n", key, &used) == 1 && used > 0;
    if (parsed) {
      errno = 0;
      value = strtoll(s + used, &end, 10);
      parsed = end != s + used && errno != ERANGE && end[strspn(end, " \t\r\n")] == '\0';
    }
    if (!parsed || value < 0) {
      err = qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                         "calibration file '%s' line %d: expected 'key value' with a whole "
                         "number from 0 to 2^56, got '%.*s'",
                         path, line_no, (int)strcspn(s, "\r\n"), s);
    } else if ((size_t)value > QP_SIZE_TERM_MAX) {
      err = qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                         "calibration file '%s' line %d: %s %lld is more than 2^56 bytes", path,
                         line_no, key, value);
    } else if (strcmp(key, "threads") == 0 && value > INT_MAX) {
      err = qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                         "calibration file '%s' line %d: threads %lld is not an int", path, line_no,
                         value);
    } else if (strcmp(key, "overhead_bytes") == 0) {
      cal->overhead_bytes = (size_t)value;
      have_overhead = 1;
    } else if (strcmp(key, "program_bytes") == 0) {
      cal->program_bytes = (size_t)value;
    } else if (strcmp(key, "blas_bytes") == 0) {
      cal->blas_bytes = (size_t)value;
    } else if (strcmp(key, "hdf5_bytes") == 0) {
      cal->hdf5_bytes = (size_t)value;
    } else if (strcmp(key, "threads") == 0) {
      cal->threads = (int)value;
    } else if (strcmp(key, "dgemm_mflops_per_core") == 0) {
      cal->dgemm_mflops_per_core = (size_t)value;
    } else {
      err = qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                         "calibration file '%s' line %d: unknown key '%s'", path, line_no, key);
    }
  }
  fclose(f);
  QP_CALL(err);
  QP_CHECK(have_overhead, QP_ERR_INPUT, "calibration file '%s' has no overhead_bytes", path);
  return QP_OK;
}

qp_err qp_calibration_write(const char *path, const qp_calibration *cal) {
  qp_atomic_file tmp;
  FILE *f = NULL;
  QP_CALL(qp_atomic_begin(path, &tmp));
  qp_err err = qp_atomic_fopen(&tmp, 0666, &f);
  if (err == QP_OK) {
    fprintf(f,
            "# qmlpipe calibration: the process's RSS after the BLAS warm-up of a run, measured "
            "by\n# `qmlpipe calibrate` on this machine; the memory model's overhead term\n"
            "overhead_bytes %zu\nprogram_bytes %zu\nblas_bytes %zu\nhdf5_bytes %zu\nthreads %d\n",
            cal->overhead_bytes, cal->program_bytes, cal->blas_bytes, cal->hdf5_bytes,
            cal->threads);
    if (cal->blas_kernel[0])
      fprintf(f,
              "# the BLAS library and kernel blas_bytes was measured on: used only there\n"
              "blas_kernel %s\n",
              cal->blas_kernel);
    if (cal->dgemm_mflops_per_core > 0)
      fprintf(f,
              "# the dgemm rate per core with every thread busy, MFLOP/s: plan's job --time\n"
              "dgemm_mflops_per_core %zu\n",
              cal->dgemm_mflops_per_core);
    err = qp_atomic_fcommit(&tmp, f, 1);
  }
  if (err != QP_OK) {
    qp_atomic_abort(&tmp);
    qp_error_trace(__FILE__, __LINE__, __func__);
  }
  return err;
}
