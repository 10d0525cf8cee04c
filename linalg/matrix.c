/* matrix.c: the matrix handle (layout, creation, views) and the backend's start by its row
 * (matrix.h); the operations' dispatch is matrix_ops.c, moving entries matrix_move.c. */
#include "matrix.h"

#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "host_window.h"
#include "qp_config.h"
#if QP_HAVE_CUDA
#include "cuda_backend.h"
#endif

/* Starts a backend by its row of backends.h: no backend's name is compared here. */
qp_err qp_linalg_backend(const char *name, const qp_linalg_ops **ops) {
  *ops = NULL;
  const qp_backend *row = qp_backend_find(name);
  char known[256];
  QP_CHECK(row, QP_ERR_INPUT, "unknown backend '%s' (known: %s)", name,
           qp_backend_names(known, sizeof known, 1));
  QP_CHECK(row->start || !row->test_only, QP_ERR_INPUT, "backend '%s' is %s", name,
           row->absent ? row->absent : "test-only");
  QP_CHECK(row->start, QP_ERR_UNSUPPORTED, "backend '%s': %s", name,
           row->absent ? row->absent : "not in this build of qmlpipe");
  QP_CALL(row->start(ops));
  QP_CHECK(*ops, QP_ERR_INTERNAL, "backend '%s': its start gave no table", name);
  return QP_OK;
}

/* The shape fields of a rows x cols matrix of `ops`: local, or this rank's part of a
 * block-cyclic one with its descriptor (ScaLAPACK's DESCINIT, RSRC = CSRC = 0). */
static void qp_matrix_layout(const qp_linalg_ops *ops, int64_t rows, int64_t cols, qp_matrix *m) {
  m->rows = rows;
  m->cols = cols;
  m->ops = ops;
  m->space = ops ? ops->space : QP_SPACE_HOST;
  const qp_grid *g = ops && ops->distributed ? qp_grid_current() : NULL;
  if (!g) {
    m->local_rows = rows;
    m->local_cols = cols;
    m->ld = rows > 0 ? rows : 1;
    return;
  }
  m->grid = g;
  m->local_rows = qp_bc_local_count(rows, g->block, g->myrow, g->nprow);
  m->local_cols = qp_bc_local_count(cols, g->block, g->mycol, g->npcol);
  m->ld = m->local_rows > 0 ? m->local_rows : 1;
  const int desc[9] = {1, g->context, (int)rows, (int)cols, g->block, g->block, 0, 0, (int)m->ld};
  memcpy(m->desc, desc, sizeof desc);
}

int64_t qp_matrix_local_elements(const qp_linalg_ops *ops, int64_t rows, int64_t cols) {
  qp_matrix m;
  memset(&m, 0, sizeof m);
  qp_matrix_layout(ops, rows, cols, &m);
  return m.local_rows * m.local_cols;
}

const qp_linalg_ops *qp_linalg_host_ops(const qp_linalg_ops *ops) {
  return ops && ops->host_table ? ops->host_table() : ops;
}

const qp_linalg_ops *qp_linalg_local_ops(const qp_linalg_ops *ops) {
  if (!ops || !ops->distributed) return ops;
  return ops->local_table ? ops->local_table() : qp_linalg_cpu_ops();
}

int qp_linalg_on_device(const qp_linalg_ops *ops) { return ops && ops->space == QP_SPACE_DEVICE; }

qp_err qp_linalg_workspaces(const qp_linalg_ops *ops, qp_linalg_op op, int64_t n, int64_t nrhs,
                            qp_workspace out[QP_WORKSPACES_MAX], int *count) {
  *count = 0;
  if (!ops || !ops->workspaces) return QP_OK;
  QP_CALL(ops->workspaces(op, n, nrhs, out, count));
  QP_CHECK(*count >= 0 && *count <= QP_WORKSPACES_MAX, QP_ERR_INTERNAL,
           "backend %s: %d workspaces for one operation (at most %d)", ops->name, *count,
           QP_WORKSPACES_MAX);
  return QP_OK;
}

void qp_linalg_backend_end(void) {
#if QP_HAVE_CUDA
  if (qp_cuda_ready()) qp_cuda_finalize();
#endif
}

void qp_linalg_release_workspaces(const qp_linalg_ops *ops) {
  if (ops && ops->release_workspaces) ops->release_workspaces();
}

qp_err qp_linalg_hold_workspace(const qp_linalg_ops *ops, const char *term, size_t bytes) {
  if (ops && ops->hold_workspace) QP_CALL(ops->hold_workspace(term, bytes));
  return QP_OK;
}

qp_err qp_matrix_create(const qp_linalg_ops *ops, const char *term, qp_term_kind kind,
                        int64_t rows, int64_t cols, qp_matrix *m) {
  memset(m, 0, sizeof *m);
  QP_CHECK(rows >= 0 && cols >= 0, QP_ERR_INTERNAL, "matrix '%s' of negative size", term);
  QP_CHECK(cols == 0 || (uint64_t)rows <= SIZE_MAX / (uint64_t)cols, QP_ERR_NOMEM,
           "matrix '%s': %lld x %lld elements overflow the address space", term, (long long)rows,
           (long long)cols);
  QP_CHECK(!(ops && ops->distributed) || (rows <= INT32_MAX && cols <= INT32_MAX),
           QP_ERR_UNSUPPORTED, "matrix '%s': %lld x %lld is beyond ScaLAPACK's 32-bit indices",
           term, (long long)rows, (long long)cols);
  qp_matrix_layout(ops, rows, cols, m);
  void *data = NULL;
  const size_t elements = (size_t)(m->local_rows * m->local_cols);
  QP_CHECK(elements <= SIZE_MAX / sizeof(double), QP_ERR_NOMEM,
           "matrix '%s': %zu elements overflow the address space", term, elements);
  QP_CALL(qp_budget_alloc(term, kind, m->space, elements * sizeof(double), &data));
  m->data = data;
  m->owns = 1;
  snprintf(m->name, sizeof m->name, "%s", term);
  return QP_OK;
}

qp_err qp_matrix_view(const qp_linalg_ops *ops, const char *name, double *data, int64_t rows,
                      int64_t cols, int64_t ld, qp_matrix *m) {
  memset(m, 0, sizeof *m);
  qp_matrix_layout(ops, rows, cols, m);
  if (!m->grid) {
    QP_CHECK(ld >= (rows > 0 ? rows : 1), QP_ERR_INTERNAL, "view '%s': ld %lld < rows %lld",
             name, (long long)ld, (long long)rows);
    m->ld = ld;
  }
  m->data = data;
  snprintf(m->name, sizeof m->name, "%s", name);
  return QP_OK;
}

qp_err qp_matrix_set_identity(qp_matrix *m, double diagonal) {
  qp_host_window w;
  QP_CALL(qp_host_window_open(m, 0, m->local_cols, QP_ACCESS_WRITE, &w));
  for (int64_t lj = 0; lj < m->local_cols; ++lj) {
    const int64_t gj = qp_matrix_global_col(m, lj);
    for (int64_t li = 0; li < m->local_rows; ++li)
      w.data[li + lj * w.ld] = qp_matrix_global_row(m, li) == gj ? diagonal : 0.0;
  }
  QP_CALL(qp_host_window_close(&w));
  return QP_OK;
}

qp_err qp_matrix_stack_slot(const qp_matrix *stack, int64_t j, const qp_linalg_ops *ops,
                            const char *name, int64_t rows, int64_t cols, qp_matrix *slot) {
  QP_CHECK(!stack->grid && j >= 0 && j < stack->cols &&
               qp_matrix_local_elements(ops, rows, cols) <= stack->rows &&
               ops->space == stack->space,
           QP_ERR_INTERNAL, "slot %lld of '%s' (%lld x %lld) cannot hold a %lld x %lld '%s'",
           (long long)j, stack->name, (long long)stack->rows, (long long)stack->cols,
           (long long)rows, (long long)cols, name);
  QP_CALL(qp_matrix_view(ops, name, stack->data + j * stack->ld, rows, cols, rows, slot));
  return QP_OK;
}

qp_err qp_matrix_columns(const qp_matrix *m, int64_t j0, int64_t cols, qp_matrix *view) {
  QP_CHECK(j0 >= 0 && cols >= 0 && j0 + cols <= m->cols, QP_ERR_INTERNAL,
           "columns %lld..%lld of '%s' (%lld columns)", (long long)j0, (long long)(j0 + cols),
           m->name, (long long)m->cols);
  int64_t local_j0 = j0;
  if (m->grid) {
    /* From a column that starts a block on process column 0, every rank's local columns of
     * the range follow one another from local column j0 / npcol, laid out as a matrix of
     * `cols` columns of its own: the view is that matrix, with m's rows and leading
     * dimension. From anywhere else the ranges' layouts differ, and no view exists. */
    const int64_t period = (int64_t)m->grid->block * m->grid->npcol;
    QP_CHECK(j0 % period == 0, QP_ERR_INTERNAL,
             "columns %lld..%lld of the distributed '%s': the first is not a multiple of block "
             "x process columns (%lld)",
             (long long)j0, (long long)(j0 + cols), m->name, (long long)period);
    local_j0 = j0 / m->grid->npcol;
  }
  QP_CALL(qp_matrix_view(m->ops, m->name, m->data + local_j0 * m->ld, m->rows, cols, m->ld, view));
  return QP_OK;
}

qp_err qp_matrix_alias(const qp_matrix *m, const char *name, qp_matrix *view) {
  *view = *m;
  view->owns = 0;
  snprintf(view->name, sizeof view->name, "%s", name);
  return QP_OK;
}

void qp_matrix_destroy(qp_matrix *m) {
  if (m->owns) qp_budget_free(m->data);
  memset(m, 0, sizeof *m);
}

/* Tile by tile (as qp_cpu_transpose), so that the reads along the lower triangle's rows stay
 * in cache: column by column, every read was a cache miss. At order 9212 (the W of T nside
 * 32) on this project's VM: 0.39 s against 0.12 s tiled inside `qmlpipe run`, 1.2-2.3 s
 * against 0.1-0.4 s alone (docs/benchmarks.md). A column of tiles per OpenMP iteration: W of
 * 2300 (T nside 16) 3.0 ms on one thread, 1.9 on two (2026-11-27). */
void qp_matrix_symmetrize_lower(qp_matrix *m) {
  const int64_t tile = 64, n = m->cols;
#pragma omp parallel for schedule(dynamic, 1) if (n >= 4 * tile)
  for (int64_t jb = 0; jb < n; jb += tile) {
    const int64_t j_end = jb + tile < n ? jb + tile : n;
    for (int64_t ib = 0; ib <= jb; ib += tile)
      for (int64_t j = jb; j < j_end; ++j) {
        const int64_t i_end = ib + tile < j ? ib + tile : j;
        for (int64_t i = ib; i < i_end; ++i) m->data[i + j * m->ld] = m->data[j + i * m->ld];
      }
  }
}

qp_err qp_matrix_scale_local(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  for (int64_t lj = 0; lj < a->local_cols; ++lj) {
    const double c = cols ? qp_run_scale_at(cols, qp_matrix_global_col(a, lj)) : 1.0;
    double *column = a->data + lj * a->ld;
    for (int64_t li = 0; li < a->local_rows; ++li)
      column[li] *= (rows ? qp_run_scale_at(rows, qp_matrix_global_row(a, li)) : 1.0) * c;
  }
  return QP_OK;
}

qp_err qp_matrix_clear_upper_local(qp_matrix *a) {
  for (int64_t lj = 0; lj < a->local_cols; ++lj) {
    const int64_t gj = qp_matrix_global_col(a, lj);
    for (int64_t li = 0; li < a->local_rows && qp_matrix_global_row(a, li) < gj; ++li)
      a->data[li + lj * a->ld] = 0.0;
  }
  return QP_OK;
}

