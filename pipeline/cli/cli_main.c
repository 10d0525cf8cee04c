/* cli_main.c: the qmlpipe command line (cli_main.h): dispatches to the subcommands of
 * commands.h. qmlpipe (main.c) runs it as it is; qmlpipe-test (tests/support/) installs the
 * test library first. */
#include "cli_main.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "blas_library.h"
#include "openblas_tuning.h"
#include "comm.h"
#include "commands.h"
#include "fault.h"
#include "h5_error.h"
#include "interrupt.h"
#include "job_limit.h"
#include "omp_wait.h"
#include "qp_config.h"

static void qp_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe COMMAND [ARGS]\n"
          "\n"
          "Quadratic Maximum Likelihood CMB power spectra, with a memory budget per stage.\n"
          "\n"
          "commands:\n"
          "  run CONFIG.yaml        run every stage; write the results file (config 'output',\n"
          "                         or --output PATH; --grid RxC --block B for MPI)\n"
          "  budget CONFIG.yaml     print the predicted memory of every stage, term by term,\n"
          "                         without allocating anything big\n"
          "  plan CONFIG.yaml       the route and chunks the planner picks, and each stage's\n"
          "                         predicted peak against memory.host_limit; --sbatch FILE\n"
          "                         writes a Slurm job script, --json prints it for programs\n"
          "  calibrate              measure the model's overhead on this machine\n"
          "  report RESULTS.h5      print the prediction beside the measurement, per stage\n"
          "                         (a CONFIG.yaml stands for its 'output', here and below)\n"
          "  validate RESULTS.h5... check the memory model against the measurements of any\n"
          "                         number of runs; non-zero exit when a stage is outside\n"
          "                         --tolerance (default 0.02) or a term drifts\n"
          "  simulate [OPTIONS]     make Gaussian maps from a C_ell file plus white noise, and\n"
          "                         masks (see 'qmlpipe simulate --help')\n"
          "\n"
          "'qmlpipe COMMAND --help' describes each. Documentation: README.md, docs/.\n");
}

static int qp_dispatch(int argc, char **argv) {
  if (argc < 2) {
    qp_usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    qp_usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    /* What the process really runs (linalg/blas/blas_library.h), not what the build meant. */
    char blas[4096];
    qp_blas_library_describe(blas, sizeof blas);
    printf("qmlpipe %s (built with QP_BLAS=%s)\n%s", QP_VERSION, QP_BLAS_NAME, blas);
    return 0;
  }
  if (strcmp(cmd, "run") == 0) return qp_cmd_run(argc - 1, argv + 1);
  if (strcmp(cmd, "budget") == 0) return qp_cmd_budget(argc - 1, argv + 1);
  if (strcmp(cmd, "report") == 0) return qp_cmd_report(argc - 1, argv + 1);
  if (strcmp(cmd, "simulate") == 0) return qp_cmd_simulate(argc - 1, argv + 1);
  if (strcmp(cmd, "validate") == 0) return qp_cmd_validate(argc - 1, argv + 1);
  if (strcmp(cmd, "plan") == 0) return qp_cmd_plan(argc - 1, argv + 1);
  if (strcmp(cmd, "calibrate") == 0) return qp_cmd_calibrate(argc - 1, argv + 1);
  fprintf(stderr, "qmlpipe: unknown command '%s'\n\n", cmd);
  qp_usage(stderr);
  return 2;
}

int qp_cli_main(int argc, char **argv) {
  /* `ulimit -s` below 8 MiB raised as far as the hard limit allows, before any thread exists
   * (budget/job_limit.h: OpenBLAS's threaded drivers need ~4 MiB of the caller's stack). */
  qp_stack_limit_raise();
  /* MPI starts when an MPI launcher started qmlpipe (linalg/comm.h); then every command runs
   * on every rank, and rank 0 prints and writes. */
  if (qp_comm_init(&argc, &argv) != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(QP_ERR_MPI);
  }
  /* The QP_FAULT test hook (base/fault.h): a bad value is refused, never ignored (in
   * qmlpipe-test; qmlpipe has no test hooks and reads nothing). */
  if (qp_fault_init(qp_comm_rank()) != QP_OK) {
    qp_error_print(stderr, 0);
    qp_comm_finalize();
    return qp_err_exit_status(QP_ERR_INPUT);
  }
  /* OpenBLAS's idle workers sleep after ~0.4 ms, not 0.1 s of spinning beside the stages'
   * OpenMP regions (linalg/blas/openblas_tuning.h); before any BLAS call. */
  (void)qp_blas_threads_settle();
  /* BLIS takes one thread unless told (BLIS_NUM_THREADS, OMP_NUM_THREADS): every core, as
   * OpenBLAS does (linalg/blas/blas_library.h); nothing under OpenBLAS. */
  (void)qp_blas_library_threads_default();
  /* libgomp read OMP_WAIT_POLICY=passive (pipeline/run/omp_wait.h) before main: no child of
   * qmlpipe inherits it. */
  qp_omp_wait_forget();
  /* SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGXCPU:
   * temporaries removed, the stage said, exit 128 + signal; SIGPIPE and SIGXFSZ ignored, so a
   * failed write is an I/O error naming the file (base/interrupt.h). */
  qp_interrupt_install(qp_comm_rank());
  int status = qp_dispatch(argc, argv);
  qp_fault_report(stderr);
  qp_comm_finalize();
  /* What the command printed reaches its destination now, or the status says it did not (a
   * full disk under `> out.txt`): exit's own flush would drop the error. */
  if (fflush(NULL) != 0 && status == 0) {
    fprintf(stderr, "qmlpipe: error (I/O error): cannot write standard output: %s\n",
            strerror(errno));
    status = qp_err_exit_status(QP_ERR_IO);
  }
  /* A write that failed earlier (a command's own fflush; SIGPIPE is ignored, so a pipe whose
   * reader has gone is EPIPE there) left stdout's error flag, not a buffer to flush. */
  if (ferror(stdout) && status == 0) {
    fprintf(stderr, "qmlpipe: error (I/O error): cannot write standard output: a write to it "
                    "failed (a pipe whose reader has gone, a full disk)\n");
    status = qp_err_exit_status(QP_ERR_IO);
  }
  /* A failed command leaves without the libraries' exit handlers: under an address-space
   * limit (RLIMIT_AS, `ulimit -v`) an OpenBLAS worker thread whose buffer was refused at load
   * retries forever, and OpenBLAS's handler joins it, so a refused run (exit 4 in 0.1 s)
   * never ended. Nothing of a failed command needs them: no results file is open. */
  /* Nor after an H5Fclose that failed (a checkpoint on a full disk): HDF5's exit handler
   * would crash on the file it freed (base/h5_error.h). */
  if (status != 0 || qp_h5_close_failed()) {
    fflush(stdout);
    fflush(stderr);
    _exit(status);
  }
#ifndef __SANITIZE_ADDRESS__
  /* Nor does a command that succeeded: its results are written, synced and renamed, its
   * report too, MPI is finalised, its output flushed above; what is left for the handlers is
   * to join OpenBLAS's idle threads and unmap their buffers, HDF5's and the runtimes'
   * teardown, ~3 ms of T nside 16's 0.45 s run (docs/benchmarks.md). Under AddressSanitizer
   * they run, for LeakSanitizer's check is one of them. */
  _exit(status);
#endif
  return status;
}
