/* report_print.c: `qmlpipe report`: the /budget group of a results file read back and printed
 * (report_h5.h). */
#include <hdf5_hl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h5_attr.h"
#include "report_open.h"
#include "h5_error.h"
#include "report_h5.h"
#include "report_layout.h"

/* An attribute as int64 (or double); `fallback` when the attribute is missing or unreadable:
 * the report prints what the file holds and "n/a" for the rest. */
/* The readers print what the file holds: a missing or unreadable attribute gives the
 * fallback (files of older versions lack some). One that holds other than one value (a
 * damaged or foreign file: h5_attr.c) gives the fallback too, and its message is kept here,
 * the first of them, for qp_report_print to fail with once the report is printed. */
static char qp_report_malformed[512];

static void qp_read_failed(qp_err err) {
  if (err == QP_ERR_INPUT && !qp_report_malformed[0])
    snprintf(qp_report_malformed, sizeof qp_report_malformed, "%s", qp_error_message());
  qp_error_clear();
  H5Eclear2(H5E_DEFAULT);
}

static int64_t qp_read_i64(hid_t obj, const char *name, int64_t fallback) {
  int64_t v = fallback;
  if (H5Aexists(obj, name) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return fallback;
  }
  const qp_err err = qp_h5_attr_i64(obj, "report", name, 0, &v);
  if (err != QP_OK) {
    qp_read_failed(err);
    v = fallback;
  }
  return v;
}

static double qp_read_f64(hid_t obj, const char *name, double fallback) {
  double v = fallback;
  if (H5Aexists(obj, name) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return fallback;
  }
  const qp_err err = qp_h5_attr_f64(obj, "report", name, &v);
  if (err != QP_OK) {
    qp_read_failed(err);
    v = fallback;
  }
  return v;
}

/* A scalar string attribute into buf; "" when missing or unreadable. */
static void qp_read_str(hid_t obj, const char *name, char *buf, size_t size) {
  const qp_err err = qp_h5_attr_string(obj, "report", name, buf, size);
  if (err != QP_OK) {
    buf[0] = '\0';
    qp_read_failed(err);
  }
  H5Eclear2(H5E_DEFAULT);
}

/* Bytes in MiB (below 1 GiB) or GiB with three decimals; "n/a" for unknown (negative). */
static const char *qp_human(int64_t bytes, char *buf, size_t size) {
  if (bytes < 0)
    snprintf(buf, size, "n/a");
  else if (bytes >= ((int64_t)1 << 30))
    snprintf(buf, size, "%.3f GiB", (double)bytes / 1073741824.0);
  else
    snprintf(buf, size, "%.3f MiB", (double)bytes / 1048576.0);
  return buf;
}

static const char *qp_ratio(double r, char *buf, size_t size) {
  if (isfinite(r))
    snprintf(buf, size, "%.3f", r);
  else
    snprintf(buf, size, "n/a");
  return buf;
}

static qp_err qp_report_print_terms(hid_t stage, const char *where, FILE *out) {
  qp_err err = QP_OK;
  hid_t dset = -1, space = -1, type = -1;
  qp_report_row *rows = NULL;
  if (H5Lexists(stage, "terms", H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fprintf(out, "  (no terms table)\n");
    return QP_OK;
  }
  QP_H5_GOTO(dset = H5Dopen2(stage, "terms", H5P_DEFAULT), done, "%s/terms", where);
  QP_H5_GOTO(space = H5Dget_space(dset), done, "%s/terms", where);
  hssize_t n = H5Sget_simple_extent_npoints(space);
  QP_H5_GOTO(n, done, "%s/terms", where);
  QP_H5_GOTO(type = qp_report_row_type(), done, "%s/terms", where);
  if (n > 0) {
    rows = calloc((size_t)n, sizeof *rows);
    QP_CHECK_GOTO(rows, QP_ERR_NOMEM, done, "%s/terms: %lld rows", where, (long long)n);
    QP_H5_GOTO(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), done,
               "%s/terms: cannot read (not a qmlpipe terms table?)", where);
  }
  char a[32], b[32];
  fprintf(out, "  %-20s %-10s %-6s %34s %34s\n", "term", "kind", "space", "predicted bytes",
          "tracked peak bytes");
  for (hssize_t i = 0; i < n; ++i) {
    qp_report_row *r = &rows[i];
    r->name[sizeof r->name - 1] = r->kind[sizeof r->kind - 1] = r->space[sizeof r->space - 1] = 0;
    const char *mark = "";
    if (r->predicted_bytes != r->tracked_peak_bytes)
      mark = r->predicted_bytes == 0      ? "  <-- DRIFT (not in model)"
             : r->tracked_peak_bytes == 0 ? "  <-- DRIFT (not tracked)"
                                          : "  <-- DRIFT";
    fprintf(out, "  %-20s %-10s %-6s %20" PRId64 " %13s %20" PRId64 " %13s%s\n", r->name, r->kind,
            r->space, r->predicted_bytes, qp_human(r->predicted_bytes, a, sizeof a),
            r->tracked_peak_bytes, qp_human(r->tracked_peak_bytes, b, sizeof b), mark);
  }
done:
  free(rows);
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  return err;
}

/* A stage's tracked peak against the prediction: EXACT, DRIFT by how much, or RESUMED (a stage
 * a resumed run did not run: its records are the checkpoint's). */
static void qp_tracked_verdict(int resumed, int64_t predicted, int64_t tracked, char *out,
                               size_t size) {
  if (resumed)
    snprintf(out, size, "RESUMED");
  else if (predicted == tracked)
    snprintf(out, size, "EXACT");
  else
    snprintf(out, size, "DRIFT (%+" PRId64 " B)", tracked - predicted);
}

static qp_err qp_report_print_stage(hid_t stage, const char *where, const char *name, FILE *out) {
  char a[32], b[32], c[32];
  char label[256];
  qp_read_str(stage, "stage", label, sizeof label);
  if (!label[0]) snprintf(label, sizeof label, "%s", name);
  double seconds = qp_read_f64(stage, "seconds", NAN);
  double gflops = qp_read_f64(stage, "gflops_per_s", NAN);
  fprintf(out, "\nstage %s: %.3f s, %.3f GFLOP/s\n", label, seconds, gflops);
  /* Files from before checkpoints have no attribute: not resumed. */
  const int resumed = qp_read_i64(stage, "resumed", 0) > 0;
  if (resumed)
    fprintf(out, "  RESUMED from a checkpoint: its figures are those of reading the checkpoint, "
                 "not of the stage's work, and are not compared with the model\n");
  if (!qp_read_i64(stage, "model_has_stage", 1))
    fprintf(out, "  (the model predicts nothing for this stage)\n");
  fprintf(out, "  %-28s %14s %14s %10s\n", "", "predicted", "measured", "ratio");

  int64_t pr_rise = qp_read_i64(stage, "predicted_peak_rise_bytes", -1);
  int64_t rss_start = qp_read_i64(stage, "rss_start_bytes", -1);
  int64_t rss_peak = qp_read_i64(stage, "rss_peak_bytes", -1);
  int64_t rss_end = qp_read_i64(stage, "rss_end_bytes", -1);
  int64_t me_rise =
      (rss_start >= 0 && rss_peak >= 0) ? qp_read_i64(stage, "measured_peak_rise_bytes", -1) : -1;
  double ratio = me_rise > 0 ? (double)pr_rise / (double)me_rise : NAN;
  fprintf(out, "  %-28s %14s %14s %10s\n", "peak rise (RSS)", qp_human(pr_rise, a, sizeof a),
          qp_human(me_rise, b, sizeof b), qp_ratio(ratio, c, sizeof c));

  int64_t pr_peak = qp_read_i64(stage, "predicted_peak_bytes", -1);
  int64_t tr_peak = qp_read_i64(stage, "tracked_peak_bytes", -1);
  qp_tracked_verdict(resumed, pr_peak, tr_peak, c, sizeof c);
  fprintf(out, "  %-28s %14s %14s %10s\n", "tracked peak", qp_human(pr_peak, a, sizeof a),
          qp_human(tr_peak, b, sizeof b), c);

  /* The device (a device backend's runs): tracked against the model, and what the device
   * meter saw above its baseline at the stage's start and end. */
  int64_t pr_dev = qp_read_i64(stage, "predicted_device_peak_bytes", 0);
  int64_t tr_dev = qp_read_i64(stage, "device_tracked_peak_bytes", 0);
  if (pr_dev > 0 || tr_dev > 0) {
    qp_tracked_verdict(resumed, pr_dev, tr_dev, c, sizeof c);
    fprintf(out, "  %-28s %14s %14s %10s\n", "device tracked peak", qp_human(pr_dev, a, sizeof a),
            qp_human(tr_dev, b, sizeof b), c);
    fprintf(out, "  %-28s %14s %14s\n", "device meter at start / end",
            qp_human(qp_read_i64(stage, "device_meter_start_bytes", -1), a, sizeof a),
            qp_human(qp_read_i64(stage, "device_meter_end_bytes", -1), b, sizeof b));
  }

  int64_t pr_abs = qp_read_i64(stage, "predicted_peak_absolute_bytes", -1);
  ratio = rss_peak > 0 && pr_abs >= 0 ? (double)pr_abs / (double)rss_peak : NAN;
  fprintf(out, "  %-28s %14s %14s %10s\n", "RSS peak (with overhead)",
          qp_human(pr_abs, a, sizeof a), qp_human(rss_peak, b, sizeof b),
          qp_ratio(ratio, c, sizeof c));
  fprintf(out, "  %-28s %14s %14s\n", "RSS at start / end", qp_human(rss_start, a, sizeof a),
          qp_human(rss_end, b, sizeof b));
  if (!qp_read_i64(stage, "hwm_reset", 1))
    fprintf(out, "  (VmHWM could not be reset: the RSS peak is the process's lifetime peak)\n");

  int64_t cg0 = qp_read_i64(stage, "cgroup_start_bytes", -1);
  int64_t cg1 = qp_read_i64(stage, "cgroup_end_bytes", -1);
  int64_t cgp = qp_read_i64(stage, "cgroup_peak_bytes", -1);
  if (cg0 >= 0 || cg1 >= 0 || cgp >= 0)
    fprintf(out, "  %-28s %14s %14s %14s%s\n", "cgroup start / end / peak",
            qp_human(cg0, a, sizeof a), qp_human(cg1, b, sizeof b), qp_human(cgp, c, sizeof c),
            qp_read_i64(stage, "cgroup_peak_reset", 0) ? "" : "  (peak not reset)");
  int64_t drift = qp_read_i64(stage, "drift_terms", -1);
  if (drift >= 0)
    fprintf(out, "  terms differing between model and allocator: %" PRId64 "\n", drift);
  QP_CALL(qp_report_print_terms(stage, where, out));
  return QP_OK;
}

/* Whether a group under /budget is the timeline (named so, without a stage's attributes). */
static int qp_report_is_timeline(hid_t group, const char *name) {
  int is = strcmp(name, "timeline") == 0 && H5Aexists(group, "stage") == 0;
  H5Eclear2(H5E_DEFAULT);
  return is;
}

/* Reads a whole 1-D dataset of the timeline into a new array of n values of `type`. */
static qp_err qp_report_read_column(hid_t group, const char *where, const char *name, hid_t type,
                                    size_t elem, hssize_t n, void **values) {
  qp_err err = QP_OK;
  hid_t dset = -1, space = -1;
  *values = NULL;
  QP_H5_GOTO(dset = H5Dopen2(group, name, H5P_DEFAULT), done, "%s/%s", where, name);
  QP_H5_GOTO(space = H5Dget_space(dset), done, "%s/%s", where, name);
  hssize_t len = H5Sget_simple_extent_npoints(space);
  QP_H5_GOTO(len, done, "%s/%s", where, name);
  QP_CHECK_GOTO(len == n, QP_ERR_INPUT, done, "%s/%s: %lld values, expected %lld", where, name,
                (long long)len, (long long)n);
  *values = calloc(n > 0 ? (size_t)n : 1, elem);
  QP_CHECK_GOTO(*values, QP_ERR_NOMEM, done, "%s/%s: %lld values", where, name, (long long)n);
  if (n > 0)
    QP_H5_GOTO(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *values), done,
               "%s/%s: cannot read", where, name);
done:
  if (err != QP_OK) {
    free(*values);
    *values = NULL;
  }
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  return err;
}

/* One line: how many samples over how long, the final interval, and the largest RSS seen
 * (when and in which stage). */
static qp_err qp_report_print_timeline(hid_t group, const char *where, FILE *out) {
  qp_err err = QP_OK;
  hid_t etype = -1;
  double *t = NULL;
  int64_t *rss = NULL;
  int32_t *stage = NULL;
  qp_report_event *events = NULL;
  hssize_t n = qp_read_i64(group, "n_samples", -1);
  hssize_t n_events = qp_read_i64(group, "n_events", 0);
  QP_CHECK(n >= 0 && n_events >= 0, QP_ERR_INPUT, "%s: no n_samples attribute", where);
  QP_CALL_GOTO(qp_report_read_column(group, where, "t_seconds", H5T_NATIVE_DOUBLE, sizeof *t, n,
                                     (void **)&t),
               done);
  QP_CALL_GOTO(qp_report_read_column(group, where, "rss_bytes", H5T_NATIVE_INT64, sizeof *rss, n,
                                     (void **)&rss),
               done);
  QP_CALL_GOTO(qp_report_read_column(group, where, "stage_index", H5T_NATIVE_INT32, sizeof *stage,
                                     n, (void **)&stage),
               done);
  QP_H5_GOTO(etype = qp_report_event_type(0, 1, 0), done, "%s: events row type", where);
  QP_CALL_GOTO(qp_report_read_column(group, where, "events", etype, sizeof *events, n_events,
                                     (void **)&events),
               done);
  hssize_t at = -1;
  for (hssize_t i = 0; i < n; ++i)
    if (rss[i] >= 0 && (at < 0 || rss[i] > rss[at])) at = i;
  char a[32], in[QP_STAGE_NAME_MAX + 16] = "";
  if (at >= 0 && stage[at] >= 0 && stage[at] < n_events) {
    events[stage[at]].stage[QP_STAGE_NAME_MAX - 1] = '\0';
    snprintf(in, sizeof in, " in %s", events[stage[at]].stage);
  }
  fprintf(out, "  timeline: %lld samples over %.3f s, every %g ms at the end (%g ms asked)",
          (long long)n, n > 0 ? t[n - 1] : 0.0, qp_read_f64(group, "interval_ms", NAN),
          qp_read_f64(group, "initial_interval_ms", NAN));
  if (at >= 0)
    fprintf(out, ", max RSS seen %s at %.3f s%s\n", qp_human(rss[at], a, sizeof a), t[at], in);
  else
    fprintf(out, ", RSS not readable\n");
done:
  free(events);
  free(stage);
  free(rss);
  free(t);
  if (etype >= 0) H5Tclose(etype);
  return err;
}

qp_err qp_report_print(const char *path, FILE *out) {
  qp_err err = QP_OK;
  hid_t file = -1, budget = -1, stage = -1;
  QP_CHECK(path && out, QP_ERR_INTERNAL, "qp_report_print: no path or stream");
  /* HDF5 quiet while the file is read: missing attributes and links are expected (files of
   * older versions), and real failures come back as our messages. */
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  qp_report_malformed[0] = '\0';
  QP_CALL_GOTO(qp_report_open(path, &file, &budget), done);

  char version[64], a[32], b[32];
  qp_read_str(file, "qmlpipe_version", version, sizeof version);
  if (version[0])
    fprintf(out, "qmlpipe memory report: %s (written by qmlpipe %s)\n", path, version);
  else
    fprintf(out, "qmlpipe memory report: %s\n", path);
  fprintf(out, "  overhead (predicted) %s, baseline RSS %s, cgroup v%" PRId64 ", VmHWM reset %s\n",
          qp_human(qp_read_i64(budget, "overhead_predicted_bytes", -1), a, sizeof a),
          qp_human(qp_read_i64(budget, "baseline_rss_bytes", -1), b, sizeof b),
          qp_read_i64(budget, "cgroup_version", 0),
          qp_read_i64(budget, "hwm_reset", 0) ? "yes" : "no");

  /* The BLAS library's part of the overhead and the kernel it was measured for (files from
   * before it was recorded say nothing). */
  if (H5Aexists(budget, "blas_library") > 0) {
    char library[64], kernel[48], how[160];
    qp_read_str(budget, "blas_library", library, sizeof library);
    qp_read_str(budget, "blas_kernel", kernel, sizeof kernel);
    qp_read_str(budget, "blas_footprint", how, sizeof how);
    fprintf(out, "  BLAS buffers (predicted) %s: %s, kernel %s (%s)\n",
            qp_human(qp_read_i64(budget, "blas_buffers_predicted_bytes", -1), a, sizeof a),
            library[0] ? library : "unknown", kernel[0] ? kernel : "unknown",
            how[0] ? how : "not recorded");
  }
  /* The limit the run planned to (files from before it was recorded say nothing). */
  if (H5Aexists(budget, "memory_limit") > 0) {
    char source[1024];
    qp_read_str(budget, "memory_limit_source", source, sizeof source);
    const int64_t limit = qp_read_i64(budget, "memory_limit", -1);
    if (limit > 0)
      fprintf(out, "  memory limit %s (%s)\n", qp_human(limit, a, sizeof a),
              source[0] ? source : "source not recorded");
    else
      fprintf(out, "  memory limit: none\n");
  }
  /* The spectra's numerical quality (/diagnostics, docs/numerical-checks.md): the rounding
   * error the Fisher guard estimated, in error bars, against the accuracy asked for. */
  if (H5Lexists(file, "diagnostics", H5P_DEFAULT) > 0) {
    hid_t diag = H5Gopen2(file, "diagnostics", H5P_DEFAULT);
    if (diag >= 0) {
      const double error = qp_read_f64(diag, "spectra_error", NAN);
      if (isfinite(error))
        fprintf(out, "  spectra: rounding error up to %.2g of the error bars (accuracy %.2g; "
                     "rcond of F equilibrated %.3g)\n",
                error, qp_read_f64(diag, "accuracy", NAN), qp_read_f64(diag, "rcond_fisher", NAN));
      H5Gclose(diag);
    }
  }
  H5Eclear2(H5E_DEFAULT);
  /* A device run's context: what the plan reserved beside what the device meter's baseline
   * measured (files of host runs and of older versions say nothing). */
  if (H5Aexists(budget, "device_context_predicted_bytes") > 0) {
    char source[256];
    qp_read_str(budget, "device_context_source", source, sizeof source);
    const int64_t measured = qp_read_i64(budget, "device_context_measured_bytes", -1);
    fprintf(out, "  device context: predicted %s (%s), measured %s (the device meter's baseline)\n",
            qp_human(qp_read_i64(budget, "device_context_predicted_bytes", -1), a, sizeof a),
            source[0] ? source : "source not recorded",
            measured >= 0 ? qp_human(measured, b, sizeof b) : "- (no device meter)");
  }
  H5Eclear2(H5E_DEFAULT);
  if (H5Lexists(budget, "timeline", H5P_DEFAULT) > 0 &&
      (stage = H5Gopen2(budget, "timeline", H5P_DEFAULT)) >= 0 &&
      qp_report_is_timeline(stage, "timeline")) {
    char where[QP_REPORT_WHERE_MAX + 300];
    snprintf(where, sizeof where, "%s: /budget/timeline", path);
    QP_CALL_GOTO(qp_report_print_timeline(stage, where, out), done);
  }
  H5Eclear2(H5E_DEFAULT);
  if (stage >= 0) H5Gclose(stage);
  stage = -1;

  H5G_info_t info;
  QP_H5_GOTO(H5Gget_info(budget, &info), done, "%s: /budget", path);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256], where[QP_REPORT_WHERE_MAX + 300];
    ssize_t len = H5Lget_name_by_idx(budget, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name,
                                     sizeof name, H5P_DEFAULT);
    if (len < 0) { /* creation order not tracked: fall back to name order */
      H5Eclear2(H5E_DEFAULT);
      len = H5Lget_name_by_idx(budget, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                               H5P_DEFAULT);
    }
    QP_H5_GOTO(len, done, "%s: /budget: link %llu", path, (unsigned long long)i);
    stage = H5Gopen2(budget, name, H5P_DEFAULT);
    if (stage < 0) { /* not a group: nothing of ours */
      H5Eclear2(H5E_DEFAULT);
      continue;
    }
    if (qp_report_is_timeline(stage, name)) { /* printed above */
      H5Gclose(stage);
      stage = -1;
      continue;
    }
    snprintf(where, sizeof where, "%s: /budget/%s", path, name);
    QP_CALL_GOTO(qp_report_print_stage(stage, where, name, out), done);
    H5Gclose(stage);
    stage = -1;
  }
  QP_CHECK_GOTO(!qp_report_malformed[0], QP_ERR_INPUT, done, "%s (in '%s')", qp_report_malformed,
                path);
done:
  if (stage >= 0) H5Gclose(stage);
  if (budget >= 0) H5Gclose(budget);
  if (file >= 0) H5Fclose(file);
  qp_h5_quiet_end(&quiet);
  return err;
}
