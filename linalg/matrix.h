/* matrix.h: the matrix handle and the table of operations every backend provides.
 *
 * Column-major doubles. A matrix owns its buffer (allocated through the budget under a term
 * name) or is a view into another matrix's buffer. The handle carries its backend's operation
 * table; pipeline code calls qp_linalg_* and never knows which backend runs it. An operation a
 * backend lacks returns QP_ERR_UNSUPPORTED. Only lower-triangular storage is used for
 * Cholesky factors ('L' in LAPACK terms). */
#ifndef QP_MATRIX_H
#define QP_MATRIX_H

#include <stdint.h>

#include "block_cyclic.h"
#include "budget.h"
#include "grid.h"
#include "qp_error.h"

typedef struct qp_linalg_ops qp_linalg_ops;

/* The operations whose backend holds buffers of its own besides the operands (a device
 * backend's library workspaces, its pivots): what the table's `workspaces` is asked about.
 * QP_OP_INIT: the buffers the backend holds from its start, whatever runs. */
typedef enum qp_linalg_op {
  QP_OP_INIT = 0,
  QP_OP_POTRF,
  QP_OP_POTRI,
  QP_OP_TRTRI,
  QP_OP_GETRF,
  QP_OP_GETRS,
  QP_OP_NORM1, /* n columns */
  QP_OP_POCON,
  QP_OP_GECON,
  QP_OP_COUNT
} qp_linalg_op;

enum { QP_WORKSPACES_MAX = 4 };
/* One buffer a backend holds for an operation: its budget term, space and bytes. The backend
 * keeps each term (the name and space) at the largest size any operation asked for so far,
 * growing it by freeing the old block before taking the new one, until the table's
 * release_workspaces (QP_OP_INIT's terms: until the backend is finalised). */
typedef struct qp_workspace {
  const char *term;
  qp_space space;
  size_t bytes;
} qp_workspace;

/* A matrix is local (grid NULL: this process holds all of it) or distributed block-cyclic over
 * a process grid (linalg/grid.h): rows and cols are then the global shape, data holds this
 * rank's local_rows x local_cols (leading dimension ld), and desc is its ScaLAPACK
 * descriptor. Element loops go over the local part with qp_matrix_global_row/col, which are
 * the identity for a local matrix, so one loop serves both. */
typedef struct qp_matrix {
  int64_t rows, cols, ld;
  double *data;        /* in `space` */
  const qp_grid *grid; /* NULL: local */
  int64_t local_rows, local_cols;
  int desc[9]; /* ScaLAPACK descriptor (distributed only) */
  qp_space space;
  const qp_linalg_ops *ops;
  char name[QP_TERM_NAME_MAX]; /* the budget term, used in error messages */
  int owns;                    /* 1: data came from qp_budget_alloc and is freed with the matrix */
} qp_matrix;

typedef enum qp_side { QP_LEFT = 0, QP_RIGHT = 1 } qp_side;
/* A diagonal scaling constant on runs of consecutive global indices: index i gets factor[k] of
 * the first k with i < end[k], 1 past the last run. The data vector's fields (T, then Q and U)
 * are such runs: the conditioning guards equilibrate a matrix field by field (conditioning.h)
 * with powers of 2, which scale every operation exactly. */
#define QP_SCALE_RUNS_MAX 3
typedef struct qp_run_scale {
  int runs;
  int64_t end[QP_SCALE_RUNS_MAX];
  double factor[QP_SCALE_RUNS_MAX];
} qp_run_scale;
static inline double qp_run_scale_at(const qp_run_scale *s, int64_t i) {
  for (int k = 0; k < s->runs; ++k)
    if (i < s->end[k]) return s->factor[k];
  return 1.0;
}
/* The same runs with the reciprocal factors: what undoes a scaling (exactly, for powers of 2). */
static inline qp_run_scale qp_run_scale_reciprocal(const qp_run_scale *s) {
  qp_run_scale r = *s;
  for (int k = 0; k < r.runs; ++k)
    r.factor[k] = 1.0 / s->factor[k];
  return r;
}
typedef enum qp_trans { QP_NOTRANS = 0, QP_TRANS = 1 } qp_trans;

struct qp_linalg_ops {
  const char *name;
  int distributed; /* 1: matrices are block-cyclic over qp_grid_current() */
  /* Where this backend's matrices live. QP_SPACE_DEVICE (cuda, hostdev): their data is not host
   * memory; host code reaches their entries only through upload/download, i.e. through a host
   * window (host_window.h), never through m->data. */
  qp_space space;
  /* The table of the host matrices that go with this backend's (work matrices of align and
   * replicate, staging): NULL means this table itself (host backends). */
  const qp_linalg_ops *(*host_table)(void);
  /* The table of matrices of this process alone that live where this backend's do (each
   * rank's local parts stacked, their Gram matrices): NULL means cpu for a distributed
   * backend, this table itself for a local one (qp_linalg_local_ops). */
  const qp_linalg_ops *(*local_table)(void);
  /* Device backends: host[.., ld] <-> the local block (li.., lj..) of m, rows x cols.
   * NULL on host backends (qp_linalg_download/upload copy in host memory there). */
  qp_err (*download)(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows, int64_t cols,
                     double *host, int64_t ld);
  qp_err (*upload)(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                   int64_t rows, int64_t cols);
  /* A = L L^T in place (lower). info > 0: QP_ERR_NOT_POSDEF naming the stage, matrix, row. */
  qp_err (*potrf)(qp_matrix *a);
  /* A^-1 from its Cholesky factor L, in place (lower half; the caller mirrors it). */
  qp_err (*potri)(qp_matrix *l);
  /* L -> L^-1 in place (lower, non-unit). */
  qp_err (*trtri)(qp_matrix *l);
  /* B <- L B (left) or B L (right), L^T with trans: L lower triangular. */
  qp_err (*trmm)(qp_side side, qp_trans trans, double alpha, const qp_matrix *l, qp_matrix *b);
  /* B <- L^-1 B (left) or B L^-1 (right), L^-T with trans. */
  qp_err (*trsm)(qp_side side, qp_trans trans, double alpha, const qp_matrix *l, qp_matrix *b);
  /* C <- alpha op(A) op(B) + beta C */
  qp_err (*gemm)(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a, const qp_matrix *b,
                 double beta, qp_matrix *c);
  /* The same on windows of three distributed matrices: C[ci.., cj..] (m x n) <- alpha
   * op(A[ai.., aj..]) op(B[bi.., bj..]) + beta C[..], contraction k (PBLAS's IA, JA). NULL:
   * only matrices this process holds whole (qp_linalg_gemm_sub views them instead). */
  qp_err (*gemm_sub)(qp_trans ta, qp_trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                     const qp_matrix *a, int64_t ai, int64_t aj, const qp_matrix *b, int64_t bi,
                     int64_t bj, double beta, qp_matrix *c, int64_t ci, int64_t cj);
  /* C <- alpha A^T A + beta C (trans) or alpha A A^T + beta C; only the lower half of C is
   * written, then mirrored so that C is full. */
  qp_err (*syrk)(qp_trans trans, double alpha, const qp_matrix *a, double beta, qp_matrix *c);
  /* A = P L U in place (getrf); pivots: rows ints. info > 0: QP_ERR_NOT_POSDEF (singular). */
  qp_err (*getrf)(qp_matrix *a, int *pivots);
  /* B <- A^-1 B from getrf's factors (getrs, no transpose). */
  qp_err (*getrs)(const qp_matrix *lu, const int *pivots, qp_matrix *b);
  /* B <- A^-1 B from the Cholesky factor L of A (potrs). */
  qp_err (*potrs)(const qp_matrix *l, qp_matrix *b);
  /* *out = tr(A B) = sum_ij A_ij B_ji */
  qp_err (*trace_product)(const qp_matrix *a, const qp_matrix *b, double *out);
  /* B[bi.., bj..] <- A[ai.., aj..], rows x cols, whatever the two layouts (pdgemr2d). */
  qp_err (*copy_sub)(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                     qp_matrix *b, int64_t bi, int64_t bj);
  /* *out = |A|_1, the largest column sum of |a_ij| (taken before A is factored). */
  qp_err (*norm1)(const qp_matrix *a, double *out);
  /* *rcond = 1 / (|A|_1 |A^-1|_1), estimated from A's Cholesky factor L (pocon) or its LU
   * factors (gecon) and anorm = |A|_1: O(n^2), next to the factorisation's O(n^3). */
  qp_err (*pocon)(const qp_matrix *l, double anorm, double *rcond);
  qp_err (*gecon)(const qp_matrix *lu, double anorm, double *rcond);
  /* B <- A^T (B is cols x rows of A; pdtran). */
  qp_err (*transpose)(const qp_matrix *a, qp_matrix *b);
  /* The strictly upper triangle of the square A <- 0 (what potrf and trtri leave of the
   * factored matrix above a lower factor), where A lives: no copy to the host. */
  qp_err (*clear_upper)(qp_matrix *a);
  /* A(i, j) <- r(i) A(i, j) c(j) for global i, j (rows or cols NULL: 1). */
  qp_err (*scale)(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols);
  /* x <- the sum over the ranks that share this backend's matrices of their partial x (each
   * rank summed over the elements it holds): a no-op where one process holds everything. */
  qp_err (*sum_partials)(double *x, int64_t count);
  /* 1: entries at different positions may live on different ranks (dist), or on a device
   * (cuda, hostdev), so lining a window of one matrix up with positions of another
   * (qp_linalg_align), or making a matrix whole on every rank (qp_linalg_replicate), moves
   * data into a host work matrix; 0: every entry is addressable here and both are index
   * arithmetic. */
  int moves_data;
  /* Device backends: the buffers of their own the backend will hold for `op` on an n x n
   * operand (nrhs right-hand sides for getrs), *count of them into out (0 when none; each at
   * most QP_WORKSPACES_MAX), so that the memory model predicts them (memory_model.c). NULL:
   * the backend holds none. QP_ERR_UNSUPPORTED where the sizes cannot be known here (cuda
   * without a context: cuSOLVER's queries need a handle). */
  qp_err (*workspaces)(qp_linalg_op op, int64_t n, int64_t nrhs, qp_workspace *out, int *count);
  /* Frees the growing workspaces (not QP_OP_INIT's); NULL: nothing to free. qp_problem_free
   * calls it once the run is done with its matrices (after the last stage and the report). */
  void (*release_workspaces)(void);
  /* Grows the backend's own buffer `term` (a name of `workspaces`) to at least `bytes`, as an
   * operation that needs them would: a run resumed from a checkpoint holds what the restored
   * stages had grown (pipeline/checkpoint.h). A term the backend does not grow (QP_OP_INIT's,
   * held from its start) is left as it is. NULL: the backend holds none. */
  qp_err (*hold_workspace)(const char *term, size_t bytes);
};

/** Starts the backend `name` by its row of backends.h (the row's start): "cpu", and what this
 *  build adds ("cuda", "dist"), or the distributed forms the driver picks ("dist",
 *  "cuda-dist": they need qp_grid_init). The test-only ones (hostdev, hostdev-dist,
 *  hostdev-tiled: tests/support/hostdev.h) start only where the test library installed them.
 *  Errors: QP_ERR_INPUT for an unknown name or a test-only backend not installed here,
 *  QP_ERR_UNSUPPORTED for a backend this build lacks, the start's own (QP_ERR_MPI without the
 *  grid, QP_ERR_UNSUPPORTED without a CUDA device). */
qp_err qp_linalg_backend(const char *name, const qp_linalg_ops **ops);
/** Ends what qp_linalg_backend started for this process: the cuda context (its handles, the
 * cuBLAS workspace, the info word and the pinned staging buffer, all budget blocks) is
 * finalised; nothing else holds such state. After the last matrix is destroyed, before the
 * run's check that no block is left; a no-op where no context exists. */
void qp_linalg_backend_end(void);
const qp_linalg_ops *qp_linalg_cpu_ops(void);
/** The ScaLAPACK backend, or NULL in a build without it. */
const qp_linalg_ops *qp_linalg_dist_ops(void);
/** The starts of "cpu" and "dist" (their rows in backends.c); dist's needs the process grid
 *  (QP_ERR_MPI) and exists in builds with ScaLAPACK only. */
qp_err qp_linalg_cpu_start(const qp_linalg_ops **ops);
qp_err qp_linalg_dist_start(const qp_linalg_ops **ops);
/** The starts of "cuda" and "cuda-dist", in builds with CUDA (linalg/backends/cuda*.c): the
 *  device of this rank (qp_cuda_init_for_rank), and for cuda-dist the check of ScaLAPACK's
 *  process grid. Declared here, not in the private cuda_backend.h, because backends.c, outside the
 *  backends' folder, names them in its rows. */
qp_err qp_linalg_cuda_start(const qp_linalg_ops **ops);
qp_err qp_linalg_cuda_dist_start(const qp_linalg_ops **ops);

/** Global row of local row li (the identity for a local matrix). */
static inline int64_t qp_matrix_global_row(const qp_matrix *m, int64_t li) {
  return m->grid ? qp_bc_global_index(li, m->grid->block, m->grid->myrow, m->grid->nprow) : li;
}
static inline int64_t qp_matrix_global_col(const qp_matrix *m, int64_t lj) {
  return m->grid ? qp_bc_global_index(lj, m->grid->block, m->grid->mycol, m->grid->npcol) : lj;
}
/** The local rows whose global row is below gi (local rows keep the global order). */
static inline int64_t qp_matrix_local_rows_below(const qp_matrix *m, int64_t gi) {
  if (!m->grid) return gi < m->local_rows ? gi : m->local_rows;
  return qp_bc_local_count(gi, m->grid->block, m->grid->myrow, m->grid->nprow);
}
/** The local row of global row gi, or -1 when another rank holds it. */
static inline int64_t qp_matrix_local_row(const qp_matrix *m, int64_t gi) {
  if (!m->grid) return gi;
  const qp_grid *g = m->grid;
  return qp_bc_owner(gi, g->block, g->nprow) == g->myrow ? qp_bc_local_index(gi, g->block, g->nprow)
                                                         : -1;
}
/** The local column of global column gj, or -1 when another rank holds it. */
static inline int64_t qp_matrix_local_col(const qp_matrix *m, int64_t gj) {
  if (!m->grid) return gj;
  const qp_grid *g = m->grid;
  return qp_bc_owner(gj, g->block, g->npcol) == g->mycol ? qp_bc_local_index(gj, g->block, g->npcol)
                                                         : -1;
}
/** 1 and *local (li + lj ld) when this rank holds global entry (gi, gj). */
static inline int qp_matrix_local_offset(const qp_matrix *m, int64_t gi, int64_t gj,
                                         int64_t *local) {
  if (!m->grid) {
    *local = gi + gj * m->ld;
    return 1;
  }
  const qp_grid *g = m->grid;
  if (qp_bc_owner(gi, g->block, g->nprow) != g->myrow ||
      qp_bc_owner(gj, g->block, g->npcol) != g->mycol)
    return 0;
  *local =
      qp_bc_local_index(gi, g->block, g->nprow) + qp_bc_local_index(gj, g->block, g->npcol) * m->ld;
  return 1;
}
/** Column j of `stack` (a local matrix whose columns each hold the local part of one
 *  rows x cols matrix of `ops`, e.g. the products of fisher_run), seen as that matrix: a view
 *  in the stack's space named `name`. */
qp_err qp_matrix_stack_slot(const qp_matrix *stack, int64_t j, const qp_linalg_ops *ops,
                            const char *name, int64_t rows, int64_t cols, qp_matrix *slot);
/** Columns [j0, j0 + cols) of m: a view in m's space and table. Of a distributed m, only from
 *  a j0 that is a multiple of block x npcol (the leading columns, for one), where the range's
 *  local parts form a block-cyclic matrix of their own. */
qp_err qp_matrix_columns(const qp_matrix *m, int64_t j0, int64_t cols, qp_matrix *view);
/** A view of the whole of m under another name (for error messages), in m's space. */
qp_err qp_matrix_alias(const qp_matrix *m, const char *name, qp_matrix *view);
/** 1 when this process holds every element (a local matrix, or a grid of one process). */
static inline int qp_matrix_held_whole(const qp_matrix *m) {
  return m->local_rows == m->rows && m->local_cols == m->cols;
}

/** Elements this rank holds (local_rows x local_cols). */
static inline int64_t qp_matrix_local_size(const qp_matrix *m) {
  return m->local_rows * m->local_cols;
}

/** The table for host matrices that work next to `ops`'s: `ops` itself on a host backend, the
 *  cpu table on a device backend (dist's on a distributed one, hostdev-dist). */
const qp_linalg_ops *qp_linalg_host_ops(const qp_linalg_ops *ops);
/** The table for matrices of this process alone that live where `ops`'s do (each rank's own
 *  elements of distributed matrices, stacked; Gram matrices of them): the cpu table for a
 *  distributed host backend, the one-rank device table for a distributed device backend
 *  (hostdev for hostdev-dist), `ops` itself otherwise. */
const qp_linalg_ops *qp_linalg_local_ops(const qp_linalg_ops *ops);
/** The buffers `ops`'s backend holds for `op` (the table's workspaces; *count 0 when it has
 *  none). */
qp_err qp_linalg_workspaces(const qp_linalg_ops *ops, qp_linalg_op op, int64_t n, int64_t nrhs,
                            qp_workspace out[QP_WORKSPACES_MAX], int *count);
/** Frees the growing workspaces of `ops`'s backend (a no-op where it has none). */
void qp_linalg_release_workspaces(const qp_linalg_ops *ops);
/** Grows `ops`'s own buffer `term` to at least `bytes` (a no-op where it has none). */
qp_err qp_linalg_hold_workspace(const qp_linalg_ops *ops, const char *term, size_t bytes);
/** 1 when `ops` keeps its matrices in device memory. */
int qp_linalg_on_device(const qp_linalg_ops *ops);
/** host[.., ld] <- the local block (li.., lj..) of m (rows x cols), whatever m's space. */
qp_err qp_linalg_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows, int64_t cols,
                          double *host, int64_t ld);
/** The local block (li.., lj..) of m (rows x cols) <- host[.., ld], whatever m's space. */
qp_err qp_linalg_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                        int64_t rows, int64_t cols);

/** Allocates a rows x cols matrix (zero-filled) under budget term `term`, in the backend's
 *  space (device memory for a device backend). */
qp_err qp_matrix_create(const qp_linalg_ops *ops, const char *term, qp_term_kind kind, int64_t rows,
                        int64_t cols, qp_matrix *m);
/** Wraps an existing buffer (not freed by qp_matrix_destroy). With a distributed backend,
 *  rows x cols is the global shape and the buffer holds the local part (ld is ignored). */
qp_err qp_matrix_view(const qp_linalg_ops *ops, const char *name, double *data, int64_t rows,
                      int64_t cols, int64_t ld, qp_matrix *m);
/** Local elements of a rows x cols matrix of `ops` on this rank (rows x cols when local). */
int64_t qp_matrix_local_elements(const qp_linalg_ops *ops, int64_t rows, int64_t cols);
/** Sets every element to 0 and the diagonal to `diagonal` (local part; through a host
 *  window on a device backend). */
qp_err qp_matrix_set_identity(qp_matrix *m, double diagonal);
/** Frees an owned buffer; resets the handle. Safe on a zeroed or destroyed handle. */
void qp_matrix_destroy(qp_matrix *m);
/** Copies the lower triangle onto the upper one (host space, local matrices). */
void qp_matrix_symmetrize_lower(qp_matrix *m);
/** B[bi.., bj..] <- A[ai.., aj..] (rows x cols), for any two layouts of one backend. */
qp_err qp_linalg_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai, int64_t aj,
                          qp_matrix *b, int64_t bi, int64_t bj);

/* Dispatch through the matrix's table; each checks shapes first. */
qp_err qp_linalg_potrf(qp_matrix *a);
qp_err qp_linalg_trtri(qp_matrix *l);
/** A^-1 from L (potri), mirrored so that the result is full. */
qp_err qp_linalg_potri(qp_matrix *l);
qp_err qp_linalg_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l, qp_matrix *b);
qp_err qp_linalg_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l, qp_matrix *b);
qp_err qp_linalg_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                      const qp_matrix *b, double beta, qp_matrix *c);
/** C[ci.., cj..] (m x n) <- alpha op(A[ai.., aj..]) op(B[bi.., bj..]) + beta C[ci.., cj..],
 *  contraction k: a product of windows of whole matrices, without copying them out (matrices
 *  held whole by this process are viewed at the offsets; distributed ones need the table's
 *  gemm_sub: QP_ERR_UNSUPPORTED where it has none). */
qp_err qp_linalg_gemm_sub(qp_trans ta, qp_trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                          const qp_matrix *a, int64_t ai, int64_t aj, const qp_matrix *b,
                          int64_t bi, int64_t bj, double beta, qp_matrix *c, int64_t ci,
                          int64_t cj);
qp_err qp_linalg_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta, qp_matrix *c);
qp_err qp_linalg_potrs(const qp_matrix *l, qp_matrix *b);
/** LU with partial pivoting in place; pivots holds a->rows ints (host). A singular matrix is
 *  QP_ERR_NOT_POSDEF naming the stage and the matrix. */
qp_err qp_linalg_getrf(qp_matrix *a, int *pivots);
/** Pivot entries qp_linalg_getrf needs for `a`: its rows, or for a distributed matrix its
 *  local rows plus one block (ScaLAPACK's LOCr(M) + MB). */
int64_t qp_linalg_pivot_count(const qp_matrix *a);
/** B <- A^-1 B from qp_linalg_getrf's factors. */
qp_err qp_linalg_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b);
qp_err qp_linalg_trace_product(const qp_matrix *a, const qp_matrix *b, double *out);
/** |A|_1 (collective for a distributed matrix). */
qp_err qp_linalg_norm1(const qp_matrix *a, double *out);
/** Reciprocal 1-norm condition number of A = L L^T from L and anorm = |A|_1 (LAPACK dpocon,
 *  ScaLAPACK pdpocon: an estimate, usually within a factor 3 of the truth; collective). */
qp_err qp_linalg_pocon(const qp_matrix *l, double anorm, double *rcond);
/** The same for a general A from qp_linalg_getrf's factors (dgecon / pdgecon). */
qp_err qp_linalg_gecon(const qp_matrix *lu, double anorm, double *rcond);

/** B <- A^T (b: A's cols x rows, same backend). */
qp_err qp_linalg_transpose(const qp_matrix *a, qp_matrix *b);
/** The strictly upper triangle of the square A <- 0, on A's backend. */
qp_err qp_linalg_clear_upper(qp_matrix *a);
/** The same on a host matrix of any layout: each rank its own entries (the clear_upper of the
 *  host tables, cpu and dist; nothing to communicate). */
qp_err qp_matrix_clear_upper_local(qp_matrix *a);
/** A(i, j) <- r(i) A(i, j) c(j) over global indices, on A's backend (rows or cols NULL: no
 *  scaling that way). With powers of 2 exact: undone exactly by the reciprocals. */
qp_err qp_linalg_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols);
/** The same on a host matrix of any layout, each rank its own entries (cpu's and dist's). */
qp_err qp_matrix_scale_local(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols);
/** x <- sum over the ranks of each rank's partial x (collective where matrices are shared
 *  among ranks, a no-op otherwise): what turns sums over a matrix's local entries, such as
 *  the Frobenius product of two matrices of one layout, into sums over the whole matrix. */
qp_err qp_linalg_sum_partials(const qp_linalg_ops *ops, double *x, int64_t count);

/* A window of one matrix lined up with positions of another layout (qp_linalg_align): read
 * with qp_aligned_at at the layout's local (li, lj). */
typedef struct qp_aligned {
  const double *base;
  int64_t ld, row_shift, col_shift;
} qp_aligned;
static inline double qp_aligned_at(const qp_aligned *w, int64_t li, int64_t lj) {
  return w->base[(li + w->row_shift) + (lj + w->col_shift) * w->ld];
}
/** 1 when qp_linalg_align and qp_linalg_replicate need a work matrix on this backend. */
int qp_linalg_moves_data(const qp_linalg_ops *ops);
/** *whole <- the whole of A (rows x cols, leading dimension A's rows), on every rank: A's
 *  own buffer where this process holds it all, else `work` (a local rows x cols matrix of
 *  the cpu backend, needed when qp_linalg_moves_data) filled from every rank's part
 *  (collective). For small matrices. */
qp_err qp_linalg_replicate(const qp_matrix *a, qp_matrix *work, const double **whole);
/** Lines the window A[ai.., aj..] (rows x cols) up with positions [bi.., bj..] of `layout`:
 *  afterwards qp_aligned_at(out, li, lj) is A[ai + gi - bi, aj + gj - bj] for every local
 *  position (li, lj) of `layout` whose global (gi, gj) lies in the window, so that entries of
 *  two matrices that belong together are at one local position whatever the backend. Where
 *  the backend moves data to align (qp_linalg_moves_data) the window is copied into
 *  `work` (layout's shape; collective); otherwise `out` points into A and work may be NULL.
 *  Positions outside the window must not be read. */
qp_err qp_linalg_align(const qp_matrix *a, int64_t ai, int64_t aj, int64_t rows, int64_t cols,
                       const qp_matrix *layout, int64_t bi, int64_t bj, qp_matrix *work,
                       qp_aligned *out);

/** Flop counts of the operations (for GFLOP/s): standard LAPACK working-note figures. */
double qp_flops_potrf(int64_t n);
double qp_flops_trtri(int64_t n);
double qp_flops_trmm(qp_side side, int64_t m, int64_t n);
double qp_flops_gemm(int64_t m, int64_t n, int64_t k);
double qp_flops_syrk(int64_t n, int64_t k);

#endif
