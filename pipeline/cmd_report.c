/* cmd_report.c: `qmlpipe report RESULTS.h5`, the memory report of a results file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "qp_error.h"
#include "report_h5.h"

static void qp_report_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe report RESULTS.h5\n"
          "\n"
          "Prints the memory report stored under /budget of a results file: for every stage,\n"
          "its time and GFLOP/s, the predicted peak rise beside the measured RSS rise, the\n"
          "tracked peak beside the predicted peak (EXACT or DRIFT), RSS and cgroup figures,\n"
          "and per term the predicted and the tracked bytes, marking every term that differs.\n"
          "\n"
          "options:\n"
          "  -h, --help   print this help\n");
}

int qp_cmd_report(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      qp_report_usage(stdout);
      return 0;
    }
  }
  if (argc != 2 || argv[1][0] == '-') {
    if (argc > 2)
      fprintf(stderr, "qmlpipe report: expected one results file, got %d\n", argc - 1);
    else if (argc == 2)
      fprintf(stderr, "qmlpipe report: unknown option '%s'\n", argv[1]);
    else
      fprintf(stderr, "qmlpipe report: missing the results file\n");
    qp_report_usage(stderr);
    return 2;
  }
  qp_err err = qp_report_print(argv[1], stdout);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  return 0;
}
