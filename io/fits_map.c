/* fits_map.c: HEALPix maps in healpy's FITS layout (fits_map.h), with cfitsio and chealpix.
 *
 * Files are opened with fits_open_diskfile / fits_create_diskfile, which take the name
 * literally: cfitsio's extended file-name syntax ("file.fits[1]", "!file") never applies to a
 * user's path. Every cfitsio status goes through qp_fits_error (fits_status.h). */
#define _POSIX_C_SOURCE 200809L

#include "fits_map.h"

#include <chealpix.h>
#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "atomic_file.h"
#include "checked_size.h"
#include "fits_status.h"
#include "input_file.h"

enum {
  QP_FITS_CHUNK = 65536,   /* values per read when a NESTED map is scattered into RING order */
  QP_FITS_ROW_WIDTH = 1024 /* healpy's values per row when n_sky is a multiple of it */
};

/* The largest nside HEALPix allows (2^29): 12 nside^2 then still fits in int64. */
static const int64_t qp_nside_max = (int64_t)1 << 29;

/* Moves to the file's first binary-table HDU (healpy's layout). */
static qp_err qp_fits_find_table(fitsfile *f, const char *path) {
  int found = 0;
  QP_CALL(qp_fits_first_binary_table(f, path, &found));
  QP_CHECK(found, QP_ERR_INPUT,
           "map file '%s' has no binary-table extension: not a HEALPix map in healpy's layout",
           path);
  return QP_OK;
}

/* NSIDE: present, a whole number, in [1, 2^29]. */
static qp_err qp_fits_read_nside(fitsfile *f, const char *path, long long *nside) {
  int status = 0;
  fits_read_key_lnglng(f, "NSIDE", nside, NULL, &status);
  QP_CHECK(!qp_fits_key_missing(&status), QP_ERR_INPUT,
           "map file '%s' has no NSIDE keyword: not a HEALPix map", path);
  QP_CALL(QP_FITS_STATUS(status, path, "reading NSIDE"));
  QP_CHECK(*nside >= 1 && *nside <= qp_nside_max, QP_ERR_INPUT,
           "map file '%s': NSIDE = %lld is out of range [1, 2^29]", path, *nside);
  /* cfitsio reads NSIDE = 4.5 as 4 (issue 38): the keyword must be a whole number. */
  double nside_value = 0.0;
  fits_read_key_dbl(f, "NSIDE", &nside_value, NULL, &status);
  QP_CALL(QP_FITS_STATUS(status, path, "reading NSIDE"));
  QP_CHECK(nside_value == (double)*nside, QP_ERR_INPUT,
           "map file '%s': NSIDE = %.17g is not a whole number", path, nside_value);
  return QP_OK;
}

/* ORDERING: RING or NESTED (NEST), NESTED only for a power-of-2 NSIDE. */
static qp_err qp_fits_read_ordering(fitsfile *f, const char *path, long long nside,
                                    qp_healpix_info *info) {
  int status = 0;
  char value[FLEN_VALUE] = "";
  fits_read_key_str(f, "ORDERING", value, NULL, &status);
  QP_CHECK(!qp_fits_key_missing(&status), QP_ERR_INPUT,
           "map file '%s' has no ORDERING keyword (RING or NESTED)", path);
  QP_CALL(QP_FITS_STATUS(status, path, "reading ORDERING"));
  qp_fits_rstrip(value);
  if (strcasecmp(value, "RING") == 0) {
    info->nested = 0;
  } else {
    QP_CHECK(strcasecmp(value, "NESTED") == 0 || strcasecmp(value, "NEST") == 0, QP_ERR_INPUT,
             "map file '%s': ORDERING = '%s' (expected RING or NESTED)", path, value);
    info->nested = 1;
  }
  /* NESTED numbering exists only for powers of two. */
  QP_CHECK(!info->nested || (nside & (nside - 1)) == 0, QP_ERR_INPUT,
           "map file '%s': NESTED ordering needs NSIDE a power of 2, got %lld", path, nside);
  return QP_OK;
}

/* Partial-sky files (INDXSCHM = EXPLICIT, or OBJECT = PARTIAL) hold a PIXEL column: refused. */
static qp_err qp_fits_check_full_sky(fitsfile *f, const char *path) {
  int status = 0;
  char value[FLEN_VALUE] = "";
  fits_read_key_str(f, "INDXSCHM", value, NULL, &status);
  if (qp_fits_key_missing(&status)) value[0] = '\0';
  QP_CALL(QP_FITS_STATUS(status, path, "reading INDXSCHM"));
  qp_fits_rstrip(value);
  QP_CHECK(strcasecmp(value, "EXPLICIT") != 0, QP_ERR_UNSUPPORTED,
           "map file '%s' is a partial-sky map (INDXSCHM = EXPLICIT); only full-sky "
           "(implicit) maps are supported",
           path);
  fits_read_key_str(f, "OBJECT", value, NULL, &status);
  if (qp_fits_key_missing(&status)) value[0] = '\0';
  QP_CALL(QP_FITS_STATUS(status, path, "reading OBJECT"));
  qp_fits_rstrip(value);
  QP_CHECK(strcasecmp(value, "PARTIAL") != 0, QP_ERR_UNSUPPORTED,
           "map file '%s' is a partial-sky map (OBJECT = PARTIAL); only full-sky maps are "
           "supported",
           path);
  return QP_OK;
}

/* Column c (1-based in cfitsio): its name, a numeric fixed-length type, and rows x values per
 * row equal to the map's n_sky; *repeat receives the values per row. */
static qp_err qp_fits_read_column(fitsfile *f, const char *path, int c, long long n_rows,
                                  long long nside, qp_healpix_info *info, int64_t *repeat) {
  int status = 0;
  char key[FLEN_KEYWORD], value[FLEN_VALUE] = "";
  snprintf(key, sizeof key, "TTYPE%d", c + 1);
  fits_read_key_str(f, key, value, NULL, &status);
  if (qp_fits_key_missing(&status)) /* an unnamed column is allowed */
    snprintf(value, sizeof value, "COLUMN%d", c + 1);
  QP_CALL(QP_FITS_STATUS(status, path, "reading a column name"));
  qp_fits_rstrip(value);
  snprintf(info->column_names[c], sizeof info->column_names[c], "%s", value);

  int type = 0;
  long long rep = 0, width = 0;
  fits_get_coltypell(f, c + 1, &type, &rep, &width, &status);
  QP_CALL(QP_FITS_STATUS(status, path, "reading a column type"));
  /* Negative codes are variable-length arrays; strings, logicals, bits and complex values
   * are no map. */
  int numeric = type == TBYTE || type == TSBYTE || type == TSHORT || type == TUSHORT ||
                type == TINT || type == TUINT || type == TLONG || type == TULONG ||
                type == TLONGLONG || type == TULONGLONG || type == TFLOAT || type == TDOUBLE;
  QP_CHECK(numeric, QP_ERR_INPUT,
           "map file '%s': column %d ('%s') is not a numeric fixed-length column "
           "(cfitsio type code %d)",
           path, c + 1, info->column_names[c], type);
  /* Rows and values per row come from the header: their product may not fit 64 bits
   * (it wrapped to a plausible n_sky before it was checked). */
  int64_t values = 0;
  QP_CHECK(rep >= 1 && n_rows >= 0 && qp_i64_mul(n_rows, rep, &values), QP_ERR_INPUT,
           "map file '%s': column %d ('%s') holds %lld rows x %lld values, more than "
           "2^63 values (NSIDE = %lld needs 12 nside^2 = %lld)",
           path, c + 1, info->column_names[c], n_rows, rep, nside, (long long)info->n_sky);
  QP_CHECK(values == info->n_sky, QP_ERR_INPUT,
           "map file '%s': column %d ('%s') holds %lld values (%lld rows x %lld), but "
           "NSIDE = %lld needs 12 nside^2 = %lld",
           path, c + 1, info->column_names[c], (long long)values, n_rows, rep, nside,
           (long long)info->n_sky);
  *repeat = rep;
  return QP_OK;
}

/* The map's size (n_sky within what a buffer may hold) and every column. */
static qp_err qp_fits_read_table(fitsfile *f, const char *path, long long nside,
                                 qp_healpix_info *info, int64_t repeat[QP_FITS_COLUMNS_MAX]) {
  int status = 0;
  info->nside = nside;
  /* Bounded: nside <= 2^29 (checked above), so 12 nside^2 <= 3 x 2^60 fits int64. A column
   * of that many doubles must also fit memory: n_sky x 8 within QP_SIZE_TERM_MAX (2^56,
   * checked_size.h), i.e. nside up to ~7.7e7. */
  info->n_sky = 12 * (int64_t)nside * (int64_t)nside;
  size_t column_bytes = 0;
  QP_CHECK(qp_size_bytes(info->n_sky, sizeof(double), &column_bytes) &&
               column_bytes <= QP_SIZE_TERM_MAX,
           QP_ERR_INPUT,
           "map file '%s': NSIDE = %lld means 12 nside^2 = %lld pixels, %.3g bytes a "
           "column, more than the 2^56 bytes a buffer may have",
           path, nside, (long long)info->n_sky, (double)info->n_sky * sizeof(double));

  int n_columns = 0;
  long long n_rows = 0;
  fits_get_num_cols(f, &n_columns, &status);
  fits_get_num_rowsll(f, &n_rows, &status);
  QP_CALL(QP_FITS_STATUS(status, path, "reading the table size"));
  QP_CHECK(n_columns >= 1 && n_columns <= QP_FITS_COLUMNS_MAX, QP_ERR_INPUT,
           "map file '%s' has %d columns (expected 1 to %d)", path, n_columns, QP_FITS_COLUMNS_MAX);
  info->n_columns = n_columns;
  for (int c = 0; c < n_columns; ++c)
    QP_CALL(qp_fits_read_column(f, path, c, n_rows, nside, info, &repeat[c]));
  return QP_OK;
}

/* Opens `path`, moves to its first binary-table HDU and reads the HEALPix description there.
 * repeat[c] receives column c's values per row. On success *out is open (caller closes). */
static qp_err qp_fits_open_map(const char *path, fitsfile **out, qp_healpix_info *info,
                               int64_t repeat[QP_FITS_COLUMNS_MAX]) {
  qp_err err = QP_OK;
  fitsfile *f = NULL;
  int status = 0;
  long long nside = 0;
  *out = NULL;
  memset(info, 0, sizeof *info);
  fits_clear_errmsg(); /* so that an error reports this file's messages, not older ones */

  /* cfitsio only says "could not open the named file", and waits on a FIFO; the shared
   * check (input_file.h) says why, and refuses what is not a regular file, before it opens. */
  QP_CALL(qp_input_check("map file", path, QP_INPUT_ANY_SIZE));
  fits_open_diskfile(&f, path, READONLY, &status);
  QP_CALL_GOTO(QP_FITS_STATUS(status, path, "opening"), done);
  QP_CALL_GOTO(qp_fits_find_table(f, path), done);
  QP_CALL_GOTO(qp_fits_read_nside(f, path, &nside), done);
  QP_CALL_GOTO(qp_fits_read_ordering(f, path, nside, info), done);
  QP_CALL_GOTO(qp_fits_check_full_sky(f, path), done);
  QP_CALL_GOTO(qp_fits_read_table(f, path, nside, info, repeat), done);

done:
  if (err != QP_OK) {
    if (f) {
      int close_status = 0;
      fits_close_file(f, &close_status);
    }
    memset(info, 0, sizeof *info);
    return err;
  }
  *out = f;
  return QP_OK;
}

qp_err qp_fits_map_info(const char *path, qp_healpix_info *info) {
  QP_CHECK(path != NULL && info != NULL, QP_ERR_INTERNAL, "qp_fits_map_info: NULL argument");
  fitsfile *f = NULL;
  int64_t repeat[QP_FITS_COLUMNS_MAX];
  QP_CALL(qp_fits_open_map(path, &f, info, repeat));
  int status = 0;
  fits_close_file(f, &status);
  QP_CALL(QP_FITS_STATUS(status, path, "closing"));
  return QP_OK;
}

qp_err qp_fits_map_read(const char *path, const qp_healpix_info *info, int column, double *sky) {
  qp_err err = QP_OK;
  fitsfile *f = NULL;
  double *chunk = NULL;
  int status = 0, anynul = 0;
  qp_healpix_info now;
  int64_t repeat[QP_FITS_COLUMNS_MAX];
  /* With null checking on, integer columns' TNULL values become NaN (float NaNs stay NaN). */
  double null_value = NAN;

  QP_CHECK(path != NULL && info != NULL && sky != NULL, QP_ERR_INTERNAL,
           "qp_fits_map_read: NULL argument");
  QP_CALL(qp_fits_open_map(path, &f, &now, repeat));
  /* The file may have changed since qp_fits_map_info: the caller's buffer is sized from info. */
  QP_CHECK_GOTO(
      now.nside == info->nside && now.nested == info->nested && now.n_columns == info->n_columns,
      QP_ERR_INPUT, done, "map file '%s' changed while being read (NSIDE %lld, %d columns now)",
      path, (long long)now.nside, now.n_columns);
  QP_CHECK_GOTO(column >= 0 && column < now.n_columns, QP_ERR_INPUT, done,
                "map file '%s' has %d columns; column %d (0-based) was asked for", path,
                now.n_columns, column);

  if (!now.nested) {
    /* Starting at row 1, element 1, cfitsio reads n_sky values across rows. */
    fits_read_col(f, TDOUBLE, column + 1, 1, 1, now.n_sky, &null_value, sky, &anynul, &status);
    QP_CALL_GOTO(QP_FITS_STATUS(status, path, "reading the map"), done);
  } else {
    chunk = malloc(QP_FITS_CHUNK * sizeof *chunk);
    QP_CHECK_GOTO(chunk != NULL, QP_ERR_NOMEM, done, "no memory for a %d-value read buffer",
                  QP_FITS_CHUNK);
    const int64_t rep = repeat[column];
    for (int64_t start = 0; start < now.n_sky; start += QP_FITS_CHUNK) {
      int64_t n = now.n_sky - start < QP_FITS_CHUNK ? now.n_sky - start : QP_FITS_CHUNK;
      fits_read_col(f, TDOUBLE, column + 1, start / rep + 1, start % rep + 1, n, &null_value, chunk,
                    &anynul, &status);
      QP_CALL_GOTO(QP_FITS_STATUS(status, path, "reading the map"), done);
      for (int64_t i = 0; i < n; ++i) {
        int64_t ring = 0;
        nest2ring64(now.nside, start + i, &ring);
        sky[ring] = chunk[i];
      }
    }
  }

done:
  free(chunk);
  if (f) {
    int close_status = 0;
    fits_close_file(f, &close_status);
    if (err == QP_OK) err = QP_FITS_STATUS(close_status, path, "closing");
  }
  return err;
}

qp_err qp_fits_map_write(const char *path, int64_t nside, int n_columns,
                         const char *const *column_names, const double *const *columns) {
  qp_err err = QP_OK;
  fitsfile *f = NULL;
  int status = 0;
  qp_atomic_file tmp;
  char names[QP_FITS_COLUMNS_MAX][FLEN_VALUE];
  char *ttype[QP_FITS_COLUMNS_MAX], *tform[QP_FITS_COLUMNS_MAX];

  QP_CHECK(path != NULL && column_names != NULL && columns != NULL, QP_ERR_INTERNAL,
           "qp_fits_map_write: NULL argument");
  QP_CHECK(nside >= 1 && nside <= qp_nside_max, QP_ERR_INPUT,
           "writing map '%s': nside %lld out of range [1, 2^29]", path, (long long)nside);
  QP_CHECK(n_columns >= 1 && n_columns <= QP_FITS_COLUMNS_MAX, QP_ERR_INPUT,
           "writing map '%s': %d columns (1 to %d allowed)", path, n_columns, QP_FITS_COLUMNS_MAX);
  const int64_t n_sky = 12 * nside * nside;
  /* healpy's layout: rows of 1024 values when they divide the map, else one value per row. */
  const int64_t per_row = n_sky % QP_FITS_ROW_WIDTH == 0 ? QP_FITS_ROW_WIDTH : 1;
  char form[16];
  snprintf(form, sizeof form, "%lldD", (long long)per_row);
  for (int c = 0; c < n_columns; ++c) {
    QP_CHECK(column_names[c] != NULL && columns[c] != NULL, QP_ERR_INTERNAL,
             "writing map '%s': column %d has no name or no data", path, c);
    QP_CHECK(strlen(column_names[c]) < 69, QP_ERR_INPUT,
             "writing map '%s': column name '%s' longer than 68 characters", path, column_names[c]);
    snprintf(names[c], sizeof names[c], "%s", column_names[c]);
    ttype[c] = names[c];
    tform[c] = form;
  }
  QP_CALL(qp_atomic_begin(path, &tmp));
  fits_clear_errmsg();
  /* By name, inside the private directory (atomic_file.h): cfitsio follows symlinks. */
  fits_create_diskfile(&f, tmp.path, &status);
  QP_CALL_GOTO(QP_FITS_STATUS(status, path, "creating the temporary file"), done);
  fits_create_img(f, BYTE_IMG, 0, NULL, &status); /* empty primary HDU, as healpy writes */
  fits_create_tbl(f, BINARY_TBL, n_sky / per_row, n_columns, ttype, tform, NULL, "xtension",
                  &status);
  QP_CALL_GOTO(QP_FITS_STATUS(status, path, "creating the table"), done);

  fits_write_key_str(f, "PIXTYPE", "HEALPIX", "HEALPIX pixelisation", &status);
  fits_write_key_str(f, "ORDERING", "RING", "Pixel ordering scheme, either RING or NESTED",
                     &status);
  fits_write_key_lng(f, "NSIDE", (LONGLONG)nside, "Resolution parameter of HEALPIX", &status);
  fits_write_key_lng(f, "FIRSTPIX", 0, "First pixel # (0 based)", &status);
  fits_write_key_lng(f, "LASTPIX", (LONGLONG)(n_sky - 1), "Last pixel # (0 based)", &status);
  fits_write_key_str(f, "INDXSCHM", "IMPLICIT", "Indexing: IMPLICIT or EXPLICIT", &status);
  fits_write_key_str(f, "OBJECT", "FULLSKY", "Sky coverage, either FULLSKY or PARTIAL", &status);
  fits_write_key_str(f, "COORDSYS", "G", "Ecliptic, Galactic or Celestial (equatorial)", &status);
  QP_CALL_GOTO(QP_FITS_STATUS(status, path, "writing the header"), done);

  for (int c = 0; c < n_columns; ++c) {
    fits_write_col(f, TDOUBLE, c + 1, 1, 1, n_sky, (void *)columns[c], &status);
    QP_CALL_GOTO(QP_FITS_STATUS(status, path, "writing a column"), done);
  }
  fits_close_file(f, &status);
  f = NULL;
  QP_CALL_GOTO(QP_FITS_STATUS(status, path, "closing"), done);
  QP_CALL_GOTO(qp_atomic_commit(&tmp, 1), done);

done:
  if (err != QP_OK) {
    if (f) {
      int close_status = 0;
      fits_close_file(f, &close_status);
    }
    qp_atomic_abort(&tmp); /* never leave a half-written file behind */
  }
  return err;
}
