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

/* The lower-triangle entries of the pair (column position j, row position i >= j in their
 * block order) in every target. */
static void qp_pair(const qp_problem *p, const qp_target *targets, int n_targets, int64_t i,
                    int64_t j, int lmax, qp_wigner *w) {
  const int64_t n = p->n_pix, np = p->n_obs_p;
  const qp_pair_geometry g = qp_pair_setup(p, i, j, lmax, w);
  for (int k = 0; k < n_targets; ++k) {
    const qp_target *t = &targets[k];
    const qp_pair_values v = qp_pair_target(t, &g, w);
    if (g.tt) {
      qp_put(t, i + j * n, v.tt);
    } else if (g.tp) {
      qp_put(t, i + j * n, v.qt); /* position i >= nt holds Q at index i, U at i + np */
      qp_put(t, i + np + j * n, v.ut);
    } else {
      int64_t qi = i, ui = i + np, qj = j, uj = j + np;
      qp_put(t, qi + qj * n, v.qq);             /* <Q_i Q_j> */
      qp_put(t, ui + uj * n, v.uu);             /* <U_i U_j> */
      qp_put(t, ui + qj * n, v.uq);             /* <U_i Q_j> */
      if (i != j) qp_put(t, uj + qi * n, v.qu); /* <U_j Q_i> = <Q_i U_j> */
    }
  }
}

/* The position of data-vector index r and its component (0 T, 1 Q, 2 U). */
static int64_t qp_row_position(const qp_problem *p, int64_t r, int *component) {
  if (r < p->n_obs_t) {
    *component = 0;
    return r;
  }
  if (r < p->n_obs_t + p->n_obs_p) {
    *component = 1;
    return r;
  }
  *component = 2;
  return r - p->n_obs_p;
}

/* The value of the entry (row position a with component ca, column b with cb), a >= b. */
static double qp_pick(const qp_pair_values *v, int ca, int cb) {
  static const int index[3][3] = {{0, -1, -1}, {1, 3, 6}, {2, 5, 4}};
  const double all[7] = {v->tt, v->qt, v->ut, v->qq, v->uu, v->uq, v->qu};
  return all[index[ca][cb]];
}

/* Distributed targets: each rank computes the entries of its own blocks (every entry, both
 * triangles: mirroring would need the transposed block, which lives on another rank). */
static void qp_build_distributed(const qp_problem *p, const qp_target *targets, int n_targets,
                                 int lmax) {
  qp_matrix layout;
  (void)qp_matrix_view(p->ops, "layout", NULL, p->n_pix, p->n_pix, 0, &layout);
#pragma omp parallel
  {
    double *scratch = malloc((size_t)(4 * (lmax + 1)) * sizeof *scratch);
    qp_wigner w = {scratch, scratch + (lmax + 1), scratch + 2 * (lmax + 1),
                   scratch + 3 * (lmax + 1)};
#pragma omp for schedule(dynamic, 4)
    for (int64_t lj = 0; lj < layout.local_cols; ++lj) {
      int cc, cr;
      const int64_t pc = qp_row_position(p, qp_matrix_global_col(&layout, lj), &cc);
      for (int64_t li = 0; li < layout.local_rows; ++li) {
        const int64_t pr = qp_row_position(p, qp_matrix_global_row(&layout, li), &cr);
        /* The pair in block order (row position >= column position); the transposed entry
         * of the other order is the same number (the matrices are symmetric). */
        const int swap = pr < pc;
        const int64_t a = swap ? pc : pr, b = swap ? pr : pc;
        const int ca = swap ? cc : cr, cb = swap ? cr : cc;
        if (a < p->n_obs_t && ca != 0) continue; /* cannot happen: T positions have T rows */
        const qp_pair_geometry g = qp_pair_setup(p, a, b, lmax, &w);
        for (int k = 0; k < n_targets; ++k) {
          const qp_pair_values v = qp_pair_target(&targets[k], &g, &w);
          double value = a == b && ca == 1 && cb == 2 ? v.uq : qp_pick(&v, ca, cb);
          qp_put(&targets[k], li + lj * layout.ld, value);
        }
      }
    }
    free(scratch);
  }
}

/* a[j + i n] = a[i + j n] for i > j, tile by tile. */
static void qp_mirror_lower(double *a, int64_t n) {
  const int64_t tile = 64;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t jb = 0; jb < n; jb += tile) {
    for (int64_t ib = jb; ib < n; ib += tile) {
      int64_t j_end = jb + tile < n ? jb + tile : n, i_end = ib + tile < n ? ib + tile : n;
      for (int64_t i = ib; i < i_end; ++i)
        for (int64_t j = jb; j < j_end && j < i; ++j)
          a[j + i * n] = a[i + j * n];
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
  if (p->ops && p->ops->distributed) {
    qp_build_distributed(p, targets, n_targets, lmax);
    free(weights);
    free(targets);
    return;
  }
  const int64_t n_pos = p->n_observed;
#pragma omp parallel
  {
    double *scratch = malloc((size_t)(4 * (lmax + 1)) * sizeof *scratch);
    qp_wigner w = {scratch, scratch + (lmax + 1), scratch + 2 * (lmax + 1),
                   scratch + 3 * (lmax + 1)};
#pragma omp for schedule(dynamic, 8)
    for (int64_t j = 0; j < n_pos; ++j) {
      /* Positions are ordered T then polarised, so i >= j covers the T-T pairs once, every
       * (polarised, T) pair, and the polarised pairs once. */
      for (int64_t i = j; i < n_pos; ++i)
        qp_pair(p, targets, n_targets, i, j, lmax, &w);
    }
    free(scratch);
  }
  for (k = 0; k < n_targets; ++k)
    qp_mirror_lower(targets[k].m, p->n_pix);
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
