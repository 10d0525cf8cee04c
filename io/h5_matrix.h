/* h5_matrix.h: a dense matrix from an HDF5 file (the dense noise covariance input).
 *
 * The dataset is 2-D, float64 or float32, square n x n for a covariance; its rows and columns
 * are the data vector's entries (observed pixels in ascending RING index, field by field). */
#ifndef QP_H5_MATRIX_H
#define QP_H5_MATRIX_H

#include <stdint.h>

#include "qp_error.h"

/** Dimensions of `dataset` in `path`. QP_ERR_IO for a missing file or dataset (naming both),
 *  QP_ERR_INPUT when it is not 2-D or not a floating-point type. */
qp_err qp_h5_matrix_info(const char *path, const char *dataset, int64_t *rows, int64_t *cols);
/** Reads the dataset as doubles into out (rows x cols; row-major in the file is read so that
 *  out is column-major of the transpose: for the symmetric covariance this is the matrix). */
qp_err qp_h5_matrix_read(const char *path, const char *dataset, int64_t rows, int64_t cols,
                         double *out);
/** Reads one rank's block-cyclic part of a symmetric n x n dataset (budget/block_cyclic.h:
 *  blocks of `block`, process (myrow, mycol) of nprow x npcol) into out (local rows x local
 *  cols, leading dimension ld), block by block, and checks each block against its transposed
 *  block in the file: QP_ERR_INPUT naming the first entry whose mirror differs (by more than
 *  1e-12 relative) or that is not finite. */
qp_err qp_h5_matrix_read_block_cyclic(const char *path, const char *dataset, int64_t n,
                                      int64_t block, int nprow, int npcol, int myrow, int mycol,
                                      double *out, int64_t ld);
/** Writes a matrix (for tests and simulate), atomically: built in memory, written to a private
 *  temporary beside `path`, renamed (budget/h5_image.h, atomic_file.h). */
qp_err qp_h5_matrix_write(const char *path, const char *dataset, int64_t rows, int64_t cols,
                          const double *data);

/** Initialises the HDF5 library now (its own state is part of the process's overhead, so a
 *  run does it before its baseline rather than inside a stage). */
void qp_h5_library_init(void);

#endif
