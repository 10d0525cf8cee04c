/* host_window.h: host element access to a matrix's local entries, whatever space it lives in.
 *
 * Stages build and read some matrices entry by entry (S and P_p from the pair sums, V, the
 * diagonal of I + K Lambda, the maps). They do it through a window: a host array holding the
 * local columns [col0, col0 + cols) of a matrix (or a block of them: local rows [row0, row0 +
 * rows) of those columns), leading dimension ld. On a host backend (cpu,
 * dist) the window is the matrix's own buffer, and opening and closing it copy nothing. On a
 * device backend (cuda, hostdev) opening allocates a host staging block through the budget
 * (term QP_TERM_HOST_STAGING, transient) and downloads into it when the access reads; closing
 * uploads it when the access writes, then frees it. So one element loop serves every backend,
 * and no stage ever holds a device pointer: element loops over a device matrix's own data
 * have no place to start from, and on hostdev would fault (tests/support/hostdev_ops.c).
 *
 * A window with QP_ACCESS_WRITE and not READ starts from zeros on a device backend and from
 * the matrix's entries on a host one: the caller writes every entry it means to keep, or uses
 * QP_ACCESS_READ_WRITE. */
#ifndef QP_HOST_WINDOW_H
#define QP_HOST_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "matrix.h"

#define QP_TERM_HOST_STAGING "host staging"

typedef enum qp_access {
  QP_ACCESS_READ = 1,
  QP_ACCESS_WRITE = 2,
  QP_ACCESS_READ_WRITE = 3
} qp_access;

typedef struct qp_host_window {
  double *data;         /* local entry (row0 + i, col0 + k) is data[i + k * ld] */
  int64_t ld, row0, rows, col0, cols;
  qp_matrix *m;         /* NULL once closed */
  qp_access access;
  int staged;           /* 1: data is a staging block (device matrix), freed at close */
  size_t bytes;         /* of the staging block */
  size_t arena_at;      /* staged from the reserve: its offset there; SIZE_MAX: a block of its own */
} qp_host_window;

/** Reserves `bytes` of host staging (term QP_TERM_HOST_STAGING) from which the windows
 *  opened until qp_host_staging_release take their blocks, stack-wise: one block per stage,
 *  sized by the memory model, rather than one per window, so that the term's bytes are the
 *  model's exactly (pipeline/run/driver.c). A window that does not fit what is left gets a block of
 *  its own under the same term (and the model's check shows the difference). 0: nothing. */
qp_err qp_host_staging_reserve(size_t bytes);
/** Frees the reserved staging (windows still open keep nothing from it: close them first). */
void qp_host_staging_release(void);

/** Host staging bytes a window of `cols` local columns of a matrix of `ops` with `local_rows`
 *  rows takes: 0 on a host backend. What the memory model charges to QP_TERM_HOST_STAGING. */
size_t qp_host_window_bytes(const qp_linalg_ops *ops, int64_t local_rows, int64_t cols);
/** Opens local columns [col0, col0 + cols) of m, every local row (row0 0). Errors:
 *  QP_ERR_INTERNAL for columns out of range, the budget's for the staging block, the
 *  backend's for the download. */
qp_err qp_host_window_open(qp_matrix *m, int64_t col0, int64_t cols, qp_access access,
                           qp_host_window *w);
/** Opens the block of local rows [row0, row0 + rows) of local columns [col0, col0 + cols):
 *  what a matrix built row by row (V^T, position by position) is built in panels of. The
 *  same errors, for rows or columns out of range. */
qp_err qp_host_window_open_block(qp_matrix *m, int64_t row0, int64_t rows, int64_t col0,
                                 int64_t cols, qp_access access, qp_host_window *w);
/** The same, read-only, for a matrix the caller may not change. */
qp_err qp_host_window_read(const qp_matrix *m, int64_t col0, int64_t cols, qp_host_window *w);
/** Uploads what a writing window holds (device backends), frees its staging and zeroes *w.
 *  Safe on a zeroed or closed window. */
qp_err qp_host_window_close(qp_host_window *w);
/** Frees a window without uploading (error paths). Safe on a zeroed or closed window. */
void qp_host_window_discard(qp_host_window *w);

#endif
