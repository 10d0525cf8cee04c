/* cross_dense.h: the QML formulas of QML.md 2-3 and issue 40 evaluated densely, n_pix x n_pix,
 * for the reference test test_cross_reference.c: C^-1 by dpotrf/dpotri, products by dgemm,
 * traces summed directly, no harmonic basis, no chunking, nothing of the stages.
 *
 * Auto (one map set, C = S + N):        Cross (two map sets, C_A = S + N_A, C_B = S + N_B):
 *   E_p = 1/2 C^-1 P_p C^-1                E_p = 1/2 C_A^-1 P_p C_B^-1
 *   F_pq = 1/2 tr(C^-1 P_p C^-1 P_q)       F_pq = 1/2 tr(C_A^-1 P_p C_B^-1 P_q)
 *   y_p = x^T E_p x, b_p = tr(N_eff E_p)   y_p = x_A^T E_p x_B, b_p = 0
 *   Cov(C_hat) = F^-1                      Cov(C_hat) = F^-1 M F^-1, M_pq = Cov(y_p, y_q) =
 *                                            1/4 tr(C_A^-1 P_p C_B^-1 C_AB C_A^-1 P_q C_B^-1 C_AB)
 *                                            + 1/2 F_pq  (C_AB = Cov(x_A, x_B): S for
 *                                            independent noise)
 * and for both C_hat = F^-1 (y - b), W_p,ell = sum_q (F^-1)_pq F_q,ell with F_q,ell the Fisher
 * of parameter q against the unbinned P_ell. The two are separate code on purpose: the cross
 * one with B = A (C_B = C_A, C_AB = C_A, x_B = x_A) must reproduce the auto one, M = F. */
#ifndef QP_TEST_CROSS_DENSE_H
#define QP_TEST_CROSS_DENSE_H

#include <stdint.h>

/** The problem's shape. Matrices are n x n, column-major, symmetric unless said otherwise. */
typedef struct qp_dense_problem {
  int64_t n;         /* data-vector length */
  int n_spectra;     /* requested spectra, in the parameters' (spectrum-major) order */
  int ell_min, lmax; /* the estimated multipoles; the window has each of them per spectrum */
  int n_bins;        /* bins of [ell_min, lmax]: [bin_lo[b], bin_hi[b]] */
  const int *bin_lo, *bin_hi;
  const double *p_ell; /* the unbinned P_ell of every window column (n_window matrices n x n,
                          spectrum-major, ell ascending); binned P_p = sum over its bin */
  int64_t n_maps;
} qp_dense_problem;

/** Columns of the window: n_spectra (lmax - ell_min + 1). */
static inline int qp_dense_n_window(const qp_dense_problem *d) {
  return d->n_spectra * (d->lmax - d->ell_min + 1);
}

/** What the formulas give, laid out as the results file holds it (row-major 2-D datasets). */
typedef struct qp_dense_result {
  int n_params, n_window;
  double *fisher;     /* n_params x n_params */
  double *yb, *cl;    /* n_maps x n_params */
  double *noise_bias; /* n_params (cross: tr(E_p S_fixed), zeros without the switch) */
  double *m;          /* n_params x n_params: Cov(y) (F for auto) */
  double *covariance; /* n_params x n_params */
  double *error;      /* n_params */
  double *window;     /* n_params x n_window */
  double *expect_y;   /* n_params: <y_p> = tr(E_p Cov(x_B, x_A)) under the model */
  double *fixed_y;    /* n_params: tr(E_p S_fixed), the part of <y_p> from the multipoles
                         (lmax, lmax_signal] kept in the model (zeros without the switch) */
  double *f_inv;      /* n_params x n_params: F^-1 */
} qp_dense_result;

/** Auto: c = S + N, n_eff = N + S_fixed (the noise bias's matrix), s_fixed (NULL: none),
 *  x: n x n_maps. Returns 0, or 1 after printing why (a matrix not positive definite). */
int qp_dense_auto(const qp_dense_problem *d, const double *c, const double *n_eff,
                  const double *s_fixed, const double *x, qp_dense_result *r);
/** Cross: c_a, c_b, c_ab = Cov(x_A, x_B) (S for independent noise), s_fixed (NULL: none),
 *  x_a, x_b: n x n_maps each. No noise bias (zeros). Returns 0, or 1 after printing why. */
int qp_dense_cross(const qp_dense_problem *d, const double *c_a, const double *c_b,
                   const double *c_ab, const double *s_fixed, const double *x_a, const double *x_b,
                   qp_dense_result *r);
/** The cross estimator by another road, to check qp_dense_cross: E_p = 1/2 C_A^-1 P_p C_B^-1
 *  formed explicitly, y_p = x_A^T E_p x_B into yb (n_maps x n_params), and Cov(y) as the
 *  covariance of two quadratic forms of one Gaussian vector: with z = (x_A, x_B) ~ N(0, Sigma),
 *  Sigma = [[C_A, C_AB], [C_AB, C_B]], y_p = z^T Q_p z with Q_p = 1/2 [[0, E_p], [E_p^T, 0]]
 *  and Cov(y_p, y_q) = 2 tr(Q_p Sigma Q_q Sigma), formed with the 2n x 2n matrices themselves,
 *  into cov (n_params x n_params). Returns 0, or 1 after printing why. */
int qp_dense_quadratic_cov(const qp_dense_problem *d, const double *c_a, const double *c_b,
                           const double *c_ab, const double *x_a, const double *x_b, double *cov,
                           double *yb);
void qp_dense_free(qp_dense_result *r);

#endif
