/* harmonic_route.c: the harmonic path, SMW and projection routes (harmonic_route.h). */
#include "harmonic_route.h"

#include <chealpix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "conditioning.h"
#include "spin_harmonics.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "terms.h"

/* The fields (T = 0, E = 1, B = 2) each spectrum couples, in QML.md 6 order. */
static const int qp_spectrum_fields[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

/* The spectrum coupling fields f1 and f2. */
static qp_spectrum qp_fields_spectrum(int f1, int f2) {
  static const qp_spectrum table[3][3] = {
      {QP_TT, QP_TE, QP_TB}, {QP_TE, QP_EE, QP_EB}, {QP_TB, QP_EB, QP_BB}};
  return table[f1][f2];
}

void qp_harmonic_layout(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const int has[3] = {p->n_obs_t > 0, p->n_obs_p > 0, p->n_obs_p > 0};
  p->n_modes = 0;
  for (int f = 0; f < 3; ++f) {
    p->field_ell_min[f] = f == 0 ? cfg->ell_min : (cfg->ell_min > 2 ? cfg->ell_min : 2);
    p->field_offset[f] = has[f] ? p->n_modes : -1;
    if (has[f] && cfg->lmax >= p->field_ell_min[f])
      p->n_modes += qp_harmonic_count(p->field_ell_min[f], cfg->lmax);
  }
}

static int64_t qp_mode(const qp_problem *p, int field, int l, int m) {
  return p->field_offset[field] + qp_harmonic_index(l, m, p->field_ell_min[field]);
}

/* B_l^2 from the pixel weights (2l+1)/(4 pi) B_l^2: the harmonic basis carries (2l+1)/(4 pi). */
static double qp_beam2(const qp_problem *p, int l) {
  return p->ell_weight[l] * 4.0 * M_PI / (2.0 * l + 1.0);
}

/* ---- D_p: the sparse derivative of Lambda ---- */

typedef struct qp_entry {
  int64_t a, b;
  double v;
} qp_entry;

/* Lists the entries of every D_q: entries[start[q] .. start[q+1]). malloc'd (O(n_modes)). */
static qp_err qp_param_entries(const qp_problem *p, qp_entry **entries, int64_t **start) {
  const qp_config *cfg = p->cfg;
  int64_t total = 0;
  *start = malloc((size_t)(p->n_params + 1) * sizeof **start);
  QP_CHECK(*start, QP_ERR_NOMEM, "out of memory for the parameter entries");
  for (int pass = 0; pass < 2; ++pass) {
    int64_t k = 0;
    for (int q = 0; q < p->n_params; ++q) {
      const int bin = q % p->n_bins;
      const qp_spectrum s = cfg->spectra[q / p->n_bins];
      const int f1 = qp_spectrum_fields[s][0], f2 = qp_spectrum_fields[s][1];
      (*start)[q] = k;
      for (int l = p->bin_lo[bin]; l <= p->bin_hi[bin]; ++l) {
        if (l < p->field_ell_min[f1] || l < p->field_ell_min[f2]) continue;
        const double v = qp_beam2(p, l);
        for (int m = -l; m <= l; ++m) {
          int64_t a = qp_mode(p, f1, l, m), b = qp_mode(p, f2, l, m);
          if (pass) (*entries)[k] = (qp_entry){a, b, v};
          ++k;
          if (f1 != f2) {
            if (pass) (*entries)[k] = (qp_entry){b, a, v};
            ++k;
          }
        }
      }
    }
    (*start)[p->n_params] = k;
    if (!pass) {
      total = k;
      *entries = malloc((size_t)(total > 0 ? total : 1) * sizeof **entries);
      QP_CHECK(*entries, QP_ERR_NOMEM, "out of memory for %lld parameter entries",
               (long long)total);
    }
  }
  return QP_OK;
}

/* ---- basis_setup ---- */

/* V^T at the observed positions: T rows from the temperature basis, Q/U rows from E and B.
 * Each position's rows (T at pos; Q at pos and U at pos + n_obs_p) get the basis values of
 * their columns' fields. Distributed, a rank evaluates the basis only at positions with a row
 * of its own, and writes its own columns. */
static qp_err qp_build_vt(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  qp_matrix *v = &p->vt;
  const int64_t nt = p->n_obs_t, np = p->n_obs_p;
  /* Per local column: its field and its index among that field's modes. */
  int *field = malloc((size_t)(v->local_cols > 0 ? v->local_cols : 1) * sizeof *field);
  int64_t *index = malloc((size_t)(v->local_cols > 0 ? v->local_cols : 1) * sizeof *index);
  QP_CHECK(field && index, QP_ERR_NOMEM, "out of memory for %lld mode columns",
           (long long)v->local_cols);
  for (int64_t lj = 0; lj < v->local_cols; ++lj) {
    const int64_t mode = qp_matrix_global_col(v, lj);
    for (int f = 0; f < 3; ++f)
      if (p->field_offset[f] >= 0 && mode >= p->field_offset[f]) {
        field[lj] = f;
        index[lj] = mode - p->field_offset[f];
      }
  }
#pragma omp parallel
  {
    const int count = qp_harmonic_count(0, cfg->lmax);
    double *work = malloc((size_t)qp_harmonics_work_size(cfg->lmax) * sizeof *work);
    double *row = malloc((size_t)(5 * count) * sizeof *row);
#pragma omp for schedule(dynamic, 16)
    for (int64_t pos = 0; pos < p->n_observed; ++pos) {
      const int pol = pos >= nt;
      const int64_t rows[2] = {qp_matrix_local_row(v, pos),
                               pol ? qp_matrix_local_row(v, pos + np) : -1};
      const int lo = p->field_ell_min[pol ? 1 : 0];
      if ((rows[0] < 0 && rows[1] < 0) || cfg->lmax < lo) continue;
      double theta, phi;
      pix2ang_ring64(p->nside, p->observed[pos], &theta, &phi);
      double *t = row, *qe = row + count, *ue = row + 2 * count, *qb = row + 3 * count,
             *ub = row + 4 * count;
      if (!pol)
        qp_harmonics_at(lo, cfg->lmax, theta, phi, work, t, NULL, NULL, NULL, NULL);
      else
        qp_harmonics_at(lo, cfg->lmax, theta, phi, work, NULL, qe, ue, qb, ub);
      /* The values by field (T, E, B) of the T row, or of the Q row and the U row. */
      const double *values[2][3] = {{pol ? NULL : t, pol ? qe : NULL, pol ? qb : NULL},
                                    {NULL, ue, ub}};
      for (int r = 0; r < 2; ++r) {
        if (rows[r] < 0) continue;
        for (int64_t lj = 0; lj < v->local_cols; ++lj) {
          const double *x = values[r][field[lj]];
          if (x) v->data[rows[r] + lj * v->ld] = x[index[lj]];
        }
      }
    }
    free(work);
    free(row);
  }
  free(field);
  free(index);
  return QP_OK;
}

/* M = I + K Lambda: column b of K Lambda is sum over the fields f of K[:, (f, l, m)] times
 * C_l^{f fb} B_l^2, (l, m) and fb being mode b's. */
static void qp_build_smw_matrix(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const int64_t nm = p->n_modes;
  const double *k = p->kernel.data;
  double *mm = p->smw_lu.data;
  memset(mm, 0, (size_t)(nm * nm) * sizeof *mm);
  for (int fb = 0; fb < 3; ++fb) {
    if (p->field_offset[fb] < 0) continue;
    for (int l = p->field_ell_min[fb]; l <= cfg->lmax; ++l)
      for (int m = -l; m <= l; ++m) {
        const int64_t b = qp_mode(p, fb, l, m);
        double *col = mm + b * nm;
        for (int f = 0; f < 3; ++f) {
          if (p->field_offset[f] < 0 || l < p->field_ell_min[f]) continue;
          const double c = p->cls.cl[qp_fields_spectrum(f, fb)][l] * qp_beam2(p, l);
          if (c == 0.0) continue;
          const double *kc = k + qp_mode(p, f, l, m) * nm;
          for (int64_t i = 0; i < nm; ++i)
            col[i] += c * kc[i];
        }
        col[b] += 1.0;
      }
  }
}

/* The same, distributed: M = I, then for every pair of fields (f, fb) K's columns of field
 * f are redistributed to the columns of fb (where (l, m) agree) and added, scaled by
 * C_l^{f fb} B_l^2, each rank on its own columns. */
static qp_err qp_build_smw_matrix_distributed(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  const int64_t nm = p->n_modes;
  qp_matrix *mm = &p->smw_lu, cols = {0};
  qp_err err = QP_OK;
  qp_matrix_set_identity(mm, 1.0);
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_SMW_COLUMNS, QP_TERM_TRANSIENT, nm, nm, &cols));
  for (int fb = 0; fb < 3; ++fb)
    for (int f = 0; f < 3; ++f) {
      if (p->field_offset[fb] < 0 || p->field_offset[f] < 0) continue;
      const int lo = p->field_ell_min[f] > p->field_ell_min[fb] ? p->field_ell_min[f]
                                                                 : p->field_ell_min[fb];
      if (lo > cfg->lmax) continue;
      int nonzero = 0;
      for (int l = lo; l <= cfg->lmax; ++l) nonzero |= p->cls.cl[qp_fields_spectrum(f, fb)][l] != 0;
      if (!nonzero) continue;
      const int64_t count = qp_harmonic_count(lo, cfg->lmax);
      const int64_t from = qp_mode(p, f, lo, -lo), to = qp_mode(p, fb, lo, -lo);
      QP_CALL_GOTO(qp_linalg_copy_sub(nm, count, &p->kernel, 0, from, &cols, 0, to), done);
      for (int64_t lj = 0; lj < mm->local_cols; ++lj) {
        const int64_t b = qp_matrix_global_col(mm, lj);
        if (b < to || b >= to + count) continue;
        const int l = qp_harmonic_ell(b - to, lo);
        const double c = p->cls.cl[qp_fields_spectrum(f, fb)][l] * qp_beam2(p, l);
        for (int64_t li = 0; li < mm->local_rows; ++li)
          mm->data[li + lj * mm->ld] += c * cols.data[li + lj * cols.ld];
      }
    }
done:
  qp_matrix_destroy(&cols);
  return err;
}

/* x -> N_eff^-1/2 x for SMW: by the Cholesky factor of a dense N_eff, or the variances. */
static qp_err qp_whiten_smw(qp_problem *p, qp_matrix *x) {
  if (p->noise_factor.data) {
    QP_CALL(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &p->noise_factor, x));
  } else {
    for (int64_t k = 0; k < x->local_cols; ++k)
      for (int64_t i = 0; i < x->local_rows; ++i)
        x->data[i + k * x->ld] /= sqrt(p->noise_variance[qp_matrix_global_row(x, i)]);
  }
  return QP_OK;
}

/* SMW, in three phases that free what they are done with (the model's phases):
 *  0: V^T, Y = N_eff^-1/2 V^T, and V N_eff^-1 x for the maps; then N_eff goes;
 *  1: K = Y^T Y; then V goes;
 *  2: M = I + K Lambda, its LU, W = M^-1 K in place of K. */
static qp_err qp_basis_smw(qp_problem *p, qp_progress *progress) {
  const int64_t n = p->n_pix, nm = p->n_modes, n_maps = p->n_maps;
  qp_err err = QP_OK;
  qp_matrix w = {0};
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_V, QP_TERM_TRANSIENT, n, nm, &p->vt));
  QP_CALL(qp_build_vt(p));
  qp_progress_note(progress, "harmonic basis V built");
  double noise_norm = 0.0; /* lambda_max(N): |N_eff|_1, or the largest variance */
  if (p->noise_factor.data) {
    QP_CALL(qp_conditioned_potrf(p, &p->noise_factor, QP_RCOND_NOISE,
                                 p->switched ? "N_eff = N + S_fixed (SMW's noise)"
                                             : "the noise covariance N (SMW)",
                                 QP_RCOND_SMW_ADVICE, &noise_norm));
  } else {
    QP_CALL(qp_conditioning_check(p, QP_RCOND_NOISE, qp_rcond_diagonal(p->noise_variance, n),
                                  "the noise N (SMW; rcond = smallest / largest variance)",
                                  QP_RCOND_SMW_ADVICE));
    noise_norm = qp_largest(p->noise_variance, n);
  }
  /* SMW never forms C, but its results are C^-1 applied to the data all the same, as
   * sensitive as C's conditioning. C >= N and |C| <= |N| + |S_V| bound it from below:
   * rcond(C) >= rcond(N) / (1 + lambda_max(S_V) / lambda_max(N)); with a noise of 1e-300
   * everywhere rcond(N) is 1 and I + K Lambda well conditioned, yet C is singular in double
   * precision, and this is what refuses it, as the other routes refuse C itself. */
  QP_CALL(qp_conditioning_check(
      p, QP_RCOND_COVARIANCE, qp_smw_covariance_rcond(p, p->rcond[QP_RCOND_NOISE], noise_norm),
      "the covariance C = S + N (SMW's bound: rcond(N) / (1 + lambda_max(S) / lambda_max(N)))",
      QP_RCOND_COVARIANCE_ADVICE));
  QP_CALL(qp_whiten_smw(p, &p->vt));
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MAPS, QP_TERM_TRANSIENT, n, n_maps, &w),
               done);
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_MODE_MAPS, QP_TERM_PERSISTENT, nm, n_maps,
                                &p->mode_maps),
               done);
  qp_maps_to_matrix(p, &w);
  QP_CALL_GOTO(qp_whiten_smw(p, &w), done);
  QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &p->vt, &w, 0.0, &p->mode_maps), done);
  qp_matrix_destroy(&w);
  /* N_eff (or the dense N it was made in) is not needed any more. */
  qp_matrix_destroy(&p->noise_factor);
  qp_matrix_destroy(&p->noise);

  QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL, QP_TERM_PERSISTENT, nm, nm, &p->kernel));
  QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt, 0.0, &p->kernel));
  qp_matrix_destroy(&p->vt);
  qp_progress_note(progress, "K = V N^-1 V^T");

  QP_CALL(qp_matrix_create(p->ops, QP_TERM_SMW_LU, QP_TERM_PERSISTENT, nm, nm, &p->smw_lu));
  QP_CALL(qp_budget_alloc_array(QP_TERM_PIVOTS, QP_TERM_PERSISTENT,
                                (size_t)qp_linalg_pivot_count(&p->smw_lu), sizeof(int),
                                (void **)&p->pivots));
  if (p->smw_lu.grid)
    QP_CALL(qp_build_smw_matrix_distributed(p));
  else
    qp_build_smw_matrix(p);
  double anorm = 0.0, rcond = 0.0;
  QP_CALL(qp_linalg_norm1(&p->smw_lu, &anorm));
  err = qp_linalg_getrf(&p->smw_lu, p->pivots);
  QP_CHECK(err != QP_ERR_NOT_POSDEF, QP_ERR_NOT_POSDEF,
           "the SMW kernel I + K Lambda is singular (%s); use harmonic_method: projected",
           qp_error_message());
  QP_CALL(err);
  QP_CALL(qp_linalg_gecon(&p->smw_lu, anorm, &rcond));
  QP_CALL(qp_conditioning_check(p, QP_RCOND_SMW, rcond, "the SMW kernel I + K Lambda",
                                QP_RCOND_SMW_ADVICE));
  QP_CALL(qp_linalg_getrs(&p->smw_lu, p->pivots, &p->kernel));
  qp_progress_note(progress, "W = (I + K Lambda)^-1 K");
  qp_budget_free(p->noise_variance);
  p->noise_variance = NULL;
  return QP_OK;
done:
  qp_matrix_destroy(&w);
  return err;
}

qp_err qp_harmonic_basis_setup(qp_problem *p) {
  const int64_t n = p->n_pix, nm = p->n_modes;
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "basis_setup", "", 0);
  if (p->smw) {
    QP_CALL(qp_basis_smw(p, &progress));
    return QP_OK;
  }
  /* Projection: L = chol(C), Y = L^-1 V^T, W = Y^T Y. */
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_V, QP_TERM_PERSISTENT, n, nm, &p->vt));
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL, QP_TERM_PERSISTENT, nm, nm, &p->kernel));
  QP_CALL(qp_build_vt(p));
  qp_progress_note(&progress, "harmonic basis V built");
  QP_CALL(qp_conditioned_potrf(p, &p->cov, QP_RCOND_COVARIANCE, QP_RCOND_COVARIANCE_WHAT,
                               QP_RCOND_COVARIANCE_ADVICE, NULL));
  QP_CALL(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, &p->vt));
  QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt, 0.0, &p->kernel));
  qp_progress_note(&progress, "W = (L^-1 V^T)^T (L^-1 V^T)");
  return QP_OK;
}

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
