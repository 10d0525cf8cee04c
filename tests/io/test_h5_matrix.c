/* test_h5_matrix.c: dense matrices in HDF5 (io/h5_matrix.h): round trip, float32 input, and
 * the refusals (missing file, missing dataset, not 2-D, not floating-point), which must come
 * with our message and without HDF5's own error stack on stderr. */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5_matrix.h"
#include "test_util.h"

static char path[96];      /* the matrix file of this run */
static char quiet_log[96]; /* stderr is sent here while a call that must fail runs */

/* Runs `call` with stderr redirected to a file; returns what it wrote there (bytes). */
static long stderr_bytes_during(qp_err (*call)(void), qp_err *result) {
  fflush(stderr);
  int saved = dup(2);
  int fd = open(quiet_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 2);
  close(fd);
  *result = call();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  struct stat st;
  long bytes = stat(quiet_log, &st) == 0 ? (long)st.st_size : -1;
  unlink(quiet_log);
  return bytes;
}

static void test_roundtrip(void) {
  const int64_t rows = 3, cols = 5;
  double data[15], back[15];
  for (int i = 0; i < 15; ++i)
    data[i] = 1.0 / (i + 3) - 0.25 * i;
  TEST_OK(qp_h5_matrix_write(path, "/noise/covariance", rows, cols, data));
  TEST_ASSERT(qp_test_temps_of(path) == 0, "temporaries of %s left behind", path);

  int64_t r = 0, c = 0;
  TEST_OK(qp_h5_matrix_info(path, "/noise/covariance", &r, &c));
  TEST_ASSERT(r == rows && c == cols, "shape %lld x %lld", (long long)r, (long long)c);
  for (int i = 0; i < 15; ++i)
    back[i] = -1;
  TEST_OK(qp_h5_matrix_read(path, "/noise/covariance", rows, cols, back));
  int bad = 0;
  for (int i = 0; i < 15; ++i)
    bad += back[i] != data[i];
  TEST_ASSERT(bad == 0, "%d values differ after the round trip", bad);
  /* the caller's idea of the shape is checked */
  TEST_FAILS(qp_h5_matrix_read(path, "/noise/covariance", cols, rows, back), QP_ERR_INPUT);

  /* a second write replaces the file */
  data[0] = 99;
  TEST_OK(qp_h5_matrix_write(path, "covariance", 1, 1, data));
  TEST_OK(qp_h5_matrix_info(path, "/covariance", &r, &c));
  TEST_ASSERT(r == 1 && c == 1, "rewritten shape %lld x %lld", (long long)r, (long long)c);
  TEST_OK(qp_h5_matrix_read(path, "/covariance", 1, 1, back));
  TEST_ASSERT(back[0] == 99, "rewritten value %g", back[0]);
}

/* Datasets the writer would not make, written with HDF5 directly. */
static void write_odd_datasets(void) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  float f32[6] = {0.5f, -1.25f, 3.0f, 1e-3f, 7.0f, -0.125f};
  hsize_t d2[2] = {2, 3}, d3[3] = {2, 1, 3}, d1[1] = {6};
  hid_t s = H5Screate_simple(2, d2, NULL);
  hid_t d = H5Dcreate2(f, "f32", H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f32);
  H5Dclose(d);
  H5Sclose(s);
  s = H5Screate_simple(3, d3, NULL);
  d = H5Dcreate2(f, "cube", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(d);
  H5Sclose(s);
  s = H5Screate_simple(1, d1, NULL);
  d = H5Dcreate2(f, "vector", H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(d);
  H5Sclose(s);
  s = H5Screate_simple(2, d2, NULL);
  d = H5Dcreate2(f, "ints", H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(d);
  H5Sclose(s);
  H5Fclose(f);
}

static void test_float32(void) {
  write_odd_datasets();
  int64_t r = 0, c = 0;
  double back[6];
  TEST_OK(qp_h5_matrix_info(path, "f32", &r, &c));
  TEST_ASSERT(r == 2 && c == 3, "f32 shape %lld x %lld", (long long)r, (long long)c);
  TEST_OK(qp_h5_matrix_read(path, "f32", 2, 3, back));
  const double want[6] = {0.5, -1.25, 3.0, (double)1e-3f, 7.0, -0.125};
  int bad = 0;
  for (int i = 0; i < 6; ++i)
    bad += back[i] != want[i];
  TEST_ASSERT(bad == 0, "%d float32 values read wrong", bad);
}

/* The failing calls, as functions for stderr_bytes_during. */
static int64_t g_rows, g_cols;
static char missing_file[128];
static qp_err call_missing_dataset(void) {
  return qp_h5_matrix_info(path, "/no/such", &g_rows, &g_cols);
}
static qp_err call_missing_file(void) {
  return qp_h5_matrix_info(missing_file, "/covariance", &g_rows, &g_cols);
}
static qp_err call_cube(void) { return qp_h5_matrix_info(path, "cube", &g_rows, &g_cols); }
static qp_err call_vector(void) { return qp_h5_matrix_info(path, "vector", &g_rows, &g_cols); }
static qp_err call_ints(void) { return qp_h5_matrix_info(path, "ints", &g_rows, &g_cols); }
static qp_err call_write_no_dir(void) {
  double x = 1;
  return qp_h5_matrix_write("no_such_dir_qp/m.h5", "m", 1, 1, &x);
}

static void expect(int line, qp_err (*call)(void), qp_err code, const char *frag1,
                   const char *frag2) {
  qp_err err = QP_OK;
  long noise = stderr_bytes_during(call, &err);
  const char *msg = qp_error_message();
  TEST_ASSERT(err == code, "case at line %d: %s, expected %s (%s)", line, qp_err_name(err),
              qp_err_name(code), msg);
  TEST_ASSERT(!frag1 || strstr(msg, frag1), "case at line %d: message lacks '%s': %s", line, frag1,
              msg);
  TEST_ASSERT(!frag2 || strstr(msg, frag2), "case at line %d: message lacks '%s': %s", line, frag2,
              msg);
  TEST_ASSERT(noise == 0, "case at line %d: %ld bytes on stderr (HDF5's error stack?)", line,
              noise);
  fprintf(stderr, "  expected error: %s\n", msg);
  qp_error_clear();
}

static void test_errors(void) {
  snprintf(missing_file, sizeof missing_file, "%s.missing", path);
  expect(__LINE__, call_missing_dataset, QP_ERR_IO, path, "'/no/such'");
  expect(__LINE__, call_missing_file, QP_ERR_IO, missing_file, "No such file");
  expect(__LINE__, call_cube, QP_ERR_INPUT, "'cube' has 3 dimensions", NULL);
  expect(__LINE__, call_vector, QP_ERR_INPUT, "'vector' has 1 dimensions", NULL);
  expect(__LINE__, call_ints, QP_ERR_INPUT, "not floating-point", NULL);
  expect(__LINE__, call_write_no_dir, QP_ERR_IO, "no_such_dir_qp/m.h5", NULL);
  /* HDF5's own printing is back on afterwards (the functions restore what they found) */
  H5E_auto2_t func = NULL;
  void *data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  TEST_ASSERT(func != NULL, "HDF5 automatic error printing was not restored");
}

int main(void) {
  snprintf(path, sizeof path, "test_h5m_%ld.h5", (long)getpid());
  snprintf(quiet_log, sizeof quiet_log, "test_h5m_%ld.stderr", (long)getpid());
  test_roundtrip();
  test_float32();
  test_errors();
  unlink(path);
  return TEST_RETURN();
}
