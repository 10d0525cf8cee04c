/* cuda_kernels.h: the launchers of the cuda backend's kernels (cuda_kernels.cu), callable
 * from C. Each queues its kernel on `stream` and returns the launch's status. */
#ifndef QP_CUDA_KERNELS_H
#define QP_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The strictly upper triangle of the n x n matrix a <- the transpose of its strictly lower
 *  one (what the host's qp_matrix_symmetrize_lower does). */
cudaError_t qp_cuda_launch_mirror_lower(double *a, int64_t n, int64_t lda, cudaStream_t stream);

/** The strictly upper triangle of the n x n matrix a <- 0. */
cudaError_t qp_cuda_launch_clear_upper(double *a, int64_t n, int64_t lda, cudaStream_t stream);

/** Factors constant on runs of indices (matrix.h's qp_run_scale, as plain C for the kernel). */
typedef struct qp_cuda_runs {
  int runs;
  int64_t end[3];
  double factor[3];
} qp_cuda_runs;

/** A(i, j) <- r(i) A(i, j) c(j) for the rows x cols matrix a (rows.runs or cols.runs 0: 1). */
cudaError_t qp_cuda_launch_scale(double *a, int64_t rows, int64_t cols, int64_t lda,
                                 qp_cuda_runs row_runs, qp_cuda_runs col_runs,
                                 cudaStream_t stream);

/** sums[j] = sum_i A(i, j) B(j, i) for j < cols (A rows x cols, B cols x rows), then
 *  sums[cols] = the sum of sums[0..cols) in a fixed order: no atomics, so that the result is
 *  the same from run to run. sums holds cols + 1 doubles; cols >= 1. */
cudaError_t qp_cuda_launch_trace_product(const double *a, int64_t lda, const double *b, int64_t ldb,
                                         int64_t rows, int64_t cols, double *sums,
                                         cudaStream_t stream);

/** sums[j] = sum_i |A(i, j)| for j < cols, then sums[cols] = their maximum (a NaN anywhere
 *  makes it NaN, as LAPACK's dlange): |A|_1. sums holds cols + 1 doubles; cols >= 1. */
cudaError_t qp_cuda_launch_norm1(const double *a, int64_t lda, int64_t rows, int64_t cols,
                                 double *sums, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
