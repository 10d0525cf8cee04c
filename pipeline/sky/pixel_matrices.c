/* pixel_matrices.c: S and the bin matrices P_p from Wigner d functions (pixel_matrices.h). */
#include "pixel_matrices.h"

#include <math.h>
#include <stdlib.h>

/* The 3x3 covariance of (T, Q, U) at two positions in the frame of their great circle. */
typedef struct qp_local {
  double tt, tq, tu, qq, uu, qu;
} qp_local;

/* Wigner d^l(beta) for l = 0..lmax, z = cos beta: d00 = P_l, and d20, d22, d2m2 (= d^l_2,-2)
 * by the three-term recursion in l from their closed forms at l = 2; 0 below l = 2. */
typedef struct qp_wigner {
  double *d00, *d20, *d22, *d2m2;
} qp_wigner;

static void qp_wigner_spin(int lmax, double z, int m1, int m2, double start, double *d) {
  for (int l = 0; l <= lmax && l < 2; ++l)
    d[l] = 0.0;
  if (lmax < 2) return;
  d[2] = start;
  /* Every factor in double: the products of squares pass INT_MAX from l ~ 216 (they were ints,
   * which turned the spin-2 covariance into NaN for any Q/U run at nside >= 73). The
   * recursion in l at fixed (m1, m2) is the stable direction (like Legendre's); the
   * sqrt(a) sqrt(b) split keeps each factor near l^2 rather than l^4. */
  const double mm = (double)m1 * (double)m2, m1s = (double)m1 * m1, m2s = (double)m2 * m2;
  for (int l = 3; l <= lmax; ++l) {
    const double dl = (double)l, lp = dl - 1.0;
    const double a = (2.0 * dl - 1.0) * (dl * lp * z - mm) * d[l - 1];
    const double b = dl * sqrt(lp * lp - m1s) * sqrt(lp * lp - m2s) * d[l - 2];
    d[l] = (a - b) / (lp * sqrt(dl * dl - m1s) * sqrt(dl * dl - m2s));
  }
}

static void qp_wigner_eval(int lmax, double z, int tt, int tp, int pp, qp_wigner *w) {
  if (tt) {
    w->d00[0] = 1.0;
    if (lmax >= 1) w->d00[1] = z;
    for (int l = 2; l <= lmax; ++l)
      w->d00[l] = ((2.0 * l - 1.0) * z * w->d00[l - 1] - (l - 1.0) * w->d00[l - 2]) / l;
  }
  if (tp) qp_wigner_spin(lmax, z, 2, 0, sqrt(6.0) / 4.0 * (1.0 - z * z), w->d20);
  if (pp) {
    qp_wigner_spin(lmax, z, 2, 2, 0.25 * (1.0 + z) * (1.0 + z), w->d22);
    qp_wigner_spin(lmax, z, 2, -2, 0.25 * (1.0 - z) * (1.0 - z), w->d2m2);
  }
}

/* coeff[s][l]: the weight of spectrum s (QP_TT..QP_EB) at multipole l in the block. */
static qp_local qp_local_block(int lo, int hi, double *const coeff[6], const qp_wigner *w, int tt,
                               int tp, int pp) {
  qp_local b = {0, 0, 0, 0, 0, 0};
  for (int l = lo; l <= hi; ++l) {
    if (tt && coeff[QP_TT]) b.tt += coeff[QP_TT][l] * w->d00[l];
    if (tp) {
      if (coeff[QP_TE]) b.tq -= coeff[QP_TE][l] * w->d20[l];
      if (coeff[QP_TB]) b.tu -= coeff[QP_TB][l] * w->d20[l];
    }
    if (pp) {
      double a = 0.5 * (w->d22[l] + w->d2m2[l]), bb = 0.5 * (w->d22[l] - w->d2m2[l]);
      double ee = coeff[QP_EE] ? coeff[QP_EE][l] : 0, bm = coeff[QP_BB] ? coeff[QP_BB][l] : 0;
      b.qq += ee * a + bm * bb;
      b.uu += bm * a + ee * bb;
      if (coeff[QP_EB]) b.qu += coeff[QP_EB][l] * w->d2m2[l];
    }
  }
  return b;
}

/* cos 2 alpha, sin 2 alpha of the angle at position a (unit vector ra) from its meridian
 * (e_theta) to the great circle towards rb; (1, 0) when the circle is not unique. */
static void qp_rotation(const double *ra, const double *rb, double z, double *c2, double *s2) {
  double t[3] = {rb[0] - z * ra[0], rb[1] - z * ra[1], rb[2] - z * ra[2]};
  double rho = sqrt(ra[0] * ra[0] + ra[1] * ra[1]); /* sin theta; HEALPix centres: > 0 */
  double cphi = rho > 0 ? ra[0] / rho : 1.0, sphi = rho > 0 ? ra[1] / rho : 0.0;
  double t_theta = (t[0] * cphi + t[1] * sphi) * ra[2] - t[2] * rho;
  double t_phi = -t[0] * sphi + t[1] * cphi;
  double norm = t_theta * t_theta + t_phi * t_phi;
  if (norm < 1e-24) {
    *c2 = 1.0;
    *s2 = 0.0;
    return;
  }
  *c2 = (t_theta * t_theta - t_phi * t_phi) / norm;
  *s2 = 2.0 * t_theta * t_phi / norm;
}

/* One output matrix: its coefficients and multipole range. */
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

/* The entries of one pair of positions (i >= j in block order) for one target: T_i T_j, the
 * (polarised i, T j) pair's Q_i T_j and U_i T_j, and the polarised pair's four. */
typedef struct qp_pair_values {
  double tt, qt, ut, qq, uu, uq, qu; /* first letter: row (position i), second: column (j) */
} qp_pair_values;

/* The geometry of a pair, shared by every target: Wigner d of its angle and the rotations. */
typedef struct qp_pair_geometry {
  int tt, tp, pp;
  double ci, si, cj, sj;
} qp_pair_geometry;

static qp_pair_geometry qp_pair_setup(const qp_problem *p, int64_t i, int64_t j, int lmax,
                                      qp_wigner *w) {
  const int64_t nt = p->n_obs_t;
  const double *ri = p->vectors + 3 * i, *rj = p->vectors + 3 * j;
  double z = ri[0] * rj[0] + ri[1] * rj[1] + ri[2] * rj[2];
  z = z > 1.0 ? 1.0 : (z < -1.0 ? -1.0 : z);
  /* Coincident and antipodal pairs get z = +-1 exactly: r . r of a HEALPix centre rounds to
   * as much as 4.4e-16 below 1, and P_l, d^l_20, d^l_22, d^l_2-2 near z = +-1 move by
   * ~l^2/2 dz, 1.3e-10 of the diagonal of a bin matrix at l ~ 767 (nside 256; found by
   * tests/pipeline/test_pixel_reference.c). The threshold is qp_rotation's: a separation (or a
   * distance from the antipode) below 1e-12 rad; HEALPix centres are far further apart. */
  const double dm[3] = {ri[0] - rj[0], ri[1] - rj[1], ri[2] - rj[2]};
  const double dp[3] = {ri[0] + rj[0], ri[1] + rj[1], ri[2] + rj[2]};
  if (dm[0] * dm[0] + dm[1] * dm[1] + dm[2] * dm[2] < 1e-24)
    z = 1.0;
  else if (dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2] < 1e-24)
    z = -1.0;
  const int i_pol = i >= nt, j_pol = j >= nt;
  qp_pair_geometry g = {!i_pol && !j_pol, i_pol != j_pol, i_pol && j_pol, 1, 0, 1, 0};
  qp_wigner_eval(lmax, z, g.tt, g.tp, g.pp, w);
  if (i_pol) qp_rotation(ri, rj, z, &g.ci, &g.si);
  if (g.pp) qp_rotation(rj, ri, z, &g.cj, &g.sj);
  return g;
}

static qp_pair_values qp_pair_target(const qp_target *t, const qp_pair_geometry *g,
                                     const qp_wigner *w) {
  qp_local b = qp_local_block(t->lo, t->hi, t->coeff, w, g->tt, g->tp, g->pp);
  qp_pair_values v = {b.tt, 0, 0, 0, 0, 0, 0};
  if (g->tp) { /* i is the polarised position (rows Q_i, U_i), j the T one */
    v.qt = g->ci * b.tq - g->si * b.tu;
    v.ut = g->si * b.tq + g->ci * b.tu;
  } else if (g->pp) {
    double x00 = g->ci * b.qq - g->si * b.qu, x01 = g->ci * b.qu - g->si * b.uu;
    double x10 = g->si * b.qq + g->ci * b.qu, x11 = g->si * b.qu + g->ci * b.uu;
    v.qq = x00 * g->cj - x01 * g->sj;
    v.uu = x10 * g->sj + x11 * g->cj;
    v.uq = x10 * g->cj - x11 * g->sj;
    v.qu = x00 * g->sj + x01 * g->cj;
  }
  return v;
}

/* The entries of a pair of positions i >= j (in block order: T positions first), as (row,
 * column, value index) in the lower triangle: positions at or above n_obs_t are polarised,
 * their Q row at the position's index and their U row n_obs_p further (so U rows come after
 * every Q row, and each entry listed is on or below the diagonal). */
enum { QP_V_TT, QP_V_QT, QP_V_UT, QP_V_QQ, QP_V_UU, QP_V_UQ, QP_V_QU };
typedef struct qp_pair_entries {
  int count;
  int64_t row[4], col[4];
  int value[4];
} qp_pair_entries;

static qp_pair_entries qp_pair_list(const qp_problem *p, int64_t i, int64_t j) {
  const int64_t nt = p->n_obs_t, np = p->n_obs_p;
  qp_pair_entries e = {0};
#define QP_ENTRY(r, c, v) (e.row[e.count] = (r), e.col[e.count] = (c), e.value[e.count++] = (v))
  if (i < nt) {
    QP_ENTRY(i, j, QP_V_TT);
  } else if (j < nt) { /* i polarised, j T */
    QP_ENTRY(i, j, QP_V_QT);
    QP_ENTRY(i + np, j, QP_V_UT);
  } else {
    QP_ENTRY(i, j, QP_V_QQ);
    QP_ENTRY(i + np, j + np, QP_V_UU);
    QP_ENTRY(i + np, j, QP_V_UQ);
    if (i != j) QP_ENTRY(j + np, i, QP_V_QU); /* <U_j Q_i> = <Q_i U_j> */
  }
#undef QP_ENTRY
  return e;
}

/* 1 when this rank holds an entry of the pair or its mirror image. */
static int qp_pair_here(const qp_matrix *layout, const qp_pair_entries *e) {
  int64_t at;
  for (int k = 0; k < e->count; ++k)
    if (qp_matrix_local_offset(layout, e->row[k], e->col[k], &at) ||
        qp_matrix_local_offset(layout, e->col[k], e->row[k], &at))
      return 1;
  return 0;
}

/* Every target's entries of the pair (i, j) that this rank holds, and their mirror images. */
static void qp_pair(const qp_problem *p, const qp_matrix *layout, const qp_target *targets,
                    int n_targets, int64_t i, int64_t j, int lmax, qp_wigner *w) {
  const qp_pair_entries e = qp_pair_list(p, i, j);
  if (!qp_pair_here(layout, &e)) return;
  const qp_pair_geometry g = qp_pair_setup(p, i, j, lmax, w);
  for (int k = 0; k < n_targets; ++k) {
    const qp_target *t = &targets[k];
    const qp_pair_values v = qp_pair_target(t, &g, w);
    const double all[7] = {v.tt, v.qt, v.ut, v.qq, v.uu, v.uq, v.qu};
    for (int x = 0; x < e.count; ++x) {
      int64_t at;
      const double value = all[e.value[x]];
      if (qp_matrix_local_offset(layout, e.row[x], e.col[x], &at)) qp_put(t, at, value);
      if (e.row[x] != e.col[x] && qp_matrix_local_offset(layout, e.col[x], e.row[x], &at))
        qp_put(t, at, value);
    }
  }
}

void qp_pixel_matrices_build(const qp_problem *p, double *cov, int first_param, int n_slots,
                             double *slots, size_t slot_stride) {
  qp_pixel_matrices_build_range(p, cov, p->cfg->ell_min, p->cfg->lmax_signal, first_param, n_slots,
                                slots, slot_stride);
}

void qp_pixel_matrices_build_range(const qp_problem *p, double *cov, int cov_lo, int cov_hi,
                                   int first_param, int n_slots, double *slots,
                                   size_t slot_stride) {
  const qp_config *cfg = p->cfg;
  const int n_targets = (cov ? 1 : 0) + n_slots;
  qp_target *targets = calloc((size_t)n_targets, sizeof *targets);
  const int lmax_all = cfg->lmax_signal;
  /* One weight array per spectrum, shared by the targets: covariance weights are w_l C_l,
   * a parameter's are w_l on its own spectrum. */
  double *weights = calloc((size_t)(7 * (lmax_all + 1)), sizeof *weights);
  double *cl_weight[6], *unit = weights + 6 * (lmax_all + 1);
  for (int s = 0; s < 6; ++s)
    cl_weight[s] = weights + s * (lmax_all + 1);
  for (int l = 0; l <= lmax_all; ++l) {
    unit[l] = p->ell_weight[l];
    for (int s = 0; s < 6; ++s)
      cl_weight[s][l] = l >= cfg->ell_min ? p->cls.cl[s][l] * p->ell_weight[l] : 0.0;
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
    targets[k] = (qp_target){
        slots + (size_t)(q - first_param) * slot_stride, p->bin_lo[b], p->bin_hi[b], {0}, 0};
    targets[k].coeff[x] = unit;
    if (p->bin_hi[b] > lmax) lmax = p->bin_hi[b];
  }
  /* Where the targets' entries live: this rank's part of an n_pix x n_pix matrix of the run's
   * backend (all of it on one process). Every pair of positions is visited once (i >= j;
   * positions are ordered T then polarised, so this covers the T-T pairs once, every
   * (polarised, T) pair, and the polarised pairs once), computed where this rank holds one of
   * its entries, and written to both triangles. */
  qp_matrix layout;
  (void)qp_matrix_view(p->ops, "pixel matrix", NULL, p->n_pix, p->n_pix, p->n_pix, &layout);
  const int64_t n_pos = p->n_observed;
#pragma omp parallel
  {
    double *scratch = malloc((size_t)(4 * (lmax + 1)) * sizeof *scratch);
    qp_wigner w = {scratch, scratch + (lmax + 1), scratch + 2 * (lmax + 1),
                   scratch + 3 * (lmax + 1)};
#pragma omp for schedule(dynamic, 8)
    for (int64_t j = 0; j < n_pos; ++j)
      for (int64_t i = j; i < n_pos; ++i)
        qp_pair(p, &layout, targets, n_targets, i, j, lmax, &w);
    free(scratch);
  }
  free(weights);
  free(targets);
}

void qp_pixel_add_noise(const qp_problem *p, qp_matrix *m) {
  if (p->noise_variance) {
    for (int64_t lj = 0; lj < m->local_cols; ++lj) {
      const int64_t gj = qp_matrix_global_col(m, lj);
      int64_t at;
      if (qp_matrix_local_offset(m, gj, gj, &at)) m->data[at] += p->noise_variance[gj];
    }
    return;
  }
  for (int64_t lj = 0; lj < m->local_cols; ++lj)
    for (int64_t li = 0; li < m->local_rows; ++li)
      m->data[li + lj * m->ld] += p->noise.data[li + lj * p->noise.ld];
}
