/* cuda.c: the cuda backend's operations (the table of matrix.h) on device matrices, with
 * cuBLAS and cuSOLVER on the context's stream (cuda_backend.h).
 *
 * The 64-bit interfaces throughout (cusolverDnX*, cublas*_64), so that no size meets the
 * 32-bit BLAS integer, except potri: cuSOLVER has no 64-bit potri, so cusolverDnDpotri with
 * its sizes checked. Workspaces come from the *_bufferSize queries and are held by the
 * context through the budget (cuda_context.c). Operations that read cuSOLVER's info back wait
 * for the device; the others only queue their work (qp_cuda_synchronize waits for it). */
#include <limits.h>
#include <string.h>
#include <stdio.h>

#include "blas_int.h"
#include "cuda_private.h"

static cublasOperation_t qp_cublas_op(qp_trans t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }
static cublasSideMode_t qp_cublas_side(qp_side s) {
  return s == QP_LEFT ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
}

/* "routine on 'matrix'" for the status wrappers' messages. */
typedef struct qp_what {
  char text[QP_TERM_NAME_MAX + 64];
} qp_what;
static qp_what qp_what_of(const char *routine, const qp_matrix *m) {
  qp_what w;
  snprintf(w.text, sizeof w.text, "%s on '%s'", routine, m->name);
  return w;
}

/* cuSOLVER's info < 0 is a bad argument: a bug here, not the user's (as LAPACK's in cpu.c). */
static qp_err qp_cuda_info_check(int info, const char *routine, const qp_matrix *a) {
  QP_CHECK(info >= 0, QP_ERR_LIBRARY, "%s on '%s' (stage %s): argument %d is invalid", routine,
           a->name, qp_stage_label(), -info);
  return QP_OK;
}

/* The workspace of `op` at order n from its *_bufferSize query (a may be NULL: the queries
 * read sizes only). */
static qp_err qp_cuda_solver_need(qp_cuda_solver_op op, int64_t n, double *a, int64_t lda,
                                  size_t *device_bytes, size_t *host_bytes) {
  *device_bytes = *host_bytes = 0;
  if (n == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  switch (op) {
  case QP_CUDA_POTRF:
    QP_CALL(qp_cusolver_status(
        cusolverDnXpotrf_bufferSize(c->solver, c->params, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_64F, a,
                                    lda, CUDA_R_64F, device_bytes, host_bytes),
        "cusolverDnXpotrf_bufferSize"));
    return QP_OK;
  case QP_CUDA_POTRI: {
    int ni, ldi, lwork = 0;
    QP_BLAS_INT(n, &ni, "matrix order (cusolverDnDpotri)");
    QP_BLAS_INT(lda, &ldi, "leading dimension (cusolverDnDpotri)");
    QP_CALL(qp_cusolver_status(
        cusolverDnDpotri_bufferSize(c->solver, CUBLAS_FILL_MODE_LOWER, ni, a, ldi, &lwork),
        "cusolverDnDpotri_bufferSize"));
    *device_bytes = (size_t)lwork * sizeof(double);
    return QP_OK;
  }
  case QP_CUDA_TRTRI:
    QP_CALL(qp_cusolver_status(cusolverDnXtrtri_bufferSize(c->solver, CUBLAS_FILL_MODE_LOWER,
                                                           CUBLAS_DIAG_NON_UNIT, n, CUDA_R_64F, a,
                                                           lda, device_bytes, host_bytes),
                               "cusolverDnXtrtri_bufferSize"));
    return QP_OK;
  case QP_CUDA_GETRF:
    QP_CALL(
        qp_cusolver_status(cusolverDnXgetrf_bufferSize(c->solver, c->params, n, n, CUDA_R_64F, a,
                                                       lda, CUDA_R_64F, device_bytes, host_bytes),
                           "cusolverDnXgetrf_bufferSize"));
    return QP_OK;
  }
  QP_FAIL(QP_ERR_INTERNAL, "unknown cuSOLVER operation %d", (int)op);
}

qp_err qp_cuda_solver_workspace(qp_cuda_solver_op op, int64_t n, size_t *device_bytes,
                                size_t *host_bytes) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL, "the cuda backend is not initialised");
  QP_CALL(qp_cuda_solver_need(op, n, NULL, n > 0 ? n : 1, device_bytes, host_bytes));
  return QP_OK;
}

/* The table's hold_workspace (matrix.h): the growing buffers by their terms' names; the
 * rest (QP_OP_INIT's) are held from the backend's start, except the pinned staging, taken here
 * (the first stage holds the init terms, qp_problem_hold_backend; cuda_pinned.c says why). */
static qp_err qp_cuda_hold_workspace(const char *term, size_t bytes) {
  if (strcmp(term, QP_TERM_CUSOLVER_WORKSPACE) == 0) QP_CALL(qp_cuda_reserve_solver(bytes, 0));
  if (strcmp(term, QP_TERM_CUSOLVER_HOST_WORKSPACE) == 0) QP_CALL(qp_cuda_reserve_solver(0, bytes));
  if (strcmp(term, QP_TERM_DEVICE_PIVOTS) == 0)
    QP_CALL(qp_cuda_reserve_pivots((int64_t)((bytes + sizeof(int64_t) - 1) / sizeof(int64_t))));
  if (strcmp(term, QP_TERM_DEVICE_REDUCTION) == 0)
    QP_CALL(qp_cuda_reserve_reduction((int64_t)((bytes + sizeof(double) - 1) / sizeof(double))));
  if (strcmp(term, QP_TERM_PINNED_STAGING) == 0) QP_CALL(qp_cuda_pinned_hold());
  return QP_OK;
}

/* The table's workspaces (matrix.h): what the operations below hold besides their operands,
 * term by term as cuda_context.c grows them; the solver's from cuSOLVER's own queries (with
 * ld = n, as the stages' matrices have), so that the model has them exactly. */
static qp_err qp_cuda_workspaces(qp_linalg_op op, int64_t n, int64_t nrhs, qp_workspace *out,
                                 int *count) {
  (void)nrhs;
  *count = 0;
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_UNSUPPORTED,
           "the cuda backend's workspaces are known only on a GPU, after its start (cuSOLVER's "
           "queries need a handle)");
  const size_t rows = n > 0 ? (size_t)n : 0;
  if (op == QP_OP_INIT) {
    out[(*count)++] = (qp_workspace){QP_TERM_CUBLAS_WORKSPACE, QP_SPACE_DEVICE,
                                     qp_cuda_ctx.info.cublas_workspace};
    out[(*count)++] = (qp_workspace){QP_TERM_CUSOLVER_INFO, QP_SPACE_DEVICE, sizeof(int)};
    out[(*count)++] =
        (qp_workspace){QP_TERM_PINNED_STAGING, QP_SPACE_HOST, QP_PINNED_STAGING_BYTES};
    return QP_OK;
  }
  static const int solver[QP_OP_COUNT] = {[QP_OP_POTRF] = QP_CUDA_POTRF + 1,
                                          [QP_OP_POTRI] = QP_CUDA_POTRI + 1,
                                          [QP_OP_TRTRI] = QP_CUDA_TRTRI + 1,
                                          [QP_OP_GETRF] = QP_CUDA_GETRF + 1};
  if (op >= 0 && op < QP_OP_COUNT && solver[op] && rows > 0) {
    size_t device_bytes = 0, host_bytes = 0;
    QP_CALL(qp_cuda_solver_workspace((qp_cuda_solver_op)(solver[op] - 1), n, &device_bytes,
                                     &host_bytes));
    out[(*count)++] = (qp_workspace){QP_TERM_CUSOLVER_WORKSPACE, QP_SPACE_DEVICE, device_bytes};
    out[(*count)++] = (qp_workspace){QP_TERM_CUSOLVER_HOST_WORKSPACE, QP_SPACE_HOST, host_bytes};
  }
  if (op == QP_OP_GETRF || op == QP_OP_GETRS)
    out[(*count)++] =
        (qp_workspace){QP_TERM_DEVICE_PIVOTS, QP_SPACE_DEVICE, rows * sizeof(int64_t)};
  /* norm1 sums n columns and one more; the estimates solve with one n-vector */
  if (op == QP_OP_NORM1)
    out[(*count)++] = (qp_workspace){QP_TERM_DEVICE_REDUCTION, QP_SPACE_DEVICE, (rows + 1) * 8};
  if ((op == QP_OP_POCON || op == QP_OP_GECON) && rows > 0)
    out[(*count)++] = (qp_workspace){QP_TERM_DEVICE_REDUCTION, QP_SPACE_DEVICE, rows * 8};
  return QP_OK;
}

/* Queries and reserves the workspace of `op` on `a`. */
static qp_err qp_cuda_solver_prepare(qp_cuda_solver_op op, qp_matrix *a) {
  size_t device_bytes = 0, host_bytes = 0;
  QP_CALL(qp_cuda_solver_need(op, a->rows, a->data, a->ld, &device_bytes, &host_bytes));
  QP_CALL(qp_cuda_reserve_solver(device_bytes, host_bytes));
  return QP_OK;
}

static qp_err qp_cuda_potrf(qp_matrix *a) {
  QP_CALL(qp_cuda_check_operand(a, "potrf"));
  if (a->rows == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_solver_prepare(QP_CUDA_POTRF, a));
  QP_CALL(qp_cusolver_status(
      cusolverDnXpotrf(c->solver, c->params, CUBLAS_FILL_MODE_LOWER, a->rows, CUDA_R_64F, a->data,
                       a->ld, CUDA_R_64F, c->solver_workspace, c->solver_workspace_bytes,
                       c->solver_host_workspace, c->solver_host_workspace_bytes, c->info_word),
      qp_what_of("cusolverDnXpotrf", a).text));
  int info = 0;
  QP_CALL(qp_cuda_read_info(&info));
  QP_CALL(qp_cuda_info_check(info, "cusolverDnXpotrf", a));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%lld x %lld) is not positive definite: its leading minor of "
           "order %d (row %d) is not positive",
           qp_stage_label(), a->name, (long long)a->rows, (long long)a->rows, info, info);
  return QP_OK;
}

static qp_err qp_cuda_potri(qp_matrix *l) {
  QP_CALL(qp_cuda_check_operand(l, "potri"));
  if (l->rows == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  int n, lda, lwork;
  QP_BLAS_INT(l->rows, &n, "matrix order (cusolverDnDpotri)");
  QP_BLAS_INT(l->ld, &lda, "leading dimension (cusolverDnDpotri)");
  size_t device_bytes = 0, host_bytes = 0;
  QP_CALL(qp_cuda_solver_need(QP_CUDA_POTRI, l->rows, l->data, l->ld, &device_bytes, &host_bytes));
  QP_CALL(qp_cuda_reserve_solver(device_bytes, host_bytes));
  lwork = (int)(device_bytes / sizeof(double)); /* from the query's int: it fits */
  QP_CALL(qp_cusolver_status(cusolverDnDpotri(c->solver, CUBLAS_FILL_MODE_LOWER, n, l->data, lda,
                                              c->solver_workspace, lwork, c->info_word),
                             qp_what_of("cusolverDnDpotri", l).text));
  int info = 0;
  QP_CALL(qp_cuda_read_info(&info));
  QP_CALL(qp_cuda_info_check(info, "cusolverDnDpotri", l));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF, "stage %s: factor of '%s' is singular at row %d",
           qp_stage_label(), l->name, info);
  /* matrix.c mirrors host results; a device result is mirrored here, on the device. */
  QP_CALL(qp_cuda_status(qp_cuda_launch_mirror_lower(l->data, l->rows, l->ld, c->stream),
                         qp_what_of("mirroring the inverse", l).text));
  return QP_OK;
}

static qp_err qp_cuda_trtri(qp_matrix *l) {
  QP_CALL(qp_cuda_check_operand(l, "trtri"));
  if (l->rows == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_solver_prepare(QP_CUDA_TRTRI, l));
  QP_CALL(qp_cusolver_status(
      cusolverDnXtrtri(c->solver, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, l->rows, CUDA_R_64F,
                       l->data, l->ld, c->solver_workspace, c->solver_workspace_bytes,
                       c->solver_host_workspace, c->solver_host_workspace_bytes, c->info_word),
      qp_what_of("cusolverDnXtrtri", l).text));
  int info = 0;
  QP_CALL(qp_cuda_read_info(&info));
  QP_CALL(qp_cuda_info_check(info, "cusolverDnXtrtri", l));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF, "stage %s: triangular factor '%s' is singular at row %d",
           qp_stage_label(), l->name, info);
  return QP_OK;
}

/* trmm (solve = 0) and trsm (solve = 1) with L lower, non-unit, in place on B. cublasDtrmm is
 * out of place (C <- op(L) B); cuBLAS documents C = B (same ld) as its in-place form. */
static qp_err qp_cuda_triangular(int solve, qp_side side, qp_trans trans, double alpha,
                                 const qp_matrix *l, qp_matrix *b) {
  const char *routine = solve ? "trsm" : "trmm";
  QP_CALL(qp_cuda_check_operand(l, routine));
  QP_CALL(qp_cuda_check_operand(b, routine));
  if (b->rows == 0 || b->cols == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  cublasSideMode_t s = qp_cublas_side(side);
  cublasOperation_t t = qp_cublas_op(trans);
  cublasStatus_t status =
      solve ? cublasDtrsm_64(c->blas, s, CUBLAS_FILL_MODE_LOWER, t, CUBLAS_DIAG_NON_UNIT, b->rows,
                             b->cols, &alpha, l->data, l->ld, b->data, b->ld)
            : cublasDtrmm_64(c->blas, s, CUBLAS_FILL_MODE_LOWER, t, CUBLAS_DIAG_NON_UNIT, b->rows,
                             b->cols, &alpha, l->data, l->ld, b->data, b->ld, b->data, b->ld);
  QP_CALL(qp_cublas_status(status, qp_what_of(solve ? "cublasDtrsm" : "cublasDtrmm", b).text));
  return QP_OK;
}

static qp_err qp_cuda_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                           qp_matrix *b) {
  return qp_cuda_triangular(0, side, trans, alpha, l, b);
}

static qp_err qp_cuda_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                           qp_matrix *b) {
  return qp_cuda_triangular(1, side, trans, alpha, l, b);
}

static qp_err qp_cuda_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                           const qp_matrix *b, double beta, qp_matrix *c) {
  QP_CALL(qp_cuda_check_operand(a, "gemm"));
  QP_CALL(qp_cuda_check_operand(b, "gemm"));
  QP_CALL(qp_cuda_check_operand(c, "gemm"));
  if (c->rows == 0 || c->cols == 0) return QP_OK;
  int64_t k = ta ? a->rows : a->cols;
  QP_CALL(qp_cublas_status(cublasDgemm_64(qp_cuda_ctx.blas, qp_cublas_op(ta), qp_cublas_op(tb),
                                          c->rows, c->cols, k, &alpha, a->data, a->ld, b->data,
                                          b->ld, &beta, c->data, c->ld),
                           qp_what_of("cublasDgemm", c).text));
  return QP_OK;
}

static qp_err qp_cuda_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                           qp_matrix *c) {
  QP_CALL(qp_cuda_check_operand(a, "syrk"));
  QP_CALL(qp_cuda_check_operand(c, "syrk"));
  if (c->rows == 0) return QP_OK;
  int64_t k = trans ? a->rows : a->cols;
  QP_CALL(
      qp_cublas_status(cublasDsyrk_64(qp_cuda_ctx.blas, CUBLAS_FILL_MODE_LOWER, qp_cublas_op(trans),
                                      c->rows, k, &alpha, a->data, a->ld, &beta, c->data, c->ld),
                       qp_what_of("cublasDsyrk", c).text));
  QP_CALL(qp_cuda_status(qp_cuda_launch_mirror_lower(c->data, c->rows, c->ld, qp_cuda_ctx.stream),
                         qp_what_of("mirroring syrk's result", c).text));
  return QP_OK;
}

static qp_err qp_cuda_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_CALL(qp_cuda_check_operand(l, "potrs"));
  QP_CALL(qp_cuda_check_operand(b, "potrs"));
  if (l->rows == 0 || b->cols == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cusolver_status(cusolverDnXpotrs(c->solver, c->params, CUBLAS_FILL_MODE_LOWER, l->rows,
                                              b->cols, CUDA_R_64F, l->data, l->ld, CUDA_R_64F,
                                              b->data, b->ld, c->info_word),
                             qp_what_of("cusolverDnXpotrs", b).text));
  int info = 0;
  QP_CALL(qp_cuda_read_info(&info));
  QP_CALL(qp_cuda_info_check(info, "cusolverDnXpotrs", l));
  return QP_OK;
}

/* The pivots: the table passes host ints (LAPACK's), cuSOLVER's 64-bit API keeps int64 on
 * the device. They cross in chunks through a small buffer on the stack, converted on the way,
 * so that no host buffer of n int64 is needed. */
enum { QP_PIVOT_CHUNK = 512 };

static qp_err qp_cuda_pivots_download(int64_t n, int *pivots) {
  const qp_cuda_context *c = &qp_cuda_ctx;
  int64_t chunk[QP_PIVOT_CHUNK];
  for (int64_t k0 = 0; k0 < n; k0 += QP_PIVOT_CHUNK) {
    int64_t count = n - k0 < QP_PIVOT_CHUNK ? n - k0 : QP_PIVOT_CHUNK;
    QP_CALL(qp_cuda_status(cudaMemcpyAsync(chunk, c->pivots + k0, (size_t)count * sizeof *chunk,
                                           cudaMemcpyDeviceToHost, c->stream),
                           "reading getrf's pivots"));
    QP_CALL(qp_cuda_status(cudaStreamSynchronize(c->stream), "reading getrf's pivots"));
    for (int64_t k = 0; k < count; ++k) {
      QP_CHECK(chunk[k] >= 1 && chunk[k] <= n, QP_ERR_INTERNAL,
               "getrf returned pivot %lld at %lld (order %lld)", (long long)chunk[k],
               (long long)(k0 + k), (long long)n);
      pivots[k0 + k] = (int)chunk[k];
    }
  }
  return QP_OK;
}

static qp_err qp_cuda_pivots_upload(int64_t n, const int *pivots) {
  const qp_cuda_context *c = &qp_cuda_ctx;
  int64_t chunk[QP_PIVOT_CHUNK];
  for (int64_t k0 = 0; k0 < n; k0 += QP_PIVOT_CHUNK) {
    int64_t count = n - k0 < QP_PIVOT_CHUNK ? n - k0 : QP_PIVOT_CHUNK;
    for (int64_t k = 0; k < count; ++k)
      chunk[k] = pivots[k0 + k];
    QP_CALL(qp_cuda_status(cudaMemcpyAsync(c->pivots + k0, chunk, (size_t)count * sizeof *chunk,
                                           cudaMemcpyHostToDevice, c->stream),
                           "writing getrs's pivots"));
    /* The stack buffer is reused for the next chunk: the copy must be done with it. */
    QP_CALL(qp_cuda_status(cudaStreamSynchronize(c->stream), "writing getrs's pivots"));
  }
  return QP_OK;
}

static qp_err qp_cuda_getrf(qp_matrix *a, int *pivots) {
  QP_CALL(qp_cuda_check_operand(a, "getrf"));
  int64_t n = a->rows;
  if (n == 0) return QP_OK;
  QP_CHECK(n <= INT_MAX, QP_ERR_UNSUPPORTED,
           "getrf of '%s': order %lld does not fit the int pivots of the operation table", a->name,
           (long long)n);
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_reserve_pivots(n));
  QP_CALL(qp_cuda_solver_prepare(QP_CUDA_GETRF, a));
  QP_CALL(qp_cusolver_status(cusolverDnXgetrf(c->solver, c->params, n, n, CUDA_R_64F, a->data,
                                              a->ld, c->pivots, CUDA_R_64F, c->solver_workspace,
                                              c->solver_workspace_bytes, c->solver_host_workspace,
                                              c->solver_host_workspace_bytes, c->info_word),
                             qp_what_of("cusolverDnXgetrf", a).text));
  int info = 0;
  QP_CALL(qp_cuda_read_info(&info));
  QP_CALL(qp_cuda_info_check(info, "cusolverDnXgetrf", a));
  /* The pivots of a failed factorization are of no use: they are read (and checked) only
   * after a successful one. */
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%lld x %lld) is singular: U(%d,%d) = 0", qp_stage_label(),
           a->name, (long long)n, (long long)n, info, info);
  QP_CALL(qp_cuda_pivots_download(n, pivots));
  return QP_OK;
}

static qp_err qp_cuda_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_CALL(qp_cuda_check_operand(lu, "getrs"));
  QP_CALL(qp_cuda_check_operand(b, "getrs"));
  int64_t n = lu->rows;
  if (n == 0 || b->cols == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_reserve_pivots(n));
  QP_CALL(qp_cuda_pivots_upload(n, pivots));
  QP_CALL(qp_cusolver_status(cusolverDnXgetrs(c->solver, c->params, CUBLAS_OP_N, n, b->cols,
                                              CUDA_R_64F, lu->data, lu->ld, c->pivots, CUDA_R_64F,
                                              b->data, b->ld, c->info_word),
                             qp_what_of("cusolverDnXgetrs", b).text));
  int info = 0;
  QP_CALL(qp_cuda_read_info(&info));
  QP_CALL(qp_cuda_info_check(info, "cusolverDnXgetrs", lu));
  return QP_OK;
}

static qp_err qp_cuda_trace_product(const qp_matrix *a, const qp_matrix *b, double *out) {
  QP_CALL(qp_cuda_check_operand(a, "trace_product"));
  QP_CALL(qp_cuda_check_operand(b, "trace_product"));
  *out = 0.0;
  if (a->rows == 0 || a->cols == 0) return QP_OK;
  const qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_reserve_reduction(a->cols + 1));
  QP_CALL(qp_cuda_status(qp_cuda_launch_trace_product(a->data, a->ld, b->data, b->ld, a->rows,
                                                      a->cols, c->reduction, c->stream),
                         qp_what_of("trace of a product", a).text));
  double sum = 0.0;
  QP_CALL(qp_cuda_status(
      cudaMemcpyAsync(&sum, c->reduction + a->cols, sizeof sum, cudaMemcpyDeviceToHost, c->stream),
      qp_what_of("reading a trace", a).text));
  QP_CALL(qp_cuda_status(cudaStreamSynchronize(c->stream), qp_what_of("reading a trace", a).text));
  *out = sum;
  return QP_OK;
}

/* B <- A^T with cublasDgeam (C = alpha op(A) + beta op(B), alpha 1, beta 0): B is passed as
 * geam's B too, untransposed with its own ld, which is cuBLAS's documented in-place form
 * (C = B); with beta 0 its entries are not used. */
static qp_err qp_cuda_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_CALL(qp_cuda_check_operand(a, "transpose"));
  QP_CALL(qp_cuda_check_operand(b, "transpose"));
  if (b->rows == 0 || b->cols == 0) return QP_OK;
  const double one = 1.0, zero = 0.0;
  QP_CALL(qp_cublas_status(cublasDgeam_64(qp_cuda_ctx.blas, CUBLAS_OP_T, CUBLAS_OP_N, b->rows,
                                          b->cols, &one, a->data, a->ld, &zero, b->data, b->ld,
                                          b->data, b->ld),
                           qp_what_of("cublasDgeam (transpose)", b).text));
  return QP_OK;
}

static qp_err qp_cuda_clear_upper(qp_matrix *a) {
  QP_CALL(qp_cuda_check_operand(a, "clear_upper"));
  QP_CALL(qp_cuda_status(qp_cuda_launch_clear_upper(a->data, a->rows, a->ld, qp_cuda_ctx.stream),
                         qp_what_of("clearing the upper triangle", a).text));
  return QP_OK;
}

static qp_cuda_runs qp_cuda_runs_of(const qp_run_scale *s) {
  qp_cuda_runs r = {0};
  if (!s) return r;
  r.runs = s->runs;
  for (int k = 0; k < s->runs; ++k) {
    r.end[k] = s->end[k];
    r.factor[k] = s->factor[k];
  }
  return r;
}

static qp_err qp_cuda_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  QP_CALL(qp_cuda_check_operand(a, "scale"));
  QP_CALL(qp_cuda_status(qp_cuda_launch_scale(a->data, a->rows, a->cols, a->ld,
                                              qp_cuda_runs_of(rows), qp_cuda_runs_of(cols),
                                              qp_cuda_ctx.stream),
                         qp_what_of("scaling", a).text));
  return QP_OK;
}

static const qp_linalg_ops qp_cuda_ops_table = {
    .name = "cuda",
    .space = QP_SPACE_DEVICE,
    .host_table = qp_linalg_cpu_ops, /* work and staging matrices */
    .download = qp_cuda_download,
    .upload = qp_cuda_upload,
    .potrf = qp_cuda_potrf,
    .potri = qp_cuda_potri,
    .trtri = qp_cuda_trtri,
    .trmm = qp_cuda_trmm,
    .trsm = qp_cuda_trsm,
    .gemm = qp_cuda_gemm,
    .syrk = qp_cuda_syrk,
    .potrs = qp_cuda_potrs,
    .getrf = qp_cuda_getrf,
    .getrs = qp_cuda_getrs,
    .trace_product = qp_cuda_trace_product,
    .copy_sub = qp_cuda_copy_sub,
    .norm1 = qp_cuda_norm1,
    .pocon = qp_cuda_pocon,
    .gecon = qp_cuda_gecon,
    .transpose = qp_cuda_transpose,
    .clear_upper = qp_cuda_clear_upper,
    .scale = qp_cuda_scale,
    .workspaces = qp_cuda_workspaces,
    .release_workspaces = qp_cuda_release_workspaces,
    .hold_workspace = qp_cuda_hold_workspace,
    /* sum_partials NULL: one process holds every matrix. */
    .moves_data = 1, /* align and replicate download into host work matrices */
};

const qp_linalg_ops *qp_linalg_cuda_ops(void) {
  return qp_cuda_ctx.ready ? &qp_cuda_ops_table : NULL;
}

/* One GPU per rank; QP_ERR_UNSUPPORTED "no CUDA device" on a machine without one. */
qp_err qp_linalg_cuda_start(const qp_linalg_ops **ops) {
  *ops = NULL;
  QP_CALL(qp_cuda_init_for_rank());
  *ops = &qp_cuda_ops_table;
  return QP_OK;
}
