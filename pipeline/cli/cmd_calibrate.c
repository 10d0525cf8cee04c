/* cmd_calibrate.c: `qmlpipe calibrate`: measures the memory model's overhead on this machine
 * (the RSS of a qmlpipe process after the BLAS warm-up a run does) and writes the calibration
 * file that `budget`, `plan` and `run` read (calibration.h). Run it where the jobs run, with
 * the same OMP_NUM_THREADS / OPENBLAS_NUM_THREADS: the BLAS buffers are per thread. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibration.h"
#include "cmd_args.h"
#include "commands.h"
#include "driver.h"
#include "flop_rate.h"
#include "h5_matrix.h"
#include "output_path.h"
#include "timeline.h"

/* The dgemm timed for the rate: ~17 GFLOP, at the large-matrix rate of OpenBLAS. */
enum { QP_CALIBRATE_DGEMM_N = 2048 };

static void qp_calibrate_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe calibrate [--output FILE] [--size N]\n"
          "  Measures the overhead term of the memory model (program and libraries, OpenBLAS\n"
          "  buffers per thread after the warm-up a run of order N does, HDF5) and writes it\n"
          "  to FILE (default qmlpipe-calibration.txt). N defaults to 16384: the warm-up\n"
          "  of a run whose widest BLAS call is N columns (each kernel once at order 256,\n"
          "  then 256 x threads x N panels); OpenBLAS's buffers grow with that width (2 KiB\n"
          "  per column and thread, up to 128 MiB a thread), so give the n_pix of the jobs.\n"
          "  Also times a dgemm of order %d with every thread busy and records the rate per\n"
          "  core, which `plan --sbatch` turns into the job's --time.\n"
          "  Use it with memory: {calibration: FILE} or QMLPIPE_CALIBRATION=FILE.\n",
          QP_CALIBRATE_DGEMM_N);
}

enum { QP_CAL_OUTPUT = QP_CMD_OPTION_FIRST, QP_CAL_SIZE };

int qp_cmd_calibrate(int argc, char **argv) {
  const char *output = "qmlpipe-calibration.txt";
  int size = 16384;
  static const struct option options[] = {{"help", no_argument, NULL, 'h'},
                                          {"output", required_argument, NULL, QP_CAL_OUTPUT},
                                          {"size", required_argument, NULL, QP_CAL_SIZE},
                                          {NULL, 0, NULL, 0}};
  qp_cmd_getopt_begin();
  for (int c; (c = qp_cmd_getopt("calibrate", argc, argv, options, NULL)) != -1;) {
    if (c == 'h') {
      qp_calibrate_usage(stdout);
      return 0;
    }
    if (c == QP_CAL_OUTPUT) {
      output = optarg;
    } else if (c != QP_CAL_SIZE || !qp_cmd_parse_count("--size", optarg, 1, 1 << 20, &size)) {
      qp_calibrate_usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "qmlpipe calibrate: unexpected argument '%s'\n", argv[optind]);
    qp_calibrate_usage(stderr);
    return 2;
  }
  /* The file is checked before the measurement (output_path.h): a device, a FIFO or a
   * directory as --output is refused now, not replaced by a regular file at the end. */
  qp_err err = qp_output_path_check(output, "--output", "the calibration file", NULL, 0);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  /* The parts: HDF5 first (the warm-up initialises it too, and would hide it among the BLAS
   * buffers), then the warm-up, then what a run sets up before it reads its baseline
   * (driver.c): the stage records and the memory timeline, counted with the program. */
  qp_meter_sample start, h5, warm, baseline;
  qp_meter_read(&start);
  qp_h5_library_init();
  qp_meter_read(&h5);
  qp_driver_warm_up(size, size, QP_WARM_UP_EVERY, &warm);
  qp_budget_reset();
  err = qp_timeline_start(QP_TIMELINE_DEFAULT_INTERVAL_MS);
  qp_meter_read(&baseline);
  qp_timeline_clear();
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  /* The dgemm rate comes after the baseline: its matrices are not part of the overhead. */
  double rate = 0, per_core = 0;
  err = qp_dgemm_rate(QP_CALIBRATE_DGEMM_N, &rate, &per_core);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  qp_calibration cal = {.overhead_bytes = (size_t)baseline.rss,
                        .program_bytes = (size_t)(start.rss + baseline.rss - warm.rss),
                        .blas_bytes = (size_t)(warm.rss - h5.rss),
                        .hdf5_bytes = (size_t)(h5.rss - start.rss),
                        .threads = omp_get_max_threads(),
                        .dgemm_mflops_per_core = (size_t)(per_core * 1e-6)};
  const qp_blas_footprint blas = qp_blas_buffer_footprint();
  snprintf(cal.blas_kernel, sizeof cal.blas_kernel, "%.63s %.47s", blas.library, blas.kernel);
  err = qp_calibration_write(output, &cal);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  printf(
      "qmlpipe calibrate: overhead %zu bytes (%.2f MiB) = program %.2f MiB + BLAS buffers "
      "%.2f MiB (%s) + HDF5 %.2f MiB, with %d thread(s), warm-up %d; dgemm %.1f GFLOP/s per core "
      "(order %d); written to %s\n",
      cal.overhead_bytes, cal.overhead_bytes / 1048576.0, cal.program_bytes / 1048576.0,
      cal.blas_bytes / 1048576.0, cal.blas_kernel, cal.hdf5_bytes / 1048576.0, cal.threads, size,
      cal.dgemm_mflops_per_core * 1e-3, QP_CALIBRATE_DGEMM_N, output);
  return 0;
}
