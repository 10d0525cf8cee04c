/* report_h5.c: the /budget group of a results file (report_h5.h): written from the stage
 * records of budget.h beside the model's prediction, and printed back as a table.
 *
 * Per stage, the "terms" dataset has one row per term that the model predicts alive in the
 * stage or that the allocator tracked in it; a term missing on one side has 0 bytes there, so
 * that any drift between model and code shows as a row whose two columns differ. */
#include "report_h5.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "fault.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "report_layout.h"
#include "timeline.h"

/* ---- writing ---- */

/* The model's index of the stage named `name`; 0 when the model has no such stage. */
static int qp_report_stage_id(const qp_model *model, const char *name, int *id) {
  for (int s = 0; s < model->n_stages; ++s) {
    if (strcmp(qp_model_stage_name(model, s), name) == 0) {
      *id = s;
      return 1;
    }
  }
  return 0;
}

static int64_t qp_i64(size_t v) { return v > (size_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

/* The rows of one stage: predicted terms alive in it, then tracked terms the model lacks.
 * Returns the number of rows; *drift counts rows whose predicted and tracked peak differ. */
static int qp_report_rows(const qp_model *model, const qp_stage_record *r, int known, int id,
                          qp_report_row *rows, int *drift) {
  int n = 0;
  if (model && known) {
    for (int i = 0; i < model->n_terms && n < QP_REPORT_ROWS_MAX; ++i) {
      const qp_model_term *t = &model->terms[i];
      if (!qp_model_term_alive(t, id)) continue;
      qp_report_row *row = &rows[n++];
      memset(row, 0, sizeof *row);
      snprintf(row->name, sizeof row->name, "%s", t->name);
      snprintf(row->kind, sizeof row->kind, "%s", qp_term_kind_name(t->kind));
      snprintf(row->space, sizeof row->space, "%s", qp_space_name(t->space));
      row->predicted_bytes = qp_i64(t->bytes);
    }
  }
  for (int i = 0; i < r->n_terms; ++i) {
    const qp_stage_term *st = &r->terms[i];
    const char *space = qp_space_name(st->space);
    qp_report_row *row = NULL;
    for (int k = 0; k < n && !row; ++k)
      if (strcmp(rows[k].name, st->name) == 0 && strcmp(rows[k].space, space) == 0) row = &rows[k];
    if (!row) {
      if (n >= QP_REPORT_ROWS_MAX) break;
      row = &rows[n++];
      memset(row, 0, sizeof *row);
      snprintf(row->name, sizeof row->name, "%s", st->name);
      snprintf(row->kind, sizeof row->kind, "%s", qp_term_kind_name(st->kind));
      snprintf(row->space, sizeof row->space, "%s", space);
    }
    row->tracked_peak_bytes = qp_i64(st->peak);
    row->tracked_start_bytes = qp_i64(st->at_start);
    row->tracked_end_bytes = qp_i64(st->at_end);
  }
  *drift = 0;
  for (int k = 0; k < n; ++k)
    if (rows[k].predicted_bytes != rows[k].tracked_peak_bytes) ++*drift;
  return n;
}

static qp_err qp_report_terms(hid_t group, const char *where, const qp_report_row *rows, int n) {
  qp_err err = QP_OK;
  hid_t type = -1, space = -1, dset = -1;
  hsize_t dims[1] = {(hsize_t)n};
  QP_H5_GOTO(type = qp_report_row_type(), done, "%s: terms row type", where);
  QP_H5_GOTO(space = H5Screate_simple(1, dims, NULL), done, "%s: terms dataspace", where);
  QP_H5_GOTO(dset = H5Dcreate2(group, "terms", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             done, "%s: cannot create dataset 'terms'", where);
  if (n > 0)
    QP_H5_GOTO(
        QP_FAULT_H5("report_write", H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows)),
        done, "%s: cannot write dataset 'terms'", where);
done:
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return err;
}

/* A group name for the stage: its name, with '/' replaced, made unique by a suffix when the
 * same stage was recorded more than once. */
static qp_err qp_report_group_name(hid_t budget, const char *where, const char *stage, char *name,
                                   size_t size) {
  char base[QP_STAGE_NAME_MAX];
  snprintf(base, sizeof base, "%s", stage[0] ? stage : "stage");
  for (char *c = base; *c; ++c)
    if (*c == '/' || (*c == '.' && c == base)) *c = '_';
  snprintf(name, size, "%s", base);
  for (int k = 2;; ++k) {
    htri_t exists = H5Lexists(budget, name, H5P_DEFAULT);
    if (exists < 0) QP_H5_FAIL(QP_ERR_IO, "%s: /budget/%s", where, name);
    if (exists == 0) return QP_OK;
    snprintf(name, size, "%s_%d", base, k);
  }
}

static qp_err qp_report_stage(hid_t budget, const char *where, int index, const qp_stage_record *r,
                              const qp_model *model) {
  qp_err err = QP_OK;
  hid_t group = -1;
  char gname[QP_STAGE_NAME_MAX + 16], gwhere[QP_REPORT_WHERE_MAX + 64];
  qp_report_row *rows = NULL;
  QP_CALL(qp_report_group_name(budget, where, r->name, gname, sizeof gname));
  snprintf(gwhere, sizeof gwhere, "%s: /budget/%s", where, gname);
  QP_H5_GOTO(group = H5Gcreate2(budget, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), done,
             "%s: cannot create group", gwhere);

  int id = 0;
  int known = model && qp_report_stage_id(model, r->name, &id);
  size_t carried = known ? qp_model_stage_carried(model, id) : 0;
  size_t peak = known ? qp_model_stage_peak(model, id) : 0;
  /* What stays on the host (compared with RSS by `validate`), and what a checkpoint saves
   * of both spaces. */
  size_t persistent = known ? qp_model_stage_persistent(model, id) : 0;
  size_t checkpoint = !known ? 0
                      : model->checkpoint_saves
                          ? qp_model_stage_persistent_if(model, id, model->checkpoint_saves)
                          : persistent;
  size_t overhead = model ? model->overhead_bytes : 0;

  const qp_meter_sample *m0 = &r->meter_start, *m1 = &r->meter_end;
  int64_t rss_peak = m1->hwm;
  int64_t measured_rise = (m0->rss >= 0 && rss_peak >= 0) ? rss_peak - m0->rss : -1;
  int64_t predicted_rise = qp_i64(peak) - qp_i64(carried);
  double ratio = measured_rise > 0 ? (double)predicted_rise / (double)measured_rise : NAN;

  rows = malloc(sizeof *rows * QP_REPORT_ROWS_MAX);
  QP_CHECK_GOTO(rows, QP_ERR_NOMEM, done, "%s: no memory for the terms table", gwhere);
  int drift = 0;
  int n = qp_report_rows(model, r, known, id, rows, &drift);

  const struct {
    const char *name;
    int64_t value;
  } ints[] = {
      {"index", index},
      {"model_has_stage", known},
      {"tracked_start_bytes", qp_i64(r->tracked_at_start)},
      {"tracked_peak_bytes", qp_i64(r->tracked_peak)},
      {"tracked_end_bytes", qp_i64(r->tracked_at_end)},
      {"device_tracked_start_bytes", qp_i64(r->device_tracked_at_start)},
      {"device_tracked_peak_bytes", qp_i64(r->device_tracked_peak)},
      {"device_tracked_end_bytes", qp_i64(r->device_tracked_at_end)},
      {"predicted_device_peak_bytes",
       known ? qp_i64(qp_model_stage_peak_in(model, id, QP_SPACE_DEVICE)) : 0},
      {"predicted_device_persistent_bytes",
       known ? qp_i64(qp_model_stage_persistent_in(model, id, QP_SPACE_DEVICE)) : 0},
      {"predicted_peak_both_spaces_bytes", known ? qp_i64(qp_model_stage_peak_both(model, id)) : 0},
      {"device_meter_start_bytes", m0->device_used},
      {"device_meter_end_bytes", m1->device_used},
      {"predicted_carried_bytes", qp_i64(carried)},
      {"predicted_peak_bytes", qp_i64(peak)},
      {"predicted_persistent_bytes", qp_i64(persistent)},
      {"predicted_library_bytes", known ? qp_i64(qp_model_stage_library(model, id)) : 0},
      {"predicted_peak_absolute_bytes", qp_i64(overhead) + qp_i64(peak)},
      {"predicted_peak_rise_bytes", predicted_rise},
      {"rss_start_bytes", m0->rss},
      {"rss_end_bytes", m1->rss},
      {"rss_peak_bytes", rss_peak},
      {"measured_peak_rise_bytes", measured_rise},
      {"cgroup_start_bytes", m0->cgroup_current},
      {"cgroup_end_bytes", m1->cgroup_current},
      {"cgroup_peak_bytes", m1->cgroup_peak},
      {"hwm_reset", m0->hwm_reset},
      {"cgroup_peak_reset", m0->cgroup_peak_reset},
      {"n_terms", n},
      {"drift_terms", drift},
      {"resumed", r->resumed},
      /* A checkpoint after a stage (pipeline/checkpoint.h) holds the state alive past it, on
       * the host and on a device; the last stage writes the results instead. */
      {"predicted_checkpoint_bytes", known && id != model->n_stages - 1 ? qp_i64(checkpoint) : 0},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i)
    QP_CALL_GOTO(qp_h5_attr_write_i64(group, gwhere, ints[i].name, ints[i].value), done);
  QP_CALL_GOTO(qp_h5_attr_write_string(group, gwhere, "stage", r->name), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(group, gwhere, "seconds", r->seconds), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(group, gwhere, "flops", r->flops), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(group, gwhere, "gflops_per_s",
                                  r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0.0),
               done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(group, gwhere, "ratio_peak_rise", ratio), done);
  QP_CALL_GOTO(qp_report_terms(group, gwhere, rows, n), done);
done:
  free(rows);
  if (group >= 0) H5Gclose(group);
  return err;
}

/* ---- the timeline: /budget/timeline ---- */

/* A 1-D dataset of n values of `type` (n may be 0). */
static qp_err qp_report_column(hid_t group, const char *where, const char *name, hid_t type,
                               hsize_t n, const void *values) {
  QP_CALL(qp_h5_write_array(group, where, name, type, n, values, NULL));
  return QP_OK;
}

/* /budget/timeline from the stopped sampler (timeline.h); nothing when it holds no samples. */
static qp_err qp_report_timeline(hid_t budget, const char *bwhere) {
  qp_err err = QP_OK;
  hid_t group = -1, etype = -1;
  qp_report_event *rows = NULL;
  qp_timeline_data tl;
  QP_CALL(qp_timeline_get(&tl));
  if (tl.n_samples == 0) return QP_OK;
  char where[QP_REPORT_WHERE_MAX + 64];
  snprintf(where, sizeof where, "%s/timeline", bwhere);
  QP_H5_GOTO(group = H5Gcreate2(budget, "timeline", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), done,
             "%s: cannot create group", where);
  const hsize_t n = (hsize_t)tl.n_samples;
  QP_CALL_GOTO(qp_report_column(group, where, "t_seconds", H5T_NATIVE_DOUBLE, n, tl.t_seconds),
               done);
  QP_CALL_GOTO(qp_report_column(group, where, "rss_bytes", H5T_NATIVE_INT64, n, tl.rss_bytes),
               done);
  QP_CALL_GOTO(qp_report_column(group, where, "cgroup_bytes", H5T_NATIVE_INT64, n, tl.cgroup_bytes),
               done);
  QP_CALL_GOTO(
      qp_report_column(group, where, "tracked_bytes", H5T_NATIVE_INT64, n, tl.tracked_bytes), done);
  QP_CALL_GOTO(qp_report_column(group, where, "stage_index", H5T_NATIVE_INT32, n, tl.stage_index),
               done);

  if (tl.n_events > 0) {
    rows = calloc((size_t)tl.n_events, sizeof *rows);
    QP_CHECK_GOTO(rows, QP_ERR_NOMEM, done, "%s: no memory for %d events", where, tl.n_events);
  }
  for (int i = 0; i < tl.n_events; ++i) {
    rows[i].t_seconds = tl.events[i].t_seconds;
    memcpy(rows[i].stage, tl.events[i].stage, sizeof rows[i].stage); /* same size */
    snprintf(rows[i].kind, sizeof rows[i].kind, "%s",
             tl.events[i].kind == QP_TIMELINE_PUSH ? "push" : "pop");
  }
  QP_H5_GOTO(etype = qp_report_event_type(1, 1, 1), done, "%s: events row type", where);
  QP_CALL_GOTO(qp_report_column(group, where, "events", etype, (hsize_t)tl.n_events, rows), done);

  QP_CALL_GOTO(qp_h5_attr_write_f64(group, where, "interval_ms", tl.interval_ms), done);
  QP_CALL_GOTO(qp_h5_attr_write_f64(group, where, "initial_interval_ms", tl.initial_interval_ms),
               done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, where, "n_samples", tl.n_samples), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, where, "capacity", tl.capacity), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, where, "n_events", tl.n_events), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, where, "n_events_dropped", tl.n_events_dropped), done);
done:
  free(rows);
  if (etype >= 0) H5Tclose(etype);
  if (group >= 0) H5Gclose(group);
  return err;
}

qp_err qp_report_write(hid_t file, const qp_model *model, const qp_meter_sample *baseline) {
  qp_err err = QP_OK;
  hid_t gcpl = -1, budget = -1;
  char where[QP_REPORT_WHERE_MAX];
  /* HDF5 quiet while /budget is written: a failure (a full image, an injected fault) comes
   * back as one message naming the object. */
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  if (H5Fget_name(file, where, sizeof where) < 0) {
    H5Eclear2(H5E_DEFAULT);
    snprintf(where, sizeof where, "%s", "(HDF5 file)");
  }
  /* Creation order is tracked so that readers list the stages in the order they ran. */
  QP_H5_GOTO(gcpl = H5Pcreate(H5P_GROUP_CREATE), done, "%s: /budget", where);
  QP_H5_GOTO(H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), done,
             "%s: /budget", where);
  QP_H5_GOTO(budget = H5Gcreate2(file, "budget", H5P_DEFAULT, gcpl, H5P_DEFAULT), done,
             "%s: cannot create group /budget", where);

  int n_stages = qp_stage_record_count();
  int hwm_reset = n_stages > 0 ? 1 : (baseline ? baseline->hwm_reset : 0);
  for (int i = 0; i < n_stages; ++i)
    if (!qp_stage_record_get(i)->meter_start.hwm_reset) hwm_reset = 0;
  char bwhere[QP_REPORT_WHERE_MAX + 16];
  snprintf(bwhere, sizeof bwhere, "%s: /budget", where);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "overhead_predicted_bytes",
                                    model ? qp_i64(model->overhead_bytes) : 0),
               done);
  /* The BLAS part of the overhead and the kernel it was measured for (docs/output.md). */
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "blas_buffers_predicted_bytes",
                                    model ? qp_i64(model->overhead_parts[1]) : 0),
               done);
  QP_CALL_GOTO(
      qp_h5_attr_write_string(budget, bwhere, "blas_library", model ? model->blas_library : ""),
      done);
  QP_CALL_GOTO(
      qp_h5_attr_write_string(budget, bwhere, "blas_kernel", model ? model->blas_kernel : ""),
      done);
  QP_CALL_GOTO(
      qp_h5_attr_write_string(budget, bwhere, "blas_footprint", model ? model->blas_how : ""),
      done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "predicted_lifetime_peak_bytes",
                                    model ? qp_i64(qp_model_peak(model)) : 0),
               done);
  QP_CALL_GOTO(
      qp_h5_attr_write_i64(budget, bwhere, "baseline_rss_bytes", baseline ? baseline->rss : -1),
      done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "baseline_rss_shared_bytes",
                                    baseline ? baseline->rss_shared : -1),
               done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "baseline_cgroup_bytes",
                                    baseline ? baseline->cgroup_current : -1),
               done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "cgroup_version", qp_meter_cgroup_version()),
               done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "hwm_reset", hwm_reset), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "n_stages", n_stages), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(budget, bwhere, "host_tracked_peak_bytes",
                                    qp_i64(qp_budget_peak(QP_SPACE_HOST))),
               done);
  /* The timeline first: a stage that happens to be named "timeline" becomes timeline_2. */
  QP_CALL_GOTO(qp_report_timeline(budget, bwhere), done);
  for (int i = 0; i < n_stages; ++i)
    QP_CALL_GOTO(qp_report_stage(budget, where, i, qp_stage_record_get(i), model), done);
done:
  if (budget >= 0) H5Gclose(budget);
  if (gcpl >= 0) H5Pclose(gcpl);
  qp_h5_quiet_end(&quiet);
  return err;
}

/* Bytes as an int64 attribute: 0 for none (or beyond int64). */
static int64_t qp_report_bytes(double bytes) {
  return bytes > 0 && bytes < 9.2e18 ? (int64_t)bytes : 0;
}

/* Attributes of /budget (written first by qp_report_write): n int64 ones, then a string. */
static qp_err qp_report_budget_attrs(hid_t file, int n, const char *const *names,
                                     const int64_t *values, const char *text_name,
                                     const char *text) {
  qp_err err = QP_OK;
  hid_t budget = -1;
  QP_H5_GOTO(budget = H5Gopen2(file, "budget", H5P_DEFAULT), done, "cannot open /budget");
  for (int i = 0; i < n; ++i)
    QP_CALL_GOTO(qp_h5_attr_write_i64(budget, "/budget", names[i], values[i]), done);
  QP_CALL_GOTO(qp_h5_attr_write_string(budget, "/budget", text_name, text), done);
done:
  if (budget >= 0) H5Gclose(budget);
  return err;
}

qp_err qp_report_write_limit(hid_t file, double bytes, const char *source) {
  const char *const names[] = {"memory_limit"};
  const int64_t values[] = {qp_report_bytes(bytes)};
  return qp_report_budget_attrs(file, 1, names, values, "memory_limit_source",
                                source && source[0] ? source : "none");
}

qp_err qp_report_write_device_context(hid_t file, double predicted, int64_t measured,
                                      const char *source) {
  const char *const names[] = {"device_context_predicted_bytes", "device_context_measured_bytes"};
  const int64_t values[] = {qp_report_bytes(predicted), measured};
  return qp_report_budget_attrs(file, 2, names, values, "device_context_source", source);
}
