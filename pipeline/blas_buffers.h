/* blas_buffers.h: what the BLAS library's buffers hold once the warm-up (warm_up.h) has run,
 * which the memory model's overhead adds (planner_chunks.c) and the warm-up commits: shared by
 * the planner and the driver's warm-up so that neither calls into the other. */
#ifndef QP_BLAS_BUFFERS_H
#define QP_BLAS_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "openblas_tuning.h"

/** What the warm-up leaves resident in the BLAS library's buffers, in bytes, for a run whose
 *  widest call is `width` columns: qp_blas_footprint_bytes of the footprint measured on the
 *  kernel that runs (linalg/blas/openblas_tuning.h; per OpenBLAS thread its head, a packed column
 * for each of min(width, 65536) and on one thread potrf's panel, in whole 2 MiB pages; Haswell: 1
 * MiB + 2 KiB a column). The model's overhead adds it (planner_chunks.c), as term "BLAS buffers".
 */
size_t qp_blas_buffer_bytes(int64_t width);
/** The footprint the warm-up commits: qp_blas_footprint_get's, or where the probe could not
 *  run under OpenBLAS, its Haswell figures (`how` says which). */
qp_blas_footprint qp_blas_buffer_footprint(void);

#endif
