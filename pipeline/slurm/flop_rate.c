/* flop_rate.c: see flop_rate.h. */
#include "flop_rate.h"

#include <omp.h>
#include <stdio.h>

#include "clock.h"
#include "matrix.h"

qp_err qp_dgemm_rate(int64_t n, double *flops_per_second, double *per_core) {
  const qp_linalg_ops *ops = qp_linalg_cpu_ops();
  qp_matrix a = {0}, b = {0}, c = {0};
  qp_err err = QP_OK;
  *flops_per_second = 0;
  if (per_core) *per_core = 0;
  QP_CALL_GOTO(qp_matrix_create(ops, "rate_dgemm_a", QP_TERM_TRANSIENT, n, n, &a), done);
  QP_CALL_GOTO(qp_matrix_create(ops, "rate_dgemm_b", QP_TERM_TRANSIENT, n, n, &b), done);
  QP_CALL_GOTO(qp_matrix_create(ops, "rate_dgemm_c", QP_TERM_TRANSIENT, n, n, &c), done);
  for (int64_t k = 0; k < n * n; ++k) { /* any finite values: denormals would be slower */
    a.data[k] = 1.0 / (double)(1 + k % 13);
    b.data[k] = 1.0 / (double)(1 + k % 11);
  }
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = qp_clock_seconds(), c0 = qp_clock_cpu_seconds();
    QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &b, 0.0, &c), done);
    const double dt = qp_clock_seconds() - t0;
    const double dc = qp_clock_cpu_seconds() - c0;
    const double flops = qp_flops_gemm(n, n, n);
    if (dt > 0 && flops / dt > *flops_per_second) *flops_per_second = flops / dt;
    if (per_core && dc > 0 && flops / dc > *per_core) *per_core = flops / dc;
  }
done:
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&c);
  return err;
}

qp_err qp_job_flop_rate(const qp_calibration *cal, double *per_core, char *source, size_t size) {
  if (cal->dgemm_mflops_per_core > 0) {
    *per_core = 1e6 * (double)cal->dgemm_mflops_per_core;
    snprintf(source, size, "dgemm_mflops_per_core of the calibration file %s", cal->source);
    return QP_OK;
  }
  double rate = 0;
  QP_CALL(qp_dgemm_rate(QP_JOB_RATE_DGEMM_N, &rate, per_core));
  snprintf(source, size,
           "a dgemm of order %d timed by `plan` on this machine (CPU time, %d thread(s); no "
           "calibration file: `qmlpipe calibrate` on a compute node records its rate)",
           QP_JOB_RATE_DGEMM_N, omp_get_max_threads());
  QP_CHECK(*per_core > 0, QP_ERR_INTERNAL, "the dgemm rate could not be measured");
  return QP_OK;
}
