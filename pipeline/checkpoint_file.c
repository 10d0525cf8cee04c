/* checkpoint_file.c: the layout of a checkpoint file (checkpoint_file.h). */
#include "checkpoint_file.h"

#include <stdio.h>
#include <stdlib.h>

#include "comm.h"
#include "h5_attr.h"
#include "host_window.h"
#include "terms.h"
#include "test_hooks.h"

/* In restore order: smw_lu (smw_lu_b) before its pivots (their count follows its layout), N before
 * noise_factor (a view of it when N is dense), mode_maps before mode_maps_host (SMW's maps in
 * batches on a device, whose count follows its layout). */
const qp_ck_slot qp_ck_slots[QP_CK_SLOTS] = {
    {"observed", QP_TERM_OBSERVED_INDEX, QP_CK_I64, offsetof(qp_problem, observed)},
    {"vectors", QP_TERM_PIXEL_VECTORS, QP_CK_F64, offsetof(qp_problem, vectors)},
    {"noise_variance", QP_TERM_NOISE_VARIANCE, QP_CK_F64, offsetof(qp_problem, noise_variance)},
    {"noise", QP_TERM_NOISE, QP_CK_MATRIX, offsetof(qp_problem, noise)},
    {"covariance", QP_TERM_COVARIANCE, QP_CK_MATRIX, offsetof(qp_problem, cov)},
    {"noise_factor", QP_TERM_NOISE_EFF, QP_CK_MATRIX, offsetof(qp_problem, noise_factor)},
    {"vt", QP_TERM_V, QP_CK_MATRIX, offsetof(qp_problem, vt)},
    {"kernel", QP_TERM_KERNEL, QP_CK_MATRIX, offsetof(qp_problem, kernel)},
    {"smw_lu", QP_TERM_SMW_LU, QP_CK_MATRIX, offsetof(qp_problem, smw_lu)},
    {"pivots", QP_TERM_PIVOTS, QP_CK_INT, offsetof(qp_problem, pivots)},
    {"mode_maps", QP_TERM_MODE_MAPS, QP_CK_MATRIX, offsetof(qp_problem, mode_maps)},
    {"mode_maps_host", QP_TERM_MODE_MAPS_HOST, QP_CK_F64, offsetof(qp_problem, mode_maps_host)},
    {"fisher", QP_TERM_FISHER, QP_CK_F64, offsetof(qp_problem, fisher)},
    {"noise_bias", QP_TERM_NOISE_BIAS, QP_CK_F64, offsetof(qp_problem, noise_bias)},
    {"covariance_b", QP_TERM_COVARIANCE_B, QP_CK_MATRIX, offsetof(qp_problem, cov_b)},
    {"y_covariance", QP_TERM_Y_COVARIANCE, QP_CK_F64, offsetof(qp_problem, y_covariance)},
    {"fisher_ell", QP_TERM_FISHER_ELL, QP_CK_F64, offsetof(qp_problem, fisher_ell)},
    {"vt_b", QP_TERM_V_B, QP_CK_MATRIX, offsetof(qp_problem, vt_b)},
    {"kernel_b", QP_TERM_KERNEL_B, QP_CK_MATRIX, offsetof(qp_problem, kernel_b)},
    {"noise_variance_b", QP_TERM_NOISE_VARIANCE_B, QP_CK_F64,
     offsetof(qp_problem, noise_variance_b)},
    {"noise_factor_b", QP_TERM_NOISE_EFF_B, QP_CK_MATRIX, offsetof(qp_problem, noise_factor_b)},
    {"smw_lu_b", QP_TERM_SMW_LU_B, QP_CK_MATRIX, offsetof(qp_problem, smw_lu_b)},
    {"pivots_b", QP_TERM_PIVOTS_B, QP_CK_INT, offsetof(qp_problem, pivots_b)},
    {"mode_maps_b", QP_TERM_MODE_MAPS_B, QP_CK_MATRIX, offsetof(qp_problem, mode_maps_b)},
    {"cross_fixed", QP_TERM_CROSS_FIXED, QP_CK_MATRIX, offsetof(qp_problem, cross_fixed)},
};

void *qp_ck_field(const qp_problem *p, const qp_ck_slot *s) { return (char *)p + s->offset; }

int64_t qp_ck_count(const qp_problem *p, const qp_ck_slot *s) {
  if (s->offset == offsetof(qp_problem, observed)) return p->n_observed;
  if (s->offset == offsetof(qp_problem, vectors)) return 3 * p->n_observed;
  if (s->offset == offsetof(qp_problem, noise_variance) ||
      s->offset == offsetof(qp_problem, noise_variance_b))
    return p->n_pix;
  if (s->offset == offsetof(qp_problem, pivots)) return qp_linalg_pivot_count(&p->smw_lu);
  if (s->offset == offsetof(qp_problem, pivots_b)) return qp_linalg_pivot_count(&p->smw_lu_b);
  if (s->offset == offsetof(qp_problem, fisher) || s->offset == offsetof(qp_problem, y_covariance))
    return (int64_t)p->n_params * p->n_params;
  if (s->offset == offsetof(qp_problem, mode_maps_host)) return qp_mode_maps_host_elements(p);
  if (s->offset == offsetof(qp_problem, fisher_ell))
    return (int64_t)p->n_params * p->plan->model_dims.n_window;
  return p->n_params; /* noise_bias */
}

hid_t qp_ck_h5_type(qp_ck_type t) {
  return t == QP_CK_I64 ? H5T_NATIVE_INT64 : t == QP_CK_INT ? H5T_NATIVE_INT : H5T_NATIVE_DOUBLE;
}

size_t qp_ck_elem(qp_ck_type t) {
  return t == QP_CK_I64 ? sizeof(int64_t) : t == QP_CK_INT ? sizeof(int) : sizeof(double);
}

void qp_ck_path(const qp_checkpoint *ck, qp_stage_id id, char *out, size_t size) {
  snprintf(out, size, "%s/stage-%s.rank%d.h5", ck->dir, qp_stage_name(id), qp_comm_rank());
}

void qp_ck_grid(const qp_problem *p, int64_t g[4]) {
  const qp_grid *grid = p->ops && p->ops->distributed ? qp_grid_current() : NULL;
  g[0] = qp_comm_size();
  g[1] = grid ? grid->nprow : 1;
  g[2] = grid ? grid->npcol : 1;
  g[3] = grid ? grid->block : 0;
}

const char *const qp_ck_grid_names[4] = {"n_ranks", "grid_rows", "grid_cols", "block"};

/* Local columns of m moved through one host window (qp_ck_stream_matrix). */
static int64_t qp_ck_panel_columns(const qp_matrix *m) {
  const size_t column = qp_host_window_bytes(m->ops, m->local_rows, 1);
  if (column == 0) return m->local_cols > 0 ? m->local_cols : 1; /* a host matrix */
  /* A test hook (tests/pipeline/test_checkpoint_cli.c): smaller panels, so that a small
   * problem's matrices go through many. */
  const char *hook = qp_test_hook("QP_TEST_CHECKPOINT_PANEL_BYTES"); /* NULL in qmlpipe */
  const long long asked = hook ? strtoll(hook, NULL, 10) : 0;
  const size_t panel = asked > 0 ? (size_t)asked : (size_t)QP_CK_PANEL_BYTES;
  const int64_t cols = (int64_t)(panel / column);
  return cols > 0 ? cols : 1;
}

qp_err qp_ck_stream_matrix(hid_t dset, const char *where, const char *name, qp_matrix *m,
                           int to_file, uint64_t *hash) {
  const int64_t rows = m->local_rows, step = qp_ck_panel_columns(m);
  QP_CHECK(m->ld == rows || rows == 0, QP_ERR_INTERNAL,
           "checkpoint: matrix '%s' has ld %lld for %lld local rows", name, (long long)m->ld,
           (long long)rows);
  *hash = QP_HASH_BASIS;
  for (int64_t c0 = 0; rows > 0 && c0 < m->local_cols; c0 += step) {
    const int64_t cols = m->local_cols - c0 < step ? m->local_cols - c0 : step;
    const size_t n = (size_t)(rows * cols);
    qp_host_window w;
    QP_CALL(qp_host_window_open(m, c0, cols, to_file ? QP_ACCESS_READ : QP_ACCESS_WRITE, &w));
    qp_err err = qp_h5_array_part(dset, where, name, H5T_NATIVE_DOUBLE, to_file,
                                  (hsize_t)(c0 * rows), (hsize_t)n, w.data);
    if (err == QP_OK) {
      *hash = qp_hash_bytes(*hash, w.data, n * sizeof(double));
      if (!to_file) err = qp_host_window_close(&w); /* uploads a device matrix's panel */
    }
    qp_host_window_discard(&w);
    QP_CALL(err);
  }
  return QP_OK;
}
