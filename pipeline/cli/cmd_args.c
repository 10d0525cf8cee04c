/* cmd_args.c: see cmd_args.h. */
#include "cmd_args.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked_size.h"

/* The operands (not options) gathered so far, at argv[1 .. 1 + qp_operands): a slot there was
 * read already when an operand is moved into it. */
static int qp_operands;

void qp_cmd_getopt_begin(void) {
  optind = 0; /* glibc: re-read the option string */
  qp_operands = 0;
}

/* What the value of long option `name` is, from `needs` ("a value" when not listed). */
static const char *qp_cmd_needs(const char *name, const char *const *needs) {
  for (int i = 0; needs && needs[i] && needs[i + 1]; i += 2)
    if (strcmp(name, needs[i]) == 0) return needs[i + 1];
  return "a value";
}

int qp_cmd_getopt(const char *command, int argc, char **argv, const struct option *options,
                  const char *const *needs) {
  opterr = 0;
  /* '-': operands come back in order (1), so that options may follow them even under
   * POSIXLY_CORRECT; ':': a missing value is ':', told apart from an unknown option. */
  int index = -1;
  int c = getopt_long(argc, argv, "-:h", options, &index);
  while (c == 1) {
    argv[1 + qp_operands++] = optarg;
    index = -1;
    c = getopt_long(argc, argv, "-:h", options, &index);
  }
  if (c == -1) {
    /* The operands after "--", then all of them moved last: argv[optind .. argc). */
    for (int i = optind; i < argc; ++i)
      argv[1 + qp_operands++] = argv[i];
    memmove(argv + argc - qp_operands, argv + 1, (size_t)qp_operands * sizeof *argv);
    optind = argc - qp_operands;
    return -1;
  }
  /* A value given as the next word must not be an option: `--output --quiet` took
   * "--quiet" as the results path and dropped the option. "--output=--quiet" (one word) is
   * taken as written, for a file of that name. */
  if (c != '?' && c != ':' && index >= 0 && options[index].has_arg == required_argument &&
      optarg && optind >= 2 && optarg == argv[optind - 1] && strncmp(optarg, "--", 2) == 0) {
    fprintf(stderr,
            "qmlpipe %s: --%s needs %s, not the option '%s' (for a value that starts with "
            "'--', write --%s=%s)\n",
            command, options[index].name, qp_cmd_needs(options[index].name, needs), optarg,
            options[index].name, optarg);
    return '?';
  }
  if (c != '?' && c != ':') return c;
  /* An unknown short option is optopt (a char; optind may still point at its word, "-xh");
   * else the word just read: an unknown long option, or one whose value is wrong or missing. */
  if (c == '?' && optopt > 0 && optopt < QP_CMD_OPTION_FIRST)
    fprintf(stderr, "qmlpipe %s: unknown option '-%c'\n", command, optopt);
  else if (c == '?' && optopt == 0)
    fprintf(stderr, "qmlpipe %s: unknown option '%s'\n", command, argv[optind - 1]);
  else if (c == '?')
    fprintf(stderr, "qmlpipe %s: '%s' takes no value\n", command, argv[optind - 1]);
  else
    fprintf(stderr, "qmlpipe %s: %s needs %s\n", command, argv[optind - 1],
            qp_cmd_needs(argv[optind - 1] + 2, needs));
  return '?';
}

int qp_cmd_parse_whole(const char *option, const char *text, long long lo, long long hi,
                       long long *out) {
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  if (end != text && *end == '\0' && errno != ERANGE && v >= lo && v <= hi) {
    *out = v;
    return 1;
  }
  /* "1e12", "16.0" or "0x10" (not digits alone): say how it reads, so that the fix is plain. */
  const int digits = end != text && *end == '\0';
  errno = 0;
  char shown[32] = "";
  const double as_real = strtod(text, &end);
  if (!digits && end != text && *end == '\0' && errno != ERANGE)
    snprintf(shown, sizeof shown, "%g", as_real);
  if (shown[0] && strcmp(shown, text) != 0)
    fprintf(stderr, "qmlpipe: %s '%s' (%s) is not a whole number from %lld to %lld in digits\n",
            option, text, shown, lo, hi);
  else
    fprintf(stderr, "qmlpipe: %s '%s' is not a whole number from %lld to %lld\n", option, text,
            lo, hi);
  return 0;
}

int qp_cmd_parse_count(const char *option, const char *text, long lo, long hi, int *out) {
  long long v = 0;
  /* An int's range at most, whatever the caller asked. */
  const long long first = lo > INT_MIN ? lo : INT_MIN, last = hi < INT_MAX ? hi : INT_MAX;
  if (!qp_cmd_parse_whole(option, text, first, last, &v)) return 0;
  *out = (int)v;
  return 1;
}

int qp_cmd_parse_real(const char *option, const char *text, double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  /* NaN fails the comparisons */
  if (end == text || *end != '\0' || errno == ERANGE || !(v >= lo && v <= hi)) {
    fprintf(stderr, "qmlpipe: %s '%s' is not a number from %g to %g\n", option, text, lo, hi);
    return 0;
  }
  *out = v;
  return 1;
}

int qp_cmd_parse_grid(const char *option, const char *text, int *rows, int *cols) {
  char r[32], c[32], name[64];
  const char *x = strchr(text, 'x');
  const size_t nr = x ? (size_t)(x - text) : 0;
  if (!x || nr == 0 || nr >= sizeof r || strlen(x + 1) >= sizeof c || strchr(x + 1, 'x')) {
    fprintf(stderr, "qmlpipe: %s '%s' is not RxC (e.g. 2x4)\n", option, text);
    return 0;
  }
  memcpy(r, text, nr);
  r[nr] = '\0';
  snprintf(c, sizeof c, "%s", x + 1);
  snprintf(name, sizeof name, "%s rows", option);
  if (!qp_cmd_parse_count(name, r, 1, QP_SIZING_RANKS_MAX, rows)) return 0;
  snprintf(name, sizeof name, "%s cols", option);
  if (!qp_cmd_parse_count(name, c, 1, QP_SIZING_RANKS_MAX, cols)) return 0;
  int64_t ranks = 0;
  if (!qp_i64_mul(*rows, *cols, &ranks) || ranks > QP_SIZING_RANKS_MAX) {
    fprintf(stderr, "qmlpipe: %s '%s' is %lld ranks, more than %d\n", option, text,
            (long long)ranks, QP_SIZING_RANKS_MAX);
    return 0;
  }
  return 1;
}
