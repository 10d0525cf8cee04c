/* blas_buffers.c: the BLAS library's buffers as the warm-up leaves them (blas_buffers.h). */
#include "blas_buffers.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

enum { QP_WIDEST_MAX = 65536 };

/* The footprint the warm-up commits and the model predicts: the measured one, or where the
 * probe could not run under OpenBLAS (an address-space limit without room, no buffer found)
 * the figures of its Haswell kernels (a 512 x 256 block, 256 rows a column), said as such in
 * the report. */
qp_blas_footprint qp_blas_buffer_footprint(void) {
  qp_blas_footprint f = *qp_blas_footprint_get();
  if (f.measured || strncmp(f.library, "OpenBLAS", 8) != 0) return f;
  f.per_thread = 1;
  f.head_bytes = (size_t)512 * 256 * sizeof(double);
  f.column_bytes = (size_t)256 * sizeof(double);
  f.buffer_bytes = (size_t)128 << 20;
  snprintf(f.how, sizeof f.how, "not measured: OpenBLAS's Haswell figures (512 x 256, 256 rows)");
  return f;
}

size_t qp_blas_buffer_bytes(int64_t width) {
  const qp_blas_footprint f = qp_blas_buffer_footprint();
  return qp_blas_footprint_bytes(&f, width < QP_WIDEST_MAX ? width : QP_WIDEST_MAX,
                                 omp_get_max_threads());
}
