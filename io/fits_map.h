/* fits_map.h: HEALPix maps in FITS files, in healpy's layout, through cfitsio and chealpix.
 *
 * healpy writes a binary-table extension (HDU 2) whose columns are the fields (I/TEMPERATURE,
 * Q_POLARISATION, U_POLARISATION, ...), with NSIDE, ORDERING (RING or NESTED) and INDXSCHM
 * (IMPLICIT) in the header; a column holds 12 nside^2 values, either one per row or in rows of
 * 1024 (TFORM 1024E/1024D). Both float32 (E) and float64 (D) are read. Maps are handed back in
 * RING order whatever the file's ordering. Explicit-index (partial-sky) files are refused. */
#ifndef QP_FITS_MAP_H
#define QP_FITS_MAP_H

#include <stdint.h>

#include "qp_error.h"

enum { QP_FITS_COLUMNS_MAX = 16 };

typedef struct qp_healpix_info {
  int64_t nside;
  int64_t n_sky;    /* 12 nside^2 */
  int nested;       /* 1: the file is NESTED (data are converted to RING when read) */
  int n_columns;
  char column_names[QP_FITS_COLUMNS_MAX][72];
} qp_healpix_info;

/** Reads the header of a map file. QP_ERR_IO (missing/unreadable, with cfitsio's message),
 *  QP_ERR_INPUT (not a HEALPix map: no NSIDE, bad ORDERING, wrong length, explicit indexing). */
qp_err qp_fits_map_info(const char *path, qp_healpix_info *info);
/** Reads column `column` (0-based) into sky[info->n_sky] in RING order, as doubles. Values are
 *  not checked (the caller checks the observed pixels for NaN / UNSEEN). */
qp_err qp_fits_map_read(const char *path, const qp_healpix_info *info, int column, double *sky);
/** Writes a map file in healpy's layout (RING, float64, one column per field, COORDSYS G),
 *  to a private temporary beside `path` (atomic_file.h) that is renamed to it when complete. */
qp_err qp_fits_map_write(const char *path, int64_t nside, int n_columns,
                         const char *const *column_names, const double *const *columns);

#endif
