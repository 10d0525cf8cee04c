/* cmd_args.h: the command line of every qmlpipe command: getopt_long with the commands' own
 * messages, and the one strict parser of each kind of option value (whole numbers, real
 * numbers, process grids; byte sizes are qp_parse_bytes, io/config.h). A value is taken whole
 * or refused: "abc", "12abc", "3.5" as a count, "2x2x2", out of range or beyond the type, each
 * with a message on stderr naming the option and the value; the command then exits 2. */
#ifndef QP_CMD_ARGS_H
#define QP_CMD_ARGS_H

#include <getopt.h>

/** The first `val` of a command's long options: above every char, so that getopt_long's
 *  optopt tells an unknown short option (a char) from a long one (qp_cmd_getopt). */
enum { QP_CMD_OPTION_FIRST = 256 };

/** Starts parsing a command line with qp_cmd_getopt (a command parses its line once). */
void qp_cmd_getopt_begin(void);
/** getopt_long(argc, argv, "h", options) with getopt's own messages off: for an unknown
 *  option, a long option without its value or with one it does not take, prints
 *  "qmlpipe COMMAND: unknown option 'X'", "qmlpipe COMMAND: --X needs a value" or "... takes
 *  no value" and returns '?'. `needs` (or NULL): pairs of a long option's name and what its
 *  value is, for that message ({"output", "a path", NULL}). Options may come before or after
 *  the operands, whatever POSIXLY_CORRECT says; "--" ends the options. A value given as the
 *  next word that starts with "--" is refused ("qmlpipe run: --output needs a path, not the
 *  option '--quiet'"; '?'): `--output --quiet` would have taken the option as the path;
 *  `--output=--quiet` is taken as written. When it returns -1
 *  the operands, in their order, are argv[optind .. argc) (argv is reordered). */
int qp_cmd_getopt(const char *command, int argc, char **argv, const struct option *options,
                  const char *const *needs);

/** A whole number in [lo, hi] from the whole of `text`, in digits (strtoll, checked: no sign
 *  of junk after it, no overflow); 0 with a message on stderr naming `option` when it is not
 *  one. */
int qp_cmd_parse_whole(const char *option, const char *text, long long lo, long long hi,
                       long long *out);
/** qp_cmd_parse_whole into an int ([lo, hi] within int's range). */
int qp_cmd_parse_count(const char *option, const char *text, long lo, long hi, int *out);
/** A finite number in [lo, hi] from the whole of `text` (strtod, checked); 0 with a message
 *  on stderr naming `option` when it is not one. */
int qp_cmd_parse_real(const char *option, const char *text, double lo, double hi, double *out);
/** The most ranks sized or run with --grid. */
enum { QP_SIZING_RANKS_MAX = 65536 };

/** RxC: two counts whose product is at most QP_SIZING_RANKS_MAX ('2x2x2', 'abc', '0x2' are
 *  refused); 0 with a message on stderr naming `option` when it is not one. */
int qp_cmd_parse_grid(const char *option, const char *text, int *rows, int *cols);

#endif
