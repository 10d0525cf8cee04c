/* model_bytes.c: the bytes the memory model's declarations share (model_bytes.h). */
#include "model_bytes.h"

#include "block_cyclic.h"
#include "checked_size.h"

qp_model_bytes qp_model_matrix_bytes(const qp_model_dims *d, int64_t rows, int64_t cols) {
  qp_model_bytes b;
  size_t elements = 0;
  qp_size_bytes(rows, 1, &elements);
  qp_size_bytes(cols, elements, &elements);
  qp_size_mul(elements, sizeof(double), &b.whole);
  b.approx = (double)rows * (double)cols * (double)sizeof(double);
  b.here = b.whole;
  if (d->grid_rows > 0) {
    qp_size_bytes(qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows), 1, &elements);
    qp_size_bytes(qp_bc_local_count(cols, d->block, d->grid_col, d->grid_cols), elements,
                  &elements);
    qp_size_mul(elements, sizeof(double), &b.here);
  }
  return b;
}

qp_model_bytes qp_model_pblas_bytes(const qp_model_dims *d, int64_t rows, int64_t cols) {
  qp_model_bytes b;
  size_t per_block = 0;
  qp_size_mul((size_t)d->block, sizeof(double), &per_block);
  size_t span = 0;
  qp_size_add((size_t)rows, (size_t)cols, &span);
  qp_size_mul(span, per_block, &b.whole);
  b.approx = ((double)rows + (double)cols) * (double)d->block * (double)sizeof(double);
  qp_size_bytes(qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows) +
                    qp_bc_local_count(cols, d->block, d->grid_col, d->grid_cols),
                per_block, &b.here);
  return b;
}

qp_model_term *qp_model_on_backend(const qp_model_dims *d, qp_model_term *t) {
  if (d->device) t->space = QP_SPACE_DEVICE;
  return t;
}

qp_model_bytes qp_model_bytes_max(qp_model_bytes a, qp_model_bytes b) {
  return a.here != b.here ? (a.here > b.here ? a : b) : a.approx >= b.approx ? a : b;
}

qp_model_bytes qp_model_bytes_sum(qp_model_bytes a, qp_model_bytes b) {
  qp_size_add(a.here, b.here, &a.here);
  qp_size_add(a.whole, b.whole, &a.whole);
  a.approx += b.approx;
  return a;
}

qp_model_bytes qp_model_window_bytes(const qp_model_dims *d, int64_t rows, int64_t cols,
                                     int of_rows) {
  if (d->host_panel <= 0) return qp_model_matrix_bytes(d, rows, cols);
  const int64_t hp = d->host_panel;
  qp_model_dims one = *d; /* the whole: one process's panel */
  one.grid_rows = 0;
  qp_model_bytes b = qp_model_matrix_bytes(&one, of_rows && hp < rows ? hp : rows,
                                           !of_rows && hp < cols ? hp : cols);
  if (d->grid_rows > 0) { /* here: this rank's local lines, a panel of them one way */
    int64_t lr = qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows),
            lc = qp_bc_local_count(cols, d->block, d->grid_col, d->grid_cols);
    if (of_rows && hp < lr) lr = hp;
    if (!of_rows && hp < lc) lc = hp;
    size_t elements = 0;
    qp_size_bytes(lr, 1, &elements);
    qp_size_bytes(lc, elements, &elements);
    qp_size_mul(elements, sizeof(double), &b.here);
  }
  return b;
}
