/* wigner.h: Wigner d^l_{m1 m2}(beta) for l = 0..lmax at many angles at once: d00 (= P_l),
 * d20, d22 and d2,-2, the functions of the pixel-space covariance (pixel_matrices.h).
 *
 * Each follows its three-term recursion in l (the stable direction), z = cos beta, from its
 * closed form at l = 2 (l = 0, 1 for P_l). The recursion is a chain of dependent steps (a
 * few multiplies and an add each), so one angle at a time runs at the latency of that
 * chain; QP_WIGNER_LANES angles side by side keep the vector units busy. The square roots of
 * each step's factors are computed once per lmax, and every step does the very operations, in
 * the same order, that it did one angle at a time: the functions are bitwise the same. */
#ifndef QP_WIGNER_H
#define QP_WIGNER_H

#include "qp_error.h"

/** Angles evaluated side by side (the lanes of one batch). */
#define QP_WIGNER_LANES 16

/** The factors of each step for l <= lmax, per function (P_l, then d20, d22, d2,-2):
 *  d_l = (two_l (ll z - mm) d_{l-1} - prev d_{l-2}) inv_den (P_l: two_l z d_{l-1} ...), with
 *  inv_den = 1 / den once per l: a division per step and lane was a third of the S build's time
 *  (T nside 16: 58 -> 40 ms of CPU in the recursion; S moves by ~1 ulp per step, F by 6e-14 of
 *  its largest entry on QU nside 16, docs/benchmarks.md). */
enum { QP_W_TWO_L, QP_W_LL, QP_W_MM, QP_W_PREV, QP_W_DEN, QP_W_INV_DEN };
typedef struct qp_wigner_table {
  int lmax;
  double *coef[4][6];
  double *storage;
} qp_wigner_table;

/** Which functions a batch needs: P_l (T-T pairs), d20 (T-polarised), d22 and d2,-2
 *  (polarised pairs). */
typedef enum qp_wigner_kind { QP_WIGNER_TT = 0, QP_WIGNER_TP = 1, QP_WIGNER_PP = 2 } qp_wigner_kind;

qp_err qp_wigner_table_init(qp_wigner_table *t, int lmax);
void qp_wigner_table_free(qp_wigner_table *t);

/** For every lane k < QP_WIGNER_LANES: out[f][l * QP_WIGNER_LANES + k] = function f of the
 *  kind at z[k], l = 0..lmax (lmax <= t->lmax): f = 0 P_l (TT); f = 0 d20 (TP); f = 0 d22,
 *  f = 1 d2,-2 (PP); zero below l = 2 for the spin functions. out[f] holds
 *  (lmax + 1) QP_WIGNER_LANES doubles. Unused lanes may hold any z in [-1, 1]. */
void qp_wigner_batch(const qp_wigner_table *t, int lmax, qp_wigner_kind kind, const double *z,
                     double *const out[2]);

/** Angles of one qp_wigner_tt_sums call: 32, four chains of AVX-512 vectors, where the
 *  recursion's three dependent operations a step would leave the units idle with fewer. */
#define QP_WIGNER_TT_LANES 32

/** sums[k] = sum over l = lo..hi of w[l] P_l(z[k]) for k < QP_WIGNER_TT_LANES (hi <= t->lmax,
 *  0 <= lo): qp_wigner_batch's P_l fused with the sum that follows it in pixel_matrices.c,
 *  every operation the same and in the same order, so the same bits, without storing P_l.
 *  w NULL: sums of 0. */
void qp_wigner_tt_sums(const qp_wigner_table *t, int lo, int hi, const double *w,
                       const double *z, double *sums);

#endif
