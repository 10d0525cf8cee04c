/* spin_harmonics.c: the real T, E and B basis of spin_harmonics.h. The orthonormalised associated
 * Legendre functions come from the standard stable recursion in l at fixed m; the spin-2
 * functions from lambda_lm and lambda_l-1,m by the closed forms of spin_harmonics.h. */
#include "spin_harmonics.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* lambda[qp_tri(lmax, l, m)] for l >= m: the triangle of lambda_lm, m-major. */
static inline int64_t qp_tri(int lmax, int l, int m) {
  return (int64_t)m * (2 * lmax - m + 3) / 2 + (l - m);
}

/* lambda_mm = (-1)^m sqrt((2m+1)/(4pi) (2m-1)!!/(2m)!!) sin^m theta underflows once
 * m log10(sin theta) < -308, while lambda_lm of the same m is O(1) again at l ~ m / sin theta:
 * from lmax ~ 1900 on (m ~ 700 at sin theta ~ 1/e) those functions came out as 0 or as
 * denormals with few bits. So the start and the recursion carry a scale 2^(-600 k): lambda_mm
 * is kept as a normal number times 2^(-600 k), and the recursion in l (stable upwards) drops
 * k by one each time its value passes 1. While k > 0 the true value is below 2^-600 ~ 1e-181
 * and is stored as 0. With k = 0 throughout (lmax below ~1900) nothing changes. */
#define QP_SCALE_UP 0x1p600
#define QP_SCALE_DOWN 0x1p-600

static inline double qp_unscaled(double v, int k) { return k == 0 ? v : 0.0; }

/* lambda_lm(x) for 0 <= m <= l <= lmax, with sin theta = st >= 0. */
static void qp_harmonics_legendre(int lmax, double x, double st, double *lambda) {
  double lmm = sqrt(1.0 / (4.0 * M_PI)); /* lambda_mm = lmm 2^(-600 k) */
  int k = 0;
  for (int m = 0; m <= lmax; ++m) {
    if (m > 0) lmm *= -sqrt((2.0 * m + 1.0) / (2.0 * m)) * st;
    if (lmm != 0.0 && fabs(lmm) < QP_SCALE_DOWN) {
      lmm *= QP_SCALE_UP;
      ++k;
    }
    int kl = k;
    double prev = lmm, cur = m + 1 <= lmax ? x * sqrt(2.0 * m + 3.0) * lmm : 0.0;
    lambda[qp_tri(lmax, m, m)] = qp_unscaled(prev, kl);
    if (m + 1 <= lmax) lambda[qp_tri(lmax, m + 1, m)] = qp_unscaled(cur, kl);
    for (int l = m + 2; l <= lmax; ++l) {
      const double a = sqrt((4.0 * l * l - 1.0) / ((double)l * l - (double)m * m));
      const double b = sqrt((((double)(l - 1) * (l - 1)) - (double)m * m) /
                            (4.0 * (double)(l - 1) * (l - 1) - 1.0));
      double next = a * (x * cur - b * prev);
      prev = cur;
      cur = next;
      if (kl > 0 && fabs(cur) > 1.0) {
        cur *= QP_SCALE_DOWN;
        prev *= QP_SCALE_DOWN;
        --kl;
      }
      lambda[qp_tri(lmax, l, m)] = qp_unscaled(cur, kl);
    }
  }
}

static inline void qp_set(double *row, int64_t i, double v) {
  if (row) row[i] = v;
}

/* theta moved off the poles (qp_harmonics_at's fail-safety). */
static double qp_off_pole(double theta) {
  const double pole_gap = 1e-10;
  return fmin(fmax(theta, pole_gap), M_PI - pole_gap);
}

/* G1_lm and G2_lm (spin_harmonics.h) from lambda at x = cos theta, s2 = sin^2 theta; 0 for
 * l < 2. */
static inline void qp_spin2_g(int lmax, const double *lambda, int l, int m, double x, double s2,
                              double *g1, double *g2) {
  *g1 = 0.0;
  *g2 = 0.0;
  if (l < 2) return;
  const double dl = (double)l, dm = (double)m, lam = lambda[qp_tri(lmax, l, m)];
  const double norm = 2.0 / sqrt((dl - 1.0) * dl * (dl + 1.0) * (dl + 2.0));
  double r_prev = 0.0; /* r_lm lambda_l-1,m */
  if (l > m)
    r_prev = sqrt((2.0 * dl + 1.0) * (dl - dm) / ((2.0 * dl - 1.0) * (dl + dm))) *
             lambda[qp_tri(lmax, l - 1, m)];
  *g1 = norm * (-((dl - dm * dm) / s2 + dl * (dl - 1.0) / 2.0) * lam + (dl + dm) * x / s2 * r_prev);
  *g2 = norm * (dm / s2) * ((dl - 1.0) * x * lam - (dl + dm) * r_prev);
}

void qp_harmonics_at(int ell_min, int lmax, double theta, double phi, double *work, double *t,
                     double *qe, double *ue, double *qb, double *ub) {
  const int64_t n = qp_harmonics_triangle(lmax);
  const int spin2 = qe || ue || qb || ub;
  qp_harmonics_ring r = {lmax, spin2, NAN, work, work + n, work + 2 * n, work + 3 * n};
  qp_harmonics_ring_at(&r, ell_min, theta, phi, t, qe, ue, qb, ub);
}

int qp_harmonics_ring_init(qp_harmonics_ring *r, int lmax, int spin2) {
  const size_t n = (size_t)qp_harmonics_triangle(lmax);
  *r = (qp_harmonics_ring){.lmax = lmax, .spin2 = spin2, .theta = NAN};
  r->lambda = malloc((spin2 ? 4 : 2) * n * sizeof *r->lambda);
  if (!r->lambda) return 0;
  r->t = r->lambda + n;
  if (spin2) r->h1 = r->t + n, r->h2 = r->h1 + n;
  return 1;
}

void qp_harmonics_ring_free(qp_harmonics_ring *r) {
  free(r->lambda);
  *r = (qp_harmonics_ring){0};
}

void qp_harmonics_ring_theta(qp_harmonics_ring *r, double theta) {
  theta = qp_off_pole(theta);
  if (theta == r->theta) return; /* the same colatitude (NaN, none yet, never is) */
  const double x = cos(theta), st = sin(theta), s2 = st * st;
  const int lmax = r->lmax;
  qp_harmonics_legendre(lmax, x, st, r->lambda);
  for (int m = 0; m <= lmax; ++m)
    for (int l = m; l <= lmax; ++l) {
      const int64_t k = qp_tri(lmax, l, m);
      r->t[k] = m == 0 ? r->lambda[k] : M_SQRT2 * r->lambda[k];
      if (!r->spin2) continue;
      double g1, g2;
      qp_spin2_g(lmax, r->lambda, l, m, x, s2, &g1, &g2);
      r->h1[k] = m == 0 ? g1 : M_SQRT2 * g1;
      r->h2[k] = m == 0 ? g2 : M_SQRT2 * g2;
    }
  r->theta = theta;
}

/* The table of spin_harmonics.h from the factors: -(a b), not (-a) b, is the same to the bit
 * (IEEE rounding is symmetric). */
void qp_harmonics_ring_at(qp_harmonics_ring *r, int ell_min, double theta, double phi, double *t,
                          double *qe, double *ue, double *qb, double *ub) {
  qp_harmonics_ring_theta(r, theta);
  const int lmax = r->lmax, spin2 = qe || ue || qb || ub;
  for (int m = 0; m <= lmax; ++m) {
    const double c = cos(m * phi), s = sin(m * phi);
    for (int l = m > ell_min ? m : ell_min; l <= lmax; ++l) {
      const int64_t k = qp_tri(lmax, l, m);
      const int64_t ip = qp_harmonic_index(l, m, ell_min), in = qp_harmonic_index(l, -m, ell_min);
      if (m == 0) {
        qp_set(t, ip, r->t[k]);
      } else {
        qp_set(t, ip, r->t[k] * c);
        qp_set(t, in, -(r->t[k] * s));
      }
      if (!spin2) continue;
      const double h1 = r->h1[k], h2 = r->h2[k];
      if (m == 0) {
        qp_set(qe, ip, -h1);
        qp_set(ue, ip, 0.0);
        qp_set(qb, ip, 0.0);
        qp_set(ub, ip, -h1);
      } else {
        qp_set(qe, ip, -(h1 * c));
        qp_set(ue, ip, h2 * s);
        qp_set(qb, ip, -(h2 * s));
        qp_set(ub, ip, -(h1 * c));
        qp_set(qe, in, h1 * s);
        qp_set(ue, in, h2 * c);
        qp_set(qb, in, -(h2 * c));
        qp_set(ub, in, h1 * s);
      }
    }
  }
}

qp_basis_recipe qp_basis_recipe_of(int lmax, qp_basis_output out, int l, int m) {
  const int am = m < 0 ? -m : m;
  qp_basis_recipe c = {qp_tri(lmax, l, am), am, QP_FACTOR_NONE, QP_TRIG_NONE, 0};
  /* The table of spin_harmonics.h, column by column: m = 0, (l, m), (l, -m). */
  switch (out) {
  case QP_BASIS_T:
    c.source = QP_FACTOR_T;
    c.trig = m == 0 ? QP_TRIG_NONE : m > 0 ? QP_TRIG_COS : QP_TRIG_SIN;
    c.negate = m < 0;
    break;
  case QP_BASIS_QE:
  case QP_BASIS_UB: /* -G1 at m = 0; -sqrt2 G1 c; sqrt2 G1 s */
    c.source = QP_FACTOR_H1;
    c.trig = m == 0 ? QP_TRIG_NONE : m > 0 ? QP_TRIG_COS : QP_TRIG_SIN;
    c.negate = m >= 0;
    break;
  case QP_BASIS_UE: /* 0 at m = 0; sqrt2 G2 s; sqrt2 G2 c */
  case QP_BASIS_QB: /* 0 at m = 0; -sqrt2 G2 s; -sqrt2 G2 c */
    if (m == 0) break;
    c.source = QP_FACTOR_H2;
    c.trig = m > 0 ? QP_TRIG_SIN : QP_TRIG_COS;
    c.negate = out == QP_BASIS_QB;
    break;
  }
  return c;
}
