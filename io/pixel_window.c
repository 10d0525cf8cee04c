/* pixel_window.c: HEALPix's pixel window tables (pixel_window.h), with cfitsio.
 *
 * As fits_map.c: the file passes the input check first (a regular file, no blank at an end of
 * its name), is then opened with fits_open_diskfile (the name taken literally, no extended
 * syntax) and every cfitsio status goes through qp_fits_error (fits_status.h). */
#include "pixel_window.h"

#include <errno.h>
#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fits_status.h"
#include "input_file.h"
#include "qp_config.h"
#include "test_hooks.h"

static const char *const qp_pw_role = "pixel window table";

qp_err qp_pixel_window_default_path(int64_t nside, char *path, size_t size) {
  const int tabled = nside >= QP_PIXEL_WINDOW_NSIDE_MIN && nside <= QP_PIXEL_WINDOW_NSIDE_MAX &&
                     (nside & (nside - 1)) == 0;
  QP_CHECK(tabled, QP_ERR_INPUT,
           "pixel window: HEALPix has no pixel window table for nside %lld (its tables are for "
           "nside a power of 2 from %d to %d): name a table of w_l^T and w_l^P for this nside "
           "with pixel_window_file",
           (long long)nside, QP_PIXEL_WINDOW_NSIDE_MIN, QP_PIXEL_WINDOW_NSIDE_MAX);
  const char *hook = qp_test_hook("QP_TEST_HEALPIX_DATA_DIR"); /* NULL in qmlpipe */
  const char *dir = hook && hook[0] ? hook : QP_HEALPIX_DATA_DIR;
  const int n = snprintf(path, size, "%s/pixel_window_n%04lld.fits", dir, (long long)nside);
  QP_CHECK(n > 0 && (size_t)n < size, QP_ERR_INPUT,
           "pixel window: the path of HEALPix's table in '%s' is too long", dir);
  return QP_OK;
}

/* Moves to the file's first binary table (HDU 2 in HEALPix's tables). */
static qp_err qp_pw_find_table(fitsfile *f, const char *path) {
  int found = 0;
  QP_CALL(qp_fits_first_binary_table(f, path, &found));
  QP_CHECK(found, QP_ERR_INPUT,
           "%s '%s' has no binary-table extension: not a pixel window table (HEALPix's "
           "pixel_window_nNNNN.fits: columns TEMPERATURE and POLARIZATION, one row per ell)",
           qp_pw_role, path);
  return QP_OK;
}

/* The table's NSIDE, where it has the keyword, must be the maps' (nside > 0). */
static qp_err qp_pw_check_nside(fitsfile *f, const char *path, int64_t nside) {
  int status = 0;
  double value = 0.0;
  fits_read_key_dbl(f, "NSIDE", &value, NULL, &status);
  if (qp_fits_key_missing(&status)) return QP_OK;
  QP_CALL(QP_FITS_STATUS(status, path, "reading NSIDE"));
  if (nside <= 0) return QP_OK;
  QP_CHECK(value == (double)nside, QP_ERR_INPUT,
           "%s '%s' is the window of NSIDE = %.17g, but the maps' nside is %lld: name the table "
           "of nside %lld",
           qp_pw_role, path, value, (long long)nside, (long long)nside);
  return QP_OK;
}

/* Columns 1 (w^T) and 2 (w^P): numeric, each holding at least lmax + 1 values. */
static qp_err qp_pw_check_columns(fitsfile *f, const char *path, int lmax) {
  int status = 0, n_columns = 0;
  long long n_rows = 0;
  fits_get_num_cols(f, &n_columns, &status);
  fits_get_num_rowsll(f, &n_rows, &status);
  QP_CALL(QP_FITS_STATUS(status, path, "reading the table size"));
  QP_CHECK(n_columns >= 2, QP_ERR_INPUT,
           "%s '%s' has %d column(s): a pixel window table has two, w_l^T (TEMPERATURE) then "
           "w_l^P (POLARIZATION)",
           qp_pw_role, path, n_columns);
  for (int c = 1; c <= 2; ++c) {
    int type = 0;
    long long repeat = 0, width = 0;
    fits_get_coltypell(f, c, &type, &repeat, &width, &status);
    QP_CALL(QP_FITS_STATUS(status, path, "reading a column type"));
    const int numeric = type == TBYTE || type == TSBYTE || type == TSHORT || type == TUSHORT ||
                        type == TINT || type == TUINT || type == TLONG || type == TULONG ||
                        type == TLONGLONG || type == TULONGLONG || type == TFLOAT ||
                        type == TDOUBLE;
    QP_CHECK(numeric, QP_ERR_INPUT,
             "%s '%s': column %d is not a numeric fixed-length column (cfitsio type code %d)",
             qp_pw_role, path, c, type);
    /* Values from row 1 on, read across rows as cfitsio does: rows x repeat of them (both
     * bounded by lmax + 1 before their product is taken). */
    const long long need = (long long)lmax + 1;
    const int enough =
        repeat >= 1 && n_rows >= 1 && (n_rows >= need || repeat >= need || n_rows * repeat >= need);
    QP_CHECK(enough, QP_ERR_INPUT,
             "%s '%s' holds w_l for l = 0..%lld (%lld rows x %lld), fewer than the %lld "
             "multipoles l = 0..%d needed (lmax_signal, or simulate's --lmax): name a table "
             "that reaches l = %d",
             qp_pw_role, path, n_rows * repeat - 1, n_rows, repeat, need, lmax, lmax);
  }
  return QP_OK;
}

/* w^T at every l and w^P from l = 2 (none below: no polarisation there) finite and > 0. */
static qp_err qp_pw_check_values(const qp_pixel_window *w) {
  for (int c = 0; c < 2; ++c) {
    const double *v = c == 0 ? w->t : w->p;
    for (int l = c == 0 ? 0 : 2; l <= w->lmax; ++l)
      QP_CHECK(isfinite(v[l]) && v[l] > 0.0, QP_ERR_INPUT,
               "%s '%s': %s (column %d) at l = %d is %.17g: a pixel window must be finite and "
               "> 0 (w_l^P from l = 2)",
               qp_pw_role, w->path, c == 0 ? "w_l^T" : "w_l^P", c + 1, l, v[l]);
  }
  return QP_OK;
}

/* Opens w->path, checks it and reads both columns into w->t and w->p (allocated). */
static qp_err qp_pw_read_file(int64_t nside, qp_pixel_window *w) {
  qp_err err = QP_OK;
  fitsfile *f = NULL;
  int status = 0, anynul = 0;
  double null_value = NAN; /* a null (TNULL) entry reads as NaN: refused as not finite */
  fits_clear_errmsg();     /* so that an error reports this file's messages, not older ones */
  QP_CALL(qp_input_check(qp_pw_role, w->path, QP_INPUT_ANY_SIZE));
  fits_open_diskfile(&f, w->path, READONLY, &status);
  QP_CALL_GOTO(QP_FITS_STATUS(status, w->path, "opening"), done);
  QP_CALL_GOTO(qp_pw_find_table(f, w->path), done);
  QP_CALL_GOTO(qp_pw_check_nside(f, w->path, nside), done);
  QP_CALL_GOTO(qp_pw_check_columns(f, w->path, w->lmax), done);
  w->t = malloc((size_t)(w->lmax + 1) * sizeof *w->t);
  w->p = malloc((size_t)(w->lmax + 1) * sizeof *w->p);
  QP_CHECK_GOTO(w->t && w->p, QP_ERR_NOMEM, done, "out of memory for a pixel window to l = %d",
                w->lmax);
  fits_read_col(f, TDOUBLE, 1, 1, 1, w->lmax + 1, &null_value, w->t, &anynul, &status);
  fits_read_col(f, TDOUBLE, 2, 1, 1, w->lmax + 1, &null_value, w->p, &anynul, &status);
  QP_CALL_GOTO(QP_FITS_STATUS(status, w->path, "reading the window"), done);
  QP_CALL_GOTO(qp_pw_check_values(w), done);
done:
  if (f) {
    int close_status = 0;
    fits_close_file(f, &close_status);
    if (err == QP_OK) err = QP_FITS_STATUS(close_status, w->path, "closing");
  }
  return err;
}

qp_err qp_pixel_window_read(const char *file, int64_t nside, int lmax, qp_pixel_window *w) {
  QP_CHECK(w != NULL && lmax >= 0, QP_ERR_INTERNAL, "qp_pixel_window_read: lmax %d", lmax);
  memset(w, 0, sizeof *w);
  w->lmax = lmax;
  const int named = file && file[0];
  if (named) {
    QP_CHECK(strlen(file) < sizeof w->path, QP_ERR_INPUT, "%s path '%s' is too long", qp_pw_role,
             file);
    snprintf(w->path, sizeof w->path, "%s", file);
  } else {
    QP_CALL(qp_pixel_window_default_path(nside, w->path, sizeof w->path));
    /* The one failure a user meets first: HEALPix's tables not installed. */
    struct stat st;
    QP_CHECK(stat(w->path, &st) == 0 || errno != ENOENT, QP_ERR_IO,
             "pixel window: HEALPix's table of nside %lld, '%s', is missing: install HEALPix's "
             "tables (Debian: apt-get install healpy-data) or name a table with "
             "pixel_window_file",
             (long long)nside, w->path);
  }
  const qp_err err = qp_pw_read_file(nside, w);
  if (err != QP_OK) {
    qp_pixel_window_free(w);
    return err;
  }
  snprintf(w->text, sizeof w->text, "%s nside %lld: %s",
           named ? "pixel_window_file for" : "healpix", (long long)nside, w->path);
  return QP_OK;
}

void qp_pixel_window_free(qp_pixel_window *w) {
  if (!w) return;
  free(w->t);
  free(w->p);
  w->t = w->p = NULL;
}
