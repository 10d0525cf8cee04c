/* bins_text.h: the `bins:` file of a config (README "Config reference").
 *
 * One bin a line: two decimal integers `ell_min ell_max` (an optional sign), separated and
 * surrounded by blanks; '#' starts a comment that runs to the end of the line; blank lines
 * and comment lines are skipped. Lines may be of any length. The bins must be ascending and
 * must not overlap (each ell_min above the ell_max of the bin before; gaps are allowed), each
 * with ell_min <= ell_max, all inside the analysis' [ell_min, lmax]. */
#ifndef QP_BINS_TEXT_H
#define QP_BINS_TEXT_H

#include "qp_error.h"

typedef struct qp_bins {
  int n;        /* bins read */
  int *lo, *hi; /* n first and last multipoles (malloc'd: small) */
} qp_bins;

/** Reads the bins file `path` for an analysis of multipoles [ell_min, lmax]. Errors:
 *  QP_ERR_IO naming the file and the system's reason when it cannot be read (missing,
 *  unreadable, a directory or another file that is not a regular file); QP_ERR_INPUT naming
 *  the file and the line for anything but two integers on a line (text after them, a
 *  fraction, a number beyond int), for a bin that ends before it starts, overlaps or precedes
 *  the bin before it, or leaves [ell_min, lmax], and for a file with no bins. On error *bins
 *  is empty. */
qp_err qp_bins_read(const char *path, int ell_min, int lmax, qp_bins *bins);
/** Frees what qp_bins_read allocated (safe twice). */
void qp_bins_free(qp_bins *bins);

#endif
