/* fits_status.c: cfitsio's status as qp_err (fits_status.h). */
#include "fits_status.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void qp_fits_rstrip(char *s) {
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
}

qp_err qp_fits_error(int status, const char *path, const char *what, const char *file, int line,
                     const char *func) {
  char text[FLEN_STATUS] = "";
  char detail[400] = "";
  char message[FLEN_ERRMSG];
  size_t used = 0;
  fits_get_errstatus(status, text);
  while (fits_read_errmsg(message) > 0) {
    qp_fits_rstrip(message);
    if (message[0] == '\0' || used + 1 >= sizeof detail) continue; /* drain the rest */
    int w = snprintf(detail + used, sizeof detail - used, "%s%s", used ? " / " : "", message);
    if (w > 0) used += (size_t)w < sizeof detail - used ? (size_t)w : sizeof detail - used - 1;
  }
  fits_clear_errmsg();
  return qp_error_set(QP_ERR_IO, file, line, func, "FITS file '%s': %s: cfitsio error %d (%s)%s%s",
                      path, what, status, text, detail[0] ? ": " : "", detail);
}

int qp_fits_key_missing(int *status) {
  if (*status != KEY_NO_EXIST) return 0;
  *status = 0;
  fits_clear_errmsg();
  return 1;
}

qp_err qp_fits_first_binary_table(fitsfile *f, const char *path, int *found) {
  int status = 0, n_hdus = 0, hdu_type = 0;
  *found = 0;
  fits_get_num_hdus(f, &n_hdus, &status);
  QP_CALL(QP_FITS_STATUS(status, path, "counting HDUs"));
  for (int h = 1; h <= n_hdus && !*found; ++h) {
    fits_movabs_hdu(f, h, &hdu_type, &status);
    QP_CALL(QP_FITS_STATUS(status, path, "moving to an HDU"));
    *found = hdu_type == BINARY_TBL;
  }
  return QP_OK;
}
