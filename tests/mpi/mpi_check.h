/* mpi_check.h: what the MPI linalg tests (test_dist_linalg, test_hostdev_dist) share: a
 * start (MPI and the grid from the arguments), a NaN-aware largest difference over the ranks,
 * and the end of a test (failures summed over the
 * ranks, one line from rank 0, the grid and MPI ended). Header-only, over test_util.h. */
#ifndef QP_TEST_MPI_CHECK_H
#define QP_TEST_MPI_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"
#include "grid.h"
#include "matrix.h"
#include "test_util.h"

/* Starts MPI and the grid from the arguments "rows cols block" (0 0: qp_grid_init's choice;
 * block 8 by default); ends every rank when that fails. */
static void qp_mpi_start(int *argc, char ***argv, qp_grid *grid) {
  TEST_OK(qp_comm_init(argc, argv));
  const int rows = *argc > 1 ? atoi((*argv)[1]) : 0, cols = *argc > 2 ? atoi((*argv)[2]) : 0;
  const int block = *argc > 3 ? atoi((*argv)[3]) : 8;
  TEST_OK(qp_grid_init(rows, cols, block, grid));
  if (qp_test_failures) qp_comm_abort(1);
}

/* The hostdev-dist table (tests/mpi's device emulation); ends every rank when it cannot be had. */
static inline const qp_linalg_ops *qp_mpi_hostdev_dist(void) {
  const qp_linalg_ops *dev = NULL;
  TEST_OK(qp_linalg_backend("hostdev-dist", &dev));
  if (qp_test_failures) qp_comm_abort(1);
  return dev;
}

/* The largest of every rank's `worst`, NaN on every rank when any rank's is NaN: MPI_MAX need
 * not keep a NaN, so "some rank saw one" is reduced beside it. */
static double qp_mpi_worst(double worst) {
  double reduced[2] = {isnan(worst) ? 0.0 : worst, isnan(worst) ? 1.0 : 0.0};
  qp_comm_max(reduced, 2);
  return reduced[1] > 0 ? NAN : reduced[0];
}

/* Ends the test: the exit status 0 when no rank failed; rank 0 prints "`what` on R x C
 * ranks, block B: `passed`" (or FAILED). */
static int qp_mpi_finish(qp_grid *grid, const char *what, const char *passed) {
  double failures = qp_test_failures;
  qp_comm_sum(&failures, 1);
  if (qp_comm_rank() == 0)
    printf("%s on %d x %d ranks, block %d: %s\n", what, grid->nprow, grid->npcol, grid->block,
           failures == 0 ? passed : "FAILED");
  qp_grid_exit(grid);
  qp_comm_finalize();
  return failures == 0 ? 0 : 1;
}

#endif
