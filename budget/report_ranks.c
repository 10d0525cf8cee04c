/* report_ranks.c: /budget/ranks, the per-rank budget of a distributed run (report_ranks.h). */
#include "report_ranks.h"

#include <hdf5_hl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "report_open.h"

static const char *const qp_rank_field_names[QP_RANK_FIELDS] = {"predicted_peak_bytes",
                                                                "predicted_persistent_bytes",
                                                                "tracked_peak_bytes",
                                                                "tracked_end_bytes",
                                                                "rss_peak_bytes",
                                                                "rss_end_bytes",
                                                                "seconds",
                                                                "predicted_library_bytes"};

void qp_rank_row(const qp_model *model, const qp_meter_sample *baseline, double row[QP_RANK_ROW]) {
  for (int i = 0; i < QP_RANK_BASELINE; ++i)
    row[i] = -1;
  for (int s = 0; s < model->n_stages; ++s) {
    double *v = row + s * QP_RANK_FIELDS;
    const qp_stage_record *r = qp_stage_record_find(qp_model_stage_name(model, s));
    v[QP_RANK_PREDICTED_PEAK] = (double)qp_model_stage_peak(model, s);
    v[QP_RANK_PREDICTED_PERSISTENT] = (double)qp_model_stage_persistent(model, s);
    v[QP_RANK_PREDICTED_LIBRARY] = (double)qp_model_stage_library(model, s);
    if (!r) continue;
    v[QP_RANK_TRACKED_PEAK] = (double)r->tracked_peak;
    v[QP_RANK_TRACKED_END] = (double)r->tracked_at_end;
    if (r->meter_end.hwm >= 0 && r->meter_start.hwm_reset)
      v[QP_RANK_RSS_PEAK] = (double)(r->meter_end.hwm - baseline->rss);
    if (r->meter_end.rss >= 0) v[QP_RANK_RSS_END] = (double)(r->meter_end.rss - baseline->rss);
    v[QP_RANK_SECONDS] = r->seconds;
  }
  row[QP_RANK_BASELINE] = (double)baseline->rss;
  row[QP_RANK_BASELINE + 1] = (double)baseline->rss_shared;
  row[QP_RANK_NODE_RANKS] = 0;
}

/* A 1-D or 2-D dataset of doubles. */
static qp_err qp_write_doubles(hid_t group, const char *name, int rank, const hsize_t *dims,
                               const double *data) {
  qp_err err = QP_OK;
  hid_t space = -1, set = -1;
  QP_H5_GOTO(space = H5Screate_simple(rank, dims, NULL), done, "/budget/ranks/%s", name);
  QP_H5_GOTO(
      set = H5Dcreate2(group, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      done, "/budget/ranks/%s", name);
  QP_H5_GOTO(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), done,
             "/budget/ranks/%s", name);
done:
  if (set >= 0) H5Dclose(set);
  if (space >= 0) H5Sclose(space);
  return err;
}

/* host [rank]: fixed-width strings (QP_RANK_HOST_MAX bytes, NUL-padded: h5py reads them as
 * bytes, numpy's S65). */
static qp_err qp_write_hosts(hid_t group, const char *hosts, int n) {
  qp_err err = QP_OK;
  hid_t type = -1, space = -1, set = -1;
  const hsize_t dims[1] = {(hsize_t)n};
  QP_H5_GOTO(type = H5Tcopy(H5T_C_S1), done, "/budget/ranks/host");
  QP_H5_GOTO(H5Tset_size(type, QP_RANK_HOST_MAX), done, "/budget/ranks/host");
  QP_H5_GOTO(H5Tset_strpad(type, H5T_STR_NULLPAD), done, "/budget/ranks/host");
  QP_H5_GOTO(space = H5Screate_simple(1, dims, NULL), done, "/budget/ranks/host");
  QP_H5_GOTO(set = H5Dcreate2(group, "host", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             done, "/budget/ranks/host");
  QP_H5_GOTO(H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, hosts), done, "/budget/ranks/host");
done:
  if (set >= 0) H5Dclose(set);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  return err;
}

qp_err qp_rank_hosts_read(hid_t group, const char *where, long long n,
                          char (*hosts)[QP_RANK_HOST_MAX], int *found) {
  qp_err err = QP_OK;
  hid_t set = -1, space = -1, type = -1, mem = -1;
  *found = 0;
  const htri_t has = H5Lexists(group, "host", H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s/host", where);
  if (!has) goto done;
  QP_H5_GOTO(set = H5Dopen2(group, "host", H5P_DEFAULT), done, "%s/host", where);
  QP_H5_GOTO(space = H5Dget_space(set), done, "%s/host", where);
  QP_H5_GOTO(type = H5Dget_type(set), done, "%s/host", where);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  QP_CHECK_GOTO(H5Tget_class(type) == H5T_STRING && !H5Tis_variable_str(type) && points == n,
                QP_ERR_INPUT, done,
                "%s/host: expected %lld fixed-width strings (one host per rank), found %lld "
                "values of another kind or number",
                where, n, (long long)points);
  /* Read into our width whatever the file's (HDF5 converts fixed strings, cutting longer). */
  QP_H5_GOTO(mem = H5Tcopy(H5T_C_S1), done, "%s/host", where);
  QP_H5_GOTO(H5Tset_size(mem, QP_RANK_HOST_MAX), done, "%s/host", where);
  QP_H5_GOTO(H5Tset_strpad(mem, H5T_STR_NULLTERM), done, "%s/host", where);
  QP_H5_GOTO(H5Dread(set, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, hosts), done, "%s/host", where);
  for (long long r = 0; r < n; ++r)
    hosts[r][QP_RANK_HOST_MAX - 1] = '\0';
  *found = 1;
done:
  if (mem >= 0) H5Tclose(mem);
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  if (set >= 0) H5Dclose(set);
  return err;
}

qp_err qp_report_write_ranks(hid_t file, const qp_rank_table *t) {
  qp_err err = QP_OK;
  hid_t group = -1;
  const int n = t->n_ranks, n_st = t->model->n_stages;
  double *column = malloc((size_t)n * QP_MODEL_STAGES_MAX * sizeof *column);
  double *extreme = malloc(2 * QP_MODEL_STAGES_MAX * sizeof *extreme);
  QP_CHECK_GOTO(column && extreme, QP_ERR_NOMEM, done, "out of memory for the rank table");
  QP_H5_GOTO(group = H5Gcreate2(file, "budget/ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), done,
             "cannot create /budget/ranks");
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, "/budget/ranks", "n_ranks", n), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, "/budget/ranks", "grid_rows", t->grid_rows), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, "/budget/ranks", "grid_cols", t->grid_cols), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, "/budget/ranks", "block", t->block), done);
  QP_CALL_GOTO(qp_h5_attr_write_i64(group, "/budget/ranks", "ranks_per_node", t->ranks_per_node),
               done);
  char stages[QP_MODEL_STAGES_MAX * (QP_STAGE_NAME_MAX + 1)] = "";
  for (int s = 0; s < n_st; ++s) {
    if (s) strncat(stages, ",", sizeof stages - strlen(stages) - 1);
    strncat(stages, qp_model_stage_name(t->model, s), sizeof stages - strlen(stages) - 1);
  }
  QP_CALL_GOTO(qp_h5_attr_write_string(group, "/budget/ranks", "stages", stages), done);
  for (int f = 0; f < QP_RANK_FIELDS; ++f) {
    for (int s = 0; s < n_st; ++s) {
      double hi = -INFINITY, lo = INFINITY;
      for (int r = 0; r < n; ++r) {
        double v = t->rows[(size_t)r * QP_RANK_ROW + s * QP_RANK_FIELDS + f];
        column[r * n_st + s] = v;
        hi = fmax(hi, v);
        lo = fmin(lo, v);
      }
      extreme[s] = hi;
      extreme[n_st + s] = lo;
    }
    const hsize_t dims2[2] = {(hsize_t)n, (hsize_t)n_st}, dims1[1] = {(hsize_t)n_st};
    char name[64];
    QP_CALL_GOTO(qp_write_doubles(group, qp_rank_field_names[f], 2, dims2, column), done);
    snprintf(name, sizeof name, "%s_max", qp_rank_field_names[f]);
    QP_CALL_GOTO(qp_write_doubles(group, name, 1, dims1, extreme), done);
    snprintf(name, sizeof name, "%s_min", qp_rank_field_names[f]);
    QP_CALL_GOTO(qp_write_doubles(group, name, 1, dims1, extreme + n_st), done);
  }
  /* Per rank: the baselines, and (when the caller knows them) the ranks on its node. */
  static const char *const per_rank[3] = {"baseline_rss_bytes", "baseline_rss_shared_bytes",
                                          "node_ranks"};
  for (int k = 0; k < 3; ++k) {
    if (k == 2 && !t->hosts) break;
    for (int r = 0; r < n; ++r)
      column[r] = t->rows[(size_t)r * QP_RANK_ROW + QP_RANK_BASELINE + k];
    const hsize_t dims[1] = {(hsize_t)n};
    QP_CALL_GOTO(qp_write_doubles(group, per_rank[k], 1, dims, column), done);
  }
  if (t->hosts) QP_CALL_GOTO(qp_write_hosts(group, t->hosts, n), done);
done:
  if (group >= 0) H5Gclose(group);
  free(column);
  free(extreme);
  return err;
}

qp_err qp_rank_field_read(hid_t group, const char *where, const char *name, double *out,
                          long long count, qp_err missing, int *found) {
  qp_err err = QP_OK;
  hid_t set = -1, space = -1;
  if (found) *found = 0;
  const htri_t has = H5Lexists(group, name, H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s/%s", where, name);
  if (!has) {
    QP_CHECK_GOTO(missing == QP_OK, missing, done,
                  "%s/%s: missing (not a qmlpipe results file, or one written by a version "
                  "without it)",
                  where, name);
    goto done;
  }
  QP_H5_GOTO(set = H5Dopen2(group, name, H5P_DEFAULT), done, "%s/%s", where, name);
  QP_H5_GOTO(space = H5Dget_space(set), done, "%s/%s", where, name);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  QP_H5_GOTO(points, done, "%s/%s", where, name);
  /* The file's n_ranks sized `out`: a dataset of another size would be read past it. */
  QP_CHECK_GOTO(points == count, QP_ERR_INPUT, done,
                "%s/%s holds %lld values, but n_ranks and the stages say %lld", where, name,
                (long long)points, count);
  QP_H5_GOTO(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), done, "%s/%s",
             where, name);
  if (found) *found = 1;
done:
  if (space >= 0) H5Sclose(space);
  if (set >= 0) H5Dclose(set);
  return err;
}

/* The most ranks a rank table may claim: far above any job, far below what would make its
 * buffers (n x stages x 8 bytes each) large. */
enum { QP_RANK_TABLE_MAX = 1 << 24 };

/* The stages of a rank table: the "stages" attribute (comma-separated names), else (files
 * from before it) as many as predicted_peak_bytes has columns, named "stage <i>". */
static qp_err qp_rank_stages(const char *path, hid_t group,
                             char names[QP_MODEL_STAGES_MAX][QP_STAGE_NAME_MAX], int *n_stages) {
  char text[QP_MODEL_STAGES_MAX * (QP_STAGE_NAME_MAX + 1)];
  char where[64];
  snprintf(where, sizeof where, "/budget/ranks");
  QP_CALL(qp_h5_attr_string(group, where, "stages", text, sizeof text));
  *n_stages = 0;
  if (text[0]) {
    for (char *tok = strtok(text, ","); tok && *n_stages < QP_MODEL_STAGES_MAX;
         tok = strtok(NULL, ","))
      snprintf(names[(*n_stages)++], QP_STAGE_NAME_MAX, "%s", tok);
    return QP_OK;
  }
  int ndims = 0;
  hsize_t dims[H5S_MAX_RANK] = {0}; /* H5LT writes one extent per dimension the file has */
  if (H5LTget_dataset_ndims(group, "predicted_peak_bytes", &ndims) < 0 ||
      H5LTget_dataset_info(group, "predicted_peak_bytes", dims, NULL, NULL) < 0)
    QP_H5_FAIL(QP_ERR_IO, "%s: /budget/ranks/predicted_peak_bytes", path);
  QP_CHECK(ndims == 2 && dims[1] >= 1 && dims[1] <= QP_MODEL_STAGES_MAX, QP_ERR_INPUT,
           "'%s': /budget/ranks/predicted_peak_bytes is not [rank][stage]", path);
  *n_stages = (int)dims[1];
  for (int i = 0; i < *n_stages; ++i)
    snprintf(names[i], QP_STAGE_NAME_MAX, "stage %d", i);
  return QP_OK;
}

/* An error in percent for the rank table: "+1.23", "resumed" (a stage restored from its
 * checkpoint, not the model's to answer for), "n/a" (nothing measured). */
static void qp_rank_err_text(double e, int resumed, char text[16]) {
  if (resumed)
    snprintf(text, 16, "resumed");
  else if (!isfinite(e))
    snprintf(text, 16, "n/a");
  else
    snprintf(text, 16, "%+.2f", e);
}

/* 1 when /budget/<stage> says the run restored the stage from a checkpoint (`resumed`): its
 * tracked bytes are the checkpoint's, not compared with the stage's prediction. */
static int qp_rank_stage_resumed(hid_t file, const char *stage) {
  char name[64];
  snprintf(name, sizeof name, "budget/%s", stage);
  int64_t resumed = 0; /* stays 0 when the group or the attribute is missing or malformed */
  hid_t group = H5Gopen2(file, name, H5P_DEFAULT);
  if (group >= 0 && qp_h5_attr_i64(group, name, "resumed", 0, &resumed) != QP_OK) resumed = 0;
  qp_error_clear();
  if (group >= 0) H5Gclose(group);
  H5Eclear2(H5E_DEFAULT);
  return resumed > 0;
}

/* "nodes: 2 (qn1: rank 0; qn2: ranks 1 2 3)": the placement as the ranks recorded it. */
static void qp_rank_print_nodes(FILE *out, const char (*hosts)[QP_RANK_HOST_MAX], long long n) {
  if (n > 64) { /* a long job: the list would drown the table (and take n^2 comparisons) */
    fprintf(out, "placement: %lld ranks, each one's host in /budget/ranks/host\n", n);
    return;
  }
  long long nodes = 0;
  for (long long r = 0; r < n; ++r) {
    long long first = 0;
    while (strcmp(hosts[first], hosts[r]) != 0)
      ++first;
    nodes += first == r;
  }
  fprintf(out, "placement: %lld node(s) by host name (", nodes);
  for (long long r = 0; r < n; ++r) {
    long long first = 0, count = 0;
    while (strcmp(hosts[first], hosts[r]) != 0)
      ++first;
    if (first != r) continue;
    for (long long k = r; k < n; ++k)
      count += strcmp(hosts[k], hosts[r]) == 0;
    fprintf(out, "%s%s: %lld rank%s", r ? "; " : "", hosts[r], count, count == 1 ? "" : "s");
    for (long long k = r; k < n; ++k)
      if (strcmp(hosts[k], hosts[r]) == 0) fprintf(out, " %lld", k);
  }
  fprintf(out, ")\n");
}

qp_err qp_report_print_ranks(const char *path, FILE *out, int *mismatch) {
  qp_err err = QP_OK;
  hid_t file = -1, group = -1;
  double *v[QP_RANK_FIELDS] = {0};
  *mismatch = 0;
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  hid_t budget = -1;
  QP_CALL_GOTO(qp_report_open(path, &file, &budget), done);
  H5Gclose(budget);
  QP_CHECK_GOTO(H5Lexists(file, "budget/ranks", H5P_DEFAULT) > 0, QP_ERR_INPUT, done,
                "'%s' has no /budget/ranks: it is not from a distributed run", path);
  QP_H5_GOTO(group = H5Gopen2(file, "budget/ranks", H5P_DEFAULT), done, "%s: /budget/ranks", path);
  char where[QP_RANK_WHERE_MAX];
  snprintf(where, sizeof where, "'%s': /budget/ranks", path);
  int64_t n = 0, rows = 0, cols = 0, block = 0;
  const char *names[4] = {"n_ranks", "grid_rows", "grid_cols", "block"};
  int64_t *dst[4] = {&n, &rows, &cols, &block};
  for (int i = 0; i < 4; ++i) /* one value each, HDF5's reason kept (h5_attr.c) */
    QP_CALL_GOTO(qp_h5_attr_i64(group, where, names[i], 1, dst[i]), done);
  /* From the file: checked before it sizes anything. */
  QP_CHECK_GOTO(n >= 1 && n <= QP_RANK_TABLE_MAX, QP_ERR_INPUT, done,
                "'%s': /budget/ranks n_ranks = %lld is not a rank count (1 to %d)", path,
                (long long)n, QP_RANK_TABLE_MAX);
  char stage[QP_MODEL_STAGES_MAX][QP_STAGE_NAME_MAX];
  int n_st = 0;
  QP_CALL_GOTO(qp_rank_stages(path, group, stage, &n_st), done);
  for (int f = 0; f < QP_RANK_FIELDS; ++f) {
    v[f] = malloc((size_t)n * (size_t)n_st * sizeof *v[f]); /* n <= 2^24: 512 MiB at most */
    QP_CHECK_GOTO(v[f], QP_ERR_NOMEM, done, "out of memory for the rank table");
    QP_CALL_GOTO(
        qp_rank_field_read(group, where, qp_rank_field_names[f], v[f], n * n_st, QP_ERR_IO, NULL),
        done);
  }
  const double mib = 1048576.0;
  double *base = malloc((size_t)n * sizeof *base);
  QP_CHECK_GOTO(base, QP_ERR_NOMEM, done, "out of memory for the rank table");
  err = qp_rank_field_read(group, where, "baseline_rss_bytes", base, n, QP_ERR_IO, NULL);
  if (err != QP_OK) {
    free(base);
    goto done;
  }
  /* Where each rank ran (files from before the record: none). */
  char(*hosts)[QP_RANK_HOST_MAX] = malloc((size_t)n * sizeof *hosts);
  int have_hosts = 0;
  err = hosts ? qp_rank_hosts_read(group, where, n, hosts, &have_hosts)
              : qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                             "out of memory for %lld host names", (long long)n);
  if (err != QP_OK) {
    free(base);
    free(hosts);
    goto done;
  }
  if (!have_hosts) {
    free(hosts);
    hosts = NULL;
  } else {
    qp_rank_print_nodes(out, hosts, n);
  }
  fprintf(out,
          "per rank (%lld ranks, grid %lld x %lld, block %lld); MiB above each rank's "
          "baseline; error = (measured - predicted) / measured\n",
          (long long)n, (long long)rows, (long long)cols, (long long)block);
  fprintf(out, "%-17s %4s | %10s %10s %10s %7s | %10s %10s %7s | %s\n", "stage", "rank", "pred+lib",
          "tracked", "RSS peak", "err %", "pred kept", "RSS end", "err %", "tracked == predicted");
  double absolute = 0;
  long long absolute_rank = 0;
  int absolute_stage = 0;
  for (int s = 0; s < n_st; ++s) {
    double worst = 0;
    const int resumed = qp_rank_stage_resumed(file, stage[s]);
    for (long long r = 0; r < n; ++r) {
      const size_t k = (size_t)r * (size_t)n_st + (size_t)s;
      const double pp = v[QP_RANK_PREDICTED_PEAK][k], tp = v[QP_RANK_TRACKED_PEAK][k];
      const double rp = v[QP_RANK_RSS_PEAK][k], pk = v[QP_RANK_PREDICTED_PERSISTENT][k];
      const double re = v[QP_RANK_RSS_END][k];
      const int exact = tp == pp; /* the tracked peak against the tracked terms' prediction */
      *mismatch |= !exact && !resumed;
      /* RSS holds the library buffers too (PBLAS's panels); the allocator does not. */
      const double pr = pp + fmax(0.0, v[QP_RANK_PREDICTED_LIBRARY][k]);
      const double ep = rp > 0 ? (rp - pr) / rp * 100 : NAN,
                   ek = re > 0 ? (re - pk) / re * 100 : NAN;
      if (isfinite(ep) && !resumed) worst = fmax(worst, fabs(ep));
      /* A resumed stage read its checkpoint: no error of the model to show (issue 41: +nan). */
      char ept[16], ekt[16];
      qp_rank_err_text(ep, resumed, ept);
      qp_rank_err_text(ek, resumed, ekt);
      fprintf(out, "%-17s %4lld | %10.2f %10.2f %10.2f %7s | %10.2f %10.2f %7s | %s%s%s\n",
              stage[s], r, pr / mib, tp / mib, rp / mib, ept, pk / mib, re / mib, ekt,
              resumed ? "resumed (not compared)"
              : exact ? "yes"
                      : "NO: tracked != predicted",
              hosts ? ", host " : "", hosts ? hosts[r] : "");
    }
    double hi = -INFINITY, lo = INFINITY;
    for (long long r = 0; r < n; ++r) {
      hi = fmax(hi, v[QP_RANK_RSS_PEAK][(size_t)r * (size_t)n_st + s]);
      lo = fmin(lo, v[QP_RANK_RSS_PEAK][(size_t)r * (size_t)n_st + s]);
    }
    if (resumed)
      fprintf(out, "%-17s  all | resumed from the checkpoint: not compared\n", stage[s]);
    else
      fprintf(out, "%-17s  all | measured peak max %.2f MiB, min %.2f MiB; largest |err| %.2f%%\n",
              stage[s], hi / mib, lo / mib, worst);
    for (long long r = 0; r < n; ++r) {
      double a = v[QP_RANK_RSS_PEAK][(size_t)r * (size_t)n_st + s] + base[r];
      if (a > absolute) {
        absolute = a;
        absolute_rank = r;
        absolute_stage = s;
      }
    }
  }
  fprintf(out, "largest RSS of any rank: %.2f MiB (rank %lld%s%s in %s, baseline included)\n",
          absolute / mib, absolute_rank, hosts ? " on " : "", hosts ? hosts[absolute_rank] : "",
          stage[absolute_stage]);
  free(base);
  free(hosts);
done:
  for (int f = 0; f < QP_RANK_FIELDS; ++f)
    free(v[f]);
  if (group >= 0) H5Gclose(group);
  if (file >= 0) H5Fclose(file);
  qp_h5_quiet_end(&quiet);
  return err;
}
