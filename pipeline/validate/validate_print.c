/* validate_print.c: `qmlpipe validate` judging and printing (validate_set.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate_figures.h"
#include "validate_set.h"



void qp_val_judge(qp_val_set *set, double tolerance, int64_t min_bytes) {
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

int qp_val_stage_failed(const qp_val_stage *s) {
  return s->fail_peak || s->fail_persistent || (s->model_has_stage && s->drift > 0);
}

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
void qp_val_short_names(qp_val_set *set) {
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

void qp_val_print(FILE *out, const qp_val_set *set, double tolerance, int64_t min_bytes) {
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
          n_read, set->n_files, set->n_stages, 100.0 * tolerance, (double)min_bytes / 1048576.0);
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
  /* Device runs: the context the plan reserved beside the device meter's baseline (shown, not
   * judged: the default on cuda is an upper bound until a GPU measures it, docs/gpu.md). */
  for (int i = 0; i < set->n_files; ++i) {
    const qp_val_file *f = &set->files[i];
    if (!f->read_ok || f->context_predicted < 0) continue;
    char measured[32] = "-";
    if (f->context_measured >= 0)
      snprintf(measured, sizeof measured, "%.2f MiB", (double)f->context_measured / 1048576.0);
    fprintf(out, "%s: device context predicted %.2f MiB, measured %s (device meter baseline)\n",
            f->short_name, (double)f->context_predicted / 1048576.0, measured);
  }
}

/* Prints the failures; returns their number (stages). */
int qp_val_print_failures(FILE *out, const qp_val_set *set, double tolerance) {
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
