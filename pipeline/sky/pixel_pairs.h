/* pixel_pairs.h: the geometry of one pair of observed positions for the pair sums of
 * pixel_matrices.c: the angle between them, the rotations from their great circle to their
 * meridians, and the entries of the matrices the pair writes. Inline: called once per pair
 * (or lane of a batch) inside the sums' loops, compiled with them (-ffp-contract=off, as
 * pixel_matrices.c). Private to sky/. */
#ifndef QP_PIXEL_PAIRS_H
#define QP_PIXEL_PAIRS_H

#include <math.h>
#include <stdint.h>

#include "problem.h"
#include "wigner.h"

/* The 3x3 covariance of (T, Q, U) at two positions in the frame of their great circle. */
typedef struct qp_local {
  double tt, tq, tu, qq, uu, qu;
} qp_local;

/* cos 2 alpha, sin 2 alpha of the angle at position a (unit vector ra) from its meridian
 * (e_theta) to the great circle towards rb; (1, 0) when the circle is not unique. */
static inline void qp_rotation(const double *ra, const double *rb, double z, double *c2,
                               double *s2) {
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

/* The entries of one pair of positions (i >= j in block order) for one target: T_i T_j, the
 * (polarised i, T j) pair's Q_i T_j and U_i T_j, and the polarised pair's four. */
typedef struct qp_pair_values {
  double tt, qt, ut, qq, uu, uq, qu; /* first letter: row (position i), second: column (j) */
} qp_pair_values;

/* The geometry of a pair: z = cos of its angle and the rotations at both ends. */
typedef struct qp_pair_geometry {
  double z, ci, si, cj, sj;
} qp_pair_geometry;

/* cos of the angle between unit vectors ri and rj, exactly +-1 for coincident and antipodal
 * positions (below). */
static inline double qp_pair_z(const double *ri, const double *rj) {
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
  return z;
}

static inline qp_pair_geometry qp_pair_setup(const qp_problem *p, int64_t i, int64_t j) {
  const int64_t nt = p->n_obs_t;
  const double *ri = p->vectors + 3 * i, *rj = p->vectors + 3 * j;
  const double z = qp_pair_z(ri, rj);
  qp_pair_geometry g = {z, 1, 0, 1, 0};
  if (i >= nt) qp_rotation(ri, rj, z, &g.ci, &g.si);
  if (j >= nt) qp_rotation(rj, ri, z, &g.cj, &g.sj);
  return g;
}

/* The pair's values from its sums in the great-circle frame, rotated to the meridian frames. */
static inline qp_pair_values qp_pair_rotate(qp_wigner_kind kind, const qp_local *b,
                                     const qp_pair_geometry *g) {
  qp_pair_values v = {b->tt, 0, 0, 0, 0, 0, 0};
  if (kind == QP_WIGNER_TP) { /* i is the polarised position (rows Q_i, U_i), j the T one */
    v.qt = g->ci * b->tq - g->si * b->tu;
    v.ut = g->si * b->tq + g->ci * b->tu;
  } else if (kind == QP_WIGNER_PP) {
    double x00 = g->ci * b->qq - g->si * b->qu, x01 = g->ci * b->qu - g->si * b->uu;
    double x10 = g->si * b->qq + g->ci * b->qu, x11 = g->si * b->qu + g->ci * b->uu;
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

static inline qp_pair_entries qp_pair_list(const qp_problem *p, int64_t i, int64_t j) {
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

#endif
