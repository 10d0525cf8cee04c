/* cross_dense.c: see cross_dense.h. Everything is plain host memory (malloc): a test's
 * reference, small by construction (n_pix a few hundred). */
#include "cross_dense.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *zeros(int64_t count) {
  double *v = calloc((size_t)(count > 0 ? count : 1), sizeof *v);
  if (!v) {
    fprintf(stderr, "cross_dense: out of memory for %lld values\n", (long long)count);
    abort();
  }
  return v;
}

/* out <- alpha a b (n x n, column-major). */
static void product(int64_t n, double alpha, const double *a, const double *b, double *out) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, alpha, a, (int)n,
              b, (int)n, 0.0, out, (int)n);
}

/* sum_k x_k y_k over n x n entries: tr(x y^T), so tr(x y) when y is given transposed, and
 * tr(x y) itself when either is symmetric. Contiguous, where y_ji read in place would not be. */
static double dot(int64_t n, const double *x, const double *y) {
  return cblas_ddot((int)(n * n), x, 1, y, 1);
}

/* out <- x^T (n x n). */
static void transpose(int64_t n, const double *x, double *out) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      out[j + i * n] = x[i + j * n];
}

/* out <- c^-1 (c symmetric positive definite) by dpotrf and dpotri, both triangles filled. */
static int invert_spd(int64_t n, const double *c, double *out, const char *what) {
  memcpy(out, c, (size_t)(n * n) * sizeof *out);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, out, (lapack_int)n);
  if (info == 0) info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (lapack_int)n, out, (lapack_int)n);
  if (info != 0) {
    fprintf(stderr, "cross_dense: %s (%lld x %lld) is not positive definite: LAPACK info %d\n",
            what, (long long)n, (long long)n, (int)info);
    return 1;
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < j; ++i)
      out[i + j * n] = out[j + i * n];
  return 0;
}

/* The window column (spectrum s, multipole l). */
static int column_of(const qp_dense_problem *d, int s, int l) {
  return s * (d->lmax - d->ell_min + 1) + (l - d->ell_min);
}

/* per_p[p] <- the binned sum over p's bin of per_ell (n_window matrices n x n): per_ell's own
 * matrix for a bin of one multipole, else a new sum in *storage (freed by the caller). */
static void bin_matrices(const qp_dense_problem *d, double *per_ell, double **per_p,
                         double **storage) {
  const int64_t nn = d->n * d->n;
  int wide = 0;
  for (int b = 0; b < d->n_bins; ++b)
    wide += d->bin_hi[b] > d->bin_lo[b];
  *storage = wide ? zeros((int64_t)(wide * d->n_spectra) * nn) : NULL;
  double *next = *storage;
  for (int s = 0; s < d->n_spectra; ++s)
    for (int b = 0; b < d->n_bins; ++b) {
      const int p = s * d->n_bins + b;
      if (d->bin_hi[b] == d->bin_lo[b]) {
        per_p[p] = per_ell + (int64_t)column_of(d, s, d->bin_lo[b]) * nn;
        continue;
      }
      per_p[p] = next;
      next += nn;
      for (int l = d->bin_lo[b]; l <= d->bin_hi[b]; ++l) {
        const double *m = per_ell + (int64_t)column_of(d, s, l) * nn;
        for (int64_t k = 0; k < nn; ++k)
          per_p[p][k] += m[k];
      }
    }
}

static void allocate(const qp_dense_problem *d, qp_dense_result *r) {
  memset(r, 0, sizeof *r);
  const int np = d->n_spectra * d->n_bins, nw = qp_dense_n_window(d);
  r->n_params = np;
  r->n_window = nw;
  r->fisher = zeros(np * np);
  r->yb = zeros(d->n_maps * np);
  r->cl = zeros(d->n_maps * np);
  r->noise_bias = zeros(np);
  r->m = zeros(np * np);
  r->covariance = zeros(np * np);
  r->error = zeros(np);
  r->window = zeros((int64_t)np * nw);
  r->expect_y = zeros(np);
  r->fixed_y = zeros(np);
  r->f_inv = zeros(np * np);
}

/* F^-1 into f_inv; C_hat = F^-1 (y - b) per map and W = F^-1 F_q,ell (fwin: n_params x
 * n_window, row-major). */
static int finish(const qp_dense_problem *d, const double *fwin, double *f_inv,
                  qp_dense_result *r) {
  const int np = r->n_params, nw = r->n_window;
  if (invert_spd(np, r->fisher, f_inv, "F")) return 1;
  for (int64_t m = 0; m < d->n_maps; ++m)
    for (int p = 0; p < np; ++p) {
      double s = 0;
      for (int q = 0; q < np; ++q)
        s += f_inv[p + q * np] * (r->yb[m * np + q] - r->noise_bias[q]);
      r->cl[m * np + p] = s;
    }
  for (int p = 0; p < np; ++p)
    for (int k = 0; k < nw; ++k) {
      double s = 0;
      for (int q = 0; q < np; ++q)
        s += f_inv[p + q * np] * fwin[(int64_t)q * nw + k];
      r->window[(int64_t)p * nw + k] = s;
    }
  return 0;
}

int qp_dense_auto(const qp_dense_problem *d, const double *c, const double *n_eff,
                  const double *s_fixed, const double *x, qp_dense_result *r) {
  allocate(d, r);
  const int64_t n = d->n, nn = n * n;
  const int np = r->n_params, nw = r->n_window;
  double *c_inv = zeros(nn), *a_ell = zeros(nw * nn), *at_ell = zeros(nw * nn), *e = zeros(nn);
  double *ex = zeros(n), *fwin = zeros((int64_t)np * nw), *binned = NULL, *binned_t = NULL;
  double **a = malloc((size_t)np * sizeof *a), **at = malloc((size_t)np * sizeof *at);
  int failed = invert_spd(n, c, c_inv, "C");
  for (int k = 0; !failed && k < nw; ++k) { /* A_ell = C^-1 P_ell and its transpose */
    product(n, 1.0, c_inv, d->p_ell + k * nn, a_ell + k * nn);
    transpose(n, a_ell + k * nn, at_ell + k * nn);
  }
  bin_matrices(d, a_ell, a, &binned);
  bin_matrices(d, at_ell, at, &binned_t);
  for (int p = 0; !failed && p < np; ++p) {
    for (int q = 0; q < np; ++q)
      r->fisher[p + q * np] = 0.5 * dot(n, a[p], at[q]);
    for (int k = 0; k < nw; ++k)
      fwin[(int64_t)p * nw + k] = 0.5 * dot(n, a[p], at_ell + k * nn);
    product(n, 0.5, a[p], c_inv, e); /* E_p = 1/2 C^-1 P_p C^-1 */
    for (int64_t m = 0; m < d->n_maps; ++m) {
      cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, 1.0, e, (int)n, x + m * n, 1, 0.0,
                  ex, 1);
      r->yb[m * np + p] = cblas_ddot((int)n, x + m * n, 1, ex, 1);
    }
    r->noise_bias[p] = dot(n, n_eff, e); /* tr(N_eff E_p): N_eff symmetric */
    r->expect_y[p] = dot(n, c, e);
    r->fixed_y[p] = s_fixed ? dot(n, s_fixed, e) : 0.0;
  }
  if (!failed) failed = finish(d, fwin, r->f_inv, r);
  /* Auto-spectra of Gaussian fields: Cov(y) = F, so Cov(C_hat) = F^-1. */
  memcpy(r->m, r->fisher, (size_t)(np * np) * sizeof *r->m);
  memcpy(r->covariance, r->f_inv, (size_t)(np * np) * sizeof *r->covariance);
  for (int p = 0; p < np; ++p)
    r->error[p] = sqrt(r->covariance[p + p * np]);
  free(c_inv), free(a_ell), free(at_ell), free(e), free(ex), free(fwin), free(binned);
  free(binned_t), free(a), free(at);
  return failed;
}

int qp_dense_cross(const qp_dense_problem *d, const double *c_a, const double *c_b,
                   const double *c_ab, const double *s_fixed, const double *x_a, const double *x_b,
                   qp_dense_result *r) {
  allocate(d, r);
  const int64_t n = d->n, nn = n * n;
  const int np = r->n_params, nw = r->n_window;
  double *ca_inv = zeros(nn), *cb_inv = zeros(nn), *a_ell = zeros(nw * nn);
  double *bt_ell = zeros(nw * nn), *g = zeros(nn), *ht = zeros(nn), *z_b = zeros(n * d->n_maps);
  double *ax = zeros(n), *x = zeros(np * nn), *xt = zeros(nn), *fwin = zeros((int64_t)np * nw);
  double *tmp = zeros(np * np), *a_binned = NULL, *bt_binned = NULL;
  double **a = malloc((size_t)np * sizeof *a), **bt = malloc((size_t)np * sizeof *bt);
  int failed = invert_spd(n, c_a, ca_inv, "C_A") || invert_spd(n, c_b, cb_inv, "C_B");
  /* A_ell = C_A^-1 P_ell; B_ell^T = (C_B^-1 P_ell)^T = P_ell C_B^-1: tr(A_p B_q) = <A_p, B_q^T>. */
  for (int k = 0; !failed && k < nw; ++k) {
    product(n, 1.0, ca_inv, d->p_ell + k * nn, a_ell + k * nn);
    product(n, 1.0, d->p_ell + k * nn, cb_inv, bt_ell + k * nn);
  }
  bin_matrices(d, a_ell, a, &a_binned);
  bin_matrices(d, bt_ell, bt, &bt_binned);
  /* G = C_B^-1 C_AB, so X_p = C_A^-1 P_p C_B^-1 C_AB = A_p G = 2 E_p C_AB; H^T = S_fixed C_B^-1;
   * z_B = C_B^-1 x_B, so y_p = 1/2 x_A^T A_p z_B. */
  product(n, 1.0, cb_inv, c_ab, g);
  if (s_fixed) product(n, 1.0, s_fixed, cb_inv, ht);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)d->n_maps, (int)n, 1.0,
              cb_inv, (int)n, x_b, (int)n, 0.0, z_b, (int)n);
  for (int p = 0; !failed && p < np; ++p) {
    for (int q = 0; q < np; ++q)
      r->fisher[p + q * np] = 0.5 * dot(n, a[p], bt[q]);
    for (int k = 0; k < nw; ++k)
      fwin[(int64_t)p * nw + k] = 0.5 * dot(n, a[p], bt_ell + k * nn);
    product(n, 1.0, a[p], g, x + p * nn);
    for (int64_t m = 0; m < d->n_maps; ++m) {
      cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, 1.0, a[p], (int)n, z_b + m * n, 1,
                  0.0, ax, 1);
      r->yb[m * np + p] = 0.5 * cblas_ddot((int)n, x_a + m * n, 1, ax, 1);
    }
    double t = 0;
    for (int64_t i = 0; i < n; ++i)
      t += x[p * nn + i + i * n];
    r->expect_y[p] = 0.5 * t; /* tr(E_p C_AB) = 1/2 tr(X_p) */
    r->fixed_y[p] = s_fixed ? 0.5 * dot(n, a[p], ht) : 0.0;
  }
  for (int q = 0; !failed && q < np; ++q) { /* M_pq = 1/4 tr(X_p X_q) + 1/2 F_pq */
    transpose(n, x + q * nn, xt);
    for (int p = 0; p < np; ++p)
      r->m[p + q * np] = 0.25 * dot(n, x + p * nn, xt) + 0.5 * r->fisher[p + q * np];
  }
  /* The bias of cross-spectra: no noise (independent), but S_fixed's part of <y> with the
   * switch, tr(E_p S_fixed) (zeros without it), as qmlpipe subtracts it (docs/science.md). */
  for (int p = 0; p < np; ++p)
    r->noise_bias[p] = r->fixed_y[p];
  if (!failed) failed = finish(d, fwin, r->f_inv, r);
  if (!failed) { /* covariance = F^-1 M F^-1 */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, np, np, np, 1.0, r->f_inv, np, r->m, np,
                0.0, tmp, np);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, np, np, np, 1.0, tmp, np, r->f_inv, np,
                0.0, r->covariance, np);
    for (int p = 0; p < np; ++p)
      r->error[p] = sqrt(r->covariance[p + p * np]);
  }
  free(ca_inv), free(cb_inv), free(a_ell), free(bt_ell), free(g), free(ht), free(z_b), free(ax);
  free(x), free(xt), free(fwin), free(tmp), free(a_binned), free(bt_binned), free(a), free(bt);
  return failed;
}

int qp_dense_quadratic_cov(const qp_dense_problem *d, const double *c_a, const double *c_b,
                           const double *c_ab, const double *x_a, const double *x_b, double *cov,
                           double *yb) {
  const int64_t n = d->n, nn = n * n, n2 = 2 * n;
  const int np = d->n_spectra * d->n_bins;
  double *ca_inv = zeros(nn), *cb_inv = zeros(nn), *p_p = zeros(nn), *t = zeros(nn);
  double *e = zeros(nn), *ex = zeros(n), *sigma = zeros(n2 * n2), *qs = zeros(np * n2 * n2);
  double *q = zeros(n2 * n2), *qt = zeros(n2 * n2);
  const int failed = invert_spd(n, c_a, ca_inv, "C_A") || invert_spd(n, c_b, cb_inv, "C_B");
  if (failed) goto done;
  for (int64_t j = 0; j < n; ++j) /* Sigma = [[C_A, C_AB], [C_AB^T, C_B]] */
    for (int64_t i = 0; i < n; ++i) {
      sigma[i + j * n2] = c_a[i + j * n];
      sigma[(i + n) + (j + n) * n2] = c_b[i + j * n];
      sigma[i + (j + n) * n2] = c_ab[i + j * n];
      sigma[(i + n) + j * n2] = c_ab[j + i * n];
    }
  for (int s = 0; s < d->n_spectra; ++s)
    for (int b = 0; b < d->n_bins; ++b) {
      const int p = s * d->n_bins + b;
      memset(p_p, 0, (size_t)nn * sizeof *p_p);
      for (int l = d->bin_lo[b]; l <= d->bin_hi[b]; ++l)
        for (int64_t k = 0; k < nn; ++k)
          p_p[k] += d->p_ell[(int64_t)column_of(d, s, l) * nn + k];
      product(n, 1.0, ca_inv, p_p, t);
      product(n, 0.5, t, cb_inv, e);            /* E_p = 1/2 C_A^-1 P_p C_B^-1 */
      for (int64_t m = 0; m < d->n_maps; ++m) { /* y_p = x_A^T E_p x_B */
        cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, 1.0, e, (int)n, x_b + m * n, 1,
                    0.0, ex, 1);
        yb[m * np + p] = cblas_ddot((int)n, x_a + m * n, 1, ex, 1);
      }
      memset(q, 0, (size_t)(n2 * n2) * sizeof *q);
      for (int64_t j = 0; j < n; ++j) /* Q_p = 1/2 [[0, E_p], [E_p^T, 0]] */
        for (int64_t i = 0; i < n; ++i) {
          q[i + (j + n) * n2] = 0.5 * e[i + j * n];
          q[(j + n) + i * n2] = 0.5 * e[i + j * n];
        }
      product(n2, 1.0, q, sigma, qs + p * n2 * n2);
    }
  for (int k = 0; k < np; ++k) {
    transpose(n2, qs + k * n2 * n2, qt);
    for (int p = 0; p < np; ++p)
      cov[p + k * np] = 2.0 * dot(n2, qs + p * n2 * n2, qt);
  }
done:
  free(ca_inv), free(cb_inv), free(p_p), free(t), free(e), free(ex), free(sigma), free(qs);
  free(q), free(qt);
  return failed;
}

void qp_dense_free(qp_dense_result *r) {
  free(r->fisher), free(r->yb), free(r->cl), free(r->noise_bias), free(r->m);
  free(r->covariance), free(r->error), free(r->window), free(r->expect_y), free(r->fixed_y);
  free(r->f_inv);
  memset(r, 0, sizeof *r);
}
