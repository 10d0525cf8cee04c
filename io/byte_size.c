/* byte_size.c: byte sizes as people and batch systems write them (qp_parse_bytes, config.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

qp_err qp_parse_bytes(const char *text, double *bytes) {
  /* Decimal units are powers of 1000; "i" units and Slurm's bare K/M/G/T are powers of 1024. */
  static const struct {
    const char *suffix;
    double factor;
  } units[] = {
      {"", 1.0},
      {"B", 1.0},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"K", 1024.0},
      {"M", 1048576.0},
      {"G", 1073741824.0},
      {"T", 1099511627776.0},
  };
  QP_CHECK(text != NULL && bytes != NULL, QP_ERR_INTERNAL, "qp_parse_bytes: NULL argument");
  const char *p = text;
  while (isspace((unsigned char)*p))
    ++p;
  char *end = NULL;
  errno = 0;
  double value = strtod(p, &end);
  QP_CHECK(end != p && errno != ERANGE, QP_ERR_INPUT,
           "bad byte size '%s': expected a number with an optional unit (e.g. 20GiB, 512MB, "
           "1.5e9)",
           text);
  while (isspace((unsigned char)*end))
    ++end;
  size_t len = strlen(end);
  while (len > 0 && isspace((unsigned char)end[len - 1]))
    --len;
  double factor = -1.0;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; ++i) {
    if (strlen(units[i].suffix) == len && strncmp(units[i].suffix, end, len) == 0) {
      factor = units[i].factor;
      break;
    }
  }
  QP_CHECK(factor > 0, QP_ERR_INPUT,
           "bad byte size '%s': unknown unit '%.*s' (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)",
           text, (int)len, end);
  double total = value * factor;
  QP_CHECK(total >= 0, QP_ERR_INPUT, "bad byte size '%s': must be a number >= 0", text);
  /* Every size is later compared with, or converted to, 64-bit byte counts. */
  QP_CHECK(total < QP_BYTES_MAX, QP_ERR_INPUT,
           "bad byte size '%s': %.3g bytes is beyond the largest size, 2^63 bytes (8 EiB)", text,
           total);
  *bytes = floor(total);
  return QP_OK;
}
