/* hostdev_ops.c: the one-rank table of the test backend hostdev (hostdev.h): the cpu
 * operations on its emulated device blocks, opened for the operation's operands only, and the
 * emulated library's own buffers (what the memory model predicts). */
#include "hostdev_private.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the emulated library's own buffers (hostdev.h): what the memory model predicts ---- */

/* The buffers hostdev holds for `op` at order n (the table's workspaces, matrix.h): a panel of
 * QP_HOSTDEV_WORKSPACE_COLUMNS doubles per row for the factorisations, 8 n of pivots for the
 * LU's two operations; nothing for the rest. Sizes of whole matrices' orders: no overflow
 * below 2^52 rows, far beyond any term the model accepts (2^56 bytes). */
qp_err qp_hostdev_workspaces(qp_linalg_op op, int64_t n, int64_t nrhs, qp_workspace *out,
                                    int *count) {
  (void)nrhs;
  *count = 0;
  const size_t rows = n > 0 ? (size_t)n : 0;
  if (op == QP_OP_POTRF || op == QP_OP_POTRI || op == QP_OP_TRTRI || op == QP_OP_GETRF)
    out[(*count)++] = (qp_workspace){QP_TERM_HOSTDEV_WORKSPACE, QP_SPACE_DEVICE,
                                     rows * QP_HOSTDEV_WORKSPACE_COLUMNS * sizeof(double)};
  if (op == QP_OP_GETRF || op == QP_OP_GETRS)
    out[(*count)++] = (qp_workspace){QP_TERM_HOSTDEV_PIVOTS, QP_SPACE_DEVICE, rows * 8};
  return QP_OK;
}

/* The blocks held now, one per term of qp_hostdev_workspaces (the calling thread's: one thread
 * calls the operations). */
enum { QP_HOSTDEV_HELD = 2 };
static struct {
  void *block;
  size_t bytes;
} qp_hostdev_held[QP_HOSTDEV_HELD];

static int qp_hostdev_held_slot(const char *term) {
  return strcmp(term, QP_TERM_HOSTDEV_WORKSPACE) == 0 ? 0 : 1;
}

/* Grows term `term` to `bytes`, as cuda's workspaces grow: the old block is freed before the
 * larger one is taken (the table's hold_workspace; a term it does not hold is left alone). */
qp_err qp_hostdev_hold_workspace(const char *term, size_t bytes) {
  if (strcmp(term, QP_TERM_HOSTDEV_WORKSPACE) != 0 && strcmp(term, QP_TERM_HOSTDEV_PIVOTS) != 0)
    return QP_OK;
  const int slot = qp_hostdev_held_slot(term);
  if (bytes <= qp_hostdev_held[slot].bytes) return QP_OK;
  qp_budget_free(qp_hostdev_held[slot].block);
  qp_hostdev_held[slot].block = NULL;
  qp_hostdev_held[slot].bytes = 0;
  QP_CALL(qp_budget_alloc(term, QP_TERM_PERSISTENT, QP_SPACE_DEVICE, bytes,
                          &qp_hostdev_held[slot].block));
  qp_hostdev_held[slot].bytes = bytes;
  return QP_OK;
}

/* Holds what `op` on m needs. Distributed operands (hostdev-dist's) hold nothing. */
static qp_err qp_hostdev_hold(qp_linalg_op op, const qp_matrix *m) {
  if (m->grid) return QP_OK;
  qp_workspace need[QP_WORKSPACES_MAX];
  int count = 0;
  QP_CALL(qp_hostdev_workspaces(op, m->rows, 0, need, &count));
  for (int i = 0; i < count; ++i) QP_CALL(qp_hostdev_hold_workspace(need[i].term, need[i].bytes));
  return QP_OK;
}

void qp_hostdev_release_workspaces(void) {
  for (int slot = 0; slot < QP_HOSTDEV_HELD; ++slot) {
    qp_budget_free(qp_hostdev_held[slot].block);
    qp_hostdev_held[slot].block = NULL;
    qp_hostdev_held[slot].bytes = 0;
  }
}

/* ---- operations: the inner table's, inside a scope where their operands' blocks are open ---- */

/* The wrappers below run the cpu table's operations on one process's operands: hostdev's own,
 * and the views of local parts that the tiled algorithms of hostdev-dist and hostdev-tiled
 * hand their local table. A block-cyclic matrix's host twin (a download or upload of its
 * local part) is dist's. */
static const qp_linalg_ops *qp_hostdev_inner(const qp_matrix *m) {
  return m->grid ? qp_linalg_dist_ops() : qp_linalg_cpu_ops();
}

enum { QP_HOSTDEV_OPERANDS_MAX = 3 };

/* The page ranges an operation opened: each operand's span of pages, not its whole block, so
 * that an operation on a view (a tile, a panel: the tiled algorithms' local steps) costs the
 * kernel its pages only, and touching the block outside the operand still faults. */
typedef struct qp_hostdev_scope {
  qp_hostdev_block open[QP_HOSTDEV_OPERANDS_MAX]; /* base and bytes: a page range */
  int count;
} qp_hostdev_scope;

static void qp_hostdev_close(qp_hostdev_scope *s) {
  for (int i = 0; i < s->count; ++i)
    if (mprotect(s->open[i].base, s->open[i].bytes, PROT_NONE) != 0)
      fprintf(stderr, "qmlpipe: hostdev: mprotect(PROT_NONE) failed: %s\n", strerror(errno));
  s->count = 0;
}

/* The live block whose asked-for bytes hold every entry of m (local_rows x local_cols at ld),
 * or 0: a view running past them is refused, even inside the page rounding. */
static uintptr_t qp_hostdev_end(const qp_matrix *m) { /* one past m's last entry */
  return (uintptr_t)m->data +
         (uintptr_t)((m->local_cols - 1) * m->ld + m->local_rows) * sizeof(double);
}

/* Checks that m is a hostdev device matrix and opens the pages its entries span. */
static qp_err qp_hostdev_open_one(const char *op, const qp_matrix *m, qp_hostdev_scope *s) {
  QP_CHECK(m->space == QP_SPACE_DEVICE, QP_ERR_INTERNAL,
           "hostdev %s: matrix '%s' is in host memory, not on the device", op, m->name);
  if (m->local_rows == 0 || m->local_cols == 0) return QP_OK; /* no entry: nothing to open */
  qp_hostdev_block b;
  QP_CHECK(m->data && qp_hostdev_find((uintptr_t)m->data, qp_hostdev_end(m), &b), QP_ERR_INTERNAL,
           "hostdev %s: matrix '%s' (%lldx%lld, ld %lld) does not lie inside a live hostdev "
           "block (a device address a GPU would call illegal)",
           op, m->name, (long long)m->local_rows, (long long)m->local_cols, (long long)m->ld);
  if (qp_hostdev_batch_open(&b)) return QP_OK;
  const uintptr_t page = qp_hostdev_page(), first = (uintptr_t)m->data, end = qp_hostdev_end(m);
  char *from = (char *)(first / page * page);
  const size_t bytes = (end + page - 1) / page * page - (uintptr_t)from; /* inside b's pages */
  QP_CHECK(mprotect(from, bytes, PROT_READ | PROT_WRITE) == 0, QP_ERR_INTERNAL,
           "hostdev %s: mprotect of matrix '%s': %s", op, m->name, strerror(errno));
  s->open[s->count++] = (qp_hostdev_block){from, bytes, bytes};
  return QP_OK;
}

/* Opens the blocks of every operand; on an error, none stays open. An operation (`compute`)
 * on a block-cyclic operand is refused: no table sends one here (hostdev-dist's operations are
 * the tiled algorithms, which call this table on local views), and the cpu operations would
 * read its local part as a whole matrix. Downloads and uploads of a local part are fine. */
static qp_err qp_hostdev_open(const char *op, int compute, const qp_matrix *const *operands,
                              int n, qp_hostdev_scope *s) {
  s->count = 0;
  for (int k = 0; k < n; ++k)
    QP_CHECK(!compute || !operands[k]->grid, QP_ERR_INTERNAL,
             "hostdev %s: matrix '%s' is block-cyclic: a distributed table's operations are "
             "tiled (linalg/tiled/tiled.h)", op, operands[k]->name);
  qp_err err = QP_OK;
  for (int k = 0; k < n && err == QP_OK; ++k) err = qp_hostdev_open_one(op, operands[k], s);
  if (err != QP_OK) qp_hostdev_close(s);
  return err;
}

/* Runs `call` (a qp_err expression on the operands) inside their scope and returns its status;
 * `compute`: an operation (not a copy to or from the host). */
#define QP_HOSTDEV_SCOPED(op, compute, call, ...)                                                \
  do {                                                                                           \
    const qp_matrix *const operands_[] = {__VA_ARGS__};                                          \
    qp_hostdev_scope scope_;                                                                     \
    QP_CALL(qp_hostdev_open(op, compute, operands_,                                              \
                            (int)(sizeof operands_ / sizeof *operands_), &scope_));              \
    const qp_err status_ = (call);                                                               \
    qp_hostdev_close(&scope_);                                                                   \
    if (status_ != QP_OK) qp_error_trace(__FILE__, __LINE__, __func__);                          \
    return status_;                                                                              \
  } while (0)

/* The cpu table's operation `member` on the operands. */
#define QP_HOSTDEV_RUN(member, args, ...)                                                        \
  QP_HOSTDEV_SCOPED(#member, 1, qp_linalg_cpu_ops()->member args, __VA_ARGS__)

/* A host-space twin of a device matrix: what qp_linalg_download/upload copy through while
 * its block is open (local entries only: no rank's download or upload is collective). */
static qp_matrix qp_hostdev_as_host(const qp_matrix *m) {
  qp_matrix h = *m;
  h.space = QP_SPACE_HOST;
  h.ops = qp_hostdev_inner(m);
  return h;
}

/* The local block (li.., lj..) of m, rows x cols: what a download or upload opens. */
static qp_matrix qp_hostdev_sub(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                                int64_t cols) {
  qp_matrix sub = *m;
  sub.data = m->data + li + lj * m->ld;
  sub.local_rows = rows;
  sub.local_cols = cols;
  return sub;
}

qp_err qp_hostdev_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                                  int64_t cols, double *host, int64_t ld) {
  const qp_matrix h = qp_hostdev_as_host(m), sub = qp_hostdev_sub(m, li, lj, rows, cols);
  QP_HOSTDEV_SCOPED("download", 0, qp_linalg_download(&h, li, lj, rows, cols, host, ld), &sub);
}

qp_err qp_hostdev_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li,
                                int64_t lj, int64_t rows, int64_t cols) {
  qp_matrix h = qp_hostdev_as_host(m);
  const qp_matrix sub = qp_hostdev_sub(m, li, lj, rows, cols);
  QP_HOSTDEV_SCOPED("upload", 0, qp_linalg_upload(host, ld, &h, li, lj, rows, cols), &sub);
}

static qp_err qp_hostdev_potrf(qp_matrix *a) {
  QP_CALL(qp_hostdev_hold(QP_OP_POTRF, a));
  QP_HOSTDEV_RUN(potrf, (a), a);
}

/* cpu's potri leaves the lower half; a device backend leaves the full inverse (matrix.h). The
 * dist table has no potri, nor hostdev-dist. */
static qp_err qp_hostdev_potri_full(qp_matrix *l) {
  QP_CALL(qp_linalg_cpu_ops()->potri(l));
  qp_matrix_symmetrize_lower(l);
  return QP_OK;
}
static qp_err qp_hostdev_potri(qp_matrix *l) {
  QP_CALL(qp_hostdev_hold(QP_OP_POTRI, l));
  QP_HOSTDEV_SCOPED("potri", 1, qp_hostdev_potri_full(l), l);
}

static qp_err qp_hostdev_trtri(qp_matrix *l) {
  QP_CALL(qp_hostdev_hold(QP_OP_TRTRI, l));
  QP_HOSTDEV_RUN(trtri, (l), l);
}

static qp_err qp_hostdev_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                              qp_matrix *b) {
  QP_HOSTDEV_RUN(trmm, (side, trans, alpha, l, b), l, b);
}

static qp_err qp_hostdev_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                              qp_matrix *b) {
  QP_HOSTDEV_RUN(trsm, (side, trans, alpha, l, b), l, b);
}

static qp_err qp_hostdev_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                              const qp_matrix *b, double beta, qp_matrix *c) {
  QP_HOSTDEV_RUN(gemm, (ta, tb, alpha, a, b, beta, c), a, b, c);
}

static qp_err qp_hostdev_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                              qp_matrix *c) {
  QP_HOSTDEV_RUN(syrk, (trans, alpha, a, beta, c), a, c);
}

static qp_err qp_hostdev_getrf(qp_matrix *a, int *pivots) {
  QP_CALL(qp_hostdev_hold(QP_OP_GETRF, a));
  QP_HOSTDEV_RUN(getrf, (a, pivots), a);
}

static qp_err qp_hostdev_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_CALL(qp_hostdev_hold(QP_OP_GETRS, lu));
  QP_HOSTDEV_RUN(getrs, (lu, pivots, b), lu, b);
}

static qp_err qp_hostdev_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_RUN(potrs, (l, b), l, b);
}

/* The dist table has no trace_product, nor hostdev-dist (stages sum partial products). */
static qp_err qp_hostdev_trace_product(const qp_matrix *a, const qp_matrix *b, double *out) {
  QP_HOSTDEV_RUN(trace_product, (a, b, out), a, b);
}

/* A host destination is accepted: on several ranks qp_linalg_align redistributes a window of
 * a device matrix into a host work matrix of another layout with it (on a GPU: a device
 * gemr2d, then a download). */
static qp_err qp_hostdev_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                                  int64_t aj, qp_matrix *b, int64_t bi, int64_t bj) {
  if (b->space == QP_SPACE_HOST) QP_HOSTDEV_RUN(copy_sub, (rows, cols, a, ai, aj, b, bi, bj), a);
  QP_HOSTDEV_RUN(copy_sub, (rows, cols, a, ai, aj, b, bi, bj), a, b);
}

static qp_err qp_hostdev_norm1(const qp_matrix *a, double *out) {
  QP_HOSTDEV_RUN(norm1, (a, out), a);
}

static qp_err qp_hostdev_pocon(const qp_matrix *l, double anorm, double *rcond) {
  QP_HOSTDEV_RUN(pocon, (l, anorm, rcond), l);
}

static qp_err qp_hostdev_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  QP_HOSTDEV_RUN(gecon, (lu, anorm, rcond), lu);
}

static qp_err qp_hostdev_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_HOSTDEV_RUN(transpose, (a, b), a, b);
}

static qp_err qp_hostdev_clear_upper(qp_matrix *a) { QP_HOSTDEV_RUN(clear_upper, (a), a); }
static qp_err qp_hostdev_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  QP_HOSTDEV_RUN(scale, (a, rows, cols), a);
}

/* One rank: align and replicate download into host work matrices of the cpu table (moves_data
 * because the space is the device's); sum_partials NULL: one process holds every matrix. */
static const qp_linalg_ops qp_hostdev_ops_table = {
    QP_HOSTDEV_SHARED_OPS,
    .getrf = qp_hostdev_getrf,
    .getrs = qp_hostdev_getrs,
    .potrs = qp_hostdev_potrs,
    .gecon = qp_hostdev_gecon,
    .potrf = qp_hostdev_potrf,
    .trmm = qp_hostdev_trmm,
    .trsm = qp_hostdev_trsm,
    .gemm = qp_hostdev_gemm,
    .syrk = qp_hostdev_syrk,
    .norm1 = qp_hostdev_norm1,
    .pocon = qp_hostdev_pocon,
    .trtri = qp_hostdev_trtri,
    .copy_sub = qp_hostdev_copy_sub,
    .transpose = qp_hostdev_transpose,
    .clear_upper = qp_hostdev_clear_upper,
    .scale = qp_hostdev_scale,
    .name = "hostdev",
    .host_table = qp_linalg_cpu_ops,
    .potri = qp_hostdev_potri,
    .trace_product = qp_hostdev_trace_product,
    .workspaces = qp_hostdev_workspaces,
    .release_workspaces = qp_hostdev_release_workspaces,
    .hold_workspace = qp_hostdev_hold_workspace,
};

const qp_linalg_ops *qp_linalg_hostdev_ops(void) { return &qp_hostdev_ops_table; }


/* ---- the starts the test library installs in the rows of backends.c ---- */

qp_err qp_hostdev_start(const qp_linalg_ops **ops) {
  *ops = NULL;
  QP_CALL(qp_hostdev_init());
  *ops = &qp_hostdev_ops_table;
  return QP_OK;
}
