/* validate_sacct.c: `qmlpipe validate RESULTS --sacct FILE [--cgroup-peak ...]`: the memory
 * model against Slurm's accounting of the job (validate_sacct.h).
 *
 * FILE is `sacct -j JOBID --parsable2 --noconvert -o JobID,JobName,State,ExitCode,MaxRSS,
 * MaxRSSTask,MaxRSSNode,NTasks,NNodes,ReqMem` (docs/slurm.md): a header line naming the
 * columns in any order ('|'-separated; JobID, State and MaxRSS required), then one line per
 * job and step. MaxRSS is bytes, or a number with a K/M/G/T suffix (powers of 1024) without
 * --noconvert. The compute step is the numeric step (JOB.0, JOB.1, ...) with the largest
 * MaxRSS: the largest task's RSS of that step, which the per-rank prediction must match.
 * Optional columns TRESUsageInMin and TRESUsageInMinNode (their `mem=` entries): the step's
 * smallest task and its node, where jobacct_gather/cgroup's undercount shows as mem=0. */

#include "validate_sacct.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "input_file.h"
#include "qp_error.h"
#include "report_open.h"
#include "report_ranks.h"
#include "validate_figures.h"
#include "validate_placement.h"

enum {
  QP_SACCT_LINE_MAX = 8192,
  QP_SACCT_COLS_MAX = 64,
  QP_SACCT_TEXT = 96,
  QP_SACCT_WHERE_MAX = 4096 + 320
};

typedef struct qp_sacct {
  const char *path;
  char job[QP_SACCT_TEXT];
  int n_rows, n_numeric, line_step;
  char step[QP_SACCT_TEXT], task[QP_SACCT_TEXT], node[QP_SACCT_TEXT];
  int64_t max_rss;              /* of the compute step; -1 unknown */
  int64_t min_mem;              /* TRESUsageInMin's mem= of the compute step; -1 unknown */
  char min_node[QP_SACCT_TEXT]; /* TRESUsageInMinNode's mem= of it; "" unknown */
  int oom;                      /* a row in state OUT_OF_MEMORY */
  char not_completed[512];      /* "JOBID STATE" of the rows not COMPLETED */
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

/* The value of `key` in a TRES list "cpu=00:00:01,mem=51093504,pages=0" into `out` (size
 * bytes); 0 when absent. */
static int qp_sacct_tres(const char *list, const char *key, char *out, size_t size) {
  const size_t n = strlen(key);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, key, n) == 0 && p[n] == '=') {
      const size_t len = strcspn(p + n + 1, ",");
      snprintf(out, size, "%.*s", (int)len, p + n + 1);
      return 1;
    }
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
  a->min_mem = -1;
  /* A regular text file only (input_file.h): /dev/zero would feed the loop below forever. */
  FILE *in = NULL;
  QP_CALL(qp_input_fopen("sacct file (--sacct)", path, QP_INPUT_TEXT_MAX_BYTES, &in));
  qp_err err = QP_OK;
  char line[QP_SACCT_LINE_MAX], header[QP_SACCT_LINE_MAX];
  char *h[QP_SACCT_COLS_MAX], *f[QP_SACCT_COLS_MAX];
  int n_cols = 0, c_id = -1, c_state = -1, c_rss = -1, c_task = -1, c_node = -1, c_min = -1,
      c_min_node = -1, lineno = 0, trailing = 0;
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
      c_min = qp_sacct_col(h, n_cols, "TRESUsageInMin");
      c_min_node = qp_sacct_col(h, n_cols, "TRESUsageInMinNode");
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
    char mem[QP_SACCT_TEXT];
    a->min_mem = -1;
    a->min_node[0] = '\0';
    if (c_min >= 0 && qp_sacct_tres(f[c_min], "mem", mem, sizeof mem))
      QP_CHECK_GOTO(qp_sacct_bytes(mem, &a->min_mem) == 0, QP_ERR_INPUT, done,
                    "%s:%d: TRESUsageInMin's mem '%s' of %s is not a size", path, lineno, mem, id);
    if (c_min_node >= 0) qp_sacct_tres(f[c_min_node], "mem", a->min_node, sizeof a->min_node);
  }
  QP_CHECK_GOTO(!ferror(in), QP_ERR_INPUT, done, "%s: read error", path);
  QP_CHECK_GOTO(n_cols, QP_ERR_INPUT, done, "%s: empty: no sacct header line", path);
  QP_CHECK_GOTO(a->n_rows, QP_ERR_INPUT, done, "%s: a header and no job line (wrong job id?)",
                path);
done:
  fclose(in);
  return err;
}

/* --cgroup-peak: its largest figure, and per node where its lines name the node. */
enum { QP_CGROUP_NODES_MAX = 256 };
typedef struct qp_cgroup_peaks {
  int64_t peak; /* the largest */
  int n_nodes;  /* lines "job step node bytes": the largest per node */
  char node[QP_CGROUP_NODES_MAX][QP_RANK_HOST_MAX];
  int64_t node_peak[QP_CGROUP_NODES_MAX];
} qp_cgroup_peaks;

/* Keeps the largest figure of `node` (a new node while there is room). */
static void qp_cgroup_peak_node(qp_cgroup_peaks *c, const char *node, int64_t bytes) {
  int k = 0;
  while (k < c->n_nodes && strcmp(c->node[k], node) != 0)
    ++k;
  if (k == c->n_nodes) {
    if (k == QP_CGROUP_NODES_MAX) return;
    snprintf(c->node[k], sizeof c->node[k], "%s", node);
    c->node_peak[k] = -1;
    ++c->n_nodes;
  }
  if (bytes > c->node_peak[k]) c->node_peak[k] = bytes;
}

/* --cgroup-peak: a size, or a file of "job step bytes" lines, or "job step node bytes" (a
 * TaskEpilog's, one line per node and step): the largest bytes, and each node's. */
static qp_err qp_cgroup_peak_read(const char *arg, qp_cgroup_peaks *c) {
  double v = 0;
  c->n_nodes = 0;
  if (qp_parse_bytes(arg, &v) == QP_OK) {
    c->peak = (int64_t)v;
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
  c->peak = -1;
  while (fgets(line, sizeof line, in)) {
    ++lineno;
    char *tok[5] = {0};
    int n = 0;
    for (char *s = strtok(line, " \t\r\n"); s && n < 5; s = strtok(NULL, " \t\r\n"))
      tok[n++] = s;
    if (n == 0) continue;
    int64_t b = -1;
    QP_CHECK_GOTO(n <= 4 && qp_sacct_bytes(tok[n - 1], &b) == 0 && b >= 0, QP_ERR_INPUT, done,
                  "%s:%d: expected 'job step bytes' or 'job step node bytes' (or bytes), got "
                  "'%s'",
                  arg, lineno, tok[n - 1]);
    if (b > c->peak) c->peak = b;
    if (n == 4) qp_cgroup_peak_node(c, tok[2], b);
  }
  QP_CHECK_GOTO(c->peak >= 0, QP_ERR_INPUT, done, "%s: no cgroup peak in it", arg);
done:
  fclose(in);
  return err;
}

/* The gather type validate assumes: --sacct-gather, else the run's record, else cgroup. */
typedef struct qp_gather {
  int anon; /* jobacct_gather/cgroup: MaxRSS counts anonymous memory only */
  char text[QP_GATHER_SOURCE_MAX + QP_GATHER_TEXT_MAX + 64]; /* said in the table */
} qp_gather;

static qp_err qp_gather_decide(const qp_sacct_request *req, qp_gather *g) {
  char type[QP_GATHER_TEXT_MAX], source[QP_GATHER_SOURCE_MAX];
  int found = 0;
  QP_CALL(qp_sacct_recorded_gather(req->results, type, source, &found));
  if (req->gather >= 0) {
    g->anon = req->gather == QP_SACCT_GATHER_CGROUP;
    snprintf(g->text, sizeof g->text, "jobacct_gather/%s (--sacct-gather%s%s%s)",
             g->anon ? "cgroup" : "linux", found ? "; the run recorded " : "", found ? type : "",
             found ? "" : "");
    return QP_OK;
  }
  if (found && strstr(type, "linux")) {
    g->anon = 0;
    snprintf(g->text, sizeof g->text, "%s (recorded by the run: %s)", type, source);
  } else if (found && strstr(type, "cgroup")) {
    g->anon = 1;
    snprintf(g->text, sizeof g->text, "%s (recorded by the run: %s)", type, source);
  } else {
    g->anon = 1;
    snprintf(g->text, sizeof g->text,
             "%s%s%s: taken as jobacct_gather/cgroup (give --sacct-gather linux|cgroup to say "
             "which)",
             found ? "the run recorded "
                   : "not recorded by the run (outside Slurm, or an older "
                     "qmlpipe)",
             found ? type : "", found ? ", which MaxRSS does not count as linux or cgroup" : "");
  }
  return QP_OK;
}

/* The undercount of jobacct_gather/cgroup (Slurm 22.05, docs/slurm.md): on a step of several
 * nodes it reads each task's cgroup by its global task id, which on any node but the first
 * names another task's cgroup or none (then 0 B): MaxRSS (and MaxRSSNode, MaxRSSTask) may be
 * the first node's largest task while a rank on another node used more. Returns the node that
 * shows it (-1: none), `*zero` saying how:
 * 1: the step's smallest task used mem=0 (TRESUsageInMin, on TRESUsageInMinNode's node; a
 *    rank of qmlpipe never holds 0 bytes): seen on every multi-node step here, even when
 *    the largest rank ran on the first node and MaxRSS happened to be its figure;
 * 0: a rank elsewhere than MaxRSSNode (else than rank 0's node) whose own peak, in MaxRSS's
 *    terms, is above MaxRSS by more than the tolerance (sacct without the TRES columns). */
static int qp_sacct_undercount(const qp_sacct *a, const qp_sacct_prediction *pred, int anon,
                               double tolerance, int *zero) {
  *zero = 0;
  if (!anon || pred->n_nodes < 2 || a->max_rss < 0) return -1;
  if (a->min_mem == 0) {
    *zero = 1;
    for (int k = 0; k < pred->n_nodes; ++k)
      if (pred->by_host && strcmp(pred->nodes[k].host, a->min_node) == 0) return k;
    for (int k = 0; k < pred->n_nodes; ++k) /* the node not named: one other than MaxRSSNode's */
      if (!(a->node[0] ? strcmp(pred->nodes[k].host, a->node) == 0
                       : pred->nodes[k].first_rank == 0))
        return k;
    return pred->n_nodes - 1;
  }
  if (!pred->by_host) return -1;
  int worst = -1;
  for (int k = 0; k < pred->n_nodes; ++k) {
    const qp_sacct_node *n = &pred->nodes[k];
    const int first = a->node[0] ? strcmp(n->host, a->node) == 0 : n->first_rank == 0;
    if (first || n->measured <= 0) continue;
    if (qp_val_rel_error(n->measured, a->max_rss) > tolerance &&
        (worst < 0 || n->measured > pred->nodes[worst].measured))
      worst = k;
  }
  return worst;
}

/* The placement and one row per node: its ranks, its prediction, and its cgroup peak where
 * --cgroup-peak names it (else the largest node against the largest peak). Returns the
 * failed comparisons. */
static int qp_sacct_print_nodes(FILE *out, const char *cgroup_arg, const qp_cgroup_peaks *cg,
                                const qp_sacct_prediction *pred, double tolerance) {
  char p[32], m[32], et[32], what[QP_RANK_HOST_MAX + 128];
  int failed = 0, named = 0;
  for (int k = 0; cgroup_arg && k < pred->n_nodes; ++k)
    for (int i = 0; i < cg->n_nodes; ++i)
      named += strcmp(cg->node[i], pred->nodes[k].host) == 0;
  for (int k = 0; k < pred->n_nodes && pred->n_nodes <= 64; ++k) {
    const qp_sacct_node *n = &pred->nodes[k];
    int64_t peak = -1;
    for (int i = 0; named && i < cg->n_nodes; ++i)
      if (strcmp(cg->node[i], n->host) == 0) peak = cg->node_peak[i];
    const int judged = named ? peak >= 0 : cgroup_arg && k == pred->node_at;
    if (named)
      snprintf(what, sizeof what, "%.64s (%d rank%s): job cgroup peak", n->host, n->ranks,
               n->ranks == 1 ? "" : "s");
    else
      snprintf(what, sizeof what, "%.64s (%d rank%s)%s", n->host, n->ranks,
               n->ranks == 1 ? "" : "s",
               !cgroup_arg ? ""
               : judged    ? ": the largest, against the largest cgroup peak"
                           : "");
    const int64_t meas = judged ? (named ? peak : cg->peak) : -1;
    const double e = judged ? qp_val_rel_error(meas, n->predicted) : NAN;
    const int bad = judged && qp_val_outside(e, tolerance);
    failed += bad;
    fprintf(out, "  %-10s %-52.52s | %10s %10s %8s | %s\n", "node", what,
            qp_val_mib_text(n->predicted, p, sizeof p), qp_val_mib_text(meas, m, sizeof m),
            qp_val_err_text(e, judged, et, sizeof et),
            bad          ? "FAIL"
            : judged     ? "ok"
            : cgroup_arg ? "- (no peak of it)"
                         : "- (no --cgroup-peak)");
  }
  if (pred->n_nodes > 64) { /* the largest alone */
    const double e = cgroup_arg ? qp_val_rel_error(cg->peak, pred->node) : NAN;
    const int bad = cgroup_arg && qp_val_outside(e, tolerance);
    failed += bad;
    fprintf(out, "  %-10s %-52.52s | %10s %10s %8s | %s\n", "node", "the largest of the nodes",
            qp_val_mib_text(pred->node, p, sizeof p),
            qp_val_mib_text(cgroup_arg ? cg->peak : -1, m, sizeof m),
            qp_val_err_text(e, cgroup_arg != NULL, et, sizeof et),
            bad          ? "FAIL"
            : cgroup_arg ? "ok"
                         : "-");
  }
  return failed;
}

/* Prints the job table; returns the number of failed comparisons (the job's state counts as
 * one when it is OUT_OF_MEMORY). `under`: the node whose rank shows the cgroup undercount
 * (the rank's comparison is then not judged), -1 none. */
static int qp_sacct_print(FILE *out, const qp_sacct *a, const char *cgroup_arg,
                          const qp_cgroup_peaks *cg, const qp_sacct_prediction *pred,
                          const qp_gather *g, int under, int zero, double tolerance) {
  char p[32], m[32], et[32], what[512];
  int failed = 0;
  fprintf(out,
          "\njob %s (Slurm accounting %s): %d rank(s) on %d node(s); predicted = stage peak + "
          "overhead (+ library buffers), per node the ranks of a node summed with their shared "
          "pages once\n",
          a->job, a->path, pred->n_ranks, pred->n_nodes > 0 ? pred->n_nodes : 1);
  fprintf(out, "  gather type: %s\n", g->text);
  if (pred->n_ranks > 1 && !pred->by_host)
    fprintf(out,
            "  note: this results file does not record each rank's host (a qmlpipe before the "
            "host record): nodes taken as blocks of %d consecutive ranks (ranks_per_node), "
            "right only for even placement\n",
            pred->per_node);
  if (g->anon && pred->shared_known)
    fprintf(out,
            "  MaxRSS as jobacct_gather/cgroup counts it (anonymous memory): the rank's "
            "prediction less its baseline's file-backed and shared pages, %s MiB\n",
            qp_val_mib_text(pred->shared, p, sizeof p));
  else if (g->anon)
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
  int bad = under < 0 && qp_val_outside(e, tolerance);
  failed += bad;
  fprintf(out, "  %-10s %-52s | %10s %10s %8s | %s\n", "rank", what,
          qp_val_mib_text(pred->rank, p, sizeof p), qp_val_mib_text(a->max_rss, m, sizeof m),
          qp_val_err_text(e, under < 0, et, sizeof et),
          under >= 0 ? "NOT JUDGED: sacct undercounts"
          : bad      ? "FAIL"
                     : "ok");
  if (under >= 0 && zero) {
    fprintf(out,
            "  sacct's smallest task of step %s used mem=0 on %s (TRESUsageInMin, "
            "TRESUsageInMinNode) where rank(s) of this job ran (node %s: %d rank(s), rank %d "
            "first): jobacct_gather/cgroup did not count that node's tasks (Slurm 22.05 reads "
            "a task's cgroup by its global task id); its MaxRSS %s MiB, MaxRSSNode and "
            "MaxRSSTask are not the job's. Set JobAcctGatherType=jobacct_gather/linux "
            "(docs/slurm.md)\n",
            a->step, a->min_node[0] ? a->min_node : "a node", pred->nodes[under].host,
            pred->nodes[under].ranks, pred->nodes[under].first_rank,
            qp_val_mib_text(a->max_rss, m, sizeof m));
  } else if (under >= 0) {
    const qp_sacct_node *n = &pred->nodes[under];
    fprintf(out,
            "  sacct's MaxRSS %s MiB%s%s is below what rank %d on node %s measured itself (%s "
            "MiB): jobacct_gather/cgroup counted only the first node's tasks of this %d-node "
            "step (Slurm 22.05); its MaxRSS, MaxRSSNode and MaxRSSTask are not the job's. Set "
            "JobAcctGatherType=jobacct_gather/linux (docs/slurm.md)\n",
            qp_val_mib_text(a->max_rss, m, sizeof m), a->node[0] ? " on " : "", a->node,
            n->measured_rank, n->host, qp_val_mib_text(n->measured, p, sizeof p), pred->n_nodes);
  }
  if (pred->n_nodes > 0) {
    failed += qp_sacct_print_nodes(out, cgroup_arg, cg, pred, tolerance);
  } else if (cgroup_arg) { /* one process: the rank is the node */
    snprintf(what, sizeof what, "job cgroup peak (%s)", cgroup_arg);
    e = qp_val_rel_error(cg->peak, pred->node);
    bad = qp_val_outside(e, tolerance);
    failed += bad;
    fprintf(out, "  %-10s %-52.52s | %10s %10s %8s | %s\n", "node", what,
            qp_val_mib_text(pred->node, p, sizeof p), qp_val_mib_text(cg->peak, m, sizeof m),
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
  qp_sacct_prediction pred = {0};
  qp_gather gather;
  qp_cgroup_peaks *cg = calloc(1, sizeof *cg);
  *n_failed = 0;
  QP_CHECK(cg, QP_ERR_NOMEM, "no memory for the cgroup peaks");
  qp_err err = qp_sacct_read(req->sacct, &acct);
  if (err == QP_OK && req->cgroup) err = qp_cgroup_peak_read(req->cgroup, cg);
  if (err == QP_OK) err = qp_gather_decide(req, &gather);
  if (err == QP_OK) err = qp_sacct_predict(req->results, req->set, gather.anon, &pred);
  if (err != QP_OK) {
    free(cg);
    return err;
  }
  int zero = 0;
  const int under = qp_sacct_undercount(&acct, &pred, gather.anon, req->tolerance, &zero);
  *n_failed =
      qp_sacct_print(out, &acct, req->cgroup, cg, &pred, &gather, under, zero, req->tolerance);
  char under_host[QP_RANK_HOST_MAX] = "";
  if (under >= 0) snprintf(under_host, sizeof under_host, "%s", pred.nodes[under].host);
  const int under_rank = under >= 0 ? pred.nodes[under].measured_rank : -1;
  const int nodes = pred.n_nodes;
  qp_sacct_prediction_free(&pred);
  free(cg);
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
  /* The rank's figure is false: neither a pass nor a failure of the model (its own status). */
  QP_CHECK(under < 0 || !zero, QP_ERR_UNSUPPORTED,
           "%s: step %s's smallest task used mem=0 on %s (TRESUsageInMin), where ranks of this "
           "job ran: Slurm's jobacct_gather/cgroup did not count that node's tasks of this "
           "%d-node step (MaxRSS %.1f MiB is the first node's), so sacct cannot validate the "
           "ranks of this job; the site must set JobAcctGatherType=jobacct_gather/linux "
           "(docs/slurm.md, \"Placement, gather type\")",
           req->sacct, acct.step, under_host, nodes, (double)acct.max_rss / 1048576.0);
  QP_CHECK(under < 0, QP_ERR_UNSUPPORTED,
           "%s: step %s's MaxRSS %.1f MiB (node %s) is below what rank %d on node %s measured "
           "itself: Slurm's jobacct_gather/cgroup counts only the first node's tasks of a "
           "%d-node step, so sacct cannot validate the ranks of this job; the site must set "
           "JobAcctGatherType=jobacct_gather/linux (docs/slurm.md, \"Placement, gather type\")",
           req->sacct, acct.step, (double)acct.max_rss / 1048576.0, acct.node[0] ? acct.node : "?",
           under_rank, under_host, nodes);
  return QP_OK;
}
