/* test_input_sizes: sizes read from files that do not fit 64 bits, or only after wrapping.
 * Each reader must refuse them naming the file and the quantity (QP_ERR_INPUT), never hand
 * a wrapped number on:
 *  - a FITS map header whose rows x values per row is 2^64 + 768: computed in long long it
 *    wrapped to 768, the pixels of NSIDE 8, and the map "fitted" its NSIDE;
 *  - an HDF5 matrix of 2^31 x 2^31 doubles (a chunked dataset never written: a 1 KiB file),
 *    2^65 bytes;
 *  - byte sizes beyond 2^63 bytes (99999999999TiB), in the config and qp_parse_bytes;
 *  - dimensions whose counts overflow (nside beyond HEALPix's 2^29). */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fits_map.h"
#include "h5_matrix.h"
#include "test_util.h"

/* One 80-character FITS header card. */
static void card(FILE *f, const char *text, int *n) {
  char c[81];
  snprintf(c, sizeof c, "%-80s", text);
  fwrite(c, 1, 80, f);
  ++*n;
}

/* Pads a header to the 2880-byte block (36 cards). */
static void pad(FILE *f, int *n) {
  char blank[80];
  memset(blank, ' ', sizeof blank);
  while (*n % 36) {
    fwrite(blank, 1, sizeof blank, f);
    ++*n;
  }
}

/* A healpy-like map header (NSIDE 8, RING, one float64 column of 4 values a row) claiming
 * 2^62 + 192 rows: 4 x that = 2^64 + 768 values, 768 after wrapping. */
static void write_wrapping_fits(const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  int n = 0;
  card(f, "SIMPLE  =                    T", &n);
  card(f, "BITPIX  =                    8", &n);
  card(f, "NAXIS   =                    0", &n);
  card(f, "EXTEND  =                    T", &n);
  card(f, "END", &n);
  pad(f, &n);
  n = 0;
  card(f, "XTENSION= 'BINTABLE'", &n);
  card(f, "BITPIX  =                    8", &n);
  card(f, "NAXIS   =                    2", &n);
  card(f, "NAXIS1  =                   32", &n);
  card(f, "NAXIS2  =  4611686018427388096", &n);
  card(f, "PCOUNT  =                    0", &n);
  card(f, "GCOUNT  =                    1", &n);
  card(f, "TFIELDS =                    1", &n);
  card(f, "TTYPE1  = 'TEMPERATURE'", &n);
  card(f, "TFORM1  = '4D      '", &n);
  card(f, "PIXTYPE = 'HEALPIX '", &n);
  card(f, "ORDERING= 'RING    '", &n);
  card(f, "NSIDE   =                    8", &n);
  card(f, "INDXSCHM= 'IMPLICIT'", &n);
  card(f, "END", &n);
  pad(f, &n);
  static const char data[2880];
  fwrite(data, 1, sizeof data, f);
  fclose(f);
}

/* A dataset of rows x cols doubles, chunked and never written. */
static int write_huge_h5(const char *path, hsize_t rows, hsize_t cols) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[2] = {rows, cols}, chunk[2] = {1, 1};
  hid_t space = H5Screate_simple(2, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, chunk);
  hid_t d = H5Dcreate2(f, "/covariance", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  const int ok = f >= 0 && d >= 0;
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(f);
  return ok;
}

int main(void) {
  qp_healpix_info info;
  write_wrapping_fits("test_sizes_wrap.fits");
  EXPECT_ERROR(qp_fits_map_info("test_sizes_wrap.fits", &info), QP_ERR_INPUT,
               "test_sizes_wrap.fits", "column 1", "4611686018427388096 rows x 4");
  unlink("test_sizes_wrap.fits");

  int64_t rows = 0, cols = 0;
  TEST_ASSERT(write_huge_h5("test_sizes_huge.h5", (hsize_t)1 << 31, (hsize_t)1 << 31),
              "cannot write the 2^31 x 2^31 dataset");
  EXPECT_ERROR(qp_h5_matrix_info("test_sizes_huge.h5", "/covariance", &rows, &cols), QP_ERR_INPUT,
               "test_sizes_huge.h5", "'/covariance'", "2147483648 x 2147483648");
  /* A long thin matrix of modest bytes is fine. */
  TEST_ASSERT(write_huge_h5("test_sizes_thin.h5", (hsize_t)1 << 40, 2),
              "cannot write the 2^40 x 2 dataset");
  TEST_OK(qp_h5_matrix_info("test_sizes_thin.h5", "/covariance", &rows, &cols));
  TEST_ASSERT(rows == (int64_t)1 << 40 && cols == 2, "thin matrix read as %lld x %lld",
              (long long)rows, (long long)cols);
  unlink("test_sizes_huge.h5");
  unlink("test_sizes_thin.h5");

  double bytes = 0;
  EXPECT_ERROR(qp_parse_bytes("99999999999TiB", &bytes), QP_ERR_INPUT, "99999999999TiB", "2^63");
  EXPECT_ERROR(qp_parse_bytes("18446744073709551616", &bytes), QP_ERR_INPUT, "2^63");
  EXPECT_ERROR(qp_parse_bytes("1e300 GB", &bytes), QP_ERR_INPUT, "2^63");
  TEST_OK(qp_parse_bytes("4194303TiB", &bytes)); /* just under 2^62 */
  TEST_ASSERT(bytes == 4194303.0 * 1099511627776.0, "4194303TiB read as %.17g", bytes);

  qp_config cfg;
  qp_test_write_text("test_sizes_limit.yaml", "noise: {variance: 1.0}\nlmax: 10\n"
                                      "dimensions: {n_pix: 2000, lmax: 10, n_bins: 2}\n"
                                      "memory: {device_limit: 99999999999TiB}\n");
  EXPECT_ERROR(qp_config_load("test_sizes_limit.yaml", &cfg), QP_ERR_INPUT, "test_sizes_limit.yaml",
               "line 4", "memory.device_limit");
  qp_test_write_text("test_sizes_nside.yaml",
             "noise: {variance: 1.0}\nlmax: 10\n"
             "dimensions: {n_pix: 2000, lmax: 10, n_bins: 2, nside: 536870913}\n");
  EXPECT_ERROR(qp_config_load("test_sizes_nside.yaml", &cfg), QP_ERR_INPUT, "test_sizes_nside.yaml",
               "line 3", "dimensions.nside", "536870913", "2^29");
  qp_test_write_text("test_sizes_lmax.yaml", "noise: {variance: 1.0}\nlmax: 46340\n"
                                     "dimensions: {n_pix: 2000, lmax: 46340, n_bins: 2}\n");
  EXPECT_ERROR(qp_config_load("test_sizes_lmax.yaml", &cfg), QP_ERR_INPUT, "test_sizes_lmax.yaml",
               "lmax", "46340", "46339");
  /* The largest nside and a limit just under 2^62 bytes are accepted. */
  qp_test_write_text("test_sizes_ok.yaml",
             "noise: {variance: 1.0}\nlmax: 10\nmemory: {host_limit: 4194303TiB}\n"
             "dimensions: {n_pix: 2000, lmax: 10, n_bins: 2, nside: 536870912}\n");
  TEST_OK(qp_config_load("test_sizes_ok.yaml", &cfg));
  qp_config_free(&cfg);
  unlink("test_sizes_limit.yaml");
  unlink("test_sizes_nside.yaml");
  unlink("test_sizes_lmax.yaml");
  unlink("test_sizes_ok.yaml");
  return TEST_RETURN();
}
