/* grid.c: the BLACS process grid (grid.h). Built with ScaLAPACK only; qp_grid_choose always. */
#include "grid.h"

#include <math.h>

#include "qp_config.h"

void qp_grid_choose(int size, int *rows, int *cols) {
  int r = (int)sqrt((double)size);
  while (r > 1 && size % r != 0) --r;
  *rows = r < 1 ? 1 : r;
  *cols = size / *rows;
}

#if QP_HAVE_SCALAPACK
#include <mpi.h>

#include "scalapack.h"

static qp_grid qp_the_grid;
static int qp_grid_up = 0;

qp_err qp_grid_init(int rows, int cols, int block, qp_grid *grid) {
  int initialized = 0, size = 1;
  MPI_Initialized(&initialized);
  QP_CHECK(initialized, QP_ERR_MPI, "the distributed backend needs MPI: start qmlpipe with "
                                    "mpiexec or srun");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rows <= 0 || cols <= 0) qp_grid_choose(size, &rows, &cols);
  QP_CHECK(rows * cols == size, QP_ERR_INPUT,
           "grid %d x %d needs %d ranks, but qmlpipe runs on %d", rows, cols, rows * cols, size);
  QP_CHECK(block >= 1, QP_ERR_INPUT, "block size %d must be positive", block);
  if (qp_grid_up) qp_grid_exit(&qp_the_grid);
  qp_grid g = {0};
  Cblacs_get(-1, 0, &g.context);
  Cblacs_gridinit(&g.context, "Row", rows, cols);
  Cblacs_gridinfo(g.context, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  QP_CHECK(g.nprow == rows && g.npcol == cols, QP_ERR_MPI, "BLACS made a %d x %d grid, not %d x %d",
           g.nprow, g.npcol, rows, cols);
  g.block = block;
  qp_the_grid = g;
  qp_grid_up = 1;
  if (grid) *grid = g;
  return QP_OK;
}

void qp_grid_exit(qp_grid *grid) {
  (void)grid;
  if (!qp_grid_up) return;
  Cblacs_gridexit(qp_the_grid.context);
  qp_grid_up = 0;
}

const qp_grid *qp_grid_current(void) { return qp_grid_up ? &qp_the_grid : NULL; }

#else

qp_err qp_grid_init(int rows, int cols, int block, qp_grid *grid) {
  (void)rows;
  (void)cols;
  (void)block;
  (void)grid;
  QP_FAIL(QP_ERR_UNSUPPORTED, "this build of qmlpipe has no ScaLAPACK (configure with "
                              "-DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON)");
}
void qp_grid_exit(qp_grid *grid) { (void)grid; }
const qp_grid *qp_grid_current(void) { return NULL; }

#endif
