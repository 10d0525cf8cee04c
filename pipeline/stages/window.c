/* window.c: the unbinned problem and W = F^-1 F_(q,ell) (window.h). */
#include "window.h"

#include <stdlib.h>
#include <string.h>

#include "matrix.h"
#include "qp_error.h"

int64_t qp_window_count(const qp_problem *p) { return p->plan->model_dims.n_window; }

qp_err qp_window_problem(const qp_problem *p, qp_problem *w) {
  const int n = p->cfg->lmax - p->cfg->ell_min + 1;
  *w = *p;
  w->n_bins = n;
  w->n_params = p->cfg->n_spectra * n;
  w->bin_lo = malloc((size_t)n * sizeof *w->bin_lo);
  w->bin_hi = malloc((size_t)n * sizeof *w->bin_hi);
  if (!w->bin_lo || !w->bin_hi) {
    qp_window_problem_free(w);
    QP_FAIL(QP_ERR_NOMEM, "out of memory for %d window multipoles", n);
  }
  for (int b = 0; b < n; ++b)
    w->bin_lo[b] = w->bin_hi[b] = p->cfg->ell_min + b;
  return QP_OK;
}

void qp_window_problem_free(qp_problem *w) {
  free(w->bin_lo);
  free(w->bin_hi);
  w->bin_lo = w->bin_hi = NULL;
}

qp_err qp_window_from_fisher(qp_problem *p) {
  const int64_t np = p->n_params, nw = qp_window_count(p);
  const qp_linalg_ops *cpu = qp_linalg_cpu_ops();
  qp_matrix finv, fell, window;
  /* Column-major np x nw is F^-1 F_ell; the file wants row p contiguous (C order), i.e. the
   * column-major nw x np W^T = F_ell^T F^-1 (F^-1 symmetric). */
  QP_CALL(qp_matrix_view(cpu, "fisher_inverse", p->fisher_inverse, np, np, np, &finv));
  QP_CALL(qp_matrix_view(cpu, "fisher_ell", p->fisher_ell, np, nw, np, &fell));
  QP_CALL(qp_matrix_view(cpu, "window", p->window, nw, np, nw, &window));
  QP_CALL(qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &fell, &finv, 0.0, &window));
  return QP_OK;
}
