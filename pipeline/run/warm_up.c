/* warm_up.c: the libraries' first use before the run's baseline (warm_up.h): OpenBLAS's
 * buffers and threads, PBLAS/BLACS and MPI's channels, the threads' heaps and stacks, so that
 * none of it is measured inside a stage. What each routine touches follows OpenBLAS 0.3.21's
 * internals, its blocking measured on the kernel that runs (qp_blas_footprint_get); another
 * BLAS library's buffers are measured whole by the same probe (docs/memory-model.md). */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "warm_up.h"

#include <cblas.h>
#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "comm.h"
#include "grid.h"
#include "h5_matrix.h"
#include "matrix.h"
#include "memory_model.h"
#include "openblas_tuning.h"

/* The distributed kernels once, on panels as tall as the problem: PBLAS and BLACS allocate
 * buffers of a panel's size (local rows x block) on first use, and BLACS keeps its largest
 * message buffer for good; MPI sets up its shared-memory channels to every peer. All of that
 * belongs to the baseline, not to basis_setup (measured there at +2.6 MiB kept per rank at
 * n_pix 4480 on 1 x 2 ranks before this warm-up covered the problem's height).
 * The panels are two blocks a process wide, but never wider than a fifth of the problem:
 * their matrices (2 k^2 + 4 n k doubles in all) then stay within C's own size. Sized by the
 * block alone, `--block 4096` on 2 ranks of an nside 4 case built ~12 GiB and 10 TFLOP of
 * warm-up, beyond memory.host_limit and the plan (issue 38). */
static void qp_warm_up_distributed(int64_t n_pix) {
  const qp_linalg_ops *ops = qp_linalg_dist_ops();
  if (!ops || !qp_grid_current()) return;
  const qp_grid *g = qp_grid_current();
  const int64_t widest = 2 * (int64_t)g->block * (g->nprow > g->npcol ? g->nprow : g->npcol);
  const int64_t fifth = n_pix / 5 > 1 ? n_pix / 5 : 1;
  const int64_t k = widest < fifth ? widest : fifth;
  const int64_t n = n_pix > k ? n_pix : k;
  qp_matrix a = {0}, b = {0}, c = {0}, t = {0}, b2 = {0}, tall = {0};
  int *pivots = NULL;
  /* Every rank runs the collectives below or none does: a rank that skipped them alone
   * (an allocation refused here) would leave the others waiting in pdpotrf, or pair their
   * messages with its stages' (issue 12). */
  const int ready = qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &a) == QP_OK &&
                    qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, k, &b) == QP_OK &&
                    qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, n, &t) == QP_OK &&
                    qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &c) == QP_OK &&
                    qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, k, &b2) == QP_OK &&
                    qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, n, k, &tall) == QP_OK &&
                    (pivots = malloc((size_t)qp_linalg_pivot_count(&c) * sizeof *pivots));
  if (qp_comm_agree(ready ? QP_OK : QP_ERR_NOMEM) == QP_OK) {
    (void)qp_matrix_set_identity(&a, 2.0);
    (void)qp_matrix_set_identity(&c, 3.0);
    for (int64_t i = 0; i < qp_matrix_local_size(&b); ++i)
      b.data[i] = 1.0 / (double)(1 + i % 7);
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
    /* pdgetrf (its info may be one rank's under QP_FAULT; c is regular). dist's getrs is the
     * tiled one (its blocks budgeted, held by the run), so not warmed here. */
    (void)qp_linalg_getrf(&c, pivots);
    double x[64] = {0};
    (void)qp_comm_sum(x, 64);
    /* pdpotrf and pdtrtri keep more (MPI's and BLACS's buffers grow with the number and size
     * of their messages) than the panel operations above: at n_pix 4480 on 1 x 2 ranks,
     * 2-3 MiB kept after basis_setup without this, 1.5-2 with a 1024 warm-up, 0.1 with a
     * full-size one. Capped at 4096 (~1 s): above it the rest is < 1% of a rank's C. */
    qp_matrix big = {0};
    const int64_t m = n < QP_DIST_WARM_UP_ORDER_MAX ? n : QP_DIST_WARM_UP_ORDER_MAX;
    if (qp_comm_agree(qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, m, m, &big)) == QP_OK) {
      (void)qp_matrix_set_identity(&big, 2.0);
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
enum {
  /* Blocks below it come from the heap: above OpenBLAS's 512 KiB job table (M_MMAP_THRESHOLD
   * in qp_driver_warm_up says why) and our FITS reader's 512 KiB chunk. */
  QP_MMAP_THRESHOLD = 640 * 1024,
  /* What the warm-up leaves touched and free at the top of the main thread's heap: one such
   * block and the small buffers beside it. */
  QP_MAIN_HEAP_RESERVE = 1024 * 1024
};

/* Commits the pages of [lo, lo + bytes) of a mapping that exists (heap, stack): the whole
 * pages inside by one MADV_POPULATE_WRITE, the partial ones at its ends by a write. Page by
 * page, each first write was a page fault, and on this project's VMs a fault costs 12-14 us
 * against ~1 us a page inside one madvise (512 pages: 6.0-7.1 ms against 0.4-0.6 ms): the
 * warm-up's 1.5 MiB of heap and stack had been ~350 faults, 4-6 ms of T nside 16's run
 * (docs/benchmarks.md). Where madvise cannot (a kernel before 5.14), every page by a write.
 * Contents are kept: populating a present page changes nothing, a fresh one reads zero. */
static void qp_warm_up_populate(volatile char *lo, size_t bytes) {
  if (bytes == 0) return;
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t start = (uintptr_t)lo, end = start + bytes;
  const uintptr_t inner_lo = (start + page - 1) / page * page, inner_hi = end / page * page;
  lo[0] = lo[0];
  lo[bytes - 1] = lo[bytes - 1];
#ifdef MADV_POPULATE_WRITE
  if (inner_hi > inner_lo &&
      madvise((void *)inner_lo, inner_hi - inner_lo, MADV_POPULATE_WRITE) == 0)
    return;
#endif
  for (size_t i = 0; i < bytes; i += (size_t)page)
    lo[i] = lo[i];
}

static void qp_warm_up_heap(size_t bytes) {
  enum { QP_HEAP_BLOCK = 64 * 1024, QP_HEAP_BLOCKS_MAX = 16 };
  void *block[QP_HEAP_BLOCKS_MAX];
  int n = 0;
  for (; n < QP_HEAP_BLOCKS_MAX && (size_t)n * QP_HEAP_BLOCK < bytes; ++n) {
    block[n] = malloc(QP_HEAP_BLOCK);
    if (!block[n]) break;
    qp_warm_up_populate(block[n], QP_HEAP_BLOCK);
  }
  while (n > 0)
    free(block[--n]);
}

/* Commits `bytes` (at most 512 KiB) of the calling thread's stack below this frame. OpenBLAS's
 * threaded drivers keep large per-call arrays on the caller's stack (the main stack here
 * reaches ~3 MB deep, of which ~280 KiB resident) and write a few pages of them, which ones
 * depending on the caller's depth: the stages, called a few frames deeper than the warm-up,
 * touched 12-56 KiB of new stack in basis_setup of the SMW route. Its own function, so that
 * the warm-up's BLAS calls keep the depth they have without it. The lowest byte is written
 * first: that one fault grows the stack's mapping down over the whole range, which madvise
 * can then fill. No more than half of what is left of this thread's stack below this frame
 * (pthread_getattr_np: the main thread's limit is `ulimit -s`, a worker's the size it was
 * made with): a fixed 512 KiB array overflowed a 512 KiB stack, and an OpenMP worker's
 * 128 KiB one (SIGSEGV, issue 38). */
static __attribute__((noinline)) void qp_warm_up_stack(size_t bytes) {
  enum { QP_STACK_MAX = 512 * 1024 };
  size_t n = bytes < QP_STACK_MAX ? bytes : QP_STACK_MAX;
  pthread_attr_t attr;
  void *low = NULL;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return; /* unknown room: commit nothing */
  const int known = pthread_attr_getstack(&attr, &low, &size) == 0;
  pthread_attr_destroy(&attr);
  const uintptr_t here = (uintptr_t)&n;
  if (!known || here <= (uintptr_t)low) return;
  const size_t room = (size_t)(here - (uintptr_t)low) / 2;
  if (n > room) n = room;
  if (n == 0) return;
  volatile char stack_touch[n]; /* n <= 512 KiB and a quarter of the limit */
  /* The lowest byte first (the stack grows down), then the rest. */
  stack_touch[0] = 0;
  qp_warm_up_populate(stack_touch, n);
}

/* OpenBLAS's buffers, one per thread (128 MiB of address space each here, in huge pages where
 * the kernel has them: qp_blas_buffers_huge_pages, linalg/blas/openblas_tuning.h), hold what a
 * level-3 call packs: A's GEMM_P x GEMM_Q block first, then GEMM_Q rows of B by up to GEMM_R
 * columns. Their pages are touched on first use and kept, and which ones a call touches
 * depends on its width, not on its work (tools/blas_pages.sh, docs/memory-model.md "The
 * warm-up"): a left trmm or a gemm splits the columns among the threads, a right trmm or trsm
 * gives each thread the whole width, and the single-threaded potrf packs its trailing panel
 * beyond the columns. The block sizes are the kernel's (Haswell's 512 x 256, SkylakeX's
 * 192 x 384 ...): the footprint (qp_blas_footprint_get) measures the head and the bytes of a
 * column on the kernel that runs, and the warm-up commits what they give for the run's widest
 * call. Beyond GEMM_R a call loops on the same columns: the width is capped at 65536, the
 * bytes at a buffer. */
/* The order of the kernels' one run each (~0.2 GFLOP in all): every kernel's code is paged in
 * at 256 as at 2048 (tools/blas_pages.sh). At 512 the same kernels took 2 s on this 2-core VM
 * under a load of 10, 0.1 s at 256: OpenBLAS's threaded LAPACK synchronises its threads once
 * per block, and a descheduled thread makes every synchronisation wait. */
enum { QP_WARM_UP_ORDER = 256 };

/* Where MADV_POPULATE_WRITE is missing (Linux < 5.14) or a worker's buffer is not mapped yet:
 * thin panels that have OpenBLAS pack the same pages itself, at the measured blocking. A
 * GEMM_Q deep triangle times a panel of threads x per-thread columns from the left (each
 * thread packs its share), and a (threads x P) x Q by Q x Q gemm (A's block in every thread). */
static void qp_warm_up_panels(int64_t width) {
  static int64_t done = 0;
  const qp_blas_footprint f = qp_blas_buffer_footprint();
  if (!f.per_thread || f.column_bytes == 0) return;
  const int threads = omp_get_max_threads();
  const int64_t k = (int64_t)(f.column_bytes / sizeof(double));
  const int64_t per_thread = (int64_t)(qp_blas_buffer_bytes(width) / (size_t)threads);
  const int64_t m = (int64_t)threads * (per_thread / (int64_t)f.column_bytes);
  const int64_t rows =
      (int64_t)threads * (int64_t)((f.head_bytes + f.column_bytes - 1) / f.column_bytes);
  if (m <= done) return;
  qp_matrix l = {0}, b = {0}, a = {0}, c = {0};
  const qp_linalg_ops *ops = qp_linalg_cpu_ops();
  if (qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &l) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, m, &b) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, rows, k, &a) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, rows, k, &c) == QP_OK) {
    for (int64_t i = 0; i < k; ++i)
      l.data[i + i * k] = 1.0;
    if (qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &l, &b) == QP_OK &&
        qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &l, 0.0, &c) == QP_OK)
      done = m;
  }
  qp_error_clear();
  qp_matrix_destroy(&l);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&c);
}

/* The buffers' pages that the run's widest call fills: committed directly where every
 * thread's buffer is mapped already (a madvise each: T nside 16 spent 14-27 ms in the panels,
 * most of it their operands' pages and OpenBLAS packing them, against 1-3 ms for the same 12
 * MiB of the buffers), else (a worker not started yet, a kernel without MADV_POPULATE_WRITE)
 * by the thin panels, which have OpenBLAS touch them itself. Either way the same pages, from
 * each buffer's first byte (docs/memory-model.md "The warm-up"; test_warm_up_buffers checks
 * that the stages' calls touch nothing beyond them). Another library's pool needs nothing:
 * its probe left it resident. */
static void qp_warm_up_buffers(int64_t width) {
  const qp_blas_footprint f = qp_blas_buffer_footprint();
  if (!f.per_thread) return;
  const int threads = omp_get_max_threads();
  const size_t per_thread = qp_blas_buffer_bytes(width) / (size_t)threads;
  if (qp_blas_buffers_commit(per_thread) >= threads) return;
  qp_warm_up_panels(width);
}

static double qp_warm_up_last_seconds = 0.0;

qp_err qp_driver_warm_up_check_env(void) {
  const char *text = getenv("QP_WARM_UP");
  QP_CHECK(!text || strcmp(text, "0") == 0 || strcmp(text, "1") == 0, QP_ERR_INPUT,
           "QP_WARM_UP='%s': expected 1 (warm up, the default) or 0 (skip it, to measure its "
           "cost: the stages' measured memory then includes the libraries' first use)",
           text);
  return QP_OK;
}

int qp_driver_warm_up_wanted(void) {
  const char *text = getenv("QP_WARM_UP");
  return !text || strcmp(text, "0") != 0;
}

double qp_driver_warm_up_seconds(void) { return qp_warm_up_last_seconds; }

/* Each kernel of `kernels` (and those of every route) once at order n, on the host; 1 when
 * they ran (every matrix was allocated). */
static int qp_warm_up_kernels_run(int64_t n, qp_warm_up_kernels kernels) {
  int done = 0;
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
    if (kernels & QP_WARM_UP_TRIANGLES) {
      (void)qp_linalg_trtri(&a);
      (void)qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &b);
      (void)qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &a, &b);
    }
    /* The LU of the SMW route: c is diagonally dominant after this. */
    int *pivots = malloc((size_t)n * sizeof *pivots);
    for (int64_t i = 0; i < n; ++i)
      c.data[i + i * n] += (double)n * 1e3;
    const int lu = (kernels & QP_WARM_UP_LU) && pivots && qp_linalg_getrf(&c, pivots) == QP_OK;
    if (lu) {
      (void)qp_linalg_gecon(&c, anorm, &rcond);
      (void)qp_linalg_getrs(&c, pivots, &b);
    }
    /* What the stages call besides, whose OpenBLAS code would otherwise be paged in inside
     * a stage (64 KiB of libopenblas in spectra_run of the SMW route): each kernel on one
     * column, as on the maps (z = C^-1 x, P_b z, the mode maps), the triangular solves and
     * the transposed gemm of the harmonic routes, and potri of the Fisher matrix. */
    qp_matrix col = {0}, out = {0};
    if (n >= 2 && qp_matrix_view(ops, "warm_up", b.data, n, 1, n, &col) == QP_OK &&
        qp_matrix_view(ops, "warm_up", b.data + n, n, 1, n, &out) == QP_OK) {
      if (lu) (void)qp_linalg_getrs(&c, pivots, &col);
      if (kernels & QP_WARM_UP_TRIANGLES) {
        (void)qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &col);
        (void)qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &a, &col);
      }
      if (kernels & QP_WARM_UP_SOLVES) {
        (void)qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &a, &col);
        (void)qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &a, &col);
      }
      (void)qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &col, 0.0, &out);
      (void)qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &col, 0.0, &out);
    }
    if (kernels & QP_WARM_UP_TRIANGLES) (void)qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &a, &b);
    if (kernels & QP_WARM_UP_SOLVES) {
      (void)qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &a, &b);
      (void)qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &a, &b);
    }
    (void)qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &b, 0.0, &c);
    (void)qp_linalg_potri(&a);
    free(pivots);
    done = 1;
  }
  qp_error_clear();
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&c);
  return done;
}

/* The device libraries' first use, on one process: every operation of the table once on
 * matrices of order QP_DEVICE_WARM_UP_ORDER (or the problem's, if smaller), and the maps' thin
 * shapes below. On an H200 the
 * first cuSOLVER/cuBLAS calls of a cuda run raised the host's RSS by 60-76 MiB inside
 * basis_setup (the driver reading the libraries' kernel images out of their mapped files,
 * CUDA's lazy module loading), against a host model that knows nothing of it: here it lands
 * in the baseline instead. The workspaces the calls grew are released, so the stages' own
 * backend terms grow from nothing as the model predicts. Best effort: a failure leaves the
 * libraries to load in the stages, as before. */
static void qp_warm_up_device_square(const qp_linalg_ops *ops, int64_t k) {
  qp_matrix a = {0}, b = {0}, c = {0};
  int *pivots = NULL;
  double value = 0.0;
  if (k >= 1 && qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &a) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &b) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &c) == QP_OK &&
      (pivots = malloc((size_t)qp_linalg_pivot_count(&c) * sizeof *pivots)) &&
      qp_matrix_set_identity(&a, 2.0) == QP_OK && qp_matrix_set_identity(&b, 1.0) == QP_OK &&
      qp_matrix_set_identity(&c, 3.0) == QP_OK) {
    /* Each call's status is left: the warm-up changes no result, whatever fails. */
    /* Every side and transposition of the triangular products and solves: each is its own
     * kernel (on an H200 the window functions' trmm(RIGHT, NOTRANS), left out, grew
     * fisher_run's host RSS by 4.6 MiB, kept). */
    (void)(qp_linalg_potrf(&a) || qp_linalg_pocon(&a, 4.0, &value) ||
           qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &a, &b) ||
           qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &a, &b) ||
           qp_linalg_trsm(QP_RIGHT, QP_NOTRANS, 1.0, &a, &b) ||
           qp_linalg_trsm(QP_RIGHT, QP_TRANS, 1.0, &a, &b) ||
           qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &b) ||
           qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &a, &b) ||
           qp_linalg_trmm(QP_RIGHT, QP_NOTRANS, 1.0, &a, &b) ||
           qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &a, &b) || qp_linalg_potrs(&a, &b) ||
           qp_linalg_gemm(QP_NOTRANS, QP_TRANS, 1.0, &b, &b, 0.0, &c) ||
           qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &b, &b, 1.0, &c) ||
           qp_linalg_syrk(QP_NOTRANS, 1.0, &b, 0.0, &c) ||
           qp_linalg_syrk(QP_TRANS, 1.0, &b, 0.0, &c) || qp_linalg_trace_product(&b, &c, &value) ||
           qp_linalg_norm1(&c, &value) || qp_linalg_transpose(&b, &c) ||
           qp_linalg_copy_sub(k, k, &c, 0, 0, &b, 0, 0) || qp_linalg_clear_upper(&b) ||
           qp_matrix_set_identity(&b, 3.0) || qp_linalg_getrf(&b, pivots) ||
           qp_linalg_gecon(&b, 3.0, &value) || qp_linalg_getrs(&b, pivots, &c) ||
           qp_linalg_trtri(&a) || qp_linalg_potri(&a));
  }
  free(pivots);
  qp_matrix_destroy(&c);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&a);
}

/* The calls on the maps' thin shapes (k x w, w a few maps): cuBLAS picks other kernels for a
 * narrow operand, in other modules. On an H200, pixel_direct QU's spectra_run (bin matrices
 * times two maps) grew the host's RSS by 16 MiB, kept to the end, past a warm-up of square
 * calls only. */
static void qp_warm_up_device_thin(const qp_linalg_ops *ops, int64_t k, int64_t w) {
  qp_matrix a = {0}, t = {0}, u = {0}, s = {0};
  if (k >= 1 && qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, k, &a) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, w, &t) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, k, w, &u) == QP_OK &&
      qp_matrix_create(ops, "warm_up", QP_TERM_TRANSIENT, w, w, &s) == QP_OK &&
      qp_matrix_set_identity(&a, 2.0) == QP_OK &&
      qp_linalg_copy_sub(k, w, &a, 0, 0, &t, 0, 0) == QP_OK) {
    (void)(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &a, &t, 0.0, &u) ||
           qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &t, 0.0, &u) ||
           qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, &t, &u, 0.0, &s) ||
           qp_linalg_syrk(QP_TRANS, 1.0, &t, 0.0, &s) || qp_linalg_potrf(&a) ||
           qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &a, &t) ||
           qp_linalg_trmm(QP_LEFT, QP_TRANS, 1.0, &a, &t) ||
           qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &a, &t) ||
           qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &a, &t) || qp_linalg_potrs(&a, &t) ||
           qp_linalg_copy_sub(k, 1, &t, 0, 0, &u, 0, 0));
  }
  qp_matrix_destroy(&s);
  qp_matrix_destroy(&u);
  qp_matrix_destroy(&t);
  qp_matrix_destroy(&a);
}

static void qp_warm_up_device(const qp_linalg_ops *ops, int64_t n_pix) {
  const int64_t k = n_pix < QP_DEVICE_WARM_UP_ORDER ? n_pix : QP_DEVICE_WARM_UP_ORDER;
  /* and at a small order: the libraries choose their kernels by size as well as by shape */
  qp_warm_up_device_square(ops, k);
  qp_warm_up_device_square(ops, k < 32 ? k : 32);
  for (int64_t w = 1; w <= 3 && w <= k; ++w)
    qp_warm_up_device_thin(ops, k, w);
  qp_linalg_release_workspaces(ops);
  qp_error_clear();
}

void qp_driver_warm_up_device(const qp_linalg_ops *ops, int64_t n_pix) {
  if (ops && qp_linalg_on_device(ops) && qp_comm_size() == 1 && qp_driver_warm_up_wanted())
    qp_warm_up_device(ops, n_pix);
}

qp_warm_up_kernels qp_driver_warm_up_kernels(qp_model_path path) {
  /* SMW's set holds the solves too: with a dense N_eff it solves with its Cholesky factor. */
  return path == QP_MODEL_PIXEL_DIRECT   ? QP_WARM_UP_TRIANGLES
         : path == QP_MODEL_HARMONIC_SMW ? QP_WARM_UP_LU | QP_WARM_UP_SOLVES
                                         : QP_WARM_UP_SOLVES;
}

void qp_driver_warm_up(int64_t n_pix, int64_t width, qp_warm_up_kernels kernels,
                       qp_meter_sample *baseline) {
  const double start = qp_clock_seconds();
  /* One run of each BLAS/LAPACK kernel the route's stages use (`kernels`), on matrices of order
   * QP_WARM_UP_ORDER (never larger than the problem), and only when this process has not
   * warmed up as far already: their code (and LAPACK's workspace) is then paged in, and no
   * larger call pages in more (tools/blas_pages.sh); then the thin panels above, which touch
   * the buffers' pages as wide as the run's widest call. */
  static int64_t warmed = 0;
  static qp_warm_up_kernels warmed_kernels = 0;
#ifdef M_MMAP_THRESHOLD
  /* glibc raises its mmap threshold to the size of any mmapped block freed (up to 32 MB), after
   * which a library's 0.1-32 MB buffers (cfitsio, our FITS reader's 512 KB chunk) come from the
   * heap and stay resident after free: ~0.6 MiB per run seen in covariance_setup. Fixed
   * thresholds keep them mapped and returned, so RSS follows what is allocated. The
   * threshold sits above the 512 KiB that OpenBLAS's threaded syrk and gemm drivers malloc for
   * their job table on every call: mapped, that block cost a mmap, 128 page faults and a
   * munmap (a TLB shootdown to the other threads) per call, and potrf makes such a call per
   * recursion step: 64 of them at n 1984, potrf 0.044 s instead of 0.035 (docs/benchmarks.md,
   * 2026-11-27 05:50-07:10). From the heap it reuses the reserve that qp_warm_up_heap leaves. */
  mallopt(M_MMAP_THRESHOLD, QP_MMAP_THRESHOLD);
  /* Above the heap reserve of qp_warm_up_heap plus that block, so that glibc keeps both. */
  mallopt(M_TRIM_THRESHOLD, 2 * QP_MAIN_HEAP_RESERVE);
#endif
  if (!qp_driver_warm_up_wanted()) { /* QP_WARM_UP=0: to measure what the warm-up costs */
    qp_meter_read(baseline);
    qp_warm_up_last_seconds = 0.0;
    return;
  }
  (void)qp_blas_buffers_huge_pages();
  qp_warm_up_buffers(width);
  const int64_t n = n_pix < QP_WARM_UP_ORDER ? n_pix : QP_WARM_UP_ORDER;
  if (n > warmed || (kernels & ~warmed_kernels)) {
    /* What this process has run at its largest order so far. */
    if (qp_warm_up_kernels_run(n, kernels)) {
      warmed_kernels = n > warmed ? kernels : warmed_kernels | kernels;
      warmed = n;
    }
  }
  /* OpenMP's thread pool (the workers' stacks and the runtime's state) is created by the
   * first parallel region: here, not in covariance_setup, whose S build is the first. Each
   * thread's malloc arena too: the stages' parallel loops malloc their scratch there. */
#pragma omp parallel
  {
    qp_warm_up_stack(64 * 1024);
    /* 128 KiB: the V build's ring factors and cos/sin of m phi are 33 KiB a thread at lmax
     * 40 with polarisation. A larger block below the mmap threshold (640 KiB) grows the
     * thread's arena, and glibc keeps that growth (below M_TRIM_THRESHOLD); blocks above it
     * are mapped and given back at free. */
    qp_warm_up_heap(128 * 1024);
  }
  qp_warm_up_distributed(n_pix);
  /* HDF5's start before the main heap's reserve: what it allocates would otherwise come out
   * of the reserve (it left too little of the old 512 KiB for OpenBLAS's job table). */
  qp_h5_library_init();
  /* The main thread's heap (cfitsio's buffers and our FITS reader's chunk while
   * covariance_setup reads maps and masks, OpenBLAS's job tables in every stage) and its
   * stack. */
  qp_warm_up_heap(QP_MAIN_HEAP_RESERVE);
  qp_warm_up_stack(512 * 1024);
  qp_meter_read(baseline);
  qp_warm_up_last_seconds = qp_clock_seconds() - start;
}
