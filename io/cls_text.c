/* cls_text.c: the fiducial C_ell text file (cls_text.h), with plain stdio. */
#define _POSIX_C_SOURCE 200809L

#include "cls_text.h"

#include "atomic_file.h"
#include "input_file.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

enum { QP_CLS_TOKENS_MAX = 8 }; /* one more than the widest row, to see a row that is too wide */

static const char *const qp_cls_names[6] = {"TT", "EE", "BB", "TE", "TB", "EB"};

void qp_cls_free(qp_cls *cls) {
  if (!cls) return;
  for (int s = 0; s < 6; ++s) {
    free(cls->cl[s]);
    cls->cl[s] = NULL;
  }
  cls->lmax = 0;
  cls->n_columns = 0;
}

/* Splits a line into up to QP_CLS_TOKENS_MAX numbers; *n_tokens counts every token, parsed or
 * not (so that a row that is too wide is reported as such). */
static qp_err qp_cls_parse_row(const char *path, long line_no, char *line, double *values,
                               int *n_tokens) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (isspace((unsigned char)*p))
      ++p;
    if (*p == '\0') break;
    char *end = NULL;
    double v = strtod(p, &end);
    if (end == p || (*end != '\0' && !isspace((unsigned char)*end))) {
      char *stop = p;
      while (*stop && !isspace((unsigned char)*stop))
        ++stop;
      QP_FAIL(QP_ERR_INPUT, "C_ell file '%s' line %ld: '%.*s' is not a number", path, line_no,
              (int)(stop - p), p);
    }
    if (n < QP_CLS_TOKENS_MAX) values[n] = v;
    ++n;
    p = end;
  }
  *n_tokens = n;
  return QP_OK;
}

/* Makes room for row `ell` in all six arrays. */
static qp_err qp_cls_reserve(qp_cls *cls, int ell, int *capacity) {
  if (ell < *capacity) return QP_OK;
  QP_CHECK(*capacity <= INT_MAX / 2, QP_ERR_INPUT, "C_ell file with more than %d rows", *capacity);
  int grown = *capacity ? 2 * *capacity : 256;
  for (int s = 0; s < 6; ++s) {
    double *p = realloc(cls->cl[s], (size_t)grown * sizeof *p);
    QP_CHECK(p != NULL, QP_ERR_NOMEM, "no memory for %d C_ell values", grown);
    cls->cl[s] = p;
  }
  *capacity = grown;
  return QP_OK;
}

/* The row checks of cls_text.h: finite, non-negative auto-spectra, and each cross-spectrum
 * within Cauchy-Schwarz of its two auto-spectra (needed for a positive semi-definite model). */
static qp_err qp_cls_check_row(const char *path, long line_no, int ell, const double *cl,
                               int n_spectra) {
  for (int s = 0; s < n_spectra; ++s)
    QP_CHECK(isfinite(cl[s]), QP_ERR_INPUT, "C_ell file '%s' line %ld: ell %d: %s is %g", path,
             line_no, ell, qp_cls_names[s], cl[s]);
  for (int s = 0; s < 3; ++s)
    QP_CHECK(cl[s] >= 0, QP_ERR_INPUT, "C_ell file '%s' line %ld: ell %d: %s = %g is negative",
             path, line_no, ell, qp_cls_names[s], cl[s]);
  /* TE ~ (TT, EE), TB ~ (TT, BB), EB ~ (EE, BB); a relative slack for the last printed digit. */
  static const int pairs[3][3] = {{3, 0, 1}, {4, 0, 2}, {5, 1, 2}};
  for (int k = 0; k < 3 && pairs[k][0] < n_spectra; ++k) {
    int x = pairs[k][0], a = pairs[k][1], b = pairs[k][2];
    double bound = sqrt(cl[a] * cl[b]);
    QP_CHECK(fabs(cl[x]) <= bound * (1 + 1e-10), QP_ERR_INPUT,
             "C_ell file '%s' line %ld: ell %d: |%s| = %g exceeds sqrt(%s %s) = %g", path, line_no,
             ell, qp_cls_names[x], fabs(cl[x]), qp_cls_names[a], qp_cls_names[b], bound);
  }
  return QP_OK;
}

qp_err qp_cls_read(const char *path, qp_cls *cls) {
  qp_err err = QP_OK;
  FILE *file = NULL;
  char *line = NULL;
  size_t line_size = 0;
  long line_no = 0;
  int capacity = 0, n_rows = 0, n_tokens_first = 0;

  QP_CHECK(path != NULL && cls != NULL, QP_ERR_INTERNAL, "qp_cls_read: NULL argument");
  memset(cls, 0, sizeof *cls);
  QP_CALL(qp_input_fopen("C_ell file", path, QP_INPUT_TEXT_MAX_BYTES, &file));

  /* The bytes read are counted too: a file that grows while it is read (appended to) stops at
   * the same bound as one that was too large when opened. */
  int64_t bytes = 0;
  ssize_t len;
  errno = 0;
  while ((len = getline(&line, &line_size, file)) != -1) {
    ++line_no;
    bytes += len;
    QP_CHECK_GOTO(bytes <= QP_INPUT_TEXT_MAX_BYTES, QP_ERR_INPUT, done,
                  "C_ell file '%s' grew past %lld bytes while it was read", path,
                  (long long)QP_INPUT_TEXT_MAX_BYTES);
    char *p = line;
    while (isspace((unsigned char)*p))
      ++p;
    if (*p == '\0' || *p == '#') continue;

    double values[QP_CLS_TOKENS_MAX];
    int n_tokens = 0;
    QP_CALL_GOTO(qp_cls_parse_row(path, line_no, p, values, &n_tokens), done);
    QP_CHECK_GOTO(n_tokens == 5 || n_tokens == 7, QP_ERR_INPUT, done,
                  "C_ell file '%s' line %ld: %d columns; expected 5 (ell TT EE BB TE) or 7 "
                  "(ell TT EE BB TE TB EB)",
                  path, line_no, n_tokens);
    if (n_rows == 0) n_tokens_first = n_tokens;
    QP_CHECK_GOTO(n_tokens == n_tokens_first, QP_ERR_INPUT, done,
                  "C_ell file '%s' line %ld: %d columns, but the first row has %d", path, line_no,
                  n_tokens, n_tokens_first);
    QP_CHECK_GOTO(values[0] == (double)n_rows, QP_ERR_INPUT, done,
                  "C_ell file '%s' line %ld: ell = %g, expected %d (rows must start at ell 0 "
                  "and be consecutive)",
                  path, line_no, values[0], n_rows);
    QP_CALL_GOTO(qp_cls_check_row(path, line_no, n_rows, values + 1, n_tokens - 1), done);

    QP_CALL_GOTO(qp_cls_reserve(cls, n_rows, &capacity), done);
    for (int s = 0; s < 6; ++s)
      cls->cl[s][n_rows] = s < n_tokens - 1 ? values[1 + s] : 0.0;
    ++n_rows;
    errno = 0;
  }
  QP_CHECK_GOTO(!ferror(file), QP_ERR_IO, done, "reading C_ell file '%s': %s", path,
                strerror(errno));
  QP_CHECK_GOTO(n_rows > 0, QP_ERR_INPUT, done, "C_ell file '%s' has no data rows", path);
  cls->lmax = n_rows - 1;
  cls->n_columns = n_tokens_first - 1;

done:
  free(line);
  fclose(file);
  if (err != QP_OK) qp_cls_free(cls);
  return err;
}

qp_err qp_cls_write(const char *path, const qp_cls *cls) {
  qp_err err = QP_OK;
  FILE *file = NULL;
  qp_atomic_file tmp;

  QP_CHECK(path != NULL && cls != NULL, QP_ERR_INTERNAL, "qp_cls_write: NULL argument");
  QP_CHECK(cls->n_columns == 4 || cls->n_columns == 6, QP_ERR_INPUT,
           "writing C_ell file '%s': %d spectra (4 or 6 allowed)", path, cls->n_columns);
  QP_CHECK(cls->lmax >= 0, QP_ERR_INPUT, "writing C_ell file '%s': lmax %d < 0", path, cls->lmax);
  for (int s = 0; s < cls->n_columns; ++s)
    QP_CHECK(cls->cl[s] != NULL, QP_ERR_INTERNAL, "writing C_ell file '%s': no %s values", path,
             qp_cls_names[s]);
  QP_CALL(qp_atomic_begin(path, &tmp));
  QP_CALL_GOTO(qp_atomic_fopen(&tmp, 0666, &file), done);
  fprintf(file, "# C_ell (not D_ell). columns: ell TT EE BB TE%s\n",
          cls->n_columns == 6 ? " TB EB" : "");
  for (int ell = 0; ell <= cls->lmax; ++ell) {
    fprintf(file, "%5d", ell);
    /* 17 significant digits: a double survives the round trip exactly. */
    for (int s = 0; s < cls->n_columns; ++s)
      fprintf(file, " %.16e", cls->cl[s][ell]);
    fputc('\n', file);
  }
  QP_CALL_GOTO(qp_atomic_fcommit(&tmp, file, 1), done);

done:
  if (err != QP_OK) qp_atomic_abort(&tmp); /* never leave a half-written file behind */
  return err;
}
