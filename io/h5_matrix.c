/* h5_matrix.c: a dense 2-D dataset in an HDF5 file (h5_matrix.h).
 *
 * HDF5 prints its own error stack to stderr by default; these functions switch that off while
 * they run (and restore whatever was set before), and turn each HDF5 failure into one qp_err
 * whose message names the file, the dataset and HDF5's innermost description. */
#define _POSIX_C_SOURCE 200809L

#include "h5_matrix.h"

#include <math.h>
#include <stdlib.h>

#include "block_cyclic.h"
#include "checked_size.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "h5_error.h"
#include "h5_image.h"
#include "input_file.h"

/* In functions with a `done:` exit and a local `err`: when an HDF5 call returned < 0, records
 * `code` with "HDF5 file 'path': what: <HDF5's innermost description>" (clearing HDF5's
 * stack) and jumps to done. */
#define QP_H5_CHECK_GOTO(status, code, path, what)                                                 \
  do {                                                                                             \
    if ((status) < 0) {                                                                            \
      err = qp_h5_fail_innermost((code), __FILE__, __LINE__, __func__, "HDF5 file '%s': %s",      \
                                 (path), (what));                                                  \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)

/* Opens `dataset` of `path` and checks that it is a 2-D floating-point array. On success
 * *file and *dset are open (the caller closes both); dims gets its shape. */
static qp_err qp_h5_open(const char *path, const char *dataset, hid_t *file, hid_t *dset,
                         int64_t dims[2]) {
  qp_err err = QP_OK;
  hid_t f = H5I_INVALID_HID, d = H5I_INVALID_HID, space = H5I_INVALID_HID, type = H5I_INVALID_HID;
  char what[512];

  /* HDF5 says only "unable to open file", and waits on a FIFO; the shared check
   * (input_file.h) says why, and refuses what is not a regular file, before it opens. */
  QP_CALL(qp_input_check("HDF5 file", path, QP_INPUT_ANY_SIZE));
  f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  QP_H5_CHECK_GOTO(f, QP_ERR_IO, path, "cannot open (not an HDF5 file?)");
  snprintf(what, sizeof what, "no dataset '%s' (or it cannot be opened)", dataset);
  d = H5Dopen2(f, dataset, H5P_DEFAULT);
  QP_H5_CHECK_GOTO(d, QP_ERR_IO, path, what);

  snprintf(what, sizeof what, "reading the shape of dataset '%s'", dataset);
  space = H5Dget_space(d);
  QP_H5_CHECK_GOTO(space, QP_ERR_IO, path, what);
  int ndims = H5Sget_simple_extent_ndims(space);
  QP_H5_CHECK_GOTO(ndims, QP_ERR_IO, path, what);
  QP_CHECK_GOTO(ndims == 2, QP_ERR_INPUT, done,
                "HDF5 file '%s': dataset '%s' has %d dimensions; a matrix needs 2", path, dataset,
                ndims);
  hsize_t shape[2] = {0, 0};
  QP_H5_CHECK_GOTO(H5Sget_simple_extent_dims(space, shape, NULL), QP_ERR_IO, path, what);

  snprintf(what, sizeof what, "reading the type of dataset '%s'", dataset);
  type = H5Dget_type(d);
  QP_H5_CHECK_GOTO(type, QP_ERR_IO, path, what);
  H5T_class_t type_class = H5Tget_class(type);
  QP_H5_CHECK_GOTO(type_class, QP_ERR_IO, path, what);
  QP_CHECK_GOTO(type_class == H5T_FLOAT, QP_ERR_INPUT, done,
                "HDF5 file '%s': dataset '%s' is not floating-point (float32 or float64)", path,
                dataset);
  /* The shape is the file's: a matrix the caller would read whole must fit memory. */
  size_t elements = 0, bytes = 0;
  QP_CHECK_GOTO(shape[0] <= INT64_MAX && shape[1] <= INT64_MAX &&
                    qp_size_mul((size_t)shape[0], (size_t)shape[1], &elements) &&
                    qp_size_mul(elements, sizeof(double), &bytes) && bytes <= QP_SIZE_TERM_MAX,
                QP_ERR_INPUT, done,
                "HDF5 file '%s': dataset '%s' is %llu x %llu: %.3g bytes as doubles, more than "
                "the 2^56 bytes a matrix may have",
                path, dataset, (unsigned long long)shape[0], (unsigned long long)shape[1],
                (double)shape[0] * (double)shape[1] * sizeof(double));
  dims[0] = (int64_t)shape[0];
  dims[1] = (int64_t)shape[1];

done:
  if (type >= 0) H5Tclose(type);
  if (space >= 0) H5Sclose(space);
  if (err != QP_OK) {
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    return err;
  }
  *file = f;
  *dset = d;
  return QP_OK;
}

qp_err qp_h5_matrix_info(const char *path, const char *dataset, int64_t *rows, int64_t *cols) {
  QP_CHECK(path != NULL && dataset != NULL && rows != NULL && cols != NULL, QP_ERR_INTERNAL,
           "qp_h5_matrix_info: NULL argument");
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  hid_t file, dset;
  int64_t dims[2];
  qp_err err = qp_h5_open(path, dataset, &file, &dset, dims);
  if (err == QP_OK) {
    H5Dclose(dset);
    H5Fclose(file);
    *rows = dims[0];
    *cols = dims[1];
  }
  qp_h5_quiet_end(&quiet);
  if (err != QP_OK) qp_error_trace(__FILE__, __LINE__, __func__);
  return err;
}

/* qp_h5_open for a read: the dataset must be rows x cols (the caller closes *file and *dset,
 * which may be open on an error). */
static qp_err qp_h5_open_shaped(const char *path, const char *dataset, int64_t rows, int64_t cols,
                                hid_t *file, hid_t *dset) {
  int64_t dims[2];
  QP_CALL(qp_h5_open(path, dataset, file, dset, dims));
  QP_CHECK(dims[0] == rows && dims[1] == cols, QP_ERR_INPUT,
           "HDF5 file '%s': dataset '%s' is %lld x %lld, expected %lld x %lld", path, dataset,
           (long long)dims[0], (long long)dims[1], (long long)rows, (long long)cols);
  return QP_OK;
}

qp_err qp_h5_matrix_read(const char *path, const char *dataset, int64_t rows, int64_t cols,
                         double *out) {
  QP_CHECK(path != NULL && dataset != NULL && out != NULL, QP_ERR_INTERNAL,
           "qp_h5_matrix_read: NULL argument");
  qp_err err = QP_OK;
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  hid_t file = H5I_INVALID_HID, dset = H5I_INVALID_HID;
  char what[512];
  QP_CALL_GOTO(qp_h5_open_shaped(path, dataset, rows, cols, &file, &dset), done);
  /* HDF5 converts float32 to double on the way. */
  snprintf(what, sizeof what, "reading dataset '%s'", dataset);
  QP_H5_CHECK_GOTO(QP_FAULT_H5("matrix_read", H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL,
                                                      H5P_DEFAULT, out)),
                   QP_ERR_IO, path, what);

done:
  if (dset >= 0) H5Dclose(dset);
  if (file >= 0) H5Fclose(file);
  qp_h5_quiet_end(&quiet);
  return err;
}

/* The file's (r0.., c0..) block of rows x cols into memory `mem` (its own row-major space),
 * at (m0.., m1..). */
static herr_t qp_h5_read_block(hid_t dset, hid_t file_space, hid_t mem_space, hsize_t r0,
                               hsize_t c0, hsize_t rows, hsize_t cols, hsize_t m0, hsize_t m1,
                               double *mem) {
  const hsize_t fstart[2] = {r0, c0}, count[2] = {rows, cols}, mstart[2] = {m0, m1};
  if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, fstart, NULL, count, NULL) < 0) return -1;
  if (H5Sselect_hyperslab(mem_space, H5S_SELECT_SET, mstart, NULL, count, NULL) < 0) return -1;
  return H5Dread(dset, H5T_NATIVE_DOUBLE, mem_space, file_space, H5P_DEFAULT, mem);
}

/* Closes what a read by blocks opened (any of them may be H5I_INVALID_HID). */
static void qp_h5_close_read(hid_t file, hid_t dset, hid_t fspace, hid_t mspace, hid_t tspace) {
  if (tspace >= 0) H5Sclose(tspace);
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  if (dset >= 0) H5Dclose(dset);
  if (file >= 0) H5Fclose(file);
}

/* Entry (i, j) = v of a dense N read against its mirror (j, i) = m in the file: finite, and
 * equal to 1e-12 relative. */
static qp_err qp_mirror_check(const char *path, int64_t i, int64_t j, double v, double m) {
  QP_CHECK(isfinite(v), QP_ERR_INPUT, "noise covariance '%s' has a non-finite entry (%lld, %lld)",
           path, (long long)i, (long long)j);
  QP_CHECK(fabs(v - m) <= 1e-12 * fmax(fabs(v), fabs(m)), QP_ERR_INPUT,
           "noise covariance '%s' is not symmetric: entry (%lld, %lld) = %.17g but (%lld, %lld) "
           "= %.17g",
           path, (long long)i, (long long)j, v, (long long)j, (long long)i, m);
  return QP_OK;
}

/* The mirrors of entries (i0 + b, j0 + a), a < cols, b < rows, of a dense N read: the file's
 * rows i0.., columns j0.. (qp_h5_matrix_read's transposed layout) into `tile` (rows x width,
 * row-major; tspace its dataspace), each against the entry held at mine[b + a * ld]. */
static qp_err qp_mirror_check_block(const char *path, const char *what, hid_t dset, hid_t fspace,
                                    hid_t tspace, int64_t i0, int64_t j0, int64_t rows,
                                    int64_t cols, double *tile, int64_t width, const double *mine,
                                    int64_t ld) {
  qp_err err = QP_OK;
  QP_H5_CHECK_GOTO(qp_h5_read_block(dset, fspace, tspace, (hsize_t)i0, (hsize_t)j0, (hsize_t)rows,
                                    (hsize_t)cols, 0, 0, tile),
                   QP_ERR_IO, path, what);
  for (int64_t a = 0; a < cols; ++a)
    for (int64_t b = 0; b < rows; ++b)
      QP_CALL_GOTO(qp_mirror_check(path, i0 + b, j0 + a, mine[b + a * ld], tile[b * width + a]),
                   done);
done:
  return err;
}

qp_err qp_h5_matrix_read_symmetric(const char *path, const char *dataset, int64_t n,
                                   double *out) {
  QP_CALL(qp_h5_matrix_read(path, dataset, n, n, out));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = j; i < n; ++i)
      QP_CALL(qp_mirror_check(path, i, j, out[i + j * n], out[j + i * n]));
  return QP_OK;
}

/* The mirror check's tile: QP_H5_MIRROR_TILE doubles (32 KiB, as one block of a grid's
 * default 64), file rows by columns. */
#define QP_H5_MIRROR_TILE 4096

qp_err qp_h5_matrix_read_columns(const char *path, const char *dataset, int64_t n, int64_t col0,
                                 int64_t cols, double *out, int64_t ld) {
  qp_err err = QP_OK;
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  hid_t file = H5I_INVALID_HID, dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID,
        mspace = H5I_INVALID_HID, tspace = H5I_INVALID_HID;
  double *tile = malloc(QP_H5_MIRROR_TILE * sizeof *tile);
  char what[512];
  snprintf(what, sizeof what, "reading columns %lld..%lld of dataset '%s'", (long long)col0,
           (long long)(col0 + cols), dataset);
  QP_CHECK_GOTO(tile, QP_ERR_NOMEM, done, "out of memory for the mirror check's tile");
  QP_CHECK_GOTO(col0 >= 0 && cols >= 0 && col0 + cols <= n && ld >= (n > 0 ? n : 1),
                QP_ERR_INTERNAL, done, "%s: out of range of %lld x %lld (leading dimension %lld)",
                what, (long long)n, (long long)n, (long long)ld);
  QP_CALL_GOTO(qp_h5_open_shaped(path, dataset, n, n, &file, &dset), done);
  if (cols == 0) goto done;
  /* Column j of the matrix is the file's row j (qp_h5_matrix_read's transposed layout): the
   * panel is one contiguous slab of the file, read straight into out ([col][ld]). */
  const hsize_t mdims[2] = {(hsize_t)cols, (hsize_t)ld};
  QP_H5_CHECK_GOTO(fspace = H5Dget_space(dset), QP_ERR_IO, path, what);
  QP_H5_CHECK_GOTO(mspace = H5Screate_simple(2, mdims, NULL), QP_ERR_IO, path, what);
  QP_H5_CHECK_GOTO(QP_FAULT_H5("matrix_read",
                               qp_h5_read_block(dset, fspace, mspace, (hsize_t)col0, 0,
                                                (hsize_t)cols, (hsize_t)n, 0, 0, out)),
                   QP_ERR_IO, path, what);
  /* Each entry (i, j) against its mirror (j, i) = the file's (i, j), a tile of file rows i..
   * by columns j.. at a time. */
  const int64_t tile_cols = cols < QP_H5_MIRROR_TILE ? cols : QP_H5_MIRROR_TILE,
                tile_rows = QP_H5_MIRROR_TILE / tile_cols;
  const hsize_t tdims[2] = {(hsize_t)tile_rows, (hsize_t)tile_cols};
  QP_H5_CHECK_GOTO(tspace = H5Screate_simple(2, tdims, NULL), QP_ERR_IO, path, what);
  for (int64_t j0 = col0; j0 < col0 + cols; j0 += tile_cols) {
    const int64_t wj = col0 + cols - j0 < tile_cols ? col0 + cols - j0 : tile_cols;
    for (int64_t i0 = 0; i0 < n; i0 += tile_rows) {
      const int64_t wi = n - i0 < tile_rows ? n - i0 : tile_rows;
      QP_CALL_GOTO(qp_mirror_check_block(path, what, dset, fspace, tspace, i0, j0, wi, wj, tile,
                                         tile_cols, out + i0 + (j0 - col0) * ld, ld),
                   done);
    }
  }
done:
  free(tile);
  qp_h5_close_read(file, dset, fspace, mspace, tspace);
  qp_h5_quiet_end(&quiet);
  return err;
}

qp_err qp_h5_matrix_read_block_cyclic(const char *path, const char *dataset, int64_t n,
                                      int64_t block, int nprow, int npcol, int myrow, int mycol,
                                      double *out, int64_t ld) {
  return qp_h5_matrix_read_local_columns(path, dataset, n, block, nprow, npcol, myrow, mycol, 0,
                                         qp_bc_local_count(n, block, mycol, npcol), out, ld);
}

qp_err qp_h5_matrix_read_local_columns(const char *path, const char *dataset, int64_t n,
                                       int64_t block, int nprow, int npcol, int myrow, int mycol,
                                       int64_t col0, int64_t cols, double *out, int64_t ld) {
  qp_err err = QP_OK;
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  hid_t file = H5I_INVALID_HID, dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID,
        mspace = H5I_INVALID_HID, tspace = H5I_INVALID_HID;
  /* One block: 32 KiB at the default 64 (grid.block is at most 65536: config.h). */
  size_t mirror_bytes = 0;
  double *mirror = block >= 1 && qp_size_bytes(block, (size_t)block, &mirror_bytes) &&
                           qp_size_mul(mirror_bytes, sizeof *mirror, &mirror_bytes)
                       ? malloc(mirror_bytes)
                       : NULL;
  char what[512];
  snprintf(what, sizeof what, "reading the blocks of dataset '%s'", dataset);
  QP_CHECK_GOTO(mirror, QP_ERR_NOMEM, done, "out of memory for one %lld x %lld block",
                (long long)block, (long long)block);
  QP_CALL_GOTO(qp_h5_open_shaped(path, dataset, n, n, &file, &dset), done);
  const int64_t lrows = qp_bc_local_count(n, block, myrow, nprow),
                lcols = qp_bc_local_count(n, block, mycol, npcol);
  QP_CHECK_GOTO(col0 >= 0 && cols >= 0 && col0 + cols <= lcols && ld >= (lrows > 0 ? lrows : 1),
                QP_ERR_INTERNAL, done,
                "reading local columns %lld..%lld (leading dimension %lld) of dataset '%s': "
                "this rank has %lld x %lld", (long long)col0, (long long)(col0 + cols),
                (long long)ld, dataset, (long long)lrows, (long long)lcols);
  /* Memory is the columns' array seen row-major as [local col - col0][ld]: the file's row j,
   * column i is entry (i, j) of the matrix, read straight into its local place (the
   * transposed layout of qp_h5_matrix_read, the same for a symmetric matrix). */
  const hsize_t mdims[2] = {(hsize_t)(cols > 0 ? cols : 1), (hsize_t)ld};
  const hsize_t bdims[2] = {(hsize_t)block, (hsize_t)block};
  QP_H5_CHECK_GOTO(fspace = H5Dget_space(dset), QP_ERR_IO, path, what);
  QP_H5_CHECK_GOTO(mspace = H5Screate_simple(2, mdims, NULL), QP_ERR_IO, path, what);
  QP_H5_CHECK_GOTO(tspace = H5Screate_simple(2, bdims, NULL), QP_ERR_IO, path, what);
  /* Runs of the range's columns within one block (local and global columns both in order). */
  for (int64_t lj = col0, wj; lj < col0 + cols; lj += wj) {
    const int64_t gj = qp_bc_global_index(lj, block, mycol, npcol);
    wj = block - lj % block;
    if (wj > col0 + cols - lj) wj = col0 + cols - lj;
    for (int64_t li = 0; li < lrows; li += block) {
      const int64_t gi = qp_bc_global_index(li, block, myrow, nprow);
      const int64_t wi = lrows - li < block ? lrows - li : block;
      QP_H5_CHECK_GOTO(QP_FAULT_H5("matrix_read",
                                   qp_h5_read_block(dset, fspace, mspace, (hsize_t)gj, (hsize_t)gi,
                                                    (hsize_t)wj, (hsize_t)wi, (hsize_t)(lj - col0),
                                                    (hsize_t)li, out)),
                       QP_ERR_IO, path, what);
      QP_CALL_GOTO(qp_mirror_check_block(path, what, dset, fspace, tspace, gi, gj, wi, wj,
                                         mirror, block, out + li + (lj - col0) * ld, ld),
                   done);
    }
  }
done:
  free(mirror);
  qp_h5_close_read(file, dset, fspace, mspace, tspace);
  qp_h5_quiet_end(&quiet);
  return err;
}

qp_err qp_h5_matrix_write(const char *path, const char *dataset, int64_t rows, int64_t cols,
                          const double *data) {
  QP_CHECK(path != NULL && dataset != NULL && data != NULL, QP_ERR_INTERNAL,
           "qp_h5_matrix_write: NULL argument");
  QP_CHECK(rows >= 1 && cols >= 1, QP_ERR_INPUT,
           "writing HDF5 file '%s': a %lld x %lld matrix is empty", path, (long long)rows,
           (long long)cols);
  qp_err err = QP_OK;
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
  hid_t file = H5I_INVALID_HID, lcpl = H5I_INVALID_HID, space = H5I_INVALID_HID,
        dset = H5I_INVALID_HID;
  char what[512];
  snprintf(what, sizeof what, "creating dataset '%s'", dataset);

  /* Built in memory, then written whole beside `path` and renamed (base/h5_image.h). */
  QP_CALL_GOTO(qp_h5_image_create(path, &file), done);
  /* Dataset names like "/noise/covariance" get their groups made on the way. */
  lcpl = H5Pcreate(H5P_LINK_CREATE);
  QP_H5_CHECK_GOTO(lcpl, QP_ERR_IO, path, what);
  QP_H5_CHECK_GOTO(H5Pset_create_intermediate_group(lcpl, 1), QP_ERR_IO, path, what);
  hsize_t shape[2] = {(hsize_t)rows, (hsize_t)cols};
  space = H5Screate_simple(2, shape, NULL);
  QP_H5_CHECK_GOTO(space, QP_ERR_IO, path, what);
  dset = H5Dcreate2(file, dataset, H5T_IEEE_F64LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  QP_H5_CHECK_GOTO(dset, QP_ERR_IO, path, what);
  snprintf(what, sizeof what, "writing dataset '%s'", dataset);
  QP_H5_CHECK_GOTO(H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data),
                   QP_ERR_IO, path, what);
  H5Dclose(dset);
  dset = H5I_INVALID_HID;
  hid_t saved = file;
  file = H5I_INVALID_HID; /* closed by the save, whatever its outcome */
  QP_CALL_GOTO(qp_h5_image_save(saved, path), done);

done:
  if (dset >= 0) H5Dclose(dset);
  if (space >= 0) H5Sclose(space);
  if (lcpl >= 0) H5Pclose(lcpl);
  if (file >= 0) H5Fclose(file); /* in memory: nothing reaches the disk */
  qp_h5_quiet_end(&quiet);
  return err;
}

void qp_h5_library_init(void) { (void)H5open(); }
