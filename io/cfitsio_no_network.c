/* cfitsio_no_network.c: the libcurl functions a statically linked cfitsio calls, refusing.
 *
 * Linked only where cfitsio comes from its archive (cmake/qp_static_io.cmake). Its https and
 * ftps drivers are the only callers of libcurl in it; qmlpipe never reaches them, since every
 * FITS file is opened by fits_open_diskfile or fits_create_diskfile, which take a path
 * literally and read or write it on disk (fits_map.c). Defining the six functions here keeps
 * libcurl and its ~30 libraries (TLS, Kerberos, LDAP, ...) out of every process's start: 18 ms
 * of 34 on the machines measured (docs/benchmarks.md). Were a driver reached all the same (a
 * program calling fits_open_file on an "https://" name), it would meet curl's own "failed to
 * initialise" and cfitsio would say it cannot open the file: no network, no crash
 * (tests/io/test_fits_no_network.c). */
#define CURL_DISABLE_TYPECHECK /* curl_easy_setopt is a type-checking macro otherwise */
#include <curl/curl.h>

CURLcode curl_global_init(long flags) {
  (void)flags;
  return CURLE_FAILED_INIT;
}

void curl_global_cleanup(void) {}

CURL *curl_easy_init(void) { return NULL; }

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...) {
  (void)curl;
  (void)option;
  return CURLE_FAILED_INIT;
}

CURLcode curl_easy_perform(CURL *curl) {
  (void)curl;
  return CURLE_FAILED_INIT;
}

void curl_easy_cleanup(CURL *curl) { (void)curl; }
