/* test_fits_map.c: HEALPix FITS maps (io/fits_map.h): write/read round trip, NESTED float32
 * files in healpy's 1024-per-row layout converted to RING, and the refusals. Files that
 * qp_fits_map_write does not make are written here with cfitsio directly. */
#define _POSIX_C_SOURCE 200809L

#include <chealpix.h>
#include <fitsio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fits_map.h"
#include "test_util.h"

static char prefix[64]; /* "test_fits_<pid>_": every file of this run starts with it */

static const char *file_name(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s%s", prefix, name);
  return buf;
}

/* A map file written by hand. nside < 0 leaves NSIDE out; indxschm NULL leaves it out.
 * Each column holds n_values floats (TFORM "<per_row>E"), column c's value k is
 * value(c, k). */
static float value_of(int c, int64_t k) { return (float)(0.5 * (double)k - 100.0 * c + 0.25); }

static void write_custom(const char *path, long long nside, const char *ordering,
                         const char *indxschm, int n_columns, int64_t n_values, int per_row) {
  fitsfile *f = NULL;
  int status = 0;
  char form[16];
  char names[3][16] = {"I_STOKES", "Q_STOKES", "U_STOKES"};
  char *ttype[3] = {names[0], names[1], names[2]};
  char *tform[3] = {form, form, form};
  snprintf(form, sizeof form, "%dE", per_row);
  unlink(path);
  fits_create_diskfile(&f, path, &status);
  fits_create_img(f, BYTE_IMG, 0, NULL, &status);
  fits_create_tbl(f, BINARY_TBL, n_values / per_row, n_columns, ttype, tform, NULL, "xtension",
                  &status);
  fits_write_key_str(f, "PIXTYPE", "HEALPIX", NULL, &status);
  fits_write_key_str(f, "ORDERING", ordering, NULL, &status);
  if (nside >= 0) fits_write_key_lng(f, "NSIDE", nside, NULL, &status);
  if (indxschm) fits_write_key_str(f, "INDXSCHM", indxschm, NULL, &status);
  float *buf = malloc((size_t)n_values * sizeof *buf);
  for (int c = 0; c < n_columns; ++c) {
    for (int64_t k = 0; k < n_values; ++k)
      buf[k] = value_of(c, k);
    fits_write_col(f, TFLOAT, c + 1, 1, 1, n_values, buf, &status);
  }
  free(buf);
  fits_close_file(f, &status);
  if (status) {
    fits_report_error(stderr, status);
    exit(2);
  }
}

/* Round trip of qp_fits_map_write / qp_fits_map_read, and the layout written. */
static void test_roundtrip(int64_t nside, const char *want_tform) {
  char path[128];
  char name[32];
  snprintf(name, sizeof name, "rt_%lld.fits", (long long)nside);
  file_name(path, sizeof path, name);
  const int64_t n_sky = 12 * nside * nside;
  const char *names[3] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
  double *cols[3], *back = malloc((size_t)n_sky * sizeof *back);
  for (int c = 0; c < 3; ++c) {
    cols[c] = malloc((size_t)n_sky * sizeof *cols[c]);
    /* values that float32 could not hold exactly, and healpy's UNSEEN */
    for (int64_t i = 0; i < n_sky; ++i)
      cols[c][i] = (c + 1) * 1.0 / 3.0 + 1e-9 * (double)i;
    cols[c][n_sky / 2] = -1.6375e30;
  }
  TEST_OK(qp_fits_map_write(path, nside, 3, names, (const double *const *)cols));
  TEST_ASSERT(qp_test_temps_of(path) == 0, "temporaries of %s left behind", path);

  qp_healpix_info info;
  TEST_OK(qp_fits_map_info(path, &info));
  TEST_ASSERT(info.nside == nside && info.n_sky == n_sky, "nside %lld n_sky %lld",
              (long long)info.nside, (long long)info.n_sky);
  TEST_ASSERT(info.nested == 0 && info.n_columns == 3, "nested %d columns %d", info.nested,
              info.n_columns);
  for (int c = 0; c < 3 && c < info.n_columns; ++c)
    TEST_ASSERT(strcmp(info.column_names[c], names[c]) == 0, "column %d named '%s'", c,
                info.column_names[c]);
  for (int c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < n_sky; ++i)
      back[i] = -7;
    TEST_OK(qp_fits_map_read(path, &info, c, back));
    int64_t bad = 0;
    for (int64_t i = 0; i < n_sky; ++i)
      bad += back[i] != cols[c][i];
    TEST_ASSERT(bad == 0, "nside %lld column %d: %lld values differ", (long long)nside, c,
                (long long)bad);
  }
  TEST_FAILS(qp_fits_map_read(path, &info, 3, back), QP_ERR_INPUT);

  /* healpy's keywords and row layout, checked with cfitsio itself */
  fitsfile *f = NULL;
  int status = 0, hdu_type = 0;
  char value[FLEN_VALUE];
  long long lastpix = 0;
  fits_open_diskfile(&f, path, READONLY, &status);
  fits_movabs_hdu(f, 2, &hdu_type, &status);
  fits_read_key_str(f, "TFORM1", value, NULL, &status);
  TEST_ASSERT(status == 0 && strcmp(value, want_tform) == 0, "TFORM1 '%s', expected '%s'", value,
              want_tform);
  fits_read_key_str(f, "ORDERING", value, NULL, &status);
  TEST_ASSERT(status == 0 && strcmp(value, "RING") == 0, "ORDERING '%s'", value);
  fits_read_key_str(f, "PIXTYPE", value, NULL, &status);
  TEST_ASSERT(status == 0 && strcmp(value, "HEALPIX") == 0, "PIXTYPE '%s'", value);
  fits_read_key_str(f, "COORDSYS", value, NULL, &status);
  TEST_ASSERT(status == 0 && strcmp(value, "G") == 0, "COORDSYS '%s'", value);
  fits_read_key_lnglng(f, "LASTPIX", &lastpix, NULL, &status);
  TEST_ASSERT(status == 0 && lastpix == n_sky - 1, "LASTPIX %lld", lastpix);
  fits_close_file(f, &status);
  TEST_ASSERT(status == 0, "cfitsio status %d reading back the header", status);

  /* Writing over an existing file replaces it. */
  cols[0][0] = 42.0;
  TEST_OK(qp_fits_map_write(path, nside, 1, names, (const double *const *)cols));
  TEST_OK(qp_fits_map_info(path, &info));
  TEST_ASSERT(info.n_columns == 1, "rewritten file has %d columns", info.n_columns);
  TEST_OK(qp_fits_map_read(path, &info, 0, back));
  TEST_ASSERT(back[0] == 42.0, "rewritten value %g", back[0]);

  unlink(path);
  for (int c = 0; c < 3; ++c)
    free(cols[c]);
  free(back);
}

/* A NESTED float32 file comes back in RING order: sky[ring] = file[nest(ring)]. */
static void test_nested(int64_t nside, int per_row) {
  char path[128], name[48];
  snprintf(name, sizeof name, "nest_%lld_%d.fits", (long long)nside, per_row);
  file_name(path, sizeof path, name);
  const int64_t n_sky = 12 * nside * nside;
  write_custom(path, nside, "NESTED", "IMPLICIT", 2, n_sky, per_row);
  qp_healpix_info info;
  TEST_OK(qp_fits_map_info(path, &info));
  TEST_ASSERT(info.nested == 1 && info.nside == nside && info.n_columns == 2,
              "nested %d nside %lld columns %d", info.nested, (long long)info.nside,
              info.n_columns);
  double *sky = malloc((size_t)n_sky * sizeof *sky);
  for (int c = 0; c < 2; ++c) {
    for (int64_t i = 0; i < n_sky; ++i)
      sky[i] = NAN;
    TEST_OK(qp_fits_map_read(path, &info, c, sky));
    int64_t bad = 0, moved = 0;
    for (int64_t ring = 0; ring < n_sky; ++ring) {
      int64_t nest = 0;
      ring2nest64(nside, ring, &nest);
      moved += nest != ring;
      bad += sky[ring] != (double)value_of(c, nest);
    }
    TEST_ASSERT(bad == 0, "nside %lld per_row %d column %d: %lld pixels wrong after NEST->RING",
                (long long)nside, per_row, c, (long long)bad);
    TEST_ASSERT(moved > n_sky / 2, "the test map does not exercise the reordering");
  }
  free(sky);
  unlink(path);
}

static void test_errors(void) {
  char path[128];
  qp_healpix_info info;

  /* missing file: I/O error naming it */
  file_name(path, sizeof path, "missing.fits");
  qp_err err = qp_fits_map_info(path, &info);
  TEST_ASSERT(err == QP_ERR_IO && strstr(qp_error_message(), path), "missing file: %s: %s",
              qp_err_name(err), qp_error_message());
  fprintf(stderr, "  expected error: %s\n", qp_error_message());
  qp_error_clear();

  /* NSIDE 4.5 (issue 38: cfitsio read it as 4 and the map was taken as nside 4) */
  file_name(path, sizeof path, "half.fits");
  write_custom(path, 4, "RING", NULL, 1, 192, 1);
  {
    fitsfile *f = NULL;
    int status = 0;
    fits_open_file(&f, path, READWRITE, &status);
    fits_movabs_hdu(f, 2, NULL, &status);
    fits_update_key_dbl(f, "NSIDE", 4.5, -3, NULL, &status);
    fits_close_file(f, &status);
    TEST_ASSERT(status == 0, "cannot write NSIDE = 4.5 (cfitsio status %d)", status);
  }
  err = qp_fits_map_info(path, &info);
  TEST_ASSERT(err == QP_ERR_INPUT && strstr(qp_error_message(), "NSIDE = 4.5 is not a whole number"),
              "NSIDE 4.5: %s: %s", qp_err_name(err), qp_error_message());
  fprintf(stderr, "  expected error: %s\n", qp_error_message());
  qp_error_clear();
  unlink(path);

  /* a column of the wrong length: NSIDE 4 needs 192 values, the file has 100 */
  file_name(path, sizeof path, "short.fits");
  write_custom(path, 4, "RING", NULL, 1, 100, 1);
  err = qp_fits_map_info(path, &info);
  const char *msg = qp_error_message();
  TEST_ASSERT(err == QP_ERR_INPUT && strstr(msg, path) && strstr(msg, "I_STOKES") &&
                  strstr(msg, "100") && strstr(msg, "192"),
              "wrong length: %s: %s", qp_err_name(err), msg);
  fprintf(stderr, "  expected error: %s\n", msg);
  qp_error_clear();
  unlink(path);

  /* partial-sky (explicit index) files are refused as unsupported */
  file_name(path, sizeof path, "partial.fits");
  write_custom(path, 4, "RING", "EXPLICIT", 1, 192, 1);
  TEST_FAILS(qp_fits_map_info(path, &info), QP_ERR_UNSUPPORTED);
  unlink(path);

  /* no NSIDE, a bad ORDERING: not a HEALPix map */
  file_name(path, sizeof path, "nonside.fits");
  write_custom(path, -1, "RING", NULL, 1, 192, 1);
  TEST_FAILS(qp_fits_map_info(path, &info), QP_ERR_INPUT);
  write_custom(path, 4, "SPIRAL", NULL, 1, 192, 1);
  TEST_FAILS(qp_fits_map_info(path, &info), QP_ERR_INPUT);
  unlink(path);

  /* not a FITS file at all: cfitsio's error becomes QP_ERR_IO with its text */
  file_name(path, sizeof path, "text.fits");
  FILE *t = fopen(path, "w");
  fputs("this is not FITS\n", t);
  fclose(t);
  err = qp_fits_map_info(path, &info);
  TEST_ASSERT(err == QP_ERR_IO && strstr(qp_error_message(), "cfitsio error"), "not FITS: %s: %s",
              qp_err_name(err), qp_error_message());
  fprintf(stderr, "  expected error: %s\n", qp_error_message());
  qp_error_clear();
  unlink(path);

  /* a write that fails (directory missing) leaves nothing behind */
  const char *names[1] = {"T"};
  double v[12] = {0};
  const double *cols[1] = {v};
  TEST_FAILS(qp_fits_map_write("no_such_dir_qp/map.fits", 1, 1, names, cols), QP_ERR_IO);
  TEST_FAILS(qp_fits_map_write("x.fits", 0, 1, names, cols), QP_ERR_INPUT);
}

int main(void) {
  snprintf(prefix, sizeof prefix, "test_fits_%ld_", (long)getpid());
  test_roundtrip(4, "1D");     /* 192 pixels: one value per row */
  test_roundtrip(16, "1024D"); /* 3072 pixels: rows of 1024, as healpy writes */
  test_nested(16, 1024);       /* healpy's float32 layout */
  test_nested(128, 768);       /* several read chunks, not aligned with the rows */
  test_nested(2, 1);           /* one value per row */
  test_errors();
  return TEST_RETURN();
}
