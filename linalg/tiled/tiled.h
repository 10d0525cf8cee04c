/* tiled.h: distributed BLAS and Cholesky written once over a *local* table's operations and
 * MPI, for block-cyclic matrices (matrix.h) whose local parts live where the local table's
 * matrices do: the host (dist's matrices, local table cpu), the emulated device (hostdev-dist's,
 * local table hostdev) or, the reason this exists, a GPU per rank (a cuda table's, local table
 * cuda) without cuSOLVERMp, which is neither installed here nor in Debian (docs/gpu.md).
 *
 * Every algorithm is a loop over block steps. A step gathers the few global windows it needs
 * (a diagonal block, a panel of blocks, a block row of the right-hand side) whole on every rank
 * (each rank downloads its own entries of the window, MPI_Allgatherv, each rank unpacks:
 * qp_tiled_gather), packs from them the rows or columns that meet its own local part, uploads
 * those to the local table's space and calls the local table's potrf / trsm / trmm / gemm on
 * views of its local part. No rank ever reads another rank's memory or an element of a device
 * matrix on the host: the local table's operations and its download/upload are the only
 * access, so that the same code runs on a GPU per rank with the cuda table.
 *
 * Results equal ScaLAPACK's (dist) to rounding, not bitwise: the block order of the sums
 * differs. Communication: every rank receives every window whole (a panel of L and a block
 * row of B per step), i.e. each operand once per operation, where ScaLAPACK's row and column
 * broadcasts send each rank only its share; simple first, measured before it is refined.
 *
 * Collective: every rank of the grid calls each function with the same arguments. A rank
 * whose local step fails (a device refusing an operand, a diagonal block not positive definite)
 * makes every rank return its error (qp_comm_agree after each step), none left waiting.
 *
 * Workspace: one host block (QP_TERM_TILED_HOST: three windows and a packing stage) and one
 * block in the local table's space (QP_TERM_TILED_PANELS: the packed panels and the diagonal
 * block), their doubles per rank qp_tiled_*_sizes's, pure block-cyclic arithmetic for the
 * memory model. A backend that runs these operations holds both blocks for the whole run at
 * qp_tiled_bound_sizes of the problem's largest dimension (qp_tiled_hold), as a library holds
 * its workspace; without them an operation takes and frees its own (transient). */
#ifndef QP_TILED_H
#define QP_TILED_H

#include <stdint.h>

#include "matrix.h"
#include "tiled_sizes.h"

/** Grows the held block of term QP_TERM_TILED_HOST (host) or QP_TERM_TILED_PANELS (in `space`)
 *  to at least `bytes` (a persistent term, grown as a library's workspace: the old block freed
 *  before the larger is taken). While the held blocks fit an operation's sizes, it works in
 *  them and allocates nothing; otherwise it takes transient blocks of its own. Another term is
 *  left alone. */
qp_err qp_tiled_hold(const char *term, qp_space space, size_t bytes);
/** Frees the held blocks. */
void qp_tiled_release(void);
/** 1 while both blocks are held (the same on every rank: the run's model decides). */
int qp_tiled_holding(void);

/** C <- alpha op(A) op(B) + beta C (SUMMA over panels of QP_TILED_GEMM_BLOCKS blocks of the
 *  contraction). k = 0 is refused (nothing the stages ask for). */
qp_err qp_tiled_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                     const qp_matrix *b, double beta, qp_matrix *c);
/** C <- alpha op(A) op(A)^T + beta C, full (both triangles): a gemm, as dist's syrk. */
qp_err qp_tiled_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                     qp_matrix *c);
/** B <- alpha op(L)^-1 B (solve) or alpha op(L) B (product), or B op(L)^-1 / B op(L) on the
 *  right, L lower triangular (its strict upper part is not read). alpha 0 is refused. */
qp_err qp_tiled_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                     qp_matrix *b);
qp_err qp_tiled_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                     qp_matrix *b);
/* Which triangle of T a solve reads: getrf's factors hold a unit lower L (its diagonal is U's)
 * and U in one matrix. */
typedef enum qp_tiled_triangle {
  QP_TILED_LOWER,      /* lower, its diagonal read (potrf's L) */
  QP_TILED_UNIT_LOWER, /* lower, ones on the diagonal (not read) */
  QP_TILED_UPPER       /* upper, its diagonal read */
} qp_tiled_triangle;
/** B <- alpha op(T)^-1 B or alpha B op(T)^-1 with that triangle of T (qp_tiled_trsm is the
 *  lower one): the same sweep, a diagonal block made lower on the host before it is uploaded
 *  (ones written on a unit diagonal, an upper block transposed with the transposition
 *  turned round). */
qp_err qp_tiled_trsm_triangle(qp_side side, qp_trans trans, double alpha,
                              qp_tiled_triangle triangle, const qp_matrix *t, qp_matrix *b);
/** A = L L^T in place, right-looking by block columns. L is in the lower triangle; the strict
 *  upper triangle of the diagonal blocks is overwritten by the trailing updates (LAPACK leaves
 *  it as it was; nothing here reads it: trsm, trmm and pocon read the lower triangle). A
 *  matrix that is not positive definite is QP_ERR_NOT_POSDEF on every rank, naming the matrix
 *  and the global row of the leading minor that failed. */
qp_err qp_tiled_potrf(qp_matrix *a);
/** L <- L^-1 in place (lower, non-unit; tiled_inverse.c). The strict upper triangle is
 *  cleared first (LAPACK leaves it as it was): the local products read diagonal blocks whole.
 *  A zero on the diagonal is the local table's error on every rank, naming the diagonal block. */
qp_err qp_tiled_trtri(qp_matrix *l);
/** B[bi.., bj..] <- A[ai.., aj..] (rows x cols), A and B block-cyclic on one grid, either in
 *  host memory or in the local table's space (tiled_move.c). With equal offsets every entry
 *  stays on its rank (a local copy, no communication); otherwise A's windows of a block of
 *  columns are gathered whole and each rank writes its own entries of B. */
qp_err qp_tiled_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                         qp_matrix *b, int64_t bi, int64_t bj);
/** B <- A^T: A's column panels of a block, gathered whole, are B's row panels. */
qp_err qp_tiled_transpose(const qp_matrix *a, qp_matrix *b);
/** Zeros the strict upper triangle: each rank its local entries above the global diagonal,
 *  a local block column at a time (down, cleared, up: no device memory read on the host). */
qp_err qp_tiled_clear_upper(qp_matrix *a);
/** A(i, j) <- r(i) A(i, j) c(j) (matrix.h's scale), each rank its local entries a block
 *  column at a time through the work's staging. */
qp_err qp_tiled_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols);
/** |A|_1: each rank sums the magnitudes of its local columns (downloaded in panels of one
 *  block), the sums are completed over the ranks, the largest taken; NaN when an entry is. */
qp_err qp_tiled_norm1(const qp_matrix *a, double *out);
/** Reciprocal condition number of A = L L^T from L and anorm = |A|_1: LAPACK's estimator
 *  (condition_estimate.h) on host n-vectors replicated on every rank, each product a pair of
 *  qp_tiled_trsm on a distributed n x 1 vector (term QP_TERM_TILED_VECTOR). */
#define QP_TERM_TILED_VECTOR "tiled condition vector"
qp_err qp_tiled_pocon(const qp_matrix *l, double anorm, double *rcond);
/** The same from getrf's factors (qp_tiled_getrf): the estimator's products are solves with
 *  the unit lower L and with U (dgecon's). */
qp_err qp_tiled_gecon(const qp_matrix *lu, double anorm, double *rcond);

/** P A = L U in place with partial pivoting, right-looking by block columns (tiled_lu.c). Each
 *  step gathers its panel (the block column from the diagonal down) whole on every rank; rank 0
 *  factors it with LAPACK's dgetrf on the host (the panel is n x block: O(n block^2) a step,
 *  the flops are in the trailing gemm) and broadcasts it with its pivots, so that every rank
 *  applies the same row interchanges; the rows they exchange move between process rows (each
 *  rank downloads its part of the rows that change, gathered, each uploads its new rows); the
 *  panel's process column writes the factored panel, the block row right of it is solved with
 *  the unit L_kk on its process row, and every rank updates its local trailing part with one
 *  gemm. pivots: ScaLAPACK's layout (qp_linalg_pivot_count): for each local row, the global
 *  row (from 1) it was interchanged with. An exactly zero pivot is QP_ERR_NOT_POSDEF on every
 *  rank, naming the matrix and the column. */
qp_err qp_tiled_getrf(qp_matrix *a, int *pivots);
/** B <- A^-1 B from qp_tiled_getrf's factors and pivots: B's rows permuted (a block column at a
 *  time, gathered whole), then the solves with L (unit lower) and U. */
qp_err qp_tiled_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b);
/** B <- A^-1 B from A's Cholesky factor L: the solves with L and L^T. */
qp_err qp_tiled_potrs(const qp_matrix *l, qp_matrix *b);

#endif
