/* test_h5_quiet_scope: the readers and writers of budget/ switch HDF5's own error printing off
 * only while they run (qp_h5_quiet_begin/end), never for the rest of the process: a failure
 * inside them is one qmlpipe message, and an HDF5 failure elsewhere afterwards still reaches
 * whatever printer was installed. The printer here counts its calls. */
#include <hdf5.h>
#include <stdio.h>
#include <unistd.h>

#include "meter.h"
#include "model.h"
#include "report_h5.h"
#include "report_ranks.h"
#include "test_util.h"

#define NOT_HDF5 "test_h5_quiet_not_hdf5.h5"
#define WRITTEN "test_h5_quiet_report.h5"

static int printed = 0;

static herr_t count_prints(hid_t stack, void *data) {
  (void)stack;
  ++*(int *)data;
  return 0;
}

/* The printer installed now is still count_prints. */
static void expect_printer(const char *after) {
  H5E_auto2_t func = NULL;
  void *data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  TEST_ASSERT(func == count_prints && data == &printed,
              "after %s HDF5's error printer is not the one installed before", after);
}

int main(void) {
  FILE *text = fopen(NOT_HDF5, "w");
  TEST_ASSERT(text && fputs("not an HDF5 file\n", text) >= 0, "cannot write %s", NOT_HDF5);
  if (text) fclose(text);
  FILE *sink = fopen("/dev/null", "w");
  H5Eset_auto2(H5E_DEFAULT, count_prints, &printed);

  /* Failures inside: one qmlpipe error each, nothing printed by HDF5. */
  EXPECT_ERROR(qp_report_print(NOT_HDF5, sink), QP_ERR_IO, NOT_HDF5);
  TEST_ASSERT(printed == 0, "qp_report_print let HDF5 print %d time(s)", printed);
  expect_printer("qp_report_print");
  int mismatch = 0;
  EXPECT_ERROR(qp_report_print_ranks(NOT_HDF5, sink, &mismatch), QP_ERR_IO, NOT_HDF5);
  TEST_ASSERT(printed == 0, "qp_report_print_ranks let HDF5 print %d time(s)", printed);
  expect_printer("qp_report_print_ranks");

  /* A report written (no stage recorded) and read back: the printer is back after both. */
  static const char *const stages[2] = {"load", "solve"};
  static qp_model model;
  qp_model_init(&model, 2, stages);
  qp_meter_sample baseline;
  qp_meter_read(&baseline);
  hid_t file = H5Fcreate(WRITTEN, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(file >= 0, "cannot create %s", WRITTEN);
  TEST_OK(qp_report_write(file, &model, &baseline));
  expect_printer("qp_report_write");
  /* A second /budget in the same file: HDF5 refuses, quietly. */
  TEST_FAILS(qp_report_write(file, &model, &baseline), QP_ERR_IO);
  TEST_ASSERT(printed == 0, "qp_report_write let HDF5 print %d time(s)", printed);
  expect_printer("a failed qp_report_write");
  if (file >= 0) H5Fclose(file);
  TEST_OK(qp_report_print(WRITTEN, sink));
  expect_printer("qp_report_print of a report");

  /* Elsewhere, HDF5 still prints its failures. */
  hid_t bad = H5Fopen(NOT_HDF5, H5F_ACC_RDONLY, H5P_DEFAULT);
  TEST_ASSERT(bad < 0, "%s opened as HDF5", NOT_HDF5);
  TEST_ASSERT(printed > 0, "an HDF5 failure outside qmlpipe's readers was not printed");

  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  fclose(sink);
  unlink(NOT_HDF5);
  unlink(WRITTEN);
  return TEST_RETURN();
}
