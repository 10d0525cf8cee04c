/* stage_fisher.c: fisher_run: M_p = L^-1 P_p L^-T for every parameter, the whitened noise
 * L^-1 N L^-T beside them, and F and b from one Gram matrix of the stacked products. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conditioning.h"
#include "fisher_terms.h"
#include "harmonic_route.h"
#include "host_window.h"
#include "pixel_matrices.h"
#include "progress.h"
#include "stages.h"
#include "test_hooks.h"
#include "window.h"

/* slot <- L^-1 N_eff L^-T, N_eff = N + S_fixed: with lmax < lmax_signal the multipoles
 * (lmax, lmax_signal] are in C but not estimated, so <y_p> = sum_q F_pq C_q + tr(N_eff E_p)
 * and the bias removes them with the noise (QML.md 3, the switch). For a diagonal N and no
 * switch, D L^-T is made from the transpose of L^-1 (entry (i,j) is d_i L^-1_ji), leaving one
 * triangular product; otherwise N_eff is formed in the slot and takes two. */
static qp_err qp_whiten_noise(qp_problem *p, qp_matrix *slot) {
  const qp_config *cfg = p->cfg;
  const int switched = p->plan->switched;
  if (p->noise_variance && !switched) {
    /* D L^-T from the transpose of L^-1 (the strictly lower part of that transpose is C's
     * untouched upper triangle: zeroed), row i scaled by d_i. */
    QP_CALL(qp_linalg_transpose(&p->cov, slot));
    /* Through windows of the plan's host panel (problem.h), as the products are built. */
    for (int64_t col0 = 0, cols; col0 < slot->local_cols; col0 += cols) {
      cols = qp_host_panel_width(p, slot->local_cols, col0);
      qp_host_window w;
      QP_CALL(qp_host_window_open(slot, col0, cols, QP_ACCESS_READ_WRITE, &w));
      for (int64_t k = 0; k < cols; ++k) {
        const int64_t j = qp_matrix_global_col(slot, col0 + k);
        for (int64_t li = 0; li < slot->local_rows; ++li) {
          const int64_t i = qp_matrix_global_row(slot, li);
          double *x = w.data + li + k * w.ld;
          *x = j >= i ? p->noise_variance[i] * *x : 0.0;
        }
      }
      QP_CALL(qp_host_window_close(&w));
    }
    QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, slot));
    return QP_OK;
  }
  /* The slot is fresh (zeros): N_eff goes in, then the two triangular products. */
  QP_CALL(qp_pixel_noise_plus_signal(p, slot, switched ? cfg->lmax + 1 : 1,
                                     switched ? cfg->lmax_signal : 0));
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, slot));
  QP_CALL(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &p->cov, slot));
  return QP_OK;
}

/* slot <- L_A^-1 S_fixed L_B^-T (S_fixed: the multipoles (lmax, lmax_signal] held fixed, QML.md
 * 3), or zeros without the switch: what cross-spectra's y holds besides F C (docs/science.md). */
static qp_err qp_cross_fixed_signal(qp_problem *p, qp_matrix *slot) {
  QP_CALL(qp_matrix_set_identity(slot, 0.0));
  if (!p->plan->switched) return QP_OK;
  QP_CALL(qp_pixel_signal(p, slot, p->cfg->lmax + 1, p->cfg->lmax_signal));
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, slot));
  QP_CALL(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &p->cov_b, slot));
  return QP_OK;
}

/* The largest leading dimension handed to BLAS here: INT_MAX for Debian's 32-bit OpenBLAS.
 * QP_TEST_BLAS_INT_MAX (a test hook, docs/numerical-checks.md) lowers it, so that the path
 * above it runs on problems small enough for CTest. */
static int64_t qp_blas_ld_max(void) {
  static int warned = 0;
  const char *hook = qp_test_hook("QP_TEST_BLAS_INT_MAX"); /* NULL in qmlpipe */
  if (!hook) return INT_MAX;
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(hook, &end, 10);
  if (errno == 0 && end != hook && *end == '\0' && v > 0 && v < INT_MAX) return (int64_t)v;
  if (!warned) {
    warned = 1;
    fprintf(stderr,
            "qmlpipe: QP_TEST_BLAS_INT_MAX '%s' is not a whole number from 1 to %d: "
            "ignored\n",
            hook, INT_MAX - 1);
  }
  return INT_MAX;
}

/* out <- A^T B without BLAS, for stacked products whose stride (the leading dimension BLAS
 * would see, n_pix^2 or this rank's share) passes the 32-bit integer: n_pix > 46340 on one
 * process. Rows go in blocks of 2048 (each block of every column stays in cache), the pairs
 * of columns are shared among the threads statically, so every entry is summed in the same
 * order whatever the thread count. A level-1 rate: ~n_params/(4 n_pix) of the stage's time. */
static void qp_product_dots_unblas(int64_t rows, const double *a, int64_t cols, const double *b,
                                   int64_t b_cols, int symmetric, qp_matrix *out) {
  const int64_t block = 2048, pairs = cols * b_cols;
  for (int64_t j = 0; j < b_cols; ++j)
    for (int64_t i = 0; i < cols; ++i)
      out->data[i + j * out->ld] = 0.0;
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t nr = rows - r0 < block ? rows - r0 : block;
#pragma omp parallel for schedule(static)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      const int64_t i = pair % cols, j = pair / cols;
      if (symmetric && i < j) continue; /* mirrored below */
      const double *x = a + i * rows + r0, *y = b + j * rows + r0;
      double s = 0.0;
#pragma omp simd reduction(+ : s)
      for (int64_t r = 0; r < nr; ++r)
        s += x[r] * y[r];
      out->data[i + j * out->ld] += s;
    }
  }
  if (symmetric)
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < j; ++i)
        out->data[i + j * out->ld] = out->data[j + i * out->ld];
}

/* out <- A^T B for A = columns [0, cols) of the stack of products (each column one product's
 * local elements) and B = `b_cols` columns from b_first. B == A (b_first 0, b_cols == cols) is
 * a syrk (the Gram matrix). BLAS sees the stride between products as the leading dimension:
 * above the 32-bit limit of a host BLAS the dots are summed without it
 * (qp_product_dots_unblas). Distributed, each rank dots its own elements and one sum over the
 * ranks gives the Frobenius products (qp_gram_read): the distributed trace of a product is
 * this one reduction. `out` lives where the stack does. */
static qp_err qp_product_dots(const qp_linalg_ops *ops, const qp_matrix *stack, int64_t cols,
                              int64_t b_first, int64_t b_cols, qp_matrix *out) {
  const int symmetric = b_first == 0 && cols == b_cols;
  const int64_t rows = stack->rows;
  if (rows > qp_blas_ld_max() && !qp_linalg_on_device(ops)) {
    const double *a = stack->data, *b = stack->data + b_first * stack->ld;
    qp_product_dots_unblas(rows, a, cols, b, b_cols, symmetric, out);
    qp_stage_add_flops(2.0 * (double)rows * (double)cols * (double)b_cols);
  } else if (rows == 0) {
    QP_CALL(qp_matrix_set_identity(out, 0.0));
  } else {
    qp_matrix va, vb;
    QP_CALL(qp_matrix_columns(stack, 0, cols, &va));
    if (symmetric) {
      QP_CALL(qp_linalg_syrk(QP_TRANS, 1.0, &va, 0.0, out));
    } else {
      QP_CALL(qp_matrix_columns(stack, b_first, b_cols, &vb));
      QP_CALL(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &va, &vb, 0.0, out));
    }
  }
  return QP_OK;
}

/* A host window on the dots `out` of qp_product_dots, summed over the ranks (a no-op where one
 * process holds the whole matrices): in the window, since `out` may be on the device. */
static qp_err qp_gram_read(const qp_linalg_ops *ops, const qp_matrix *out, qp_host_window *w) {
  QP_CALL(qp_host_window_read(out, 0, out->cols, w));
  QP_CALL(qp_linalg_sum_partials(ops, w->data, w->ld * out->cols));
  return QP_OK;
}

/* Slot j of the stack <- M_q = L^-1 P_q L^-T, P_q already in the slot; for cross-spectra
 * M_q = L_A^-1 P_q L_B^-T, whose Frobenius products are 2 F_pq = tr(C_A^-1 P_p C_B^-1 P_q)
 * just the same (docs/science.md). */
static qp_err qp_whiten_product(qp_problem *p, const qp_matrix *stack, int64_t j) {
  const int64_t n = p->n_pix;
  const qp_matrix *right = p->plan->model_dims.cross_maps ? &p->cov_b : &p->cov;
  qp_matrix slot;
  QP_CALL(qp_matrix_stack_slot(stack, j, p->ops, QP_TERM_PRODUCTS, n, n, &slot));
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov, &slot));
  QP_CALL(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, right, &slot));
  return QP_OK;
}

/* r <- R = L_B^-1 S L_A^-T (r zeros, n_pix^2): S the covariance of the two map sets, whitened
 * so that tr(C_A^-1 P_p C_B^-1 S C_A^-1 P_q C_B^-1 S) = tr(G_p R G_q R) for the products
 * G_p = L_A^-1 P_p L_B^-T (L_A^-T moved round the trace). */
static qp_err qp_cross_whitened_signal(qp_problem *p, qp_matrix *r) {
  QP_CALL(qp_pixel_signal(p, r, p->cfg->ell_min, p->cfg->lmax_signal));
  QP_CALL(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &p->cov_b, r));
  QP_CALL(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &p->cov, r));
  return QP_OK;
}

/* Chunked cross-spectra (fisher_chunk < n_params): T's entries between the chunk (slots
 * 0..count-1, products G_p of parameters first..) and parameter q, whose G_q is in slot `from`:
 * 4 T_pq = tr(G_p R G_q R) = <G_p, X_q>, X_q = (R G_q R)^T, so the chunk's products stay as
 * they are (F's streaming and the window's Y_q need them). G_q R goes to the scratch slot
 * k + 2, R (G_q R) to slot k + 1 (free, or G_q's own: read already), its transpose to k + 2,
 * dotted with the chunk: 4 n^3 a product where the unchunked K_p = G_p R cost 2 n^3, the price
 * of holding fewer of them. Raw 4 T in y_covariance (column q; row q too outside the chunk). */
static qp_err qp_cross_t_column(qp_problem *p, const qp_matrix *stack, const qp_matrix *r,
                                int64_t first, int64_t count, int64_t from, int64_t q,
                                double *gram) {
  const int64_t n = p->n_pix, np = p->n_params, k = p->plan->model_dims.fisher_chunk;
  qp_matrix g, v, x, dots;
  qp_host_window seen = {0};
  QP_CALL(qp_matrix_stack_slot(stack, from, p->ops, QP_TERM_PRODUCTS, n, n, &g));
  QP_CALL(qp_matrix_stack_slot(stack, k + 1, p->ops, QP_TERM_PRODUCTS, n, n, &v));
  QP_CALL(qp_matrix_stack_slot(stack, k + 2, p->ops, QP_TERM_PRODUCTS, n, n, &x));
  QP_CALL(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &g, r, 0.0, &x));
  QP_CALL(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, r, &x, 0.0, &v));
  QP_CALL(qp_linalg_transpose(&v, &x));
  QP_CALL(qp_matrix_view(qp_linalg_local_ops(p->ops), QP_TERM_GRAM, gram, count, 1, count, &dots));
  QP_CALL(qp_product_dots(p->ops, stack, count, k + 2, 1, &dots));
  QP_CALL(qp_gram_read(p->ops, &dots, &seen));
  for (int64_t a = 0; a < count; ++a) {
    p->y_covariance[(first + a) + q * np] = seen.data[a];
    if (q >= first + count) p->y_covariance[q + (first + a) * np] = seen.data[a];
  }
  qp_host_window_discard(&seen);
  return QP_OK;
}

/* M = T + F / 2 from the raw 4 T in y_covariance, made exactly symmetric (tr(K_p K_q) =
 * tr(K_q K_p) but for rounding). */
static void qp_cross_finish_y_covariance(qp_problem *p) {
  const int64_t np = p->n_params;
  for (int64_t q = 0; q < np; ++q)
    for (int64_t a = 0; a <= q; ++a) {
      const double t = 0.5 * (p->y_covariance[a + q * np] + p->y_covariance[q + a * np]);
      p->y_covariance[a + q * np] = p->y_covariance[q + a * np] =
          0.25 * t + 0.5 * p->fisher[a + q * np];
    }
}

/* Cross-spectra: M = Cov(y) (docs/science.md), with every parameter's product in the stack (no
 * chunks: planner_chunks.c) and slot k free (its noise slot: the bias was summed):
 *   4 T_pq = tr(C_A^-1 P_p C_B^-1 S C_A^-1 P_q C_B^-1 S) = tr(K_p K_q),
 * S the covariance of the two map sets, Cov(x_A, x_B). The stack holds either Y_p = C_A^-1 P_p
 * C_B^-1 (`whitened` 0: the window functions made them), K_p = Y_p S, or the products
 * G_p = L_A^-1 P_p L_B^-T themselves, K_p = G_p R with R = L_B^-1 S L_A^-T (the same trace,
 * L_A^-T moved round): R costs two trmm once where each Y_p costs two, a third of fisher_run
 * (T nside 16 unbinned, docs/benchmarks.md). Each becomes K_p in place (one gemm through slot
 * k), then K_q^T goes to slot k and one column of dots with the stack gives T's column q:
 * M_pq = T_pq + F_pq / 2. */
static qp_err qp_cross_y_covariance(qp_problem *p, const qp_matrix *products, int whitened,
                                    double *gram) {
  const qp_config *cfg = p->cfg;
  const int64_t n = p->n_pix, np = p->n_params, k = p->plan->model_dims.fisher_chunk;
  QP_CHECK(k == np, QP_ERR_INTERNAL,
           "cross-spectra's covariance needs every product at once "
           "(chunk %lld of %lld)",
           (long long)k, (long long)np);
  qp_err err = QP_OK;
  qp_matrix h = {0}, temp, dots;
  qp_host_window seen = {0};
  QP_CALL(qp_matrix_create(p->ops, QP_TERM_CROSS_SIGNAL, QP_TERM_TRANSIENT, n, n, &h));
  if (whitened)
    QP_CALL_GOTO(qp_cross_whitened_signal(p, &h), done);
  else
    QP_CALL_GOTO(qp_pixel_signal(p, &h, cfg->ell_min, cfg->lmax_signal), done);
  QP_CALL_GOTO(qp_matrix_stack_slot(products, k, p->ops, QP_TERM_PRODUCTS, n, n, &temp), done);
  for (int64_t j = 0; j < np; ++j) {
    qp_matrix slot;
    QP_CALL_GOTO(qp_matrix_stack_slot(products, j, p->ops, QP_TERM_PRODUCTS, n, n, &slot), done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &slot, &h, 0.0, &temp), done);
    QP_CALL_GOTO(qp_linalg_copy_sub(n, n, &temp, 0, 0, &slot, 0, 0), done);
  }
  const qp_linalg_ops *local = qp_linalg_local_ops(p->ops);
  QP_CALL_GOTO(qp_matrix_view(local, QP_TERM_GRAM, gram, np, 1, np, &dots), done);
  for (int64_t q = 0; q < np; ++q) {
    qp_matrix slot;
    QP_CALL_GOTO(qp_matrix_stack_slot(products, q, p->ops, QP_TERM_PRODUCTS, n, n, &slot), done);
    QP_CALL_GOTO(qp_linalg_transpose(&slot, &temp), done);
    QP_CALL_GOTO(qp_product_dots(p->ops, products, np, k, 1, &dots), done);
    QP_CALL_GOTO(qp_gram_read(p->ops, &dots, &seen), done);
    for (int64_t a = 0; a < np; ++a)
      p->y_covariance[a + q * np] = seen.data[a];
    qp_host_window_discard(&seen);
  }
  qp_cross_finish_y_covariance(p);
done:
  qp_host_window_discard(&seen);
  qp_matrix_destroy(&h);
  return err;
}

/* Whether the parameters are the window's columns already (bins of one multipole each, over
 * [ell_min, lmax]): then F_(q,ell) is F. */
static int qp_bins_unit(const qp_problem *p) {
  if (p->n_bins != p->cfg->lmax - p->cfg->ell_min + 1) return 0;
  for (int b = 0; b < p->n_bins; ++b)
    if (p->bin_lo[b] != p->cfg->ell_min + b || p->bin_hi[b] != p->bin_lo[b]) return 0;
  return 1;
}

/* The chunk's products G_q = L_A^-1 P_q L_B^-T (slots 0 .. count - 1) <- Y_q = L_A^-T G_q L_B^-1
 * = C_A^-1 P_q C_B^-1, in place, once F and the bias are summed: what the window's dots and
 * cross-spectra's covariance are made from. */
static qp_err qp_products_to_y(qp_problem *p, const qp_matrix *stack, int64_t count) {
  const int64_t n = p->n_pix;
  const qp_matrix *right = p->plan->model_dims.cross_maps ? &p->cov_b : &p->cov;
  for (int64_t j = 0; j < count; ++j) {
    qp_matrix slot;
    QP_CALL(qp_matrix_stack_slot(stack, j, p->ops, QP_TERM_PRODUCTS, n, n, &slot));
    QP_CALL(qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &p->cov, &slot));
    QP_CALL(qp_linalg_trmm(QP_RIGHT, QP_NOTRANS, 1.0, right, &slot));
  }
  return QP_OK;
}

/* out (count x cnt, whole on every rank where the stacks are) <- A^T B for A = the first
 * `count` columns of stack `a` and B = the first `cnt` of stack `b` (each column one matrix's
 * local elements, the same layout): Frobenius products, summed over the ranks by
 * qp_gram_read. Above a host BLAS's 32-bit limit, without it (qp_product_dots_unblas). */
static qp_err qp_stack_dots(const qp_linalg_ops *ops, const qp_matrix *a, int64_t count,
                            const qp_matrix *b, int64_t cnt, qp_matrix *out) {
  if (a->rows > qp_blas_ld_max() && !qp_linalg_on_device(ops)) {
    qp_product_dots_unblas(a->rows, a->data, count, b->data, cnt, 0, out);
    qp_stage_add_flops(2.0 * (double)a->rows * (double)count * (double)cnt);
  } else if (a->rows == 0) {
    QP_CALL(qp_matrix_set_identity(out, 0.0));
  } else {
    qp_matrix va, vb;
    QP_CALL(qp_matrix_columns(a, 0, count, &va));
    QP_CALL(qp_matrix_columns(b, 0, cnt, &vb));
    QP_CALL(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &va, &vb, 0.0, out));
  }
  return QP_OK;
}

/* F_(q,ell) = 1/2 tr(Y_q P_ell) = 1/2 <Y_q, P_ell> for the chunk's parameters first .. first +
 * count - 1, whose Y_q are in the stack's first slots (qp_products_to_y): the unbinned P_ell
 * built a batch at a time into `window` (qp_fisher_window_batch: one pass over the pairs a
 * batch) and dotted with them (one gemm a batch, `gram` whole on every rank). */
static qp_err qp_pixel_window_dots(qp_problem *p, const qp_problem *wp, const qp_matrix *stack,
                                   int64_t first, int64_t count, const qp_matrix *window,
                                   double *gram) {
  const int64_t np = p->n_params, batch = window->cols;
  QP_CHECK(batch > 0, QP_ERR_INTERNAL, "fisher_run: the window functions have no slots (%lld)",
           (long long)batch);
  const qp_linalg_ops *local = qp_linalg_local_ops(p->ops);
  qp_host_window seen = {0};
  qp_err err = QP_OK;
  for (int64_t u0 = 0; u0 < wp->n_params; u0 += batch) {
    const int64_t cnt = wp->n_params - u0 < batch ? wp->n_params - u0 : batch;
    qp_matrix dots;
    QP_CALL_GOTO(qp_pixel_build_slots(wp, window, 0, u0, cnt, QP_TERM_WINDOW_SLOTS), done);
    QP_CALL_GOTO(qp_matrix_view(local, QP_TERM_GRAM, gram, count, cnt, count, &dots), done);
    QP_CALL_GOTO(qp_stack_dots(p->ops, stack, count, window, cnt, &dots), done);
    QP_CALL_GOTO(qp_gram_read(p->ops, &dots, &seen), done);
    for (int64_t c = 0; c < cnt; ++c)
      for (int64_t a = 0; a < count; ++a)
        p->fisher_ell[(first + a) + (u0 + c) * np] = 0.5 * seen.data[a + c * seen.ld];
    qp_host_window_discard(&seen);
  }
done:
  qp_host_window_discard(&seen);
  return err;
}

static qp_err qp_pixel_fisher_run(qp_problem *p);

qp_err qp_stage_fisher_run(qp_problem *p) {
  if (p->plan->path_used == QP_PATH_HARMONIC)
    QP_CALL(qp_harmonic_fisher_run(p));
  else
    QP_CALL(qp_pixel_fisher_run(p));
  /* A NaN anywhere upstream (C, L^-1, V, W) ends up here: stop before spectra_run. */
  const int64_t np = p->n_params;
  QP_CALL(qp_check_finite(p->fisher, np * np, "fisher_run", "the Fisher matrix F (/fisher)"));
  QP_CALL(
      qp_check_finite(p->noise_bias, np, "fisher_run", "the noise bias b (/spectra/noise_bias)"));
  if (p->y_covariance)
    QP_CALL(
        qp_check_finite(p->y_covariance, np * np, "fisher_run", "the covariance M of the cross y"));
  return QP_OK;
}

/* Chunked: the products of one chunk of k parameters are held in slots 0..k-1 with the
 * whitened noise in slot k; their Gram matrix (one syrk) gives F inside the chunk and b.
 * Every later parameter is then formed in the streaming slot k+1 and dotted with the chunk
 * (one gemm), which gives F between the chunk and it. With k = n_params (the planner's choice
 * whenever memory allows) there is one chunk and no streaming: each M_p is formed once;
 * with smaller k the later products are formed again, ~n_params^2 / (2k) extra. */
static qp_err qp_pixel_fisher_run(qp_problem *p) {
  qp_err err = QP_OK;
  const int64_t n = p->n_pix, np = p->n_params, k = p->plan->model_dims.fisher_chunk;
  const int streaming = k < np;
  /* chunked cross-spectra: a scratch slot for X_q (qp_cross_t_column) */
  const int chunked_cross = streaming && p->plan->model_dims.cross_maps;
  const int64_t slots = k + 1 + streaming + chunked_cross;
  const int64_t stride = qp_matrix_local_size(&p->cov); /* n^2, or this rank's part */
  const qp_linalg_ops *local = qp_linalg_local_ops(p->ops);
  qp_matrix products = {0}, gram = {0}, window = {0}, cross, dots, r = {0};
  qp_host_window seen = {0};
  /* The window's unbinned products, formed once per chunk unless the bins are unit already. */
  const int windows = qp_window_count(p) > 0, unit = qp_bins_unit(p);
  qp_problem wp = {0};
  QP_CALL(qp_window_problem(p, &wp));
  long total = 0; /* products formed: each once, plus the streamed ones again */
  for (int64_t first = 0; first < np; first += k)
    total += (long)(np - first);
  qp_progress progress;
  qp_progress_start(&progress, p->progress, "fisher_run", "products", total);
  QP_CALL_GOTO(QP_ALLOC_DOUBLES(QP_TERM_FISHER, QP_TERM_PERSISTENT, np * np, &p->fisher), done);
  QP_CALL_GOTO(QP_ALLOC_DOUBLES(QP_TERM_NOISE_BIAS, QP_TERM_PERSISTENT, np, &p->noise_bias), done);
  if (p->plan->model_dims.cross_maps)
    QP_CALL_GOTO(
        QP_ALLOC_DOUBLES(QP_TERM_Y_COVARIANCE, QP_TERM_PERSISTENT, np * np, &p->y_covariance),
        done);
  if (windows)
    QP_CALL_GOTO(
        QP_ALLOC_DOUBLES(QP_TERM_FISHER_ELL, QP_TERM_PERSISTENT, np * wp.n_params, &p->fisher_ell),
        done);
  /* Slot j of the stack holds one product's local elements: the chunk's k, the whitened noise
   * at k, the streamed one at k + 1. */
  QP_CALL_GOTO(
      qp_matrix_create(local, QP_TERM_PRODUCTS, QP_TERM_TRANSIENT, stride, slots, &products), done);
  /* The Gram matrix of chunk + noise, and beside it one column of dots with the stream: small,
   * whole on every rank, where the products are. */
  QP_CALL_GOTO(qp_matrix_create(local, QP_TERM_GRAM, QP_TERM_TRANSIENT, k + 1, k + 2, &gram), done);
  /* The window functions' unbinned P_ell, a batch at a time (fisher_terms.h). */
  const int64_t window_batch = qp_fisher_window_batch(&p->plan->model_dims);
  if (window_batch > 1)
    QP_CALL_GOTO(qp_matrix_create(local, QP_TERM_WINDOW_SLOTS, QP_TERM_TRANSIENT, stride,
                                  window_batch, &window),
                 done);
  qp_progress_note(&progress, "products allocated");
  qp_matrix noise_view;
  QP_CALL_GOTO(qp_matrix_stack_slot(&products, k, p->ops, QP_TERM_PRODUCTS, n, n, &noise_view),
               done);
  /* Cross-spectra have no noise bias (independent noises) but S_fixed's with the switch:
   * b_p = 1/2 tr(C_A^-1 P_p C_B^-1 S_fixed) = 1/2 <G_p, L_A^-1 S_fixed L_B^-T>. */
  if (p->plan->model_dims.cross_maps)
    QP_CALL_GOTO(qp_cross_fixed_signal(p, &noise_view), done);
  else
    QP_CALL_GOTO(qp_whiten_noise(p, &noise_view), done);
  if (chunked_cross) {
    QP_CALL_GOTO(qp_matrix_create(p->ops, QP_TERM_CROSS_SIGNAL, QP_TERM_TRANSIENT, n, n, &r), done);
    QP_CALL_GOTO(qp_cross_whitened_signal(p, &r), done);
  }
  long formed = 0;
  for (int64_t first = 0; first < np; first += k) {
    const int64_t count = np - first < k ? np - first : k;
    QP_CALL_GOTO(qp_pixel_build_slots(p, &products, 0, first, count, QP_TERM_PRODUCTS), done);
    for (int64_t j = 0; j < count; ++j) {
      QP_CALL_GOTO(qp_whiten_product(p, &products, j), done);
      qp_progress_step(&progress, ++formed);
    }
    /* The noise right after the chunk's last product, [M_first.., N_white], for one syrk: a
     * short last chunk takes a copy of it (its old slots are free). */
    if (count < k)
      QP_CALL_GOTO(qp_linalg_copy_sub(stride, 1, &products, 0, k, &products, 0, count), done);
    QP_CALL_GOTO(
        qp_matrix_view(local, QP_TERM_GRAM, gram.data, count + 1, count + 1, count + 1, &cross),
        done);
    QP_CALL_GOTO(qp_product_dots(p->ops, &products, count + 1, 0, count + 1, &cross), done);
    QP_CALL_GOTO(qp_gram_read(p->ops, &cross, &seen), done);
    for (int64_t a = 0; a < count; ++a) {
      for (int64_t b = 0; b < count; ++b)
        p->fisher[(first + a) + (first + b) * np] = 0.5 * seen.data[a + b * seen.ld];
      p->noise_bias[first + a] = 0.5 * seen.data[a + count * seen.ld];
    }
    qp_host_window_discard(&seen);
    for (int64_t j = 0; chunked_cross && j < count; ++j)
      QP_CALL_GOTO(qp_cross_t_column(p, &products, &r, first, count, j, first + j, gram.data),
                   done);
    for (int64_t q = first + count; q < np; ++q) {
      QP_CALL_GOTO(qp_pixel_build_slots(p, &products, k + 1, q, 1, QP_TERM_PRODUCTS), done);
      QP_CALL_GOTO(qp_whiten_product(p, &products, k + 1), done);
      QP_CALL_GOTO(qp_matrix_view(local, QP_TERM_GRAM, gram.data + (k + 1) * (k + 1), count, 1,
                                  count, &dots),
                   done);
      QP_CALL_GOTO(qp_product_dots(p->ops, &products, count, k + 1, 1, &dots), done);
      qp_progress_step(&progress, ++formed);
      QP_CALL_GOTO(qp_gram_read(p->ops, &dots, &seen), done);
      for (int64_t a = 0; a < count; ++a)
        p->fisher[(first + a) + q * np] = p->fisher[q + (first + a) * np] = 0.5 * seen.data[a];
      qp_host_window_discard(&seen);
      if (chunked_cross)
        QP_CALL_GOTO(qp_cross_t_column(p, &products, &r, first, count, k + 1, q,
                                       gram.data + (k + 1) * (k + 1)),
                     done);
    }
    /* The window's dots with this chunk (its F and b are summed: its products become Y_q);
     * cross-spectra's covariance then takes the Y_q, else the products (qp_cross_y_covariance). */
    if (windows && !unit) QP_CALL_GOTO(qp_products_to_y(p, &products, count), done);
    if (windows && !unit) {
      /* A batch of 1 is built in the products' spare slot: the streaming one, or the noise's
       * when there is one chunk (its bias is summed). */
      qp_matrix spare = window;
      if (window_batch <= 1)
        QP_CALL_GOTO(qp_matrix_columns(&products, streaming ? k + 1 : k, 1, &spare), done);
      QP_CALL_GOTO(qp_pixel_window_dots(p, &wp, &products, first, count, &spare, gram.data), done);
    }
  }
  qp_progress_note(&progress, unit ? "F_(q,ell) is F (bins of one multipole)"
                                   : "F_(q,ell) for the window functions");
  if (unit) memcpy(p->fisher_ell, p->fisher, (size_t)(np * np) * sizeof *p->fisher);
  qp_progress_note(&progress, "Fisher matrix and noise bias");
  if (chunked_cross) {
    qp_cross_finish_y_covariance(p);
    qp_progress_note(&progress, "covariance of the cross y, chunk by chunk");
  } else if (p->plan->model_dims.cross_maps) {
    QP_CALL_GOTO(qp_cross_y_covariance(p, &products, !(windows && !unit), gram.data), done);
    qp_progress_note(&progress, "covariance of the cross y");
  }
done:
  qp_matrix_destroy(&r);
  qp_host_window_discard(&seen);
  qp_window_problem_free(&wp);
  qp_matrix_destroy(&window);
  qp_matrix_destroy(&gram);
  qp_matrix_destroy(&products);
  /* N is not needed after the noise bias (model: freed in fisher_run). */
  qp_budget_free(p->noise_variance);
  p->noise_variance = NULL;
  qp_matrix_destroy(&p->noise);
  return err;
}
