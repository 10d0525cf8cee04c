/* fits_status.h: private to io/ (fits_map.c, pixel_window.c): cfitsio's status as qp_err, the
 * one wrapper of every cfitsio call's status, and the small helpers both readers need. */
#ifndef QP_FITS_STATUS_H
#define QP_FITS_STATUS_H

#include <fitsio.h>

#include "qp_error.h"

/** QP_ERR_IO carrying cfitsio's status text and the messages of its error stack (oldest, most
 *  specific first), recorded at the caller's file, line and function; empties that stack. */
qp_err qp_fits_error(int status, const char *path, const char *what, const char *file, int line,
                     const char *func);

/* QP_OK when status is 0, else the wrapped error (recorded at the caller's line). */
#define QP_FITS_STATUS(status, path, what)                                                         \
  ((status) == 0 ? QP_OK : qp_fits_error((status), (path), (what), __FILE__, __LINE__, __func__))

/** True (and *status reset, cfitsio's message stack emptied) when a keyword read found no such
 *  keyword: the caller decides whether that is an error. */
int qp_fits_key_missing(int *status);

/** Moves to the file's first binary-table HDU; *found 0 when it has none (the caller says what
 *  the file should have been). */
qp_err qp_fits_first_binary_table(fitsfile *f, const char *path, int *found);

/** Strips trailing blanks in place (cfitsio keeps those of padded string keywords). */
void qp_fits_rstrip(char *s);

#endif
