/* harmonic_spectra.c: the harmonic routes' spectra_run y (harmonic_route.h), on the n_modes
 * side */
#include "harmonic_route.h"

#include <stdlib.h>

#include "harmonic_modes.h"
#include "spectra_terms.h"

/* y_p = 1/2 z^T D_p z for maps first .. first + count - 1 (z: n_modes x count, whole, leading
 * dimension n_modes): the cross-spectra's y with z_A = z_B = z, to the bit. */
static qp_err qp_spectra_from_z(qp_problem *p, const double *z, int64_t first, int64_t count) {
  return qp_cross_y_from_z(p, z, z, first, count);
}

/* y of the batch of maps from `first` from z whole on every rank (z: n_modes x the batch,
 * small; a copy where the backend moves data). */
static qp_err qp_spectra_from_modes(qp_problem *p, const qp_matrix *z, int64_t first) {
  qp_matrix work = {0};
  const double *whole = NULL;
  if (qp_linalg_moves_data(p->ops))
    QP_CALL(qp_matrix_create(qp_linalg_cpu_ops(), QP_TERM_MODE_MAPS_ALL, QP_TERM_TRANSIENT, z->rows,
                             z->cols, &work));
  qp_err err = qp_linalg_replicate(z, &work, &whole);
  if (err == QP_OK) err = qp_spectra_from_z(p, whole, first, z->cols);
  qp_matrix_destroy(&work);
  QP_CALL(err);
  return QP_OK;
}

/* SMW: z = (I + K Lambda)^-1 V N_eff^-1 x, from the mode maps of basis_setup, a batch at a
 * time (qp_map_batch): one batch is in p->mode_maps already, several come back from the host
 * one by one. */
static qp_err qp_smw_spectra_y(qp_problem *p) {
  for (int64_t first = 0; first < p->n_maps; first += qp_map_batch(p)) {
    qp_matrix z;
    QP_CALL(qp_map_batch_view(&p->mode_maps, qp_map_batch_count(p, first), &z));
    if (qp_map_batch(p) < p->n_maps)
      QP_CALL(qp_linalg_upload(qp_mode_maps_host_batch(p, first), z.ld, &z, 0, 0, z.local_rows,
                               z.local_cols));
    QP_CALL(qp_smw_solve(p, &z));
    QP_CALL(qp_spectra_from_modes(p, &z, first));
  }
  return QP_OK;
}

qp_err qp_harmonic_spectra_y(qp_problem *p) {
  if (p->plan->model_dims.cross_maps)
    return p->plan->smw ? qp_smw_cross_spectra_y(p) : qp_cross_spectra_y(p);
  if (p->plan->smw) {
    QP_CALL(qp_smw_spectra_y(p));
    return QP_OK;
  }
  /* Projection: z = V C^-1 x = Y^T L^-1 x, a batch of maps at a time (qp_map_batch); where
   * fisher_run left Z = L^-T Y in Y's place (qp_model_w_windows), z = Z^T x. */
  const int z_held = qp_model_w_windows(&p->plan->model_dims);
  const int64_t n = p->n_pix, nm = p->n_modes, batch = qp_map_batch(p);
  qp_err err = QP_OK;
  qp_matrix w = {0}, v = {0}, wb, vb;
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, n, batch, &w),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_MODE_MAPS, QP_TERM_TRANSIENT, nm, batch, &v), done);
  for (int64_t first = 0; first < p->n_maps; first += batch) {
    const int64_t count = qp_map_batch_count(p, first);
    QP_CALL_GOTO(qp_map_batch_view(&w, count, &wb), done);
    QP_CALL_GOTO(qp_map_batch_view(&v, count, &vb), done);
    QP_CALL_GOTO(qp_maps_to_matrix(p, first, &wb), done);
    if (!z_held) QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, &wb), done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &p->vt, &wb, 0.0, &vb), done);
    QP_CALL_GOTO(qp_spectra_from_modes(p, &vb, first), done);
  }
done:
  qp_matrix_destroy(&v);
  qp_matrix_destroy(&w);
  return err;
}
