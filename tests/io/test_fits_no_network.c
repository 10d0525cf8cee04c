/* test_fits_no_network.c: no network behind a FITS path.
 *
 * qmlpipe's reader takes a path literally (fits_open_diskfile), so a map named like a URL is a
 * file of that name on disk, and its absence the usual "cannot open" error. Where cfitsio is
 * linked from its archive (cmake/qp_static_io.cmake), its https driver meets
 * io/cfitsio_no_network.c's refusal: fits_open_file on an "https://" name (the extended
 * syntax qmlpipe never uses) fails at once with cfitsio's own error, no transfer and no crash. */
#include <fitsio.h>
#include <string.h>

#include "clock.h"
#include "fits_map.h"
#include "test_util.h"

static void test_reader_takes_url_literally(void) {
  qp_healpix_info info;
  qp_err err = qp_fits_map_info("https://example.invalid/map.fits", &info);
  TEST_ASSERT(err == QP_ERR_IO && strstr(qp_error_message(), "https://example.invalid/map.fits"),
              "a URL as a map path: %s: %s", qp_err_name(err), qp_error_message());
  fprintf(stderr, "  expected error: %s\n", qp_error_message());
  qp_error_clear();
}

#ifdef QP_STATIC_IO_LINKED
static void test_https_driver_refused(void) {
  const double t0 = qp_clock_seconds();
  fitsfile *f = NULL;
  int status = 0;
  fits_open_file(&f, "https://example.invalid/map.fits", READONLY, &status);
  const double seconds = qp_clock_seconds() - t0;
  char text[FLEN_ERRMSG] = "", line[FLEN_ERRMSG];
  while (fits_read_errmsg(line)) {
    if (strstr(line, "https") && !text[0]) snprintf(text, sizeof text, "%s", line);
  }
  TEST_ASSERT(status != 0 && f == NULL, "fits_open_file(https://...) status %d", status);
  TEST_ASSERT(text[0] != '\0', "cfitsio's message names the https driver");
  /* A refusal, not a timeout: no DNS, no connection (generous for a loaded machine). */
  TEST_ASSERT(qp_test_within(seconds, 2.0), "fits_open_file(https://...) took %.3f s", seconds);
  fprintf(stderr, "  https refused in %.4f s, status %d: %s\n", seconds, status, text);
}
#endif

int main(void) {
  test_reader_takes_url_literally();
#ifdef QP_STATIC_IO_LINKED
  test_https_driver_refused();
#else
  fprintf(stderr, "  cfitsio is the shared library here: its https driver is libcurl's\n");
#endif
  return TEST_RETURN();
}
