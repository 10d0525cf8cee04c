/* host_window.c: host windows onto matrices of any space (host_window.h). */
#include "host_window.h"

#include <stdint.h>
#include <string.h>

/* The reserve of a stage: one block, windows stacked in it from the bottom. */
static struct {
  char *base;
  size_t bytes, used;
} qp_staging;

qp_err qp_host_staging_reserve(size_t bytes) {
  qp_host_staging_release();
  if (bytes == 0) return QP_OK;
  void *block = NULL;
  QP_CALL(qp_budget_alloc(QP_TERM_HOST_STAGING, QP_TERM_TRANSIENT, QP_SPACE_HOST, bytes, &block));
  qp_staging.base = block;
  qp_staging.bytes = bytes;
  return QP_OK;
}

void qp_host_staging_release(void) {
  qp_budget_free(qp_staging.base);
  memset(&qp_staging, 0, sizeof qp_staging);
}

/* A staging block of `bytes` for w: the reserve's next free bytes (zeroed: an earlier window
 * of the stage left its entries there), else a block of its own (zero-filled by the budget). */
static qp_err qp_staging_take(size_t bytes, qp_host_window *w) {
  w->bytes = bytes;
  if (qp_staging.base && bytes <= qp_staging.bytes - qp_staging.used) {
    w->arena_at = qp_staging.used;
    w->data = (double *)(void *)(qp_staging.base + qp_staging.used);
    qp_staging.used += bytes;
    if (!(w->access & QP_ACCESS_READ)) memset(w->data, 0, bytes);
    return QP_OK;
  }
  void *block = NULL;
  QP_CALL(qp_budget_alloc(QP_TERM_HOST_STAGING, QP_TERM_TRANSIENT, QP_SPACE_HOST, bytes, &block));
  w->arena_at = SIZE_MAX;
  w->data = block;
  return QP_OK;
}

size_t qp_host_window_bytes(const qp_linalg_ops *ops, int64_t local_rows, int64_t cols) {
  if (!qp_linalg_on_device(ops) || local_rows <= 0 || cols <= 0) return 0;
  return (size_t)local_rows * (size_t)cols * sizeof(double);
}

qp_err qp_host_window_open_block(qp_matrix *m, int64_t row0, int64_t rows, int64_t col0,
                                 int64_t cols, qp_access access, qp_host_window *w) {
  memset(w, 0, sizeof *w);
  QP_CHECK(col0 >= 0 && cols >= 0 && col0 + cols <= m->local_cols, QP_ERR_INTERNAL,
           "host window of columns %lld..%lld of '%s' (%lld local columns)", (long long)col0,
           (long long)(col0 + cols), m->name, (long long)m->local_cols);
  QP_CHECK(row0 >= 0 && rows >= 0 && row0 + rows <= m->local_rows, QP_ERR_INTERNAL,
           "host window of rows %lld..%lld of '%s' (%lld local rows)", (long long)row0,
           (long long)(row0 + rows), m->name, (long long)m->local_rows);
  *w = (qp_host_window){.ld = m->ld, .row0 = row0, .rows = rows, .col0 = col0, .cols = cols,
                        .m = m, .access = access};
  if (m->space == QP_SPACE_HOST) {
    w->data = m->data ? m->data + row0 + col0 * m->ld : NULL;
    return QP_OK;
  }
  w->ld = rows > 0 ? rows : 1;
  w->staged = 1;
  QP_CALL(qp_staging_take(qp_host_window_bytes(m->ops, rows, cols), w));
  qp_err err = QP_OK;
  if (access & QP_ACCESS_READ)
    QP_CALL_GOTO(qp_linalg_download(m, row0, col0, rows, cols, w->data, w->ld), fail);
  return QP_OK;
fail:
  qp_host_window_discard(w);
  return err;
}

qp_err qp_host_window_open(qp_matrix *m, int64_t col0, int64_t cols, qp_access access,
                           qp_host_window *w) {
  return qp_host_window_open_block(m, 0, m->local_rows, col0, cols, access, w);
}

qp_err qp_host_window_read(const qp_matrix *m, int64_t col0, int64_t cols, qp_host_window *w) {
  /* The window never writes back with READ access: the cast does not lose the const. */
  return qp_host_window_open((qp_matrix *)m, col0, cols, QP_ACCESS_READ, w);
}

qp_err qp_host_window_close(qp_host_window *w) {
  qp_err err = QP_OK;
  if (w->m && w->staged && (w->access & QP_ACCESS_WRITE))
    QP_CALL_GOTO(qp_linalg_upload(w->data, w->ld, w->m, w->row0, w->col0, w->rows, w->cols),
                 done);
done:
  qp_host_window_discard(w);
  return err;
}

void qp_host_window_discard(qp_host_window *w) {
  if (w->staged && w->arena_at == SIZE_MAX) {
    qp_budget_free(w->data);
  } else if (w->staged && w->data) {
    /* The reserve is a stack: the top window gives its bytes back; one below the top keeps
     * them until the windows above it close (closing out of order wastes, never overlaps). */
    if (w->arena_at + w->bytes == qp_staging.used) qp_staging.used = w->arena_at;
  }
  memset(w, 0, sizeof *w);
}
