/* validate_read.c: `qmlpipe validate` reading results files (validate_set.h). */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "h5_attr.h"
#include "report_open.h"
#include "h5_error.h"
#include "validate_set.h"

/* The subset of a /budget/<stage>/terms row that validation reads (HDF5 converts compound
 * types member by member, by name). */
typedef struct qp_val_row {
  char name[QP_TERM_NAME_MAX];
  int64_t predicted_bytes;
  int64_t tracked_peak_bytes;
} qp_val_row;

static qp_err qp_val_grow(void **items, int *cap, int need, size_t size, const char *what) {
  if (need <= *cap) return QP_OK;
  int cap2 = *cap ? 2 * *cap : 16;
  while (cap2 < need)
    cap2 *= 2;
  void *p = realloc(*items, (size_t)cap2 * size);
  QP_CHECK(p, QP_ERR_NOMEM, "no memory for %d %s", cap2, what);
  *items = p;
  *cap = cap2;
  return QP_OK;
}

/* Reads the terms dataset of a stage: counts the rows and records each drifting term. */
static qp_err qp_val_read_terms(hid_t group, const char *where, qp_val_set *set, int stage) {
  qp_err err = QP_OK;
  hid_t dset = -1, space = -1, mtype = -1, str = -1;
  qp_val_row *rows = NULL;
  qp_val_stage *s = &set->stages[stage];
  htri_t has = H5Lexists(group, "terms", H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s/terms", where);
  QP_CHECK_GOTO(has > 0, QP_ERR_INPUT, done, "%s: no dataset 'terms' (not a qmlpipe results file?)",
                where);
  QP_H5_GOTO(dset = H5Dopen2(group, "terms", H5P_DEFAULT), done, "%s/terms", where);
  QP_H5_GOTO(space = H5Dget_space(dset), done, "%s/terms", where);
  hssize_t n = H5Sget_simple_extent_npoints(space);
  QP_H5_GOTO(n, done, "%s/terms", where);
  QP_H5_GOTO(mtype = H5Tcreate(H5T_COMPOUND, sizeof(qp_val_row)), done, "%s/terms", where);
  QP_H5_GOTO(str = H5Tcopy(H5T_C_S1), done, "%s/terms", where);
  QP_H5_GOTO(H5Tset_size(str, QP_TERM_NAME_MAX), done, "%s/terms", where);
  QP_H5_GOTO(H5Tinsert(mtype, "name", HOFFSET(qp_val_row, name), str), done, "%s/terms", where);
  QP_H5_GOTO(
      H5Tinsert(mtype, "predicted_bytes", HOFFSET(qp_val_row, predicted_bytes), H5T_NATIVE_INT64),
      done, "%s/terms", where);
  QP_H5_GOTO(H5Tinsert(mtype, "tracked_peak_bytes", HOFFSET(qp_val_row, tracked_peak_bytes),
                       H5T_NATIVE_INT64),
             done, "%s/terms", where);
  s->n_terms = (int)n;
  s->drift = 0;
  if (n == 0) goto done;
  rows = calloc((size_t)n, sizeof *rows);
  QP_CHECK_GOTO(rows, QP_ERR_NOMEM, done, "%s/terms: %lld rows", where, (long long)n);
  QP_H5_GOTO(H5Dread(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows), done,
             "%s/terms: cannot read (not a qmlpipe terms table?)", where);
  /* A resumed stage allocated the checkpoint's terms, not the stage's: no drift to judge. */
  for (hssize_t i = 0; i < n && !s->resumed; ++i) {
    const qp_val_row *r = &rows[i];
    if (r->predicted_bytes == r->tracked_peak_bytes) continue;
    ++s->drift;
    QP_CALL_GOTO(qp_val_grow((void **)&set->drifts, &set->cap_drifts, set->n_drifts + 1,
                             sizeof *set->drifts, "drifting terms"),
                 done);
    qp_val_drift *d = &set->drifts[set->n_drifts++];
    d->stage = stage;
    snprintf(d->term, sizeof d->term, "%.*s", (int)sizeof r->name - 1, r->name);
    d->predicted = r->predicted_bytes;
    d->tracked = r->tracked_peak_bytes;
  }
done:
  free(rows);
  if (str >= 0) H5Tclose(str);
  if (mtype >= 0) H5Tclose(mtype);
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  return err;
}

/* Reads the figures of one stage group into a new stage record. */
static qp_err qp_val_read_stage(hid_t group, const char *where, const char *link, int file,
                                qp_val_set *set) {
  QP_CALL(qp_val_grow((void **)&set->stages, &set->cap_stages, set->n_stages + 1,
                      sizeof *set->stages, "stages"));
  qp_val_stage *s = &set->stages[set->n_stages];
  memset(s, 0, sizeof *s);
  s->file = file;
  int64_t has_model = 0, hwm_reset = 0, rss_peak = -1, rss_end = -1;
  QP_CALL(qp_h5_attr_string(group, where, "stage", s->name, sizeof s->name));
  if (!s->name[0]) snprintf(s->name, sizeof s->name, "%.*s", (int)sizeof s->name - 1, link);
  QP_CALL(qp_h5_attr_i64(group, where, "model_has_stage", 1, &has_model));
  QP_CALL(qp_h5_attr_i64(group, where, "hwm_reset", 1, &hwm_reset));
  QP_CALL(qp_h5_attr_i64(group, where, "predicted_peak_bytes", 1, &s->pred_peak));
  /* Library buffers (distributed runs: PBLAS's panels) are in RSS, not in the tracked peak;
   * files from before the attribute existed have none. */
  int64_t library = 0;
  QP_CALL(qp_h5_attr_i64(group, where, "predicted_library_bytes", 0, &library));
  if (library > 0) s->pred_peak += library;
  s->library = library > 0 ? library : 0;
  QP_CALL(qp_h5_attr_i64(group, where, "predicted_persistent_bytes", 1, &s->pred_persistent));
  if (set->files[file].device_in_host) {
    /* hostdev: the emulated device's pages are the process's, so RSS holds both spaces. */
    int64_t both = -1, device_kept = -1;
    QP_CALL(qp_h5_attr_i64(group, where, "predicted_peak_both_spaces_bytes", 0, &both));
    QP_CALL(qp_h5_attr_i64(group, where, "predicted_device_persistent_bytes", 0, &device_kept));
    if (both >= 0) s->pred_peak = both + s->library;
    if (device_kept > 0) s->pred_persistent += device_kept;
  }
  QP_CALL(qp_h5_attr_i64(group, where, "rss_peak_bytes", 1, &rss_peak));
  QP_CALL(qp_h5_attr_i64(group, where, "rss_end_bytes", 1, &rss_end));
  s->model_has_stage = has_model != 0;
  s->hwm_reset = hwm_reset != 0;
  int64_t resumed = 0;
  QP_CALL(qp_h5_attr_i64(group, where, "resumed", 0, &resumed));
  s->resumed = resumed > 0;
  const int64_t base = set->files[file].baseline;
  s->meas_peak = (rss_peak >= 0 && base >= 0) ? rss_peak - base : -1;
  s->meas_persistent = (rss_end >= 0 && base >= 0) ? rss_end - base : -1;
  ++set->n_stages; /* the record is complete enough to print from here on */
  QP_CALL(qp_val_read_terms(group, where, set, set->n_stages - 1));
  return QP_OK;
}

/* Reads one results file: its root attributes, /budget, and every stage group (a group with
 * a "stage" attribute; others, such as /budget/timeline, are skipped) in the order the stages
 * ran (creation order; name order when the file does not track it). */
qp_err qp_val_read_file(qp_val_set *set, int file) {
  qp_err err = QP_OK;
  qp_val_file *f = &set->files[file];
  const char *path = f->path;
  hid_t h5 = -1, budget = -1, group = -1;
  char where[QP_VAL_WHERE_MAX];

  QP_CALL(qp_report_open(path, &h5, &budget));
  QP_CALL_GOTO(qp_h5_attr_string(h5, path, "path_used", f->path_used, sizeof f->path_used), done);
  QP_CALL_GOTO(qp_h5_attr_i64(h5, path, "n_pix", 0, &f->n_pix), done);
  snprintf(where, sizeof where, "%s: /budget", path);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "baseline_rss_bytes", 1, &f->baseline), done);
  QP_CALL_GOTO(
      qp_h5_attr_i64(budget, where, "device_context_predicted_bytes", 0, &f->context_predicted),
      done);
  QP_CALL_GOTO(
      qp_h5_attr_i64(budget, where, "device_context_measured_bytes", 0, &f->context_measured),
      done);
  char backend[QP_VAL_TEXT_MAX];
  QP_CALL_GOTO(qp_h5_attr_string(h5, path, "backend", backend, sizeof backend), done);
  const qp_backend *row = qp_backend_find(backend);
  f->device_in_host = row && row->device_in_host;

  H5G_info_t info;
  QP_H5_GOTO(H5Gget_info(budget, &info), done, "%s: /budget", path);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char name[256];
    ssize_t len = H5Lget_name_by_idx(budget, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, name,
                                     sizeof name, H5P_DEFAULT);
    if (len < 0) { /* creation order not tracked: name order */
      H5Eclear2(H5E_DEFAULT);
      len = H5Lget_name_by_idx(budget, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                               H5P_DEFAULT);
    }
    QP_H5_GOTO(len, done, "%s: /budget: link %llu", path, (unsigned long long)i);
    QP_H5_GOTO(group = H5Oopen(budget, name, H5P_DEFAULT), done, "%s: /budget/%s", path, name);
    htri_t is_stage = H5Iget_type(group) == H5I_GROUP ? H5Aexists(group, "stage") : 0;
    QP_H5_GOTO(is_stage, done, "%s: /budget/%s", path, name);
    if (!is_stage) { /* not a stage record (the timeline, a dataset): nothing to validate */
      H5Oclose(group);
      group = -1;
      continue;
    }
    snprintf(where, sizeof where, "%s: /budget/%s", path, name);
    QP_CALL_GOTO(qp_val_read_stage(group, where, name, file, set), done);
    H5Oclose(group);
    group = -1;
  }
  f->read_ok = 1;
done:
  if (group >= 0) H5Oclose(group);
  if (budget >= 0) H5Gclose(budget);
  if (h5 >= 0) H5Fclose(h5);
  return err;
}
