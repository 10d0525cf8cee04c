/* cmd_plan.c: `qmlpipe plan CONFIG.yaml`: the planner's decision for a config (route, chunks)
 * and the predicted peak of every stage, against memory.host_limit. Reads the mask (or takes
 * the config's `dimensions:`); allocates nothing of size n_pix^2. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "cmd_common.h"
#include "commands.h"
#include "config_output.h"
#include "plan_job.h"
#include "planner.h"

static void qp_plan_usage(FILE *out) {
  fprintf(
      out,
      "usage: qmlpipe plan CONFIG.yaml [--ranks P [--grid RxC] [--block B] [--ranks-per-node K]\n"
      "       [--nodes N]] [--mem-per-node M] [--json] [--sbatch FILE [--force]\n"
      "       [--cpus-per-task C] [--partition NAME] [--account NAME] [--keep-output]\n"
      "       [--checkpoint DIR]]\n"
      "       [--gpus N] [--job-limit]\n"
      "  Prints the route the planner picks (path, harmonic method, chunks of the\n"
      "  pixel-direct products and bin matrices under memory.host_limit and\n"
      "  memory.device_limit; on a device backend, the maps held on the device at once\n"
      "  when memory.device_limit cannot hold all of them), why, and the\n"
      "  predicted peak of each stage; on a device backend also each stage's device peak\n"
      "  (the backend's own workspaces included where they can be known without a GPU)\n"
      "  and the device context memory.device_limit must hold besides\n"
      "  (memory.device_overhead). `qmlpipe budget` prints the terms of that plan.\n"
      "  A config may give `dimensions: {n_pix, n_modes, lmax_signal, lmax, n_bins}` in\n"
      "  place of maps and mask to size a job before having data. Exit status 0 when the\n"
      "  plan fits memory.host_limit (and --mem-per-node), else %d. backend: cuda is\n"
      "  refused with --ranks above 1 (one process on one GPU); backend: hostdev prints\n"
      "  each rank's device peak (block-cyclic over the ranks' devices, "
      "docs/gpu.md).\n" QP_SIZING_HELP
      "    --nodes N           the job's nodes (default: P / K rounded up; alone, K = P / N\n"
      "                        rounded up)\n"
      "  The job (docs/plan-json.md, README 'Slurm in three commands'):\n"
      "    --json              the plan as one JSON object on stdout, in place of the text\n"
      "    --sbatch FILE       write FILE, a ready Slurm job script (executable; an existing\n"
      "                        FILE is refused, exit %d, unless --force): --mem per node =\n"
      "                        the largest node's predicted peak + 10%% (at least 256 MiB);\n"
      "                        --nodes, --ntasks(-per-node), --cpus-per-task; --time = the\n"
      "                        route's flops at the dgemm rate per core (the calibration\n"
      "                        file's, else timed now) x cores x %.0f + %d min; srun --mpi=pmix "
      "... run --grid RxC --block B (the\n"
      "                        plan's grid) or, without --ranks, srun --mpi=none; then\n"
      "                        `report` and `validate --tolerance %s` of the results. The\n"
      "                        script holds the absolute paths of the config and of this\n"
      "                        qmlpipe. No script is written for a plan that does not fit.\n"
      "    --force             replace an existing FILE\n"
      "    --job-limit         plan to the memory limit this job enforces, found as `run`\n"
      "                        finds it (cgroup, SLURM_MEM_PER_NODE, RLIMIT_AS; shared by\n"
      "                        --ranks-per-node ranks): the job script's own plan line.\n"
      "                        With --sbatch, --mem is sized with --cpus-per-task threads\n"
      "                        (the script's OMP_NUM_THREADS), not this shell's\n"
      "    --cpus-per-task C   cores (BLAS/OpenMP threads) of each task (default 1)\n"
      "    --partition NAME, --account NAME   #SBATCH lines for the site\n"
      "    --keep-output       write the config's `output:` (each job overwrites it) in place\n"
      "                        of results-$SLURM_JOB_ID.h5 next to the config (the default)\n"
      "    --checkpoint DIR    the script runs `run --checkpoint DIR --resume`, asks for\n"
      "                        --requeue and requeues its own job (`scontrol requeue`) when\n"
      "                        srun ends with a status that is not qmlpipe's own (a rank\n"
      "                        killed: 137, a node lost, a step that could not start: 1), at\n"
      "                        most %d times (SLURM_RESTART_COUNT); the requeued job resumes\n"
      "                        after the last checkpoint\n"
      "    --gpus N            GPUs per node, one rank each (docs/gpu.md): N ranks per node\n"
      "                        (--ranks at least N; N = 1 without --ranks) and\n"
      "                        #SBATCH --gpus-per-node=N. A config with backend: cuda gets\n"
      "                        one GPU per rank (--gpus-per-node = ranks per node)\n"
      "                        without it\n",
      qp_err_exit_status(QP_ERR_BUDGET), qp_err_exit_status(QP_ERR_IO), QP_JOB_TIME_FACTOR,
      QP_JOB_STARTUP_MINUTES, QP_JOB_VALIDATE_TOLERANCE, QP_JOB_MAX_REQUEUE);
}

static void qp_plan_print(const qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const qp_model *m = &p->plan->model;
  const double mib = 1048576.0;
  printf("qmlpipe plan: %s\n", cfg->source);
  printf("  n_pix %lld (T %lld, Q/U %lld pixels), n_modes %lld, %d parameters, %lld map(s)\n",
         (long long)p->n_pix, (long long)p->n_obs_t, (long long)p->n_obs_p, (long long)p->n_modes,
         p->n_params, (long long)p->n_maps);
  printf("  route: %s\n", p->plan->path_reason);
  if (p->plan->model_dims.cross_maps)
    printf("  cross-spectra: each map of maps crossed with its map of maps2 (C_B, z_B and the "
           "covariance of y beside the auto run's terms)\n");
  if (p->plan->path_used == QP_PATH_PIXEL_DIRECT)
    printf("  fisher_run holds %lld of %d products; spectra_run builds %lld bin matrices at a "
           "time\n",
           (long long)p->plan->model_dims.fisher_chunk, p->n_params,
           (long long)p->plan->model_dims.spectra_chunk);
  const int64_t batch = qp_model_map_batch(&p->plan->model_dims);
  if (batch < p->plan->map_batch_default)
    printf("  maps in batches of %lld of %lld on the device (memory.device_limit)\n",
           (long long)batch, (long long)p->n_maps);
  else if (batch < p->n_maps)
    printf("  maps read in batches of %lld of %lld (the default batch: its terms within 1/16 of "
           "the largest matrix)\n",
           (long long)batch, (long long)p->n_maps);
  if (qp_model_w_chunked(&p->plan->model_dims))
    printf("  W in blocks of %lld of %lld columns on the device (memory.device_limit)\n",
           (long long)p->plan->model_dims.w_block, (long long)p->n_modes);
  if (p->plan->model_dims.host_panel > 0)
    printf("  host windows in panels of %lld local line%s (%s; memory.host_limit)\n",
           (long long)p->plan->model_dims.host_panel,
           p->plan->model_dims.host_panel == 1 ? "" : "s",
           qp_plan_panel_lines(&p->plan->model_dims));
  /* A checkpoint after a stage (run --checkpoint) holds every buffer alive at its end: the
   * stage's persistent bytes (pipeline/checkpoint.h), per rank; spectra_run writes none. */
  printf("  %-18s %16s %16s %16s\n", "stage", "peak MiB", "with overhead", "checkpoint MiB");
  for (int s = 0; s < QP_STAGE_COUNT; ++s) {
    size_t peak = qp_model_stage_peak(m, (qp_stage_id)s);
    printf("  %-18s %16.2f %16.2f %16.2f\n", qp_stage_name((qp_stage_id)s), peak / mib,
           (peak + m->overhead_bytes) / mib,
           s == QP_STAGE_SPECTRA_RUN ? 0.0 : qp_checkpoint_stage_bytes(m, s) / mib);
  }
  const size_t disk = qp_checkpoint_disk_bytes(m);
  printf("  run --checkpoint needs at most %.2f MiB of disk per rank (two consecutive stages' "
         "checkpoints, while the newer is written)\n",
         disk / mib);
  size_t need = qp_model_peak(m) + m->overhead_bytes;
  const double limit = p->plan->host_limit; /* memory.host_limit, or the --mem-per-node share */
  if (limit > 0 && p->plan->limit_from_job) /* --job-limit: the job's, and where from */
    printf("  lifetime peak %.2f MiB of the job's limit %.2f MiB (%s): %s\n", need / mib,
           limit / mib, p->plan->limit_source, (double)need <= limit ? "fits" : "does not fit");
  else if (limit > 0)
    printf("  lifetime peak %.2f MiB of memory.host_limit %.2f MiB: %s\n", need / mib, limit / mib,
           (double)need <= limit ? "fits" : "does not fit");
  else
    printf("  lifetime peak %.2f MiB (no memory.host_limit set)\n", need / mib);
  if (!qp_model_has_device(m)) return;
  /* A device backend: its matrices and its own buffers (library workspaces, pivots) on the
   * device, the context on top (docs/gpu.md, "The device budget"). */
  printf("  %-18s %16s\n", "stage", "device peak MiB");
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    printf("  %-18s %16.2f\n", qp_stage_name((qp_stage_id)s),
           qp_model_stage_peak_in(m, s, QP_SPACE_DEVICE) / mib);
  if (!p->plan->model_dims.backend && p->plan->model_dims.grid_rows <= 0)
    printf("  the backend's own workspaces are not in these figures: backend %s sizes them on "
           "its device at run time (docs/gpu.md)\n",
           cfg->backend);
  const double context = qp_plan_device_overhead(p);
  printf("  device context %.2f MiB (%s; untracked, the device meter's baseline)\n", context / mib,
         qp_plan_device_overhead_source(p));
  const double device = (double)qp_model_peak_in(m, QP_SPACE_DEVICE) + context;
  if (cfg->device_limit > 0)
    printf("  device peak with the context %.2f MiB of memory.device_limit %.2f MiB: %s\n",
           device / mib, cfg->device_limit / mib,
           device <= cfg->device_limit ? "fits" : "does not fit");
  else
    printf("  device peak with the context %.2f MiB (no memory.device_limit set)\n", device / mib);
}

/* After the plan: the job's figures, the JSON, the script (only for a plan that fits). */
static qp_err qp_plan_finish(const qp_problem *p, qp_plan_job *job, qp_err limit) {
  /* The script's path first, before the job's figures (which may time a dgemm): the one check
   * of every written file (base/output_path.h): not a device, a FIFO or a directory
   * (--force replaced /dev/null), not the config or one of its inputs, a writable directory. */
  if (job->sbatch && limit == QP_OK)
    QP_CALL(qp_config_output_check(p->cfg, job->sbatch, "--sbatch", "the job script"));
  qp_job_figures f;
  QP_CALL(qp_job_figures_compute(p, job, &f));
  char script[PATH_MAX];
  int written = 0;
  qp_err err = QP_OK;
  if (job->sbatch && limit == QP_OK) {
    err = qp_job_write_sbatch(p, job, &f, script);
    written = err == QP_OK;
  } else if (job->sbatch) {
    fprintf(stderr, "qmlpipe plan: no job script written: the plan does not fit\n");
  }
  if (job->json) {
    qp_job_print_json(stdout, p, job, &f, written ? script : NULL);
  } else if (job->sbatch || limit == QP_OK) {
    printf("\nSlurm job: --nodes=%d --ntasks=%d --cpus-per-task=%d --mem=%lldM --time=%s", f.nodes,
           f.tasks, f.cpus_per_task, (long long)f.mem_mib, f.time);
    if (f.gpus_per_node > 0) printf(" --gpus-per-node=%d", f.gpus_per_node);
    printf("\n");
    if (written) printf("job script: %s (submit: sbatch %s)\n", script, script);
  }
  return err;
}

int qp_cmd_plan(int argc, char **argv) {
  return qp_cmd_with_plan(argc, argv, qp_plan_usage, qp_plan_print, 1, qp_plan_finish);
}
