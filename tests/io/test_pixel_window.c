/* test_pixel_window.c: HEALPix's pixel window tables (io/pixel_window.h): HEALPix's own tables
 * of nside 8 and 16 read as healpy.pixwin(nside, pol=True) gives them (values below printed by
 * healpy 1.16.1 from Debian's healpy-data), a table of one's own, and every refusal: the
 * default table missing, an nside without one, a table shorter than lmax + 1, a value not
 * finite or not > 0, another NSIDE, one column, no binary table, a named file missing.
 *
 * `test_pixel_window --print NSIDE LMAX` prints "l w_l^T w_l^P" of HEALPix's table instead, for
 * tests/tools/check_pixel_window_healpy.py (every value against healpy.pixwin). */
#define _POSIX_C_SOURCE 200809L

#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pixel_window.h"
#include "test_util.h"

static char prefix[64]; /* "test_pixwin_<pid>_": every file of this run starts with it */

static const char *file_name(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s%s", prefix, name);
  return buf;
}

/* A table written by hand as HEALPix writes its own (an empty primary HDU, then a binary table
 * TEMPERATURE, POLARIZATION of n_rows doubles): n_columns 1 or 2, NSIDE left out when
 * nside <= 0, value t(l) and p(l) with the entry at `bad_l` of column `bad_column` (1 or 2)
 * set to `bad`. */
static void write_table(const char *path, long long nside, int n_columns, int n_rows,
                        int bad_column, int bad_l, double bad) {
  fitsfile *f = NULL;
  int status = 0;
  char names[2][16] = {"TEMPERATURE", "POLARIZATION"};
  char form[2][8] = {"1D", "1D"};
  char *ttype[2] = {names[0], names[1]}, *tform[2] = {form[0], form[1]};
  unlink(path);
  fits_create_diskfile(&f, path, &status);
  fits_create_img(f, BYTE_IMG, 0, NULL, &status);
  fits_create_tbl(f, BINARY_TBL, n_rows, n_columns, ttype, tform, NULL, "PIXEL WINDOW", &status);
  if (nside > 0) fits_write_key_lng(f, "NSIDE", nside, NULL, &status);
  double *v = malloc((size_t)n_rows * sizeof *v);
  for (int c = 1; c <= n_columns; ++c) {
    for (int l = 0; l < n_rows; ++l)
      v[l] = c == 1 ? 1.0 - 1e-3 * l : (l < 2 ? 0.0 : 1.0 - 2e-3 * l);
    if (c == bad_column && bad_l >= 0 && bad_l < n_rows) v[bad_l] = bad;
    fits_write_col(f, TDOUBLE, c, 1, 1, n_rows, v, &status);
  }
  free(v);
  fits_close_file(f, &status);
  if (status) {
    fits_report_error(stderr, status);
    exit(2);
  }
}

/* A FITS file with an image only: no table. */
static void write_image_only(const char *path) {
  fitsfile *f = NULL;
  int status = 0;
  long naxes[1] = {4};
  double v[4] = {1, 2, 3, 4};
  unlink(path);
  fits_create_diskfile(&f, path, &status);
  fits_create_img(f, DOUBLE_IMG, 1, naxes, &status);
  fits_write_img(f, TDOUBLE, 1, 4, v, &status);
  fits_close_file(f, &status);
  if (status) exit(2);
}

/* HEALPix's tables: values healpy.pixwin(nside, pol=True) printed, to 1e-15 (the file's own
 * doubles, read by both), and the whole length the run needs. */
static void check_healpix_tables(void) {
  static const struct {
    long long nside;
    int l;
    double t, p;
  } known[] = {
      {8, 0, 1.0000000000005151, 0.0},
      {8, 1, 0.9985491372249965, 0.0},
      {8, 2, 0.9956525978675678, 0.9985501170951213},
      {8, 23, 0.6590814489942017, 0.6611630956199037},
      {8, 32, 0.43455534627999126, 0.4360671062018357},
      {16, 0, 1.0000000000001288, 0.0},
      {16, 2, 0.9989095511489218, 0.9996364701121632},
      {16, 47, 0.6526493371185118, 0.6531650080883946},
      {16, 64, 0.4406932150094855, 0.44107396885799527},
  };
  double worst = 0;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i) {
    qp_pixel_window w;
    const int lmax = (int)(4 * known[i].nside); /* the whole table: 4 nside + 1 rows */
    TEST_OK(qp_pixel_window_read(NULL, known[i].nside, lmax, &w));
    if (!w.t) continue;
    worst = qp_test_worst(worst, qp_test_rel_diff(w.t[known[i].l], known[i].t));
    worst = qp_test_worst(worst, qp_test_rel_diff(w.p[known[i].l], known[i].p));
    char expect[64];
    snprintf(expect, sizeof expect, "healpix nside %lld: ", known[i].nside);
    TEST_ASSERT(strncmp(w.text, expect, strlen(expect)) == 0 && strstr(w.text, w.path), "text '%s'",
                w.text);
    qp_pixel_window_free(&w);
    qp_pixel_window_free(&w); /* safe twice */
  }
  printf("HEALPix's tables of nside 8 and 16 against healpy.pixwin: worst relative %.2e\n", worst);
  TEST_WITHIN(worst, 1e-15, "a value differs from healpy.pixwin's");
  /* One more multipole than the table holds (4 nside + 1 rows): refused. */
  qp_pixel_window w;
  EXPECT_ERROR(qp_pixel_window_read(NULL, 8, 33, &w), QP_ERR_INPUT, "pixel_window_n0008.fits",
               "l = 0..32", "fewer than the 34 multipoles");
  TEST_ASSERT(w.t == NULL && w.p == NULL, "a failed read holds arrays");
}

static void check_own_table(void) {
  char path[128];
  file_name(path, sizeof path, "own.fits");
  write_table(path, 8, 2, 20, 0, -1, 0);
  qp_pixel_window w;
  TEST_OK(qp_pixel_window_read(path, 8, 19, &w));
  TEST_ASSERT(w.t && w.t[5] == 1.0 - 5e-3 && w.p[0] == 0.0 && w.p[7] == 1.0 - 14e-3,
              "values of the table written");
  TEST_ASSERT(strstr(w.text, "pixel_window_file for nside 8: ") == w.text, "text '%s'", w.text);
  qp_pixel_window_free(&w);
  /* No NSIDE keyword: taken for any nside. */
  write_table(path, 0, 2, 20, 0, -1, 0);
  TEST_OK(qp_pixel_window_read(path, 4, 11, &w));
  qp_pixel_window_free(&w);
  unlink(path);
}

static void check_refusals(void) {
  char path[128], dir[128];
  qp_pixel_window w;
  /* The default table missing: HEALPix's tables not installed (an empty directory here). */
  file_name(dir, sizeof dir, "no_tables");
  mkdir(dir, 0755);
  setenv("QP_TEST_HEALPIX_DATA_DIR", dir, 1);
  EXPECT_ERROR(qp_pixel_window_read(NULL, 16, 47, &w), QP_ERR_IO, "pixel_window_n0016.fits",
               "is missing", "apt-get install healpy-data", "pixel_window_file");
  TEST_ASSERT(w.t == NULL, "a failed read holds arrays");
  unsetenv("QP_TEST_HEALPIX_DATA_DIR");
  rmdir(dir);
  /* An nside HEALPix has no table for. */
  EXPECT_ERROR(qp_pixel_window_read(NULL, 6, 17, &w), QP_ERR_INPUT,
               "no pixel window table for "
               "nside 6",
               "pixel_window_file");
  EXPECT_ERROR(qp_pixel_window_read(NULL, 1, 2, &w), QP_ERR_INPUT, "nside 1");
  EXPECT_ERROR(qp_pixel_window_read(NULL, 16384, 2, &w), QP_ERR_INPUT, "nside 16384");

  file_name(path, sizeof path, "bad.fits");
  /* Shorter than lmax + 1. */
  write_table(path, 8, 2, 10, 0, -1, 0);
  EXPECT_ERROR(qp_pixel_window_read(path, 8, 12, &w), QP_ERR_INPUT, path, "l = 0..9",
               "fewer than the 13 multipoles");
  /* Values: NaN, infinity, 0 and a negative one, in T and in P from l = 2. */
  const struct {
    int column, l;
    double value;
    const char *needle;
  } bad[] = {{1, 3, NAN, "w_l^T (column 1) at l = 3 is nan"},
             {1, 0, 0.0, "w_l^T (column 1) at l = 0 is 0"},
             {1, 12, -0.5, "at l = 12 is -0.5"},
             {2, 2, 0.0, "w_l^P (column 2) at l = 2 is 0"},
             /* cfitsio reads any IEEE special value as null: NaN here */
             {2, 5, INFINITY, "w_l^P (column 2) at l = 5 is nan"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    write_table(path, 8, 2, 20, bad[i].column, bad[i].l, bad[i].value);
    EXPECT_ERROR(qp_pixel_window_read(path, 8, 19, &w), QP_ERR_INPUT, path, bad[i].needle,
                 "finite and > 0");
  }
  /* A bad value beyond lmax is not read; w^P of l = 0, 1 is anything (no polarisation). */
  write_table(path, 8, 2, 20, 1, 15, NAN);
  TEST_OK(qp_pixel_window_read(path, 8, 14, &w));
  qp_pixel_window_free(&w);
  write_table(path, 8, 2, 20, 2, 1, -3.0);
  TEST_OK(qp_pixel_window_read(path, 8, 19, &w));
  qp_pixel_window_free(&w);
  /* Another nside's table; one column; no table at all. */
  write_table(path, 16, 2, 40, 0, -1, 0);
  EXPECT_ERROR(qp_pixel_window_read(path, 8, 19, &w), QP_ERR_INPUT, "NSIDE = 16",
               "the maps' nside is 8");
  write_table(path, 8, 1, 20, 0, -1, 0);
  EXPECT_ERROR(qp_pixel_window_read(path, 8, 19, &w), QP_ERR_INPUT, "1 column(s)");
  write_image_only(path);
  EXPECT_ERROR(qp_pixel_window_read(path, 8, 19, &w), QP_ERR_INPUT, "no binary-table extension");
  unlink(path);
  /* A named table that is missing, or a directory. */
  EXPECT_ERROR(qp_pixel_window_read(path, 8, 19, &w), QP_ERR_IO, "pixel window table", path);
  EXPECT_ERROR(qp_pixel_window_read(".", 8, 19, &w), QP_ERR_IO, "pixel window table",
               "a directory");
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--print") == 0) {
    qp_pixel_window w;
    if (qp_pixel_window_read(NULL, atoll(argv[2]), atoi(argv[3]), &w) != QP_OK) {
      qp_error_print(stderr, 0);
      return 1;
    }
    for (int l = 0; l <= w.lmax; ++l)
      printf("%d %.17g %.17g\n", l, w.t[l], w.p[l]);
    qp_pixel_window_free(&w);
    return 0;
  }
  snprintf(prefix, sizeof prefix, "test_pixwin_%ld_", (long)getpid());
  check_healpix_tables();
  check_own_table();
  check_refusals();
  return TEST_RETURN();
}
