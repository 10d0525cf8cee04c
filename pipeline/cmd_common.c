/* cmd_common.c: see cmd_common.h. */
#include "cmd_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checked_size.h"
#include "grid.h"
#include "inputs.h"

/* The sizing options of budget and plan: --ranks P [--grid RxC] [--block B]
 * [--ranks-per-node K] [--mem-per-node BYTES]. */
typedef struct qp_sizing {
  int ranks, rows, cols, block, per_node;
  int grid_given; /* --grid: no choice to make */
  double mem_per_node;
} qp_sizing;

/* The most ranks sized: every rank's model is computed and printed (and, to choose a grid,
 * every factorisation's), and counts stay far inside int. */
enum { QP_SIZING_RANKS_MAX = 65536 };

/* A whole number in [lo, hi] from the whole of `text` (strtol, checked); 0 with a message
 * naming the option when it is not one. */
static int qp_parse_count(const char *option, const char *text, long lo, long hi, int *out) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    fprintf(stderr, "qmlpipe: %s '%s' is not a whole number from %ld to %ld\n", option, text, lo,
            hi);
    return 0;
  }
  *out = (int)v;
  return 1;
}

/* --grid RxC: two counts, R x C at most QP_SIZING_RANKS_MAX ranks. */
static int qp_parse_grid(const char *text, int *rows, int *cols) {
  char r[32], c[32];
  const char *x = strchr(text, 'x');
  const size_t nr = x ? (size_t)(x - text) : 0;
  if (!x || nr == 0 || nr >= sizeof r || strlen(x + 1) >= sizeof c) {
    fprintf(stderr, "qmlpipe: --grid '%s' is not RxC (e.g. 2x4)\n", text);
    return 0;
  }
  memcpy(r, text, nr);
  r[nr] = '\0';
  snprintf(c, sizeof c, "%s", x + 1);
  if (!qp_parse_count("--grid rows", r, 1, QP_SIZING_RANKS_MAX, rows) ||
      !qp_parse_count("--grid cols", c, 1, QP_SIZING_RANKS_MAX, cols))
    return 0;
  int64_t ranks = 0;
  if (!qp_i64_mul(*rows, *cols, &ranks) || ranks > QP_SIZING_RANKS_MAX) {
    fprintf(stderr, "qmlpipe: --grid '%s' is %lld ranks, more than %d\n", text, (long long)ranks,
            QP_SIZING_RANKS_MAX);
    return 0;
  }
  return 1;
}

static int qp_parse_sizing(int argc, char **argv, const char **config, qp_sizing *s) {
  *s = (qp_sizing){0, 0, 0, QP_GRID_DEFAULT_BLOCK, 1, 0, 0};
  *config = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--ranks") == 0 && v) {
      if (!qp_parse_count("--ranks", v, 1, QP_SIZING_RANKS_MAX, &s->ranks)) return 0;
      ++i;
    } else if (strcmp(a, "--grid") == 0 && v) {
      if (!qp_parse_grid(v, &s->rows, &s->cols)) return 0;
      s->grid_given = 1;
      ++i;
    } else if (strcmp(a, "--block") == 0 && v) {
      if (!qp_parse_count("--block", v, 1, QP_GRID_BLOCK_MAX, &s->block)) return 0;
      ++i;
    } else if (strcmp(a, "--ranks-per-node") == 0 && v) {
      if (!qp_parse_count("--ranks-per-node", v, 1, QP_SIZING_RANKS_MAX, &s->per_node)) return 0;
      ++i;
    } else if (strcmp(a, "--mem-per-node") == 0 && v) {
      if (qp_parse_bytes(v, &s->mem_per_node) != QP_OK) {
        fprintf(stderr, "qmlpipe: --mem-per-node '%s' is not a size (e.g. 180GiB): %s\n", v,
                qp_error_message());
        qp_error_clear();
        return 0;
      }
      ++i;
    } else if (a[0] == '-' || *config) {
      fprintf(stderr, "qmlpipe: unexpected argument '%s'\n", a);
      return 0;
    } else {
      *config = a;
    }
  }
  if (s->rows > 0 && s->ranks == 0) s->ranks = s->rows * s->cols; /* at most 65536: parsed */
  if (!*config || (s->rows > 0 && s->rows * s->cols != s->ranks)) {
    fprintf(stderr, "qmlpipe: %s\n",
            !*config ? "missing CONFIG.yaml"
                     : "bad sizing options (--grid RxC must have R*C = --ranks)");
    return 0;
  }
  return 1;
}

/* Stage peaks (with the overhead) of every rank of the grid, summed per node of
 * `per_node` consecutive ranks, in exact bytes; *worst gets the largest node's largest stage.
 * A rank's peak is below 2^63 (model.h); a node's sum is checked, and one beyond 2^64 bytes
 * is refused (QP_ERR_INPUT) naming the node. */
static qp_err qp_node_peak(qp_problem *p, const qp_sizing *s, int print, size_t *worst) {
  const int n = p->plan_grid.nprow * p->plan_grid.npcol;
  const double mib = 1048576.0;
  size_t worst_node = 0, node[QP_STAGE_COUNT] = {0}, rank_max = 0;
  if (print)
    printf("\nper rank (grid %d x %d, block %d; MiB with the overhead of each rank):\n  %-6s",
           p->plan_grid.nprow, p->plan_grid.npcol, p->plan_grid.block, "rank");
  for (int st = 0; print && st < QP_STAGE_COUNT; ++st)
    printf(" %17s", qp_stage_name((qp_stage_id)st));
  for (int r = 0; r < n; ++r) {
    p->plan_grid.myrow = r / p->plan_grid.npcol;
    p->plan_grid.mycol = r % p->plan_grid.npcol;
    QP_CALL(qp_inputs_remodel(p));
    if (print) printf("\n  %-6d", r);
    for (int st = 0; st < QP_STAGE_COUNT; ++st) {
      const size_t peak = qp_model_stage_peak(&p->model, (qp_stage_id)st) + p->model.overhead_bytes;
      QP_CHECK(qp_size_add(node[st], peak, &node[st]), QP_ERR_INPUT,
               "the node of ranks %d to %d needs more than 2^64 bytes in stage %s (%d ranks "
               "per node, rank %d alone %.3g bytes)",
               r - r % s->per_node, r, qp_stage_name((qp_stage_id)st), s->per_node, r,
               (double)peak);
      if (peak > rank_max) rank_max = peak;
      if (print) printf(" %17.2f", (double)peak / mib);
    }
    if ((r + 1) % s->per_node == 0 || r == n - 1) {
      for (int st = 0; st < QP_STAGE_COUNT; ++st) {
        if (node[st] > worst_node) worst_node = node[st];
        node[st] = 0;
      }
    }
  }
  if (print)
    printf("\n  largest rank %.2f MiB; largest node (%d ranks per node) %.2f MiB\n",
           (double)rank_max / mib, s->per_node, (double)worst_node / mib);
  /* Leave the model of rank 0 (the largest share and the reader) in place. */
  p->plan_grid.myrow = p->plan_grid.mycol = 0;
  QP_CALL(qp_inputs_remodel(p));
  *worst = worst_node;
  return QP_OK;
}

/* With --mem-per-node and no --grid: the factorisation of the ranks whose largest node fits
 * best (the smallest node peak). */
static qp_err qp_choose_grid(qp_problem *p, qp_sizing *s) {
  size_t best = SIZE_MAX;
  int best_rows = 0;
  for (int rows = 1; rows <= s->ranks; ++rows) {
    if (s->ranks % rows) continue;
    p->plan_grid = (qp_grid){0, rows, s->ranks / rows, 0, 0, s->block};
    size_t peak = 0;
    QP_CALL(qp_node_peak(p, s, 0, &peak));
    if (best_rows == 0 || peak < best) {
      best = peak;
      best_rows = rows;
    }
  }
  s->rows = best_rows > 0 ? best_rows : 1;
  s->cols = s->ranks / s->rows;
  printf("\ngrid chosen for --mem-per-node %.2f GiB: %d x %d (largest node %.2f GiB: %s)\n",
         s->mem_per_node / 1073741824.0, s->rows, s->cols, (double)best / 1073741824.0,
         (double)best <= s->mem_per_node ? "fits" : "does not fit any grid");
  return QP_OK;
}

int qp_cmd_with_plan(int argc, char **argv, void (*usage)(FILE *out),
                     void (*print)(const qp_problem *p)) {
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
  const char *config = NULL;
  qp_sizing sizing;
  if (!qp_parse_sizing(argc, argv, &config, &sizing)) {
    usage(stderr);
    return 2;
  }
  qp_config cfg;
  qp_err err = qp_config_load(config, &cfg);
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  /* A per-node limit with no per-rank one: each rank may use its share of the node, and the
   * planner chunks to it. */
  if (err == QP_OK && sizing.mem_per_node > 0 && cfg.host_limit <= 0)
    cfg.host_limit = sizing.mem_per_node / sizing.per_node;
  if (sizing.ranks > 0) {
    /* Planned as rank 0 (the largest share, and the reader); the others follow. */
    if (sizing.rows == 0) qp_grid_choose(sizing.ranks, &sizing.rows, &sizing.cols);
    p.plan_grid = (qp_grid){0, sizing.rows, sizing.cols, 0, 0, sizing.block};
  }
  if (err == QP_OK) err = qp_inputs_plan(&p);
  if (err == QP_OK && sizing.ranks > 0 && sizing.mem_per_node > 0 && !sizing.grid_given) {
    err = qp_choose_grid(&p, &sizing);
    p.plan_grid = (qp_grid){0, sizing.rows, sizing.cols, 0, 0, sizing.block};
    if (err == QP_OK) err = qp_inputs_remodel(&p);
  }
  if (err == QP_OK) {
    print(&p);
    if (sizing.ranks > 0) {
      size_t node = 0;
      err = qp_node_peak(&p, &sizing, 1, &node);
      if (err == QP_OK && sizing.mem_per_node > 0 && (double)node > sizing.mem_per_node)
        err = qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__,
                           "the largest node needs %.3f GiB (%zu bytes), more than "
                           "--mem-per-node %.3f GiB",
                           (double)node / 1073741824.0, node, sizing.mem_per_node / 1073741824.0);
    }
    if (err == QP_OK) err = qp_inputs_check_limit(&p);
  }
  if (err != QP_OK) qp_error_print(stderr, 0);
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return qp_err_exit_status(err);
}
