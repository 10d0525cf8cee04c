/* cuda_kernels.cu: the kernels the cuda backend needs that cuBLAS and cuSOLVER lack
 * (cuda_kernels.h): mirroring a lower triangle onto the upper one (syrk and potri write one
 * half only, and matrix.h promises full results), the trace of a product and the 1-norm, each
 * in a fixed summation order. The only CUDA C++ file of qmlpipe; everything else calls the
 * libraries' C APIs from C. */
#include "cuda_kernels.h"

namespace {

constexpr int kTile = 32;    /* a 32 x 32 tile per block of the mirror */
constexpr int kTileRows = 8; /* threads per block: 32 x 8, four rows of the tile each */
constexpr int kReduce = 256; /* threads per block of the reductions (a power of two) */

/* Block (I, J) with I <= J fills the strictly upper part of tile (I, J) from tile (J, I):
 * read along columns of the source (coalesced), transposed through shared memory, written
 * along columns of the destination (coalesced). The padding column keeps the transposed
 * reads free of bank conflicts. Reads and writes never meet: only strictly upper elements are
 * written and only lower ones (or the diagonal tile, before the barrier) are read. */
__global__ void mirror_lower_kernel(double *a, int64_t n, int64_t lda) {
  const int64_t tile_i = blockIdx.y, tile_j = blockIdx.x;
  if (tile_i > tile_j) return;
  __shared__ double tile[kTile][kTile + 1];
  const int64_t src_row = tile_j * kTile + threadIdx.x;
  for (int y = threadIdx.y; y < kTile; y += kTileRows) {
    const int64_t src_col = tile_i * kTile + y;
    if (src_row < n && src_col < n) tile[y][threadIdx.x] = a[src_row + src_col * lda];
  }
  __syncthreads();
  const int64_t dst_row = tile_i * kTile + threadIdx.x;
  for (int y = threadIdx.y; y < kTile; y += kTileRows) {
    const int64_t dst_col = tile_j * kTile + y;
    if (dst_row < dst_col && dst_col < n) a[dst_row + dst_col * lda] = tile[threadIdx.x][y];
  }
}

/* The two reductions: a sum, and a maximum through which a NaN propagates (as LAPACK's
 * dlange: a NaN entry makes the norm NaN). */
struct Sum {
  __device__ double operator()(double x, double y) const { return x + y; }
};
struct NanMax {
  __device__ double operator()(double x, double y) const { return (y > x || y != y) ? y : x; }
};

/* Reduces the block's kReduce values in a fixed tree order; thread 0 gets the result. */
template <class Op> __device__ double block_reduce(double value, Op op) {
  __shared__ double partial[kReduce];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = kReduce / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] = op(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  return partial[0];
}

/* One block per column j of A: sums[j] = sum_i A(i, j) B(j, i). */
__global__ void trace_columns_kernel(const double *a, int64_t lda, const double *b, int64_t ldb,
                                     int64_t rows, double *sums) {
  const int64_t j = blockIdx.x;
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += kReduce)
    s += a[i + j * lda] * b[j + i * ldb];
  s = block_reduce(s, Sum());
  if (threadIdx.x == 0) sums[j] = s;
}

/* One block per column j of A: sums[j] = sum_i |A(i, j)|. */
__global__ void abs_columns_kernel(const double *a, int64_t lda, int64_t rows, double *sums) {
  const int64_t j = blockIdx.x;
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += kReduce)
    s += fabs(a[i + j * lda]);
  s = block_reduce(s, Sum());
  if (threadIdx.x == 0) sums[j] = s;
}

/* One block: sums[count] = op over sums[0..count), starting from 0 (both reductions here
 * are of sums of products or of absolute values: 0 is the identity of the max as well). */
template <class Op> __global__ void reduce_kernel(double *sums, int64_t count, Op op) {
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += kReduce)
    s = op(s, sums[k]);
  s = block_reduce(s, op);
  if (threadIdx.x == 0) sums[count] = s;
}

/* Block (I, J) with I <= J zeroes the strictly upper part of tile (I, J), along columns
 * (coalesced writes). */
__global__ void clear_upper_kernel(double *a, int64_t n, int64_t lda) {
  const int64_t tile_i = blockIdx.y, tile_j = blockIdx.x;
  if (tile_i > tile_j) return;
  const int64_t row = tile_i * kTile + threadIdx.x;
  for (int y = threadIdx.y; y < kTile; y += kTileRows) {
    const int64_t col = tile_j * kTile + y;
    if (row < col && col < n) a[row + col * lda] = 0.0;
  }
}

__device__ double runs_at(const qp_cuda_runs &s, int64_t i) {
  for (int k = 0; k < s.runs; ++k)
    if (i < s.end[k]) return s.factor[k];
  return 1.0;
}

/* One block of kReduce threads per column j (grid-stride over columns past the grid's 65535
 * y or its x limit), down the column (coalesced). */
__global__ void scale_kernel(double *a, int64_t rows, int64_t cols, int64_t lda,
                             qp_cuda_runs row_runs, qp_cuda_runs col_runs) {
  for (int64_t j = blockIdx.x; j < cols; j += gridDim.x) {
    const double c = runs_at(col_runs, j);
    for (int64_t i = threadIdx.x; i < rows; i += blockDim.x)
      a[i + j * lda] *= runs_at(row_runs, i) * c;
  }
}

} // namespace

extern "C" cudaError_t qp_cuda_launch_scale(double *a, int64_t rows, int64_t cols, int64_t lda,
                                            qp_cuda_runs row_runs, qp_cuda_runs col_runs,
                                            cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const unsigned blocks = (unsigned)(cols < 65535 ? cols : 65535);
  scale_kernel<<<blocks, kReduce, 0, stream>>>(a, rows, cols, lda, row_runs, col_runs);
  return cudaGetLastError();
}

extern "C" cudaError_t qp_cuda_launch_mirror_lower(double *a, int64_t n, int64_t lda,
                                                   cudaStream_t stream) {
  if (n <= 1) return cudaSuccess;
  const int64_t tiles = (n + kTile - 1) / kTile;
  if (tiles > 65535) return cudaErrorInvalidValue; /* grid y limit: n > 2,097,120 */
  const dim3 grid((unsigned)tiles, (unsigned)tiles), block(kTile, kTileRows);
  mirror_lower_kernel<<<grid, block, 0, stream>>>(a, n, lda);
  return cudaGetLastError();
}

extern "C" cudaError_t qp_cuda_launch_clear_upper(double *a, int64_t n, int64_t lda,
                                                  cudaStream_t stream) {
  if (n <= 1) return cudaSuccess;
  const int64_t tiles = (n + kTile - 1) / kTile;
  if (tiles > 65535) return cudaErrorInvalidValue; /* grid y limit, as the mirror's */
  const dim3 grid((unsigned)tiles, (unsigned)tiles), block(kTile, kTileRows);
  clear_upper_kernel<<<grid, block, 0, stream>>>(a, n, lda);
  return cudaGetLastError();
}

extern "C" cudaError_t qp_cuda_launch_trace_product(const double *a, int64_t lda, const double *b,
                                                    int64_t ldb, int64_t rows, int64_t cols,
                                                    double *sums, cudaStream_t stream) {
  if (cols < 1 || cols > 2147483647) return cudaErrorInvalidValue;
  trace_columns_kernel<<<(unsigned)cols, kReduce, 0, stream>>>(a, lda, b, ldb, rows, sums);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  reduce_kernel<<<1, kReduce, 0, stream>>>(sums, cols, Sum());
  return cudaGetLastError();
}

extern "C" cudaError_t qp_cuda_launch_norm1(const double *a, int64_t lda, int64_t rows,
                                            int64_t cols, double *sums, cudaStream_t stream) {
  if (cols < 1 || cols > 2147483647) return cudaErrorInvalidValue;
  abs_columns_kernel<<<(unsigned)cols, kReduce, 0, stream>>>(a, lda, rows, sums);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  reduce_kernel<<<1, kReduce, 0, stream>>>(sums, cols, NanMax());
  return cudaGetLastError();
}
