/* matrix.c: the matrix handle, backend lookup and shape-checked dispatch (matrix.h). */
#include "matrix.h"

#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "host_window.h"
#include "hostdev.h"
#include "qp_config.h"
#if QP_HAVE_CUDA
#include "cuda.h"
#endif

/* Starts the backend of a row of backends.h by its name (each row's start below). */
qp_err qp_linalg_backend(const char *name, const qp_linalg_ops **ops) {
  *ops = NULL;
  if (strcmp(name, "cpu") == 0) {
    *ops = qp_linalg_cpu_ops();
    return QP_OK;
  }
  if (strcmp(name, "cuda") == 0 || strcmp(name, "cuda-dist") == 0) {
#if QP_HAVE_CUDA
    /* One GPU per rank; QP_ERR_UNSUPPORTED "no CUDA device" on a machine without one.
     * "cuda-dist": block-cyclic over the ranks, a GPU each (cuda_dist.c). */
    const int dist = strcmp(name, "cuda-dist") == 0;
    QP_CHECK(!dist || (qp_linalg_dist_ops() && qp_grid_current()), QP_ERR_MPI,
             "backend 'cuda-dist' needs MPI, ScaLAPACK's grid and its process grid (qmlpipe sets "
             "it up when started with mpiexec or srun)");
    QP_CALL(qp_cuda_init_for_rank());
    *ops = dist ? qp_linalg_cuda_dist_ops() : qp_linalg_cuda_ops();
    return QP_OK;
#else
    QP_FAIL(QP_ERR_UNSUPPORTED, "backend '%s': this build of qmlpipe was not built with CUDA "
                                "(configure with -DQP_ENABLE_CUDA=ON)", name);
#endif
  }
  if (strcmp(name, "dist") == 0 && qp_linalg_dist_ops()) {
    QP_CHECK(qp_grid_current(), QP_ERR_MPI,
             "backend 'dist' needs its MPI process grid (qmlpipe sets it up when started with "
             "mpiexec or srun)");
    *ops = qp_linalg_dist_ops();
    return QP_OK;
  }
  if (strcmp(name, "dist") == 0)
    QP_FAIL(QP_ERR_UNSUPPORTED,
            "backend 'dist' is not available in this build of qmlpipe (configure with "
            "-DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON)");
  if (strcmp(name, "hostdev") == 0) { /* the test-only device emulation (hostdev.h) */
    QP_CALL(qp_hostdev_init());
    *ops = qp_linalg_hostdev_ops();
    return QP_OK;
  }
  /* The same, block-cyclic over the ranks: hostdev-dist, and cuda-dist's table over hostdev
   * (hostdev-tiled, test-only; hostdev.h). */
  const int tiled = strcmp(name, "hostdev-tiled") == 0;
  if (tiled || strcmp(name, "hostdev-dist") == 0) {
    const qp_linalg_ops *table =
        tiled ? qp_linalg_hostdev_tiled_ops() : qp_linalg_hostdev_dist_ops();
    QP_CHECK(table, QP_ERR_UNSUPPORTED,
             "backend '%s' is not available in this build of qmlpipe (configure with "
             "-DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON)", name);
    QP_CHECK(qp_grid_current(), QP_ERR_MPI,
             "backend '%s' needs its MPI process grid (qmlpipe sets it up when started with "
             "mpiexec or srun)", name);
    QP_CALL(qp_hostdev_init());
    *ops = table;
    return QP_OK;
  }
  char known[256];
  QP_FAIL(QP_ERR_INPUT, "unknown backend '%s' (known: %s)", name,
          qp_backend_names(known, sizeof known, 1));
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

#define QP_NEED_OP(m, op)                                                                      \
  QP_CHECK((m)->ops && (m)->ops->op, QP_ERR_UNSUPPORTED, "backend '%s' has no " #op,            \
           (m)->ops ? (m)->ops->name : "(none)")

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

static qp_err qp_check_block(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                             int64_t cols, int64_t ld) {
  QP_CHECK(li >= 0 && lj >= 0 && rows >= 0 && cols >= 0 && li + rows <= m->local_rows &&
               lj + cols <= m->local_cols && ld >= (rows > 0 ? rows : 1),
           QP_ERR_INTERNAL, "host copy of %lldx%lld at (%lld, %lld) of '%s' (%lldx%lld local, ld %lld)",
           (long long)rows, (long long)cols, (long long)li, (long long)lj, m->name,
           (long long)m->local_rows, (long long)m->local_cols, (long long)ld);
  return QP_OK;
}

/* dst[.., ldd] <- src[.., lds], rows x cols, column by column (host memory). */
static void qp_copy_columns(const double *src, int64_t lds, double *dst, int64_t ldd,
                            int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j)
    memcpy(dst + j * ldd, src + j * lds, (size_t)rows * sizeof(double));
}

qp_err qp_linalg_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows, int64_t cols,
                          double *host, int64_t ld) {
  QP_CALL(qp_check_block(m, li, lj, rows, cols, ld));
  if (rows == 0 || cols == 0) return QP_OK;
  if (m->space == QP_SPACE_DEVICE) {
    QP_NEED_OP(m, download);
    QP_CALL(m->ops->download(m, li, lj, rows, cols, host, ld));
    return QP_OK;
  }
  qp_copy_columns(m->data + li + lj * m->ld, m->ld, host, ld, rows, cols);
  return QP_OK;
}

qp_err qp_linalg_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                        int64_t rows, int64_t cols) {
  QP_CALL(qp_check_block(m, li, lj, rows, cols, ld));
  if (rows == 0 || cols == 0) return QP_OK;
  if (m->space == QP_SPACE_DEVICE) {
    QP_NEED_OP(m, upload);
    QP_CALL(m->ops->upload(host, ld, m, li, lj, rows, cols));
    return QP_OK;
  }
  qp_copy_columns(host, ld, m->data + li + lj * m->ld, m->ld, rows, cols);
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

qp_err qp_linalg_potrf(qp_matrix *a) {
  QP_NEED_OP(a, potrf);
  QP_CHECK(a->rows == a->cols, QP_ERR_INTERNAL, "potrf of non-square '%s'", a->name);
  QP_CALL(a->ops->potrf(a));
  qp_stage_add_flops(qp_flops_potrf(a->rows));
  return QP_OK;
}

qp_err qp_linalg_potri(qp_matrix *l) {
  QP_NEED_OP(l, potri);
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "potri of non-square '%s'", l->name);
  QP_CALL(l->ops->potri(l));
  if (l->space == QP_SPACE_HOST) qp_matrix_symmetrize_lower(l); /* device backends mirror */
  qp_stage_add_flops(2.0 * qp_flops_trtri(l->rows));
  return QP_OK;
}

qp_err qp_linalg_trtri(qp_matrix *l) {
  QP_NEED_OP(l, trtri);
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "trtri of non-square '%s'", l->name);
  QP_CALL(l->ops->trtri(l));
  qp_stage_add_flops(qp_flops_trtri(l->rows));
  return QP_OK;
}

static qp_err qp_check_triangular_operand(qp_side side, const qp_matrix *l, const qp_matrix *b) {
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "triangular '%s' not square", l->name);
  int64_t need = side == QP_LEFT ? b->rows : b->cols;
  QP_CHECK(need == l->rows, QP_ERR_INTERNAL, "'%s' (%lld) does not match '%s' (%lldx%lld)",
           l->name, (long long)l->rows, b->name, (long long)b->rows, (long long)b->cols);
  return QP_OK;
}

qp_err qp_linalg_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                      qp_matrix *b) {
  QP_NEED_OP(l, trmm);
  QP_CALL(qp_check_triangular_operand(side, l, b));
  QP_CALL(l->ops->trmm(side, trans, alpha, l, b));
  qp_stage_add_flops(qp_flops_trmm(side, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                      qp_matrix *b) {
  QP_NEED_OP(l, trsm);
  QP_CALL(qp_check_triangular_operand(side, l, b));
  QP_CALL(l->ops->trsm(side, trans, alpha, l, b));
  qp_stage_add_flops(qp_flops_trmm(side, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                      const qp_matrix *b, double beta, qp_matrix *c) {
  QP_NEED_OP(c, gemm);
  int64_t m = ta ? a->cols : a->rows, k = ta ? a->rows : a->cols;
  int64_t kb = tb ? b->cols : b->rows, n = tb ? b->rows : b->cols;
  QP_CHECK(k == kb && m == c->rows && n == c->cols, QP_ERR_INTERNAL,
           "gemm shapes: '%s' x '%s' -> '%s' do not agree", a->name, b->name, c->name);
  QP_CALL(c->ops->gemm(ta, tb, alpha, a, b, beta, c));
  qp_stage_add_flops(qp_flops_gemm(m, n, k));
  return QP_OK;
}

qp_err qp_linalg_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                      qp_matrix *c) {
  QP_NEED_OP(c, syrk);
  int64_t n = trans ? a->cols : a->rows, k = trans ? a->rows : a->cols;
  QP_CHECK(c->rows == n && c->cols == n, QP_ERR_INTERNAL, "syrk: '%s' is not %lldx%lld",
           c->name, (long long)n, (long long)n);
  QP_CALL(c->ops->syrk(trans, alpha, a, beta, c));
  qp_stage_add_flops(qp_flops_syrk(n, k));
  return QP_OK;
}

qp_err qp_linalg_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_NEED_OP(l, potrs);
  QP_CALL(qp_check_triangular_operand(QP_LEFT, l, b));
  QP_CALL(l->ops->potrs(l, b));
  qp_stage_add_flops(2.0 * qp_flops_trmm(QP_LEFT, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_getrf(qp_matrix *a, int *pivots) {
  QP_NEED_OP(a, getrf);
  QP_CHECK(a->rows == a->cols, QP_ERR_INTERNAL, "getrf of non-square '%s'", a->name);
  QP_CALL(a->ops->getrf(a, pivots));
  qp_stage_add_flops(2.0 * qp_flops_potrf(a->rows));
  return QP_OK;
}

int64_t qp_linalg_pivot_count(const qp_matrix *a) {
  return a->grid ? a->local_rows + a->grid->block : a->rows;
}

qp_err qp_linalg_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_NEED_OP(lu, getrs);
  QP_CALL(qp_check_triangular_operand(QP_LEFT, lu, b));
  QP_CALL(lu->ops->getrs(lu, pivots, b));
  qp_stage_add_flops(2.0 * qp_flops_trmm(QP_LEFT, b->rows, b->cols));
  return QP_OK;
}

qp_err qp_linalg_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                          qp_matrix *b, int64_t bi, int64_t bj) {
  /* B's table copies, unless A alone is on the device (a distributed device window into a
   * host work matrix: qp_linalg_align), whose table must open it. */
  const qp_matrix *by = a->space == QP_SPACE_DEVICE && b->space == QP_SPACE_HOST ? a : b;
  QP_NEED_OP(by, copy_sub);
  QP_CHECK(ai >= 0 && aj >= 0 && bi >= 0 && bj >= 0 && ai + rows <= a->rows &&
               aj + cols <= a->cols && bi + rows <= b->rows && bj + cols <= b->cols,
           QP_ERR_INTERNAL, "copy of %lldx%lld from '%s' to '%s' out of bounds", (long long)rows,
           (long long)cols, a->name, b->name);
  if (rows == 0 || cols == 0) return QP_OK;
  QP_CALL(by->ops->copy_sub(rows, cols, a, ai, aj, b, bi, bj));
  return QP_OK;
}

qp_err qp_linalg_clear_upper(qp_matrix *a) {
  QP_NEED_OP(a, clear_upper);
  QP_CHECK(a->rows == a->cols, QP_ERR_INTERNAL, "clear_upper of non-square '%s'", a->name);
  QP_CALL(a->ops->clear_upper(a));
  return QP_OK;
}

qp_err qp_linalg_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  QP_NEED_OP(a, scale);
  QP_CHECK((!rows || (rows->runs >= 0 && rows->runs <= QP_SCALE_RUNS_MAX)) &&
               (!cols || (cols->runs >= 0 && cols->runs <= QP_SCALE_RUNS_MAX)),
           QP_ERR_INTERNAL, "scale of '%s': more than %d runs", a->name, QP_SCALE_RUNS_MAX);
  if (!rows && !cols) return QP_OK;
  QP_CALL(a->ops->scale(a, rows, cols));
  return QP_OK;
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

qp_err qp_linalg_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_NEED_OP(b, transpose);
  QP_CHECK(a->rows == b->cols && a->cols == b->rows, QP_ERR_INTERNAL,
           "transpose of '%s' into '%s': shapes do not agree", a->name, b->name);
  QP_CALL(b->ops->transpose(a, b));
  return QP_OK;
}

qp_err qp_linalg_sum_partials(const qp_linalg_ops *ops, double *x, int64_t count) {
  if (ops && ops->sum_partials) QP_CALL(ops->sum_partials(x, count));
  return QP_OK;
}

int qp_linalg_moves_data(const qp_linalg_ops *ops) { return ops && ops->moves_data; }

qp_err qp_linalg_align(const qp_matrix *a, int64_t ai, int64_t aj, int64_t rows, int64_t cols,
                       const qp_matrix *layout, int64_t bi, int64_t bj, qp_matrix *work,
                       qp_aligned *out) {
  QP_CHECK(ai >= 0 && aj >= 0 && bi >= 0 && bj >= 0 && ai + rows <= a->rows &&
               aj + cols <= a->cols && bi + rows <= layout->rows && bj + cols <= layout->cols,
           QP_ERR_INTERNAL, "window of %lldx%lld of '%s' out of bounds of '%s'", (long long)rows,
           (long long)cols, a->name, layout->name);
  if (!qp_linalg_moves_data(a->ops)) {
    /* Every entry is here: layout position (li, lj) = (gi, gj) reads A at the shifted index. */
    *out = (qp_aligned){a->data, a->ld, ai - bi, aj - bj};
    return QP_OK;
  }
  QP_CHECK(work && work->rows == layout->rows && work->cols == layout->cols, QP_ERR_INTERNAL,
           "aligning '%s' with '%s' needs a work matrix of its shape", a->name, layout->name);
  if (a->space == QP_SPACE_DEVICE && !a->grid) {
    /* A local device matrix: the window comes down into the host work matrix. */
    QP_CHECK(work->space == QP_SPACE_HOST && !work->grid, QP_ERR_INTERNAL,
             "aligning device matrix '%s' needs a local host work matrix", a->name);
    QP_CALL(qp_linalg_download(a, ai, aj, rows, cols, work->data + bi + bj * work->ld, work->ld));
  } else {
    /* Over the ranks (from the device into the host work matrix on a distributed device
     * backend: qp_linalg_copy_sub). */
    QP_CHECK(work->space == QP_SPACE_HOST, QP_ERR_INTERNAL,
             "aligning '%s' needs a host work matrix", a->name);
    QP_CALL(qp_linalg_copy_sub(rows, cols, a, ai, aj, work, bi, bj));
  }
  *out = (qp_aligned){work->data, work->ld, 0, 0};
  return QP_OK;
}

/* work <- this rank's entries of the distributed device matrix a, each at its global place:
 * a block-cyclic tile (block x block locally) is one contiguous tile globally, so one
 * download per tile. */
static qp_err qp_replicate_tiles(const qp_matrix *a, qp_matrix *work) {
  const int64_t nb = a->grid->block;
  for (int64_t lj = 0; lj < a->local_cols; lj += nb)
    for (int64_t li = 0; li < a->local_rows; li += nb) {
      const int64_t rows = a->local_rows - li < nb ? a->local_rows - li : nb;
      const int64_t cols = a->local_cols - lj < nb ? a->local_cols - lj : nb;
      double *at = work->data + qp_matrix_global_row(a, li) + qp_matrix_global_col(a, lj) * work->ld;
      QP_CALL(qp_linalg_download(a, li, lj, rows, cols, at, work->ld));
    }
  return QP_OK;
}

qp_err qp_linalg_replicate(const qp_matrix *a, qp_matrix *work, const double **whole) {
  if (!qp_linalg_moves_data(a->ops)) {
    QP_CHECK(a->ld == a->rows || a->cols <= 1, QP_ERR_INTERNAL,
             "'%s' is a view with a leading dimension of its own: copy it first", a->name);
    *whole = a->data;
    return QP_OK;
  }
  QP_CHECK(work && !work->grid && work->space == QP_SPACE_HOST && work->rows == a->rows &&
               work->cols == a->cols,
           QP_ERR_INTERNAL, "making '%s' whole needs a local host work matrix of its shape",
           a->name);
  if (a->space == QP_SPACE_DEVICE && !a->grid) {
    QP_CALL(qp_linalg_download(a, 0, 0, a->rows, a->cols, work->data, work->ld));
    *whole = work->data;
    return QP_OK;
  }
  /* Each rank puts its entries in place (zeros elsewhere); one sum makes the whole. */
  memset(work->data, 0, (size_t)(work->rows * work->cols) * sizeof(double));
  if (a->space == QP_SPACE_DEVICE) {
    QP_CALL(qp_replicate_tiles(a, work));
  } else {
    for (int64_t lj = 0; lj < a->local_cols; ++lj)
      for (int64_t li = 0; li < a->local_rows; ++li)
        work->data[qp_matrix_global_row(a, li) + qp_matrix_global_col(a, lj) * work->ld] =
            a->data[li + lj * a->ld];
  }
  QP_CALL(qp_linalg_sum_partials(a->ops, work->data, work->rows * work->cols));
  *whole = work->data;
  return QP_OK;
}

qp_err qp_linalg_trace_product(const qp_matrix *a, const qp_matrix *b, double *out) {
  QP_NEED_OP(a, trace_product);
  QP_CHECK(a->rows == b->cols && a->cols == b->rows, QP_ERR_INTERNAL,
           "trace of '%s' x '%s': shapes do not agree", a->name, b->name);
  QP_CALL(a->ops->trace_product(a, b, out));
  qp_stage_add_flops(2.0 * (double)a->rows * (double)a->cols);
  return QP_OK;
}

qp_err qp_linalg_norm1(const qp_matrix *a, double *out) {
  QP_NEED_OP(a, norm1);
  QP_CALL(a->ops->norm1(a, out));
  return QP_OK;
}

qp_err qp_linalg_pocon(const qp_matrix *l, double anorm, double *rcond) {
  QP_NEED_OP(l, pocon);
  QP_CHECK(l->rows == l->cols, QP_ERR_INTERNAL, "pocon of non-square '%s'", l->name);
  QP_CALL(l->ops->pocon(l, anorm, rcond));
  return QP_OK;
}

qp_err qp_linalg_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  QP_NEED_OP(lu, gecon);
  QP_CHECK(lu->rows == lu->cols, QP_ERR_INTERNAL, "gecon of non-square '%s'", lu->name);
  QP_CALL(lu->ops->gecon(lu, anorm, rcond));
  return QP_OK;
}

double qp_flops_potrf(int64_t n) { return (double)n * (double)n * (double)n / 3.0; }
double qp_flops_trtri(int64_t n) { return (double)n * (double)n * (double)n / 3.0; }
double qp_flops_trmm(qp_side side, int64_t m, int64_t n) {
  return side == QP_LEFT ? (double)m * (double)m * (double)n : (double)m * (double)n * (double)n;
}
double qp_flops_gemm(int64_t m, int64_t n, int64_t k) {
  return 2.0 * (double)m * (double)n * (double)k;
}
double qp_flops_syrk(int64_t n, int64_t k) { return (double)n * (double)(n + 1) * (double)k; }
