/* test_cls_text.c: the C_ell text file (io/cls_text.h): the shipped Planck file's format, a
 * write/read round trip, and each kind of bad row refused with the file and line named. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cls_text.h"
#include "test_util.h"

static char path[96]; /* the one temporary file, in the working directory */

static void write_text(const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(2);
  }
  fputs(text, f);
  fclose(f);
}

/* The head of /work/shared/data/cls_planck2015_lcdm.txt, byte for byte: 5 columns, comments,
 * leading blanks, C_0 = C_1 = 0. */
static const char planck_head[] =
    "# C_ell in muK^2 (NOT D_ell). columns: ell TT EE BB TE. TB=EB=0.\n"
    "# source: xQML repo examples/planck_base_planck_2015_TTlowP.fits (x1e12), C_0=C_1=0\n"
    "   0 0.00000000000000000e+00 0.00000000000000000e+00 0.00000000000000000e+00 "
    "0.00000000000000000e+00\n"
    "   1 0.00000000000000000e+00 0.00000000000000000e+00 0.00000000000000000e+00 "
    "0.00000000000000000e+00\n"
    "   2 1.17851614968299714e+03 4.92654086886852582e-02 2.30488180567402310e-03 "
    "3.43417976484215615e+00\n"
    "   3 5.52920307031803645e+02 3.83122445444812956e-02 1.29260832613471515e-03 "
    "2.04695704613345475e+00\n"
    "   4 3.12623021949431518e+02 2.46564753977405078e-02 7.40787556203738686e-04 "
    "1.22977644364851302e+00\n";

static void test_planck_format(void) {
  write_text(planck_head);
  qp_cls cls;
  TEST_OK(qp_cls_read(path, &cls));
  TEST_ASSERT(cls.lmax == 4 && cls.n_columns == 4, "lmax %d n_columns %d", cls.lmax, cls.n_columns);
  if (cls.lmax == 4) {
    TEST_ASSERT(cls.cl[0][0] == 0 && cls.cl[3][1] == 0, "C_0, C_1 not zero");
    TEST_ASSERT(cls.cl[0][2] == 1.17851614968299714e+03, "TT(2) %.17g", cls.cl[0][2]);
    TEST_ASSERT(cls.cl[1][3] == 3.83122445444812956e-02, "EE(3) %.17g", cls.cl[1][3]);
    TEST_ASSERT(cls.cl[2][4] == 7.40787556203738686e-04, "BB(4) %.17g", cls.cl[2][4]);
    TEST_ASSERT(cls.cl[3][4] == 1.22977644364851302e+00, "TE(4) %.17g", cls.cl[3][4]);
    for (int ell = 0; ell <= 4; ++ell)
      TEST_ASSERT(cls.cl[4][ell] == 0 && cls.cl[5][ell] == 0, "TB/EB(%d) not zero", ell);
  }
  qp_cls_free(&cls);
  qp_cls_free(&cls); /* safe twice */
  TEST_ASSERT(cls.cl[0] == NULL, "qp_cls_free left a pointer");
}

static void test_roundtrip(int n_columns) {
  qp_cls out = {.lmax = 40, .n_columns = n_columns};
  for (int s = 0; s < 6; ++s)
    out.cl[s] = calloc(41, sizeof(double));
  for (int ell = 0; ell <= 40; ++ell) {
    double tt = 1000.0 / (1.0 + ell * ell) + 1.0 / 3.0, ee = 0.1 / (1.0 + ell), bb = 1e-3 / 7.0;
    out.cl[0][ell] = tt;
    out.cl[1][ell] = ee;
    out.cl[2][ell] = bb;
    out.cl[3][ell] = (ell % 2 ? -0.3 : 0.7) * sqrt(tt * ee);
    if (n_columns == 6) {
      out.cl[4][ell] = 0.1 * sqrt(tt * bb);
      out.cl[5][ell] = -0.2 * sqrt(ee * bb);
    }
  }
  TEST_OK(qp_cls_write(path, &out));
  TEST_ASSERT(qp_test_temps_of(path) == 0, "temporaries of %s left behind", path);
  qp_cls in;
  TEST_OK(qp_cls_read(path, &in));
  TEST_ASSERT(in.lmax == 40 && in.n_columns == n_columns, "lmax %d n_columns %d", in.lmax,
              in.n_columns);
  if (in.lmax == 40) {
    int bad = 0;
    for (int s = 0; s < 6; ++s)
      for (int ell = 0; ell <= 40; ++ell)
        bad += in.cl[s][ell] != out.cl[s][ell];
    TEST_ASSERT(bad == 0, "%d values changed in the round trip (%d columns)", bad, n_columns);
  }
  qp_cls_free(&in);
  for (int s = 0; s < 6; ++s)
    free(out.cl[s]);
}

/* Reads `text`, expecting QP_ERR_INPUT with the file, "line N" (unless bad_line is 0) and
 * `fragment` in the message. */
static void expect_bad(int line, const char *text, int bad_line, const char *fragment) {
  write_text(text);
  qp_cls cls;
  qp_err err = qp_cls_read(path, &cls);
  const char *msg = qp_error_message();
  char where[32];
  snprintf(where, sizeof where, "line %d", bad_line);
  TEST_ASSERT(err == QP_ERR_INPUT, "case at line %d: %s (%s)", line, qp_err_name(err), msg);
  TEST_ASSERT(strstr(msg, path) && (bad_line == 0 || strstr(msg, where)) && strstr(msg, fragment),
              "case at line %d: message lacks file, '%s' or '%s': %s", line, where, fragment, msg);
  TEST_ASSERT(cls.cl[0] == NULL, "case at line %d: arrays not freed on error", line);
  fprintf(stderr, "  expected error: %s\n", msg);
  qp_error_clear();
}

static void test_errors(void) {
  expect_bad(__LINE__, "# starts at 2\n2 1 1 1 0\n3 1 1 1 0\n", 2, "expected 0");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 1 1 0\n3 1 1 1 0\n", 3, "ell = 3, expected 2");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 1 1\n", 2, "4 columns");
  expect_bad(__LINE__, "0 0 0 0 0 0\n", 1, "6 columns");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 1 1 0 0 0\n", 2, "first row has 5");
  expect_bad(__LINE__, "0 0 0 0 0\n\n# comment\n1 nan 1 1 0\n", 4, "TT is nan");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 inf 1 0\n", 2, "EE is inf");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 1 -1 0\n", 2, "BB = -1 is negative");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 4 1 2.5\n", 2, "|TE| = 2.5 exceeds sqrt(TT EE) = 2");
  expect_bad(__LINE__, "0 0 0 0 0\n1 1 1 1 0.5x\n", 2, "'0.5x' is not a number");
  expect_bad(__LINE__, "# only comments\n\n", 0, "no data rows");

  qp_cls cls;
  char missing[128];
  snprintf(missing, sizeof missing, "%s.missing", path);
  qp_err err = qp_cls_read(missing, &cls);
  TEST_ASSERT(err == QP_ERR_IO && strstr(qp_error_message(), missing), "missing file: %s: %s",
              qp_err_name(err), qp_error_message());
  fprintf(stderr, "  expected error: %s\n", qp_error_message());
  qp_error_clear();

  qp_cls five = {.lmax = 2, .n_columns = 5};
  TEST_FAILS(qp_cls_write(path, &five), QP_ERR_INPUT);
}

int main(void) {
  snprintf(path, sizeof path, "test_cls_%ld.txt", (long)getpid());
  test_planck_format();
  test_roundtrip(4);
  test_roundtrip(6);
  test_errors();
  unlink(path);
  return TEST_RETURN();
}
