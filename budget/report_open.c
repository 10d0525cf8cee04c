/* report_open.c: a results file opened for reading its memory report (report_open.h). */
#include "report_open.h"

#include "h5_error.h"
#include "input_file.h"

qp_err qp_report_open(const char *path, hid_t *file, hid_t *budget) {
  qp_err err = QP_OK;
  *file = *budget = -1;
  /* Before HDF5 opens the name: the system's reason for a file that cannot be opened (HDF5
   * says only "unable to open file"), and a FIFO or device refused (input_file.h). */
  QP_CALL(qp_input_check("results file", path, QP_INPUT_ANY_SIZE));
  QP_H5_GOTO(*file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), done,
             "cannot open '%s' as an HDF5 file", path);
  htri_t has = H5Lexists(*file, "budget", H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s: /budget", path);
  QP_CHECK_GOTO(has > 0, QP_ERR_INPUT, done,
                "'%s' has no /budget group: not a qmlpipe results file, or one written "
                "without its memory report",
                path);
  QP_H5_GOTO(*budget = H5Gopen2(*file, "budget", H5P_DEFAULT), done, "%s: /budget", path);
done:
  if (err != QP_OK && *file >= 0) {
    H5Fclose(*file);
    *file = -1;
  }
  return err;
}
