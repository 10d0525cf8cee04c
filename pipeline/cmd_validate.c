/* cmd_validate.c: `qmlpipe validate [--tolerance F] [--min-bytes B] FILE.h5...`: the memory
 * model checked against what runs measured.
 *
 * For every results file and every stage group under its /budget (report_h5.h), two
 * comparisons, both above the run's baseline RSS (/budget baseline_rss_bytes, taken after the
 * BLAS warm-up, before the first stage):
 *
 *   peak:       predicted_peak_bytes       against rss_peak_bytes - baseline (VmHWM of the stage)
 *   persistent: predicted_persistent_bytes against rss_end_bytes  - baseline (VmRSS at its end)
 *
 * each as the relative error (measured - predicted) / measured (positive: the model predicted
 * too little). And per term of the stage's "terms" dataset, predicted_bytes against
 * tracked_peak_bytes, which must be equal (the allocator tracked exactly what the model says).
 *
 * A stage is judged when the model knows it and its predicted peak is at least --min-bytes;
 * its persistent comparison only when the predicted persistent bytes are too; its peak
 * comparison only when VmHWM was reset at its start (else the figure is the process's peak so
 * far, not the stage's). Below that size the few MiB that the C library, OpenBLAS and HDF5
 * map and unmap on their own dominate the difference. Term drift is judged in every stage the
 * model knows, whatever its size: it is an exact comparison. */
#include <errno.h>
#include <hdf5.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "budget.h"
#include "commands.h"
#include "config.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "qp_error.h"
#include "results_path.h"

enum {
  QP_VAL_TEXT_MAX = 64, /* path_used, stage names as printed */
  QP_VAL_WHERE_MAX = 4096 + 320,
  QP_VAL_SUFFIX_DEPTH = 16 /* path components tried to make short file names unique */
};

static const double qp_val_mib = 1048576.0;

/* One results file. */
typedef struct qp_val_file {
  const char *path;
  const char *short_name; /* the shortest trailing part of the path unique among the files */
  char path_used[QP_VAL_TEXT_MAX];
  int64_t n_pix;    /* -1 when the file lacks it */
  int64_t baseline; /* /budget baseline_rss_bytes; -1 unknown */
  int read_ok;
} qp_val_file;

/* One stage of one file, with its verdict. */
typedef struct qp_val_stage {
  int file;
  char name[QP_VAL_TEXT_MAX];
  int model_has_stage, hwm_reset;
  int64_t pred_peak, pred_persistent; /* tracked bytes above the baseline */
  int64_t library;                    /* predicted_library_bytes (in pred_peak) */
  int64_t meas_peak, meas_persistent; /* RSS above the baseline; -1 unknown */
  double err_peak, err_persistent;    /* (measured - predicted) / measured; NAN unknown */
  int judge_peak, judge_persistent;   /* compared against the tolerance */
  int fail_peak, fail_persistent;
  int n_terms, drift; /* rows of "terms"; rows whose two columns differ */
  int resumed;        /* restored from a checkpoint: shown, never judged (checkpoint.h) */
} qp_val_stage;

/* One term whose predicted and tracked bytes differ. */
typedef struct qp_val_drift {
  int stage; /* index into the stages */
  char term[QP_TERM_NAME_MAX];
  int64_t predicted, tracked;
} qp_val_drift;

/* Everything read, grown as files are read. */
typedef struct qp_val_set {
  qp_val_file *files;
  int n_files;
  qp_val_stage *stages;
  int n_stages, cap_stages;
  qp_val_drift *drifts;
  int n_drifts, cap_drifts;
} qp_val_set;

/* The subset of a /budget/<stage>/terms row that validation reads (HDF5 converts compound
 * types member by member, by name). */
typedef struct qp_val_row {
  char name[QP_TERM_NAME_MAX];
  int64_t predicted_bytes;
  int64_t tracked_peak_bytes;
} qp_val_row;

static void qp_validate_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe validate [--tolerance F] [--min-bytes B] RESULTS.h5|CONFIG.yaml...\n"
          "       qmlpipe validate RESULTS.h5 --sacct FILE [--cgroup-peak BYTES|FILE] [...]\n"
          "  Checks the memory model against what the runs measured. For every file and every\n"
          "  stage under /budget, above the run's baseline RSS (after warm-up):\n"
          "    peak        predicted_peak_bytes against VmHWM of the stage - baseline\n"
          "    persistent  predicted_persistent_bytes against VmRSS at its end - baseline\n"
          "  each as the relative error (measured - predicted) / measured, and per term whether\n"
          "  the tracked bytes equal the predicted ones (drift). Stages a run resumed from a\n"
          "  checkpoint (run --resume) are shown but not judged: they read the checkpoint.\n"
          "  Prints a table, the error distribution over the judged stages and which stage of\n"
          "  which file failed.\n"
          "  A CONFIG.yaml (.yaml or .yml) stands for the results file of its 'output'\n"
          "  (relative to the config's directory); other paths are results files.\n"
          "  --tolerance F   largest |relative error| accepted, a fraction (default 0.02)\n"
          "  --min-bytes B   stages whose predicted peak is below B are shown but not judged\n"
          "                  (library noise dominates); persistent comparisons likewise when\n"
          "                  the predicted persistent bytes are below B (default 16MiB; units\n"
          "                  as memory.host_limit: KiB, MiB, GiB, kB, MB, GB or bytes)\n"
          "  --sacct FILE    also compare with Slurm's accounting of the job that wrote the\n"
          "                  (one) results file: FILE = sacct -j JOBID --parsable2 --noconvert\n"
          "                  -o JobID,JobName,State,ExitCode,MaxRSS,MaxRSSTask,MaxRSSNode,NTasks,\n"
          "                  NNodes,ReqMem (any column order; JobID, State, MaxRSS needed). The\n"
          "                  largest rank's predicted peak (stage peak + overhead) against the\n"
          "                  MaxRSS of the srun step (JOB.N, the largest); every line must be\n"
          "                  COMPLETED (docs/slurm.md)\n"
          "  --cgroup-peak BYTES|FILE  the job cgroup's peak (memory.peak, v1\n"
          "                  memory.max_usage_in_bytes), or a file of 'job step bytes' lines:\n"
          "                  compared with the node's predicted peak (the ranks of a node summed)\n"
          "  -h, --help      print this help\n"
          "  Exit status: 0 when every judged comparison is within the tolerance and no term\n"
          "  drifts; %d when any is not, or a job step ran OUT_OF_MEMORY; %d when a file cannot\n"
          "  be read; %d when the sacct output is malformed, lacks an srun step, or a step is\n"
          "  not COMPLETED (FAILED, CANCELLED, TIMEOUT, RUNNING: nothing to validate); 2 on bad\n"
          "  usage.\n",
          qp_err_exit_status(QP_ERR_BUDGET), qp_err_exit_status(QP_ERR_IO),
          qp_err_exit_status(QP_ERR_INPUT));
}

/* ---- reading ---- */

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
static qp_err qp_val_read_file(qp_val_set *set, int file) {
  qp_err err = QP_OK;
  qp_val_file *f = &set->files[file];
  const char *path = f->path;
  hid_t h5 = -1, budget = -1, group = -1;
  char where[QP_VAL_WHERE_MAX];

  QP_CALL(qp_h5_open_budget(path, &h5, &budget));
  QP_CALL_GOTO(qp_h5_attr_string(h5, path, "path_used", f->path_used, sizeof f->path_used), done);
  QP_CALL_GOTO(qp_h5_attr_i64(h5, path, "n_pix", 0, &f->n_pix), done);
  snprintf(where, sizeof where, "%s: /budget", path);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "baseline_rss_bytes", 1, &f->baseline), done);

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

/* ---- judging ---- */

static double qp_val_rel_error(int64_t measured, int64_t predicted) {
  if (measured <= 0 || predicted < 0) return NAN;
  return ((double)measured - (double)predicted) / (double)measured;
}

/* A comparison fails when it is judged and its error is unknown or outside the tolerance. */
static int qp_val_outside(double err, double tolerance) {
  return !isfinite(err) || fabs(err) > tolerance;
}

static void qp_val_judge(qp_val_set *set, double tolerance, int64_t min_bytes) {
  for (int i = 0; i < set->n_stages; ++i) {
    qp_val_stage *s = &set->stages[i];
    s->err_peak = qp_val_rel_error(s->meas_peak, s->pred_peak);
    s->err_persistent = qp_val_rel_error(s->meas_persistent, s->pred_persistent);
    const int big = s->model_has_stage && !s->resumed && s->pred_peak >= min_bytes;
    s->judge_peak = big && s->hwm_reset;
    s->judge_persistent = big && s->pred_persistent >= min_bytes;
    s->fail_peak = s->judge_peak && qp_val_outside(s->err_peak, tolerance);
    s->fail_persistent = s->judge_persistent && qp_val_outside(s->err_persistent, tolerance);
  }
}

static int qp_val_stage_failed(const qp_val_stage *s) {
  return s->fail_peak || s->fail_persistent || (s->model_has_stage && s->drift > 0);
}

/* ---- printing ---- */

/* The start of the last k components of a path ("a/b/c.h5", 2 -> "b/c.h5"). */
static const char *qp_val_suffix(const char *path, int k) {
  const char *p = path + strlen(path);
  while (p > path) {
    if (p[-1] == '/' && --k == 0) return p;
    --p;
  }
  return path;
}

/* Each file's shortest trailing part of its path that no other file shares. */
static void qp_val_short_names(qp_val_set *set) {
  for (int i = 0; i < set->n_files; ++i) {
    const char *mine = set->files[i].path;
    for (int k = 1; k <= QP_VAL_SUFFIX_DEPTH; ++k) {
      mine = qp_val_suffix(set->files[i].path, k);
      int unique = 1;
      for (int j = 0; j < set->n_files && unique; ++j)
        if (j != i && strcmp(qp_val_suffix(set->files[j].path, k), mine) == 0) unique = 0;
      if (unique) break;
    }
    set->files[i].short_name = mine;
  }
}

static const char *qp_val_mib_text(int64_t bytes, char *buf, size_t size) {
  if (bytes < 0)
    snprintf(buf, size, "n/a");
  else
    snprintf(buf, size, "%.2f", (double)bytes / qp_val_mib);
  return buf;
}

/* An error in percent: "+1.23", "(+1.23)" when not judged, "n/a" when unknown. */
static const char *qp_val_err_text(double err, int judged, char *buf, size_t size) {
  if (!isfinite(err))
    snprintf(buf, size, "n/a");
  else if (judged)
    snprintf(buf, size, "%+.2f", 100.0 * err);
  else
    snprintf(buf, size, "(%+.2f)", 100.0 * err);
  return buf;
}

static const char *qp_val_verdict(const qp_val_stage *s) {
  if (s->resumed) return "resumed: not judged";
  if (!s->model_has_stage) return "no model";
  if (qp_val_stage_failed(s)) return "FAIL";
  if (s->judge_peak && s->judge_persistent) return "ok";
  if (s->judge_persistent && !s->hwm_reset) return "ok (peak: VmHWM not reset)";
  if (s->judge_peak) return "ok (peak only)";
  return "small: terms only";
}

static int qp_val_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* count, mean, median, min, max of the judged errors of one kind (peak = 1, persistent = 0),
 * restricted to one stage name when `stage` is not NULL. */
static void qp_val_distribution(FILE *out, const qp_val_set *set, int peak, const char *stage,
                                const char *label, double tolerance) {
  double *e = malloc(sizeof *e * (size_t)(set->n_stages ? set->n_stages : 1));
  int n = 0, under = 0, over = 0, within = 0;
  for (int i = 0; e && i < set->n_stages; ++i) {
    const qp_val_stage *s = &set->stages[i];
    if (stage && strcmp(s->name, stage) != 0) continue;
    int judged = peak ? s->judge_peak : s->judge_persistent;
    double err = peak ? s->err_peak : s->err_persistent;
    if (!judged || !isfinite(err)) continue;
    e[n++] = err;
    if (err > 0.01) ++under;
    if (err < -0.01) ++over;
    if (fabs(err) <= tolerance) ++within;
  }
  if (n == 0) {
    fprintf(out, "  %-30s %5d\n", label, 0);
    free(e);
    return;
  }
  qsort(e, (size_t)n, sizeof *e, qp_val_cmp_double);
  double sum = 0;
  for (int i = 0; i < n; ++i)
    sum += e[i];
  double median = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
  fprintf(out, "  %-30s %5d %+8.3f %+8.3f %+8.3f %+8.3f %9d %9d %8d/%d\n", label, n,
          100.0 * sum / n, 100.0 * median, 100.0 * e[0], 100.0 * e[n - 1], under, over, within, n);
  free(e);
}

static void qp_val_print(FILE *out, const qp_val_set *set, double tolerance, int64_t min_bytes) {
  int wf = 4, wp = 9, ws = 5;
  for (int i = 0; i < set->n_files; ++i) {
    if (!set->files[i].read_ok) continue;
    int lf = (int)strlen(set->files[i].short_name), lp = (int)strlen(set->files[i].path_used);
    if (lf > wf) wf = lf;
    if (lp > wp) wp = lp;
  }
  for (int i = 0; i < set->n_stages; ++i) {
    int l = (int)strlen(set->stages[i].name);
    if (l > ws) ws = l;
  }
  int n_read = 0;
  for (int i = 0; i < set->n_files; ++i)
    n_read += set->files[i].read_ok;
  fprintf(out,
          "qmlpipe validate: %d file(s) read of %d, %d stage(s); tolerance %.4g%%, stages "
          "predicted below %.2f MiB not judged\n",
          n_read, set->n_files, set->n_stages, 100.0 * tolerance, (double)min_bytes / qp_val_mib);
  fprintf(out, "  error = (measured - predicted) / measured, measured = RSS above the baseline "
               "(positive: predicted too little)\n\n");
  fprintf(out, "%-*s %-*s %7s %-*s | %10s %10s %8s | %10s %10s %8s | %5s | %s\n", wf, "file", wp,
          "path_used", "n_pix", ws, "stage", "peak pred", "meas MiB", "err %", "kept pred",
          "meas MiB", "err %", "drift", "verdict");
  char a[32], b[32], c[32], d[32], e[32], g[32], np[32];
  for (int i = 0; i < set->n_stages; ++i) {
    const qp_val_stage *s = &set->stages[i];
    const qp_val_file *f = &set->files[s->file];
    if (f->n_pix >= 0)
      snprintf(np, sizeof np, "%" PRId64, f->n_pix);
    else
      snprintf(np, sizeof np, "n/a");
    fprintf(out, "%-*s %-*s %7s %-*s | %10s %10s %8s | %10s %10s %8s | %5d | %s\n", wf,
            f->short_name, wp, f->path_used[0] ? f->path_used : "n/a", np, ws, s->name,
            qp_val_mib_text(s->pred_peak, a, sizeof a), qp_val_mib_text(s->meas_peak, b, sizeof b),
            qp_val_err_text(s->err_peak, s->judge_peak, c, sizeof c),
            qp_val_mib_text(s->pred_persistent, d, sizeof d),
            qp_val_mib_text(s->meas_persistent, e, sizeof e),
            qp_val_err_text(s->err_persistent, s->judge_persistent, g, sizeof g), s->drift,
            qp_val_verdict(s));
  }
  fprintf(out, "  (MiB above the baseline; an error in parentheses is shown but not judged)\n");

  if (set->n_drifts > 0) {
    fprintf(out, "\nterms whose tracked bytes differ from the prediction:\n");
    for (int i = 0; i < set->n_drifts; ++i) {
      const qp_val_drift *dr = &set->drifts[i];
      const qp_val_stage *s = &set->stages[dr->stage];
      fprintf(out,
              "  %s %s %-20s predicted %" PRId64 " B, tracked %" PRId64 " B (%+" PRId64 " B)\n",
              set->files[s->file].short_name, s->name, dr->term, dr->predicted, dr->tracked,
              dr->tracked - dr->predicted);
    }
  }

  /* The distribution, overall and per stage name (in the order the names first appear). */
  fprintf(out, "\nerror distribution over the judged comparisons, in %%:\n");
  fprintf(out, "  %-30s %5s %8s %8s %8s %8s %9s %9s %10s\n", "", "count", "mean", "median", "min",
          "max", "under>1%", "over>1%", "within");
  for (int kind = 1; kind >= 0; --kind) {
    const char *what = kind ? "peak" : "persistent";
    char label[QP_VAL_TEXT_MAX + 16];
    snprintf(label, sizeof label, "%s, all stages", what);
    qp_val_distribution(out, set, kind, NULL, label, tolerance);
    for (int i = 0; i < set->n_stages; ++i) {
      int seen = 0;
      for (int j = 0; j < i && !seen; ++j)
        seen = strcmp(set->stages[j].name, set->stages[i].name) == 0;
      if (seen) continue;
      snprintf(label, sizeof label, "%s, %s", what, set->stages[i].name);
      qp_val_distribution(out, set, kind, set->stages[i].name, label, tolerance);
    }
  }
  fprintf(out,
          "  (under>1%%: predictions below the measurement by more than 1%%; over>1%%: above "
          "it by more than 1%%;\n   within: |error| <= %.4g%%)\n",
          100.0 * tolerance);
}

/* Prints the failures; returns their number (stages). */
static int qp_val_print_failures(FILE *out, const qp_val_set *set, double tolerance) {
  int n_failed = 0, n_judged = 0;
  for (int i = 0; i < set->n_stages; ++i) {
    const qp_val_stage *s = &set->stages[i];
    if (s->judge_peak || s->judge_persistent) ++n_judged;
    if (!qp_val_stage_failed(s)) continue;
    if (n_failed++ == 0) fprintf(out, "\nfailed:\n");
    const char *file = set->files[s->file].short_name;
    if (s->fail_peak) {
      if (isfinite(s->err_peak))
        fprintf(out, "  %s %s: peak error %+.3f%% outside +-%.4g%%\n", file, s->name,
                100.0 * s->err_peak, 100.0 * tolerance);
      else
        fprintf(out, "  %s %s: peak not measured\n", file, s->name);
    }
    if (s->fail_persistent) {
      if (isfinite(s->err_persistent))
        fprintf(out, "  %s %s: persistent error %+.3f%% outside +-%.4g%%\n", file, s->name,
                100.0 * s->err_persistent, 100.0 * tolerance);
      else
        fprintf(out, "  %s %s: persistent not measured\n", file, s->name);
    }
    if (s->model_has_stage && s->drift > 0)
      fprintf(out, "  %s %s: %d term(s) drift from the model\n", file, s->name, s->drift);
  }
  fprintf(out, "\n%d judged stage(s), %d failed\n", n_judged, n_failed);
  if (n_judged == 0 && set->n_stages > 0)
    fprintf(stderr, "qmlpipe validate: warning: no stage was judged (all predicted below "
                    "--min-bytes or unmeasured): only term drift was checked\n");
  return n_failed;
}

/* ---- Slurm's accounting: --sacct FILE, --cgroup-peak BYTES|FILE ----
 *
 * FILE is `sacct -j JOBID --parsable2 --noconvert -o JobID,JobName,State,ExitCode,MaxRSS,
 * MaxRSSTask,MaxRSSNode,NTasks,NNodes,ReqMem` (docs/slurm.md): a header line naming the
 * columns in any order ('|'-separated; JobID, State and MaxRSS required), then one line per
 * job and step. MaxRSS is bytes, or a number with a K/M/G/T suffix (powers of 1024) without
 * --noconvert. The compute step is the numeric step (JOB.0, JOB.1, ...) with the largest
 * MaxRSS: the largest task's RSS of that step, which the per-rank prediction must match. */

enum { QP_SACCT_LINE_MAX = 8192, QP_SACCT_COLS_MAX = 64, QP_SACCT_TEXT = 96 };

typedef struct qp_sacct {
  const char *path;
  char job[QP_SACCT_TEXT];
  int n_rows, n_numeric, line_step;
  char step[QP_SACCT_TEXT], task[QP_SACCT_TEXT], node[QP_SACCT_TEXT];
  int64_t max_rss;         /* of the compute step; -1 unknown */
  int oom;                 /* a row in state OUT_OF_MEMORY */
  char not_completed[512]; /* "JOBID STATE" of the rows not COMPLETED */
} qp_sacct;

/* MaxRSS text to bytes: "" -> -1; "123", "123K", "1.5G". */
static int qp_sacct_bytes(const char *s, int64_t *out) {
  if (!*s) {
    *out = -1;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !isfinite(v) || v < 0) return -1;
  double mult = 1;
  if (*end) {
    const char *units = "KMGTP";
    const char *u = strchr(units, *end);
    if (!u || end[1]) return -1;
    for (const char *k = units; k <= u; ++k)
      mult *= 1024.0;
  }
  *out = (int64_t)llround(v * mult);
  return 0;
}

/* Splits a line at '|' in place; returns the number of fields (at most max). */
static int qp_sacct_split(char *line, char **f, int max) {
  int n = 0;
  f[n++] = line;
  for (char *p = line; *p; ++p)
    if (*p == '|') {
      *p = 0;
      if (n == max) return -1;
      f[n++] = p + 1;
    }
  return n;
}

static int qp_sacct_col(char **f, int n, const char *name) {
  for (int i = 0; i < n; ++i)
    if (strcasecmp(f[i], name) == 0) return i;
  return -1;
}

static qp_err qp_sacct_read(const char *path, qp_sacct *a) {
  memset(a, 0, sizeof *a);
  a->path = path;
  a->max_rss = -1;
  FILE *in = fopen(path, "r");
  QP_CHECK(in, QP_ERR_INPUT, "%s: cannot open the sacct output: %s", path, strerror(errno));
  qp_err err = QP_OK;
  char line[QP_SACCT_LINE_MAX], header[QP_SACCT_LINE_MAX];
  char *h[QP_SACCT_COLS_MAX], *f[QP_SACCT_COLS_MAX];
  int n_cols = 0, c_id = -1, c_state = -1, c_rss = -1, c_task = -1, c_node = -1, lineno = 0,
      trailing = 0;
  while (fgets(line, sizeof line, in)) {
    ++lineno;
    size_t len = strlen(line);
    QP_CHECK_GOTO(len + 1 < sizeof line || feof(in), QP_ERR_INPUT, done,
                  "%s:%d: line longer than %d characters", path, lineno, QP_SACCT_LINE_MAX - 2);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    if (!len) continue;
    if (!n_cols) { /* the header */
      memcpy(header, line, len + 1);
      QP_CHECK_GOTO(strchr(header, '|'), QP_ERR_INPUT, done,
                    "%s:%d: not `sacct --parsable2` output: the header '%.80s' has no '|' "
                    "(collect it with sacct -j JOBID --parsable2 --noconvert -o JobID,State,"
                    "MaxRSS,..., docs/slurm.md)",
                    path, lineno, line);
      trailing = header[len - 1] == '|'; /* --parsable: every line ends in '|' */
      if (trailing) header[--len] = 0;
      n_cols = qp_sacct_split(header, h, QP_SACCT_COLS_MAX);
      QP_CHECK_GOTO(n_cols > 0, QP_ERR_INPUT, done, "%s:%d: more than %d columns", path, lineno,
                    QP_SACCT_COLS_MAX);
      c_id = qp_sacct_col(h, n_cols, "JobID");
      c_state = qp_sacct_col(h, n_cols, "State");
      c_rss = qp_sacct_col(h, n_cols, "MaxRSS");
      c_task = qp_sacct_col(h, n_cols, "MaxRSSTask");
      c_node = qp_sacct_col(h, n_cols, "MaxRSSNode");
      QP_CHECK_GOTO(c_id >= 0 && c_state >= 0 && c_rss >= 0, QP_ERR_INPUT, done,
                    "%s:%d: the header lacks the column%s%s%s (sacct -o JobID,State,MaxRSS,...; "
                    "and no -n/--noheader)",
                    path, lineno, c_id < 0 ? " JobID" : "", c_state < 0 ? " State" : "",
                    c_rss < 0 ? " MaxRSS" : "");
      continue;
    }
    if (trailing && line[len - 1] == '|') line[--len] = 0;
    int n = qp_sacct_split(line, f, QP_SACCT_COLS_MAX);
    QP_CHECK_GOTO(n == n_cols, QP_ERR_INPUT, done,
                  "%s:%d: %d field(s), the header has %d (not --parsable2 output, or cut off)",
                  path, lineno, n, n_cols);
    const char *id = f[c_id], *state = f[c_state];
    QP_CHECK_GOTO(*id, QP_ERR_INPUT, done, "%s:%d: empty JobID", path, lineno);
    const char *dot = strchr(id, '.');
    size_t job_len = dot ? (size_t)(dot - id) : strlen(id);
    if (!a->job[0])
      snprintf(a->job, sizeof a->job, "%.*s", (int)job_len, id);
    else
      QP_CHECK_GOTO(strlen(a->job) == job_len && strncmp(a->job, id, job_len) == 0, QP_ERR_INPUT,
                    done,
                    "%s:%d: job %.*s beside job %s: give the output of sacct -j JOBID for one job",
                    path, lineno, (int)job_len, id, a->job);
    int64_t rss = -1;
    QP_CHECK_GOTO(qp_sacct_bytes(f[c_rss], &rss) == 0, QP_ERR_INPUT, done,
                  "%s:%d: MaxRSS '%s' of %s is not a size (bytes, or a number with K, M, G, T)",
                  path, lineno, f[c_rss], id);
    ++a->n_rows;
    if (strncmp(state, "COMPLETED", 9) != 0) {
      if (strncmp(state, "OUT_OF_ME", 9) == 0) a->oom = 1;
      size_t used = strlen(a->not_completed);
      snprintf(a->not_completed + used, sizeof a->not_completed - used, "%s%s %s", used ? ", " : "",
               id, state);
    }
    int numeric = dot && dot[1];
    for (const char *p = dot ? dot + 1 : ""; numeric && *p; ++p)
      numeric = *p >= '0' && *p <= '9';
    if (!numeric) continue;
    ++a->n_numeric;
    if (a->line_step && rss <= a->max_rss) continue;
    a->line_step = lineno;
    a->max_rss = rss;
    snprintf(a->step, sizeof a->step, "%s", id);
    snprintf(a->task, sizeof a->task, "%s", c_task >= 0 ? f[c_task] : "");
    snprintf(a->node, sizeof a->node, "%s", c_node >= 0 ? f[c_node] : "");
  }
  QP_CHECK_GOTO(!ferror(in), QP_ERR_INPUT, done, "%s: read error", path);
  QP_CHECK_GOTO(n_cols, QP_ERR_INPUT, done, "%s: empty: no sacct header line", path);
  QP_CHECK_GOTO(a->n_rows, QP_ERR_INPUT, done, "%s: a header and no job line (wrong job id?)",
                path);
done:
  fclose(in);
  return err;
}

/* --cgroup-peak: a size, or a file of "job step bytes" lines (the fixture's TaskEpilog); the
 * largest bytes. */
static qp_err qp_cgroup_peak_read(const char *arg, int64_t *peak) {
  double v = 0;
  if (qp_parse_bytes(arg, &v) == QP_OK) {
    *peak = (int64_t)v;
    return QP_OK;
  }
  qp_error_clear();
  FILE *in = fopen(arg, "r");
  QP_CHECK(in, QP_ERR_INPUT, "--cgroup-peak '%s': neither a size nor a readable file (%s)", arg,
           strerror(errno));
  qp_err err = QP_OK;
  char line[512];
  int lineno = 0;
  *peak = -1;
  while (fgets(line, sizeof line, in)) {
    ++lineno;
    char *tok[4] = {0};
    int n = 0;
    for (char *s = strtok(line, " \t\r\n"); s && n < 4; s = strtok(NULL, " \t\r\n"))
      tok[n++] = s;
    if (n == 0) continue;
    int64_t b = -1;
    QP_CHECK_GOTO(qp_sacct_bytes(tok[n - 1], &b) == 0 && b >= 0, QP_ERR_INPUT, done,
                  "%s:%d: expected 'job step bytes' (or bytes), got '%s'", arg, lineno, tok[n - 1]);
    if (b > *peak) *peak = b;
  }
  QP_CHECK_GOTO(*peak >= 0, QP_ERR_INPUT, done, "%s: no cgroup peak in it", arg);
done:
  fclose(in);
  return err;
}

/* The per-rank and per-node predictions of a results file: stage peak + the model's overhead
 * + library buffers, the largest over stages (and ranks); per node, the ranks of a node
 * summed per stage, the largest over stages and nodes (as `qmlpipe plan`). */
static qp_err qp_sacct_predict(const qp_val_set *set, int file, int64_t *rank_pred,
                               int64_t *node_pred, int *n_ranks, int *per_node) {
  static const char *const order[] = {"covariance_setup", "basis_setup", "fisher_run",
                                      "spectra_run"};
  qp_err err = QP_OK;
  const char *path = set->files[file].path;
  hid_t h5 = -1, budget = -1, ranks = -1, dset = -1, space = -1;
  double *v = NULL;
  int64_t overhead = 0;
  QP_CALL(qp_h5_open_budget(path, &h5, &budget));
  char where[QP_VAL_WHERE_MAX];
  snprintf(where, sizeof where, "%s: /budget", path);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "overhead_predicted_bytes", 1, &overhead), done);
  int64_t lib[4] = {0, 0, 0, 0}, best = 0;
  for (int i = 0; i < set->n_stages; ++i) {
    const qp_val_stage *s = &set->stages[i];
    if (s->file != file) continue;
    if (s->pred_peak + overhead > best) best = s->pred_peak + overhead;
    for (int k = 0; k < 4; ++k)
      if (strcmp(s->name, order[k]) == 0) lib[k] = s->library;
  }
  *rank_pred = *node_pred = best;
  *n_ranks = *per_node = 1;
  htri_t has = H5Lexists(budget, "ranks", H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s/ranks", where);
  if (!has) goto done;
  snprintf(where, sizeof where, "%s: /budget/ranks", path);
  QP_H5_GOTO(ranks = H5Gopen2(budget, "ranks", H5P_DEFAULT), done, "%s", where);
  int64_t nr = 0, rpn = 0;
  QP_CALL_GOTO(qp_h5_attr_i64(ranks, where, "n_ranks", 1, &nr), done);
  QP_CALL_GOTO(qp_h5_attr_i64(ranks, where, "ranks_per_node", 1, &rpn), done);
  QP_H5_GOTO(dset = H5Dopen2(ranks, "predicted_peak_bytes", H5P_DEFAULT), done,
             "%s/predicted_peak_bytes", where);
  QP_H5_GOTO(space = H5Dget_space(dset), done, "%s/predicted_peak_bytes", where);
  hsize_t dims[2] = {0, 0};
  QP_CHECK_GOTO(H5Sget_simple_extent_ndims(space) == 2, QP_ERR_INPUT, done,
                "%s/predicted_peak_bytes: not [rank][stage]", where);
  H5Sget_simple_extent_dims(space, dims, NULL);
  QP_CHECK_GOTO(nr > 0 && dims[0] == (hsize_t)nr && dims[1] >= 1 && dims[1] <= 4 && rpn > 0,
                QP_ERR_INPUT, done, "%s/predicted_peak_bytes: %llu x %llu for %lld rank(s)", where,
                (unsigned long long)dims[0], (unsigned long long)dims[1], (long long)nr);
  v = malloc(sizeof *v * (size_t)(dims[0] * dims[1]));
  QP_CHECK_GOTO(v, QP_ERR_NOMEM, done, "%s", where);
  QP_H5_GOTO(H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), done,
             "%s/predicted_peak_bytes", where);
  int64_t rank_max = 0, node_max = 0, node[4] = {0, 0, 0, 0};
  for (hsize_t r = 0; r < dims[0]; ++r) {
    for (hsize_t st = 0; st < dims[1]; ++st) {
      int64_t peak = (int64_t)v[r * dims[1] + st] + overhead + lib[st];
      if (peak > rank_max) rank_max = peak;
      node[st] += peak;
    }
    if ((int64_t)(r + 1) % rpn == 0 || r + 1 == dims[0])
      for (hsize_t st = 0; st < dims[1]; ++st) {
        if (node[st] > node_max) node_max = node[st];
        node[st] = 0;
      }
  }
  *rank_pred = rank_max;
  *node_pred = node_max;
  *n_ranks = (int)nr;
  *per_node = (int)rpn;
done:
  free(v);
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  if (ranks >= 0) H5Gclose(ranks);
  if (budget >= 0) H5Gclose(budget);
  if (h5 >= 0) H5Fclose(h5);
  return err;
}

/* Prints the job table; returns the number of failed comparisons (the job's state counts as
 * one when it is OUT_OF_MEMORY). */
static int qp_sacct_print(FILE *out, const qp_sacct *a, const char *cgroup_arg, int64_t cgroup_peak,
                          int64_t rank_pred, int64_t node_pred, int n_ranks, int per_node,
                          double tolerance) {
  char p[32], m[32];
  int failed = 0;
  fprintf(out,
          "\njob %s (Slurm accounting %s): %d rank(s), %d per node; predicted = stage peak + "
          "overhead (+ library buffers), per node the ranks of a node summed\n",
          a->job, a->path, n_ranks, per_node);
  fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "peak", "measured", "pred MiB", "meas MiB",
          "err %", "verdict");
  char what[512];
  snprintf(what, sizeof what, "sacct MaxRSS of step %s%s%s%s%s", a->step,
           a->task[0] ? " (task " : "", a->task, a->node[0] ? ", " : "", a->node);
  if (a->task[0]) strncat(what, ")", sizeof what - strlen(what) - 1);
  double e = qp_val_rel_error(a->max_rss, rank_pred);
  int bad = qp_val_outside(e, tolerance);
  failed += bad;
  char et[32];
  fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "rank", what,
          qp_val_mib_text(rank_pred, p, sizeof p), qp_val_mib_text(a->max_rss, m, sizeof m),
          qp_val_err_text(e, 1, et, sizeof et), bad ? "FAIL" : "ok");
  if (cgroup_arg) {
    snprintf(what, sizeof what, "job cgroup peak (%s)", cgroup_arg);
    e = qp_val_rel_error(cgroup_peak, node_pred);
    bad = qp_val_outside(e, tolerance);
    failed += bad;
    fprintf(out, "  %-10s %-52.52s | %10s %10s %8s | %s\n", "node", what,
            qp_val_mib_text(node_pred, p, sizeof p), qp_val_mib_text(cgroup_peak, m, sizeof m),
            qp_val_err_text(e, 1, et, sizeof et), bad ? "FAIL" : "ok");
  } else {
    fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "node", "(no --cgroup-peak: not compared)",
            qp_val_mib_text(node_pred, p, sizeof p), "n/a", "n/a", "-");
  }
  if (a->not_completed[0])
    fprintf(out, "  not COMPLETED: %s\n", a->not_completed);
  else
    fprintf(out, "  every step COMPLETED (%d line(s))\n", a->n_rows);
  if (a->oom) ++failed;
  return failed;
}

/* ---- the command ---- */

int qp_cmd_validate(int argc, char **argv) {
  double tolerance = 0.02, min_bytes = 16.0 * qp_val_mib;
  qp_val_set set = {0};
  set.files = calloc((size_t)(argc > 1 ? argc : 1), sizeof *set.files);
  /* Results paths resolved from configs (qmlpipe validate CONFIG.yaml). */
  char(*resolved)[QP_PATH_MAX] = calloc((size_t)(argc > 1 ? argc : 1), sizeof *resolved);
  if (!set.files || !resolved) {
    free(resolved);
    fprintf(stderr, "qmlpipe validate: no memory\n");
    return qp_err_exit_status(QP_ERR_NOMEM);
  }
  int usage_error = 0, options_done = 0;
  const char *sacct_path = NULL, *cgroup_arg = NULL;
  for (int i = 1; i < argc && !usage_error; ++i) {
    const char *arg = argv[i];
    if (!options_done && arg[0] == '-' && arg[1]) {
      if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        qp_validate_usage(stdout);
        free(set.files);
        free(resolved);
        return 0;
      }
      if (strcmp(arg, "--") == 0) {
        options_done = 1;
        continue;
      }
      int is_tol = strcmp(arg, "--tolerance") == 0, is_min = strcmp(arg, "--min-bytes") == 0;
      int is_sacct = strcmp(arg, "--sacct") == 0, is_cg = strcmp(arg, "--cgroup-peak") == 0;
      if ((is_sacct || is_cg) && i + 1 < argc) {
        if (is_sacct)
          sacct_path = argv[++i];
        else
          cgroup_arg = argv[++i];
        continue;
      }
      if (!is_tol && !is_min && !is_sacct && !is_cg) {
        fprintf(stderr, "qmlpipe validate: unknown option '%s'\n", arg);
        usage_error = 1;
      } else if (i + 1 >= argc) {
        fprintf(stderr, "qmlpipe validate: %s needs a value\n", arg);
        usage_error = 1;
      } else if (is_tol) {
        const char *val = argv[++i];
        char *end = NULL;
        errno = 0;
        tolerance = strtod(val, &end);
        if (errno || end == val || *end || !isfinite(tolerance) || tolerance < 0) {
          fprintf(stderr,
                  "qmlpipe validate: --tolerance expects a fraction >= 0 (e.g. 0.02), got "
                  "'%s'\n",
                  val);
          usage_error = 1;
        }
      } else {
        const char *val = argv[++i];
        if (qp_parse_bytes(val, &min_bytes) != QP_OK) {
          fprintf(stderr, "qmlpipe validate: --min-bytes: %s\n", qp_error_message());
          qp_error_clear();
          usage_error = 1;
        }
      }
      continue;
    }
    /* A config stands for its results file; one that cannot be resolved stops here (the
     * message names the config and the results file it names). */
    set.files[set.n_files].path = arg;
    if (qp_results_arg_is_config(arg)) {
      qp_err err = qp_results_path_resolve(arg, resolved[set.n_files]);
      if (err != QP_OK) {
        qp_error_print(stderr, 0);
        free(set.files);
        free(resolved);
        return qp_err_exit_status(err);
      }
      set.files[set.n_files].path = resolved[set.n_files];
    }
    ++set.n_files;
  }
  if (!usage_error && set.n_files == 0) {
    fprintf(stderr, "qmlpipe validate: no results file given\n");
    usage_error = 1;
  }
  if (!usage_error && (sacct_path || cgroup_arg) && set.n_files != 1) {
    fprintf(stderr,
            "qmlpipe validate: --sacct and --cgroup-peak need exactly one results file "
            "(the job's), got %d\n",
            set.n_files);
    usage_error = 1;
  }
  if (!usage_error && cgroup_arg && !sacct_path) {
    fprintf(stderr, "qmlpipe validate: --cgroup-peak needs --sacct\n");
    usage_error = 1;
  }
  if (usage_error) {
    qp_validate_usage(stderr);
    free(set.files);
    free(resolved);
    return 2;
  }

  /* Every file is read, and an unreadable one reported, before the table is printed. */
  qp_h5_quiet q;
  qp_h5_quiet_begin(&q);
  qp_err io_err = QP_OK;
  for (int i = 0; i < set.n_files; ++i) {
    set.files[i].n_pix = -1;
    set.files[i].baseline = -1;
    const int n_stages = set.n_stages, n_drifts = set.n_drifts;
    qp_err err = qp_val_read_file(&set, i);
    if (err != QP_OK) { /* none of its stages is shown */
      set.n_stages = n_stages;
      set.n_drifts = n_drifts;
      qp_error_print(stderr, 0);
      qp_error_clear();
      if (io_err == QP_OK || err == QP_ERR_IO) io_err = err;
    }
  }
  qp_h5_quiet_end(&q);

  qp_val_short_names(&set);
  qp_val_judge(&set, tolerance, (int64_t)min_bytes);
  qp_val_print(stdout, &set, tolerance, (int64_t)min_bytes);
  int n_failed = qp_val_print_failures(stdout, &set, tolerance);

  /* Slurm's accounting of the job: malformed, stepless or unfinished -> QP_ERR_INPUT. */
  qp_err job_err = QP_OK;
  int job_failed = 0;
  if (sacct_path && io_err == QP_OK) {
    qp_sacct acct;
    int64_t cg = -1, rank_pred = 0, node_pred = 0;
    int n_ranks = 1, per_node = 1;
    job_err = qp_sacct_read(sacct_path, &acct);
    if (job_err == QP_OK && cgroup_arg) job_err = qp_cgroup_peak_read(cgroup_arg, &cg);
    if (job_err == QP_OK)
      job_err = qp_sacct_predict(&set, 0, &rank_pred, &node_pred, &n_ranks, &per_node);
    if (job_err == QP_OK) {
      job_failed = qp_sacct_print(stdout, &acct, cgroup_arg, cg, rank_pred, node_pred, n_ranks,
                                  per_node, tolerance);
      if (!acct.n_numeric) {
        job_err = QP_ERR_INPUT;
        qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                     "%s: job %s has no srun step (%s.0, ...): the MaxRSS of qmlpipe's ranks is "
                     "in its srun step (the generated scripts run qmlpipe with srun)",
                     sacct_path, acct.job, acct.job);
      } else if (acct.max_rss < 0) {
        job_err = QP_ERR_INPUT;
        qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                     "%s:%d: step %s has no MaxRSS (accounting not gathered: "
                     "JobAcctGatherType, or the step ended before the first sample)",
                     sacct_path, acct.line_step, acct.step);
      } else if (acct.not_completed[0] && !acct.oom) {
        job_err = QP_ERR_INPUT;
        qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                     "%s: job %s did not complete (%s): its peaks validate nothing", sacct_path,
                     acct.job, acct.not_completed);
      } else if (acct.oom) {
        qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__,
                     "%s: job %s ran out of memory (%s)", sacct_path, acct.job, acct.not_completed);
        qp_error_print(stderr, 0);
        qp_error_clear();
      }
    }
    if (job_err != QP_OK) {
      qp_error_print(stderr, 0);
      qp_error_clear();
    }
    fprintf(stdout, "%d job comparison(s) failed\n", job_failed);
  }
  fflush(stdout);

  int status = 0;
  if (io_err != QP_OK) {
    int n_bad = 0;
    for (int i = 0; i < set.n_files; ++i)
      n_bad += !set.files[i].read_ok;
    fprintf(stderr, "qmlpipe validate: %d of %d file(s) could not be read (see above)\n", n_bad,
            set.n_files);
    status = qp_err_exit_status(io_err);
  } else if (job_err != QP_OK) {
    status = qp_err_exit_status(job_err);
  } else if (n_failed > 0 || job_failed > 0) {
    qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__,
                 "memory validation failed: %d stage(s) outside the tolerance %.4g%% or with "
                 "term drift, %d job comparison(s) failed (listed on stdout)",
                 n_failed, 100.0 * tolerance, job_failed);
    qp_error_print(stderr, 0);
    qp_error_clear();
    status = qp_err_exit_status(QP_ERR_BUDGET);
  }
  free(set.drifts);
  free(set.stages);
  free(set.files);
  free(resolved);
  return status;
}
