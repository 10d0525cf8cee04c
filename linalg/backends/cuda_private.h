/* cuda_private.h: what the cuda backend's files share (cuda_context.c, cuda.c, cuda_copy.c,
 * cuda_condition.c, cuda_kernels.cu): the context, the wrappers that turn CUDA/cuBLAS/cuSOLVER
 * statuses into qp_err, the growing buffers, and the kernels' launchers. Not for use outside
 * linalg/. */
#ifndef QP_CUDA_PRIVATE_H
#define QP_CUDA_PRIVATE_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <stdint.h>

#include "cuda_backend.h"
#include "cuda_kernels.h"

typedef struct qp_cuda_context {
  int ready;
  qp_cuda_device_info info;
  cudaStream_t stream;
  cublasHandle_t blas;
  cusolverDnHandle_t solver;
  cusolverDnParams_t params;
  void *blas_workspace;   /* QP_TERM_CUBLAS_WORKSPACE */
  int *info_word;         /* QP_TERM_CUSOLVER_INFO */
  void *solver_workspace; /* QP_TERM_CUSOLVER_WORKSPACE */
  size_t solver_workspace_bytes;
  void *solver_host_workspace; /* QP_TERM_CUSOLVER_HOST_WORKSPACE (host) */
  size_t solver_host_workspace_bytes;
  int64_t *pivots; /* QP_TERM_DEVICE_PIVOTS */
  size_t pivots_bytes;
  double *reduction; /* QP_TERM_DEVICE_REDUCTION */
  size_t reduction_bytes;
  uint64_t to_device, to_host; /* bytes copied by qp_cuda_matrix_copy */
  /* Pinned staging (cuda_pinned.c): two halves of one QP_TERM_PINNED_STAGING block,
   * page-locked with cudaHostRegister, and an event per half: its last copy is done. */
  double *pinned[2];
  int pinned_registered;
  cudaEvent_t pinned_done[2];
} qp_cuda_context;

/** The one context of the process (cuda_context.c). */
extern qp_cuda_context qp_cuda_ctx;

/* Each wrapper returns QP_OK for success, else QP_ERR_GPU with `what` (the routine and the
 * matrix) and the library's own name for the status. Built with QP_CUDA_SYNC_CHECK (Debug
 * builds, or -DQP_CUDA_SYNC_CHECK=ON), a success also waits for the stream and collects any
 * asynchronous error of the work just queued, reported under the same `what`: every call of
 * the backend goes through one of these, so an error names the operation that caused it. */
qp_err qp_cuda_status(cudaError_t status, const char *what);
qp_err qp_cublas_status(cublasStatus_t status, const char *what);
qp_err qp_cusolver_status(cusolverStatus_t status, const char *what);

/** Makes sure the cuSOLVER workspaces hold at least these bytes (growing them through the
 *  budget: the old buffer is freed first, so the peak is the larger size, not the sum). */
qp_err qp_cuda_reserve_solver(size_t device_bytes, size_t host_bytes);
/** Makes sure the device pivots hold n int64 entries. */
qp_err qp_cuda_reserve_pivots(int64_t n);
/** Makes sure the device reduction buffer holds n doubles. */
qp_err qp_cuda_reserve_reduction(int64_t n);
/** Reads the info word back (waits for the stream). */
qp_err qp_cuda_read_info(int *info);
/** QP_ERR_INTERNAL unless the context exists and `m` is a device matrix. */
qp_err qp_cuda_check_operand(const qp_matrix *m, const char *routine);

/** dst[.., dld] <- src[.., sld], rows x cols doubles, in the direction `kind`, on the
 *  context's stream; returns when the copy is done, with the host <-> device bytes counted
 *  (qp_cuda_transfer_bytes). What every copy of the backend goes through (cuda_copy.c). */
qp_err qp_cuda_copy_2d(double *dst, int64_t dld, const double *src, int64_t sld, int64_t rows,
                       int64_t cols, enum cudaMemcpyKind kind, const char *what);

/** Creates the pinned staging's two events: at init, before the device meter's baseline
 *  (events are the context's). cuda_pinned.c. */
qp_err qp_cuda_pinned_events(void);
/** Takes the pinned staging (QP_TERM_PINNED_STAGING, host), writes every page and registers
 *  it; then a no-op. The table's hold_workspace calls it, i.e. the first stage (the model
 *  counts the block from there); until then large copies go straight through cudaMemcpy. */
qp_err qp_cuda_pinned_hold(void);
/** Waits for the stream, unregisters and frees the pinned staging (safe when absent). */
void qp_cuda_pinned_destroy(void);
/** A host <-> device copy of pageable host memory through the pinned staging, piece by piece
 *  (linalg/backends/copy_pieces.h), packing one half while the device copies the other; returns
 * when the host side is complete. kind: cudaMemcpyHostToDevice or cudaMemcpyDeviceToHost. */
qp_err qp_cuda_pinned_copy(double *dst, int64_t dld, const double *src, int64_t sld, int64_t rows,
                           int64_t cols, enum cudaMemcpyKind kind, const char *what);

/* Table operations defined outside cuda.c (see matrix.h for what each does). */
qp_err qp_cuda_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows, int64_t cols,
                        double *host, int64_t ld); /* cuda_copy.c */
qp_err qp_cuda_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                      int64_t rows, int64_t cols);
qp_err qp_cuda_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                        qp_matrix *b, int64_t bi, int64_t bj);
qp_err qp_cuda_norm1(const qp_matrix *a, double *out); /* cuda_condition.c */
qp_err qp_cuda_pocon(const qp_matrix *l, double anorm, double *rcond);
qp_err qp_cuda_gecon(const qp_matrix *lu, double anorm, double *rcond);

#endif
