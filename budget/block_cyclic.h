/* block_cyclic.h: the arithmetic of ScaLAPACK's 2-D block-cyclic layout, in plain C so that the
 * memory model (which knows nothing of MPI) predicts each rank's local bytes exactly.
 *
 * A global index g (0-based) along a dimension of block size nb over p processes, the first
 * block on process 0, lives on process (g / nb) % p at local index (g / (nb p)) nb + g % nb.
 * This is ScaLAPACK's NUMROC / INDXG2L / INDXL2G with RSRC = CSRC = 0. */
#ifndef QP_BLOCK_CYCLIC_H
#define QP_BLOCK_CYCLIC_H

#include <stdint.h>

/* Sizes: for n >= 0, nb >= 1 and 0 <= iproc < nprocs (the model and the grid check these),
 * a local count is at most n, and a local index or global index is below n: nothing here can
 * wrap. A product of two local counts (a rank's elements) is at most that of the global ones,
 * which the model bounds (checked_size.h: each term's whole at most 2^56 bytes). */

/** Elements of a dimension of n that process `iproc` of `nprocs` holds (NUMROC). */
static inline int64_t qp_bc_local_count(int64_t n, int64_t nb, int iproc, int nprocs) {
  const int64_t blocks = n / nb, extra = n % nb;
  int64_t count = (blocks / nprocs) * nb;
  const int64_t rest = blocks % nprocs;
  if (iproc < rest)
    count += nb;
  else if (iproc == rest)
    count += extra;
  return count;
}

/** The process that owns global index g. */
static inline int qp_bc_owner(int64_t g, int64_t nb, int nprocs) {
  return (int)((g / nb) % nprocs);
}

/** The local index of global index g (on its owner). */
static inline int64_t qp_bc_local_index(int64_t g, int64_t nb, int nprocs) {
  return (g / (nb * nprocs)) * nb + g % nb;
}

/** The global index of local index l on process `iproc`. */
static inline int64_t qp_bc_global_index(int64_t l, int64_t nb, int iproc, int nprocs) {
  return ((l / nb) * nprocs + iproc) * nb + l % nb;
}

#endif
