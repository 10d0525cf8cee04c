/* bins_text.c: the bins file of a config (bins_text.h), with getline and strtol. */
#define _POSIX_C_SOURCE 200809L

#include "bins_text.h"

#include "input_file.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Tokens are quoted in messages up to this many characters. */
enum { QP_BINS_QUOTE_MAX = 40 };

void qp_bins_free(qp_bins *bins) {
  if (!bins) return;
  free(bins->lo);
  free(bins->hi);
  bins->lo = bins->hi = NULL;
  bins->n = 0;
}

/* Blanks between and around the numbers; '\r' so that CRLF files read as they look. */
static int qp_bins_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The end of the token at s: the next blank, '#', newline or NUL. */
static const char *qp_bins_token_end(const char *s) {
  while (*s && *s != '#' && *s != '\n' && !qp_bins_blank(*s))
    ++s;
  return s;
}

/* The next integer of a line into *out; *s moves past it. `which` is "ell_min" or "ell_max". */
static qp_err qp_bins_int(const char *path, long line_no, const char **s, const char *which,
                          int *out) {
  const char *p = *s;
  while (qp_bins_blank(*p))
    ++p;
  QP_CHECK(*p && *p != '#' && *p != '\n', QP_ERR_INPUT,
           "bins file '%s' line %ld: expected two integers 'ell_min ell_max', but %s is missing",
           path, line_no, which);
  const char *stop = qp_bins_token_end(p);
  const int len = (int)(stop - p) < QP_BINS_QUOTE_MAX ? (int)(stop - p) : QP_BINS_QUOTE_MAX;
  char *end = NULL;
  errno = 0;
  const long v = strtol(p, &end, 10);
  /* strtol stops at the first character that is not a digit: the whole token must be the
   * number ("10.9", "1e1", "0x5" and a sign alone are not). */
  QP_CHECK(end == stop, QP_ERR_INPUT, "bins file '%s' line %ld: %s '%.*s' is not an integer", path,
           line_no, which, len, p);
  QP_CHECK(errno != ERANGE && v >= INT_MIN && v <= INT_MAX, QP_ERR_INPUT,
           "bins file '%s' line %ld: %s '%.*s' is out of range (a multipole is an int)", path,
           line_no, which, len, p);
  *out = (int)v;
  *s = stop;
  return QP_OK;
}

/* One data line: exactly two integers, then nothing but blanks or a comment. */
static qp_err qp_bins_line(const char *path, long line_no, const char *line, int *lo, int *hi) {
  const char *s = line;
  QP_CALL(qp_bins_int(path, line_no, &s, "ell_min", lo));
  QP_CALL(qp_bins_int(path, line_no, &s, "ell_max", hi));
  while (qp_bins_blank(*s))
    ++s;
  const char *stop = qp_bins_token_end(s);
  const int len = (int)(stop - s) < QP_BINS_QUOTE_MAX ? (int)(stop - s) : QP_BINS_QUOTE_MAX;
  QP_CHECK(*s == '\0' || *s == '#' || *s == '\n', QP_ERR_INPUT,
           "bins file '%s' line %ld: '%.*s' after the bin '%d %d': one bin a line, two integers "
           "'ell_min ell_max' (a comment starts with #)",
           path, line_no, len, s, *lo, *hi);
  return QP_OK;
}

/* The bin against the analysis' range and the bin before it (line prev_line). */
static qp_err qp_bins_check(const char *path, long line_no, const qp_bins *b, long prev_line,
                            int ell_min, int lmax, int lo, int hi) {
  QP_CHECK(lo <= hi, QP_ERR_INPUT,
           "bins file '%s' line %ld: bin '%d %d' ends before it starts (ell_min > ell_max)", path,
           line_no, lo, hi);
  QP_CHECK(lo >= ell_min, QP_ERR_INPUT,
           "bins file '%s' line %ld: bin '%d %d' starts below the config's ell_min = %d", path,
           line_no, lo, hi, ell_min);
  QP_CHECK(hi <= lmax, QP_ERR_INPUT,
           "bins file '%s' line %ld: bin '%d %d' ends above the config's lmax = %d", path, line_no,
           lo, hi, lmax);
  if (b->n == 0) return QP_OK;
  const int plo = b->lo[b->n - 1], phi = b->hi[b->n - 1];
  QP_CHECK(lo > phi || hi < plo, QP_ERR_INPUT,
           "bins file '%s' line %ld: bin '%d %d' overlaps the bin '%d %d' of line %ld", path,
           line_no, lo, hi, plo, phi, prev_line);
  QP_CHECK(lo > phi, QP_ERR_INPUT,
           "bins file '%s' line %ld: bin '%d %d' comes before the bin '%d %d' of line %ld: bins "
           "must be in ascending order",
           path, line_no, lo, hi, plo, phi, prev_line);
  return QP_OK;
}

static qp_err qp_bins_append(const char *path, qp_bins *b, int *capacity, int lo, int hi) {
  if (b->n == *capacity) {
    /* At most lmax - ell_min + 1 bins exist (they are disjoint): the doubling stays small. */
    const int grown = *capacity ? 2 * *capacity : 64;
    int *l = realloc(b->lo, (size_t)grown * sizeof *l);
    if (l) b->lo = l;
    int *h = l ? realloc(b->hi, (size_t)grown * sizeof *h) : NULL;
    if (h) b->hi = h;
    QP_CHECK(l && h, QP_ERR_NOMEM, "bins file '%s': no memory for %d bins", path, grown);
    *capacity = grown;
  }
  b->lo[b->n] = lo;
  b->hi[b->n] = hi;
  b->n++;
  return QP_OK;
}

qp_err qp_bins_read(const char *path, int ell_min, int lmax, qp_bins *bins) {
  qp_err err = QP_OK;
  FILE *file = NULL;
  char *line = NULL;
  size_t line_size = 0;
  long line_no = 0, prev_line = 0;
  int capacity = 0;

  QP_CHECK(path != NULL && bins != NULL, QP_ERR_INTERNAL, "qp_bins_read: NULL argument");
  memset(bins, 0, sizeof *bins);
  /* A regular file only (a FIFO would wait for a writer, a directory opens but cannot be
   * read), of at most QP_INPUT_TEXT_MAX_BYTES: input_file.h. */
  QP_CALL(qp_input_fopen("bins file", path, QP_INPUT_TEXT_MAX_BYTES, &file));

  errno = 0;
  ssize_t len;
  int64_t bytes = 0; /* a file appended to while it is read stops at the same bound */
  while ((len = getline(&line, &line_size, file)) != -1) {
    ++line_no;
    bytes += len;
    QP_CHECK_GOTO(bytes <= QP_INPUT_TEXT_MAX_BYTES, QP_ERR_INPUT, done,
                  "bins file '%s' grew past %lld bytes while it was read", path,
                  (long long)QP_INPUT_TEXT_MAX_BYTES);
    QP_CHECK_GOTO(strlen(line) == (size_t)len, QP_ERR_INPUT, done,
                  "bins file '%s' line %ld holds a NUL byte: not a text file", path, line_no);
    const char *s = line;
    while (qp_bins_blank(*s))
      ++s;
    if (*s == '\0' || *s == '\n' || *s == '#') continue;
    int lo = 0, hi = 0;
    QP_CALL_GOTO(qp_bins_line(path, line_no, s, &lo, &hi), done);
    QP_CALL_GOTO(qp_bins_check(path, line_no, bins, prev_line, ell_min, lmax, lo, hi), done);
    QP_CALL_GOTO(qp_bins_append(path, bins, &capacity, lo, hi), done);
    prev_line = line_no;
    errno = 0;
  }
  QP_CHECK_GOTO(!ferror(file), QP_ERR_IO, done, "reading bins file '%s' (after line %ld): %s", path,
                line_no, strerror(errno));
  QP_CHECK_GOTO(bins->n > 0, QP_ERR_INPUT, done,
                "bins file '%s' has no bins (only blank and comment lines): expected rows "
                "'ell_min ell_max'",
                path);

done:
  free(line);
  fclose(file);
  if (err != QP_OK) qp_bins_free(bins);
  return err;
}
