/* blas_pool.h: the footprint of a BLAS library other than OpenBLAS (BLIS, a site library),
 * whose packing buffers are a pool of malloc'ed blocks: allocated by a few calls, committed
 * whole, and measured (blas_pool.c says why). Called by qp_blas_footprint_get
 * (openblas_tuning.h) under such a library, on the same contract: once, where no other
 * thread is in a BLAS call. */
#ifndef QP_BLAS_POOL_H
#define QP_BLAS_POOL_H

#include "openblas_tuning.h"

/** Runs the calls (about 0.1 GFLOP; operands of 36 MiB, term "warm_up", freed), commits the
 *  blocks they allocated and sets f->pool_bytes (the RssAnon they left), f->measured and
 *  f->how. Leaves f as it is where RssAnon cannot be read. */
void qp_blas_pool_probe(qp_blas_footprint *f);

#endif
