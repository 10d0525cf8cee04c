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
/** A symmetric n x n dataset whole (qp_h5_matrix_read), then every entry below the diagonal
 *  against its mirror in memory: QP_ERR_INPUT names the first entry that is not finite or
 *  whose mirror differs by more than 1e-12 relative (the check of the readers below). */
qp_err qp_h5_matrix_read_symmetric(const char *path, const char *dataset, int64_t n,
                                   double *out);
/** Columns [col0, col0 + cols) of a symmetric n x n dataset, one process (out: n x cols,
 *  leading dimension ld): one contiguous read of the file's rows col0.., then each entry
 *  against its mirror, read from the file a 32 KiB tile at a time, so that a panel of columns
 *  is checked without the others (a device run under memory.host_limit). QP_ERR_INPUT names
 *  the first entry that is not finite or whose mirror differs by more than 1e-12 relative. */
qp_err qp_h5_matrix_read_columns(const char *path, const char *dataset, int64_t n, int64_t col0,
                                 int64_t cols, double *out, int64_t ld);
/** Reads one rank's block-cyclic part of a symmetric n x n dataset (budget/block_cyclic.h:
 *  blocks of `block`, process (myrow, mycol) of nprow x npcol) into out (local rows x local
 *  cols, leading dimension ld), block by block, and checks each block against its transposed
 *  block in the file: QP_ERR_INPUT naming the first entry whose mirror differs (by more than
 *  1e-12 relative) or that is not finite. */
qp_err qp_h5_matrix_read_block_cyclic(const char *path, const char *dataset, int64_t n,
                                      int64_t block, int nprow, int npcol, int myrow, int mycol,
                                      double *out, int64_t ld);
/** The same for local columns [col0, col0 + cols) of this rank's part only (out: local rows x
 *  cols, leading dimension ld, local column col0 first): a panel of them at a time where the
 *  whole part does not fit (a device run under memory.host_limit). Each mirror is read from
 *  the file, so the check needs no other panel. */
qp_err qp_h5_matrix_read_local_columns(const char *path, const char *dataset, int64_t n,
                                       int64_t block, int nprow, int npcol, int myrow, int mycol,
                                       int64_t col0, int64_t cols, double *out, int64_t ld);
/** Writes a matrix (for tests and simulate), atomically: built in memory, written to a private
 *  temporary beside `path`, renamed (base/h5_image.h, atomic_file.h). */
qp_err qp_h5_matrix_write(const char *path, const char *dataset, int64_t rows, int64_t cols,
                          const double *data);

/** Initialises the HDF5 library now (its own state is part of the process's overhead, so a
 *  run does it before its baseline rather than inside a stage). */
void qp_h5_library_init(void);

#endif
