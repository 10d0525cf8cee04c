/* cmd_report.c: `qmlpipe report RESULTS.h5`, the memory report of a results file. */
#include <stdio.h>

#include "cmd_args.h"
#include "commands.h"
#include "qp_error.h"
#include "report_h5.h"
#include "report_ranks.h"
#include "results_path.h"

static void qp_report_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe report RESULTS.h5|CONFIG.yaml [--ranks]\n"
          "\n"
          "Prints the memory report stored under /budget of a results file: for every stage,\n"
          "its time and GFLOP/s, the predicted peak rise beside the measured RSS rise, the\n"
          "tracked peak beside the predicted peak (EXACT or DRIFT), RSS and cgroup figures,\n"
          "and per term the predicted and the tracked bytes, marking every term that differs.\n"
          "A stage a run restored from a checkpoint (run --resume) is marked RESUMED and not\n"
          "compared with the model.\n"
          "A CONFIG.yaml (.yaml or .yml) stands for the results file of its 'output' (relative\n"
          "to the config's directory, as `run` writes it); any other path is the results file,\n"
          "relative to the current directory. A run given --output wrote elsewhere: report\n"
          "that path.\n"
          "\n"
          "options:\n"
          "  --ranks      print the per-rank budget of a distributed run instead: each rank's\n"
          "               predicted and tracked peak, measured RSS peak and end, and the\n"
          "               max/min over the ranks (exit 4 when a rank's tracked bytes differ\n"
          "               from its prediction)\n"
          "  -h, --help   print this help\n");
}

int qp_cmd_report(int argc, char **argv) {
  static const struct option options[] = {{"help", no_argument, NULL, 'h'},
                                          {"ranks", no_argument, NULL, QP_CMD_OPTION_FIRST},
                                          {NULL, 0, NULL, 0}};
  int ranks = 0;
  qp_cmd_getopt_begin();
  for (int c; (c = qp_cmd_getopt("report", argc, argv, options, NULL)) != -1;) {
    if (c == 'h') {
      qp_report_usage(stdout);
      return 0;
    }
    if (c != QP_CMD_OPTION_FIRST) {
      qp_report_usage(stderr);
      return 2;
    }
    ranks = 1;
  }
  if (argc - optind != 1) {
    if (optind >= argc)
      fprintf(stderr, "qmlpipe report: missing the results file (or its config)\n");
    else
      fprintf(stderr, "qmlpipe report: expected one results file or config, got '%s' and '%s'\n",
              argv[optind], argv[optind + 1]);
    qp_report_usage(stderr);
    return 2;
  }
  const char *arg = argv[optind];
  char path[QP_PATH_MAX];
  qp_err resolved = qp_results_path_resolve(arg, path);
  if (resolved != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(resolved);
  }
  if (ranks) {
    int mismatch = 0;
    qp_err err = qp_report_print_ranks(path, stdout, &mismatch);
    if (err != QP_OK) {
      qp_error_print(stderr, 0);
      return qp_err_exit_status(err);
    }
    return mismatch ? qp_err_exit_status(QP_ERR_BUDGET) : 0;
  }
  qp_err err = qp_report_print(path, stdout);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  return 0;
}
