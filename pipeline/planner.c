/* planner.c: the plan's memory limit, its one writer, and the backend's figures the plan reads
 * (planner.h). */
#include "planner_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "bytes_text.h"
#include "comm.h"

int64_t qp_plan_blas_width(const qp_problem *p, const qp_plan *plan, qp_model_path path) {
  const int dense = plan->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  return path == QP_MODEL_HARMONIC_SMW && !dense ? p->n_modes : p->n_pix;
}

const qp_linalg_ops *qp_plan_backend_table(const qp_problem *p) {
  if (!qp_config_device_backend(p->cfg)) return NULL;
  if (p->ops && qp_linalg_on_device(p->ops)) {
    /* cuda answers only once its context exists (cuSOLVER's queries need a handle) */
    qp_workspace probe[QP_WORKSPACES_MAX];
    int count = 0;
    if (qp_linalg_workspaces(p->ops, QP_OP_INIT, 1, 0, probe, &count) == QP_OK) return p->ops;
    qp_error_clear();
    return NULL;
  }
  /* `plan` starts no backend: a row whose sizes are a formula (hostdev's) has a table for
   * them without a start */
  const qp_backend *row = qp_backend_find(p->cfg->backend);
  return row && row->sizes_table ? row->sizes_table() : NULL;
}

double qp_plan_device_overhead(const qp_problem *p) {
  if (!qp_config_device_backend(p->cfg)) return 0;
  if (p->cfg->device_overhead >= 0) return p->cfg->device_overhead;
  const qp_backend *row = qp_backend_find(p->cfg->backend);
  return row ? (double)row->context_bytes : 0.0;
}

const char *qp_plan_device_overhead_source(const qp_problem *p) {
  return p->cfg->device_overhead >= 0 ? "memory.device_overhead" : "the backend's default";
}

/* The job's limit, the smallest over the ranks (their plans must agree), and where it came
 * from: the source of the rank that holds it (the lowest such rank), which names its node
 * (the driver puts the host in front), so that a plan or refusal on rank 0 says which node's
 * limit applied even when rank 0's node is another (uneven placement: 1 + 3 ranks). */
static qp_err qp_plan_job_limit(const qp_job_limit *job, qp_plan *plan) {
  const double usable = job->usable > 0 ? job->usable : INFINITY;
  const int n = qp_comm_size();
  double *all = malloc((size_t)n * sizeof *all);
  QP_CHECK(all, QP_ERR_NOMEM, "out of memory for %d ranks' limits", n);
  qp_err err = qp_comm_allgather(&usable, all, 1);
  int at = 0;
  for (int r = 1; err == QP_OK && r < n; ++r)
    if (all[r] < all[at]) at = r;
  const double smallest = err == QP_OK ? all[at] : usable;
  free(all);
  QP_CALL(err);
  /* That rank's words, and whether its limit is the job's or the config's (every rank's). */
  struct {
    char source[sizeof job->source];
    double limit, margin;
    int from_job;
  } deciding = {.limit = job->limit, .margin = job->margin, .from_job = job->from_job};
  snprintf(deciding.source, sizeof deciding.source, "%s", job->source);
  QP_CALL(qp_comm_bcast_from(&deciding, sizeof deciding, at));
  plan->host_limit = isfinite(smallest) ? smallest : 0.0;
  plan->limit_from_job = deciding.from_job;
  char whose[64] = "";
  if (at != 0) snprintf(whose, sizeof whose, " (the smallest over the ranks: rank %d's)", at);
  if (deciding.from_job)
    snprintf(plan->limit_source, sizeof plan->limit_source, "%.600s: %s less margin %s%s",
             deciding.source, qp_bytes_readable(deciding.limit).text,
             qp_bytes_readable(deciding.margin).text, whose);
  else
    snprintf(plan->limit_source, sizeof plan->limit_source, "%s", deciding.source);
  return QP_OK;
}

qp_err qp_plan_limit(const qp_limit_inputs *in, qp_plan *plan) {
  if (in->job) return qp_plan_job_limit(in->job, plan);
  /* budget and plan: the config's limit, else each rank's share of --mem-per-node */
  plan->limit_from_job = 0;
  if (in->config > 0) {
    plan->host_limit = in->config;
    snprintf(plan->limit_source, sizeof plan->limit_source, "memory.host_limit");
  } else if (in->per_rank > 0) {
    plan->host_limit = in->per_rank;
    snprintf(plan->limit_source, sizeof plan->limit_source,
             "--mem-per-node over the ranks per node");
  } else {
    plan->host_limit = 0.0;
    snprintf(plan->limit_source, sizeof plan->limit_source, "none");
  }
  return QP_OK;
}
