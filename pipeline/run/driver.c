/* driver.c: the stages in order, each inside its budget stage (driver.h). */
#include "driver.h"

#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends.h"
#include "blas_library.h"
#include "bytes_text.h"
#include "checkpoint.h"
#include "comm.h"
#include "conditioning.h"
#include "fault.h"
#include "h5_matrix.h"
#include "host_window.h"
#include "inputs.h"
#include "job_limit.h"
#include "meter_device.h"
#include "openblas_tuning.h"
#include "planner.h"
#include "results_h5.h"
#include "self_cost.h"
#include "stages.h"
#include "timeline.h"

typedef qp_err (*qp_stage_fn)(qp_problem *p);

/* Pushes the budget stage, runs it (or, resumed, restores it from the checkpoint), pops it,
 * whatever the outcome; then writes its checkpoint. */
static qp_err qp_run_stage(qp_stage_id id, qp_stage_fn fn, qp_problem *p, const qp_checkpoint *ck) {
  const int resumed = (int)id <= ck->resume_after;
  double cost = qp_self_cost_begin();
  QP_CALL(qp_stage_push(qp_stage_name(id)));
  qp_self_cost_end(cost);
  if (resumed) qp_stage_mark_resumed();
  if (p->progress)
    fprintf(stderr, "[qmlpipe] %s ...%s\n", qp_stage_name(id),
            resumed ? " resumed from the checkpoint" : "");
  /* With MPI every rank leaves the stage with the same status: a rank that failed alone
   * would leave the others waiting in the next collective. */
  /* A device run's host staging for the stage, as the model sizes it (host_window.h). */
  const qp_model_term *staging = NULL;
  for (int i = 0; i < p->plan->model.n_terms; ++i)
    if (strcmp(p->plan->model.terms[i].name, QP_TERM_HOST_STAGING) == 0 &&
        p->plan->model.terms[i].stage_alloc == (int)id)
      staging = &p->plan->model.terms[i];
  qp_err err = staging && !resumed ? qp_host_staging_reserve(staging->bytes) : QP_OK;
  if (err == QP_OK) err = resumed ? qp_checkpoint_restore(ck, p, id) : fn(p);
  qp_host_staging_release();
  err = qp_comm_agree(err);
  if (err != QP_OK) qp_error_trace(__FILE__, __LINE__, qp_stage_name(id));
  cost = qp_self_cost_begin();
  qp_err pop = qp_stage_pop();
  qp_self_cost_end(cost);
  QP_CALL(err);
  QP_CALL(pop);
  if (p->progress) {
    const qp_stage_record *r = qp_stage_record_find(qp_stage_name(id));
    fprintf(stderr, "[qmlpipe] %s done in %.2f s (%.2f GFLOP/s), tracked peak %.1f MiB\n", r->name,
            r->seconds, r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0.0,
            (double)r->tracked_peak / 1048576.0);
  }
  if (!resumed && id != QP_STAGE_SPECTRA_RUN) qp_checkpoint_save(ck, p, id);
  if (!resumed) qp_fault_stop_after_stage(qp_stage_name(id), qp_comm_agree); /* a test hook */
  return QP_OK;
}

qp_err qp_driver_backend(const qp_config *cfg, const qp_linalg_ops **ops) {
  const int ranks = qp_comm_size();
  const qp_backend *row = qp_backend_find(cfg->backend);
  QP_CHECK(row, QP_ERR_INPUT, "config '%s': unknown backend '%s'", cfg->source, cfg->backend);
  /* A backend with a distributed form runs as itself on one rank; dist is distributed. */
  if (ranks == 1 && row->on_ranks) {
    /* A grid of several ranks asked of one process is a mistake, not a preference: it was
     * ignored (issue 38). */
    QP_CHECK(cfg->grid_rows <= 0 || (int64_t)cfg->grid_rows * cfg->grid_cols == 1, QP_ERR_INPUT,
             "config '%s': grid %d x %d needs %lld MPI ranks, but qmlpipe runs on one process "
             "(start it with mpiexec -n %lld, or remove the grid)",
             cfg->source, cfg->grid_rows, cfg->grid_cols,
             (long long)cfg->grid_rows * cfg->grid_cols,
             (long long)cfg->grid_rows * cfg->grid_cols);
    QP_CALL(qp_linalg_backend(cfg->backend, ops));
    return QP_OK;
  }
  /* Several ranks (or backend: dist) run a distributed backend: dist, or on a device cuda-dist
   * (a GPU per rank, the tiled algorithms: tiled_table.h) or hostdev-dist (its emulation), each
   * rank's block-cyclic part on its own device. On several ranks the cpu or cuda backend would
   * repeat the whole analysis on each. */
  QP_CHECK(qp_linalg_dist_ops(), QP_ERR_UNSUPPORTED,
           "qmlpipe runs on %d MPI ranks, but this build has no distributed backend (configure "
           "with -DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON)",
           ranks);
  QP_CHECK(qp_comm_active(), QP_ERR_MPI,
           "config '%s': backend dist needs MPI: start qmlpipe with mpiexec or srun", cfg->source);
  const qp_grid *current = qp_grid_current();
  const int block = cfg->grid_block > 0 ? cfg->grid_block : QP_GRID_DEFAULT_BLOCK;
  if (!current || current->block != block ||
      (cfg->grid_rows > 0 &&
       (current->nprow != cfg->grid_rows || current->npcol != cfg->grid_cols))) {
    QP_CHECK((cfg->grid_rows > 0) == (cfg->grid_cols > 0), QP_ERR_INPUT,
             "config '%s': grid needs both rows and cols (or neither)", cfg->source);
    QP_CALL(qp_grid_init(cfg->grid_rows, cfg->grid_cols, block, NULL));
  }
  QP_CALL(qp_linalg_backend(row->on_ranks ? row->on_ranks : row->name, ops));
  return QP_OK;
}

/* The limit the run plans to: the smallest of memory.host_limit and what the job enforces
 * (budget/job_limit.h), the same on every rank (qp_plan_limit decides it: the ranks must choose
 * the same route and chunks). Said on stderr by rank 0 when progress is on. */
static qp_err qp_driver_find_limit(qp_problem *p) {
  qp_job_limit limit;
  /* Threads under RLIMIT_AS: the larger of OpenMP's and the BLAS's pools (each thread of
   * either has its stack and malloc arena, OpenBLAS's its 128 MiB buffer too), and the
   * memory timeline's sampler. */
  int threads = omp_get_max_threads();
  if (qp_blas_library_threads() > threads) threads = qp_blas_library_threads();
  threads = threads > 4095 ? 4096 : threads + 1;
  /* Several ranks: MPI's count of this node's ranks is the placement (uneven: 1 + 3). */
  const qp_job_env env = {NULL, NULL, NULL, -1, -1, threads, qp_comm_size() > 1};
  QP_CALL(qp_comm_agree(qp_job_limit_find(&env, p->cfg->host_limit, qp_comm_node_size(), &limit)));
  /* Several ranks: the node in the words, so that the plan and a refusal name the node whose
   * limit applied (the smallest over the ranks: qp_plan_limit). */
  if (qp_comm_size() > 1 && limit.from_job) {
    char source[sizeof limit.source];
    snprintf(source, sizeof source, "node %.64s: %.690s", qp_comm_host(), limit.source);
    memcpy(limit.source, source, sizeof source);
  }
  const qp_limit_inputs in = {.config = p->cfg->host_limit, .job = &limit};
  QP_CALL(qp_plan_limit(&in, &p->plan_store));
  const qp_plan *plan = p->plan;
  if (p->progress) {
    if (plan->host_limit > 0)
      fprintf(stderr, "[qmlpipe] memory limit %s (%s)\n", qp_bytes_readable(plan->host_limit).text,
              plan->limit_source);
    else
      fprintf(stderr, "[qmlpipe] memory limit: none (no memory.host_limit, cgroup, Slurm or "
                      "RLIMIT_AS limit found)\n");
    if (limit.notes[0]) fprintf(stderr, "[qmlpipe] memory limit: %s\n", limit.notes);
  }
  return QP_OK;
}

/* The plan, once, before anything large (the warm-up included): the limit, the inputs it
 * needs, the route (re-route included), its limit check. */
static qp_err qp_driver_plan(qp_problem *p) {
  QP_CALL(qp_driver_find_limit(p));
  /* Every input file is a regular file before anything reads one (input_file.h): a FIFO as
   * maps[3] is refused now, not after the stages before the maps are read. */
  QP_CALL(qp_comm_agree(qp_comm_rank() == 0 ? qp_inputs_check_files(p->cfg) : QP_OK));
  qp_noise_figures noise;
  QP_CALL(qp_inputs_plan(p, &noise));
  QP_CALL(qp_plan_build(p, &noise, &p->plan_store));
  /* N's rcond as the SMW check found it: the results' figure unless a stage measures it. */
  if (!isnan(p->plan->noise_rcond)) p->rcond[QP_RCOND_NOISE] = p->plan->noise_rcond;
  QP_CALL(qp_comm_agree(qp_plan_check_limit(p)));
  /* The variance map ruled out the SMW route chosen first: said here, before the stages. */
  if (p->progress)
    fprintf(stderr, "[qmlpipe] path %s%s\n", p->plan->rerouted ? "changed to " : "",
            p->plan->path_reason);
  return QP_OK;
}

/* The distributed report's table: every rank's predicted and measured figures, gathered
 * (collective); *rows is malloc'd (NULL, with ranks->n_ranks 0, off a grid). */
static qp_err qp_driver_rank_table(const qp_problem *p, const qp_meter_sample *baseline,
                                   double **rows, qp_rank_table *ranks) {
  *rows = NULL;
  *ranks = (qp_rank_table){0};
  const qp_grid *grid = p->ops->distributed ? qp_grid_current() : NULL;
  if (!grid) return QP_OK;
  const int n = qp_comm_size();
  double mine[QP_RANK_ROW];
  qp_rank_row(&p->plan->model, baseline, mine);
  mine[QP_RANK_NODE_RANKS] = qp_comm_node_size(); /* this rank's node, not rank 0's */
  /* The rows, then every rank's host name (QP_RANK_HOST_MAX bytes each) in one block. */
  *rows = malloc((size_t)n * (QP_RANK_ROW * sizeof **rows + QP_RANK_HOST_MAX));
  QP_CHECK(*rows, QP_ERR_NOMEM, "out of memory for %d ranks' budgets", n);
  char *hosts = (char *)(*rows + (size_t)n * QP_RANK_ROW);
  char host[QP_RANK_HOST_MAX] = {0};
  snprintf(host, sizeof host, "%s", qp_comm_host());
  QP_CALL(qp_comm_allgather(mine, *rows, QP_RANK_ROW));
  QP_CALL(qp_comm_allgather_bytes(host, hosts, sizeof host));
  /* ranks_per_node: the most any node held (the figure --ntasks-per-node bounds); each rank's
   * own is node_ranks beside its host. */
  int most = 1;
  for (int r = 0; r < n; ++r) {
    const double k = (*rows)[(size_t)r * QP_RANK_ROW + QP_RANK_NODE_RANKS];
    if (k > most) most = (int)k;
  }
  *ranks = (qp_rank_table){.n_ranks = n,
                           .grid_rows = grid->nprow,
                           .grid_cols = grid->npcol,
                           .block = grid->block,
                           .ranks_per_node = most,
                           .model = &p->plan->model,
                           .rows = *rows,
                           .hosts = hosts};
  return QP_OK;
}

/* The results file, by rank 0 (cfg->output). */
static qp_err qp_driver_write_results(const qp_problem *p, const qp_rank_table *ranks,
                                      const qp_meter_sample *baseline,
                                      const qp_run_options *options) {
  const qp_config *cfg = p->cfg;
  const char *rcond_names[QP_RCOND_COUNT];
  qp_device_sample device; /* its baseline: the device context, measured */
  qp_meter_device_read(&device);
  qp_results results = {
      .config = cfg,
      .nside = p->nside,
      .n_observed = p->n_observed,
      .n_observed_t = p->n_obs_t,
      .n_observed_pol = p->n_obs_p,
      .n_modes = p->plan->path_used == QP_PATH_HARMONIC ? p->n_modes : 0,
      .n_pix = p->n_pix,
      .n_params = p->n_params,
      .n_bins = p->n_bins,
      .n_maps = p->n_maps,
      .n_spectra = cfg->n_spectra,
      .spectra = cfg->spectra,
      .bin_ell_min = p->bin_lo,
      .bin_ell_max = p->bin_hi,
      .fisher = p->fisher,
      .yb = p->yb,
      .noise_bias = p->noise_bias,
      .cl = p->cl,
      .error = p->error,
      .covariance = p->spectra_covariance ? p->spectra_covariance : p->fisher_inverse,
      .window = p->window,
      .n_window = p->plan->model_dims.n_window,
      .window_ell_min = p->cfg->ell_min,
      .window_ell_max = p->cfg->lmax,
      .path_used = qp_plan_route_name(p->plan),
      .path_reason = p->plan->path_reason,
      .pixel_window = p->pixel_window.t ? p->pixel_window.text : "none",
      .model = &p->plan->model,
      .memory_limit = p->plan->host_limit,
      .memory_limit_source = p->plan->limit_source,
      .device_context_predicted = qp_plan_device_overhead(p),
      .device_context_measured = device.baseline,
      .device_context_source =
          qp_linalg_on_device(p->ops) ? qp_plan_device_overhead_source(p) : NULL,
      .baseline = baseline,
      .ranks = ranks->n_ranks > 0 ? ranks : NULL,
      .n_rcond = QP_RCOND_COUNT,
      .rcond = p->rcond,
      .rcond_names = rcond_names,
      .accuracy = cfg->accuracy,
      .spectra_error = p->spectra_error,
      .slurm_gather = options->slurm_gather,
      .slurm_gather_source = options->slurm_gather_source,
  };
  for (int i = 0; i < QP_RCOND_COUNT; ++i)
    rcond_names[i] = qp_rcond_name((qp_rcond_id)i);
  return qp_results_write(cfg->output, &results);
}

qp_err qp_driver_run(const qp_config *cfg, const qp_run_options *options, qp_problem *p,
                     qp_meter_sample *baseline) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < QP_RCOND_COUNT; ++i)
    p->rcond[i] = NAN;
  p->spectra_error = NAN;
  p->cfg = cfg;
  p->plan = &p->plan_store; /* the driver's: built by the planner in qp_driver_plan */
  p->progress = options->progress;
  qp_err err = QP_OK;
  qp_checkpoint ck = {.resume_after = -1, .lock_fd = -1};
  qp_self_cost_reset();
  QP_CALL_GOTO(qp_driver_warm_up_check_env(), fail);
  QP_CHECK_GOTO(!cfg->has_dimensions, QP_ERR_INPUT, fail,
                "config '%s' gives dimensions, not maps: it sizes a job for `qmlpipe budget` and "
                "`qmlpipe plan`, it cannot run",
                cfg->source);
  QP_CALL_GOTO(qp_driver_backend(cfg, &p->ops), fail);
  /* Progress lines from rank 0 only. */
  if (qp_comm_rank() != 0) p->progress = 0;
  QP_CALL_GOTO(qp_driver_plan(p), fail);
  /* The inputs' hashes, and with --resume the checkpoint's checks, before any work. */
  QP_CALL_GOTO(qp_checkpoint_open(&ck, cfg->checkpoint, options->resume, p), fail);
  QP_CALL_GOTO(qp_inputs_touch_libraries(p), fail);
  const qp_model_path path = p->plan->model_dims.path;
  /* A stack OpenBLAS's threaded LU fits on, where the route has one (SMW; the Cholesky routes
   * ran under `ulimit -s 128`), if qp_stack_limit_raise could not give it. */
  if (qp_driver_warm_up_kernels(path) & QP_WARM_UP_LU)
    QP_CALL_GOTO(qp_comm_agree(qp_stack_limit_check()), fail);
  /* Under `ulimit -v`, room for OpenBLAS's buffers, whatever the planner was told. */
  QP_CALL_GOTO(qp_comm_agree(qp_blas_check_address_space()), fail);
  qp_driver_warm_up_device(p->ops, p->n_pix);
  qp_driver_warm_up(p->n_pix, qp_plan_blas_width(p, p->plan, path), qp_driver_warm_up_kernels(path),
                    baseline);
  if (p->progress && qp_driver_warm_up_wanted())
    fprintf(stderr, "[qmlpipe] warm-up %.3f s\n", qp_driver_warm_up_seconds());
  else if (p->progress)
    fprintf(stderr, "[qmlpipe] warm-up skipped (QP_WARM_UP=0): the libraries' first use lands "
                    "in the stages' measured memory\n");
  /* Each run's report holds its own stages only. */
  double cost = qp_self_cost_begin();
  qp_budget_reset();
  /* The memory timeline of this run only (budget/timeline.h), stopped before the writing. */
  qp_timeline_clear();
  if (cfg->sample_interval_ms > 0) QP_CALL_GOTO(qp_timeline_start(cfg->sample_interval_ms), fail);
  /* The baseline again, last: the stage records (written by qp_budget_reset) and the
   * timeline's store and thread are the run's own bookkeeping, in the baseline like the
   * libraries, not growth inside covariance_setup (~0.15 MiB, docs/memory-validation.md). */
  qp_meter_read(baseline);
  qp_self_cost_end(cost);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_COVARIANCE_SETUP, qp_stage_covariance_setup, p, &ck), fail);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_BASIS_SETUP, qp_stage_basis_setup, p, &ck), fail);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_FISHER_RUN, qp_stage_fisher_run, p, &ck), fail);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_SPECTRA_RUN, qp_stage_spectra_run, p, &ck), fail);
  cost = qp_self_cost_begin();
  qp_timeline_stop();
  /* Distributed: every rank's predicted and measured figures, gathered for the report. */
  double *rank_rows = NULL;
  qp_rank_table ranks;
  err = qp_driver_rank_table(p, baseline, &rank_rows, &ranks);
  qp_self_cost_end(cost);
  if (err == QP_OK && options->write_results && qp_comm_rank() == 0)
    err = qp_driver_write_results(p, &ranks, baseline, options);
  free(rank_rows);
  /* Rank 0 writes; the others wait for its status. */
  QP_CALL_GOTO(qp_comm_agree(err), fail);
  /* The results are safe: the checkpoints have served (only when they were written). */
  if (options->write_results) qp_checkpoint_remove(&ck);
  qp_checkpoint_close(&ck);
  return QP_OK;
fail:
  qp_checkpoint_close(&ck);
  qp_timeline_stop();
  qp_problem_free(p);
  return err;
}
