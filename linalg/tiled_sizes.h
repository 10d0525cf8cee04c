/* tiled_sizes.h: the workspace of the tiled distributed algorithms (tiled/tiled.h), as block-
 * cyclic arithmetic alone: its two terms' names and the doubles each operation holds on a rank.
 * Public to the rest of qmlpipe because the memory model predicts these terms (pipeline/
 * memory_model.c); the algorithms themselves are private to linalg/ (tiled/tiled.h). */
#ifndef QP_TILED_SIZES_H
#define QP_TILED_SIZES_H

#include <stdint.h>

#define QP_TERM_TILED_HOST "tiled panels (host)"
#define QP_TERM_TILED_PANELS "tiled panels"

/** A gemm's contraction runs in panels of this many blocks. Wider panels make fewer, larger
 *  local gemms, but every panel is held for the run (qp_tiled_bound_sizes) in device memory: at
 *  one block (64) they are local rows + local columns of the largest dimension x 64 doubles,
 *  4 MiB a rank at n_pix 8064 on 2 x 2 ranks, against 130 MiB for C alone. */
enum { QP_TILED_GEMM_BLOCKS = 1 };

/* The doubles an operation holds on one rank: `host` in host memory (3 windows + a stage),
 * `local` in the local table's space (packed panels + a diagonal block). */
typedef struct qp_tiled_sizes {
  int64_t window, stage;          /* host: a gathered window, the packing stage */
  int64_t panel_a, panel_b, tile; /* local space: the two packed panels, a diagonal block */
  int64_t vector;                 /* local space, held only: pocon's n-vector, last */
} qp_tiled_sizes;

/** What every operation on matrices of at most max_dim rows and columns fits in (tiled.h's
 *  operations, each of its own sizes, laid out from the start of the held blocks): a window of
 *  max_dim x QP_TILED_GEMM_BLOCKS blocks, the panels of this rank's share of max_dim rows and
 *  columns as wide, one diagonal block, and after them pocon's vector (this rank's rows of
 *  max_dim), so that a held run allocates nothing in any operation. */
qp_tiled_sizes qp_tiled_bound_sizes(int64_t max_dim, int nb, int nprow, int npcol, int myrow,
                                    int mycol);

/** Host doubles and local-space doubles of a qp_tiled_sizes. */
int64_t qp_tiled_host_doubles(const qp_tiled_sizes *s);
int64_t qp_tiled_local_doubles(const qp_tiled_sizes *s);

/** What each operation holds on the rank at (myrow, mycol) of an nprow x npcol grid of block
 *  nb: gemm C (m x n) = op(A) op(B) with contraction k; the triangular solve or product with an
 *  n x n L of B (rows x cols), on either side (the same panels); potrf of an n x n matrix. */
qp_tiled_sizes qp_tiled_gemm_sizes(int64_t m, int64_t n, int64_t k, int nb, int nprow, int npcol,
                                   int myrow, int mycol);
qp_tiled_sizes qp_tiled_triangular_sizes(int64_t rows, int64_t cols, int nb,
                                         int nprow, int npcol, int myrow, int mycol);
qp_tiled_sizes qp_tiled_potrf_sizes(int64_t n, int nb, int nprow, int npcol, int myrow,
                                    int mycol);

#endif
