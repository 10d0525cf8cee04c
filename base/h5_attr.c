/* h5_attr.c: reading and writing scalar attributes of qmlpipe's HDF5 files (h5_attr.h).
 *
 * By hand, not with HDF5's high-level API (H5LT), because H5LT would change the files or lose
 * HDF5's account of a failure:
 *   - H5LTset_attribute_<type> makes a 1-D attribute of n elements where the files hold
 *     scalars, and H5LTset_attribute_string a fixed-length ASCII string where they hold
 *     variable-length UTF-8 (docs/output.md; the tools/ scripts read them as they are);
 *   - H5LTmake_dataset and H5LTget_attribute_<type>, after a failed call, close what they
 *     opened with API calls, and every API call clears HDF5's error stack: the message would
 *     say "HDF5 failed" without HDF5's reason (a full disk's "No space left on device", which
 *     test_checkpoint_cli's disk_full case asserts);
 *   - H5LTget_attribute_string reads with the file's type, into a buffer it cannot bound
 *     (fixed length) or as a pointer to free (variable length), and files of either kind are
 *     read here;
 *   - qp_h5_read_array checks the element count before the read, which H5LT would do by
 *     opening the dataset three times (ndims, info, read);
 *   - H5Aexists asks once where H5LTfind_attribute iterates over all of an object's
 *     attributes.
 * H5LT serves where its failures keep HDF5's stack (H5LTget_dataset_info and _ndims, which
 * return at once when the dataset cannot be opened: the checkpoint's inputs, the rank table's
 * shape) and where a failure is only a fallback (report_print.c, report_ranks.c's "resumed"). */
#include "h5_attr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5_error.h"

/* Opens attribute `name` of obj into *a after checking that it holds one value (a scalar or
 * one element): the reads below fill one value's room, and a file's array attribute of 4096
 * int64 once overwrote report's stack through H5LTget_attribute_long_long. */
static qp_err qp_h5_attr_open_one(hid_t obj, const char *where, const char *name, hid_t *a) {
  qp_err err = QP_OK;
  hid_t space = -1;
  QP_H5_GOTO(*a = H5Aopen(obj, name, H5P_DEFAULT), done, "%s: attribute '%s'", where, name);
  QP_H5_GOTO(space = H5Aget_space(*a), done, "%s: attribute '%s'", where, name);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  QP_CHECK_GOTO(points == 1, QP_ERR_INPUT, done,
                "%s: attribute '%s' holds %lld values where qmlpipe writes one (a damaged or "
                "foreign file)",
                where, name, (long long)points);
done:
  if (space >= 0) H5Sclose(space);
  return err;
}

qp_err qp_h5_attr_f64(hid_t obj, const char *where, const char *name, double *v) {
  qp_err err = QP_OK;
  hid_t a = -1;
  *v = NAN;
  htri_t has = H5Aexists(obj, name);
  QP_H5_GOTO(has, done, "%s: attribute '%s'", where, name);
  if (has == 0) goto done;
  QP_CALL_GOTO(qp_h5_attr_open_one(obj, where, name, &a), done);
  QP_H5_GOTO(H5Aread(a, H5T_NATIVE_DOUBLE, v), done, "%s: cannot read attribute '%s' as a number",
             where, name);
done:
  if (a >= 0) H5Aclose(a);
  return err;
}

qp_err qp_h5_attr_i64(hid_t obj, const char *where, const char *name, int required, int64_t *v) {
  qp_err err = QP_OK;
  hid_t a = -1;
  htri_t has = H5Aexists(obj, name);
  QP_H5_GOTO(has, done, "%s: attribute '%s'", where, name);
  if (has == 0) {
    QP_CHECK_GOTO(!required, QP_ERR_INPUT, done,
                  "%s: no attribute '%s' (not a qmlpipe results file, or one written by a "
                  "version without it)",
                  where, name);
    *v = -1;
    goto done;
  }
  QP_CALL_GOTO(qp_h5_attr_open_one(obj, where, name, &a), done);
  QP_H5_GOTO(H5Aread(a, H5T_NATIVE_INT64, v), done, "%s: cannot read attribute '%s'", where, name);
done:
  if (a >= 0) H5Aclose(a);
  return err;
}

qp_err qp_h5_attr_string(hid_t obj, const char *where, const char *name, char *buf, size_t size) {
  qp_err err = QP_OK;
  hid_t a = -1, ftype = -1, mtype = -1;
  char *text = NULL;
  buf[0] = '\0';
  htri_t has = H5Aexists(obj, name);
  QP_H5_GOTO(has, done, "%s: attribute '%s'", where, name);
  if (has == 0) goto done;
  QP_CALL_GOTO(qp_h5_attr_open_one(obj, where, name, &a), done);
  QP_H5_GOTO(ftype = H5Aget_type(a), done, "%s: attribute '%s'", where, name);
  QP_CHECK_GOTO(H5Tget_class(ftype) == H5T_STRING, QP_ERR_INPUT, done,
                "%s: attribute '%s' is not a string", where, name);
  QP_H5_GOTO(mtype = H5Tcopy(H5T_C_S1), done, "%s: attribute '%s'", where, name);
  QP_H5_GOTO(H5Tset_cset(mtype, H5Tget_cset(ftype)), done, "%s: attribute '%s'", where, name);
  if (H5Tis_variable_str(ftype) > 0) {
    QP_H5_GOTO(H5Tset_size(mtype, H5T_VARIABLE), done, "%s: attribute '%s'", where, name);
    QP_H5_GOTO(H5Aread(a, mtype, &text), done, "%s: cannot read attribute '%s'", where, name);
    snprintf(buf, size, "%s", text ? text : "");
    H5free_memory(text);
    text = NULL;
  } else {
    size_t len = H5Tget_size(ftype);
    char *fixed = calloc(len + 1, 1);
    QP_CHECK_GOTO(fixed, QP_ERR_NOMEM, done, "%s: attribute '%s'", where, name);
    if (H5Tset_size(mtype, len + 1) < 0 || H5Aread(a, mtype, fixed) < 0) {
      free(fixed);
      err = qp_h5_fail(QP_ERR_IO, __FILE__, __LINE__, __func__, "%s: cannot read attribute '%s'",
                       where, name);
      goto done;
    }
    snprintf(buf, size, "%s", fixed);
    free(fixed);
  }
done:
  if (mtype >= 0) H5Tclose(mtype);
  if (ftype >= 0) H5Tclose(ftype);
  if (a >= 0) H5Aclose(a);
  return err;
}

qp_err qp_h5_attr_write(hid_t obj, const char *where, const char *name, hid_t type,
                        const void *value) {
  qp_err err = QP_OK;
  hid_t space = -1, attr = -1;
  QP_H5_GOTO(space = H5Screate(H5S_SCALAR), done, "%s: attribute '%s'", where, name);
  QP_H5_GOTO(attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), done,
             "%s: cannot create attribute '%s'", where, name);
  QP_H5_GOTO(H5Awrite(attr, type, value), done, "%s: cannot write attribute '%s'", where, name);
done:
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  return err;
}

qp_err qp_h5_write_array(hid_t loc, const char *where, const char *name, hid_t type, hsize_t n,
                         const void *values, hid_t *out) {
  qp_err err = QP_OK;
  hid_t space = -1, dset = -1;
  hsize_t dims[1] = {n};
  QP_H5_GOTO(space = H5Screate_simple(1, dims, NULL), done, "%s: dataspace of '%s'", where, name);
  QP_H5_GOTO(dset = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             done, "%s: cannot create dataset '%s'", where, name);
  if (n > 0 && values)
    QP_H5_GOTO(H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), done,
               "%s: cannot write dataset '%s'", where, name);
done:
  if (space >= 0) H5Sclose(space);
  if (err == QP_OK && out)
    *out = dset;
  else if (dset >= 0)
    H5Dclose(dset);
  return err;
}

qp_err qp_h5_attr_write_f64(hid_t obj, const char *where, const char *name, double v) {
  QP_CALL(qp_h5_attr_write(obj, where, name, H5T_NATIVE_DOUBLE, &v));
  return QP_OK;
}

qp_err qp_h5_attr_write_i64(hid_t obj, const char *where, const char *name, int64_t v) {
  QP_CALL(qp_h5_attr_write(obj, where, name, H5T_NATIVE_INT64, &v));
  return QP_OK;
}

qp_err qp_h5_attr_write_string(hid_t obj, const char *where, const char *name, const char *text) {
  qp_err err = QP_OK;
  hid_t type = -1;
  QP_H5_GOTO(type = H5Tcopy(H5T_C_S1), done, "%s: attribute '%s'", where, name);
  QP_H5_GOTO(H5Tset_size(type, H5T_VARIABLE), done, "%s: attribute '%s'", where, name);
  QP_H5_GOTO(H5Tset_cset(type, H5T_CSET_UTF8), done, "%s: attribute '%s'", where, name);
  const char *value = text ? text : "";
  QP_CALL_GOTO(qp_h5_attr_write(obj, where, name, type, &value), done);
done:
  if (type >= 0) H5Tclose(type);
  return err;
}

qp_err qp_h5_array_part(hid_t dset, const char *where, const char *name, hid_t type, int write,
                        hsize_t offset, hsize_t n, void *values) {
  qp_err err = QP_OK;
  hid_t file_space = -1, mem_space = -1;
  if (n == 0) return QP_OK;
  QP_H5_GOTO(file_space = H5Dget_space(dset), done, "%s: dataset '%s'", where, name);
  QP_H5_GOTO(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &offset, NULL, &n, NULL), done,
             "%s: elements %llu..%llu of dataset '%s'", where, (unsigned long long)offset,
             (unsigned long long)(offset + n), name);
  QP_H5_GOTO(mem_space = H5Screate_simple(1, &n, NULL), done, "%s: dataset '%s'", where, name);
  QP_H5_GOTO(write ? H5Dwrite(dset, type, mem_space, file_space, H5P_DEFAULT, values)
                   : H5Dread(dset, type, mem_space, file_space, H5P_DEFAULT, values),
             done, "%s: cannot %s elements %llu..%llu of dataset '%s'", where,
             write ? "write" : "read", (unsigned long long)offset,
             (unsigned long long)(offset + n), name);
done:
  if (mem_space >= 0) H5Sclose(mem_space);
  if (file_space >= 0) H5Sclose(file_space);
  return err;
}

qp_err qp_h5_read_array(hid_t loc, const char *where, const char *name, hid_t type,
                        void *data, int64_t count) {
  qp_err err = QP_OK;
  hid_t dset = -1, space = -1;
  QP_H5_GOTO(dset = H5Dopen2(loc, name, H5P_DEFAULT), done, "%s: dataset '%s'", where, name);
  QP_H5_GOTO(space = H5Dget_space(dset), done, "%s: dataset '%s'", where, name);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  QP_CHECK_GOTO(n == count, QP_ERR_IO, done,
                "%s: dataset '%s' has %lld elements where %lld are expected", where, name,
                (long long)n, (long long)count);
  if (count > 0)
    QP_H5_GOTO(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), done,
               "%s: cannot read dataset '%s'", where, name);
done:
  if (space >= 0) H5Sclose(space);
  if (dset >= 0) H5Dclose(dset);
  return err;
}
