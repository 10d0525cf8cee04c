/* harmonic_route.c: the harmonic path's basis_setup: V^T, the projection route, and SMW's
 * entry (harmonic_smw.c, harmonic_smw_cross.c) (harmonic_route.h); its fisher_run:
 * harmonic_fisher.c and harmonic_bias.c, its spectra_run: harmonic_spectra.c. */
#include "harmonic_route.h"

#include <chealpix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "basis_terms.h"
#include "conditioning.h"
#include "harmonic_modes.h"
#include "harmonic_smw.h"
#include "host_window.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "spectra_terms.h"
#include "spin_harmonics.h"

/* ---- basis_setup ---- */

/* V^T at the observed positions: T rows from the temperature basis, Q/U rows from E and B.
 * Each position's rows (T at pos; Q at pos and U at pos + n_obs_p) get the basis values of
 * their columns' fields (+0 for a column of another field). Distributed, a rank evaluates the
 * basis only at positions with a row of its own, and writes its own columns. On a device
 * backend under memory.host_limit the host window is a panel of qp_host_panel(p) local rows at
 * a time (every mode of a position comes from one colatitude's factors, so panels of rows, not
 * of columns, cost nothing twice; a polarised position whose Q and U rows fall in two panels
 * is evaluated in each).
 *
 * By blocks of up to QP_VT_BLOCK positions on one ring (one colatitude, one kind of row), a
 * column at a time: a row of V^T is strided in memory (its entries ld apart), so writing a
 * position's row touched a cache line per entry; a block's entries of one column are
 * consecutive rows, written as one run (8 doubles: a cache line). Every entry of the column is
 * its recipe (qp_basis_recipe, spin_harmonics.h) applied to the ring's factors, which a thread
 * computes once per ring it meets, and to cos and sin of |m| phi of each pixel: bitwise
 * qp_harmonics_at's value, in O(lmax^2) scratch per thread (no row of n_modes values). On T
 * nside 16 the build went 0.020-0.030 s -> 0.009 s (docs/benchmarks.md). */
enum { QP_VT_BLOCK = 8 };

/* A block's "trig" where a recipe takes its factor alone (m = 0 of a cosine-free output). */
static const double ones[QP_VT_BLOCK] = {1, 1, 1, 1, 1, 1, 1, 1};

/* The row kinds of V^T: T rows, Q rows, U rows. */
enum { QP_VT_ROW_T, QP_VT_ROW_Q, QP_VT_ROW_U, QP_VT_ROW_KINDS };

/* What a column holds in each kind of row: the basis output of its field there, or +0. */
static qp_basis_recipe qp_vt_recipe(const qp_problem *p, int row_kind, int field, int64_t index) {
  static const int output[QP_VT_ROW_KINDS][3] = {
      {QP_BASIS_T, -1, -1}, {-1, QP_BASIS_QE, QP_BASIS_QB}, {-1, QP_BASIS_UE, QP_BASIS_UB}};
  const int out = output[row_kind][field];
  if (out < 0) return (qp_basis_recipe){0, 0, QP_FACTOR_NONE, QP_TRIG_NONE, 0};
  const int ell_min = p->field_ell_min[field];
  const int l = qp_harmonic_ell(index, ell_min);
  const int m = (int)(index + (int64_t)ell_min * ell_min - (int64_t)l * l - l);
  return qp_basis_recipe_of(p->cfg->lmax, (qp_basis_output)out, l, m);
}

/* The blocks: runs of up to QP_VT_BLOCK positions with one colatitude and one kind (T or
 * polarised). starts[b] is block b's first position, starts[n_blocks] = n_observed. */
static qp_err qp_vt_blocks(const qp_problem *p, int64_t **starts, int64_t *n_blocks) {
  const int64_t n = p->n_observed;
  int64_t *s = malloc((size_t)(n + 1) * sizeof *s);
  QP_CHECK(s, QP_ERR_NOMEM, "basis_setup: out of memory for the blocks of %lld positions",
           (long long)n);
  int64_t count = 0;
  double theta0 = NAN, phi;
  for (int64_t pos = 0; pos < n; ++pos) {
    double theta;
    pix2ang_ring64(p->nside, p->observed[pos], &theta, &phi);
    if (count == 0 || theta != theta0 || pos == p->n_obs_t || pos - s[count - 1] == QP_VT_BLOCK)
      s[count++] = pos;
    theta0 = theta;
  }
  s[count] = n;
  *starts = s;
  *n_blocks = count;
  return QP_OK;
}

qp_err qp_harmonic_build_vt(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  qp_matrix *v = &p->vt;
  const int64_t nt = p->n_obs_t, np = p->n_obs_p, cols = v->local_cols;
  const int lmax = cfg->lmax, polarised = np > 0;
  /* Per local column, its recipe in each kind of row. */
  qp_basis_recipe *recipe =
      malloc((size_t)(QP_VT_ROW_KINDS * (cols > 0 ? cols : 1)) * sizeof *recipe);
  int64_t *starts = NULL, n_blocks = 0;
  qp_host_window vw = {0};
  qp_err err = QP_OK;
  int scratch_missing = 0;
  QP_CHECK_GOTO(recipe, QP_ERR_NOMEM, done, "basis_setup: out of memory for %lld mode columns",
                (long long)cols);
  for (int64_t lj = 0; lj < cols; ++lj) {
    const int64_t mode = qp_matrix_global_col(v, lj);
    int field = 0;
    for (int f = 0; f < 3; ++f)
      if (p->field_offset[f] >= 0 && mode >= p->field_offset[f]) field = f;
    for (int kind = 0; kind < QP_VT_ROW_KINDS; ++kind)
      recipe[kind * cols + lj] = qp_vt_recipe(p, kind, field, mode - p->field_offset[field]);
  }
  QP_CALL_GOTO(qp_vt_blocks(p, &starts, &n_blocks), done);
  for (int64_t row0 = 0, rows; row0 < v->local_rows; row0 += rows) {
    rows = qp_host_panel_width(p, v->local_rows, row0);
    QP_CALL_GOTO(qp_host_window_open_block(v, row0, rows, 0, cols, QP_ACCESS_WRITE, &vw), done);
#pragma omp parallel
    {
      qp_harmonics_ring ring = {0};
      const int ring_ready = qp_harmonics_ring_init(&ring, lmax, polarised);
      /* cos and sin of m phi, m-major: trig[m * QP_VT_BLOCK + i] for the block's pixel i */
      double *trig = malloc((size_t)(2 * (lmax + 1) * QP_VT_BLOCK) * sizeof *trig);
      const int ready = ring_ready && trig;
      if (!ready) {
#pragma omp atomic write
        scratch_missing = 1;
      }
#pragma omp for schedule(dynamic, 1)
      for (int64_t b = 0; b < n_blocks; ++b) {
        if (!ready) continue;
        const int64_t first = starts[b], count = starts[b + 1] - first;
        const int pol = first >= nt;
        if (lmax < p->field_ell_min[pol ? 1 : 0]) continue;
        /* The block's rows in this panel, as rows of the window (-1: not in it): T or Q rows,
         * then U rows. */
        int64_t at[2][QP_VT_BLOCK];
        int any = 0;
        for (int64_t i = 0; i < count; ++i)
          for (int r = 0; r < 2; ++r) {
            int64_t row = r == 0 ? qp_matrix_local_row(v, first + i)
                          : pol  ? qp_matrix_local_row(v, first + i + np)
                                 : -1;
            at[r][i] = row >= row0 && row < row0 + rows ? row - row0 : -1;
            any |= at[r][i] >= 0;
          }
        if (!any) continue;
        double *cm = trig, *sm = trig + (lmax + 1) * QP_VT_BLOCK;
        for (int64_t i = 0; i < count; ++i) {
          double theta, phi;
          pix2ang_ring64(p->nside, p->observed[first + i], &theta, &phi);
          if (i == 0) qp_harmonics_ring_theta(&ring, theta);
          for (int m = 0; m <= lmax; ++m) {
            cm[m * QP_VT_BLOCK + i] = cos(m * phi);
            sm[m * QP_VT_BLOCK + i] = sin(m * phi);
          }
        }
        for (int r = 0; r < (pol ? 2 : 1); ++r) {
          const qp_basis_recipe *rc = recipe + (pol ? QP_VT_ROW_Q + r : QP_VT_ROW_T) * cols;
          int run = at[r][0] >= 0;
          for (int64_t i = 1; i < count; ++i)
            run &= at[r][i] == at[r][0] + i;
          if (run) {
            /* The block's rows are consecutive rows of the window (one process, or rows
             * that one rank holds together): per column one factor times the block's cos,
             * sin or 1, a loop the compiler vectorises, instead of a recipe's branches per
             * entry. (-f) x t is -(f x t) exactly, so every value is qp_basis_value's
             * bitwise; on T nside 16 the build went 8.7-9.8 -> 5.2-6.1 ms. */
            for (int64_t lj = 0; lj < cols; ++lj) {
              double *restrict col = vw.data + lj * vw.ld + at[r][0];
              const double *f = qp_basis_factors(&ring, &rc[lj]);
              if (!f) {
                for (int64_t i = 0; i < count; ++i)
                  col[i] = 0.0;
                continue;
              }
              const double factor = qp_basis_signed_factor(&rc[lj], f);
              const double *t = rc[lj].trig == QP_TRIG_COS   ? cm + rc[lj].m * QP_VT_BLOCK
                                : rc[lj].trig == QP_TRIG_SIN ? sm + rc[lj].m * QP_VT_BLOCK
                                                             : ones;
#pragma omp simd
              for (int64_t i = 0; i < count; ++i)
                col[i] = factor * t[i];
            }
            continue;
          }
          for (int64_t lj = 0; lj < cols; ++lj) {
            double *col = vw.data + lj * vw.ld;
            const double *c = cm + rc[lj].m * QP_VT_BLOCK, *s = sm + rc[lj].m * QP_VT_BLOCK;
            for (int64_t i = 0; i < count; ++i)
              if (at[r][i] >= 0) col[at[r][i]] = qp_basis_value(&ring, &rc[lj], c[i], s[i]);
          }
        }
      }
      qp_harmonics_ring_free(&ring);
      free(trig);
    }
    QP_CHECK_GOTO(!scratch_missing, QP_ERR_NOMEM, done,
                  "basis_setup: out of memory for a thread's harmonic scratch (lmax %d)", lmax);
    QP_CALL_GOTO(qp_host_window_close(&vw), done);
  }
done:
  qp_host_window_discard(&vw);
  free(recipe);
  free(starts);
  return err;
}

/* out = K Lambda (+ I): column b of K Lambda is the sum over the fields f of K[:, (f, l, m)] times
 * C_l^{f fb} B_l^2, (l, m) and fb being mode b's. M is built a panel of its columns at a time
 * (qp_model_mode_panel: all of them unless the plan panels the host windows under
 * memory.host_limit): for every pair of fields (f, fb), K's columns of field f are lined up
 * with the panel's columns of fb where (l, m) agree (qp_linalg_align: a copy where the backend
 * moves data) and each rank adds them into its own columns; the identity last. Every entry
 * gets its terms in the same order whatever the panels. */
qp_err qp_kernel_times_lambda(qp_problem *p, const qp_matrix *kernel, qp_matrix *out, int identity,
                              const char *work_term) {
  const qp_config *cfg = p->cfg;
  const int64_t nm = p->n_modes, panel = qp_model_mode_panel(&p->plan->model_dims);
  qp_matrix work = {0};
  qp_host_window w = {0};
  qp_err err = QP_OK;
  const int moves = qp_linalg_moves_data(p->ops);
  if (moves)
    QP_CALL(qp_matrix_create(qp_linalg_host_ops(p->ops), work_term, QP_TERM_TRANSIENT, nm, panel,
                             &work));
  for (int64_t c0 = 0; c0 < nm; c0 += panel) {
    const int64_t width = nm - c0 < panel ? nm - c0 : panel;
    qp_matrix mm, wp = {0};
    QP_CALL_GOTO(qp_matrix_columns(out, c0, width, &mm), done);
    if (moves) QP_CALL_GOTO(qp_matrix_columns(&work, 0, width, &wp), done);
    QP_CALL_GOTO(qp_host_window_open(&mm, 0, mm.local_cols, QP_ACCESS_WRITE, &w), done);
    for (int64_t lj = 0; lj < mm.local_cols; ++lj)
      memset(w.data + lj * w.ld, 0, (size_t)mm.local_rows * sizeof(double));
    for (int fb = 0; fb < 3; ++fb)
      for (int f = 0; f < 3; ++f) {
        if (p->field_offset[fb] < 0 || p->field_offset[f] < 0) continue;
        const int lo =
            p->field_ell_min[f] > p->field_ell_min[fb] ? p->field_ell_min[f] : p->field_ell_min[fb];
        if (lo > cfg->lmax) continue;
        int nonzero = 0;
        for (int l = lo; l <= cfg->lmax; ++l)
          nonzero |= p->cls.cl[qp_fields_spectrum(f, fb)][l] != 0;
        if (!nonzero) continue;
        /* M's columns [to, to + count) of fb, of them [b0, b1) in this panel. */
        const int64_t count = qp_harmonic_count(lo, cfg->lmax);
        const int64_t from = qp_mode(p, f, lo, -lo), to = qp_mode(p, fb, lo, -lo);
        const int64_t b0 = to > c0 ? to : c0,
                      b1 = to + count < c0 + width ? to + count : c0 + width;
        if (b0 >= b1) continue;
        qp_aligned k;
        QP_CALL_GOTO(qp_linalg_align(kernel, 0, from + (b0 - to), nm, b1 - b0, &mm, 0, b0 - c0,
                                     moves ? &wp : NULL, &k),
                     done);
        for (int64_t lj = 0; lj < mm.local_cols; ++lj) {
          const int64_t b = c0 + qp_matrix_global_col(&mm, lj);
          if (b < b0 || b >= b1) continue;
          const int l = qp_harmonic_ell(b - to, lo);
          const double c = p->cls.cl[qp_fields_spectrum(f, fb)][l] * qp_mode_weight(p, f, fb, l);
          if (c == 0.0) continue;
          double *col = w.data + lj * w.ld;
          for (int64_t li = 0; li < mm.local_rows; ++li)
            col[li] += c * qp_aligned_at(&k, li, lj);
        }
      }
    for (int64_t lj = 0; identity && lj < mm.local_cols; ++lj) {
      const int64_t li = qp_matrix_local_row(&mm, c0 + qp_matrix_global_col(&mm, lj));
      if (li >= 0) w.data[li + lj * w.ld] += 1.0;
    }
    QP_CALL_GOTO(qp_host_window_close(&w), done);
  }
done:
  qp_host_window_discard(&w);
  qp_matrix_destroy(&work);
  return err;
}

/* Projection under a device limit that cannot hold W (qp_w_block < n_modes): W = Y^T Y a block
 * of columns at a time on the device, each downloaded into p->kernel, a host matrix (W_host):
 * the device never holds all of W. The last block may be narrower.
 * - One process: each block's lower part W[j0.., j0..] = Y[:, j0..]^T Y[:, j0..j0 + cols) by
 *   gemm into the top rows of the device's W_block, then W_host's upper triangle mirrored
 *   from the lower one: the flops are syrk's (n_pix n_modes^2), not twice them.
 * - On a grid: the blocks start at multiples of block x npcol (planner_chunks.c), where a range of
 *   columns is a block-cyclic matrix of its own (qp_matrix_columns), and each is formed whole,
 *   W[:, j0..j0 + cols) = Y^T Y[:, j0..j0 + cols), into W_host's same local columns: twice
 *   the flops, for want of a mirror of a distributed host matrix (a pdtran and a second W).
 * W's entries are the dot products syrk sums, in the BLAS's gemm order: F, b and C_hat within
 * 1e-12 of the unchunked W (tests/pipeline/test_hostdev_w_blocks.c, on 1 and 2 ranks). */
static qp_err qp_kernel_in_blocks(qp_problem *p) {
  const int64_t nm = p->n_modes, wb = qp_w_block(p);
  const int whole_columns = qp_w_blocks_whole_columns(p);
  qp_matrix block = {0}, part, yr, yj, dest;
  qp_err err = QP_OK;
  QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_KERNEL_BLOCK, QP_TERM_TRANSIENT, nm, wb, &block),
               done);
  for (int64_t j0 = 0; j0 < nm; j0 += wb) {
    const int64_t cols = nm - j0 < wb ? nm - j0 : wb;
    const int64_t row0 = whole_columns ? 0 : j0, rows = nm - row0;
    if (whole_columns)
      QP_CALL_GOTO(qp_matrix_columns(&block, 0, cols, &part), done);
    else
      QP_CALL_GOTO(qp_matrix_view(p->ops, QP_TERM_KERNEL_BLOCK, block.data, rows, cols, nm, &part),
                   done);
    QP_CALL_GOTO(qp_matrix_columns(&p->vt, row0, rows, &yr), done);
    QP_CALL_GOTO(qp_matrix_columns(&p->vt, j0, cols, &yj), done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &yr, &yj, 0.0, &part), done);
    QP_CALL_GOTO(qp_matrix_columns(&p->kernel, j0, cols, &dest), done);
    QP_CALL_GOTO(qp_linalg_download(&part, 0, 0, part.local_rows, part.local_cols, dest.data + row0,
                                    dest.ld),
                 done);
  }
  if (!whole_columns) qp_matrix_symmetrize_lower(&p->kernel);
done:
  qp_matrix_destroy(&block);
  return err;
}

qp_err qp_harmonic_basis_setup(qp_problem *p) {
  const int64_t n = p->n_pix, nm = p->n_modes;
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "basis_setup", "", 0);
  if (p->plan->smw) {
    QP_CALL(p->plan->model_dims.cross_maps ? qp_smw_cross_basis(p, &progress)
                                           : qp_smw_basis(p, &progress));
    return QP_OK;
  }
  /* Projection: L = chol(C), Y = L^-1 V^T, W = Y^T Y: whole where it fits (the rule), else in
   * column blocks into a host W (qp_kernel_in_blocks); not at all on a host backend's
   * auto-spectra, whose fisher_run makes W's windows from Y (qp_model_w_windows). */
  const int chunked = qp_w_block(p) < nm, no_w = qp_model_w_windows(&p->plan->model_dims);
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_V, QP_TERM_PERSISTENT, n, nm, &p->vt));
  if (chunked && !no_w)
    QP_CALL(qp_matrix_create(qp_linalg_host_ops(p->ops), QP_TERM_KERNEL_HOST, QP_TERM_PERSISTENT,
                             nm, nm, &p->kernel));
  else if (!no_w)
    QP_CALL(qp_matrix_create(p->ops, QP_TERM_KERNEL, QP_TERM_PERSISTENT, nm, nm, &p->kernel));
  QP_CALL(qp_harmonic_build_vt(p));
  qp_progress_note(&progress, "harmonic basis V built");
  /* Cross-spectra: a copy of V^T for Y_B (harmonic_cross.c), before Y takes V's place. */
  const int cross = p->plan->model_dims.cross_maps;
  if (cross) {
    QP_CALL(qp_matrix_create(p->ops, QP_TERM_V_B, QP_TERM_PERSISTENT, n, nm, &p->vt_b));
    QP_CALL(qp_linalg_copy_sub(n, nm, &p->vt, 0, 0, &p->vt_b, 0, 0));
  }
  const qp_run_scale fields = qp_field_scale(p, p->cfg->ell_min, p->cfg->lmax_signal, 1);
  QP_CALL(qp_conditioned_potrf(p, &p->cov, QP_RCOND_COVARIANCE, QP_RCOND_COVARIANCE_WHAT,
                               QP_RCOND_COVARIANCE_ADVICE, &fields, NULL));
  QP_CALL(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, &p->vt));
  if (no_w) {
    qp_progress_note(&progress, "Y = L^-1 V^T");
    return QP_OK;
  }
  if (chunked)
    QP_CALL(qp_kernel_in_blocks(p));
  else
    QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &p->vt, 0.0, &p->kernel));
  qp_progress_note(&progress, "W = (L^-1 V^T)^T (L^-1 V^T)");
  if (cross) {
    QP_CALL(qp_cross_basis_setup(p));
    qp_progress_note(&progress, "W_B = (L_B^-1 V^T)^T (L_B^-1 V^T)");
  }
  return QP_OK;
}
