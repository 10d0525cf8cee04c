/* cmd_run.c: `qmlpipe run CONFIG.yaml`: the analysis, a summary on stdout. */
#include <stdio.h>
#include <string.h>

#include "atomic_file.h"
#include "comm.h"
#include "cmd_args.h"
#include "commands.h"
#include "grid.h"
#include "driver.h"
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
           measured / 1048576.0, r->resumed ? "resumed" : exact ? "yes" : "NO");
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

int qp_cmd_run(int argc, char **argv) {
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
  static const char *const needs[] = {"output", "a path (the results file to write)",
                                      "checkpoint", "a directory", NULL};
  const char *config_path = NULL, *output = NULL, *checkpoint = NULL;
  qp_run_options options = {.progress = 1, .write_results = 1};
  int verbose = 0, rows = 0, cols = 0, block = 0, ok = 1;
  qp_cmd_getopt_begin();
  for (int c; ok && (c = qp_cmd_getopt("run", argc, argv, long_options, needs)) != -1;) {
    switch (c) {
    case 'h': qp_run_usage(stdout); return 0;
    case QP_RUN_QUIET: options.progress = 0; break;
    case QP_RUN_VERBOSE: verbose = 1; break;
    case QP_RUN_RESUME: options.resume = 1; break;
    case QP_RUN_GRID: ok = qp_cmd_parse_grid("--grid", optarg, &rows, &cols); break;
    case QP_RUN_BLOCK:
      ok = qp_cmd_parse_count("--block", optarg, 1, QP_GRID_BLOCK_MAX, &block);
      break;
    case QP_RUN_OUTPUT: output = optarg; break;
    case QP_RUN_CHECKPOINT: checkpoint = optarg; break;
    default: ok = 0; /* qp_cmd_getopt said why */
    }
  }
  /* An empty path (--output ''), as a missing one. */
  for (int i = 0; ok && i < 2; ++i) {
    const char *path = i ? checkpoint : output;
    if (path && !path[0]) {
      fprintf(stderr, "qmlpipe run: --%s needs %s\n", needs[2 * i], needs[2 * i + 1]);
      ok = 0;
    }
  }
  if (ok && argc - optind > 1)
    fprintf(stderr, "qmlpipe run: unexpected argument '%s'\n", argv[optind + 1]);
  if (ok && argc - optind == 1) config_path = argv[optind];
  if (!ok || !config_path) {
    qp_run_usage(stderr);
    return 2;
  }
  /* Several copies started without MPI would each run the whole analysis onto one file. */
  qp_err err = qp_launch_check(qp_comm_active(), QP_HAVE_MPI, qp_env_process, NULL);
  if (err != QP_OK) {
    qp_error_print(stderr, verbose);
    return qp_err_exit_status(err);
  }
  qp_config cfg;
  err = qp_config_load(config_path, &cfg);
  if (err != QP_OK) {
    qp_error_print(stderr, verbose);
    return qp_err_exit_status(err);
  }
  /* The command line's grid over the config's (the driver sets the grid up from cfg). */
  if (rows > 0) {
    cfg.grid_rows = rows;
    cfg.grid_cols = cols;
  }
  if (block > 0) cfg.grid_block = block;
  if (rows > 0 && rows * cols != qp_comm_size()) {
    if (qp_comm_rank() == 0)
      fprintf(stderr, "qmlpipe run: --grid %dx%d needs %d ranks, but qmlpipe runs on %d\n", rows,
              cols, rows * cols, qp_comm_size());
    qp_config_free(&cfg);
    return 2;
  }
  if (checkpoint) snprintf(cfg.checkpoint, sizeof cfg.checkpoint, "%s", checkpoint);
  if (options.resume && !cfg.checkpoint[0]) {
    fprintf(stderr, "qmlpipe run: --resume needs a checkpoint directory (--checkpoint DIR or the "
                    "config's 'checkpoint')\n");
    qp_config_free(&cfg);
    return 2;
  }
  char source[QP_PATH_MAX + 64];
  if (output) {
    if (strlen(output) >= sizeof cfg.output) {
      fprintf(stderr, "qmlpipe run: --output is longer than %zu characters\n",
              sizeof cfg.output - 1);
      qp_config_free(&cfg);
      return 2;
    }
    snprintf(cfg.output, sizeof cfg.output, "%s", output);
    snprintf(source, sizeof source, "--output");
  } else {
    snprintf(source, sizeof source, "config '%s' key 'output'", config_path);
  }
  /* The results file is checked now, not after hours of work (rank 0 writes): its directory,
   * what it is, that it is no input, and a temporary made and removed beside it. What a run
   * killed outright (SIGKILL) left there goes first, with a note. */
  if (qp_comm_rank() == 0) qp_atomic_remove_stale(cfg.output, stderr);
  err = qp_comm_rank() == 0 ? qp_results_path_check_output(&cfg, source) : QP_OK;
  /* And the checkpoint directory (made when missing), before the first stage. */
  if (err == QP_OK && cfg.checkpoint[0] && qp_comm_rank() == 0)
    err = qp_results_path_make_dir(cfg.checkpoint,
                                   checkpoint ? "--checkpoint" : "config key 'checkpoint'");
  err = qp_comm_agree(err);
  if (err != QP_OK) {
    if (qp_comm_rank() == 0) qp_error_print(stderr, verbose);
    qp_config_free(&cfg);
    return qp_err_exit_status(err);
  }
  qp_problem problem;
  qp_meter_sample baseline;
  err = qp_driver_run(&cfg, &options, &problem, &baseline);
  if (err != QP_OK) {
    /* Every rank has the same error (the stages agree on it): rank 0 says it. */
    if (qp_comm_rank() == 0) qp_error_print(stderr, verbose);
    qp_config_free(&cfg);
    return qp_err_exit_status(err);
  }
  if (qp_comm_rank() == 0) {
    const double cost = qp_self_cost_begin();
    qp_run_summary(&problem, &baseline);
    fflush(stdout);
    qp_self_cost_end(cost);
    /* What the accounting cost this run beside the warm-up (read by qmlpipe-bench). */
    double commit_seconds = 0.0;
    size_t commit_bytes = 0;
    qp_budget_commit_totals(&commit_seconds, &commit_bytes);
    if (options.progress)
      fprintf(stderr,
              "[qmlpipe] accounting %.4f s (meters and stage records, timeline start and stop, "
              "budget report), timeline sampler %.4f s CPU; page commits %.4f s for %.1f MiB\n",
              qp_self_cost_seconds(), qp_timeline_sampler_cpu_seconds(), commit_seconds,
              (double)commit_bytes / 1048576.0);
  }
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
