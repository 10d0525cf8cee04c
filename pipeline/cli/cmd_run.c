/* cmd_run.c: `qmlpipe run CONFIG.yaml`: the analysis, a summary on stdout. */
#include <stdio.h>
#include <string.h>

#include "atomic_file.h"
#include "cmd_args.h"
#include "comm.h"
#include "commands.h"
#include "driver.h"
#include "gather_type.h"
#include "grid.h"
#include "launch_check.h"
#include "matrix.h"
#include "qp_config.h"
#include "results_path.h"
#include "self_cost.h"
#include "timeline.h"

static void qp_run_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe run CONFIG.yaml [--output RESULTS.h5] [--grid RxC] [--block B]\n"
          "       [--checkpoint DIR] [--resume] [--quiet] [--verbose]\n"
          "  Runs covariance_setup, basis_setup, fisher_run and spectra_run inside their\n"
          "  memory budgets and writes the results file named by 'output' in the config\n"
          "  (relative to the config file's directory).\n"
          "  --output PATH  write the results to PATH instead of the config's 'output'; a\n"
          "                 relative PATH is relative to the current directory, like any\n"
          "                 command-line path. Its directory must exist and be writable, and\n"
          "                 an existing PATH must be a regular file and none of the run's\n"
          "                 inputs; this is checked before the run starts (exit %d). One\n"
          "                 name per job keeps the jobs of a Monte Carlo campaign on one\n"
          "                 config from overwriting each other, e.g.\n"
          "                 --output \"mc/results-$SLURM_JOB_ID.h5\" (jobs/*.sbatch: '%%j')\n"
          "  --grid RxC     the process grid of the distributed backend (R x C must be the\n"
          "                 number of ranks), overriding the config's grid: {rows, cols}; the\n"
          "                 one `qmlpipe plan --ranks P` picks (its --sbatch script passes it)\n"
          "  --block B      the ScaLAPACK block size (1 to %d), overriding the config's\n"
          "                 grid: {block}\n"
          "  --checkpoint DIR  after covariance_setup, basis_setup and fisher_run, write the\n"
          "                 state the next stage needs to DIR (created if missing; one file\n"
          "                 per stage and rank), overriding the config's 'checkpoint'; a\n"
          "                 relative DIR is relative to the current directory. The files are\n"
          "                 removed once the results are written\n"
          "  --resume       continue from the newest checkpoint in DIR: the finished stages\n"
          "                 are skipped, the results are the same bytes as an uninterrupted\n"
          "                 run's. Refused (exit %d) when an input changed since (naming it)\n"
          "                 or the ranks or grid differ; a damaged checkpoint is exit %d\n"
          "  --quiet        no progress lines on stderr\n"
          "  --verbose      a traceback with errors\n"
          "  Started as several processes (mpiexec -n N, srun -n N) without MPI running, it\n"
          "  refuses with exit status %d rather than run N copies onto one results file.\n"
          "  SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1 and SIGUSR2 (Slurm's --signal),\n"
          "  SIGALRM, SIGVTALRM and SIGXCPU end it with exit status 128 + the signal after\n"
          "  removing its temporary files and saying which stage ran. SIGPIPE and SIGXFSZ\n"
          "  are ignored: a write they would have ended fails with exit %d naming the file.\n",
          qp_err_exit_status(QP_ERR_IO), QP_GRID_BLOCK_MAX, qp_err_exit_status(QP_ERR_INPUT),
          qp_err_exit_status(QP_ERR_IO), qp_err_exit_status(QP_ERR_MPI),
          qp_err_exit_status(QP_ERR_IO));
}

static void qp_run_summary(const qp_problem *p, const qp_meter_sample *baseline) {
  const qp_config *cfg = p->cfg;
  printf("qmlpipe run: nside %lld, %lld observed pixels, %lld map(s), %d parameter(s), "
         "path %s\n",
         (long long)p->nside, (long long)p->n_observed, (long long)p->n_maps, p->n_params,
         p->plan->path_used != QP_PATH_HARMONIC ? "pixel_direct"
         : p->plan->smw                         ? "harmonic (smw)"
                                                : "harmonic (projected)");
  printf("%-18s %9s %9s %14s %14s %14s\n", "stage", "seconds", "GFLOP/s", "pred. rise MiB",
         "meas. rise MiB", "tracked==pred");
  for (int s = 0; s < QP_STAGE_COUNT; ++s) {
    const qp_stage_record *r = qp_stage_record_find(qp_stage_name((qp_stage_id)s));
    if (!r) continue;
    double predicted = (double)(qp_model_stage_peak(&p->plan->model, (qp_stage_id)s) +
                                qp_model_stage_library(&p->plan->model, (qp_stage_id)s) -
                                qp_model_stage_carried(&p->plan->model, (qp_stage_id)s));
    double measured = (double)(r->meter_end.hwm - r->meter_start.rss);
    int exact = r->tracked_peak == qp_model_stage_peak(&p->plan->model, (qp_stage_id)s);
    printf("%-18s %9.3f %9.2f %14.2f %14.2f %14s\n", r->name, r->seconds,
           r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0.0, predicted / 1048576.0,
           measured / 1048576.0,
           r->resumed ? "resumed"
           : exact    ? "yes"
                      : "NO");
  }
  printf("baseline RSS %.1f MiB; spectra (first map):", (double)baseline->rss / 1048576.0);
  int shown = p->n_params < 6 ? p->n_params : 6;
  for (int q = 0; q < shown; ++q)
    printf(" [%d-%d] %.4g +- %.2g", p->bin_lo[q % p->n_bins], p->bin_hi[q % p->n_bins], p->cl[q],
           p->error[q]);
  printf("%s\nresults: %s\n", p->n_params > shown ? " ..." : "", cfg->output);
}

enum {
  QP_RUN_OUTPUT = QP_CMD_OPTION_FIRST,
  QP_RUN_GRID,
  QP_RUN_BLOCK,
  QP_RUN_CHECKPOINT,
  QP_RUN_RESUME,
  QP_RUN_QUIET,
  QP_RUN_VERBOSE
};

/* What the command line asks of `run`. */
typedef struct qp_run_args {
  const char *config_path, *output, *checkpoint;
  qp_run_options options;
  int verbose, rows, cols, block;
} qp_run_args;

static const char *const qp_run_needs[] = {"output", "a path (the results file to write)",
                                           "checkpoint", "a directory", NULL};

/* The options and the config's path: 0 to go on, 2 on a usage error (said on stderr, with
 * the usage), -1 after --help. */
static int qp_run_parse(int argc, char **argv, qp_run_args *a) {
  static const struct option long_options[] = {
      {"help", no_argument, NULL, 'h'},
      {"output", required_argument, NULL, QP_RUN_OUTPUT},
      {"grid", required_argument, NULL, QP_RUN_GRID},
      {"block", required_argument, NULL, QP_RUN_BLOCK},
      {"checkpoint", required_argument, NULL, QP_RUN_CHECKPOINT},
      {"resume", no_argument, NULL, QP_RUN_RESUME},
      {"quiet", no_argument, NULL, QP_RUN_QUIET},
      {"verbose", no_argument, NULL, QP_RUN_VERBOSE},
      {NULL, 0, NULL, 0}};
  int ok = 1;
  qp_cmd_getopt_begin();
  for (int c; ok && (c = qp_cmd_getopt("run", argc, argv, long_options, qp_run_needs)) != -1;) {
    switch (c) {
    case 'h': qp_run_usage(stdout); return -1;
    case QP_RUN_QUIET: a->options.progress = 0; break;
    case QP_RUN_VERBOSE: a->verbose = 1; break;
    case QP_RUN_RESUME: a->options.resume = 1; break;
    case QP_RUN_GRID: ok = qp_cmd_parse_grid("--grid", optarg, &a->rows, &a->cols); break;
    case QP_RUN_BLOCK:
      ok = qp_cmd_parse_count("--block", optarg, 1, QP_GRID_BLOCK_MAX, &a->block);
      break;
    case QP_RUN_OUTPUT: a->output = optarg; break;
    case QP_RUN_CHECKPOINT: a->checkpoint = optarg; break;
    default: ok = 0; /* qp_cmd_getopt said why */
    }
  }
  /* An empty path (--output ''), as a missing one. */
  for (int i = 0; ok && i < 2; ++i) {
    const char *path = i ? a->checkpoint : a->output;
    if (path && !path[0]) {
      fprintf(stderr, "qmlpipe run: --%s needs %s\n", qp_run_needs[2 * i], qp_run_needs[2 * i + 1]);
      ok = 0;
    }
  }
  if (ok && argc - optind > 1)
    fprintf(stderr, "qmlpipe run: unexpected argument '%s'\n", argv[optind + 1]);
  if (ok && argc - optind == 1) a->config_path = argv[optind];
  if (!ok || !a->config_path) {
    qp_run_usage(stderr);
    return 2;
  }
  return 0;
}

/* The command line over the config: the grid, the block, the checkpoint directory and the
 * results file (`source` receives where its path came from, for messages). 0, or 2 with the
 * reason on stderr. */
static int qp_run_apply(const qp_run_args *a, qp_config *cfg, char *source, size_t size) {
  /* The command line's grid over the config's (the driver sets the grid up from cfg). */
  if (a->rows > 0) {
    cfg->grid_rows = a->rows;
    cfg->grid_cols = a->cols;
  }
  if (a->block > 0) cfg->grid_block = a->block;
  if (a->rows > 0 && a->rows * a->cols != qp_comm_size()) {
    if (qp_comm_rank() == 0)
      fprintf(stderr, "qmlpipe run: --grid %dx%d needs %d ranks, but qmlpipe runs on %d\n", a->rows,
              a->cols, a->rows * a->cols, qp_comm_size());
    return 2;
  }
  if (a->checkpoint) snprintf(cfg->checkpoint, sizeof cfg->checkpoint, "%s", a->checkpoint);
  if (a->options.resume && !cfg->checkpoint[0]) {
    fprintf(stderr, "qmlpipe run: --resume needs a checkpoint directory (--checkpoint DIR or the "
                    "config's 'checkpoint')\n");
    return 2;
  }
  if (a->output) {
    if (strlen(a->output) >= sizeof cfg->output) {
      fprintf(stderr, "qmlpipe run: --output is longer than %zu characters\n",
              sizeof cfg->output - 1);
      return 2;
    }
    snprintf(cfg->output, sizeof cfg->output, "%s", a->output);
    snprintf(source, size, "--output");
  } else {
    snprintf(source, size, "config '%s' key 'output'", a->config_path);
  }
  return 0;
}

/* The results file is checked now, not after hours of work (rank 0 writes): its directory,
 * what it is, that it is no input, and a temporary made and removed beside it. What a run
 * killed outright (SIGKILL) left there goes first, with a note. And the checkpoint directory
 * (made when missing), before the first stage. Collective: every rank gets rank 0's verdict. */
static qp_err qp_run_check_outputs(const qp_run_args *a, const qp_config *cfg, const char *source) {
  if (qp_comm_rank() == 0) qp_atomic_remove_stale(cfg->output, stderr);
  qp_err err = qp_comm_rank() == 0 ? qp_results_path_check_output(cfg, source) : QP_OK;
  if (err == QP_OK && cfg->checkpoint[0] && qp_comm_rank() == 0)
    err = qp_results_path_make_dir(cfg->checkpoint,
                                   a->checkpoint ? "--checkpoint" : "config key 'checkpoint'");
  return qp_comm_agree(err);
}

/* Rank 0's summary of a finished run, and what the accounting cost it beside the warm-up (read
 * by qmlpipe-bench). */
static void qp_run_report(const qp_problem *problem, const qp_meter_sample *baseline,
                          const qp_run_options *options) {
  if (qp_comm_rank() != 0) return;
  const double cost = qp_self_cost_begin();
  qp_run_summary(problem, baseline);
  fflush(stdout);
  qp_self_cost_end(cost);
  double commit_seconds = 0.0;
  size_t commit_bytes = 0;
  qp_budget_commit_totals(&commit_seconds, &commit_bytes);
  if (options->progress)
    fprintf(stderr,
            "[qmlpipe] accounting %.4f s (meters and stage records, timeline start and stop, "
            "budget report), timeline sampler %.4f s CPU; page commits %.4f s for %.1f MiB\n",
            qp_self_cost_seconds(), qp_timeline_sampler_cpu_seconds(), commit_seconds,
            (double)commit_bytes / 1048576.0);
}

int qp_cmd_run(int argc, char **argv) {
  qp_run_args a = {.options = {.progress = 1, .write_results = 1}};
  const int parsed = qp_run_parse(argc, argv, &a);
  if (parsed) return parsed < 0 ? 0 : parsed;
  /* Several copies started without MPI would each run the whole analysis onto one file. */
  qp_err err = qp_launch_check(qp_comm_active(), QP_HAVE_MPI, qp_env_process, NULL);
  if (err != QP_OK) {
    qp_error_print(stderr, a.verbose);
    return qp_err_exit_status(err);
  }
  qp_config cfg;
  err = qp_config_load(a.config_path, &cfg);
  if (err != QP_OK) {
    qp_error_print(stderr, a.verbose);
    return qp_err_exit_status(err);
  }
  char source[QP_PATH_MAX + 64];
  if (qp_run_apply(&a, &cfg, source, sizeof source)) {
    qp_config_free(&cfg);
    return 2;
  }
  err = qp_run_check_outputs(&a, &cfg, source);
  /* Inside a Slurm job: how its accounting counts memory, for validate --sacct. */
  qp_slurm_gather gather;
  if (qp_slurm_gather_find(&gather)) {
    a.options.slurm_gather = gather.type;
    a.options.slurm_gather_source = gather.source;
  }
  qp_problem problem;
  qp_meter_sample baseline;
  if (err == QP_OK) err = qp_driver_run(&cfg, &a.options, &problem, &baseline);
  if (err != QP_OK) {
    /* Every rank has the same error (the stages agree on it): rank 0 says it. */
    if (qp_comm_rank() == 0) qp_error_print(stderr, a.verbose);
    qp_config_free(&cfg);
    return qp_err_exit_status(err);
  }
  qp_run_report(&problem, &baseline, &a.options);
  qp_problem_free(&problem);
  qp_config_free(&cfg);
  /* The cuda context's blocks (pinned staging on the host, the cuBLAS workspace on the
   * device) live until the backend ends: first found on an H200, where every cuda run ended
   * in "budget blocks still alive at exit". */
  qp_linalg_backend_end();
  if (qp_budget_current(QP_SPACE_HOST) != 0 || qp_budget_current(QP_SPACE_DEVICE) != 0) {
    fprintf(stderr, "qmlpipe: internal error: budget blocks still alive at exit:\n");
    qp_budget_dump_live(stderr);
    return qp_err_exit_status(QP_ERR_INTERNAL);
  }
  return 0;
}
