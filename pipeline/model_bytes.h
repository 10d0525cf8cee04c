/* model_bytes.h: the bytes of the memory model's terms that more than one declaration needs
 * (the stages' *_terms.c, backend_terms.c): a matrix on this rank, a host window of it, the
 * PBLAS panels of an operand, and the term's space on a device backend. Private to the model's
 * files (memory_model.c and the term declarations), not for the stages' code.
 *
 * Every qp_model_bytes has three sizes (budget/model.h): `here` on this rank, `whole` the
 * largest any rank of a grid holds (so every rank checks the same bound), `approx` as a
 * double for the oversize message. */
#ifndef QP_MODEL_BYTES_H
#define QP_MODEL_BYTES_H

#include <stdint.h>

#include "memory_model.h"

/** Bytes of a rows x cols matrix of doubles on this rank: all of it, or its block-cyclic part
 *  (whose local counts are at most rows and cols: block_cyclic.h). */
qp_model_bytes qp_model_matrix_bytes(const qp_model_dims *d, int64_t rows, int64_t cols);

/** PBLAS's panels for a rows x cols operand on this rank (the pblas_panels term); the whole is
 *  the bound (rows + cols) x block x 8 that no rank's panels exceed. */
qp_model_bytes qp_model_pblas_bytes(const qp_model_dims *d, int64_t rows, int64_t cols);

/** A rows x cols matrix's host window of d->host_panel of its lines (all of them for 0 or
 *  more): of its local columns, or of its local rows when `of_rows` (V^T), by all the other
 *  way. This rank's share; the whole is one process's. */
qp_model_bytes qp_model_window_bytes(const qp_model_dims *d, int64_t rows, int64_t cols,
                                     int of_rows);

/** The larger on this rank (its local parts, which a grid may order unlike the wholes). */
qp_model_bytes qp_model_bytes_max(qp_model_bytes a, qp_model_bytes b);
/** a + b, each of the three sizes. */
qp_model_bytes qp_model_bytes_sum(qp_model_bytes a, qp_model_bytes b);

/** 1 where align and replicate copy (qp_linalg_moves_data): over the ranks of a grid, or
 *  from the device to the host. A distributed device backend's device holds each rank's local
 *  parts, so its device terms are per rank as the host ones. */
static inline int qp_model_moves_data(const qp_model_dims *d) {
  return d->grid_rows > 0 || d->device;
}

/** Returns t, a matrix of the run's backend, in device memory on a device backend. */
qp_model_term *qp_model_on_backend(const qp_model_dims *d, qp_model_term *t);

#endif
