/* pixel_window.h: HEALPix's pixel window tables, read with cfitsio (`pixel_window: true` in a
 * run's config, `qmlpipe simulate --pixel-window`).
 *
 * HEALPix ships the window of each nside as pixel_window_nNNNN.fits (Debian's package
 * healpy-data puts them in /usr/share/healpy/data, the build's QP_HEALPIX_DATA_DIR): a binary
 * table (HDU 2, EXTNAME 'PIXEL WINDOW', NSIDE in its header) of 4 nside + 1 rows, l = 0, 1, ..,
 * whose first column (TEMPERATURE) is w_l^T and second (POLARIZATION) w_l^P, 0 at l = 0 and 1
 * where no polarisation exists. healpy.pixwin(nside, pol=True) reads the same two columns by
 * position, and so does this reader: a table named by `pixel_window_file:` (or simulate's
 * --pixel-window-file) is any FITS file of that form: the first two columns (numeric) of its
 * first binary table, one value per multipole from l = 0. What the windows mean for the analysis
 * (they multiply S and every P_ell as the beam does, per field) is docs/science.md's. */
#ifndef QP_PIXEL_WINDOW_H
#define QP_PIXEL_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "qp_error.h"

/* The nside HEALPix has tables for (healpy-data's): the powers of 2 from 2 to 8192. */
enum { QP_PIXEL_WINDOW_NSIDE_MIN = 2, QP_PIXEL_WINDOW_NSIDE_MAX = 8192 };

typedef struct qp_pixel_window {
  int lmax;                    /* the last multipole held */
  double *t, *p;               /* w_l^T and w_l^P, l = 0..lmax (malloc'd: O(lmax), small) */
  char path[QP_PATH_MAX];      /* the table read */
  char text[QP_PATH_MAX + 64]; /* what was applied, for the results' attribute pixel_window:
                                  "healpix nside 8: PATH" (HEALPix's own table) or
                                  "pixel_window_file for nside 8: PATH" */
} qp_pixel_window;

/** The default table of `nside`: QP_HEALPIX_DATA_DIR/pixel_window_nNNNN.fits (the test hook
 *  QP_TEST_HEALPIX_DATA_DIR names another directory in qmlpipe-test; never read by qmlpipe).
 *  QP_ERR_INPUT for an nside HEALPix has no table for (not a power of 2 from 2 to 8192), saying
 *  to name one with pixel_window_file; QP_ERR_INPUT when the path does not fit `size`. */
qp_err qp_pixel_window_default_path(int64_t nside, char *path, size_t size);

/** Reads w^T and w^P of l = 0..lmax into *w from `file`, or from nside's default table
 *  (qp_pixel_window_default_path) when file is NULL or "".
 *  Checks: the table's NSIDE keyword, where it has one, is `nside` (a table of another nside is
 *  a wrong file); it has at least two numeric columns of at least lmax + 1 values; every w^T_l
 *  (l >= 0) and every w^P_l from l = 2 is finite and > 0 (a null value reads as NaN).
 *  Errors (each naming the table's path): QP_ERR_IO when the default table is missing (saying
 *  `apt-get install healpy-data` or pixel_window_file) or a file cannot be read (the input
 *  check's or cfitsio's message); QP_ERR_INPUT for an nside without a default table, a file
 *  that is no such table, another NSIDE, a table shorter than lmax + 1, a value out of range;
 *  QP_ERR_NOMEM. On error *w holds nothing (qp_pixel_window_free is still safe). Not
 *  collective (the run's inputs read it on one rank and share it). */
qp_err qp_pixel_window_read(const char *file, int64_t nside, int lmax, qp_pixel_window *w);

/** Frees what qp_pixel_window_read allocated (safe twice, and on a zeroed struct). */
void qp_pixel_window_free(qp_pixel_window *w);

#endif
