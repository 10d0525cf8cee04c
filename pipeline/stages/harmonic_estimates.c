/* harmonic_estimates.c: the harmonic path's fisher_run (F, b) and spectra_run (y), on the
 * n_modes side, for both routes (harmonic_route.h). */
#include "harmonic_route.h"

#include <chealpix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "harmonic_modes.h"
#include "conditioning.h"
#include "spin_harmonics.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "terms.h"

/* ---- fisher_run ---- */

/* G^T into g (n_modes^2): SMW: (I + K Lambda)^-1 W. */
static qp_err qp_noise_kernel_smw(qp_problem *p, qp_matrix *g) {
  memcpy(g->data, p->kernel.data, (size_t)qp_matrix_local_size(g) * sizeof(double));
  QP_CALL(qp_linalg_getrs(&p->smw_lu, p->pivots, g));
  return QP_OK;
}

/* N_eff Z into nz for Z = C^-1 V^T (projection): N_eff dense = S_fixed + N. */
static qp_err qp_noise_modes_dense(qp_problem *p, const qp_matrix *z, qp_matrix *nz) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix;
  qp_matrix neff = {0};
  qp_err err = QP_OK;
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_EFF_DENSE, QP_TERM_TRANSIENT, n, n, &neff),
               done);
  if (p->switched)
    qp_pixel_matrices_build_range(p, neff.data, cfg->lmax + 1, cfg->lmax_signal, 0, 0, NULL, 0);
  qp_pixel_add_noise(p, &neff);
  QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &neff, z, 0.0, nz), done);
done:
  qp_matrix_destroy(&neff);
  return err;
}

/* F on the distributed backend. W's entries W_bc W_da of one term sit at (b, c) and (d, a),
 * generally on two ranks; but b, a share one (l, m) and c, d another, so with W split into its
 * field blocks W^{gh}, each padded to all (l, m) up to lmax and redistributed onto one layout,
 * the two entries are at the same place of two blocks: every rank sums the terms of its own
 * (lm, l'm') and one reduction gives F. W is symmetric, so W_da = W_ad = W^{fa fd}. */
static qp_err qp_fisher_distributed(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const int64_t n_lm = qp_harmonic_count(0, cfg->lmax);
  const int np = p->n_params, nb = p->n_bins;
  qp_err err = QP_OK;
  double *stack = NULL;
  qp_matrix block[3][3];
  memset(block, 0, sizeof block);
  int fields[3], n_fields = 0;
  for (int f = 0; f < 3; ++f)
    if (p->field_offset[f] >= 0) fields[n_fields++] = f;
  const int64_t local = qp_matrix_local_elements(p->ops, n_lm, n_lm);
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_FIELD_BLOCKS, QP_TERM_TRANSIENT,
                           (int64_t)n_fields * n_fields * local, &stack));
  for (int a = 0; a < n_fields; ++a)
    for (int b = 0; b < n_fields; ++b) {
      const int g = fields[a], h = fields[b];
      qp_matrix *m = &block[g][h];
      QP_CALL_GOTO(qp_matrix_view(p->ops, QP_TERM_FIELD_BLOCKS, stack + (a * n_fields + b) * local,
                                  n_lm, n_lm, 0, m),
                   done);
      const int lg = p->field_ell_min[g], lh = p->field_ell_min[h];
      if (lg > cfg->lmax || lh > cfg->lmax) continue;
      QP_CALL_GOTO(qp_linalg_copy_sub(qp_harmonic_count(lg, cfg->lmax),
                                      qp_harmonic_count(lh, cfg->lmax), &p->kernel,
                                      p->field_offset[g], p->field_offset[h], m,
                                      n_lm - qp_harmonic_count(lg, cfg->lmax),
                                      n_lm - qp_harmonic_count(lh, cfg->lmax)),
                   done);
    }
  /* The bin of each multipole (-1 outside every bin) and l of each (l, m) index. */
  int *bin_of = malloc((size_t)(cfg->lmax + 1) * sizeof *bin_of);
  QP_CHECK_GOTO(bin_of, QP_ERR_NOMEM, done, "out of memory for %d bins", cfg->lmax + 1);
  for (int l = 0; l <= cfg->lmax; ++l) bin_of[l] = -1;
  for (int b = 0; b < nb; ++b)
    for (int l = p->bin_lo[b]; l <= p->bin_hi[b]; ++l) bin_of[l] = b;
  memset(p->fisher, 0, (size_t)np * np * sizeof(double));
  const qp_matrix *lay = &block[fields[0]][fields[0]];
  for (int64_t lj = 0; lj < lay->local_cols; ++lj) {
    const int64_t j = qp_matrix_global_col(lay, lj);
    const int lc = qp_harmonic_ell(j, 0);
    if (bin_of[lc] < 0) continue;
    for (int64_t li = 0; li < lay->local_rows; ++li) {
      const int64_t i = qp_matrix_global_row(lay, li);
      const int lr = qp_harmonic_ell(i, 0);
      if (bin_of[lr] < 0) continue;
      const int64_t at = li + lj * lay->ld;
      const double vu = qp_beam2(p, lr) * qp_beam2(p, lc);
      for (int s1 = 0; s1 < cfg->n_spectra; ++s1) {
        const int *x = qp_spectrum_fields[cfg->spectra[s1]];
        const int q = s1 * nb + bin_of[lr];
        for (int s2 = 0; s2 < cfg->n_spectra; ++s2) {
          const int *y = qp_spectrum_fields[cfg->spectra[s2]];
          double sum = 0;
          /* D_q's entries (a, b) are (x0, x1) and, off the diagonal, (x1, x0); D_r's (c, d). */
          for (int e1 = 0; e1 < (x[0] != x[1] ? 2 : 1); ++e1)
            for (int e2 = 0; e2 < (y[0] != y[1] ? 2 : 1); ++e2) {
              const int fa = x[e1], fb = x[1 - e1], fc = y[e2], fd = y[1 - e2];
              sum += block[fb][fc].data[at] * block[fa][fd].data[at];
            }
          p->fisher[q + (s2 * nb + bin_of[lc]) * np] += 0.5 * vu * sum;
        }
      }
    }
  }
  free(bin_of);
  QP_CALL_GOTO(qp_comm_sum(p->fisher, (int64_t)np * np), done);
done:
  qp_budget_free(stack);
  return err;
}

/* b_p = 1/2 sum over D_p's entries (a, b, v) of v G[row(a, b), col(a, b)] for a distributed
 * G: each rank adds the entries it holds, one reduction sums them. */
static qp_err qp_bias_distributed(qp_problem *p, const qp_matrix *g, const qp_entry *e,
                                  const int64_t *start, int transpose) {
  for (int q = 0; q < p->n_params; ++q) {
    double sum = 0;
    for (int64_t i = start[q]; i < start[q + 1]; ++i) {
      int64_t at;
      const int64_t r = transpose ? e[i].b : e[i].a, c = transpose ? e[i].a : e[i].b;
      if (qp_matrix_local_offset(g, r, c, &at)) sum += e[i].v * g->data[at];
    }
    p->noise_bias[q] = 0.5 * sum;
  }
  QP_CALL(qp_comm_sum(p->noise_bias, p->n_params));
  return QP_OK;
}

qp_err qp_harmonic_fisher_run(qp_problem *p) {
  const int64_t nm = p->n_modes, n = p->n_pix;
  const int np = p->n_params;
  qp_err err = QP_OK;
  qp_entry *e = NULL;
  int64_t *start = NULL;
  qp_matrix g = {0}, z = {0}, nz = {0};
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_FISHER, QP_TERM_PERSISTENT, np * np, &p->fisher));
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_NOISE_BIAS, QP_TERM_PERSISTENT, np, &p->noise_bias));
  QP_CALL_GOTO(qp_param_entries(p, &e, &start), done);

  /* F_pq = 1/2 sum over D_p's (a, b, v) and D_q's (c, d, u) of v u W_bc W_da. */
  const double *w = p->kernel.data;
  const int distributed = p->kernel.grid != NULL;
  if (distributed) QP_CALL_GOTO(qp_fisher_distributed(p), done);
#pragma omp parallel for schedule(dynamic, 1) if (!distributed)
  for (int q = 0; q < (distributed ? 0 : np); ++q)
    for (int r = q; r < np; ++r) {
      double sum = 0;
      for (int64_t i = start[q]; i < start[q + 1]; ++i)
        for (int64_t j = start[r]; j < start[r + 1]; ++j)
          sum += e[i].v * e[j].v * w[e[i].b + e[j].a * nm] * w[e[j].b + e[i].a * nm];
      p->fisher[q + r * np] = p->fisher[r + q * np] = 0.5 * sum;
    }

  /* b_p = 1/2 tr(D_p G) = 1/2 sum v G_ba. */
  if (p->smw) {
    QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_KERNEL, QP_TERM_TRANSIENT, nm, nm, &g),
                 done);
    QP_CALL_GOTO(qp_noise_kernel_smw(p, &g), done);
    if (distributed) {
      QP_CALL_GOTO(qp_bias_distributed(p, &g, e, start, 0), done);
      goto done;
    }
    for (int q = 0; q < np; ++q) {
      double sum = 0;
      for (int64_t i = start[q]; i < start[q + 1]; ++i)
        sum += e[i].v * g.data[e[i].a + e[i].b * nm];
      p->noise_bias[q] = 0.5 * sum;
    }
  } else {
    /* Z = C^-1 V^T = L^-T Y; G_ba = Z_b^T N_eff Z_a. */
    QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MODES, QP_TERM_TRANSIENT, n, nm, &z),
                 done);
    memcpy(z.data, p->vt.data, (size_t)qp_matrix_local_size(&z) * sizeof(double));
    QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &p->cov, &z), done);
    const int dense = p->switched || !p->noise_variance;
    if (distributed) {
      /* Distributed: N_eff Z (a product, or the variances row by row), then G = Z^T N_eff Z
       * whole (columns a and b of one entry may be on two ranks). */
      QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, n, nm, &nz),
                   done);
      if (dense) {
        QP_CALL_GOTO(qp_noise_modes_dense(p, &z, &nz), done);
      } else {
        for (int64_t lj = 0; lj < z.local_cols; ++lj)
          for (int64_t li = 0; li < z.local_rows; ++li)
            nz.data[li + lj * nz.ld] =
                p->noise_variance[qp_matrix_global_row(&z, li)] * z.data[li + lj * z.ld];
      }
      QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_KERNEL, QP_TERM_TRANSIENT, nm, nm, &g),
                   done);
      QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &z, &nz, 0.0, &g), done);
      QP_CALL_GOTO(qp_bias_distributed(p, &g, e, start, 1), done);
      goto done;
    }
    if (dense) {
      QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, n, nm, &nz),
                   done);
      QP_CALL_GOTO(qp_noise_modes_dense(p, &z, &nz), done);
    }
    for (int q = 0; q < np; ++q) {
      double sum = 0;
      for (int64_t k = start[q]; k < start[q + 1]; ++k) {
        const double *zb = z.data + e[k].b * n;
        const double *right = dense ? nz.data + e[k].a * n : z.data + e[k].a * n;
        double dot = 0;
        for (int64_t i = 0; i < n; ++i)
          dot += zb[i] * right[i] * (dense ? 1.0 : p->noise_variance[i]);
        sum += e[k].v * dot;
      }
      p->noise_bias[q] = 0.5 * sum;
    }
  }
done:
  qp_matrix_destroy(&nz);
  qp_matrix_destroy(&z);
  qp_matrix_destroy(&g);
  free(e);
  free(start);
  /* Projection: the noise bias was the last use of N (model: freed in fisher_run). */
  if (!p->smw) {
    qp_budget_free(p->noise_variance);
    p->noise_variance = NULL;
    qp_matrix_destroy(&p->noise);
  }
  return err;
}

/* ---- spectra_run ---- */

/* y_p = 1/2 z^T D_p z for every map (z: n_modes x n_maps). */
static qp_err qp_spectra_from_z(qp_problem *p, const qp_matrix *z) {
  qp_entry *e = NULL;
  int64_t *start = NULL;
  QP_CALL(qp_param_entries(p, &e, &start));
  const int np = p->n_params;
  for (int64_t m = 0; m < p->n_maps; ++m) {
    const double *zm = z->data + m * z->ld;
    for (int q = 0; q < np; ++q) {
      double sum = 0;
      for (int64_t k = start[q]; k < start[q + 1]; ++k) sum += e[k].v * zm[e[k].a] * zm[e[k].b];
      p->yb[m * np + q] = 0.5 * sum;
    }
  }
  free(e);
  free(start);
  return QP_OK;
}

/* y from a distributed z: z (n_modes x n_maps, small) made whole on every rank first. */
static qp_err qp_spectra_from_distributed_z(qp_problem *p, const qp_matrix *z) {
  qp_matrix all = {0};
  QP_CALL(qp_matrix_create(qp_linalg_cpu_ops(), QP_TERM_MODE_MAPS_ALL, QP_TERM_TRANSIENT,
                           z->rows, z->cols, &all));
  for (int64_t lj = 0; lj < z->local_cols; ++lj)
    for (int64_t li = 0; li < z->local_rows; ++li)
      all.data[qp_matrix_global_row(z, li) + qp_matrix_global_col(z, lj) * all.ld] =
          z->data[li + lj * z->ld];
  qp_err err = qp_comm_sum(all.data, all.rows * all.cols);
  if (err == QP_OK) err = qp_spectra_from_z(p, &all);
  qp_matrix_destroy(&all);
  QP_CALL(err);
  return QP_OK;
}

static qp_err qp_spectra_from_modes(qp_problem *p, const qp_matrix *z) {
  if (z->grid) return qp_spectra_from_distributed_z(p, z);
  return qp_spectra_from_z(p, z);
}

qp_err qp_harmonic_spectra_y(qp_problem *p) {
  if (p->smw) {
    /* z = (I + K Lambda)^-1 V N_eff^-1 x, from the mode maps of basis_setup. */
    QP_CALL(qp_linalg_getrs(&p->smw_lu, p->pivots, &p->mode_maps));
    QP_CALL(qp_spectra_from_modes(p, &p->mode_maps));
    return QP_OK;
  }
  /* Projection: z = V C^-1 x = Y^T L^-1 x. */
  const int64_t n = p->n_pix, nm = p->n_modes, n_maps = p->n_maps;
  qp_err err = QP_OK;
  qp_matrix w = {0}, v = {0};
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, n, n_maps, &w),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_MODE_MAPS, QP_TERM_TRANSIENT, nm, n_maps, &v),
               done);
  qp_maps_to_matrix(p, &w);
  QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, &w), done);
  QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &p->vt, &w, 0.0, &v), done);
  QP_CALL_GOTO(qp_spectra_from_modes(p, &v), done);
done:
  qp_matrix_destroy(&v);
  qp_matrix_destroy(&w);
  return err;
}
