/* gpu_bench.c: qmlpipe-gpu-bench, the cuda backend's benchmark (built with QP_ENABLE_CUDA).
 *
 *   qmlpipe-gpu-bench [--n 8192] [--nrhs N/8] [--repeat 3] [--device 0]
 *
 * Prints the device, the cublasDgemm rate (n x n x n, best of --repeat, through the
 * backend's gemm), then every operation of the cuda table at order n: seconds (best of
 * --repeat), GFLOP/s by the flop counts of linalg/matrix.c, and the tracked device peak of
 * the operation (its operands and the workspaces it grew). Then the host <-> device copy rates
 * and the device meter against the tracked bytes. Each timing waits for the device
 * (qp_cuda_synchronize) and runs inside a budget stage, whose record gives the seconds, the
 * flops and the device peak. The dgemm figure is the reference that fisher_run's rate is to be
 * compared with (issue 6: fisher_run >= 50% of it) once the pipeline runs on the cuda backend.
 *
 * Memory: six n x n device matrices (8 n^2 bytes each: 3 GiB at n = 8192, 19.2 GB at
 * n = 20000) plus the n x nrhs right-hand sides, and two n x n host ones; the inputs are
 * A = G G^T / n + I (SPD) and G, from a fixed random sequence. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "budget.h"
#include "clock.h"
#include "cuda.h"
#include "matrix.h"
#include "meter_device.h"

typedef struct qp_bench_options {
  int64_t n, nrhs;
  int repeat, device;
} qp_bench_options;

typedef struct qp_bench_result {
  double seconds, flops;
  size_t device_peak;
} qp_bench_result;

static int qp_parse_int(const char *text, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || !end || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

static int qp_bench_parse(int argc, char **argv, qp_bench_options *o) {
  *o = (qp_bench_options){8192, 0, 3, 0};
  for (int i = 1; i < argc; ++i) {
    long long v = 0;
    int has_value = i + 1 < argc;
    if (strcmp(argv[i], "--n") == 0 && has_value && qp_parse_int(argv[++i], 1, 1LL << 20, &v))
      o->n = v;
    else if (strcmp(argv[i], "--nrhs") == 0 && has_value &&
             qp_parse_int(argv[++i], 1, 1LL << 20, &v))
      o->nrhs = v;
    else if (strcmp(argv[i], "--repeat") == 0 && has_value && qp_parse_int(argv[++i], 1, 100, &v))
      o->repeat = (int)v;
    else if (strcmp(argv[i], "--device") == 0 && has_value && qp_parse_int(argv[++i], 0, 63, &v))
      o->device = (int)v;
    else {
      fprintf(stderr, "usage: qmlpipe-gpu-bench [--n 8192] [--nrhs N/8] [--repeat 3] "
                      "[--device 0]\n");
      return 0;
    }
  }
  if (o->nrhs == 0) o->nrhs = o->n / 8 > 0 ? o->n / 8 : 1;
  return 1;
}

/* Runs one timed operation inside a stage named `name`; keeps the best of the repeats. */
typedef enum qp_bench_op {
  QP_BENCH_GEMM,
  QP_BENCH_SYRK,
  QP_BENCH_POTRF,
  QP_BENCH_POTRS,
  QP_BENCH_TRTRI,
  QP_BENCH_POTRI,
  QP_BENCH_TRMM,
  QP_BENCH_TRSM,
  QP_BENCH_GETRF,
  QP_BENCH_GETRS,
  QP_BENCH_TRACE,
  QP_BENCH_COUNT
} qp_bench_op;

static const char *const qp_bench_names[QP_BENCH_COUNT] = {
    "gemm", "syrk", "potrf", "potrs", "trtri",        "potri",
    "trmm", "trsm", "getrf", "getrs", "trace_product"};

typedef struct qp_bench_data {
  qp_matrix a, g, work, c, b; /* SPD A, general G, scratch n x n, result n x n, rhs n x nrhs */
  qp_matrix l;                /* chol(A) */
  qp_matrix lu;               /* getrf(A) */
  int *pivots;
} qp_bench_data;

/* Prepares the operands of `op` (copies of the inputs: most operations work in place) and
 * runs it once. Only `run` is inside the timed stage. */
static qp_err qp_bench_prepare(qp_bench_op op, qp_bench_data *d) {
  switch (op) {
  case QP_BENCH_POTRF:
  case QP_BENCH_GETRF: QP_CALL(qp_cuda_matrix_copy(&d->a, &d->work)); return QP_OK;
  case QP_BENCH_TRTRI:
  case QP_BENCH_POTRI: QP_CALL(qp_cuda_matrix_copy(&d->l, &d->work)); return QP_OK;
  case QP_BENCH_TRMM:
  case QP_BENCH_TRSM: QP_CALL(qp_cuda_matrix_copy(&d->g, &d->work)); return QP_OK;
  default: return QP_OK;
  }
}

static qp_err qp_bench_run(qp_bench_op op, qp_bench_data *d, double *trace) {
  switch (op) {
  case QP_BENCH_GEMM: return qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &d->g, &d->a, 0.0, &d->c);
  case QP_BENCH_SYRK: return qp_linalg_syrk(QP_NOTRANS, 1.0, &d->g, 0.0, &d->c);
  case QP_BENCH_POTRF: return qp_linalg_potrf(&d->work);
  case QP_BENCH_POTRS: return qp_linalg_potrs(&d->l, &d->b);
  case QP_BENCH_TRTRI: return qp_linalg_trtri(&d->work);
  case QP_BENCH_POTRI: return qp_linalg_potri(&d->work);
  case QP_BENCH_TRMM: return qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &d->l, &d->work);
  case QP_BENCH_TRSM: return qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &d->l, &d->work);
  case QP_BENCH_GETRF: return qp_linalg_getrf(&d->work, d->pivots);
  case QP_BENCH_GETRS: return qp_linalg_getrs(&d->lu, d->pivots, &d->b);
  case QP_BENCH_TRACE: return qp_linalg_trace_product(&d->a, &d->g, trace);
  case QP_BENCH_COUNT: break;
  }
  QP_FAIL(QP_ERR_INTERNAL, "unknown benchmark operation %d", (int)op);
}

static qp_err qp_bench_time(qp_bench_op op, qp_bench_data *d, int repeat, qp_bench_result *best) {
  *best = (qp_bench_result){0, 0, 0};
  for (int rep = 0; rep < repeat; ++rep) {
    QP_CALL(qp_bench_prepare(op, d));
    QP_CALL(qp_cuda_synchronize());
    double trace = 0;
    QP_CALL(qp_stage_push(qp_bench_names[op]));
    QP_CALL(qp_bench_run(op, d, &trace));
    QP_CALL(qp_cuda_synchronize());
    QP_CALL(qp_stage_pop());
    const qp_stage_record *r = qp_stage_record_find(qp_bench_names[op]);
    QP_CHECK(r != NULL, QP_ERR_INTERNAL, "no stage record of %s", qp_bench_names[op]);
    if (rep == 0 || r->seconds < best->seconds)
      *best = (qp_bench_result){r->seconds, r->flops, r->device_tracked_peak};
    qp_budget_reset(); /* the stage records hold 16 stages: start each repetition afresh */
  }
  return QP_OK;
}

static void qp_bench_fill(qp_matrix *m, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t j = 0; j < m->cols; ++j)
    for (int64_t i = 0; i < m->rows; ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      m->data[i + j * m->ld] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    }
}

static qp_err qp_bench(const qp_bench_options *o) {
  qp_err err = QP_OK;
  const int64_t n = o->n;
  qp_bench_data d;
  memset(&d, 0, sizeof d);
  qp_matrix host_g = {0}, host_i = {0};
  QP_CALL(qp_cuda_init(o->device));
  qp_cuda_device_info info;
  QP_CALL_GOTO(qp_cuda_device_get(&info), done);
  printf("device: %s (sm_%d%d, %.1f GiB), meter: %s\n", info.name, info.cc_major, info.cc_minor,
         (double)info.total_bytes / 1073741824.0, qp_meter_device_name());
  printf("order n = %lld, right-hand sides %lld, best of %d\n", (long long)n, (long long)o->nrhs,
         o->repeat);

  /* Inputs: G random; A = G G^T / n + I built on the device by syrk onto an uploaded I. */
  const qp_linalg_ops *cpu = qp_linalg_cpu_ops();
  QP_CALL_GOTO(qp_matrix_create(cpu, "bench_host_g", QP_TERM_TRANSIENT, n, n, &host_g), done);
  QP_CALL_GOTO(qp_matrix_create(cpu, "bench_host_i", QP_TERM_TRANSIENT, n, n, &host_i), done);
  qp_bench_fill(&host_g, 12345);
  for (int64_t i = 0; i < n; ++i)
    host_i.data[i + i * n] = 1.0;
  double t0 = qp_clock_seconds();
  QP_CALL_GOTO(qp_cuda_matrix_upload(&host_g, "bench_g", QP_TERM_PERSISTENT, &d.g), done);
  double h2d = qp_clock_seconds() - t0;
  QP_CALL_GOTO(qp_cuda_matrix_upload(&host_i, "bench_a", QP_TERM_PERSISTENT, &d.a), done);
  QP_CALL_GOTO(qp_linalg_syrk(QP_NOTRANS, 1.0 / (double)n, &d.g, 1.0, &d.a), done);
  t0 = qp_clock_seconds();
  QP_CALL_GOTO(qp_cuda_matrix_copy(&d.g, &host_g), done);
  double d2h = qp_clock_seconds() - t0;
  QP_CALL_GOTO(qp_cuda_matrix_create("bench_work", QP_TERM_PERSISTENT, n, n, &d.work), done);
  QP_CALL_GOTO(qp_cuda_matrix_create("bench_c", QP_TERM_PERSISTENT, n, n, &d.c), done);
  QP_CALL_GOTO(qp_cuda_matrix_create("bench_b", QP_TERM_PERSISTENT, n, o->nrhs, &d.b), done);
  qp_matrix g_columns; /* B = the first nrhs columns of G (wrapping round when nrhs > n) */
  for (int64_t j0 = 0; j0 < o->nrhs; j0 += n) {
    int64_t count = o->nrhs - j0 < n ? o->nrhs - j0 : n;
    qp_matrix b_columns;
    QP_CALL_GOTO(qp_cuda_matrix_view("bench_g", d.g.data, n, count, n, &g_columns), done);
    QP_CALL_GOTO(qp_cuda_matrix_view("bench_b", d.b.data + j0 * n, n, count, n, &b_columns), done);
    QP_CALL_GOTO(qp_cuda_matrix_copy(&g_columns, &b_columns), done);
  }
  QP_CALL_GOTO(qp_cuda_matrix_create("bench_l", QP_TERM_PERSISTENT, n, n, &d.l), done);
  QP_CALL_GOTO(qp_cuda_matrix_copy(&d.a, &d.l), done);
  QP_CALL_GOTO(qp_linalg_potrf(&d.l), done);
  d.pivots = calloc((size_t)n, sizeof *d.pivots);
  QP_CHECK_GOTO(d.pivots != NULL, QP_ERR_NOMEM, done, "no memory for %lld pivots", (long long)n);
  QP_CALL_GOTO(qp_cuda_matrix_create("bench_lu", QP_TERM_PERSISTENT, n, n, &d.lu), done);
  QP_CALL_GOTO(qp_cuda_matrix_copy(&d.a, &d.lu), done);
  QP_CALL_GOTO(qp_linalg_getrf(&d.lu, d.pivots), done);
  QP_CALL_GOTO(qp_cuda_synchronize(), done);
  qp_budget_reset();

  double bytes = 8.0 * (double)n * (double)n;
  printf("copies: host -> device %.2f GB/s, device -> host %.2f GB/s (pageable host memory, "
         "%.0f MB)\n",
         bytes / h2d * 1e-9, bytes / d2h * 1e-9, bytes * 1e-6);
  qp_bench_result r;
  QP_CALL_GOTO(qp_bench_time(QP_BENCH_GEMM, &d, o->repeat, &r), done);
  printf("cublasDgemm: %.1f GFLOP/s (n = %lld, %.4f s)\n\n", r.flops / r.seconds * 1e-9,
         (long long)n, r.seconds);
  printf("%-14s %10s %10s %16s\n", "operation", "seconds", "GFLOP/s", "device peak MiB");
  for (int op = 0; op < QP_BENCH_COUNT; ++op) {
    QP_CALL_GOTO(qp_bench_time((qp_bench_op)op, &d, o->repeat, &r), done);
    printf("%-14s %10.4f %10.1f %16.1f\n", qp_bench_names[op], r.seconds,
           r.seconds > 0 ? r.flops / r.seconds * 1e-9 : 0.0, (double)r.device_peak / 1048576.0);
  }
  qp_device_sample s;
  qp_meter_device_read(&s);
  printf("\ndevice memory: tracked %.1f MiB, measured above the baseline %.1f MiB "
         "(baseline %.1f MiB: context and handles)\n",
         (double)qp_budget_current(QP_SPACE_DEVICE) / 1048576.0, (double)s.used / 1048576.0,
         (double)s.baseline / 1048576.0);
done:
  free(d.pivots);
  qp_matrix *all[] = {&d.a, &d.g, &d.work, &d.c, &d.b, &d.l, &d.lu, &host_g, &host_i};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    qp_matrix_destroy(all[k]);
  qp_cuda_finalize();
  return err;
}

int main(int argc, char **argv) {
  qp_bench_options o;
  if (!qp_bench_parse(argc, argv, &o)) return 2;
  qp_err err = qp_bench(&o);
  if (err != QP_OK) {
    qp_error_print(stderr, 1);
    return qp_err_exit_status(err);
  }
  return 0;
}
