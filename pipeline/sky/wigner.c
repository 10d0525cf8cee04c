/* wigner.c: Wigner d functions of many angles by their recursions in l (wigner.h). */
#include "wigner.h"

#include "simd_clones.h"

#include <math.h>
#include <stdlib.h>

enum { QP_L = QP_WIGNER_LANES };

/* Spin (m1, m2) = (2, 0), (2, 2), (2, -2) are functions 1, 2, 3; P_l is function 0. */
static const int qp_spin[4][2] = {{0, 0}, {2, 0}, {2, 2}, {2, -2}};

qp_err qp_wigner_table_init(qp_wigner_table *t, int lmax) {
  const size_t n = (size_t)(lmax + 1);
  t->lmax = lmax;
  t->storage = calloc(24 * n, sizeof *t->storage);
  QP_CHECK(t->storage, QP_ERR_NOMEM, "out of memory for the Wigner recursion up to l = %d", lmax);
  for (int f = 0; f < 4; ++f)
    for (int x = 0; x < 6; ++x) t->coef[f][x] = t->storage + (6 * f + x) * n;
  /* The factors of each step exactly as a step computes them one angle at a time, so that a
   * batch gives the same bits: P_l = ((2l-1) z P_{l-1} - (l-1) P_{l-2}) / l, and for spin
   * (m1, m2) d_l = ((2l-1)(l(l-1) z - m1 m2) d_{l-1} - l sqrt((l-1)^2 - m1^2)
   * sqrt((l-1)^2 - m2^2) d_{l-2}) / ((l-1) sqrt(l^2 - m1^2) sqrt(l^2 - m2^2)), every factor in
   * double (the products of squares pass INT_MAX from l ~ 216) and split as sqrt(a) sqrt(b) so
   * that each stays near l^2 rather than l^4. */
  for (int l = 2; l <= lmax; ++l) {
    t->coef[0][QP_W_TWO_L][l] = 2.0 * l - 1.0;
    t->coef[0][QP_W_PREV][l] = l - 1.0;
    t->coef[0][QP_W_DEN][l] = l;
    t->coef[0][QP_W_INV_DEN][l] = 1.0 / l;
  }
  for (int f = 1; f < 4; ++f) {
    const double mm = (double)qp_spin[f][0] * qp_spin[f][1];
    const double m1s = (double)qp_spin[f][0] * qp_spin[f][0];
    const double m2s = (double)qp_spin[f][1] * qp_spin[f][1];
    for (int l = 3; l <= lmax; ++l) {
      const double dl = (double)l, lp = dl - 1.0;
      t->coef[f][QP_W_TWO_L][l] = 2.0 * dl - 1.0;
      t->coef[f][QP_W_LL][l] = dl * lp;
      t->coef[f][QP_W_MM][l] = mm;
      t->coef[f][QP_W_PREV][l] = dl * sqrt(lp * lp - m1s) * sqrt(lp * lp - m2s);
      t->coef[f][QP_W_DEN][l] = lp * sqrt(dl * dl - m1s) * sqrt(dl * dl - m2s);
      t->coef[f][QP_W_INV_DEN][l] = 1.0 / t->coef[f][QP_W_DEN][l];
    }
  }
  return QP_OK;
}

void qp_wigner_table_free(qp_wigner_table *t) {
  free(t->storage);
  t->storage = NULL;
}

/* d[l] for l = from..lmax of function f, every lane, from d[from - 1] and d[from - 2]. The
 * lanes are independent chains: the loop over them is what the vector units run, in the
 * widest vectors the processor has (QP_WIDEST_VECTORS; the bits do not depend on the width:
 * the build does not contract a * b + c into one rounding, CMakeLists.txt). */
QP_WIDEST_VECTORS static void qp_recur(const qp_wigner_table *t, int f, int from, int lmax, const double *z,
                     double *d) {
  double *const *c = t->coef[f];
  for (int l = from; l <= lmax; ++l) {
    double *restrict dl = d + l * QP_L;
    const double *d1 = dl - QP_L, *d2 = dl - 2 * QP_L;
    const double two_l = c[QP_W_TWO_L][l], ll = c[QP_W_LL][l], mm = c[QP_W_MM][l];
    const double prev = c[QP_W_PREV][l], den = c[QP_W_INV_DEN][l];
    if (f == 0) {
#pragma omp simd
      for (int k = 0; k < QP_L; ++k) dl[k] = (two_l * z[k] * d1[k] - prev * d2[k]) * den;
    } else {
#pragma omp simd
      for (int k = 0; k < QP_L; ++k)
        dl[k] = (two_l * (ll * z[k] - mm) * d1[k] - prev * d2[k]) * den;
    }
  }
}

/* The spin function f from its closed form at l = 2; zero at l = 0, 1. */
static void qp_spin_batch(const qp_wigner_table *t, int f, int lmax, const double *z, double *d) {
  for (int k = 0; k < 2 * QP_L && k < (lmax + 1) * QP_L; ++k) d[k] = 0.0;
  if (lmax < 2) return;
  for (int k = 0; k < QP_L; ++k) {
    const double x = z[k];
    d[2 * QP_L + k] = f == 1   ? sqrt(6.0) / 4.0 * (1.0 - x * x)
                      : f == 2 ? 0.25 * (1.0 + x) * (1.0 + x)
                               : 0.25 * (1.0 - x) * (1.0 - x);
  }
  qp_recur(t, f, 3, lmax, z, d);
}

void qp_wigner_batch(const qp_wigner_table *t, int lmax, qp_wigner_kind kind, const double *z,
                     double *const out[2]) {
  if (kind == QP_WIGNER_TT) {
    double *d = out[0];
    for (int k = 0; k < QP_L; ++k) d[k] = 1.0;
    if (lmax >= 1)
      for (int k = 0; k < QP_L; ++k) d[QP_L + k] = z[k];
    qp_recur(t, 0, 2, lmax, z, d);
  } else if (kind == QP_WIGNER_TP) {
    qp_spin_batch(t, 1, lmax, z, out[0]);
  } else {
    qp_spin_batch(t, 2, lmax, z, out[0]);
    qp_spin_batch(t, 3, lmax, z, out[1]);
  }
}

QP_WIDEST_VECTORS void qp_wigner_tt_sums(const qp_wigner_table *t, int lo, int hi,
                                         const double *w, const double *z, double *sums) {
  enum { L = QP_WIGNER_TT_LANES };
  double p0[L], p1[L], s[L]; /* P_{l-2}, P_{l-1}, the sum */
  for (int k = 0; k < L; ++k) {
    p0[k] = 1.0;
    p1[k] = z[k];
    s[k] = 0.0;
  }
  if (w) {
    if (lo <= 0 && hi >= 0)
      for (int k = 0; k < L; ++k) s[k] += w[0] * p0[k];
    if (lo <= 1 && hi >= 1)
      for (int k = 0; k < L; ++k) s[k] += w[1] * p1[k];
  }
  double *const *c = t->coef[0];
  for (int l = 2; l <= hi; ++l) {
    const double two_l = c[QP_W_TWO_L][l], prev = c[QP_W_PREV][l], den = c[QP_W_INV_DEN][l];
    const double wl = w && l >= lo ? w[l] : 0.0;
    const int summed = w && l >= lo;
#pragma omp simd
    for (int k = 0; k < L; ++k) {
      const double next = (two_l * z[k] * p1[k] - prev * p0[k]) * den;
      p0[k] = p1[k];
      p1[k] = next;
      if (summed) s[k] += wl * next;
    }
  }
  for (int k = 0; k < L; ++k) sums[k] = s[k];
}
