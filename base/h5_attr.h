/* h5_attr.h: reading the scalar attributes of qmlpipe's HDF5 files (results, reports), with
 * errors that name the object (`where`) and the attribute. Used by `qmlpipe report` and
 * `qmlpipe validate`. */
#ifndef QP_H5_ATTR_H
#define QP_H5_ATTR_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "qp_error.h"

/* Every reader checks that the attribute holds one value (QP_ERR_INPUT naming it otherwise:
 * a damaged or foreign file), so that nothing read can overrun the room for it. */
/** An int64 attribute into *v; a missing one is QP_ERR_INPUT when `required`, else -1. */
qp_err qp_h5_attr_i64(hid_t obj, const char *where, const char *name, int required, int64_t *v);
/** A double attribute into *v; NaN when missing. */
qp_err qp_h5_attr_f64(hid_t obj, const char *where, const char *name, double *v);
/** A scalar string attribute (variable or fixed length, in the file's character set) into
 *  buf; "" when missing. QP_ERR_INPUT when it is not a string, QP_ERR_IO on HDF5 failures. */
qp_err qp_h5_attr_string(hid_t obj, const char *where, const char *name, char *buf, size_t size);
/** Writes a scalar attribute of HDF5 type `type` from *value (QP_ERR_IO naming `where`). */
qp_err qp_h5_attr_write(hid_t obj, const char *where, const char *name, hid_t type,
                        const void *value);
/** Writes a 1-D dataset `name` of n values of `type` (n may be 0) under `loc`; with values
 *  NULL it is made and left unwritten (for qp_h5_array_part). With `out`, the dataset is left
 *  open there (for its attributes or its parts; the caller closes it). */
qp_err qp_h5_write_array(hid_t loc, const char *where, const char *name, hid_t type, hsize_t n,
                         const void *values, hid_t *out);
/** Reads dataset `name` of `loc`, which must hold exactly `count` elements, as `type` into
 *  `data`. QP_ERR_IO naming `where` and the dataset when it is missing, of another size, or
 *  unreadable. */
qp_err qp_h5_read_array(hid_t loc, const char *where, const char *name, hid_t type, void *data,
                        int64_t count);
/** Writes or reads (`write` 1 or 0) elements [offset, offset + n) of the 1-D dataset `dset`
 *  (named `name` in messages) from or into `values`, as `type`: a matrix streamed through
 *  host panels (pipeline/checkpoint_write.c). QP_ERR_IO naming `where` and the range. */
qp_err qp_h5_array_part(hid_t dset, const char *where, const char *name, hid_t type, int write,
                        hsize_t offset, hsize_t n, void *values);
/** Writes a scalar double or int64 attribute. */
qp_err qp_h5_attr_write_f64(hid_t obj, const char *where, const char *name, double v);
qp_err qp_h5_attr_write_i64(hid_t obj, const char *where, const char *name, int64_t v);
/** Writes a scalar UTF-8 string attribute (variable length; NULL writes ""). */
qp_err qp_h5_attr_write_string(hid_t obj, const char *where, const char *name, const char *text);

#endif
