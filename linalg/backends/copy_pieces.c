/* copy_pieces.c: see copy_pieces.h. */
#include "copy_pieces.h"

#include <string.h>

/* Rows and columns of a full piece. */
static void qp_copy_piece_shape(int64_t rows, int64_t capacity, int64_t *piece_rows,
                                int64_t *piece_cols) {
  *piece_rows = rows < capacity ? rows : capacity;
  *piece_cols = rows > 0 && rows <= capacity ? capacity / rows : 1;
}

int64_t qp_copy_piece_count(int64_t rows, int64_t cols, int64_t capacity) {
  if (rows <= 0 || cols <= 0 || capacity <= 0) return 0;
  int64_t pr, pc;
  qp_copy_piece_shape(rows, capacity, &pr, &pc);
  return ((rows + pr - 1) / pr) * ((cols + pc - 1) / pc);
}

qp_copy_piece qp_copy_piece_at(int64_t rows, int64_t cols, int64_t capacity, int64_t index) {
  int64_t pr, pc;
  qp_copy_piece_shape(rows, capacity, &pr, &pc);
  const int64_t per_group = (rows + pr - 1) / pr; /* row runs per group of columns */
  qp_copy_piece p = {.row0 = (index % per_group) * pr, .col0 = (index / per_group) * pc};
  p.rows = rows - p.row0 < pr ? rows - p.row0 : pr;
  p.cols = cols - p.col0 < pc ? cols - p.col0 : pc;
  return p;
}

void qp_copy_pack(const double *src, int64_t sld, qp_copy_piece p, double *packed) {
  for (int64_t k = 0; k < p.cols; ++k)
    memcpy(packed + k * p.rows, src + p.row0 + (p.col0 + k) * sld, (size_t)p.rows * sizeof *packed);
}

void qp_copy_unpack(const double *packed, qp_copy_piece p, double *dst, int64_t dld) {
  for (int64_t k = 0; k < p.cols; ++k)
    memcpy(dst + p.row0 + (p.col0 + k) * dld, packed + k * p.rows, (size_t)p.rows * sizeof *packed);
}
