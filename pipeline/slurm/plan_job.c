/* plan_job.c: see plan_job.h. */
#include "plan_job.h"

#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends.h"
#include "flop_rate.h"

void qp_job_format_time(int64_t minutes, char out[32]) {
  const int64_t most = 365 * 24 * 60;
  if (minutes < 1) minutes = 1;
  if (minutes > most) minutes = most;
  const int64_t days = minutes / 1440, hours = minutes % 1440 / 60, mins = minutes % 60;
  if (days > 0)
    snprintf(out, 32, "%lld-%02lld:%02lld:00", (long long)days, (long long)hours, (long long)mins);
  else
    snprintf(out, 32, "%02lld:%02lld:00", (long long)hours, (long long)mins);
}

qp_err qp_job_figures_compute(const qp_problem *p, const qp_plan_job *job, qp_job_figures *f) {
  memset(f, 0, sizeof *f);
  QP_CALL(
      qp_job_flop_rate(&p->calibration, &f->flops_per_core, f->rate_source, sizeof f->rate_source));
  f->mpi = job->ranks > 0;
  f->tasks = f->mpi ? job->ranks : 1;
  f->tasks_per_node = f->mpi ? (job->per_node < f->tasks ? job->per_node : f->tasks) : 1;
  f->nodes = job->nodes > 0 ? job->nodes : (f->tasks + f->tasks_per_node - 1) / f->tasks_per_node;
  f->cpus_per_task = job->cpus_per_task > 0 ? job->cpus_per_task : 1;
  /* One GPU per rank (linalg/backends/device_choice.h picks it from the local rank): --gpus, which
   * cmd_common.c has made the ranks per node, or the config's backend cuda. */
  const qp_backend *row = qp_backend_find(p->cfg->backend);
  if (job->gpus > 0 || (row && row->gpu)) f->gpus_per_node = f->tasks_per_node;
  const double margin = QP_JOB_MEM_MARGIN * (double)job->node_peak;
  f->margin_bytes =
      margin > (double)QP_JOB_MEM_MARGIN_MIN ? (size_t)ceil(margin) : QP_JOB_MEM_MARGIN_MIN;
  f->mem_mib = (int64_t)ceil(((double)job->node_peak + (double)f->margin_bytes) / 1048576.0);
  const double cores = (double)f->cpus_per_task * (double)f->tasks;
  f->compute_seconds = p->plan->flops / (f->flops_per_core * cores);
  const double minutes =
      ceil(f->compute_seconds * QP_JOB_TIME_FACTOR / 60.0) + QP_JOB_STARTUP_MINUTES;
  f->minutes = minutes < 1e9 ? (int64_t)minutes : (int64_t)1e9;
  qp_job_format_time(f->minutes, f->time);
  if (f->minutes > 365 * 24 * 60) f->minutes = 365 * 24 * 60;
  return QP_OK;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void qp_json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *c = (const unsigned char *)s; *c; ++c) {
    if (*c == '"' || *c == '\\')
      fprintf(out, "\\%c", *c);
    else if (*c == '\n')
      fputs("\\n", out);
    else if (*c == '\t')
      fputs("\\t", out);
    else if (*c < 0x20 || *c == 0x7f)
      fprintf(out, "\\u%04x", *c);
    else
      fputc(*c, out);
  }
  fputc('"', out);
}

/* The absolute path of `path` (which exists), or of a file `path` to be made in an existing
 * directory; 0 with errno when it cannot be resolved. */
static int qp_job_absolute(const char *path, char out[PATH_MAX]) {
  if (realpath(path, out)) return 1;
  if (errno != ENOENT) return 0;
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (slash) {
    const size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) {
      errno = ENAMETOOLONG;
      return 0;
    }
    memcpy(dir, path, n);
    dir[n] = '\0';
    if (n == 0) snprintf(dir, sizeof dir, "/");
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  char real_dir[PATH_MAX];
  if (!realpath(dir, real_dir)) return 0;
  if (base[0] == '\0' || strlen(real_dir) + 1 + strlen(base) >= PATH_MAX) {
    errno = base[0] == '\0' ? EISDIR : ENAMETOOLONG;
    return 0;
  }
  size_t used = strlen(real_dir);
  memcpy(out, real_dir, used);
  if (strcmp(real_dir, "/") != 0) out[used++] = '/';
  memcpy(out + used, base, strlen(base) + 1);
  return 1;
}

void qp_job_print_json(FILE *out, const qp_problem *p, const qp_plan_job *job,
                       const qp_job_figures *f, const char *script) {
  const qp_config *cfg = p->cfg;
  const qp_model *m = &p->plan->model;
  char config[PATH_MAX];
  if (!qp_job_absolute(cfg->source, config)) snprintf(config, sizeof config, "%s", cfg->source);
  fprintf(out, "{\n  \"schema\": \"qmlpipe-plan/1\",\n  \"config\": ");
  qp_json_string(out, config);
  fprintf(out,
          ",\n  \"n_pix\": %lld,\n  \"n_modes\": %lld,\n  \"n_params\": %d,\n  \"n_maps\": %lld,\n"
          "  \"cross\": %s,\n  \"route\": \"%s\",\n  \"reason\": ",
          (long long)p->n_pix, (long long)p->n_modes, p->n_params, (long long)p->n_maps,
          p->plan->model_dims.cross_maps ? "true" : "false", qp_plan_route_name(p->plan));
  qp_json_string(out, p->plan->path_reason);
  fprintf(
      out,
      ",\n  \"chunks\": {\"fisher\": %lld, \"spectra\": %lld, \"maps\": %lld, "
      "\"w_block\": %lld, \"host_panel\": %lld},\n"
      "  \"flops\": %.6e,\n",
      (long long)p->plan->model_dims.fisher_chunk, (long long)p->plan->model_dims.spectra_chunk,
      (long long)qp_model_map_batch(&p->plan->model_dims), (long long)qp_w_block(p),
      (long long)(p->plan->model_dims.host_panel > 0 ? p->plan->model_dims.host_panel : p->n_pix),
      p->plan->flops);
  if (job->ranks > 0)
    fprintf(out,
            "  \"grid\": {\"rows\": %d, \"cols\": %d, \"block\": %d, \"ranks\": %d, "
            "\"ranks_per_node\": %d},\n",
            job->rows, job->cols, job->block, job->ranks, f->tasks_per_node);
  else
    fprintf(out, "  \"grid\": null,\n");
  fprintf(out, "  \"overhead_bytes\": %zu,\n", m->overhead_bytes);
  if (p->plan->host_limit > 0)
    fprintf(out, "  \"limit_bytes\": %.0f,\n", p->plan->host_limit);
  else
    fprintf(out, "  \"limit_bytes\": null,\n");
  if (job->mem_per_node > 0)
    fprintf(out, "  \"mem_per_node_bytes\": %.0f,\n", job->mem_per_node);
  else
    fprintf(out, "  \"mem_per_node_bytes\": null,\n");
  fprintf(out, "  \"stages\": [\n");
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    fprintf(out,
            "    {\"name\": \"%s\", \"peak_bytes\": %zu, \"rank_peak_bytes\": %zu, "
            "\"node_peak_bytes\": %zu}%s\n",
            qp_stage_name((qp_stage_id)s), qp_model_stage_peak(m, (qp_stage_id)s),
            job->rank_stage[s], job->node_stage[s], s + 1 < QP_STAGE_COUNT ? "," : "");
  fprintf(out, "  ],\n  \"rank_peak_bytes\": %zu,\n  \"node_peak_bytes\": %zu,\n", job->rank_peak,
          job->node_peak);
  fprintf(out, "  \"fits\": %s,\n", job->fits ? "true" : "false");
  fprintf(out,
          "  \"sbatch\": {\"mem_mib\": %lld, \"margin_bytes\": %zu, \"nodes\": %d, \"ntasks\": %d, "
          "\"ntasks_per_node\": %d, \"cpus_per_task\": %d, \"gpus_per_node\": %d, \"time\": "
          "\"%s\", \"time_minutes\": "
          "%lld, \"compute_seconds\": %.6g, \"flops_per_core\": %.6g, \"rate_source\": ",
          (long long)f->mem_mib, f->margin_bytes, f->nodes, f->tasks, f->tasks_per_node,
          f->cpus_per_task, f->gpus_per_node, f->time, (long long)f->minutes, f->compute_seconds,
          f->flops_per_core);
  qp_json_string(out, f->rate_source);
  fprintf(out,
          ", \"time_factor\": %g, \"startup_minutes\": %d, \"srun_mpi\": \"%s\", "
          "\"run_args\": [",
          QP_JOB_TIME_FACTOR, QP_JOB_STARTUP_MINUTES, f->mpi ? "pmix" : "none");
  if (f->mpi)
    fprintf(out, "\"--grid\", \"%dx%d\", \"--block\", \"%d\"", job->rows, job->cols, job->block);
  fprintf(out, "], \"script\": ");
  if (script)
    qp_json_string(out, script);
  else
    fputs("null", out);
  fprintf(out, "}\n}\n");
}

/* `s` in single quotes for bash ('\'' for a quote inside). */
static void qp_sh_quote(FILE *out, const char *s) {
  fputc('\'', out);
  for (; *s; ++s)
    if (*s == '\'')
      fputs("'\\''", out);
    else
      fputc(*s, out);
  fputc('\'', out);
}

static int qp_has_control(const char *s) {
  for (; *s; ++s)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
  return 0;
}

/* After `srun ... run --checkpoint --resume || rc=$?`: the job requeues itself when srun ended
 * for a reason other than qmlpipe's own. qmlpipe's statuses (README "Exit status") are 2-12
 * (a refusal or an error that a rerun would meet again) and 128 + the signals it catches
 * (HUP INT QUIT USR1 USR2 ALRM TERM XCPU VTALRM: scancel, the time limit, a preemption: Slurm
 * decides those). srun says 1 when the step could not start and 128 + N when a task died of
 * signal N that qmlpipe does not catch (137: a rank killed, by hand, the OOM killer or its
 * node's loss; --kill-on-bad-exit ends the others). Those are requeued, while
 * SLURM_RESTART_COUNT (Slurm's own requeues count too) is below max_requeue. */
static void qp_job_requeue_lines(FILE *out) {
  fprintf(
      out,
      "if ((rc != 0)); then\n"
      "  restarts=${SLURM_RESTART_COUNT:-0}\n"
      "  case $rc in\n"
      "    [2-9] | 1[0-2] | 129 | 130 | 131 | 138 | 140 | 142 | 143 | 152 | 154) why=\"qmlpipe's "
      "own status\" ;;\n"
      "    *) why= ;;\n"
      "  esac\n"
      "  if [[ -z $why ]] && ((restarts < max_requeue)); then\n"
      "    echo \"qmlpipe job $SLURM_JOB_ID: srun ended with status $rc (a rank killed or a node "
      "lost, not qmlpipe's own status): requeueing it (restart $((restarts + 1)) of at most "
      "$max_requeue); it resumes after the last checkpoint in $checkpoint\" >&2\n"
      "    scontrol requeue \"$SLURM_JOB_ID\" && exit \"$rc\"\n"
      "    why=\"scontrol requeue refused\"\n"
      "  fi\n"
      "  echo \"qmlpipe job $SLURM_JOB_ID: srun ended with status $rc; not requeued (${why:-"
      "already requeued $restarts time(s)}); its checkpoint stays in $checkpoint\" >&2\n"
      "  exit \"$rc\"\n"
      "fi\n");
}

/* The script's text. */
static void qp_job_script(FILE *out, const qp_problem *p, const qp_plan_job *job,
                          const qp_job_figures *f, const char *exe, const char *config,
                          const char *results_dir, const char *keep, const char *checkpoint,
                          const char *script) {
  const double mib = 1048576.0;
  fprintf(out, "#!/bin/bash\n"
               "# A qmlpipe job written by `qmlpipe plan --sbatch`; submit it from any directory:\n"
               "#   sbatch ");
  qp_sh_quote(out, script);
  fprintf(out, "\n# config:  %s\n# qmlpipe: %s (the binary that planned it)\n", config, exe);
  fprintf(out, "# route:   %s\n", p->plan->path_reason);
  if (f->mpi)
    fprintf(out,
            "# grid:    %d x %d, block %d, %d rank(s) per node: the plan's, given to `run` as\n"
            "#          --grid %dx%d --block %d (they override the config's grid)\n",
            job->rows, job->cols, job->block, f->tasks_per_node, job->rows, job->cols, job->block);
  else
    fprintf(out, "# one process without MPI (srun --mpi=none); plan with --ranks P for MPI\n");
  fprintf(out,
          "# --mem:   per node: the largest node's predicted peak, %.1f MiB (overhead included),\n"
          "#          plus a margin of %.0f%% or at least %zu MiB (%.1f MiB), rounded up to MiB\n",
          (double)job->node_peak / mib, 100.0 * QP_JOB_MEM_MARGIN, QP_JOB_MEM_MARGIN_MIN >> 20,
          (double)f->margin_bytes / mib);
  fprintf(out,
          "# --time:  the route's leading cost, %.3e flop, at %.1f GFLOP/s per core x %d cpu(s)\n"
          "#          per task x %d task(s) = %.0f s; times %.0f (safety), plus %d minutes of\n"
          "#          start-up, rounded up to minutes. The rate: %s.\n"
          "#          `qmlpipe report` of a first job prints each stage's seconds.\n",
          p->plan->flops, f->flops_per_core * 1e-9, f->cpus_per_task, f->tasks, f->compute_seconds,
          QP_JOB_TIME_FACTOR, QP_JOB_STARTUP_MINUTES, f->rate_source);
  if (f->gpus_per_node > 0)
    fprintf(out,
            "# gpus:    %d per node, one per rank: each rank takes GPU (SLURM_LOCALID %% the GPUs\n"
            "#          it sees), docs/gpu.md; --time is still the CPU estimate (an upper bound)\n",
            f->gpus_per_node);
  if (keep)
    fprintf(out, "# results: the config's output, %s (each job overwrites it)\n", keep);
  else
    fprintf(out, "# results: %s/results-$SLURM_JOB_ID.h5 (one file per job, next to the config)\n",
            results_dir);
  if (checkpoint)
    fprintf(out,
            "# restart: run --checkpoint %s --resume; when srun ends with a status that is not\n"
            "#          qmlpipe's own (a rank killed: 137, a node lost, a step that could not\n"
            "#          start: 1) the job requeues itself (scontrol requeue; --requeue), at most\n"
            "#          max_requeue times in all (SLURM_RESTART_COUNT), and resumes there\n",
            checkpoint);
  fprintf(out, "#SBATCH --job-name=qmlpipe\n#SBATCH --nodes=%d\n#SBATCH --ntasks=%d\n", f->nodes,
          f->tasks);
  if (f->mpi) fprintf(out, "#SBATCH --ntasks-per-node=%d\n", f->tasks_per_node);
  fprintf(out, "#SBATCH --cpus-per-task=%d\n#SBATCH --mem=%lldM\n#SBATCH --time=%s\n",
          f->cpus_per_task, (long long)f->mem_mib, f->time);
  if (f->gpus_per_node > 0) fprintf(out, "#SBATCH --gpus-per-node=%d\n", f->gpus_per_node);
  if (job->partition) fprintf(out, "#SBATCH --partition=%s\n", job->partition);
  if (job->account) fprintf(out, "#SBATCH --account=%s\n", job->account);
  fprintf(out, "#SBATCH --output=qmlpipe-%%j.out\n");
  /* Requeued (by Slurm after a lost node, or by the script below), the job runs again with the
   * same id: its log keeps the first run's lines. */
  if (checkpoint) fprintf(out, "#SBATCH --requeue\n#SBATCH --open-mode=append\n");
  fprintf(out, "set -euo pipefail\n\nqmlpipe=");
  qp_sh_quote(out, exe);
  fprintf(out, "\nconfig=");
  qp_sh_quote(out, config);
  if (keep) {
    fprintf(out, "\nresults=");
    qp_sh_quote(out, keep);
    fputc('\n', out);
  } else {
    fprintf(out, "\nresults_dir=");
    qp_sh_quote(out, results_dir);
    fprintf(out, "\nresults=$results_dir/results-${SLURM_JOB_ID:?not inside a Slurm job}.h5\n");
  }
  if (checkpoint) {
    fprintf(out, "checkpoint=");
    qp_sh_quote(out, checkpoint);
    fprintf(out, "\nmax_requeue=%d\n", QP_JOB_MAX_REQUEUE);
  }
  fprintf(out,
          "\n# BLAS and OpenMP threads on the task's cores, one after the other, never nested.\n"
          "export OMP_NUM_THREADS=%d\nexport OPENBLAS_NUM_THREADS=%d\n\n",
          f->cpus_per_task, f->cpus_per_task);
  if (f->mpi) {
    fprintf(out,
            "\"$qmlpipe\" plan \"$config\" --ranks %d --grid %dx%d --block %d "
            "--ranks-per-node %d --job-limit\n",
            job->ranks, job->rows, job->cols, job->block, f->tasks_per_node);
    fprintf(out,
            "# pmix: Open MPI 4 and 5; use --mpi=pmi2 where MPI is built with Slurm's PMI-2.\n"
            "# --kill-on-bad-exit=1: a rank that dies (its node lost, killed) ends the step at\n"
            "# once; the other ranks would otherwise wait in MPI until the time limit.\n"
            "%ssrun --mpi=pmix --kill-on-bad-exit=1 --nodes=%d --ntasks=%d --ntasks-per-node=%d "
            "--cpus-per-task=%d --cpu-bind=cores \\\n  \"$qmlpipe\" run \"$config\" --output "
            "\"$results\" --grid %dx%d --block %d%s\n",
            checkpoint ? "rc=0\n" : "", f->nodes, f->tasks, f->tasks_per_node, f->cpus_per_task,
            job->rows, job->cols, job->block,
            checkpoint ? " \\\n  --checkpoint \"$checkpoint\" --resume || rc=$?" : "");
    if (checkpoint) qp_job_requeue_lines(out);
    fprintf(out, "\"$qmlpipe\" report \"$results\" --ranks\n");
  } else {
    fprintf(out, "\"$qmlpipe\" plan \"$config\" --job-limit\n");
    fprintf(out,
            "# --mpi=none: one process, whatever the site's default PMI plugin.\n"
            "%ssrun --mpi=none --ntasks=1 --cpus-per-task=%d --cpu-bind=cores \\\n"
            "  \"$qmlpipe\" run \"$config\" --output \"$results\"%s\n",
            checkpoint ? "rc=0\n" : "", f->cpus_per_task,
            checkpoint ? " --checkpoint \"$checkpoint\" --resume || rc=$?" : "");
    if (checkpoint) qp_job_requeue_lines(out);
    fprintf(out, "\"$qmlpipe\" report \"$results\"\n");
  }
  fprintf(out, "\"$qmlpipe\" validate \"$results\" --tolerance %s\n", QP_JOB_VALIDATE_TOLERANCE);
}

qp_err qp_job_write_sbatch(const qp_problem *p, const qp_plan_job *job, const qp_job_figures *f,
                           char *script) {
  const qp_config *cfg = p->cfg;
  char exe[PATH_MAX], config[PATH_MAX], results_dir[PATH_MAX], keep[PATH_MAX], ck[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  QP_CHECK(n > 0, QP_ERR_IO, "cannot find the qmlpipe binary (/proc/self/exe): %s",
           strerror(errno));
  exe[n] = '\0';
  QP_CHECK(qp_job_absolute(job->sbatch, script), QP_ERR_IO,
           "cannot write the job script '%s': its directory: %s", job->sbatch, strerror(errno));
  QP_CHECK(realpath(cfg->source, config), QP_ERR_IO, "cannot resolve the config '%s': %s",
           cfg->source, strerror(errno));
  snprintf(results_dir, sizeof results_dir, "%s", config);
  char *slash = strrchr(results_dir, '/');
  if (slash == results_dir)
    slash[1] = '\0';
  else if (slash)
    *slash = '\0';
  if (job->keep_output) {
    /* Relative (no `output:` key): the directory `plan` runs in, as for `run` here. */
    QP_CHECK(qp_job_absolute(cfg->output, keep), QP_ERR_IO,
             "config '%s': cannot resolve the output '%s' (--keep-output): %s", cfg->source,
             cfg->output, strerror(errno));
  }
  /* Absolute: the job runs from wherever it is submitted; made by `run` when missing. */
  if (job->checkpoint)
    QP_CHECK(qp_job_absolute(job->checkpoint, ck), QP_ERR_IO,
             "--checkpoint '%s': cannot resolve the directory (its parent must exist): %s",
             job->checkpoint, strerror(errno));
  QP_CHECK(!qp_has_control(exe) && !qp_has_control(config) && !qp_has_control(script) &&
               !(job->keep_output && qp_has_control(keep)) &&
               !(job->checkpoint && qp_has_control(ck)),
           QP_ERR_INPUT, "a path of the job script '%s' holds a control character", script);
  QP_CHECK(job->force || access(script, F_OK) != 0, QP_ERR_IO,
           "the job script '%s' exists (--force replaces it)", script);

  /* A private temporary beside the script (atomic_file.h), executable like a script made by
   * hand (0777 less the umask, at most 0755); linked into place unless --force. */
  qp_atomic_file temp;
  FILE *out = NULL;
  QP_CALL(qp_atomic_begin(script, &temp));
  qp_err err = qp_atomic_fopen(&temp, 0755, &out);
  if (err != QP_OK) goto done;
  qp_job_script(out, p, job, f, exe, config, results_dir, job->keep_output ? keep : NULL,
                job->checkpoint ? ck : NULL, script);
  err = qp_atomic_fcommit(&temp, out, job->force);
  if (err != QP_OK && !job->force && access(script, F_OK) == 0) /* made meanwhile */
    err = qp_error_set(QP_ERR_IO, __FILE__, __LINE__, __func__,
                       "the job script '%s' exists (--force replaces it)", script);
done:
  if (err != QP_OK) qp_atomic_abort(&temp);
  return err;
}
