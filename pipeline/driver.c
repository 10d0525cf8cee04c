/* driver.c: the stages in order, each inside its budget stage (driver.h). */
#include "driver.h"

#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "conditioning.h"
#include "h5_matrix.h"
#include "inputs.h"
#include "job_limit.h"
#include "results_h5.h"
#include "stages.h"
#include "timeline.h"

typedef qp_err (*qp_stage_fn)(qp_problem *p);

/* Pushes the budget stage, runs it, pops it, whatever the outcome. */
static qp_err qp_run_stage(qp_stage_id id, qp_stage_fn fn, qp_problem *p) {
  QP_CALL(qp_stage_push(qp_stage_name(id)));
  if (p->progress) fprintf(stderr, "[qmlpipe] %s ...\n", qp_stage_name(id));
  /* With MPI every rank leaves the stage with the same status: a rank that failed alone
   * would leave the others waiting in the next collective. */
  qp_err err = qp_comm_agree(fn(p));
  if (err != QP_OK) qp_error_trace(__FILE__, __LINE__, qp_stage_name(id));
  qp_err pop = qp_stage_pop();
  QP_CALL(err);
  QP_CALL(pop);
  if (p->progress) {
    const qp_stage_record *r = qp_stage_record_find(qp_stage_name(id));
    fprintf(stderr, "[qmlpipe] %s done in %.2f s (%.2f GFLOP/s), tracked peak %.1f MiB\n", r->name,
            r->seconds, r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0.0,
            (double)r->tracked_peak / 1048576.0);
  }
  return QP_OK;
}

/* The distributed kernels once, on panels as tall as the problem: PBLAS and BLACS allocate
 * buffers of a panel's size (local rows x block) on first use, and BLACS keeps its largest
 * message buffer for good; MPI sets up its shared-memory channels to every peer. All of that
 * belongs to the baseline, not to basis_setup (measured there at +2.6 MiB kept per rank at
 * n_pix 4480 on 1 x 2 ranks before this warm-up covered the problem's height). */
static void qp_warm_up_distributed(int64_t n_pix) {
  const qp_linalg_ops *ops = qp_linalg_dist_ops();
  if (!ops || !qp_grid_current()) return;
  const qp_grid *g = qp_grid_current();
  const int64_t k = 2 * (int64_t)g->block * (g->nprow > g->npcol ? g->nprow : g->npcol);
  const int64_t n = n_pix > k ? n_pix : k;
  qp_matrix a = {0}, b = {0}, c = {0}, t = {0}, b2 = {0}, tall = {0};
  int *pivots = NULL;
  if (qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &a) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, k, &b) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, n, &t) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &c) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, k, &b2) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, k, &tall) == QP_OK &&
      (pivots = malloc((size_t)qp_linalg_pivot_count(&c) * sizeof *pivots))) {
    qp_matrix_set_identity(&a, 2.0);
    qp_matrix_set_identity(&c, 3.0);
    for (int64_t i = 0; i < qp_matrix_local_size(&b); ++i) b.data[i] = 1.0 / (double)(1 + i % 7);
    (void)qp_linalg_potrf(&a);
    (void)qp_linalg_trtri(&a);
    (void)qp_linalg_trsm(QP_RIGHT, QP_TRANS, 1.0, &a, &b);
    (void)qp_linalg_trmm(QP_RIGHT, QP_NOTRANS, 1.0, &a, &b);
    (void)qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &t);
    (void)qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &b, &b, 1.0, &c);
    (void)qp_linalg_gemm(QP_NOTRANS, QP_TRANS, 1.0, &c, &b, 0.0, &t);
    /* Tall panels broadcast along the process rows and columns (pdpotrf's trailing update). */
    (void)qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &b, &c, 0.0, &b2);
    (void)qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &t, &c, 0.0, &b2);
    (void)qp_linalg_gemm(QP_NOTRANS, QP_TRANS, 1.0, &b, &b2, 0.0, &tall);
    (void)qp_linalg_copy_sub(k / 2, k / 2, &a, 1, 3, &c, 5, 2);
    if (qp_linalg_getrf(&c, pivots) == QP_OK) (void)qp_linalg_getrs(&c, pivots, &t);
    double x[64] = {0};
    (void)qp_comm_sum(x, 64);
    /* pdpotrf and pdtrtri keep more (MPI's and BLACS's buffers grow with the number and size
     * of their messages) than the panel operations above: at n_pix 4480 on 1 x 2 ranks,
     * 2-3 MiB kept after basis_setup without this, 1.5-2 with a 1024 warm-up, 0.1 with a
     * full-size one. Capped at 4096 (~1 s): above it the rest is < 1% of a rank's C. */
    qp_matrix big = {0};
    const int64_t m = n < 4096 ? n : 4096;
    if (qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, m, m, &big) == QP_OK) {
      qp_matrix_set_identity(&big, 2.0);
      (void)qp_linalg_potrf(&big);
      (void)qp_linalg_trtri(&big);
    }
    qp_matrix_destroy(&big);
  }
  free(pivots);
  qp_error_clear();
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&c);
  qp_matrix_destroy(&t);
  qp_matrix_destroy(&b2);
  qp_matrix_destroy(&tall);
}

/* Touches `bytes` of the calling thread's malloc arena (glibc gives each thread its own) and
 * gives it back to the arena's top, where it stays resident: blocks of 64 KiB come from the
 * arena (below the 128 KiB mmap threshold) and, freed in reverse, merge into its top, which
 * glibc trims only beyond M_TRIM_THRESHOLD. The small buffers the stages malloc (cfitsio's
 * 113 KiB of I/O buffers per open file, the Legendre and harmonics scratch of each thread, the
 * parameter entries) then reuse pages that are already in the baseline. */
static void qp_warm_up_heap(size_t bytes) {
  enum { QP_HEAP_BLOCK = 64 * 1024, QP_HEAP_BLOCKS_MAX = 16 };
  void *block[QP_HEAP_BLOCKS_MAX];
  int n = 0;
  for (; n < QP_HEAP_BLOCKS_MAX && (size_t)n * QP_HEAP_BLOCK < bytes; ++n) {
    block[n] = malloc(QP_HEAP_BLOCK);
    if (!block[n]) break;
    /* volatile: a memset before free is a dead store the compiler may drop, malloc and all */
    volatile char *touch = block[n];
    for (size_t i = 0; i < QP_HEAP_BLOCK; i += 4096)
      touch[i] = 0;
  }
  while (n > 0)
    free(block[--n]);
}

/* Touches the 512 KiB of the calling thread's stack below this frame. OpenBLAS's threaded
 * drivers keep large per-call arrays on the caller's stack (the main stack here reaches ~3 MB
 * deep, of which ~280 KiB resident) and write a few pages of them, which ones depending on the
 * caller's depth: the stages, called a few frames deeper than the warm-up, touched 12-56 KiB of
 * new stack in basis_setup of the SMW route. Its own function, so that the warm-up's BLAS
 * calls keep the depth they have without it. */
static __attribute__((noinline)) void qp_warm_up_stack(void) {
  volatile char stack_touch[512 * 1024];
  for (size_t i = 0; i < sizeof stack_touch; i += 4096)
    stack_touch[i] = 0;
}

/* A trmm on a 256 x (threads x width) panel, once per process and width. OpenBLAS packs, in
 * each thread's buffer (128 MiB here), GEMM_Q = 256 rows by up to GEMM_R (~65k) columns of the
 * matrix it multiplies, and a trmm from the left splits the columns among the threads, one
 * from the right gives each thread the whole width: a call of width w touches ~2 KiB x w of
 * each thread's buffer. After the 16384-wide panels below, potrf, trtri, trmm and syrk of C
 * at n_pix 23808 and 40448 still touched 23-61 MiB inside the stages (sweep of
 * docs/memory-validation.md); after this panel at the run's width, potrf, trtri and a right
 * trmm at n = 20480 touch nothing more. The panel takes what the buffers then hold, at most
 * 128 MiB a thread (beyond GEMM_R a call loops on the same buffer). */
enum { QP_WIDE_PANEL = 16384, QP_WIDEST_MAX = 65536 };

static int64_t qp_warm_up_widest_columns(int64_t width) {
  return (int64_t)omp_get_max_threads() * (width < QP_WIDEST_MAX ? width : QP_WIDEST_MAX);
}

size_t qp_driver_warm_up_panel_bytes(int64_t width) {
  const int64_t m = qp_warm_up_widest_columns(width);
  return m > QP_WIDE_PANEL ? (size_t)(m - QP_WIDE_PANEL) * 2048 : 0;
}

static void qp_warm_up_widest(int64_t width) {
  static int64_t done = 0;
  const int64_t k = 256, m = qp_warm_up_widest_columns(width);
  if (m <= QP_WIDE_PANEL || m <= done) return;
  qp_matrix l = {0}, b = {0};
  const qp_linalg_ops *ops = qp_linalg_cpu_ops();
  if (qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &l) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, m, &b) == QP_OK) {
    for (int64_t i = 0; i < k; ++i)
      l.data[i + i * k] = 1.0;
    if (qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &l, &b) == QP_OK) done = m;
  }
  qp_error_clear();
  qp_matrix_destroy(&l);
  qp_matrix_destroy(&b);
}

void qp_driver_warm_up(int64_t n_pix, int64_t width, qp_meter_sample *baseline) {
  /* One run of each BLAS/LAPACK kernel the stages use: OpenBLAS touches its per-thread
   * buffers on first use, the more of them the larger the problem, and they belong to the
   * baseline, not to whichever stage comes first. Up to 2048, never larger than the problem,
   * and only when this process has not warmed up as far already; then, for problems above
   * 2048, the same kernels on 512 x 16384 panels (an n = 6000 trmm after a 2048 warm-up still
   * touched ~10 MB more: sweep of docs/memory-validation.md, 8-24 MiB kept after fisher_run),
   * and a panel as wide as the run's widest call (qp_warm_up_widest). */
  static int64_t warmed = 0;
  static int wide_done = 0;
#ifdef M_MMAP_THRESHOLD
  /* glibc raises its mmap threshold to the size of any mmapped block freed (up to 32 MB), after
   * which a library's 0.1-32 MB buffers (cfitsio, our FITS reader's 512 KB chunk) come from the
   * heap and stay resident after free: ~0.6 MiB per run seen in covariance_setup. Fixed
   * thresholds keep them mapped and returned, so RSS follows what is allocated. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  /* Above the heap reserve of qp_warm_up_heap, so that glibc keeps it. */
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
#endif
  if (n_pix > 2048 && !wide_done) {
    const int64_t k = 512, m = QP_WIDE_PANEL;
    qp_matrix l = {0}, b = {0}, bt = {0}, c = {0};
    const qp_linalg_ops *ops = qp_linalg_cpu_ops();
    if (qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &l) == QP_OK &&
        qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, m, &b) == QP_OK &&
        qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, m, k, &bt) == QP_OK &&
        qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, m, &c) == QP_OK) {
      for (int64_t i = 0; i < k; ++i)
        l.data[i + i * k] = 2.0;
      for (int64_t i = 0; i < k * m; ++i)
        b.data[i] = bt.data[i] = 1.0 / (double)(1 + i % 7);
      (void)qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &l, &b);
      (void)qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &l, &bt);
      (void)qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &l, &b, 0.0, &c);
      wide_done = 1;
    }
    qp_error_clear();
    qp_matrix_destroy(&l);
    qp_matrix_destroy(&b);
    qp_matrix_destroy(&bt);
    qp_matrix_destroy(&c);
  }
  if (n_pix > 2048) qp_warm_up_widest(width);
  const int64_t n = n_pix < 2048 ? n_pix : 2048;
  if (n > warmed) {
    qp_matrix a = {0}, b = {0}, c = {0};
    const qp_linalg_ops *ops = qp_linalg_cpu_ops();
    if (qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, n, &a) == QP_OK &&
        qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, n, &b) == QP_OK &&
        qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, n, &c) == QP_OK) {
      for (int64_t i = 0; i < n; ++i)
        a.data[i + i * n] = 2.0;
      for (int64_t k = 0; k < n * n; ++k)
        b.data[k] = 1.0 / (double)(1 + k % 7);
      (void)qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &b, 0.0, &c);
      (void)qp_linalg_syrk(QP_TRANS, 1.0, &b, 0.0, &c);
      /* The condition estimates after each factorisation (conditioning.h), whose LAPACK
       * code would otherwise be paged in inside basis_setup (~8 KiB untracked there). */
      double anorm = 0.0, rcond = 0.0;
      (void)qp_linalg_norm1(&a, &anorm);
      (void)qp_linalg_potrf(&a);
      (void)qp_linalg_pocon(&a, anorm, &rcond);
      (void)qp_linalg_trtri(&a);
      (void)qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &b);
      (void)qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &a, &b);
      /* The LU of the SMW route: c is diagonally dominant after this. */
      int *pivots = malloc((size_t)n * sizeof *pivots);
      for (int64_t i = 0; i < n; ++i)
        c.data[i + i * n] += (double)n * 1e3;
      if (pivots && qp_linalg_getrf(&c, pivots) == QP_OK) {
        (void)qp_linalg_gecon(&c, anorm, &rcond);
        (void)qp_linalg_getrs(&c, pivots, &b);
      }
      /* What the stages call besides, whose OpenBLAS code would otherwise be paged in inside
       * a stage (64 KiB of libopenblas in spectra_run of the SMW route): each kernel on one
       * column, as on the maps (z = C^-1 x, P_b z, the mode maps), the triangular solves and
       * the transposed gemm of the harmonic routes, and potri of the Fisher matrix. */
      qp_matrix col = {0}, out = {0};
      if (pivots && n >= 2 && qp_matrix_view(ops, "warm_up", b.data, n, 1, n, &col) == QP_OK &&
          qp_matrix_view(ops, "warm_up", b.data + n, n, 1, n, &out) == QP_OK) {
        (void)qp_linalg_getrs(&c, pivots, &col);
        (void)qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &col);
        (void)qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &a, &col);
        (void)qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &a, &col);
        (void)qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &a, &col);
        (void)qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &col, 0.0, &out);
        (void)qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &col, 0.0, &out);
      }
      (void)qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &a, &b);
      (void)qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &a, &b);
      (void)qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &a, &b);
      (void)qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &b, 0.0, &c);
      (void)qp_linalg_potri(&a);
      free(pivots);
      warmed = n;
    }
    qp_error_clear();
    qp_matrix_destroy(&a);
    qp_matrix_destroy(&b);
    qp_matrix_destroy(&c);
  }
  /* OpenMP's thread pool (the workers' stacks and the runtime's state) is created by the
   * first parallel region: here, not in covariance_setup, whose S build is the first. Each
   * thread's malloc arena too: the stages' parallel loops malloc their scratch there. */
#pragma omp parallel
  {
    volatile char stack_touch[1 << 16];
    for (size_t i = 0; i < sizeof stack_touch; i += 4096) stack_touch[i] = 0;
    /* 128 KiB: any block below the mmap threshold fits (larger ones are mapped and given
     * back at free, never left behind); the V build's row of basis values is 67 KiB at
     * lmax 40. */
    qp_warm_up_heap(128 * 1024);
  }
  qp_warm_up_distributed(n_pix);
  /* The main thread's heap (cfitsio's buffers, while covariance_setup reads maps and masks)
   * and its stack. */
  qp_warm_up_heap(512 * 1024);
  qp_warm_up_stack();
  qp_h5_library_init();
  qp_meter_read(baseline);
}

qp_err qp_driver_backend(const qp_config *cfg, const qp_linalg_ops **ops) {
  const int ranks = qp_comm_size();
  /* The cuda table's operations are tested (tests/gpu), but the stages still build and read
   * their matrices on the host: refuse rather than hand host buffers to the device. */
  QP_CHECK(strcmp(cfg->backend, "cuda") != 0, QP_ERR_UNSUPPORTED,
           "config '%s': backend cuda does not run the stages yet (its operations and device "
           "budget exist: docs/gpu.md); use backend cpu or dist",
           cfg->source);
  if (ranks == 1 && strcmp(cfg->backend, "dist") != 0) {
    QP_CALL(qp_linalg_backend(cfg->backend, ops));
    return QP_OK;
  }
  /* Several ranks (or backend: dist) run the distributed backend: on several ranks the cpu
   * backend would repeat the whole analysis on each. */
  QP_CHECK(qp_linalg_dist_ops(), QP_ERR_UNSUPPORTED,
           "qmlpipe runs on %d MPI ranks, but this build has no distributed backend (configure "
           "with -DQP_ENABLE_MPI=ON -DQP_ENABLE_SCALAPACK=ON)",
           ranks);
  QP_CHECK(qp_comm_active(), QP_ERR_MPI,
           "config '%s': backend dist needs MPI: start qmlpipe with mpiexec or srun", cfg->source);
  const qp_grid *current = qp_grid_current();
  const int block = cfg->grid_block > 0 ? cfg->grid_block : QP_GRID_DEFAULT_BLOCK;
  if (!current || current->block != block ||
      (cfg->grid_rows > 0 && (current->nprow != cfg->grid_rows ||
                              current->npcol != cfg->grid_cols))) {
    QP_CHECK((cfg->grid_rows > 0) == (cfg->grid_cols > 0), QP_ERR_INPUT,
             "config '%s': grid needs both rows and cols (or neither)", cfg->source);
    QP_CALL(qp_grid_init(cfg->grid_rows, cfg->grid_cols, block, NULL));
  }
  QP_CALL(qp_linalg_backend("dist", ops));
  return QP_OK;
}

/* The limit the run plans to: the smallest of memory.host_limit and what the job enforces
 * (budget/job_limit.h), the same on every rank (the smallest over them: the ranks must choose
 * the same route and chunks). Said on stderr by rank 0 when progress is on. */
static qp_err qp_driver_find_limit(qp_problem *p) {
  qp_job_limit limit;
  /* Threads under RLIMIT_AS: OpenMP's and OpenBLAS's pools (one per core at most here). */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = omp_get_max_threads();
  if (cores > threads) threads = cores > 4096 ? 4096 : (int)cores;
  const qp_job_env env = {NULL, NULL, NULL, -1, -1, threads};
  qp_err err = qp_comm_agree(qp_job_limit_find(&env, p->cfg->host_limit, qp_comm_node_size(),
                                               &limit));
  QP_CALL(err);
  double usable = limit.usable > 0 ? limit.usable : INFINITY;
  double smallest = -usable;
  QP_CALL(qp_comm_max(&smallest, 1));
  p->host_limit = isfinite(smallest) ? -smallest : 0.0;
  p->limit_from_job = limit.from_job;
  if (-smallest < usable) {
    p->limit_from_job = 1; /* the config is every rank's: a job limit is smaller elsewhere */
    snprintf(p->limit_source, sizeof p->limit_source, "the smallest over the ranks; here %.600s",
             limit.source);
  } else if (limit.from_job)
    snprintf(p->limit_source, sizeof p->limit_source, "%.600s: %.3f GiB less margin %.3f GiB",
             limit.source, limit.limit / 1073741824.0, limit.margin / 1073741824.0);
  else
    snprintf(p->limit_source, sizeof p->limit_source, "%s", limit.source);
  if (p->progress) {
    if (p->host_limit > 0)
      fprintf(stderr, "[qmlpipe] memory limit %.3f GiB (%s)\n", p->host_limit / 1073741824.0,
              p->limit_source);
    else
      fprintf(stderr, "[qmlpipe] memory limit: none (no memory.host_limit, cgroup, Slurm or "
                      "RLIMIT_AS limit found)\n");
    if (limit.notes[0]) fprintf(stderr, "[qmlpipe] memory limit: %s\n", limit.notes);
  }
  return QP_OK;
}

qp_err qp_driver_run(const qp_config *cfg, const qp_run_options *options, qp_problem *p,
                     qp_meter_sample *baseline) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < QP_RCOND_COUNT; ++i) p->rcond[i] = NAN;
  p->cfg = cfg;
  p->progress = options->progress;
  qp_err err = QP_OK;
  QP_CHECK_GOTO(!cfg->has_dimensions, QP_ERR_INPUT, fail,
                "config '%s' gives dimensions, not maps: it sizes a job for `qmlpipe budget` and "
                "`qmlpipe plan`, it cannot run",
                cfg->source);
  QP_CALL_GOTO(qp_driver_backend(cfg, &p->ops), fail);
  /* Progress lines from rank 0 only. */
  if (qp_comm_rank() != 0) p->progress = 0;
  QP_CALL_GOTO(qp_driver_find_limit(p), fail);
  /* The plan and the limit check come before anything large, the warm-up included. */
  QP_CALL_GOTO(qp_inputs_plan(p), fail);
  QP_CALL_GOTO(qp_comm_agree(qp_inputs_check_limit(p)), fail);
  if (p->progress) fprintf(stderr, "[qmlpipe] path %s\n", p->path_reason);
  QP_CALL_GOTO(qp_inputs_touch_libraries(p), fail);
  qp_driver_warm_up(p->n_pix, qp_inputs_blas_width(p, p->model_dims.path), baseline);
  /* Each run's report holds its own stages only. */
  qp_budget_reset();
  /* The memory timeline of this run only (budget/timeline.h), stopped before the writing. */
  qp_timeline_clear();
  if (cfg->sample_interval_ms > 0) QP_CALL_GOTO(qp_timeline_start(cfg->sample_interval_ms), fail);
  /* The baseline again, last: the stage records (written by qp_budget_reset) and the
   * timeline's store and thread are the run's own bookkeeping, in the baseline like the
   * libraries, not growth inside covariance_setup (~0.15 MiB, docs/memory-validation.md). */
  qp_meter_read(baseline);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_COVARIANCE_SETUP, qp_stage_covariance_setup, p), fail);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_BASIS_SETUP, qp_stage_basis_setup, p), fail);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_FISHER_RUN, qp_stage_fisher_run, p), fail);
  QP_CALL_GOTO(qp_run_stage(QP_STAGE_SPECTRA_RUN, qp_stage_spectra_run, p), fail);
  qp_timeline_stop();
  /* Distributed: every rank's predicted and measured figures, gathered for the report. */
  double *rank_rows = NULL;
  qp_rank_table ranks = {0};
  const qp_grid *grid = p->ops->distributed ? qp_grid_current() : NULL;
  if (grid) {
    const int n = qp_comm_size();
    double mine[QP_RANK_ROW];
    qp_rank_row(&p->model, baseline, mine);
    rank_rows = malloc((size_t)n * QP_RANK_ROW * sizeof *rank_rows);
    QP_CHECK_GOTO(rank_rows, QP_ERR_NOMEM, fail, "out of memory for %d ranks' budgets", n);
    QP_CALL_GOTO(qp_comm_allgather(mine, rank_rows, QP_RANK_ROW), fail);
    ranks = (qp_rank_table){.n_ranks = n,
                            .grid_rows = grid->nprow,
                            .grid_cols = grid->npcol,
                            .block = grid->block,
                            .ranks_per_node = qp_comm_node_size(),
                            .model = &p->model,
                            .rows = rank_rows};
  }
  const char *rcond_names[QP_RCOND_COUNT];
  if (options->write_results && qp_comm_rank() == 0) {
    qp_results results = {
        .config = cfg,
        .nside = p->nside,
        .n_observed = p->n_observed,
        .n_observed_t = p->n_obs_t,
        .n_observed_pol = p->n_obs_p,
        .n_modes = p->path_used == QP_PATH_HARMONIC ? p->n_modes : 0,
        .n_pix = p->n_pix,
        .n_params = p->n_params,
        .n_bins = p->n_bins,
        .n_maps = p->n_maps,
        .n_spectra = cfg->n_spectra,
        .spectra = cfg->spectra,
        .bin_ell_min = p->bin_lo,
        .bin_ell_max = p->bin_hi,
        .fisher = p->fisher,
        .yb = p->yb,
        .noise_bias = p->noise_bias,
        .cl = p->cl,
        .error = p->error,
        .path_used = p->path_used == QP_PATH_HARMONIC
                         ? (p->smw ? "harmonic_smw" : "harmonic_projected")
                         : "pixel_direct",
        .path_reason = p->path_reason,
        .model = &p->model,
        .memory_limit = p->host_limit,
        .memory_limit_source = p->limit_source,
        .baseline = baseline,
        .ranks = grid ? &ranks : NULL,
        .n_rcond = QP_RCOND_COUNT,
        .rcond = p->rcond,
        .rcond_names = rcond_names,
        .accuracy = cfg->accuracy,
    };
    for (int i = 0; i < QP_RCOND_COUNT; ++i) rcond_names[i] = qp_rcond_name((qp_rcond_id)i);
    err = qp_results_write(cfg->output, &results);
  }
  free(rank_rows);
  /* Rank 0 writes; the others wait for its status. */
  QP_CALL_GOTO(qp_comm_agree(err), fail);
  return QP_OK;
fail:
  qp_timeline_stop();
  qp_problem_free(p);
  return err;
}
