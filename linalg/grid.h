/* grid.h: the 2-D process grid (BLACS) of the distributed backend, and its choice.
 *
 * Every distributed matrix is block-cyclic over one grid of nprow x npcol ranks with square
 * blocks of `block` rows and columns (budget/block_cyclic.h). Without ScaLAPACK in the build,
 * qp_grid_init fails with QP_ERR_UNSUPPORTED; qp_grid_choose works everywhere (the planner
 * sizes jobs for clusters from a laptop). */
#ifndef QP_GRID_H
#define QP_GRID_H

#include <stdint.h>

#include "qp_error.h"

/** The default block size: 64 x 64 doubles (32 KiB), ScaLAPACK's usual choice, large enough
 *  for BLAS-3 speed and small enough for load balance at n ~ 10^4. */
enum { QP_GRID_DEFAULT_BLOCK = 64 };

typedef struct qp_grid {
  int context;       /* BLACS context */
  int nprow, npcol;  /* grid shape */
  int myrow, mycol;  /* this rank's place */
  int block;         /* rows = columns of one block */
} qp_grid;

/** The most square grid rows x cols = size with rows <= cols (ScaLAPACK's preference). */
void qp_grid_choose(int size, int *rows, int *cols);

/** Sets up the BLACS grid over MPI_COMM_WORLD, row-major rank order. rows x cols must equal
 *  the number of ranks (0, 0: chosen by qp_grid_choose). */
qp_err qp_grid_init(int rows, int cols, int block, qp_grid *grid);
/** Releases the BLACS context. */
void qp_grid_exit(qp_grid *grid);

/** The process grid of the distributed backend (set by qp_grid_init), or NULL. */
const qp_grid *qp_grid_current(void);

#endif
