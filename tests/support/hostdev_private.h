/* hostdev_private.h: what the files of the hostdev emulation (tests/support/hostdev_*.c) share:
 * the blocks of emulated device memory (hostdev_memory.c), the one-rank operations the
 * distributed tables reuse (hostdev_ops.c). Private to them. */
#ifndef QP_HOSTDEV_PRIVATE_H
#define QP_HOSTDEV_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "hostdev.h"

/* A live block: `bytes` (page-rounded) of data at `base`, followed by one guard page; `asked`
 * of them were asked for, and operands must lie inside those. */
typedef struct qp_hostdev_block {
  char *base;
  size_t bytes, asked;
} qp_hostdev_block;

size_t qp_hostdev_page(void);
/** The live block whose asked-for bytes hold [first, end), into *found; 0 when none does (a
 *  view running past them is refused, even inside the page rounding). */
int qp_hostdev_find(uintptr_t first, uintptr_t end, qp_hostdev_block *found);

/* Batches (hostdev_memory.c): a distributed operation's local steps keep the blocks they open
 * open until it ends. */
void qp_hostdev_batch_begin(void);
void qp_hostdev_batch_end(void);
/** In a batch: 1 when b is open, opening it (whole) when there is room; 0 outside a batch or
 *  when the batch is full (the operand is then opened for its step only). */
int qp_hostdev_batch_open(const qp_hostdev_block *b);

/* The one-rank table's pieces (hostdev_ops.c) that the distributed tables share. */
qp_err qp_hostdev_workspaces(qp_linalg_op op, int64_t n, int64_t nrhs, qp_workspace *out,
                             int *count);
qp_err qp_hostdev_hold_workspace(const char *term, size_t bytes);
void qp_hostdev_release_workspaces(void);
qp_err qp_hostdev_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                           int64_t cols, double *host, int64_t ld);
qp_err qp_hostdev_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li, int64_t lj,
                         int64_t rows, int64_t cols);

/* The wrappers every hostdev table has; the tables differ in their layout, the host table
 * that goes with them, how partial sums are completed, the two operations dist lacks, and
 * those hostdev-dist runs as tiled algorithms. */
#define QP_HOSTDEV_SHARED_OPS                                                                    \
  .space = QP_SPACE_DEVICE, .moves_data = 1, .download = qp_hostdev_download,                    \
  .upload = qp_hostdev_upload

#endif
