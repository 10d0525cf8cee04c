/* cmd_report.c: `qmlpipe report RESULTS.h5`, the memory report of a results file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "qp_error.h"
#include "report_h5.h"
#include "report_ranks.h"

static void qp_report_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe report RESULTS.h5 [--ranks]\n"
          "\n"
          "Prints the memory report stored under /budget of a results file: for every stage,\n"
          "its time and GFLOP/s, the predicted peak rise beside the measured RSS rise, the\n"
          "tracked peak beside the predicted peak (EXACT or DRIFT), RSS and cgroup figures,\n"
          "and per term the predicted and the tracked bytes, marking every term that differs.\n"
          "\n"
          "options:\n"
          "  --ranks      print the per-rank budget of a distributed run instead: each rank's\n"
          "               predicted and tracked peak, measured RSS peak and end, and the\n"
          "               max/min over the ranks (exit 4 when a rank's tracked bytes differ\n"
          "               from its prediction)\n"
          "  -h, --help   print this help\n");
}

int qp_cmd_report(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      qp_report_usage(stdout);
      return 0;
    }
  }
  int ranks = 0;
  if (argc == 3 && strcmp(argv[2], "--ranks") == 0) {
    ranks = 1;
    argc = 2;
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
  if (ranks) {
    int mismatch = 0;
    qp_err err = qp_report_print_ranks(argv[1], stdout, &mismatch);
    if (err != QP_OK) {
      qp_error_print(stderr, 0);
      return qp_err_exit_status(err);
    }
    return mismatch ? qp_err_exit_status(QP_ERR_BUDGET) : 0;
  }
  qp_err err = qp_report_print(argv[1], stdout);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  return 0;
}
