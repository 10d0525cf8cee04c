/* stage_covariance.c: covariance_setup: inputs, then C = S + N. */
#include <math.h>

#include "inputs.h"
#include "progress.h"
#include "pixel_matrices.h"
#include "stages.h"
#include "terms.h"

/* A dense N must be positive definite by itself (S can hide an indefinite N inside C, and the
 * noise bias would then be wrong): its Cholesky is done in C's buffer before S goes there. */
static qp_err qp_check_dense_noise(qp_problem *p) {
  const int64_t n = p->n_pix;
  for (int64_t k = 0; k < n * n; ++k) p->cov.data[k] = p->noise.data[k];
  qp_matrix check;
  QP_CALL(qp_matrix_view(p->ops, "N (noise covariance)", p->cov.data, n, n, n, &check));
  qp_err err = qp_linalg_potrf(&check);
  if (err == QP_ERR_NOT_POSDEF) {
    char message[1024];
    snprintf(message, sizeof message, "%s", qp_error_message());
    QP_FAIL(QP_ERR_NOT_POSDEF, "noise covariance '%s' (dataset '%s'): %s", p->cfg->noise_file,
            p->cfg->noise_dataset, message);
  }
  QP_CALL(err);
  return QP_OK;
}

qp_err qp_stage_covariance_setup(qp_problem *p) {
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "covariance_setup", "", 0);
  QP_CALL(qp_inputs_read_geometry(p));
  QP_CALL(qp_inputs_read_data(p));
  qp_progress_note(&progress, "mask, maps and noise read");
  const int64_t n = p->n_pix;
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_COVARIANCE, QP_TERM_PERSISTENT, n, n, &p->cov));
  if (p->noise.data) QP_CALL(qp_check_dense_noise(p));
  qp_pixel_matrices_build(p, p->cov.data, 0, 0, NULL, 0);
  qp_progress_note(&progress, "signal covariance S built");
  double *c = p->cov.data;
  if (p->noise_variance) {
    for (int64_t i = 0; i < n; ++i) c[i + i * n] += p->noise_variance[i];
  } else {
    for (int64_t k = 0; k < n * n; ++k) c[k] += p->noise.data[k];
  }
  qp_budget_free(p->sky);
  p->sky = NULL;
  return QP_OK;
}
