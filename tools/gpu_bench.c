/* gpu_bench.c: qmlpipe-gpu-bench, the cuda backend's benchmark (built with QP_ENABLE_CUDA).
 *
 *   qmlpipe-gpu-bench [--repeat 3] [--nrhs K] [--device D] N [N ...]
 *
 * For each order N: every operation of the cuda table that the stages use, on the device,
 * through the table (qp_linalg_*), each the best of --repeat: seconds, GFLOP/s (the flop
 * counts of linalg/matrix.c, as a stage would be charged), GB/s for the operations that move
 * data (upload, download, copy_sub, transpose, clear_upper, norm1, trace_product: the bytes read
 * and written once), the ratio of its GFLOP/s to this run's cublasDgemm at the same N (what
 * docs/gpu.md's expected figures are stated in), and the tracked device peak. Each timing waits
 * for the device (qp_cuda_synchronize) and runs inside a budget stage, whose record gives the
 * seconds, the flops and the device peak. docs/gpu.md says what each figure should be.
 *
 * Memory per order: six N x N device matrices (8 N^2 bytes each: 3 GiB at N = 8192, 19.2 GB
 * at N = 20000) plus the N x K right-hand sides (K = N / 8 by default), and one N x N host
 * matrix (pageable: the upload/download figures are those of the backend's copies from
 * pageable memory, through its pinned staging, linalg/backends/cuda_pinned.c; the setup's
 * identity takes one more, briefly, as host staging). The
 * inputs are A = G G^T / N + I (SPD) and G, from a fixed random sequence. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "clock.h"
#include "cuda_backend.h"
#include "matrix.h"
#include "meter_device.h"

enum { QP_BENCH_MAX_SIZES = 16 };

typedef struct qp_bench_options {
  int64_t sizes[QP_BENCH_MAX_SIZES];
  int n_sizes;
  int64_t nrhs; /* 0: N / 8 */
  int repeat, device;
} qp_bench_options;

static const char qp_bench_usage[] =
    "usage: qmlpipe-gpu-bench [--repeat R] [--nrhs K] [--device D] N [N ...]\n"
    "  Times on the GPU every cuda-backend operation the stages use, at each order N\n"
    "  (default 8192): gemm (the reference), syrk, potrf, potrs, trtri, potri, trmm, trsm,\n"
    "  getrf, getrs, norm1, pocon, gecon, trace_product, transpose, copy_sub, clear_upper,\n"
    "  and the host <-> device copies (upload, download). Prints seconds (best of R),\n"
    "  GFLOP/s, GB/s, the ratio to this run's dgemm at the same N, and the tracked device peak.\n"
    "    --repeat R   repetitions of each operation, the best kept (default 3, at most 100)\n"
    "    --nrhs K     right-hand sides of potrs/getrs and columns of trmm/trsm (default N/8)\n"
    "    --device D   the GPU (default: the launcher's local rank, else 0; docs/gpu.md)\n"
    "  Needs 6 N^2 + N K doubles on the device and 2 N^2 on the host per order (3 GiB of\n"
    "  device memory at N = 8192).\n"
    "  Exit status 0, 2 for usage, else the error's (README 'exit status'): 7 (unsupported)\n"
    "  without a usable GPU, 10 (GPU) instead when QP_REQUIRE_GPU=1.\n";

static int qp_parse_int(const char *text, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || !end || end == text || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

/* 1 to run, 0 for the usage (exit 2), -1 for --help (exit 0). */
static int qp_bench_parse(int argc, char **argv, qp_bench_options *o) {
  *o = (qp_bench_options){.repeat = 3, .device = -1};
  for (int i = 1; i < argc; ++i) {
    long long v = 0;
    const int has_value = i + 1 < argc;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return -1;
    if (strcmp(argv[i], "--nrhs") == 0 && has_value && qp_parse_int(argv[++i], 1, 1LL << 20, &v))
      o->nrhs = v;
    else if (strcmp(argv[i], "--repeat") == 0 && has_value && qp_parse_int(argv[++i], 1, 100, &v))
      o->repeat = (int)v;
    else if (strcmp(argv[i], "--device") == 0 && has_value && qp_parse_int(argv[++i], 0, 63, &v))
      o->device = (int)v;
    else if (argv[i][0] != '-' && o->n_sizes < QP_BENCH_MAX_SIZES &&
             qp_parse_int(argv[i], 1, 1LL << 20, &v))
      o->sizes[o->n_sizes++] = v;
    else {
      fprintf(stderr, "qmlpipe-gpu-bench: bad argument '%s'\n", argv[i]);
      return 0;
    }
  }
  if (o->n_sizes == 0) o->sizes[o->n_sizes++] = 8192;
  return 1;
}

typedef enum qp_bench_op {
  QP_BENCH_GEMM, /* first: the reference of the ratios */
  QP_BENCH_SYRK,
  QP_BENCH_POTRF,
  QP_BENCH_POTRS,
  QP_BENCH_TRTRI,
  QP_BENCH_POTRI,
  QP_BENCH_TRMM,
  QP_BENCH_TRSM,
  QP_BENCH_GETRF,
  QP_BENCH_GETRS,
  QP_BENCH_NORM1,
  QP_BENCH_POCON,
  QP_BENCH_GECON,
  QP_BENCH_TRACE,
  QP_BENCH_TRANSPOSE,
  QP_BENCH_COPY_SUB,
  QP_BENCH_CLEAR_UPPER,
  QP_BENCH_UPLOAD,
  QP_BENCH_DOWNLOAD,
  QP_BENCH_COUNT
} qp_bench_op;

static const char *const qp_bench_names[QP_BENCH_COUNT] = {
    "gemm",      "syrk",     "potrf",       "potrs",  "trtri",   "potri", "trmm",
    "trsm",      "getrf",    "getrs",       "norm1",  "pocon",   "gecon", "trace_product",
    "transpose", "copy_sub", "clear_upper", "upload", "download"};

typedef struct qp_bench_data {
  int64_t n, nrhs;
  qp_matrix a, g, work, c, b; /* SPD A, general G, scratch n x n, result n x n, rhs n x nrhs */
  qp_matrix l;                /* chol(A) */
  qp_matrix lu;               /* getrf(A) */
  qp_matrix host;             /* n x n on the host: upload's source, download's target */
  int *pivots;
  double anorm;
} qp_bench_data;

/* Bytes an operation reads and writes once (0: an arithmetic one, reported in GFLOP/s). */
static double qp_bench_bytes(qp_bench_op op, const qp_bench_data *d) {
  const double square = 8.0 * (double)d->n * (double)d->n;
  switch (op) {
  case QP_BENCH_TRANSPOSE:
  case QP_BENCH_COPY_SUB:
  case QP_BENCH_TRACE: return 2.0 * square;
  case QP_BENCH_CLEAR_UPPER: return 0.5 * square; /* the strictly upper triangle, written */
  case QP_BENCH_NORM1:
  case QP_BENCH_UPLOAD:
  case QP_BENCH_DOWNLOAD: return square;
  default: return 0.0;
  }
}

/* Restores the operand `op` works on in place (outside the timed stage). */
static qp_err qp_bench_prepare(qp_bench_op op, qp_bench_data *d) {
  switch (op) {
  case QP_BENCH_POTRF:
  case QP_BENCH_GETRF: QP_CALL(qp_cuda_matrix_copy(&d->a, &d->work)); return QP_OK;
  case QP_BENCH_TRTRI:
  case QP_BENCH_POTRI:
  case QP_BENCH_CLEAR_UPPER: QP_CALL(qp_cuda_matrix_copy(&d->l, &d->work)); return QP_OK;
  case QP_BENCH_TRMM:
  case QP_BENCH_TRSM: QP_CALL(qp_cuda_matrix_copy(&d->g, &d->work)); return QP_OK;
  default: return QP_OK;
  }
}

/* trmm and trsm work on the first min(nrhs, n) columns of `work` (a panel, as the stages'). */
static qp_err qp_bench_run(qp_bench_op op, qp_bench_data *d) {
  const int64_t n = d->n;
  double scalar = 0;
  qp_matrix panel;
  switch (op) {
  case QP_BENCH_GEMM: return qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &d->g, &d->a, 0.0, &d->c);
  case QP_BENCH_SYRK: return qp_linalg_syrk(QP_NOTRANS, 1.0, &d->g, 0.0, &d->c);
  case QP_BENCH_POTRF: return qp_linalg_potrf(&d->work);
  case QP_BENCH_POTRS: return qp_linalg_potrs(&d->l, &d->b);
  case QP_BENCH_TRTRI: return qp_linalg_trtri(&d->work);
  case QP_BENCH_POTRI: return qp_linalg_potri(&d->work);
  case QP_BENCH_TRMM:
  case QP_BENCH_TRSM:
    QP_CALL(
        qp_cuda_matrix_view("bench_panel", d->work.data, n, d->nrhs < n ? d->nrhs : n, n, &panel));
    return op == QP_BENCH_TRMM ? qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &d->l, &panel)
                               : qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &d->l, &panel);
  case QP_BENCH_GETRF: return qp_linalg_getrf(&d->work, d->pivots);
  case QP_BENCH_GETRS: return qp_linalg_getrs(&d->lu, d->pivots, &d->b);
  case QP_BENCH_NORM1: return qp_linalg_norm1(&d->a, &scalar);
  case QP_BENCH_POCON: return qp_linalg_pocon(&d->l, d->anorm, &scalar);
  case QP_BENCH_GECON: return qp_linalg_gecon(&d->lu, d->anorm, &scalar);
  case QP_BENCH_TRACE: return qp_linalg_trace_product(&d->a, &d->g, &scalar);
  case QP_BENCH_TRANSPOSE: return qp_linalg_transpose(&d->g, &d->c);
  case QP_BENCH_COPY_SUB: return qp_linalg_copy_sub(n, n, &d->g, 0, 0, &d->c, 0, 0);
  case QP_BENCH_CLEAR_UPPER: return qp_linalg_clear_upper(&d->work);
  case QP_BENCH_UPLOAD: return qp_linalg_upload(d->host.data, n, &d->c, 0, 0, n, n);
  case QP_BENCH_DOWNLOAD: return qp_linalg_download(&d->g, 0, 0, n, n, d->host.data, n);
  case QP_BENCH_COUNT: break;
  }
  QP_FAIL(QP_ERR_INTERNAL, "unknown benchmark operation %d", (int)op);
}

typedef struct qp_bench_result {
  double seconds, flops;
  size_t device_peak;
} qp_bench_result;

/* The best of `repeat` timed runs of `op`, each in a stage of its name. */
static qp_err qp_bench_time(qp_bench_op op, qp_bench_data *d, int repeat, qp_bench_result *best) {
  *best = (qp_bench_result){0, 0, 0};
  for (int rep = 0; rep < repeat; ++rep) {
    QP_CALL(qp_bench_prepare(op, d));
    QP_CALL(qp_cuda_synchronize());
    QP_CALL(qp_stage_push(qp_bench_names[op]));
    QP_CALL(qp_bench_run(op, d));
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

static void qp_bench_free(qp_bench_data *d) {
  free(d->pivots);
  qp_matrix *all[] = {&d->a, &d->g, &d->work, &d->c, &d->b, &d->l, &d->lu, &d->host};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    qp_matrix_destroy(all[k]);
  memset(d, 0, sizeof *d);
}

/* The inputs at order n: G random; A = G G^T / n + I built on the device by syrk onto an
 * uploaded I; B the first nrhs columns of G (wrapping round when nrhs > n); L = chol(A),
 * LU = getrf(A). */
static qp_err qp_bench_setup(int64_t n, int64_t nrhs, qp_bench_data *d) {
  memset(d, 0, sizeof *d);
  d->n = n;
  d->nrhs = nrhs;
  const qp_linalg_ops *gpu = qp_linalg_cuda_ops();
  QP_CHECK(gpu != NULL, QP_ERR_INTERNAL, "the cuda backend is not initialised");
  QP_CALL(qp_matrix_create(qp_linalg_cpu_ops(), "bench_host", QP_TERM_PERSISTENT, n, n, &d->host));
  const char *names[] = {"bench_a", "bench_g", "bench_work", "bench_c", "bench_l", "bench_lu"};
  qp_matrix *square[] = {&d->a, &d->g, &d->work, &d->c, &d->l, &d->lu};
  for (size_t k = 0; k < sizeof square / sizeof square[0]; ++k)
    QP_CALL(qp_matrix_create(gpu, names[k], QP_TERM_PERSISTENT, n, n, square[k]));
  QP_CALL(qp_matrix_create(gpu, "bench_b", QP_TERM_PERSISTENT, n, nrhs, &d->b));
  qp_bench_fill(&d->host, 12345);
  QP_CALL(qp_linalg_upload(d->host.data, n, &d->g, 0, 0, n, n));
  QP_CALL(qp_matrix_set_identity(&d->a, 1.0));
  QP_CALL(qp_linalg_syrk(QP_NOTRANS, 1.0 / (double)n, &d->g, 1.0, &d->a));
  for (int64_t j0 = 0; j0 < nrhs; j0 += n)
    QP_CALL(qp_linalg_copy_sub(n, nrhs - j0 < n ? nrhs - j0 : n, &d->g, 0, 0, &d->b, 0, j0));
  QP_CALL(qp_linalg_norm1(&d->a, &d->anorm));
  QP_CALL(qp_cuda_matrix_copy(&d->a, &d->l));
  QP_CALL(qp_linalg_potrf(&d->l));
  d->pivots = calloc((size_t)n, sizeof *d->pivots);
  QP_CHECK(d->pivots != NULL, QP_ERR_NOMEM, "no memory for %lld pivots", (long long)n);
  QP_CALL(qp_cuda_matrix_copy(&d->a, &d->lu));
  QP_CALL(qp_linalg_getrf(&d->lu, d->pivots));
  QP_CALL(qp_cuda_synchronize());
  qp_budget_reset();
  return QP_OK;
}

/* One order: every operation, dgemm first. */
static qp_err qp_bench_order(int64_t n, const qp_bench_options *o) {
  const int64_t nrhs = o->nrhs > 0 ? o->nrhs : (n / 8 > 0 ? n / 8 : 1);
  qp_bench_data d;
  qp_err err = qp_bench_setup(n, nrhs, &d);
  qp_bench_result r[QP_BENCH_COUNT];
  for (int op = 0; op < QP_BENCH_COUNT && err == QP_OK; ++op)
    err = qp_bench_time((qp_bench_op)op, &d, o->repeat, &r[op]);
  if (err == QP_OK) {
    const double dgemm = r[QP_BENCH_GEMM].flops / r[QP_BENCH_GEMM].seconds;
    printf("\norder N = %lld, right-hand sides %lld, best of %d: cublasDgemm %.1f GFLOP/s\n",
           (long long)n, (long long)nrhs, o->repeat, dgemm * 1e-9);
    printf("%-14s %10s %10s %9s %9s %16s\n", "operation", "seconds", "GFLOP/s", "GB/s", "vs dgemm",
           "device peak MiB");
    for (int op = 0; op < QP_BENCH_COUNT; ++op) {
      const double s = r[op].seconds > 0 ? r[op].seconds : 1e-12;
      const double bytes = qp_bench_bytes((qp_bench_op)op, &d);
      char gflops[32] = "-", gbs[32] = "-", ratio[32] = "-";
      if (r[op].flops > 0) {
        snprintf(gflops, sizeof gflops, "%.1f", r[op].flops / s * 1e-9);
        snprintf(ratio, sizeof ratio, "%.2f", r[op].flops / s / dgemm);
      }
      if (bytes > 0) snprintf(gbs, sizeof gbs, "%.1f", bytes / s * 1e-9);
      printf("%-14s %10.5f %10s %9s %9s %16.1f\n", qp_bench_names[op], r[op].seconds, gflops, gbs,
             ratio, (double)r[op].device_peak / 1048576.0);
    }
    qp_device_sample sample;
    qp_meter_device_read(&sample);
    printf("device memory: tracked %.1f MiB, measured above the baseline %.1f MiB (baseline "
           "%.1f MiB: context and handles)\n",
           (double)qp_budget_current(QP_SPACE_DEVICE) / 1048576.0, (double)sample.used / 1048576.0,
           (double)sample.baseline / 1048576.0);
  }
  qp_bench_free(&d);
  qp_cuda_release_workspaces();
  return err;
}

static qp_err qp_bench(const qp_bench_options *o) {
  qp_err err = QP_OK;
  /* --device, else the backend's choice: this rank's GPU (cuda_backend.h). */
  QP_CALL_GOTO(o->device >= 0 ? qp_cuda_init(o->device) : qp_cuda_init_for_rank(), done);
  qp_cuda_device_info info;
  QP_CALL_GOTO(qp_cuda_device_get(&info), done);
  printf("device %d: %s (sm_%d%d, %.1f GiB), meter: %s\n", info.device, info.name, info.cc_major,
         info.cc_minor, (double)info.total_bytes / 1073741824.0, qp_meter_device_name());
  if (qp_cuda_sync_checking())
    printf("WARNING: this build synchronises after every CUDA call (Debug or "
           "QP_CUDA_SYNC_CHECK): the timings are not the release build's\n");
  /* The pinned staging, as a run's first stage takes it (linalg/backends/cuda_pinned.c): the
   * copies below are timed through it. */
  QP_CALL_GOTO(qp_linalg_hold_workspace(qp_linalg_cuda_ops(), QP_TERM_PINNED_STAGING,
                                        QP_PINNED_STAGING_BYTES),
               done);
  for (int k = 0; k < o->n_sizes && err == QP_OK; ++k)
    err = qp_bench_order(o->sizes[k], o);
done:
  qp_cuda_finalize();
  return err;
}

int main(int argc, char **argv) {
  qp_bench_options o;
  const int parsed = qp_bench_parse(argc, argv, &o);
  if (parsed <= 0) {
    fputs(qp_bench_usage, parsed < 0 ? stdout : stderr);
    return parsed < 0 ? 0 : 2;
  }
  qp_err err = qp_bench(&o);
  if (err != QP_OK) {
    qp_error_print(stderr, 1);
    /* No usable device is "unsupported" (exit 7, a skip for CTest) unless the GPU is required. */
    const char *require = getenv("QP_REQUIRE_GPU");
    if (err == QP_ERR_UNSUPPORTED && require && strcmp(require, "1") == 0) {
      fprintf(stderr, "qmlpipe-gpu-bench: QP_REQUIRE_GPU=1: no usable GPU is a GPU error\n");
      err = QP_ERR_GPU;
    }
    return qp_err_exit_status(err);
  }
  return 0;
}
