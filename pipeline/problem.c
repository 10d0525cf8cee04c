/* problem.c: releasing what an analysis holds (problem.h). */
#include "problem.h"

#include <stdlib.h>

#include "comm.h"
#include "host_window.h"

qp_err qp_problem_hold_backend(const qp_problem *p) {
  qp_err err = QP_OK;
  for (int i = 0; i < p->plan->model.n_terms && err == QP_OK; ++i) {
    const qp_model_term *t = &p->plan->model.terms[i];
    if (qp_model_backend_init_term(t)) err = qp_linalg_hold_workspace(p->ops, t->name, t->bytes);
  }
  /* Agreed on: a rank refused its blocks must not leave the others in the stage's collectives
   * (the fault sweep's allocation failures on rank 1). */
  return qp_comm_agree(err);
}

size_t qp_problem_backend_held_bytes(const qp_problem *p) {
  size_t held = 0;
  for (int i = 0; i < p->plan->model.n_terms; ++i)
    if (qp_model_backend_init_term(&p->plan->model.terms[i])) held += p->plan->model.terms[i].bytes;
  return held;
}

void qp_problem_free(qp_problem *p) {
  double **tracked[] = {&p->sky,
                        &p->vectors,
                        &p->noise_variance,
                        &p->fisher,
                        &p->noise_bias,
                        &p->fisher_inverse,
                        &p->yb,
                        &p->cl,
                        &p->error,
                        &p->mode_maps_host,
                        &p->noise_variance_b,
                        &p->y_covariance,
                        &p->spectra_covariance,
                        &p->fisher_ell,
                        &p->window};
  for (size_t i = 0; i < sizeof tracked / sizeof *tracked; ++i) {
    qp_budget_free(*tracked[i]);
    *tracked[i] = NULL;
  }
  qp_budget_free(p->observed);
  p->observed = NULL;
  qp_matrix_destroy(&p->noise);
  qp_matrix_destroy(&p->cov);
  qp_matrix_destroy(&p->cov_b);
  qp_matrix_destroy(&p->vt);
  qp_matrix_destroy(&p->kernel);
  qp_matrix_destroy(&p->vt_b);
  qp_matrix_destroy(&p->kernel_b);
  qp_matrix_destroy(&p->smw_lu);
  qp_matrix_destroy(&p->noise_factor); /* a view of N when N is dense: not freed twice */
  qp_matrix_destroy(&p->mode_maps);
  qp_budget_free(p->pivots);
  p->pivots = NULL;
  qp_matrix_destroy(&p->noise_factor_b);
  qp_matrix_destroy(&p->smw_lu_b);
  qp_matrix_destroy(&p->mode_maps_b);
  qp_matrix_destroy(&p->cross_fixed);
  qp_budget_free(p->pivots_b);
  p->pivots_b = NULL;
  /* the device backend's own buffers, held from the stages' first need (matrix.h) */
  if (p->ops) qp_linalg_release_workspaces(p->ops);
  free(p->bin_lo);
  free(p->bin_hi);
  free(p->ell_weight);
  p->bin_lo = p->bin_hi = NULL;
  p->ell_weight = NULL;
  qp_pixel_window_free(&p->pixel_window);
  qp_cls_free(&p->cls);
}

double *qp_mode_maps_host_batch(const qp_problem *p, int64_t first) {
  /* Every batch but the last holds qp_map_batch maps: local_rows x local_cols of mode_maps. */
  return p->mode_maps_host +
         first / qp_map_batch(p) * p->mode_maps.local_rows * p->mode_maps.local_cols;
}

int64_t qp_mode_maps_host_elements(const qp_problem *p) {
  int64_t kept = 0;
  for (int64_t first = 0; first < p->n_maps; first += qp_map_batch(p))
    kept += qp_matrix_local_elements(p->ops, p->n_modes, qp_map_batch_count(p, first));
  return kept;
}

qp_err qp_map_batch_view(const qp_matrix *m, int64_t count, qp_matrix *view) {
  if (count == m->cols) return qp_matrix_alias(m, m->name, view);
  QP_CALL(qp_matrix_columns(m, 0, count, view));
  return QP_OK;
}
