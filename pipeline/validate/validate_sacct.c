/* validate_sacct.c: `qmlpipe validate RESULTS --sacct FILE [--cgroup-peak ...]`: the memory
 * model against Slurm's accounting of the job (validate_sacct.h).
 *
 * FILE is `sacct -j JOBID --parsable2 --noconvert -o JobID,JobName,State,ExitCode,MaxRSS,
 * MaxRSSTask,MaxRSSNode,NTasks,NNodes,ReqMem` (docs/slurm.md): a header line naming the
 * columns in any order ('|'-separated; JobID, State and MaxRSS required), then one line per
 * job and step. MaxRSS is bytes, or a number with a K/M/G/T suffix (powers of 1024) without
 * --noconvert. The compute step is the numeric step (JOB.0, JOB.1, ...) with the largest
 * MaxRSS: the largest task's RSS of that step, which the per-rank prediction must match. */

#include "validate_sacct.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "h5_attr.h"
#include "report_open.h"
#include "h5_error.h"
#include "input_file.h"
#include "qp_error.h"
#include "report_ranks.h"
#include "validate_figures.h"

enum {
  QP_SACCT_LINE_MAX = 8192,
  QP_SACCT_COLS_MAX = 64,
  QP_SACCT_TEXT = 96,
  QP_SACCT_WHERE_MAX = 4096 + 320
};

/* A results file's predictions in sacct's terms (qp_sacct_predict). */
typedef struct qp_sacct_prediction {
  int64_t rank, node; /* largest rank's and node's predicted peak, bytes */
  int64_t shared;     /* the shared baseline pages taken off the rank's figure */
  int shared_known;   /* the file records them (baseline_rss_shared_bytes) */
  int n_ranks, per_node;
} qp_sacct_prediction;

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
  /* A regular text file only (input_file.h): /dev/zero would feed the loop below forever. */
  FILE *in = NULL;
  QP_CALL(qp_input_fopen("sacct file (--sacct)", path, QP_INPUT_TEXT_MAX_BYTES, &in));
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
  FILE *in = NULL;
  qp_err err = qp_input_fopen("--cgroup-peak file", arg, QP_INPUT_TEXT_MAX_BYTES, &in);
  /* Not a size either: say both, since '12XB' is more likely a size mistyped than a file. */
  QP_CHECK(err == QP_OK, err, "--cgroup-peak '%s' is not a size, and not a file to read: %s", arg,
           qp_error_message());
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

/* The predicted peaks (tracked bytes, library buffers included) and library buffers of the
 * four stages, as `qmlpipe validate` read them from the file (validate_read.c); 0 for a stage
 * the run does not have. */
static void qp_sacct_stage_peaks(const qp_val_set *set, const char *const order[4],
                                 int64_t peak[4], int64_t library[4]) {
  for (int k = 0; k < 4; ++k) {
    peak[k] = library[k] = 0;
    for (int i = 0; i < set->n_stages; ++i) {
      const qp_val_stage *s = &set->stages[i];
      if (s->file != 0 || strcmp(s->name, order[k]) != 0) continue;
      peak[k] = s->pred_peak;
      library[k] = s->library;
    }
  }
}

/* The per-rank and per-node predictions of a results file in the terms of Slurm's accounting:
 * stage peak + the model's overhead + library buffers, the largest over stages (and ranks);
 * per node, the ranks of a node summed per stage, the largest over stages and nodes (as
 * `qmlpipe plan`). With jobacct_gather/cgroup (gather_anon) MaxRSS counts anonymous memory
 * only, so the file-backed and shared pages of each rank's baseline (libraries, MPI's
 * shared-memory segments: /budget baseline_rss_shared_bytes, measured after the warm-up)
 * come off the rank's figure. The node's cgroup peak counts them, but once for all the ranks
 * of the node, which map the same library files and MPI segments. */
static qp_err qp_sacct_predict(const char *path, const qp_val_set *set, int gather_anon,
                               qp_sacct_prediction *out) {
  static const char *const order[4] = {"covariance_setup", "basis_setup", "fisher_run",
                                       "spectra_run"};
  qp_err err = QP_OK;
  hid_t h5 = -1, budget = -1, ranks = -1;
  double *v = NULL;
  int64_t overhead = 0, shared = -1;
  memset(out, 0, sizeof *out);
  QP_CALL(qp_report_open(path, &h5, &budget));
  char where[QP_SACCT_WHERE_MAX];
  snprintf(where, sizeof where, "%s: /budget", path);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "overhead_predicted_bytes", 1, &overhead), done);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "baseline_rss_shared_bytes", 0, &shared), done);
  int64_t peak[4], lib[4], best = 0;
  qp_sacct_stage_peaks(set, order, peak, lib);
  for (int k = 0; k < 4; ++k)
    if (peak[k] + overhead > best) best = peak[k] + overhead;
  out->shared = gather_anon && shared > 0 ? shared : 0;
  out->shared_known = shared >= 0;
  out->rank = best - out->shared;
  out->node = best;
  out->n_ranks = out->per_node = 1;
  htri_t has = H5Lexists(budget, "ranks", H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s/ranks", where);
  if (!has) goto done;
  snprintf(where, sizeof where, "%s: /budget/ranks", path);
  QP_H5_GOTO(ranks = H5Gopen2(budget, "ranks", H5P_DEFAULT), done, "%s", where);
  int64_t nr = 0, rpn = 0;
  QP_CALL_GOTO(qp_h5_attr_i64(ranks, where, "n_ranks", 1, &nr), done);
  QP_CALL_GOTO(qp_h5_attr_i64(ranks, where, "ranks_per_node", 1, &rpn), done);
  QP_CHECK_GOTO(nr > 0 && nr <= (1 << 24) && rpn > 0, QP_ERR_INPUT, done,
                "%s: n_ranks %lld, ranks_per_node %lld", where, (long long)nr, (long long)rpn);
  const hsize_t n_st = 4, count = (hsize_t)nr * n_st;
  v = malloc(sizeof *v * (size_t)(count + (hsize_t)nr));
  QP_CHECK_GOTO(v, QP_ERR_NOMEM, done, "%s", where);
  double *rank_shared = v + count;
  int found = 0;
  QP_CALL_GOTO(qp_rank_field_read(ranks, where, "predicted_peak_bytes", v, (long long)count,
                                  QP_ERR_INPUT, NULL),
               done);
  QP_CALL_GOTO(qp_rank_field_read(ranks, where, "baseline_rss_shared_bytes", rank_shared, nr,
                                  QP_OK, &found),
               done);
  out->shared_known = found;
  /* Per node: the ranks' peaks less their shared pages, plus the largest rank's shared pages
   * once (the ranks of a node map the same library files and MPI segments). */
  int64_t rank_max = 0, node_max = 0, node[4] = {0, 0, 0, 0}, shared_max = 0, node_shared = 0;
  for (hsize_t r = 0; r < (hsize_t)nr; ++r) {
    const int64_t mine = found && rank_shared[r] > 0 ? (int64_t)rank_shared[r] : 0;
    const int64_t off = gather_anon ? mine : 0;
    if (mine > node_shared) node_shared = mine;
    for (hsize_t st = 0; st < n_st; ++st) {
      int64_t peak = (int64_t)v[r * n_st + st] + overhead + lib[st];
      if (peak - off > rank_max) {
        rank_max = peak - off;
        shared_max = off;
      }
      node[st] += peak - mine;
    }
    if ((int64_t)(r + 1) % rpn == 0 || r + 1 == (hsize_t)nr) {
      for (hsize_t st = 0; st < n_st; ++st) {
        if (node[st] + node_shared > node_max) node_max = node[st] + node_shared;
        node[st] = 0;
      }
      node_shared = 0;
    }
  }
  out->rank = rank_max;
  out->shared = shared_max;
  out->node = node_max;
  out->n_ranks = (int)nr;
  out->per_node = (int)rpn;
done:
  free(v);
  if (ranks >= 0) H5Gclose(ranks);
  if (budget >= 0) H5Gclose(budget);
  if (h5 >= 0) H5Fclose(h5);
  return err;
}

/* Prints the job table; returns the number of failed comparisons (the job's state counts as
 * one when it is OUT_OF_MEMORY). */
static int qp_sacct_print(FILE *out, const qp_sacct *a, const char *cgroup_arg, int64_t cgroup_peak,
                          const qp_sacct_prediction *pred, int gather_anon, double tolerance) {
  char p[32], m[32], et[32], what[512];
  int failed = 0;
  fprintf(out,
          "\njob %s (Slurm accounting %s): %d rank(s), %d per node; predicted = stage peak + "
          "overhead (+ library buffers), per node the ranks of a node summed with their shared "
          "pages once\n",
          a->job, a->path, pred->n_ranks, pred->per_node);
  if (gather_anon && pred->shared_known)
    fprintf(out,
            "  MaxRSS as jobacct_gather/cgroup counts it (anonymous memory): the rank's "
            "prediction less its baseline's file-backed and shared pages, %s MiB\n",
            qp_val_mib_text(pred->shared, p, sizeof p));
  else if (gather_anon)
    fprintf(out, "  (this results file does not record its baseline's shared pages: the rank's "
                 "prediction includes them)\n");
  else
    fprintf(out, "  MaxRSS as jobacct_gather/linux counts it (the tasks' RSS)\n");
  fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "peak", "measured", "pred MiB", "meas MiB",
          "err %", "verdict");
  snprintf(what, sizeof what, "sacct MaxRSS of step %s%s%s%s%s", a->step,
           a->task[0] ? " (task " : "", a->task, a->node[0] ? ", " : "", a->node);
  if (a->task[0]) strncat(what, ")", sizeof what - strlen(what) - 1);
  double e = qp_val_rel_error(a->max_rss, pred->rank);
  int bad = qp_val_outside(e, tolerance);
  failed += bad;
  fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "rank", what,
          qp_val_mib_text(pred->rank, p, sizeof p), qp_val_mib_text(a->max_rss, m, sizeof m),
          qp_val_err_text(e, 1, et, sizeof et), bad ? "FAIL" : "ok");
  if (cgroup_arg) {
    snprintf(what, sizeof what, "job cgroup peak (%s)", cgroup_arg);
    e = qp_val_rel_error(cgroup_peak, pred->node);
    bad = qp_val_outside(e, tolerance);
    failed += bad;
    fprintf(out, "  %-10s %-52.52s | %10s %10s %8s | %s\n", "node", what,
            qp_val_mib_text(pred->node, p, sizeof p), qp_val_mib_text(cgroup_peak, m, sizeof m),
            qp_val_err_text(e, 1, et, sizeof et), bad ? "FAIL" : "ok");
  } else {
    fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "node", "(no --cgroup-peak: not compared)",
            qp_val_mib_text(pred->node, p, sizeof p), "n/a", "n/a", "-");
  }
  if (a->not_completed[0])
    fprintf(out, "  not COMPLETED: %s\n", a->not_completed);
  else
    fprintf(out, "  every step COMPLETED (%d line(s))\n", a->n_rows);
  if (a->oom) ++failed;
  return failed;
}

qp_err qp_validate_sacct(const qp_sacct_request *req, FILE *out, int *n_failed) {
  qp_sacct acct;
  qp_sacct_prediction pred;
  int64_t cg = -1;
  *n_failed = 0;
  const int anon = !req->gather_linux;
  QP_CALL(qp_sacct_read(req->sacct, &acct));
  if (req->cgroup) QP_CALL(qp_cgroup_peak_read(req->cgroup, &cg));
  QP_CALL(qp_sacct_predict(req->results, req->set, anon, &pred));
  *n_failed = qp_sacct_print(out, &acct, req->cgroup, cg, &pred, anon, req->tolerance);
  QP_CHECK(acct.n_numeric, QP_ERR_INPUT,
           "%s: job %s has no srun step (%s.0, ...): the MaxRSS of qmlpipe's ranks is in its "
           "srun step (the generated scripts run qmlpipe with srun)",
           req->sacct, acct.job, acct.job);
  QP_CHECK(acct.max_rss >= 0, QP_ERR_INPUT,
           "%s:%d: step %s has no MaxRSS (accounting not gathered: JobAcctGatherType, or the "
           "step ended before the first sample)",
           req->sacct, acct.line_step, acct.step);
  QP_CHECK(!acct.not_completed[0] || acct.oom, QP_ERR_INPUT,
           "%s: job %s did not complete (%s): its peaks validate nothing", req->sacct, acct.job,
           acct.not_completed);
  if (acct.oom) { /* a failed comparison (counted), said on stderr */
    qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__, "%s: job %s ran out of memory (%s)",
                 req->sacct, acct.job, acct.not_completed);
    qp_error_print(stderr, 0);
    qp_error_clear();
  }
  return QP_OK;
}
