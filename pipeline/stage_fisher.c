/* stage_fisher.c: fisher_run: M_p = L^-1 P_p L^-T for every parameter, the whitened noise
 * L^-1 N L^-T beside them, and F and b from one Gram matrix of the stacked products. */
#include <string.h>

#include "harmonic.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "stages.h"
#include "terms.h"

/* slot <- L^-1 N_eff L^-T, N_eff = N + S_fixed: with lmax < lmax_signal the multipoles
 * (lmax, lmax_signal] are in C but not estimated, so <y_p> = sum_q F_pq C_q + tr(N_eff E_p)
 * and the bias removes them with the noise (QML.md 3, the switch). For a diagonal N and no
 * switch, D L^-T is written directly (entry (i,j) is d_i L^-1_ji), leaving one triangular
 * product; otherwise N_eff is formed in the slot and takes two. */
static qp_err qp_whiten_noise(qp_problem *p, qp_matrix *slot) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix;
  const double *linv = p->cov.data;
  const int switched = cfg->lmax < cfg->lmax_signal;
  if (p->noise_variance && !switched) {
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i)
        slot->data[i + j * n] = j >= i ? p->noise_variance[i] * linv[j + i * n] : 0.0;
    QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, slot));
    return QP_OK;
  }
  memset(slot->data, 0, (size_t)(n * n) * sizeof(double));
  if (switched)
    qp_pixel_matrices_build_range(p, slot->data, cfg->lmax + 1, cfg->lmax_signal, 0, 0, NULL, 0);
  if (p->noise_variance) {
    for (int64_t i = 0; i < n; ++i)
      slot->data[i + i * n] += p->noise_variance[i];
  } else {
    for (int64_t k = 0; k < n * n; ++k)
      slot->data[k] += p->noise.data[k];
  }
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, slot));
  QP_CALL(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &p->cov, slot));
  return QP_OK;
}

/* gram <- A^T A for A = the stacked products (n^2 x slots), in row blocks so that no BLAS
 * dimension exceeds the 32-bit integer. */
static qp_err qp_gram(const qp_problem *p, double *products, int64_t slots, qp_matrix *gram) {
  const int64_t rows = p->n_pix * p->n_pix;
  const int64_t block = (int64_t)1 << 30;
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    int64_t nr = rows - r0 < block ? rows - r0 : block;
    qp_matrix a;
    QP_CALL(qp_matrix_view(p->ops, QP_TERM_PRODUCTS, products + r0, nr, slots, rows, &a));
    QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &a, r0 == 0 ? 0.0 : 1.0, gram));
  }
  return QP_OK;
}

static qp_err qp_pixel_fisher_run(qp_problem *p);

qp_err qp_stage_fisher_run(qp_problem *p) {
  if (p->path_used == QP_PATH_HARMONIC) {
    QP_CALL(qp_harmonic_fisher_run(p));
    return QP_OK;
  }
  QP_CALL(qp_pixel_fisher_run(p));
  return QP_OK;
}

static qp_err qp_pixel_fisher_run(qp_problem *p) {
  qp_err err = QP_OK;
  const int64_t n = p->n_pix, np = p->n_params, slots = np + 1;
  const size_t slot_stride = (size_t)(n * n);
  double *products = NULL;
  qp_matrix gram = {0};
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "fisher_run", "products", (long)slots);
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_FISHER, QP_TERM_PERSISTENT, np * np, &p->fisher));
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_NOISE_BIAS, QP_TERM_PERSISTENT, np, &p->noise_bias));
  QP_CALL_GOTO(
      QP_ALLOC_DOUBLES(QP_TERM_PRODUCTS, QP_TERM_TRANSIENT, (size_t)slots * slot_stride, &products),
      done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_GRAM, QP_TERM_TRANSIENT, slots, slots, &gram),
               done);

  qp_progress_note(&progress, "products allocated");
  qp_pixel_matrices_build(p, NULL, 0, (int)np, products, slot_stride);
  qp_progress_note(&progress, "bin matrices P_p built");
  for (int64_t k = 0; k < np; ++k) {
    qp_matrix slot;
    QP_CALL_GOTO(
        qp_matrix_view(p->ops, QP_TERM_PRODUCTS, products + k * slot_stride, n, n, n, &slot), done);
    QP_CALL_GOTO(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, &slot), done);
    QP_CALL_GOTO(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &p->cov, &slot), done);
    qp_progress_step(&progress, (long)(k + 1));
  }
  qp_matrix noise_slot;
  QP_CALL_GOTO(
      qp_matrix_view(p->ops, QP_TERM_PRODUCTS, products + np * slot_stride, n, n, n, &noise_slot),
      done);
  QP_CALL_GOTO(qp_whiten_noise(p, &noise_slot), done);
  qp_progress_step(&progress, (long)slots);
  QP_CALL_GOTO(qp_gram(p, products, slots, &gram), done);
  qp_progress_note(&progress, "Gram matrix of the products (syrk)");
  for (int64_t q = 0; q < np; ++q) {
    for (int64_t r = 0; r < np; ++r)
      p->fisher[r + q * np] = 0.5 * gram.data[r + q * slots];
    p->noise_bias[q] = 0.5 * gram.data[q + np * slots];
  }
done:
  qp_matrix_destroy(&gram);
  qp_budget_free(products);
  /* N is not needed after the noise bias (model: freed in fisher_run). */
  qp_budget_free(p->noise_variance);
  p->noise_variance = NULL;
  qp_matrix_destroy(&p->noise);
  return err;
}
