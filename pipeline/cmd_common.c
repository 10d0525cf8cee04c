/* cmd_common.c: see cmd_common.h. */
#include "cmd_common.h"

#include <stdlib.h>
#include <string.h>

#include "grid.h"
#include "inputs.h"

/* The sizing options of budget and plan: --ranks P [--grid RxC] [--block B]
 * [--ranks-per-node K] [--mem-per-node BYTES]. */
typedef struct qp_sizing {
  int ranks, rows, cols, block, per_node;
  int grid_given; /* --grid: no choice to make */
  double mem_per_node;
} qp_sizing;

static int qp_parse_sizing(int argc, char **argv, const char **config, qp_sizing *s) {
  *s = (qp_sizing){0, 0, 0, QP_GRID_DEFAULT_BLOCK, 1, 0, 0};
  *config = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--ranks") == 0 && v) {
      s->ranks = atoi(v);
      ++i;
    } else if (strcmp(a, "--grid") == 0 && v && sscanf(v, "%dx%d", &s->rows, &s->cols) == 2) {
      s->grid_given = 1;
      ++i;
    } else if (strcmp(a, "--block") == 0 && v) {
      s->block = atoi(v);
      ++i;
    } else if (strcmp(a, "--ranks-per-node") == 0 && v) {
      s->per_node = atoi(v);
      ++i;
    } else if (strcmp(a, "--mem-per-node") == 0 && v) {
      if (qp_parse_bytes(v, &s->mem_per_node) != QP_OK) {
        fprintf(stderr, "qmlpipe: --mem-per-node '%s' is not a size (e.g. 180GiB)\n", v);
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
  if (s->rows > 0 && s->ranks == 0) s->ranks = s->rows * s->cols;
  if (!*config || s->ranks < 0 || s->block < 1 || s->per_node < 1 ||
      (s->rows > 0 && s->rows * s->cols != s->ranks)) {
    fprintf(stderr, "qmlpipe: %s\n",
            !*config ? "missing CONFIG.yaml"
                     : "bad sizing options (--grid RxC must have R*C = --ranks; block and "
                       "ranks per node >= 1)");
    return 0;
  }
  return 1;
}

/* Stage peaks (with the overhead) of every rank of the grid, summed per node of
 * `per_node` consecutive ranks; returns the largest node's largest stage. */
static double qp_node_peak(qp_problem *p, const qp_sizing *s, int print) {
  const int n = p->plan_grid.nprow * p->plan_grid.npcol;
  const double mib = 1048576.0;
  double worst_node = 0, node[QP_STAGE_COUNT] = {0}, rank_max = 0;
  if (print)
    printf("\nper rank (grid %d x %d, block %d; MiB with the overhead of each rank):\n  %-6s",
           p->plan_grid.nprow, p->plan_grid.npcol, p->plan_grid.block, "rank");
  for (int st = 0; print && st < QP_STAGE_COUNT; ++st)
    printf(" %17s", qp_stage_name((qp_stage_id)st));
  for (int r = 0; r < n; ++r) {
    p->plan_grid.myrow = r / p->plan_grid.npcol;
    p->plan_grid.mycol = r % p->plan_grid.npcol;
    if (qp_inputs_remodel(p) != QP_OK) return -1;
    if (print) printf("\n  %-6d", r);
    for (int st = 0; st < QP_STAGE_COUNT; ++st) {
      double peak = (double)(qp_model_stage_peak(&p->model, (qp_stage_id)st) +
                             p->model.overhead_bytes);
      node[st] += peak;
      if (peak > rank_max) rank_max = peak;
      if (print) printf(" %17.2f", peak / mib);
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
           rank_max / mib, s->per_node, worst_node / mib);
  /* Leave the model of rank 0 (the largest share and the reader) in place. */
  p->plan_grid.myrow = p->plan_grid.mycol = 0;
  if (qp_inputs_remodel(p) != QP_OK) return -1;
  return worst_node;
}

/* With --mem-per-node and no --grid: the factorisation of the ranks whose largest node fits
 * best (the smallest node peak). */
static void qp_choose_grid(qp_problem *p, qp_sizing *s) {
  double best = -1;
  int best_rows = 0;
  for (int rows = 1; rows <= s->ranks; ++rows) {
    if (s->ranks % rows) continue;
    p->plan_grid = (qp_grid){0, rows, s->ranks / rows, 0, 0, s->block};
    double peak = qp_node_peak(p, s, 0);
    if (peak >= 0 && (best < 0 || peak < best)) {
      best = peak;
      best_rows = rows;
    }
  }
  s->rows = best_rows > 0 ? best_rows : 1;
  s->cols = s->ranks / s->rows;
  printf("\ngrid chosen for --mem-per-node %.2f GiB: %d x %d (largest node %.2f GiB: %s)\n",
         s->mem_per_node / 1073741824.0, s->rows, s->cols, best / 1073741824.0,
         best <= s->mem_per_node ? "fits" : "does not fit any grid");
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
    qp_choose_grid(&p, &sizing);
    p.plan_grid = (qp_grid){0, sizing.rows, sizing.cols, 0, 0, sizing.block};
    err = qp_inputs_remodel(&p);
  }
  if (err == QP_OK) {
    print(&p);
    if (sizing.ranks > 0) {
      double node = qp_node_peak(&p, &sizing, 1);
      if (node < 0) err = qp_error_code();
      if (err == QP_OK && sizing.mem_per_node > 0 && node > sizing.mem_per_node)
        err = qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__,
                           "the largest node needs %.3f GiB, more than --mem-per-node %.3f GiB",
                           node / 1073741824.0, sizing.mem_per_node / 1073741824.0);
    }
    if (err == QP_OK) err = qp_inputs_check_limit(&p);
  }
  if (err != QP_OK) qp_error_print(stderr, 0);
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return qp_err_exit_status(err);
}
