/* cmd_common.c: see cmd_common.h. */
#include "cmd_common.h"

#include <omp.h>
#include <string.h>

#include "bytes_text.h"
#include "checked_size.h"
#include "grid.h"
#include "inputs.h"
#include "job_limit.h"
#include "planner.h"

/* A --partition or --account value: letters, digits and _ - . , (an #SBATCH line holds it). */
static int qp_parse_slurm_name(const char *option, const char *text) {
  int ok = text[0] != '\0' && strlen(text) < 256;
  for (const char *c = text; ok && *c; ++c)
    ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
         *c == '_' || *c == '-' || *c == '.' || *c == ',';
  if (!ok)
    fprintf(stderr, "qmlpipe: %s '%s' is not a Slurm name (letters, digits, _ - . ,)\n", option,
            text);
  return ok;
}

/* The options of budget and plan (plan takes the job's too), in getopt_long's table. */
enum {
  QP_OPT_RANKS = QP_CMD_OPTION_FIRST,
  QP_OPT_GRID,
  QP_OPT_BLOCK,
  QP_OPT_PER_NODE,
  QP_OPT_MEM_PER_NODE,
  QP_OPT_SBATCH,
  QP_OPT_NODES,
  QP_OPT_CPUS_PER_TASK,
  QP_OPT_PARTITION,
  QP_OPT_ACCOUNT,
  QP_OPT_FORCE,
  QP_OPT_JSON,
  QP_OPT_KEEP_OUTPUT,
  QP_OPT_GPUS,
  QP_OPT_JOB_LIMIT,
  QP_OPT_CHECKPOINT
};
#define QP_SIZING_OPTIONS                                                                          \
  {"help", no_argument, NULL, 'h'}, {"ranks", required_argument, NULL, QP_OPT_RANKS},              \
      {"grid", required_argument, NULL, QP_OPT_GRID},                                              \
      {"block", required_argument, NULL, QP_OPT_BLOCK},                                            \
      {"ranks-per-node", required_argument, NULL, QP_OPT_PER_NODE}, {                              \
    "mem-per-node", required_argument, NULL, QP_OPT_MEM_PER_NODE                                   \
  }

/* One option of budget or plan into `s`; 0 (with a message) when its value is refused. */
static int qp_sizing_option(int c, const char *v, qp_plan_job *s) {
  switch (c) {
  case QP_OPT_RANKS: return qp_cmd_parse_count("--ranks", v, 1, QP_SIZING_RANKS_MAX, &s->ranks);
  case QP_OPT_GRID: return (s->grid_given = qp_cmd_parse_grid("--grid", v, &s->rows, &s->cols));
  case QP_OPT_BLOCK: return qp_cmd_parse_count("--block", v, 1, QP_GRID_BLOCK_MAX, &s->block);
  case QP_OPT_PER_NODE:
    s->per_node_given = 1;
    return qp_cmd_parse_count("--ranks-per-node", v, 1, QP_SIZING_RANKS_MAX, &s->per_node);
  case QP_OPT_MEM_PER_NODE:
    if (qp_parse_bytes(v, &s->mem_per_node) == QP_OK && s->mem_per_node > 0) return 1;
    fprintf(stderr, "qmlpipe: --mem-per-node '%s' is not a positive size (e.g. 180GiB)%s%s\n", v,
            qp_error_message()[0] ? ": " : "", qp_error_message());
    qp_error_clear();
    return 0;
  case QP_OPT_SBATCH:
    s->sbatch = v;
    if (v[0] != '\0') return 1;
    fprintf(stderr, "qmlpipe: --sbatch needs a file name (the job script to write)\n");
    return 0;
  case QP_OPT_NODES: return qp_cmd_parse_count("--nodes", v, 1, QP_SIZING_RANKS_MAX, &s->nodes);
  case QP_OPT_CPUS_PER_TASK:
    return qp_cmd_parse_count("--cpus-per-task", v, 1, 4096, &s->cpus_per_task);
  case QP_OPT_PARTITION: s->partition = v; return qp_parse_slurm_name("--partition", v);
  case QP_OPT_ACCOUNT: s->account = v; return qp_parse_slurm_name("--account", v);
  case QP_OPT_FORCE: s->force = 1; return 1;
  case QP_OPT_JSON: s->json = 1; return 1;
  case QP_OPT_KEEP_OUTPUT: s->keep_output = 1; return 1;
  case QP_OPT_GPUS: return qp_cmd_parse_count("--gpus", v, 1, 64, &s->gpus);
  case QP_OPT_JOB_LIMIT: s->job_limit = 1; return 1;
  case QP_OPT_CHECKPOINT:
    s->checkpoint = v;
    if (v[0] != '\0') return 1;
    fprintf(stderr, "qmlpipe: --checkpoint needs a directory (the job's checkpoints)\n");
    return 0;
  default: return 0; /* '?': qp_cmd_getopt said why */
  }
}

/* The command line of budget or plan; 1 to go on, 0 for the usage (exit 2), -1 for --help. */
static int qp_parse_sizing(int argc, char **argv, int job_options, const char **config,
                           qp_plan_job *s) {
  static const struct option sizing[] = {QP_SIZING_OPTIONS, {NULL, 0, NULL, 0}};
  static const struct option job[] = {
      QP_SIZING_OPTIONS,
      {"sbatch", required_argument, NULL, QP_OPT_SBATCH},
      {"nodes", required_argument, NULL, QP_OPT_NODES},
      {"cpus-per-task", required_argument, NULL, QP_OPT_CPUS_PER_TASK},
      {"partition", required_argument, NULL, QP_OPT_PARTITION},
      {"account", required_argument, NULL, QP_OPT_ACCOUNT},
      {"force", no_argument, NULL, QP_OPT_FORCE},
      {"json", no_argument, NULL, QP_OPT_JSON},
      {"keep-output", no_argument, NULL, QP_OPT_KEEP_OUTPUT},
      {"gpus", required_argument, NULL, QP_OPT_GPUS},
      {"job-limit", no_argument, NULL, QP_OPT_JOB_LIMIT},
      {"checkpoint", required_argument, NULL, QP_OPT_CHECKPOINT},
      {NULL, 0, NULL, 0}};
  memset(s, 0, sizeof *s);
  s->block = QP_GRID_DEFAULT_BLOCK;
  s->per_node = 1;
  s->cpus_per_task = 1;
  *config = NULL;
  qp_cmd_getopt_begin();
  for (int c; (c = qp_cmd_getopt(argv[0], argc, argv, job_options ? job : sizing, NULL)) != -1;) {
    if (c == 'h') return -1;
    if (!qp_sizing_option(c, optarg, s)) return 0;
  }
  if (argc - optind > 1) {
    fprintf(stderr, "qmlpipe %s: unexpected argument '%s' (one CONFIG.yaml)\n", argv[0],
            argv[optind + 1]);
    return 0;
  }
  *config = optind < argc ? argv[optind] : NULL;
  if (s->rows > 0 && s->ranks == 0) s->ranks = s->rows * s->cols; /* at most 65536: parsed */
  if (!*config || (s->rows > 0 && s->rows * s->cols != s->ranks)) {
    fprintf(stderr, "qmlpipe: %s\n",
            !*config ? "missing CONFIG.yaml"
                     : "bad sizing options (--grid RxC must have R*C = --ranks)");
    return 0;
  }
  /* One rank per GPU: --gpus N is the node's ranks, unless --ranks-per-node says it. */
  if (s->gpus > 0 && s->ranks > 0 && !s->per_node_given) {
    s->per_node = s->gpus;
    s->per_node_given = 1;
  }
  if (s->nodes > 0) {
    const int ranks = s->ranks > 0 ? s->ranks : 1;
    /* Nodes of --ranks-per-node consecutive ranks, the last one possibly partial. */
    if (!s->per_node_given) s->per_node = (ranks + s->nodes - 1) / s->nodes;
    if ((ranks + s->per_node - 1) / s->per_node != s->nodes) {
      fprintf(stderr,
              "qmlpipe: --nodes %d does not match %d ranks at %d per node (%d nodes of "
              "consecutive ranks)\n",
              s->nodes, ranks, s->per_node, (ranks + s->per_node - 1) / s->per_node);
      return 0;
    }
    if (s->nodes > ranks) {
      fprintf(stderr, "qmlpipe: --nodes %d is more than the %d rank(s)\n", s->nodes, ranks);
      return 0;
    }
  }
  if (s->checkpoint && !s->sbatch) {
    fprintf(stderr, "qmlpipe: --checkpoint is the job script's: it needs --sbatch FILE\n");
    return 0;
  }
  if (s->ranks == 0 && (s->per_node > 1 || s->nodes > 1)) {
    fprintf(stderr, "qmlpipe: --ranks-per-node and --nodes need --ranks\n");
    return 0;
  }
  if (s->gpus > 0 && (s->ranks > 0 ? s->per_node != s->gpus || s->ranks < s->gpus : s->gpus > 1)) {
    fprintf(stderr,
            "qmlpipe: --gpus %d runs one rank per GPU: it needs --ranks (at least %d) with %d "
            "ranks per node, not %d rank(s) at %d per node\n",
            s->gpus, s->gpus, s->gpus, s->ranks > 0 ? s->ranks : 1, s->per_node);
    return 0;
  }
  return 1;
}

/* Stage peaks (with the overhead) of every rank of the grid, summed per node of
 * `per_node` consecutive ranks, in exact bytes; *worst gets the largest node's largest stage.
 * A rank's peak is below 2^63 (model.h); a node's sum is checked, and one beyond 2^64 bytes
 * is refused (QP_ERR_INPUT) naming the node. */
static qp_err qp_node_peak(const qp_problem *p, qp_plan *plan, qp_plan_job *s, int print,
                           size_t *worst) {
  const int n = plan->grid.nprow * plan->grid.npcol;
  const double mib = 1048576.0;
  size_t worst_node = 0, node[QP_STAGE_COUNT] = {0}, rank_max = 0;
  for (int st = 0; st < QP_STAGE_COUNT; ++st)
    s->rank_stage[st] = s->node_stage[st] = 0;
  if (print)
    printf("\nper rank (grid %d x %d, block %d; MiB with the overhead of each rank):\n  %-6s",
           plan->grid.nprow, plan->grid.npcol, plan->grid.block, "rank");
  for (int st = 0; print && st < QP_STAGE_COUNT; ++st)
    printf(" %17s", qp_stage_name((qp_stage_id)st));
  /* A device backend: each rank's device holds its local parts (docs/gpu.md). */
  const int device = qp_config_device_backend(p->cfg);
  if (print && device) printf(" %17s", "device peak");
  size_t device_max = 0;
  for (int r = 0; r < n; ++r) {
    plan->grid.myrow = r / plan->grid.npcol;
    plan->grid.mycol = r % plan->grid.npcol;
    QP_CALL(qp_plan_remodel(p, plan));
    if (print) printf("\n  %-6d", r);
    for (int st = 0; st < QP_STAGE_COUNT; ++st) {
      const size_t peak =
          qp_model_stage_peak(&plan->model, (qp_stage_id)st) + plan->model.overhead_bytes;
      QP_CHECK(qp_size_add(node[st], peak, &node[st]), QP_ERR_INPUT,
               "the node of ranks %d to %d needs more than 2^64 bytes in stage %s (%d ranks "
               "per node, rank %d alone %.3g bytes)",
               r - r % s->per_node, r, qp_stage_name((qp_stage_id)st), s->per_node, r,
               (double)peak);
      if (peak > rank_max) rank_max = peak;
      if (peak > s->rank_stage[st]) s->rank_stage[st] = peak;
      if (print) printf(" %17.2f", (double)peak / mib);
    }
    const size_t device_peak = qp_model_peak_in(&plan->model, QP_SPACE_DEVICE);
    if (device_peak > device_max) device_max = device_peak;
    if (print && device) printf(" %17.2f", (double)device_peak / mib);
    if ((r + 1) % s->per_node == 0 || r == n - 1) {
      for (int st = 0; st < QP_STAGE_COUNT; ++st) {
        if (node[st] > worst_node) worst_node = node[st];
        if (node[st] > s->node_stage[st]) s->node_stage[st] = node[st];
        node[st] = 0;
      }
    }
  }
  if (print)
    printf("\n  largest rank %.2f MiB; largest node (%d ranks per node) %.2f MiB\n",
           (double)rank_max / mib, s->per_node, (double)worst_node / mib);
  if (print && device)
    printf("  largest device peak of a rank (each rank its own device) %.2f MiB\n",
           (double)device_max / mib);
  /* Leave the model of rank 0 (the largest share and the reader) in place. */
  plan->grid.myrow = plan->grid.mycol = 0;
  QP_CALL(qp_plan_remodel(p, plan));
  *worst = worst_node;
  s->rank_peak = rank_max;
  s->node_peak = worst_node;
  return QP_OK;
}

/* With --mem-per-node and no --grid: the factorisation of the ranks whose largest node fits
 * best (the smallest node peak). */
static qp_err qp_choose_grid(const qp_problem *p, qp_plan *plan, qp_plan_job *s) {
  size_t best = SIZE_MAX;
  int best_rows = 0;
  for (int rows = 1; rows <= s->ranks; ++rows) {
    if (s->ranks % rows) continue;
    plan->grid = (qp_grid){0, rows, s->ranks / rows, 0, 0, s->block};
    /* Planned again for this grid: its chunks, batches and W's blocks (multiples of block x
     * npcol) are its own. */
    QP_CALL(qp_plan_route(p, plan));
    size_t peak = 0;
    QP_CALL(qp_node_peak(p, plan, s, 0, &peak));
    if (best_rows == 0 || peak < best) {
      best = peak;
      best_rows = rows;
    }
  }
  s->rows = best_rows > 0 ? best_rows : 1;
  s->cols = s->ranks / s->rows;
  if (!s->json)
    printf("\ngrid chosen for --mem-per-node %.2f GiB: %d x %d (largest node %.2f GiB: %s)\n",
           s->mem_per_node / 1073741824.0, s->rows, s->cols, (double)best / 1073741824.0,
           (double)best <= s->mem_per_node ? "fits" : "does not fit any grid");
  return QP_OK;
}

int qp_cmd_with_plan(int argc, char **argv, void (*usage)(FILE *out),
                     void (*print)(const qp_problem *p), int job_options,
                     qp_err (*finish)(const qp_problem *p, qp_plan_job *job, qp_err err)) {
  const char *config = NULL;
  qp_plan_job sizing;
  const int parsed = qp_parse_sizing(argc, argv, job_options, &config, &sizing);
  if (parsed <= 0) {
    usage(parsed < 0 ? stdout : stderr);
    return parsed < 0 ? 0 : 2;
  }
  qp_config cfg;
  qp_err err = qp_config_load(config, &cfg);
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  /* This command owns the plan: it plans once, and again per grid it weighs. */
  qp_plan *plan = &p.plan_store;
  p.plan = plan;
  /* A job script runs its tasks with --cpus-per-task threads (OMP_NUM_THREADS): its --mem is
   * sized with the same (the BLAS buffers are per thread), not with this shell's. */
  if (sizing.sbatch) omp_set_num_threads(sizing.cpus_per_task);
  /* A per-node limit with no per-rank one: each rank may use its share of the node, and the
   * planner chunks to it (qp_plan_limit). --job-limit (the job script's own plan line): the
   * limit the job enforces here, as `run` finds it (budget/job_limit.h), shared by
   * --ranks-per-node ranks. */
  qp_job_limit job;
  qp_limit_inputs limit = {
      .config = err == QP_OK ? cfg.host_limit : 0.0,
      .per_rank = sizing.mem_per_node > 0 ? sizing.mem_per_node / sizing.per_node : 0.0};
  if (err == QP_OK && sizing.job_limit) {
    const int threads = omp_get_max_threads();
    const qp_job_env env = {NULL, NULL, NULL, -1, -1, threads > 4095 ? 4096 : threads + 1, 0};
    err = qp_job_limit_find(&env, cfg.host_limit, sizing.ranks > 0 ? sizing.per_node : 1, &job);
    limit.job = &job;
  }
  if (err == QP_OK) err = qp_plan_limit(&limit, plan);
  if (sizing.ranks > 0) {
    /* Planned as rank 0 (the largest share, and the reader); the others follow. */
    if (sizing.rows == 0) qp_grid_choose(sizing.ranks, &sizing.rows, &sizing.cols);
    plan->grid = (qp_grid){0, sizing.rows, sizing.cols, 0, 0, sizing.block};
  }
  qp_noise_figures noise;
  if (err == QP_OK) err = qp_inputs_plan(&p, &noise);
  if (err == QP_OK) err = qp_plan_build(&p, &noise, plan);
  if (err == QP_OK && sizing.ranks > 0 && sizing.mem_per_node > 0 && !sizing.grid_given) {
    err = qp_choose_grid(&p, plan, &sizing);
    plan->grid = (qp_grid){0, sizing.rows, sizing.cols, 0, 0, sizing.block};
    if (err == QP_OK) err = qp_plan_route(&p, plan);
  }
  int planned = 0;
  if (err == QP_OK) {
    planned = 1;
    if (!sizing.json) print(&p);
    size_t node = 0;
    if (sizing.ranks > 0) {
      err = qp_node_peak(&p, plan, &sizing, !sizing.json, &node);
    } else {
      /* One process: the rank is the node. */
      for (int st = 0; st < QP_STAGE_COUNT; ++st)
        sizing.rank_stage[st] = sizing.node_stage[st] =
            qp_model_stage_peak(&plan->model, (qp_stage_id)st) + plan->model.overhead_bytes;
      node = sizing.rank_peak = sizing.node_peak =
          qp_model_peak(&plan->model) + plan->model.overhead_bytes;
    }
    if (err == QP_OK && sizing.mem_per_node > 0 && (double)node > sizing.mem_per_node)
      err = qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__,
                         "the largest node needs %s (%zu bytes), more than "
                         "--mem-per-node %s",
                         qp_bytes_readable((double)node).text, node,
                         qp_bytes_readable(sizing.mem_per_node).text);
    if (err == QP_OK) err = qp_plan_check_limit(&p);
    sizing.fits = err == QP_OK;
  }
  if (err != QP_OK) qp_error_print(stderr, 0);
  /* The job's figures even for a plan that does not fit (--json says so); `finish` writes no
   * script then. An error of the sizing itself (not the limit) stops here. */
  if (finish && planned && (err == QP_OK || err == QP_ERR_BUDGET)) {
    qp_err done = finish(&p, &sizing, err);
    if (done != QP_OK) {
      qp_error_print(stderr, 0);
      err = done;
    }
  }
  qp_problem_free(&p);
  qp_config_free(&cfg);
  return qp_err_exit_status(err);
}
