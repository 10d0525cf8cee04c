/* harmonic_fisher.c: the harmonic routes' fisher_run (harmonic_route.h): F from W's field
 * blocks on the n_modes side, then the noise bias (harmonic_bias.c) */
#include "harmonic_route.h"

#include <stdlib.h>
#include <string.h>

#include "basis_terms.h"
#include "fisher_terms.h"
#include "harmonic_bias.h"
#include "harmonic_modes.h"
#include "progress.h"
#include "spin_harmonics.h"
#include "window.h"

/* A matrix over the modes (rows and columns (field, l, m)) seen field pair by field pair, each
 * window lined up on one layout over all (l, m) up to lmax (position lm = l^2 + l + m), so
 * that the entries of two windows that share their (l, m) are at one local position whatever
 * the backend (qp_linalg_align; copies of the windows where the backend moves data). The
 * layout's columns are taken a panel at a time, [col0, col0 + cols) (qp_model_field_panel:
 * all of them unless the plan panels the host windows under memory.host_limit); `layout` is
 * the panel's: its local column lj is global column col0 + qp_matrix_global_col(layout, lj). */
typedef struct qp_field_windows {
  qp_matrix layout;
  qp_aligned w[3][3];
  double *work;        /* where aligning moves data: n_fields^2 windows of a panel */
  int64_t work_stride; /* doubles per window in work */
} qp_field_windows;

/* m is W in the run's space, or on the host when it was formed in blocks (qp_w_block): the
 * windows are laid out, and aligned, in m's own table; `panel` columns at most. */
static qp_err qp_field_windows_init(const qp_matrix *m, int64_t n_lm, int64_t panel, int n_fields,
                                    int from_y, const char *term, qp_field_windows *fw) {
  memset(fw, 0, sizeof *fw);
  if (!qp_linalg_moves_data(m->ops) && !from_y) return QP_OK;
  /* The first panel is the widest: on a grid it starts a block on process column 0 like
   * every other, so no rank holds more of a later one. */
  QP_CALL(qp_matrix_view(m->ops, QP_TERM_FIELD_BLOCKS, NULL, n_lm, panel, n_lm, &fw->layout));
  fw->work_stride = qp_matrix_local_size(&fw->layout);
  QP_CALL(QP_ALLOC_DOUBLES(term, QP_TERM_TRANSIENT, (int64_t)n_fields * n_fields * fw->work_stride,
                           &fw->work));
  return QP_OK;
}

/* Lines up every field pair's window of m on the layout's columns [col0, col0 + cols). */
static qp_err qp_field_windows_panel(qp_problem *p, const qp_matrix *m, int64_t col0, int64_t cols,
                                     qp_field_windows *fw) {
  const qp_config *cfg = p->cfg;
  const int64_t n_lm = qp_harmonic_count(0, cfg->lmax);
  QP_CALL(qp_matrix_view(m->ops, QP_TERM_FIELD_BLOCKS, NULL, n_lm, cols, n_lm, &fw->layout));
  memset(fw->w, 0, sizeof fw->w);
  int fields[3], n_fields = 0;
  for (int f = 0; f < 3; ++f)
    if (p->field_offset[f] >= 0) fields[n_fields++] = f;
  const int moves = qp_linalg_moves_data(m->ops);
  for (int a = 0; a < n_fields; ++a)
    for (int b = 0; b < n_fields; ++b) {
      const int g = fields[a], h = fields[b];
      const int lg = p->field_ell_min[g], lh = p->field_ell_min[h];
      if (lg > cfg->lmax || lh > cfg->lmax) continue; /* no entry reads it */
      /* The window sits at layout rows [n_lm - rows, n_lm) and columns [n_lm - count, n_lm):
       * its columns in this panel are [j0, col0 + cols). */
      const int64_t rows = qp_harmonic_count(lg, cfg->lmax),
                    count = qp_harmonic_count(lh, cfg->lmax);
      const int64_t j0 = n_lm - count > col0 ? n_lm - count : col0;
      if (j0 >= col0 + cols) continue; /* none of its columns here: no column reads it */
      qp_matrix work;
      if (moves)
        QP_CALL(qp_matrix_view(qp_linalg_host_ops(m->ops), QP_TERM_FIELD_BLOCKS,
                               fw->work + (a * n_fields + b) * fw->work_stride, n_lm, cols, n_lm,
                               &work));
      QP_CALL(qp_linalg_align(m, p->field_offset[g], p->field_offset[h] + (j0 - (n_lm - count)),
                              rows, col0 + cols - j0, &fw->layout, n_lm - rows, j0 - col0,
                              moves ? &work : NULL, &fw->w[g][h]));
    }
  return QP_OK;
}

/* W's windows of the field pairs `need` on the layout's columns [col0, col0 + cols), made from
 * Y (W = Y^T Y is never formed, qp_model_w_windows): window (g, h) at (lm, l'm') is
 * Y[:, (g, lm)] . Y[:, (h, l'm')], for lm <= l'm' only (the rows below are not read). */
static qp_err qp_field_windows_products(qp_problem *p, const qp_matrix *y, int64_t col0,
                                        int64_t cols, const int need[3][3], qp_field_windows *fw) {
  const qp_config *cfg = p->cfg;
  const int64_t n_lm = qp_harmonic_count(0, cfg->lmax);
  const int64_t chunk = qp_model_w_chunk(&p->plan->model_dims);
  QP_CALL(qp_matrix_view(y->ops, QP_TERM_FIELD_BLOCKS, NULL, n_lm, cols, n_lm, &fw->layout));
  memset(fw->w, 0, sizeof fw->w);
  int fields[3], n_fields = 0;
  for (int f = 0; f < 3; ++f)
    if (p->field_offset[f] >= 0) fields[n_fields++] = f;
  for (int a = 0; a < n_fields; ++a)
    for (int b = 0; b < n_fields; ++b) {
      const int g = fields[a], h = fields[b];
      if (!need[g][h]) continue;
      const int lg = p->field_ell_min[g], lh = p->field_ell_min[h];
      if (lg > cfg->lmax || lh > cfg->lmax) continue;
      const int64_t row0 = n_lm - qp_harmonic_count(lg, cfg->lmax),
                    first = n_lm - qp_harmonic_count(lh, cfg->lmax);
      const int64_t j0 = first > col0 ? first : col0;
      double *base = fw->work + (a * n_fields + b) * fw->work_stride;
      qp_matrix work;
      QP_CALL(qp_matrix_view(y->ops, QP_TERM_FIELD_BLOCKS, base, n_lm, cols, n_lm, &work));
      for (int64_t c0 = j0; c0 < col0 + cols; c0 += chunk) {
        const int64_t c1 = c0 + chunk < col0 + cols ? c0 + chunk : col0 + cols;
        const int64_t r1 = c1 < n_lm ? c1 : n_lm;
        if (r1 <= row0) continue;
        QP_CALL(qp_linalg_gemm_sub(QP_TRANS, QP_NOTRANS, r1 - row0, c1 - c0, y->rows, 1.0, y, 0,
                                   p->field_offset[g], y, 0, p->field_offset[h] + (c0 - first), 0.0,
                                   &work, row0, c0 - col0));
      }
      fw->w[g][h] = (qp_aligned){base, work.ld, 0, 0};
    }
  return QP_OK;
}

/* The runs of equal l among the local rows (or columns) of the field windows' layout: run r
 * is local indices [first[r], first[r + 1]) of multipole l[r]. Local indices keep the global
 * order, so the (l, m) of one l form one run on every backend. */
typedef struct qp_ell_runs {
  int64_t *first;
  int *l;
  int64_t n;
} qp_ell_runs;

/* Columns: those of a panel whose first is global column `col0`. */
static qp_err qp_ell_runs_make(const qp_matrix *layout, int rows, int64_t col0, qp_ell_runs *runs) {
  const int64_t count = rows ? layout->local_rows : layout->local_cols;
  runs->n = 0;
  runs->first = malloc((size_t)(count + 1) * sizeof *runs->first);
  runs->l = malloc((size_t)(count > 0 ? count : 1) * sizeof *runs->l);
  QP_CHECK(runs->first && runs->l, QP_ERR_NOMEM, "out of memory for %lld (l, m) positions",
           (long long)count);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t global =
        rows ? qp_matrix_global_row(layout, k) : col0 + qp_matrix_global_col(layout, k);
    const int l = qp_harmonic_ell(global, 0);
    if (runs->n == 0 || runs->l[runs->n - 1] != l) {
      runs->first[runs->n] = k;
      runs->l[runs->n++] = l;
    }
  }
  runs->first[runs->n] = count;
  return QP_OK;
}

static void qp_ell_runs_free(qp_ell_runs *runs) {
  free(runs->first);
  free(runs->l);
  *runs = (qp_ell_runs){0};
}

/* A term of D_q: its entries of multipole l and fields (fa, fb), m = -l..l, all of value v. */
typedef struct qp_entry_group {
  int l, fa, fb;
  double v;
} qp_entry_group;

/* D_q's entries as groups (qp_param_entries lists them l by l, m by m, the pair (fb, fa)
 * after (fa, fb) where the fields differ): groups[gstart[q] .. gstart[q + 1]). Checked: the
 * groups hold every entry, all of one value. */
static qp_err qp_entry_groups(const qp_problem *p, const qp_entry *e, const int64_t *start,
                              qp_entry_group **groups, int64_t **gstart) {
  const int np = p->n_params;
  *groups = malloc((size_t)(start[np] > 0 ? start[np] : 1) * sizeof **groups);
  *gstart = malloc((size_t)(np + 1) * sizeof **gstart);
  QP_CHECK(*groups && *gstart, QP_ERR_NOMEM, "out of memory for %lld entry groups",
           (long long)start[np]);
  int64_t n = 0;
  for (int q = 0; q < np; ++q) {
    (*gstart)[q] = n;
    int64_t covered = 0;
    for (int64_t k = start[q]; k < start[q + 1]; ++k) {
      const int l = qp_harmonic_ell(e[k].lm, 0);
      int64_t found = -1; /* the group of k: one of this q's last two */
      for (int64_t g = n - 1; found < 0 && g >= (*gstart)[q] && g >= n - 2; --g)
        if ((*groups)[g].l == l && (*groups)[g].fa == e[k].fa && (*groups)[g].fb == e[k].fb)
          found = g;
      if (found < 0) {
        (*groups)[n++] = (qp_entry_group){l, e[k].fa, e[k].fb, e[k].v};
        covered += 2 * l + 1;
      } else {
        QP_CHECK((*groups)[found].v == e[k].v, QP_ERR_INTERNAL,
                 "fisher_run: D_%d's entries of l = %d differ in value", q, l);
      }
    }
    QP_CHECK(covered == start[q + 1] - start[q], QP_ERR_INTERNAL,
             "fisher_run: D_%d's %lld entries do not form whole m = -l..l groups", q,
             (long long)(start[q + 1] - start[q]));
  }
  (*gstart)[np] = n;
  return QP_OK;
}

/* sum over D_q's groups g and D_r's groups h of v_g v_h B(l_g, l_h) in the slot of their
 * fields (fb, fa, fa, fb): 2 F_qr, or 2 F_(q,ell) when h are the unbinned D_ell's. */
static double qp_group_pair_sum(const qp_entry_group *g, int64_t n_g, const qp_entry_group *h,
                                int64_t n_h, const int *slot, const double *sums, int64_t block,
                                int L) {
  double sum = 0;
  for (int64_t i = 0; i < n_g; ++i)
    for (int64_t j = 0; j < n_h; ++j) {
      const int s = slot[qp_fisher_block_key(g[i].fb, h[j].fa, g[i].fa, h[j].fb)];
      sum += g[i].v * h[j].v * sums[s * block + (int64_t)g[i].l * L + h[j].l];
    }
  return sum;
}

/* out <- F_(q,ell) = 1/2 tr(W D_q W D_ell) from the block sums of F (this rank's part;
 * summed over the ranks here): D_ell's groups are those of the unbinned problem. */
static qp_err qp_fisher_ell_from_sums(qp_problem *p, const qp_entry_group *groups,
                                      const int64_t *gstart, const double *sums, const int *slot,
                                      int64_t block, const qp_matrix *x, double *out) {
  const int np = p->n_params, L = p->cfg->lmax + 1;
  qp_problem wp = {0};
  qp_entry *we = NULL;
  int64_t *wstart = NULL, *wgstart = NULL;
  qp_entry_group *wgroups = NULL;
  qp_err err = QP_OK;
  QP_CALL_GOTO(qp_window_problem(p, &wp), done);
  QP_CALL_GOTO(qp_param_entries(&wp, &we, &wstart), done);
  QP_CALL_GOTO(qp_entry_groups(&wp, we, wstart, &wgroups, &wgstart), done);
  const int nw = wp.n_params;
#pragma omp parallel for schedule(dynamic, 1)
  for (int u = 0; u < nw; ++u)
    for (int q = 0; q < np; ++q) {
      out[q + (int64_t)u * np] =
          0.5 * qp_group_pair_sum(groups + gstart[q], gstart[q + 1] - gstart[q],
                                  wgroups + wgstart[u], wgstart[u + 1] - wgstart[u], slot, sums,
                                  block, L);
    }
  QP_CALL_GOTO(qp_linalg_sum_partials(x->ops, out, (int64_t)np * nw), done);
done:
  free(we);
  free(wstart);
  free(wgroups);
  free(wgstart);
  qp_window_problem_free(&wp);
  return err;
}

/* F_pq = 1/2 sum over D_p's entries (a, b, v) and D_q's (c, d, u) of v u W_bc W_da, with
 * W_da = W_ad (W is symmetric): both factors sit at the position (lm of a, lm of c) of their
 * field windows. The values of D_p depend on l only, so F is a sum over (l, l') of block sums
 * B(l, l') = sum over m, m' of the two windows' products at (lm, l'm'), one per quadruple of
 * fields (qp_fisher_block_slots). They are summed column by column of the windows, each column
 * read once while in cache for every quadruple (where the entry-pair sum read W at random, two
 * loads per pair of entries); every rank sums the positions it holds and one sum over the ranks
 * gives F. The windows' columns come a panel at a time (qp_field_windows): each B(l, l') gets
 * its columns' dots in the same order whatever the panels, so F is the same to the bit.
 *
 * In general (harmonic_route.h) out_pq = 1/2 sum of v u X_bc Y_ad: X = Y = W for F; X = W_B,
 * Y = W_A for cross-spectra's F = 1/2 tr(W_A D_p W_B D_q); X = H, Y = H^T for their
 * covariance's T (harmonic_cross.c). With two matrices a quadruple and its swap are two sums
 * (qp_fisher_block_slots), and their aligned windows (`blocks_term`) are two sets.
 *
 * x = y = Y (p->vt: qp_model_w_windows, W never formed): each panel's windows are products of
 * Y's columns (qp_field_windows_products), on and above W's diagonal only. B(l, l') is then
 * the sum over positions lm < l'm' (U) and lm = l'm' (D) of its quadruple, plus, for the
 * positions below, U of the transposed quadruple (b, a, d, c) at (l', l): W_ab(lm, l'm') =
 * W_ba(l'm', lm). */
qp_err qp_fisher_block_pass(qp_problem *p, const qp_entry *e, const int64_t *start,
                            const qp_matrix *x, const qp_matrix *y, const char *blocks_term,
                            const char *sums_term, double *out, double *out_ell) {
  const int np = p->n_params, L = p->cfg->lmax + 1;
  const int64_t block = (int64_t)L * L;
  const int two = x != y, from_y = x == &p->vt && y == x;
  int slot[81], quad[81];
  const int n_slots = qp_fisher_block_slots(p->cfg, !two, slot);
  for (int k = 80; k >= 0; --k)
    if (slot[k] >= 0) quad[slot[k]] = k; /* the smaller key of each pair */
  const int64_t panel = qp_model_field_panel(&p->plan->model_dims);
  qp_field_windows fw, fy = {0};
  qp_ell_runs rows = {0}, cols = {0};
  qp_entry_group *groups = NULL;
  int64_t *gstart = NULL;
  double *sums = NULL;
  qp_err err = QP_OK;
  const int n_fields = p->plan->model_dims.n_fields;
  QP_CALL_GOTO(qp_field_windows_init(x, block, panel, n_fields, from_y, blocks_term, &fw), done);
  if (two)
    QP_CALL_GOTO(qp_field_windows_init(y, block, panel, n_fields, 0, blocks_term, &fy), done);
  const qp_field_windows *wy = two ? &fy : &fw;
  QP_CALL_GOTO(qp_entry_groups(p, e, start, &groups, &gstart), done);
  /* From Y, D (the diagonal positions' sums, L per slot) after the n_slots blocks of U. */
  const int64_t n_sums = n_slots * (block + (from_y ? L : 0));
  QP_CALL_GOTO(QP_ALLOC_DOUBLES(sums_term, QP_TERM_TRANSIENT, n_sums, &sums), done);
  memset(sums, 0, (size_t)n_sums * sizeof *sums);
  double *diag = sums + n_slots * block;
  /* Per slot, its two windows' fields and the positions both hold (no other may be read). */
  int pair_x[81][2], pair_y[81][2];
  int row_lo[81], col_lo[81], transposed[81];
  int need[3][3] = {{0}}; /* the windows some slot reads */
  for (int s = 0; s < n_slots; ++s) {
    const int k = quad[s], fa = k / 27, fb = k / 9 % 3, fc = k / 3 % 3, fd = k % 3;
    const int *lo = p->field_ell_min;
    pair_x[s][0] = fa, pair_x[s][1] = fb;
    pair_y[s][0] = fc, pair_y[s][1] = fd;
    need[fa][fb] = need[fc][fd] = 1;
    row_lo[s] = lo[fa] > lo[fc] ? lo[fa] : lo[fc];
    col_lo[s] = lo[fb] > lo[fd] ? lo[fb] : lo[fd];
    /* The slots are closed under (a, b, c, d) -> (b, a, d, c) (qp_fisher_block_slots: the
     * field pairs of the spectra come in both orders). */
    transposed[s] = slot[qp_fisher_block_key(fb, fa, fd, fc)];
    QP_CHECK_GOTO(transposed[s] >= 0, QP_ERR_INTERNAL, done,
                  "fisher_run: block slot %d has no transposed slot", s);
  }
  for (int64_t col0 = 0; col0 < block; col0 += panel) {
    const int64_t width = block - col0 < panel ? block - col0 : panel;
    if (from_y)
      QP_CALL_GOTO(qp_field_windows_products(p, x, col0, width, need, &fw), done);
    else
      QP_CALL_GOTO(qp_field_windows_panel(p, x, col0, width, &fw), done);
    if (two) QP_CALL_GOTO(qp_field_windows_panel(p, y, col0, width, &fy), done);
    if (!rows.first) QP_CALL_GOTO(qp_ell_runs_make(&fw.layout, 1, 0, &rows), done);
    qp_ell_runs_free(&cols);
    QP_CALL_GOTO(qp_ell_runs_make(&fw.layout, 0, col0, &cols), done);
    /* Run c holds the columns of one l' (its own B(., l') entries: no two threads write one);
     * a slot's windows both hold every column of l' >= col_lo. */
    const qp_matrix *lay = &fw.layout;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < cols.n; ++c) {
      const int lc = cols.l[c];
      for (int64_t lj = cols.first[c]; lj < cols.first[c + 1]; ++lj) {
        /* From Y: the rows above the column's position (local rows keep the global order),
         * and the position itself, where this rank holds it. */
        int64_t above = rows.first[rows.n], on = -1;
        if (from_y) {
          const int64_t gc = col0 + qp_matrix_global_col(lay, lj);
          above = qp_matrix_local_rows_below(lay, gc);
          on = qp_matrix_local_row(lay, gc);
        }
        for (int s = 0; s < n_slots; ++s) {
          if (lc < col_lo[s] || row_lo[s] > L - 1) continue;
          const qp_aligned *xw = &fw.w[pair_x[s][0]][pair_x[s][1]],
                           *yw = &wy->w[pair_y[s][0]][pair_y[s][1]];
          const double *xc = xw->base + xw->row_shift + (lj + xw->col_shift) * xw->ld,
                       *yc = yw->base + yw->row_shift + (lj + yw->col_shift) * yw->ld;
          double *out = sums + s * block + lc;
          for (int64_t r = 0; r < rows.n; ++r) {
            if (rows.l[r] < row_lo[s] || rows.first[r] >= above) continue;
            const int64_t end = rows.first[r + 1] < above ? rows.first[r + 1] : above;
            double dot = 0;
            for (int64_t li = rows.first[r]; li < end; ++li)
              dot += xc[li] * yc[li];
            out[(int64_t)rows.l[r] * L] += dot;
          }
          if (on >= 0) diag[s * L + lc] += xc[on] * yc[on];
        }
      }
    }
  }
  /* From Y: B_s(l, l') = U_s(l, l') + U_t(l', l) (+ D_s(l) where l = l'), t the transposed
   * slot; B_t is B_s transposed (but its own D), so each pair of slots is done together. */
  for (int s = 0; from_y && s < n_slots; ++s) {
    const int t = transposed[s];
    if (t < s) continue;
    double *us = sums + s * block, *ut = sums + t * block;
    for (int l = 0; l < L; ++l)
      for (int m = t == s ? l : 0; m < L; ++m) {
        const double both = us[(int64_t)l * L + m] + ut[(int64_t)m * L + l];
        us[(int64_t)l * L + m] = both + (l == m ? diag[s * L + l] : 0.0);
        ut[(int64_t)m * L + l] = both + (l == m ? diag[t * L + l] : 0.0);
      }
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (int q = 0; q < np; ++q)
    for (int r = q; r < np; ++r) {
      out[q + r * np] = out[r + q * np] =
          0.5 * qp_group_pair_sum(groups + gstart[q], gstart[q + 1] - gstart[q], groups + gstart[r],
                                  gstart[r + 1] - gstart[r], slot, sums, block, L);
    }
  QP_CALL_GOTO(qp_linalg_sum_partials(x->ops, out, (int64_t)np * np), done);
  /* F_(q,ell): the same block sums against the unbinned D_ell (window.h). */
  if (out_ell)
    QP_CALL_GOTO(qp_fisher_ell_from_sums(p, groups, gstart, sums, slot, block, x, out_ell), done);
done:
  qp_budget_free(sums);
  qp_budget_free(fy.work);
  qp_budget_free(fw.work);
  qp_ell_runs_free(&rows);
  qp_ell_runs_free(&cols);
  free(groups);
  free(gstart);
  return err;
}

qp_err qp_harmonic_fisher_results(qp_problem *p) {
  const int64_t np = p->n_params;
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_FISHER, QP_TERM_PERSISTENT, np * np, &p->fisher));
  QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_NOISE_BIAS, QP_TERM_PERSISTENT, np, &p->noise_bias));
  if (qp_window_count(p) > 0)
    QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_FISHER_ELL, QP_TERM_PERSISTENT, np * qp_window_count(p),
                             &p->fisher_ell));
  if (p->plan->model_dims.cross_maps)
    QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_Y_COVARIANCE, QP_TERM_PERSISTENT, np * np, &p->y_covariance));
  return QP_OK;
}

qp_err qp_harmonic_fisher_run(qp_problem *p) {
  if (p->plan->model_dims.cross_maps) return qp_cross_fisher_run(p);
  const int64_t nm = p->n_modes, n = p->n_pix;
  qp_err err = QP_OK;
  qp_entry *e = NULL;
  int64_t *start = NULL;
  qp_matrix g = {0}, z = {0}, nz = {0};
  QP_CALL(qp_harmonic_fisher_results(p));
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "fisher_run", "", 0);
  QP_CALL_GOTO(qp_param_entries(p, &e, &start), done);
  /* Without W (qp_model_w_windows) F is summed from the windows' products of Y. */
  const int no_w = qp_model_w_windows(&p->plan->model_dims);
  const qp_matrix *w = no_w ? &p->vt : &p->kernel;
  QP_CALL_GOTO(qp_fisher_block_pass(p, e, start, w, w, QP_TERM_FIELD_BLOCKS,
                                    QP_TERM_FISHER_BLOCK_SUMS, p->fisher, p->fisher_ell),
               done);
  qp_progress_note(&progress, "F summed over W's blocks");
  /* A host W formed in blocks goes now, before the bias's host work matrices (model: phase 0);
   * a device W may lend Z its buffer and goes at the end. */
  if (qp_w_block(p) < nm) qp_matrix_destroy(&p->kernel);
  if (p->plan->smw) {
    /* G = (I + K Lambda)^-1 W: b_p = 1/2 tr(D_p G). */
    QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_KERNEL, QP_TERM_TRANSIENT, nm, nm, &g),
                 done);
    QP_CALL_GOTO(qp_noise_kernel_smw(p, &g), done);
    QP_CALL_GOTO(qp_bias_from_matrix(p, &g, e, start), done);
  } else if (no_w) {
    /* Phase 1: Z = C^-1 V^T = L^-T Y in Y's place, the last use of L, which goes (spectra_run's
     * z = Z^T x needs no L). Phase 2: G_ab = Z_b^T N_eff Z_a. */
    QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &p->cov, &p->vt), done);
    qp_matrix_destroy(&p->cov);
    if (p->plan->switched || !p->noise_variance) {
      QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, n, nm, &nz),
                   done);
      QP_CALL_GOTO(qp_noise_modes_dense(p, &p->vt, &nz), done);
    }
    qp_progress_note(&progress, "Z = L^-T Y in Y's place");
    QP_CALL_GOTO(qp_bias_from_modes(p, &p->vt, nz.ops ? &nz : NULL, e, start), done);
  } else {
    /* Z = C^-1 V^T = L^-T Y; G_ab = Z_b^T N_eff Z_a. Z takes W's buffer, done with once F
     * is summed, wherever it fits (memory_model.h): its pages are resident, where a fresh
     * buffer's are committed first, 0.1-0.5 s for QU nside 16's 139 MiB on this project's
     * VM (docs/benchmarks.md); W goes at the end of the stage either way. A W formed in
     * blocks is on the host: Z then has a device buffer of its own. */
    if (qp_model_modes_in_kernel(n, nm) && qp_w_block(p) == nm)
      QP_CALL_GOTO(qp_matrix_view(p->ops, QP_TERM_KERNEL, p->kernel.data, n, nm, n, &z), done);
    else
      QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_WEIGHTED_MODES, QP_TERM_TRANSIENT, n, nm, &z),
                   done);
    QP_CALL_GOTO(qp_linalg_copy_sub(n, nm, &p->vt, 0, 0, &z, 0, 0), done);
    QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &p->cov, &z), done);
    if (p->plan->switched || !p->noise_variance) {
      QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_NOISE_MODES, QP_TERM_TRANSIENT, n, nm, &nz),
                   done);
      QP_CALL_GOTO(qp_noise_modes_dense(p, &z, &nz), done);
    }
    qp_progress_note(&progress, "Z = L^-T Y");
    QP_CALL_GOTO(qp_bias_from_modes(p, &z, nz.ops ? &nz : NULL, e, start), done);
  }
  qp_progress_note(&progress, "noise bias b");
done:
  qp_matrix_destroy(&nz);
  qp_matrix_destroy(&z);
  qp_matrix_destroy(&g);
  free(e);
  free(start);
  /* Projection: the noise bias was the last use of N and of W (model: freed in fisher_run). */
  if (!p->plan->smw) {
    qp_matrix_destroy(&p->kernel);
    qp_budget_free(p->noise_variance);
    p->noise_variance = NULL;
    qp_matrix_destroy(&p->noise);
  }
  return err;
}
