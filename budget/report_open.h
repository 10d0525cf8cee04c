/* report_open.h: a results file opened for reading its /budget group (the memory report that
 * report_h5.c writes): what `report`, `validate` and the per-rank reader start from. */
#ifndef QP_REPORT_OPEN_H
#define QP_REPORT_OPEN_H

#include <hdf5.h>

#include "qp_error.h"

/** Opens a results file read-only and its /budget group, with the errors a user needs:
 *  QP_ERR_IO for a file that cannot be opened (with errno's reason) or is not HDF5,
 *  QP_ERR_INPUT for one without /budget. Close both with H5Gclose/H5Fclose (-1 on failure). */
qp_err qp_report_open(const char *path, hid_t *file, hid_t *budget);

#endif
