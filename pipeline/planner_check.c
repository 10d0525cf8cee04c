/* planner_check.c: the plan against its limits (planner.h, qp_plan_check_limit): a refusal
 * names the stage, its largest term, the limit's source and the shortfall, before anything is
 * allocated. */
#include "planner_internal.h"

#include <stdio.h>

#include "bytes_text.h"

const char *qp_plan_panel_lines(const qp_model_dims *d) {
  /* W's field blocks are host windows unless W was formed in blocks on the host itself. */
  const int fields = !qp_model_w_chunked(d);
  switch (d->path) {
  case QP_MODEL_PIXEL_DIRECT: return "columns of the pixel matrices, rows of the maps";
  case QP_MODEL_HARMONIC_SMW:
    return "columns of the pixel matrices, rows of V^T and the maps, columns of I + K Lambda, "
           "G and W's field blocks";
  default:
    return fields ? "columns of the pixel matrices, rows of V^T and the maps, columns of Z and "
                    "W's field blocks"
                  : "columns of the pixel matrices, rows of V^T and the maps, columns of Z";
  }
}

/* The stage of a space's peak and its largest term there: what the user would have to shrink. */
static qp_stage_id qp_plan_worst(const qp_model *m, qp_space space, const qp_model_term **largest) {
  qp_stage_id worst = QP_STAGE_COVARIANCE_SETUP;
  for (int s = 0; s < QP_STAGE_COUNT; ++s)
    if (qp_model_stage_peak_in(m, s, space) > qp_model_stage_peak_in(m, worst, space))
      worst = (qp_stage_id)s;
  *largest = NULL;
  for (int i = 0; i < m->n_terms; ++i)
    if (m->terms[i].space == space && qp_model_term_alive(&m->terms[i], worst) &&
        (!*largest || m->terms[i].bytes > (*largest)->bytes))
      *largest = &m->terms[i];
  return worst;
}

/* What a device-limit refusal says of W: its block when the projection route forms it in
 * blocks, that SMW's LU cannot be chunked on the SMW route, nothing otherwise. */
static const char *qp_plan_w_note(const qp_problem *p) {
  static _Thread_local char text[160];
  text[0] = '\0';
  if (qp_model_w_chunked(&p->plan->model_dims))
    snprintf(text, sizeof text, ", W in blocks of %lld of %lld columns",
             (long long)p->plan->model_dims.w_block, (long long)p->n_modes);
  else if (p->plan->model_dims.path == QP_MODEL_HARMONIC_SMW)
    snprintf(text, sizeof text,
             "; SMW's LU of I + K Lambda needs its n_modes^2 whole: harmonic_method: projected "
             "forms W in blocks");
  return text;
}

/* memory.device_limit: the device context (memory.device_overhead, untracked) plus the device's
 * peak (its matrices and the backend's own buffers) within it, or a refusal naming the context
 * or the stage and its largest device term, before anything is allocated. */
static qp_err qp_plan_check_device_limit(const qp_problem *p) {
  const double limit = p->cfg->device_limit, context = qp_plan_device_overhead(p);
  const qp_model *m = &p->plan->model;
  const double need = (double)qp_model_peak_in(m, QP_SPACE_DEVICE);
  if (limit <= 0 || need + context <= limit) return QP_OK;
  QP_CHECK(context < limit, QP_ERR_BUDGET,
           "memory.device_limit %s does not even hold the device context (%s, %s: "
           "the CUDA context and library handles, outside the tracked bytes); nothing was "
           "allocated. Raise the limit, or measure the context and set memory.device_overhead",
           qp_bytes_readable(limit).text, qp_bytes_readable(context).text,
           qp_plan_device_overhead_source(p));
  const qp_model_term *largest = NULL;
  const qp_stage_id worst = qp_plan_worst(m, QP_SPACE_DEVICE, &largest);
  /* The backend's own buffers in that stage (library workspaces, pivots), the largest named. */
  const qp_model_term *own = NULL;
  double own_bytes = 0;
  for (int i = 0; i < m->n_terms; ++i) {
    const qp_model_term *t = &m->terms[i];
    if (t->space != QP_SPACE_DEVICE || !qp_model_backend_term(t) || !qp_model_term_alive(t, worst))
      continue;
    own_bytes += (double)t->bytes;
    if (!own || t->bytes > own->bytes) own = t;
  }
  QP_FAIL(QP_ERR_BUDGET,
          "predicted device peak %s (stage %s, largest device term '%s' %s; the "
          "backend's own buffers %s, largest '%s'; maps in batches of %lld of %lld%s) "
          "plus the device context %s (%s) exceeds memory.device_limit %s by %s; "
          "nothing was allocated for it. The part that cannot be chunked does not fit the "
          "device: raise the limit, use a device with more memory, mask fewer pixels, or use "
          "backend cpu or dist",
          qp_bytes_readable(need).text, qp_stage_name(worst), largest ? largest->name : "?",
          qp_bytes_readable(largest ? (double)largest->bytes : 0.0).text,
          qp_bytes_readable(own_bytes).text, own ? own->name : "none",
          (long long)qp_model_map_batch(&p->plan->model_dims), (long long)p->n_maps,
          qp_plan_w_note(p), qp_bytes_readable(context).text, qp_plan_device_overhead_source(p),
          qp_bytes_readable(limit).text, qp_bytes_readable(need + context - limit).text);
}

qp_err qp_plan_check_limit(const qp_problem *p) {
  QP_CALL(qp_plan_check_device_limit(p));
  const double limit = p->plan->host_limit;
  if (limit <= 0) return QP_OK;
  const qp_model *m = &p->plan->model;
  const size_t need = qp_model_peak(m) + m->overhead_bytes; /* below 2^63: model.h */
  if ((double)need <= limit) return QP_OK;
  const qp_model_term *largest = NULL;
  const qp_stage_id worst = qp_plan_worst(m, QP_SPACE_HOST, &largest);
  const qp_bytes_text need_text = qp_bytes_readable((double)need),
                      largest_text = qp_bytes_readable(largest ? (double)largest->bytes : 0.0),
                      overhead_text = qp_bytes_readable((double)m->overhead_bytes),
                      limit_text = qp_bytes_readable(limit),
                      by_text = qp_bytes_readable((double)need - limit);
  /* On a device backend the plan's panels are its least host side already: say so. */
  char panels[192] = "";
  if (p->plan->model_dims.host_panel > 0)
    snprintf(
        panels, sizeof panels, "; the host windows already in panels of %lld local line%s (%s)",
        (long long)p->plan->model_dims.host_panel, p->plan->model_dims.host_panel == 1 ? "" : "s",
        qp_plan_panel_lines(&p->plan->model_dims));
  if (p->plan->limit_from_job)
    QP_FAIL(QP_ERR_BUDGET,
            "predicted peak %s (stage %s, largest term '%s' %s, overhead %s%s) "
            "exceeds the job's memory limit %s (%s) by %s; "
            "nothing was allocated for it. Ask the batch system for more memory per rank, "
            "mask fewer pixels, or use fewer bins",
            need_text.text, qp_stage_name(worst), largest ? largest->name : "?", largest_text.text,
            overhead_text.text, panels, limit_text.text, p->plan->limit_source, by_text.text);
  QP_FAIL(QP_ERR_BUDGET,
          "predicted peak %s (stage %s, largest term '%s' %s, overhead %s%s) "
          "exceeds memory.host_limit %s by %s; nothing was allocated for it. "
          "Raise the limit, mask fewer pixels, or use fewer bins",
          need_text.text, qp_stage_name(worst), largest ? largest->name : "?", largest_text.text,
          overhead_text.text, panels, limit_text.text, by_text.text);
}
