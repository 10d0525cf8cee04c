/* test_h5.h: reading a results file's datasets in tests (HDF5's C API). */
#ifndef QP_TEST_H5_H
#define QP_TEST_H5_H

#include <hdf5.h>
#include <stdlib.h>

/** Dataset `name` of the HDF5 file `path` as doubles (malloc'd, *count values), or NULL when
 *  the file or the dataset cannot be read. */
static inline double *qp_test_h5_read_doubles(const char *path, const char *name,
                                              hsize_t *count) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return NULL;
  double *out = NULL;
  hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  if (set >= 0) {
    hid_t space = H5Dget_space(set);
    *count = (hsize_t)H5Sget_simple_extent_npoints(space);
    out = malloc((*count > 0 ? *count : 1) * sizeof *out);
    if (out && H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
      free(out);
      out = NULL;
    }
    H5Sclose(space);
    H5Dclose(set);
  }
  H5Fclose(file);
  return out;
}

#endif
