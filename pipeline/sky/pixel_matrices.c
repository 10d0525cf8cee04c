/* pixel_matrices.c: S and the bin matrices P_p from Wigner d functions (pixel_matrices.h). */
#include "pixel_matrices.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pixel_pairs.h"
#include "simd_clones.h"
#include "wigner.h"

typedef struct qp_target {
  double *m;
  int lo, hi;
  double *coeff[6];
  int add; /* 1: add to what the matrix holds (the covariance); 0: overwrite (P_p) */
} qp_target;

static inline void qp_put(const qp_target *t, int64_t index, double value) {
  if (t->add)
    t->m[index] += value;
  else
    t->m[index] = value;
}

/* A target's sums for every lane of a batch: b[k] for the kind's functions d (wigner.h), each
 * summed in l order as one pair at a time did. */
QP_WIDEST_VECTORS static void qp_batch_sums(const qp_target *t, qp_wigner_kind kind,
                                            double *const d[2], qp_local *b) {
  enum { L = QP_WIGNER_LANES };
  double s[3][L];
  memset(s, 0, sizeof s);
  double *const *c = t->coeff;
  if (kind == QP_WIGNER_TT && c[QP_TT]) {
    for (int l = t->lo; l <= t->hi; ++l) {
      const double *x = d[0] + l * L, w = c[QP_TT][l];
#pragma omp simd
      for (int k = 0; k < L; ++k)
        s[0][k] += w * x[k];
    }
  } else if (kind == QP_WIGNER_TP) {
    for (int l = t->lo; l <= t->hi; ++l) {
      const double *x = d[0] + l * L;
      const double te = c[QP_TE] ? c[QP_TE][l] : 0.0, tb = c[QP_TB] ? c[QP_TB][l] : 0.0;
#pragma omp simd
      for (int k = 0; k < L; ++k) {
        s[0][k] -= te * x[k];
        s[1][k] -= tb * x[k];
      }
    }
  } else if (kind == QP_WIGNER_PP) {
    for (int l = t->lo; l <= t->hi; ++l) {
      const double *x = d[0] + l * L, *y = d[1] + l * L;
      const double ee = c[QP_EE] ? c[QP_EE][l] : 0, bm = c[QP_BB] ? c[QP_BB][l] : 0;
      const double eb = c[QP_EB] ? c[QP_EB][l] : 0;
#pragma omp simd
      for (int k = 0; k < L; ++k) {
        const double a = 0.5 * (x[k] + y[k]), bb = 0.5 * (x[k] - y[k]);
        s[0][k] += ee * a + bm * bb;
        s[1][k] += bm * a + ee * bb;
        s[2][k] += eb * y[k];
      }
    }
  }
  for (int k = 0; k < L; ++k) {
    b[k] = (qp_local){0, 0, 0, 0, 0, 0};
    if (kind == QP_WIGNER_TT) b[k].tt = s[0][k];
    if (kind == QP_WIGNER_TP) b[k].tq = s[0][k], b[k].tu = s[1][k];
    if (kind == QP_WIGNER_PP) b[k].qq = s[0][k], b[k].uu = s[1][k], b[k].qu = s[2][k];
  }
}

/* Where global entry (gi, gj) sits in the target buffers: 1 and *at (li + (lj - col0) ld) when
 * this rank holds it in the local columns [col0, col0 + cols) that the buffers hold; pc NULL:
 * the buffers hold every local column at the layout's ld (the whole build's plain offset,
 * which keeps the polarised builds' eight offsets a pair as cheap as before panels). */
static inline int qp_panel_offset(const qp_matrix *layout, const qp_pixel_columns *pc, int64_t gi,
                                  int64_t gj, int64_t *at) {
  if (!pc) return qp_matrix_local_offset(layout, gi, gj, at);
  const int64_t lj = qp_matrix_local_col(layout, gj);
  if (lj < pc->col0 || lj >= pc->col0 + pc->cols) return 0; /* -1: another rank's */
  const int64_t li = qp_matrix_local_row(layout, gi);
  if (li < 0) return 0;
  *at = li + (lj - pc->col0) * pc->ld;
  return 1;
}

/* 1 when the target buffers hold an entry of the pair or its mirror image. */
static int qp_pair_here(const qp_matrix *layout, const qp_pixel_columns *pc,
                        const qp_pair_entries *e) {
  int64_t at;
  for (int k = 0; k < e->count; ++k)
    if (qp_panel_offset(layout, pc, e->row[k], e->col[k], &at) ||
        qp_panel_offset(layout, pc, e->col[k], e->row[k], &at))
      return 1;
  return 0;
}

/* Up to QP_WIGNER_LANES pairs (i_k, j) of one kind, evaluated together. A lane keeps its
 * pair's indices, not its entries (88 bytes copied per pair, whose store and reload stalled
 * the S build: a fifth of its time at n_pix 1984). */
typedef struct qp_batch {
  int n;
  qp_wigner_kind kind;
  int64_t i[QP_WIGNER_LANES], j[QP_WIGNER_LANES];
  qp_pair_geometry g[QP_WIGNER_LANES];
  double z[QP_WIGNER_LANES];
} qp_batch;

/* Scratch of one thread: the functions of a batch, (lmax + 1) x lanes each, and where each
 * lane's entries and their mirror images sit here (-1: another rank's, or the diagonal's
 * mirror, which is the entry itself). */
typedef struct qp_batch_work {
  double *d[2];
  double *tile; /* QP_TILE^2 sums of a tile of T pairs (qp_tile_tt) */
  qp_local sums[QP_WIGNER_LANES];
  int count[QP_WIGNER_LANES];
  int value[QP_WIGNER_LANES][4];
  int64_t at[QP_WIGNER_LANES][4], mirror[QP_WIGNER_LANES][4];
} qp_batch_work;

/* Every target's entries of the batch's pairs that this rank holds, and their mirrors. */
static void qp_batch_run(const qp_problem *p, const qp_matrix *layout, const qp_pixel_columns *pc,
                         const qp_target *targets, int n_targets, const qp_wigner_table *table,
                         int lmax, qp_batch *batch, qp_batch_work *work) {
  if (batch->n == 0) return;
  for (int k = batch->n; k < QP_WIGNER_LANES; ++k)
    batch->z[k] = 0.0; /* unused lanes */
  qp_wigner_batch(table, lmax, batch->kind, batch->z, work->d);
  for (int k = 0; k < batch->n; ++k) {
    const qp_pair_entries e = qp_pair_list(p, batch->i[k], batch->j[k]);
    work->count[k] = e.count;
    for (int x = 0; x < e.count; ++x) {
      int64_t at;
      work->value[k][x] = e.value[x];
      work->at[k][x] = qp_panel_offset(layout, pc, e.row[x], e.col[x], &at) ? at : -1;
      work->mirror[k][x] =
          e.row[x] != e.col[x] && qp_panel_offset(layout, pc, e.col[x], e.row[x], &at) ? at : -1;
    }
  }
  for (int t = 0; t < n_targets; ++t) {
    qp_batch_sums(&targets[t], batch->kind, work->d, work->sums);
    for (int k = 0; k < batch->n; ++k) {
      const qp_pair_values v = qp_pair_rotate(batch->kind, &work->sums[k], &batch->g[k]);
      const double all[7] = {v.tt, v.qt, v.ut, v.qq, v.uu, v.uq, v.qu};
      for (int x = 0; x < work->count[k]; ++x) {
        const double value = all[work->value[k][x]];
        if (work->at[k][x] >= 0) qp_put(&targets[t], work->at[k][x], value);
        if (work->mirror[k][x] >= 0) qp_put(&targets[t], work->mirror[k][x], value);
      }
    }
  }
  batch->n = 0;
}

/* Pairs of positions go in square tiles of QP_TILE x QP_TILE: the entries of a tile and their
 * mirror images then fill short runs of QP_TILE consecutive rows in QP_TILE columns, which
 * stay in cache (one pair at a time along a whole column, each mirror write was a cache and
 * TLB miss: four times slower for 46 bin matrices at n_pix 1984). */
enum { QP_TILE = 64 };

/* A tile of temperature pairs added into one matrix held whole here (the covariance on one
 * process, its rows all T positions'): each column's pairs 32 at a time, their Legendre sums
 * fused with the recursion (qp_wigner_tt_sums), each added at (i, j) and (j, i). The same
 * operations in the same order as qp_batch_run's on TT batches, without the batches'
 * bookkeeping (the entries' offsets, the stored P_l): S bitwise as before, 3.8x faster at
 * n_pix 1984 (docs/benchmarks.md). The tile's sums are kept in `sums` (QP_TILE^2 doubles, in
 * cache) and added to the matrix afterwards, a column of the tile and a column of its mirror
 * image at a time: runs of QP_TILE consecutive entries, which the processor streams, where
 * adding each sum as it came (32 rows of column j, then one entry in each of 32 columns)
 * waited on a cache miss per line of the matrix: 9 of T nside 16's 20 ms of S build
 * (docs/benchmarks.md). Every entry still gets its one sum, so S is bitwise as before. */
static void qp_tile_tt(const qp_problem *p, const qp_matrix *layout, const qp_target *target,
                       const qp_wigner_table *table, int64_t ti, int64_t tj,
                       double *restrict sums) {
  enum { L = QP_WIGNER_TT_LANES };
  const int64_t n_pos = p->n_observed, ld = layout->ld;
  const int64_t i0 = ti * QP_TILE, j0 = tj * QP_TILE;
  const int64_t j_end = (tj + 1) * QP_TILE < n_pos ? (tj + 1) * QP_TILE : n_pos;
  const int64_t i_end = (ti + 1) * QP_TILE < n_pos ? (ti + 1) * QP_TILE : n_pos;
  double *m = target->m;
  /* sums[(i - i0) + (j - j0) QP_TILE] for the tile's pairs i >= j */
  for (int64_t j = j0; j < j_end; ++j)
    for (int64_t ib = i0 > j ? i0 : j; ib < i_end; ib += L) {
      const int n = i_end - ib < L ? (int)(i_end - ib) : L;
      double z[L], lane_sums[L];
      const double *rj = p->vectors + 3 * j;
#pragma omp simd
      for (int k = 0; k < L; ++k)
        z[k] = k < n ? qp_pair_z(p->vectors + 3 * (ib + k), rj) : 0.0;
      qp_wigner_tt_sums(table, target->lo, target->hi, target->coeff[QP_TT], z, lane_sums);
      for (int k = 0; k < n; ++k)
        sums[(ib + k - i0) + (j - j0) * QP_TILE] = lane_sums[k];
    }
  /* The tile's columns: (i, j) for i >= j */
  for (int64_t j = j0; j < j_end; ++j) {
    const int64_t from = i0 > j ? i0 : j;
    double *restrict col = m + j * ld + from;
    const double *restrict in = sums + (from - i0) + (j - j0) * QP_TILE;
#pragma omp simd
    for (int64_t k = 0; k < i_end - from; ++k)
      col[k] += in[k];
  }
  /* Its mirror image's columns: (j, i) for j < i, column i */
  for (int64_t i = i0; i < i_end; ++i) {
    const int64_t count = (j_end < i ? j_end : i) - j0;
    double *restrict col = m + i * ld + j0;
    const double *restrict in = sums + (i - i0);
    for (int64_t k = 0; k < count; ++k)
      col[k] += in[k * QP_TILE];
  }
}

/* Tile (ti, tj), ti >= tj: the pairs (i, j), i >= j, with i in row tile ti and j in column
 * tile tj that have an entry here, in batches of one kind. */
static void qp_tile(const qp_problem *p, const qp_matrix *layout, const qp_pixel_columns *pc,
                    const unsigned char *in_panel, const qp_target *targets, int n_targets,
                    const qp_wigner_table *table, int lmax, int64_t ti, int64_t tj,
                    qp_batch_work *work) {
  const int64_t nt = p->n_obs_t, n_pos = p->n_observed;
  const int64_t j_end = (tj + 1) * QP_TILE < n_pos ? (tj + 1) * QP_TILE : n_pos;
  const int64_t i_end = (ti + 1) * QP_TILE < n_pos ? (ti + 1) * QP_TILE : n_pos;
  const int whole = qp_matrix_held_whole(layout) && !pc;
  if (whole && n_targets == 1 && targets[0].add && i_end <= nt) {
    qp_tile_tt(p, layout, &targets[0], table, ti, tj, work->tile);
    return;
  }
  for (int64_t j = tj * QP_TILE; j < j_end; ++j) {
    qp_batch batch = {0};
    for (int64_t i = ti * QP_TILE > j ? ti * QP_TILE : j; i < i_end; ++i) {
      if (!whole) { /* distributed or a panel: only the pairs with an entry in the buffers */
        if (!in_panel[i] && !in_panel[j]) continue;
        const qp_pair_entries e = qp_pair_list(p, i, j);
        if (!qp_pair_here(layout, pc, &e)) continue;
      }
      const qp_wigner_kind kind = i < nt ? QP_WIGNER_TT : (j < nt ? QP_WIGNER_TP : QP_WIGNER_PP);
      if (batch.n == QP_WIGNER_LANES || (batch.n > 0 && kind != batch.kind))
        qp_batch_run(p, layout, pc, targets, n_targets, table, lmax, &batch, work);
      batch.kind = kind;
      batch.i[batch.n] = i;
      batch.j[batch.n] = j;
      batch.g[batch.n] = qp_pair_setup(p, i, j);
      batch.z[batch.n] = batch.g[batch.n].z;
      ++batch.n;
    }
    qp_batch_run(p, layout, pc, targets, n_targets, table, lmax, &batch, work);
  }
}

/* Per position, 1 when one of its columns (its own; U's, n_obs_p further, for a polarised
 * one) is a local column in [col0, col0 + cols): a pair is built only when one of its two
 * positions is, since its entries and their mirror images lie in those positions' columns. */
static unsigned char *qp_panel_positions(const qp_problem *p, const qp_matrix *layout,
                                         const qp_pixel_columns *pc) {
  const int64_t n_pos = p->n_observed, nt = p->n_obs_t, np = p->n_obs_p;
  unsigned char *in = calloc((size_t)n_pos + 1, 1);
  if (!in) return NULL;
  for (int64_t lj = pc->col0; lj < pc->col0 + pc->cols; ++lj) {
    const int64_t g = qp_matrix_global_col(layout, lj);
    in[g < nt + np ? g : g - np] = 1;
  }
  return in;
}

/* 1 when position range [lo, hi) has a position in the panel (prefix counts). */
static inline int qp_panel_any(const int64_t *count, int64_t lo, int64_t hi) {
  return count[hi] > count[lo];
}

qp_err qp_pixel_matrices_build(const qp_problem *p, double *cov, int first_param, int n_slots,
                               double *slots, size_t slot_stride) {
  double **slot_at = malloc(((size_t)n_slots + 1) * sizeof *slot_at);
  QP_CHECK(slot_at, QP_ERR_NOMEM, "out of memory for %d pixel matrices' places", n_slots);
  for (int k = 0; k < n_slots; ++k)
    slot_at[k] = slots + (size_t)k * slot_stride;
  const qp_err err = qp_pixel_matrices_build_columns(p, cov, p->cfg->ell_min, p->cfg->lmax_signal,
                                                     first_param, n_slots, slot_at, NULL);
  free(slot_at);
  return err;
}

qp_err qp_pixel_matrices_build_columns(const qp_problem *p, double *cov, int cov_lo, int cov_hi,
                                       int first_param, int n_slots, double *const *slot_at,
                                       const qp_pixel_columns *columns) {
  const qp_config *cfg = p->cfg;
  const int n_targets = (cov ? 1 : 0) + n_slots;
  const int lmax_all = cfg->lmax_signal;
  qp_err err = QP_OK;
  qp_wigner_table table = {0};
  int scratch_missing = 0;
  unsigned char *in_panel = NULL;
  int64_t *in_before = NULL;
  qp_target *targets = calloc((size_t)n_targets + 1, sizeof *targets);
  /* One weight array per spectrum, shared by the targets: covariance weights are w_l C_l,
   * a parameter's are w_l on its own spectrum, w_l the weight between the spectrum's two
   * fields (qp_spectrum_weight: the beam's, times the pixel windows of both fields). */
  double *weights = calloc((size_t)(12 * (lmax_all + 1)), sizeof *weights);
  QP_CHECK_GOTO(targets && weights, QP_ERR_NOMEM, done,
                "out of memory for the coefficients of %d pixel matrices", n_targets);
  double *cl_weight[6], *unit[6];
  for (int s = 0; s < 6; ++s) {
    cl_weight[s] = weights + s * (lmax_all + 1);
    unit[s] = weights + (6 + s) * (lmax_all + 1);
  }
  for (int l = 0; l <= lmax_all; ++l)
    for (int s = 0; s < 6; ++s) {
      unit[s][l] = qp_spectrum_weight(p, (qp_spectrum)s, l);
      cl_weight[s][l] = l >= cfg->ell_min ? p->cls.cl[s][l] * unit[s][l] : 0.0;
    }
  int lmax = 0, k = 0;
  if (cov) {
    targets[k] = (qp_target){cov, cov_lo, cov_hi, {0}, 1};
    for (int s = 0; s < 6; ++s)
      targets[k].coeff[s] = cl_weight[s];
    lmax = cov_hi;
    ++k;
  }
  for (int q = first_param; q < first_param + n_slots; ++q, ++k) {
    const int b = q % p->n_bins;
    const qp_spectrum x = cfg->spectra[q / p->n_bins];
    targets[k] = (qp_target){slot_at[q - first_param], p->bin_lo[b], p->bin_hi[b], {0}, 0};
    targets[k].coeff[x] = unit[x];
    if (p->bin_hi[b] > lmax) lmax = p->bin_hi[b];
  }
  /* Where the targets' entries live: this rank's part of an n_pix x n_pix matrix of the run's
   * backend (all of it on one process). Every pair of positions is visited once (i >= j;
   * positions are ordered T then polarised, so this covers the T-T pairs once, every
   * (polarised, T) pair, and the polarised pairs once), computed where this rank holds one of
   * its entries, and written to both triangles. */
  qp_matrix layout;
  (void)qp_matrix_view(p->ops, "pixel matrix", NULL, p->n_pix, p->n_pix, p->n_pix, &layout);
  const qp_pixel_columns all = {0, layout.local_cols, layout.ld};
  const qp_pixel_columns *pc = columns ? columns : &all;
  /* Every local column at the layout's ld: the plain offsets (qp_panel_offset). */
  const qp_pixel_columns *panel =
      pc->col0 == 0 && pc->cols == layout.local_cols && pc->ld == layout.ld ? NULL : pc;
  QP_CHECK_GOTO(pc->col0 >= 0 && pc->cols >= 0 && pc->col0 + pc->cols <= layout.local_cols &&
                    pc->ld >= layout.local_rows,
                QP_ERR_INTERNAL, done,
                "pixel matrices: local columns %lld..%lld (ld %lld) of a matrix of %lld x %lld "
                "local entries",
                (long long)pc->col0, (long long)(pc->col0 + pc->cols), (long long)pc->ld,
                (long long)layout.local_rows, (long long)layout.local_cols);
  const int64_t n_pos = p->n_observed;
  /* The positions with a column in the buffers, and their prefix counts for the tiles. */
  in_panel = qp_panel_positions(p, &layout, pc);
  in_before = malloc(((size_t)n_pos + 1) * sizeof *in_before);
  QP_CHECK_GOTO(in_panel && in_before, QP_ERR_NOMEM, done,
                "out of memory for the panel's %lld positions", (long long)n_pos);
  in_before[0] = 0;
  for (int64_t i = 0; i < n_pos; ++i)
    in_before[i + 1] = in_before[i] + in_panel[i];
  QP_CALL_GOTO(qp_wigner_table_init(&table, lmax), done);
#pragma omp parallel
  {
    qp_batch_work work;
    double *scratch =
        malloc((size_t)(2 * (lmax + 1) * QP_WIGNER_LANES + QP_TILE * QP_TILE) * sizeof *scratch);
    work.d[0] = scratch;
    work.d[1] = scratch ? scratch + (lmax + 1) * QP_WIGNER_LANES : NULL;
    work.tile = scratch ? scratch + 2 * (lmax + 1) * QP_WIGNER_LANES : NULL;
    if (!scratch) {
#pragma omp atomic write
      scratch_missing = 1;
    }
    /* The tiles of the lower triangle, numbered row by row: tile t is (ti, tj), tj <= ti. */
    const int64_t n_tiles = (n_pos + QP_TILE - 1) / QP_TILE;
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < n_tiles * (n_tiles + 1) / 2; ++t) {
      int64_t ti = (int64_t)((sqrt(8.0 * (double)t + 1.0) - 1.0) / 2.0);
      while (ti * (ti + 1) / 2 > t)
        --ti; /* sqrt's rounding, either way */
      while ((ti + 1) * (ti + 2) / 2 <= t)
        ++ti;
      const int64_t tj = t - ti * (ti + 1) / 2;
      const int64_t i_end = (ti + 1) * QP_TILE < n_pos ? (ti + 1) * QP_TILE : n_pos;
      const int64_t j_end = (tj + 1) * QP_TILE < n_pos ? (tj + 1) * QP_TILE : n_pos;
      if (scratch && (qp_panel_any(in_before, ti * QP_TILE, i_end) ||
                      qp_panel_any(in_before, tj * QP_TILE, j_end)))
        qp_tile(p, &layout, panel, in_panel, targets, n_targets, &table, lmax, ti, tj, &work);
    }
    free(scratch);
  }
  QP_CHECK_GOTO(!scratch_missing, QP_ERR_NOMEM, done,
                "out of memory for a thread's Wigner scratch (l <= %d)", lmax);
done:
  qp_wigner_table_free(&table);
  free(in_before);
  free(in_panel);
  free(weights);
  free(targets);
  return err;
}

/* w's part of the diagonal += variance (NULL: nothing). */
static void qp_pixel_add_variance(const double *variance, qp_host_window *w) {
  if (!variance) return;
  const qp_matrix *m = w->m;
  for (int64_t k = 0; k < w->cols; ++k) {
    const int64_t gj = qp_matrix_global_col(m, w->col0 + k);
    const int64_t li = qp_matrix_local_row(m, gj);
    if (li >= 0) w->data[li + k * w->ld] += variance[gj];
  }
}

/* m += S(lo..hi) (+ diag(variance) unless NULL), pair sums a panel of columns at a time. */
static qp_err qp_pixel_add_signal(const qp_problem *p, qp_matrix *m, int lo, int hi,
                                  const double *variance) {
  if (!variance && lo > hi) return QP_OK;
  /* A panel of local columns at a time (the plan's, under memory.host_limit on a device
   * backend; all of them otherwise): each panel's pairs are summed again, those of its
   * positions with every other. */
  for (int64_t col0 = 0, cols; col0 < m->local_cols; col0 += cols) {
    cols = qp_host_panel_width(p, m->local_cols, col0);
    qp_host_window w;
    QP_CALL(qp_host_window_open(m, col0, cols, QP_ACCESS_READ_WRITE, &w));
    qp_pixel_add_variance(variance, &w);
    const qp_pixel_columns pc = {col0, cols, w.ld};
    qp_err err =
        lo <= hi ? qp_pixel_matrices_build_columns(p, w.data, lo, hi, 0, 0, NULL, &pc) : QP_OK;
    if (err != QP_OK) {
      qp_host_window_discard(&w);
      return err;
    }
    QP_CALL(qp_host_window_close(&w));
  }
  return QP_OK;
}

qp_err qp_pixel_noise_plus_signal(const qp_problem *p, qp_matrix *m, int lo, int hi) {
  const int64_t n = p->n_pix;
  /* A dense N is copied in, unless m is N itself (N_eff = N + S_fixed in N's buffer). */
  if (p->noise.data && m->data != p->noise.data)
    QP_CALL(qp_linalg_copy_sub(n, n, &p->noise, 0, 0, m, 0, 0));
  return qp_pixel_add_signal(p, m, lo, hi, p->noise_variance);
}

qp_err qp_pixel_signal(const qp_problem *p, qp_matrix *m, int lo, int hi) {
  return qp_pixel_add_signal(p, m, lo, hi, NULL);
}

qp_err qp_pixel_signal_plus_variance(const qp_problem *p, qp_matrix *m, const double *variance,
                                     int lo, int hi) {
  return qp_pixel_add_signal(p, m, lo, hi, variance);
}

qp_err qp_pixel_build_slots(const qp_problem *p, const qp_matrix *stack, int64_t slot0,
                            int64_t first, int64_t count, const char *term) {
  const int64_t n = p->n_pix;
  qp_matrix *views = calloc((size_t)count + 1, sizeof *views);
  qp_host_window *w = calloc((size_t)count + 1, sizeof *w);
  double **at = calloc((size_t)count + 1, sizeof *at);
  qp_err err = QP_OK;
  int64_t opened = 0;
  QP_CHECK_GOTO(views && w && at, QP_ERR_NOMEM, done,
                "out of memory for the windows of %lld pixel matrices", (long long)count);
  for (int64_t k = 0; k < count; ++k)
    QP_CALL_GOTO(qp_matrix_stack_slot(stack, slot0 + k, p->ops, term, n, n, &views[k]), done);
  const int64_t local_cols = count > 0 ? views[0].local_cols : 0;
  /* A rank with no local column builds nothing. */
  for (int64_t col0 = 0, cols; col0 < local_cols; col0 += cols) {
    cols = qp_host_panel_width(p, local_cols, col0);
    /* One window per matrix over the panel's columns, every entry of which the build writes;
     * closed in reverse, so that the stage's staging reserve is a stack. */
    for (opened = 0; opened < count; ++opened) {
      QP_CALL_GOTO(qp_host_window_open(&views[opened], col0, cols, QP_ACCESS_WRITE, &w[opened]),
                   done);
      at[opened] = w[opened].data;
    }
    const qp_pixel_columns pc = {col0, cols, w[0].ld};
    QP_CALL_GOTO(qp_pixel_matrices_build_columns(p, NULL, 0, -1, (int)first, (int)count, at, &pc),
                 done);
    for (; opened > 0; --opened)
      QP_CALL_GOTO(qp_host_window_close(&w[opened - 1]), done);
  }
done:
  for (; opened > 0; --opened)
    qp_host_window_discard(&w[opened - 1]);
  free(at);
  free(w);
  free(views);
  return err;
}
