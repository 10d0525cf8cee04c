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
#include "validate_figures.h"
#include "validate_sacct.h"

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
          "  the tracked bytes equal the predicted ones (drift). Prints a table, the error\n"
          "  distribution over the judged stages and which stage of which file failed.\n"
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
          "  --sacct-gather cgroup|linux  Slurm's JobAcctGatherType (scontrol show config):\n"
          "                  cgroup (default) counts a task's anonymous memory in MaxRSS, so\n"
          "                  the rank's prediction drops its baseline's file-backed and shared\n"
          "                  pages (/budget baseline_rss_shared_bytes); linux counts its RSS\n"
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
  for (hssize_t i = 0; i < n; ++i) {
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



static void qp_val_judge(qp_val_set *set, double tolerance, int64_t min_bytes) {
  for (int i = 0; i < set->n_stages; ++i) {
    qp_val_stage *s = &set->stages[i];
    s->err_peak = qp_val_rel_error(s->meas_peak, s->pred_peak);
    s->err_persistent = qp_val_rel_error(s->meas_persistent, s->pred_persistent);
    const int big = s->model_has_stage && s->pred_peak >= min_bytes;
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



static const char *qp_val_verdict(const qp_val_stage *s) {
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
  int gather_linux = 0; /* --sacct-gather linux */
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
      if (strcmp(arg, "--sacct-gather") == 0 && i + 1 < argc) {
        const char *val = argv[++i];
        gather_linux = strcmp(val, "linux") == 0;
        if (!gather_linux && strcmp(val, "cgroup") != 0) {
          fprintf(stderr,
                  "qmlpipe validate: --sacct-gather expects cgroup or linux (Slurm's "
                  "JobAcctGatherType), got '%s'\n",
                  val);
          usage_error = 1;
        }
        continue;
      }
      if ((is_sacct || is_cg) && i + 1 < argc) {
        if (is_sacct)
          sacct_path = argv[++i];
        else
          cgroup_arg = argv[++i];
        continue;
      }
      if (!is_tol && !is_min && !is_sacct && !is_cg && strcmp(arg, "--sacct-gather") != 0) {
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
    const qp_sacct_request request = {set.files[0].path, sacct_path, cgroup_arg, gather_linux,
                                      tolerance};
    job_err = qp_validate_sacct(&request, stdout, &job_failed);
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
