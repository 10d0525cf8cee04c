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
#include "h5_attr.h"
#include "h5_error.h"
#include "timeline.h"

enum {
  QP_REPORT_KIND_LEN = 16, /* fixed-length strings of the terms dataset */
  QP_REPORT_SPACE_LEN = 16,
  QP_REPORT_EVENT_KIND_LEN = 8,          /* "push" / "pop" in /budget/timeline/events */
  QP_REPORT_ROWS_MAX = 2 * QP_TERMS_MAX, /* predicted terms plus tracked terms, at most */
  QP_REPORT_WHERE_MAX = 1024
};

/* One row of /budget/<stage>/terms. */
typedef struct qp_report_row {
  char name[QP_TERM_NAME_MAX];
  char kind[QP_REPORT_KIND_LEN];
  char space[QP_REPORT_SPACE_LEN];
  int64_t predicted_bytes;
  int64_t tracked_peak_bytes;
  int64_t tracked_start_bytes;
  int64_t tracked_end_bytes;
} qp_report_row;

/* ---- writing ---- */

/* The compound type of a terms row (used in memory and in the file). */
static hid_t qp_report_row_type(void) {
  hid_t row = -1, name = -1, kind = -1, space = -1;
  int ok = 0;
  if ((row = H5Tcreate(H5T_COMPOUND, sizeof(qp_report_row))) < 0) goto done;
  if ((name = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(name, QP_TERM_NAME_MAX) < 0) goto done;
  if ((kind = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(kind, QP_REPORT_KIND_LEN) < 0) goto done;
  if ((space = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(space, QP_REPORT_SPACE_LEN) < 0) goto done;
  if (H5Tinsert(row, "name", HOFFSET(qp_report_row, name), name) < 0 ||
      H5Tinsert(row, "kind", HOFFSET(qp_report_row, kind), kind) < 0 ||
      H5Tinsert(row, "space", HOFFSET(qp_report_row, space), space) < 0 ||
      H5Tinsert(row, "predicted_bytes", HOFFSET(qp_report_row, predicted_bytes),
                H5T_NATIVE_INT64) < 0 ||
      H5Tinsert(row, "tracked_peak_bytes", HOFFSET(qp_report_row, tracked_peak_bytes),
                H5T_NATIVE_INT64) < 0 ||
      H5Tinsert(row, "tracked_start_bytes", HOFFSET(qp_report_row, tracked_start_bytes),
                H5T_NATIVE_INT64) < 0 ||
      H5Tinsert(row, "tracked_end_bytes", HOFFSET(qp_report_row, tracked_end_bytes),
                H5T_NATIVE_INT64) < 0)
    goto done;
  ok = 1;
done:
  if (name >= 0) H5Tclose(name);
  if (kind >= 0) H5Tclose(kind);
  if (space >= 0) H5Tclose(space);
  if (!ok && row >= 0) {
    H5Tclose(row);
    row = -1;
  }
  return row;
}

static qp_err qp_report_attr(hid_t obj, const char *where, const char *name, hid_t type,
                             const void *value) {
  return qp_h5_attr_write(obj, where, name, type, value);
}

static qp_err qp_report_attr_i64(hid_t obj, const char *where, const char *name, int64_t v) {
  return qp_h5_attr_write_i64(obj, where, name, v);
}

static qp_err qp_report_attr_f64(hid_t obj, const char *where, const char *name, double v) {
  QP_CALL(qp_report_attr(obj, where, name, H5T_NATIVE_DOUBLE, &v));
  return QP_OK;
}

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
static int qp_report_rows(const qp_model *model, const qp_stage_record *r, int known,
                          int id, qp_report_row *rows, int *drift) {
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
      if (strcmp(rows[k].name, st->name) == 0 && strcmp(rows[k].space, space) == 0)
        row = &rows[k];
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
  QP_H5_GOTO(dset = H5Dcreate2(group, "terms", type, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT),
             done, "%s: cannot create dataset 'terms'", where);
  if (n > 0)
    QP_H5_GOTO(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), done,
               "%s: cannot write dataset 'terms'", where);
done:
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return err;
}

/* A group name for the stage: its name, with '/' replaced, made unique by a suffix when the
 * same stage was recorded more than once. */
static qp_err qp_report_group_name(hid_t budget, const char *where, const char *stage,
                                   char *name, size_t size) {
  char base[QP_STAGE_NAME_MAX];
  snprintf(base, sizeof base, "%s", stage[0] ? stage : "stage");
  for (char *c = base; *c; ++c)
    if (*c == '/' || (*c == '.' && c == base)) *c = '_';
  snprintf(name, size, "%s", base);
  for (int k = 2;; ++k) {
    htri_t exists = H5Lexists(budget, name, H5P_DEFAULT);
    if (exists < 0)
      QP_H5_FAIL(QP_ERR_IO, "%s: /budget/%s", where, name);
    if (exists == 0) return QP_OK;
    snprintf(name, size, "%s_%d", base, k);
  }
}

static qp_err qp_report_stage(hid_t budget, const char *where, int index,
                              const qp_stage_record *r, const qp_model *model) {
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
  size_t persistent = known ? qp_model_stage_persistent(model, id) : 0;
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
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i)
    QP_CALL_GOTO(qp_report_attr_i64(group, gwhere, ints[i].name, ints[i].value), done);
  QP_CALL_GOTO(qp_h5_attr_write_string(group, gwhere, "stage", r->name), done);
  QP_CALL_GOTO(qp_report_attr_f64(group, gwhere, "seconds", r->seconds), done);
  QP_CALL_GOTO(qp_report_attr_f64(group, gwhere, "flops", r->flops), done);
  QP_CALL_GOTO(qp_report_attr_f64(group, gwhere, "gflops_per_s",
                                  r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0.0),
               done);
  QP_CALL_GOTO(qp_report_attr_f64(group, gwhere, "ratio_peak_rise", ratio), done);
  QP_CALL_GOTO(qp_report_terms(group, gwhere, rows, n), done);
done:
  free(rows);
  if (group >= 0) H5Gclose(group);
  return err;
}

/* ---- the timeline: /budget/timeline ---- */

/* One row of /budget/timeline/events. */
typedef struct qp_report_event {
  double t_seconds;
  char stage[QP_STAGE_NAME_MAX];
  char kind[QP_REPORT_EVENT_KIND_LEN];
} qp_report_event;

/* The compound type of an events row; fields by name, so a reader may pick some. */
static hid_t qp_report_event_type(int with_t, int with_stage, int with_kind) {
  hid_t row = -1, stage = -1, kind = -1;
  int ok = 0;
  if ((row = H5Tcreate(H5T_COMPOUND, sizeof(qp_report_event))) < 0) goto done;
  if ((stage = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(stage, QP_STAGE_NAME_MAX) < 0) goto done;
  if ((kind = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(kind, QP_REPORT_EVENT_KIND_LEN) < 0) goto done;
  if ((with_t &&
       H5Tinsert(row, "t_seconds", HOFFSET(qp_report_event, t_seconds), H5T_NATIVE_DOUBLE) < 0) ||
      (with_stage && H5Tinsert(row, "stage", HOFFSET(qp_report_event, stage), stage) < 0) ||
      (with_kind && H5Tinsert(row, "kind", HOFFSET(qp_report_event, kind), kind) < 0))
    goto done;
  ok = 1;
done:
  if (stage >= 0) H5Tclose(stage);
  if (kind >= 0) H5Tclose(kind);
  if (!ok && row >= 0) {
    H5Tclose(row);
    row = -1;
  }
  return row;
}

/* A 1-D dataset of n values of `type` (n may be 0). */
static qp_err qp_report_column(hid_t group, const char *where, const char *name, hid_t type,
                               hsize_t n, const void *values) {
  qp_err err = QP_OK;
  hid_t space = -1, dset = -1;
  hsize_t dims[1] = {n};
  QP_H5_GOTO(space = H5Screate_simple(1, dims, NULL), done, "%s: dataspace of '%s'", where, name);
  QP_H5_GOTO(dset = H5Dcreate2(group, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             done, "%s: cannot create dataset '%s'", where, name);
  if (n > 0)
    QP_H5_GOTO(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), done,
               "%s: cannot write dataset '%s'", where, name);
done:
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  return err;
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

  QP_CALL_GOTO(qp_report_attr_f64(group, where, "interval_ms", tl.interval_ms), done);
  QP_CALL_GOTO(qp_report_attr_f64(group, where, "initial_interval_ms", tl.initial_interval_ms),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(group, where, "n_samples", tl.n_samples), done);
  QP_CALL_GOTO(qp_report_attr_i64(group, where, "capacity", tl.capacity), done);
  QP_CALL_GOTO(qp_report_attr_i64(group, where, "n_events", tl.n_events), done);
  QP_CALL_GOTO(qp_report_attr_i64(group, where, "n_events_dropped", tl.n_events_dropped), done);
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
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  if (H5Fget_name(file, where, sizeof where) < 0) {
    H5Eclear2(H5E_DEFAULT);
    snprintf(where, sizeof where, "%s", "(HDF5 file)");
  }
  /* Creation order is tracked so that readers list the stages in the order they ran. */
  QP_H5_GOTO(gcpl = H5Pcreate(H5P_GROUP_CREATE), done, "%s: /budget", where);
  QP_H5_GOTO(H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
             done, "%s: /budget", where);
  QP_H5_GOTO(budget = H5Gcreate2(file, "budget", H5P_DEFAULT, gcpl, H5P_DEFAULT), done,
             "%s: cannot create group /budget", where);

  int n_stages = qp_stage_record_count();
  int hwm_reset = n_stages > 0 ? 1 : (baseline ? baseline->hwm_reset : 0);
  for (int i = 0; i < n_stages; ++i)
    if (!qp_stage_record_get(i)->meter_start.hwm_reset) hwm_reset = 0;
  char bwhere[QP_REPORT_WHERE_MAX + 16];
  snprintf(bwhere, sizeof bwhere, "%s: /budget", where);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "overhead_predicted_bytes",
                                  model ? qp_i64(model->overhead_bytes) : 0),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "predicted_lifetime_peak_bytes",
                                  model ? qp_i64(qp_model_peak(model)) : 0),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "baseline_rss_bytes",
                                  baseline ? baseline->rss : -1),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "baseline_rss_shared_bytes",
                                  baseline ? baseline->rss_shared : -1),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "baseline_cgroup_bytes",
                                  baseline ? baseline->cgroup_current : -1),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "cgroup_version", qp_meter_cgroup_version()),
               done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "hwm_reset", hwm_reset), done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "n_stages", n_stages), done);
  QP_CALL_GOTO(qp_report_attr_i64(budget, bwhere, "host_tracked_peak_bytes",
                                  qp_i64(qp_budget_peak(QP_SPACE_HOST))),
               done);
  /* The timeline first: a stage that happens to be named "timeline" becomes timeline_2. */
  QP_CALL_GOTO(qp_report_timeline(budget, bwhere), done);
  for (int i = 0; i < n_stages; ++i)
    QP_CALL_GOTO(qp_report_stage(budget, where, i, qp_stage_record_get(i), model), done);
done:
  if (budget >= 0) H5Gclose(budget);
  if (gcpl >= 0) H5Pclose(gcpl);
  return err;
}

qp_err qp_report_write_limit(hid_t file, double bytes, const char *source) {
  qp_err err = QP_OK;
  hid_t budget = -1;
  QP_H5_GOTO(budget = H5Gopen2(file, "budget", H5P_DEFAULT), done, "cannot open /budget");
  QP_CALL_GOTO(qp_report_attr_i64(budget, "/budget", "memory_limit",
                                  bytes > 0 && bytes < 9.2e18 ? (int64_t)bytes : 0),
               done);
  QP_CALL_GOTO(qp_h5_attr_write_string(budget, "/budget", "memory_limit_source",
                                  source && source[0] ? source : "none"),
               done);
done:
  if (budget >= 0) H5Gclose(budget);
  return err;
}

/* ---- reading and printing ---- */

/* An attribute as int64 (or double); `fallback` when the attribute is missing or unreadable:
 * the report prints what the file holds and "n/a" for the rest. */
static int64_t qp_read_i64(hid_t obj, const char *name, int64_t fallback) {
  int64_t v = fallback;
  if (H5Aexists(obj, name) > 0) {
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0 || H5Aread(a, H5T_NATIVE_INT64, &v) < 0) v = fallback;
    if (a >= 0) H5Aclose(a);
  }
  H5Eclear2(H5E_DEFAULT);
  return v;
}

static double qp_read_f64(hid_t obj, const char *name, double fallback) {
  double v = fallback;
  if (H5Aexists(obj, name) > 0) {
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) v = fallback;
    if (a >= 0) H5Aclose(a);
  }
  H5Eclear2(H5E_DEFAULT);
  return v;
}

/* A scalar string attribute into buf; "" when missing or unreadable (the report prints what
 * the file holds). */
static void qp_read_str(hid_t obj, const char *name, char *buf, size_t size) {
  if (qp_h5_attr_string(obj, "report", name, buf, size) != QP_OK) {
    buf[0] = '\0';
    qp_error_clear();
  }
  H5Eclear2(H5E_DEFAULT);
}

/* Bytes in MiB (below 1 GiB) or GiB with three decimals; "n/a" for unknown (negative). */
static const char *qp_human(int64_t bytes, char *buf, size_t size) {
  if (bytes < 0) snprintf(buf, size, "n/a");
  else if (bytes >= ((int64_t)1 << 30)) snprintf(buf, size, "%.3f GiB", (double)bytes / 1073741824.0);
  else snprintf(buf, size, "%.3f MiB", (double)bytes / 1048576.0);
  return buf;
}

static const char *qp_ratio(double r, char *buf, size_t size) {
  if (isfinite(r)) snprintf(buf, size, "%.3f", r);
  else snprintf(buf, size, "n/a");
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
      mark = r->predicted_bytes == 0   ? "  <-- DRIFT (not in model)"
             : r->tracked_peak_bytes == 0 ? "  <-- DRIFT (not tracked)"
                                          : "  <-- DRIFT";
    fprintf(out, "  %-20s %-10s %-6s %20" PRId64 " %13s %20" PRId64 " %13s%s\n", r->name,
            r->kind, r->space, r->predicted_bytes, qp_human(r->predicted_bytes, a, sizeof a),
            r->tracked_peak_bytes, qp_human(r->tracked_peak_bytes, b, sizeof b), mark);
  }
done:
  free(rows);
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  return err;
}

static qp_err qp_report_print_stage(hid_t stage, const char *where, const char *name,
                                    FILE *out) {
  char a[32], b[32], c[32];
  char label[256];
  qp_read_str(stage, "stage", label, sizeof label);
  if (!label[0]) snprintf(label, sizeof label, "%s", name);
  double seconds = qp_read_f64(stage, "seconds", NAN);
  double gflops = qp_read_f64(stage, "gflops_per_s", NAN);
  fprintf(out, "\nstage %s: %.3f s, %.3f GFLOP/s\n", label, seconds, gflops);
  if (!qp_read_i64(stage, "model_has_stage", 1))
    fprintf(out, "  (the model predicts nothing for this stage)\n");
  fprintf(out, "  %-28s %14s %14s %10s\n", "", "predicted", "measured", "ratio");

  int64_t pr_rise = qp_read_i64(stage, "predicted_peak_rise_bytes", -1);
  int64_t rss_start = qp_read_i64(stage, "rss_start_bytes", -1);
  int64_t rss_peak = qp_read_i64(stage, "rss_peak_bytes", -1);
  int64_t rss_end = qp_read_i64(stage, "rss_end_bytes", -1);
  int64_t me_rise = (rss_start >= 0 && rss_peak >= 0)
                        ? qp_read_i64(stage, "measured_peak_rise_bytes", -1)
                        : -1;
  double ratio = me_rise > 0 ? (double)pr_rise / (double)me_rise : NAN;
  fprintf(out, "  %-28s %14s %14s %10s\n", "peak rise (RSS)", qp_human(pr_rise, a, sizeof a),
          qp_human(me_rise, b, sizeof b), qp_ratio(ratio, c, sizeof c));

  int64_t pr_peak = qp_read_i64(stage, "predicted_peak_bytes", -1);
  int64_t tr_peak = qp_read_i64(stage, "tracked_peak_bytes", -1);
  if (pr_peak == tr_peak) snprintf(c, sizeof c, "EXACT");
  else snprintf(c, sizeof c, "DRIFT (%+" PRId64 " B)", tr_peak - pr_peak);
  fprintf(out, "  %-28s %14s %14s %10s\n", "tracked peak", qp_human(pr_peak, a, sizeof a),
          qp_human(tr_peak, b, sizeof b), c);

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
  if (drift >= 0) fprintf(out, "  terms differing between model and allocator: %" PRId64 "\n", drift);
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
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  QP_CALL(qp_h5_open_budget(path, &file, &budget));

  char version[64], a[32], b[32];
  qp_read_str(file, "qmlpipe_version", version, sizeof version);
  if (version[0]) fprintf(out, "qmlpipe memory report: %s (written by qmlpipe %s)\n", path, version);
  else fprintf(out, "qmlpipe memory report: %s\n", path);
  fprintf(out, "  overhead (predicted) %s, baseline RSS %s, cgroup v%" PRId64 ", VmHWM reset %s\n",
          qp_human(qp_read_i64(budget, "overhead_predicted_bytes", -1), a, sizeof a),
          qp_human(qp_read_i64(budget, "baseline_rss_bytes", -1), b, sizeof b),
          qp_read_i64(budget, "cgroup_version", 0),
          qp_read_i64(budget, "hwm_reset", 0) ? "yes" : "no");

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
done:
  if (stage >= 0) H5Gclose(stage);
  if (budget >= 0) H5Gclose(budget);
  if (file >= 0) H5Fclose(file);
  return err;
}
