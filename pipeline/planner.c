/* planner.c: the plan's memory limit, its one writer, and the backend's figures the plan reads
 * (planner.h). */
#include "planner_internal.h"

#include <math.h>
#include <stdio.h>

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
 * from: that rank's source where another rank's is smaller. */
static qp_err qp_plan_job_limit(const qp_job_limit *job, qp_plan *plan) {
  const double usable = job->usable > 0 ? job->usable : INFINITY;
  double smallest = -usable;
  QP_CALL(qp_comm_max(&smallest, 1));
  plan->host_limit = isfinite(smallest) ? -smallest : 0.0;
  plan->limit_from_job = job->from_job;
  if (-smallest < usable) {
    plan->limit_from_job = 1; /* the config is every rank's: a job limit is smaller elsewhere */
    snprintf(plan->limit_source, sizeof plan->limit_source,
             "the smallest over the ranks; here %.600s", job->source);
  } else if (job->from_job) {
    snprintf(plan->limit_source, sizeof plan->limit_source, "%.600s: %s less margin %s",
             job->source, qp_bytes_readable(job->limit).text, qp_bytes_readable(job->margin).text);
  } else {
    snprintf(plan->limit_source, sizeof plan->limit_source, "%s", job->source);
  }
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
