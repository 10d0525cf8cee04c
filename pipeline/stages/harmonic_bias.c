/* harmonic_bias.c: the harmonic routes' noise bias b in fisher_run, from G (SMW) or from
 * Z = C^-1 V^T (projection) (harmonic_bias.h) */
#include "harmonic_route.h"

#include <stdlib.h>

#include "fisher_terms.h"
#include "harmonic_bias.h"
#include "harmonic_modes.h"
#include "host_window.h"
#include "pixel_matrices.h"
#include "spin_harmonics.h"

/* G^T into g (n_modes^2): SMW: (I + K Lambda)^-1 W. */
qp_err qp_noise_kernel_smw(qp_problem *p, qp_matrix *g) {
  QP_CALL(qp_linalg_copy_sub(g->rows, g->cols, &p->kernel, 0, 0, g, 0, 0));
  QP_CALL(qp_smw_solve(p, g));
  return QP_OK;
}

/* N_eff Z into nz for Z = C^-1 V^T (projection): N_eff dense = S_fixed + N. */
qp_err qp_noise_modes_dense(qp_problem *p, const qp_matrix *z, qp_matrix *nz) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix;
  qp_matrix neff = {0};
  qp_err err = QP_OK;
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_EFF_DENSE, QP_TERM_TRANSIENT, n, n, &neff),
               done);
  QP_CALL_GOTO(qp_pixel_noise_plus_signal(p, &neff, p->plan->switched ? cfg->lmax + 1 : 1,
                                          p->plan->switched ? cfg->lmax_signal : 0),
               done);
  QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &neff, z, 0.0, nz), done);
done:
  qp_matrix_destroy(&neff);
  return err;
}

/* b_p = 1/2 tr(D_p G) = 1/2 sum over D_p's entries (a, b, v) of v G_ab: G's columns are read
 * a panel at a time (qp_model_mode_panel), each rank takes the entries it holds, then adds
 * them in the entries' order (the same sum whatever the panels), one sum over the ranks gives
 * b. */
qp_err qp_bias_from_matrix(qp_problem *p, const qp_matrix *g, const qp_entry *e,
                           const int64_t *start) {
  const int64_t n_entries = start[p->n_params], nm = g->cols;
  const int64_t panel = qp_model_mode_panel(&p->plan->model_dims);
  qp_host_window w = {0};
  qp_err err = QP_OK;
  double *terms = calloc((size_t)n_entries + 1, sizeof *terms);
  unsigned char *held = calloc((size_t)n_entries + 1, 1);
  QP_CHECK_GOTO(terms && held, QP_ERR_NOMEM, done, "out of memory for %lld entries of G",
                (long long)n_entries);
  for (int64_t c0 = 0; c0 < nm; c0 += panel) {
    const int64_t width = nm - c0 < panel ? nm - c0 : panel;
    qp_matrix gp;
    QP_CALL_GOTO(qp_matrix_columns(g, c0, width, &gp), done);
    QP_CALL_GOTO(qp_host_window_read(&gp, 0, gp.local_cols, &w), done);
    for (int64_t i = 0; i < n_entries; ++i) {
      if (e[i].b < c0 || e[i].b >= c0 + width) continue;
      const int64_t li = qp_matrix_local_row(&gp, e[i].a),
                    lj = qp_matrix_local_col(&gp, e[i].b - c0);
      if (li < 0 || lj < 0) continue;
      terms[i] = e[i].v * w.data[li + lj * w.ld];
      held[i] = 1;
    }
    qp_host_window_discard(&w);
  }
  for (int q = 0; q < p->n_params; ++q) {
    double sum = 0;
    for (int64_t i = start[q]; i < start[q + 1]; ++i)
      if (held[i]) sum += terms[i];
    p->noise_bias[q] = 0.5 * sum;
  }
  QP_CALL_GOTO(qp_linalg_sum_partials(p->ops, p->noise_bias, p->n_params), done);
done:
  qp_host_window_discard(&w);
  free(terms);
  free(held);
  return err;
}

/* sum over i < n of x_i y_i w_i (w NULL: of x_i y_i), in eight partial sums of the elements
 * i = k mod 8, added in a fixed tree at the end: one running sum waits on its previous
 * addition at every element, 4 cycles each (the noise bias's dots took 26 of QU nside 16's
 * 980 ms of fisher_run, 14-15 this way). The order is this code's, not the compiler's, so
 * the value does not depend on the vector width; it differs from the running sum's in the
 * last bits, as any reordering of a sum does. */
static double qp_dot(const double *restrict x, const double *restrict y, const double *restrict w,
                     int64_t n) {
  double part[8] = {0};
  int64_t i = 0;
  if (w) {
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k)
        part[k] += x[i + k] * y[i + k] * w[i + k];
    for (int k = 0; i + k < n; ++k)
      part[k] += x[i + k] * y[i + k] * w[i + k];
  } else {
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k)
        part[k] += x[i + k] * y[i + k];
    for (int k = 0; i + k < n; ++k)
      part[k] += x[i + k] * y[i + k];
  }
  return ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
}

/* Projection: b_p = 1/2 sum over D_p's entries (a, b, v) of v Z_b^T N_eff Z_a, Z = C^-1 V^T
 * (n_pix x n_modes) and nz = N_eff Z (NULL for a diagonal N: the variances instead). Z's
 * columns are read a panel at a time (qp_model_mode_panel: all of them unless the plan
 * panels the host windows under memory.host_limit). For each pair of fields (fa, fb) the
 * columns of field fb are lined up with the panel's columns of fa where (l, m) agree (where
 * fa = fb without nz, Z_b is the panel's own column: nothing to line up), every rank sums its
 * rows of the entries whose column it holds, one sum over the ranks completes the dots. Each
 * dot is the same sum in the same order whatever the panels. */
qp_err qp_bias_from_modes(qp_problem *p, const qp_matrix *z, const qp_matrix *nz, const qp_entry *e,
                          const int64_t *start) {
  const qp_config *cfg = p->cfg;
  const int64_t n_entries = start[p->n_params], nm = z->cols;
  const int64_t panel = qp_model_mode_panel(&p->plan->model_dims);
  const int moves = qp_linalg_moves_data(p->ops);
  qp_matrix work = {0};
  qp_host_window rw = {0};
  qp_err err = QP_OK;
  double *dots = calloc((size_t)n_entries + 1, sizeof *dots);
  /* N_eff's variances at this rank's rows of Z (unused with a dense N_eff: nz) */
  double *variance = malloc((size_t)(z->local_rows > 0 ? z->local_rows : 1) * sizeof *variance);
  QP_CHECK_GOTO(dots && variance, QP_ERR_NOMEM, done, "out of memory for %lld dots",
                (long long)n_entries);
  if (!nz)
    for (int64_t li = 0; li < z->local_rows; ++li)
      variance[li] = p->noise_variance[qp_matrix_global_row(z, li)];
  /* The model's Z_aligned: where aligning moves data and some pair needs lining up. */
  if (moves && (nz || qp_spectra_cross(cfg)))
    QP_CALL_GOTO(qp_matrix_create(qp_linalg_host_ops(p->ops), QP_TERM_ALIGNED_MODES,
                                  QP_TERM_TRANSIENT, z->rows, panel, &work),
                 done);
  const qp_matrix *right = nz ? nz : z;
  int used[3][3] = {{0}}; /* the field pairs (fa, fb) of D_p's entries */
  for (int64_t k = 0; k < n_entries; ++k)
    used[e[k].fa][e[k].fb] = 1;
  for (int64_t g0 = 0; g0 < nm; g0 += panel) {
    const int64_t cols = nm - g0 < panel ? nm - g0 : panel;
    qp_matrix zp, rp, wp = {0};
    QP_CALL_GOTO(qp_matrix_columns(z, g0, cols, &zp), done);
    QP_CALL_GOTO(qp_matrix_columns(right, g0, cols, &rp), done);
    if (work.ops) QP_CALL_GOTO(qp_matrix_columns(&work, 0, cols, &wp), done);
    QP_CALL_GOTO(qp_host_window_read(&rp, 0, rp.local_cols, &rw), done);
    for (int fa = 0; fa < 3; ++fa)
      for (int fb = 0; fb < 3; ++fb) {
        if (!used[fa][fb]) continue;
        const int lo = p->field_ell_min[fa] > p->field_ell_min[fb] ? p->field_ell_min[fa]
                                                                   : p->field_ell_min[fb];
        /* fa's columns in this panel, [a0, a1), and fb's columns of the same (l, m). */
        const int64_t first_a = qp_mode(p, fa, lo, -lo), first_b = qp_mode(p, fb, lo, -lo),
                      count = qp_harmonic_count(lo, cfg->lmax);
        const int64_t a0 = first_a > g0 ? first_a : g0,
                      a1 = first_a + count < g0 + cols ? first_a + count : g0 + cols;
        if (a0 >= a1) continue;
        qp_aligned zb = {rw.data, rw.ld, 0, 0};
        if (fa != fb || nz)
          QP_CALL_GOTO(qp_linalg_align(z, 0, first_b + (a0 - first_a), z->rows, a1 - a0, &zp, 0,
                                       a0 - g0, moves ? &wp : NULL, &zb),
                       done);
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t k = 0; k < n_entries; ++k) {
          if (e[k].fa != fa || e[k].fb != fb || e[k].a < a0 || e[k].a >= a1) continue;
          const int64_t lj = qp_matrix_local_col(&zp, e[k].a - g0);
          if (lj < 0) continue;
          dots[k] = qp_dot(&zb.base[zb.row_shift + (lj + zb.col_shift) * zb.ld],
                           rw.data + lj * rw.ld, nz ? NULL : variance, z->local_rows);
        }
      }
    qp_host_window_discard(&rw);
  }
  QP_CALL_GOTO(qp_linalg_sum_partials(p->ops, dots, n_entries), done);
  for (int q = 0; q < p->n_params; ++q) {
    double sum = 0;
    for (int64_t k = start[q]; k < start[q + 1]; ++k)
      sum += e[k].v * dots[k];
    p->noise_bias[q] = 0.5 * sum;
  }
done:
  qp_host_window_discard(&rw);
  qp_matrix_destroy(&work);
  free(dots);
  free(variance);
  return err;
}
