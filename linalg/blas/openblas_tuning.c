/* openblas_tuning.c: everything qmlpipe does to OpenBLAS (openblas_tuning.h): its buffers'
 * room under RLIMIT_AS, what the running kernel leaves resident in them (measured), huge pages
 * and their commit, and its workers' sleep after a call.
 * OpenBLAS's own functions are looked up at run time (qp_openblas_fn): the file builds
 * against any BLAS and does nothing to another library's memory but measure it. */
#define _GNU_SOURCE /* RTLD_DEFAULT, dladdr */
#include "openblas_tuning.h"

#include <cblas.h>
#include <dlfcn.h>
#include <lapacke.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blas_library.h"
#include "blas_pool.h"
#include "budget.h"
#include "job_limit.h"

/* An OpenBLAS function by name, NULL where the process runs another BLAS: cblas.h declares
 * them only in OpenBLAS's own header. */
static void *qp_openblas_fn(const char *name) {
  /* Only where the library that really answers dgemm_ is OpenBLAS (blas_library.h): under
   * another, OpenBLAS may still be loaded beside it (ScaLAPACK's libblas.so.3). */
  return qp_blas_library_is_openblas() ? dlsym(RTLD_DEFAULT, name) : NULL;
}

/* VmSize in bytes (0 when unreadable). */
static double qp_vm_size(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0.0;
  char line[256];
  long long kib = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmSize:", 7) == 0) sscanf(line + 7, "%lld", &kib);
  fclose(f);
  return (double)kib * 1024.0;
}

/* How many OpenBLAS buffers an anonymous mapping of `bytes` is: k when it is k buffers' size
 * (k x 128 MiB to k x QP_BLAS_BUFFER_BYTES) for k up to OpenBLAS's threads (one buffer
 * each), else 0: without that bound any mapping above 16 GiB (a sanitizer's shadow, a large
 * reservation) would pass for buffers. OpenBLAS maps each buffer next to the last when it
 * can, and the kernel merges adjacent anonymous mappings into one line of /proc/self/maps:
 * two threads' buffers were one 256 MiB line in most runs here. */
static int qp_blas_buffers_in(unsigned long long bytes) {
  const double b = (double)bytes, one = 128.0 * 1048576.0;
  const int threads = qp_blas_library_threads();
  const double k = floor(b / one);
  return k >= 1 && k <= threads && b <= k * QP_BLAS_BUFFER_BYTES ? (int)k : 0;
}

/* One line of /proc/self/maps that holds OpenBLAS buffers: an anonymous mapping of `buffers`
 * >= 1 buffers' size (qp_blas_buffers_in). */
typedef struct {
  unsigned long long lo, hi;
  int buffers;
  int writable; /* rw-p */
} qp_blas_mapping;

/* Calls `each` on every such line and returns the sum of what it returns (0 when the file
 * cannot be read). */
static int qp_blas_each_mapping(int (*each)(const qp_blas_mapping *m, void *context),
                                void *context) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[512];
  int sum = 0;
  while (fgets(line, sizeof line, f)) {
    qp_blas_mapping m = {0};
    char perms[8] = "", path[256] = "";
    if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255s", &m.lo, &m.hi, perms, path) < 3 || path[0])
      continue;
    m.buffers = qp_blas_buffers_in(m.hi - m.lo);
    m.writable = strcmp(perms, "rw-p") == 0;
    if (m.buffers > 0) sum += each(&m, context);
  }
  fclose(f);
  return sum;
}

static int qp_blas_count(const qp_blas_mapping *m, void *context) {
  (void)context;
  return m->buffers;
}

/* Anonymous mappings the size of an OpenBLAS buffer: the threads that have theirs. Before
 * the warm-up nothing else of that size is mapped (tracked buffers come later). */
static int qp_blas_buffers_mapped(void) { return qp_blas_each_mapping(qp_blas_count, NULL); }

qp_err qp_blas_check_address_space(void) {
  const double limit = qp_address_space_limit(), used = qp_vm_size();
  if (limit <= 0) return QP_OK;                                  /* none, or unreadable */
  if (!qp_openblas_fn("openblas_get_num_threads")) return QP_OK; /* another BLAS */
  const int threads = qp_blas_library_threads();
  const int mapped = qp_blas_buffers_mapped();
  const int missing = threads > mapped ? threads - mapped : 0;
  const double need = missing * QP_BLAS_BUFFER_BYTES, left = limit > used ? limit - used : 0.0;
  QP_CHECK(left >= need, QP_ERR_BUDGET,
           "RLIMIT_AS (ulimit -v) %.0f MiB leaves %.0f MiB of address space, and OpenBLAS needs "
           "%.0f MiB for the buffers of %d of its %d thread(s) (128 MiB each; a buffer it cannot "
           "map it asks for again for ever, so the run would hang): raise the limit by %.0f MiB "
           "or more, or run fewer threads (OPENBLAS_NUM_THREADS)",
           limit / 1048576.0, left / 1048576.0, need / 1048576.0, missing, threads,
           (need - left) / 1048576.0);
  /* The calling thread's buffer, mapped now while there is room: OpenBLAS keeps it for every
   * later call, so the buffers the warm-up and the stages map next cannot take its place
   * (with the planner off, the warm-up's matrices did, and its first dgemm waited for ever). */
  double one = 1.0;
  (void)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', 1, &one, 1);
  return QP_OK;
}

int qp_blas_huge_pages_available(void) {
  char mode[128] = "";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) return 0;
  const int read = fgets(mode, sizeof mode, f) != NULL;
  fclose(f);
  if (!read || strstr(mode, "[never]")) return 0;
  /* Off for this process (prctl PR_SET_THP_DISABLE, inherited from whatever started it:
   * tools/without_huge_pages.sh, a batch system): "THP_enabled: 0" (Linux >= 5.0). */
  f = fopen("/proc/self/status", "r");
  if (!f) return 1;
  char line[256];
  int enabled = 1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "THP_enabled:", 12) == 0) enabled = atoi(line + 12) != 0;
  fclose(f);
  return enabled;
}

static int qp_blas_advise_huge(const qp_blas_mapping *m, void *context) {
  (void)context;
  if (madvise((void *)(uintptr_t)m->lo, (size_t)(m->hi - m->lo), MADV_HUGEPAGE) != 0) return 0;
  return m->buffers;
}

int qp_blas_buffers_huge_pages(void) {
  static int marked = -1; /* once a process: the buffers stay for good */
  if (marked >= 0) return marked;
  marked = 0;
  if (!qp_openblas_fn("openblas_get_num_threads") || !qp_blas_huge_pages_available()) return 0;
  /* The footprint is measured in 4 KiB pages, before any buffer page is huge. */
  (void)qp_blas_footprint_get();
  /* The calling thread's buffer is mapped by its first BLAS call: this one touches none of it
   * (its pages were 0 kB of Rss after it), so every page of it can still come huge. */
  double one = 1.0;
  (void)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', 1, &one, 1);
  /* A worker maps its buffer when it starts; one not mapped yet keeps 4 KiB pages. */
  marked = qp_blas_each_mapping(qp_blas_advise_huge, NULL);
  return marked;
}

#ifdef MADV_POPULATE_WRITE
/* The first *(size_t *)context bytes of each of the mapping's buffers, each a buffers-th of
 * it further on (the kernel merges adjacent ones). MADV_POPULATE_WRITE faults in what is not
 * resident and changes no byte of what is. */
static int qp_blas_populate(const qp_blas_mapping *m, void *context) {
  if (!m->writable) return 0;
  const unsigned long long stride = (m->hi - m->lo) / (unsigned long long)m->buffers;
  const size_t bytes = *(const size_t *)context, len = bytes < stride ? bytes : (size_t)stride;
  int committed = 0;
  for (int i = 0; i < m->buffers; ++i)
    committed += madvise((void *)(uintptr_t)(m->lo + (unsigned long long)i * stride), len,
                         MADV_POPULATE_WRITE) == 0;
  return committed;
}
#endif

int qp_blas_buffers_commit(size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (!qp_openblas_fn("openblas_get_num_threads")) return 0;
  (void)qp_blas_footprint_get(); /* measured first: its probe empties the buffers */
  return qp_blas_each_mapping(qp_blas_populate, &bytes);
#else
  (void)bytes;
  return 0;
#endif
}

/* ---- The footprint: what the running kernel leaves resident ---------------------------- */

/* The probe's order: larger than every kernel's blocking (GEMM_P and GEMM_Q of OpenBLAS 0.3.21
 * are at most 768 and 512 on any CPU; a BLIS kernel's MC and KC are smaller still), so that a
 * call of this depth packs A's whole block and GEMM_Q rows of every column. OpenBLAS takes
 * GEMM_Q rows per pass only where the depth is at least 2 GEMM_Q (level3.c halves it between Q
 * and 2Q): 1024 measures any Q up to 512, and a Q found at K/2 or more is not trusted. The
 * rows too: with at most GEMM_P rows OpenBLAS packs B a few columns at a time into the same
 * place (l1stride 0), so the probe has more rows than any GEMM_P. The columns' difference, 128,
 * gives a column's bytes to 4096 / 128 = 32 B (a page), rounded up: at most 64 B, 3% of
 * Haswell's 2 KiB, too many (safe). ~0.3 GFLOP on one thread: 18-27 ms here with the other
 * core busy (docs/benchmarks.md, 2026-11-27 18:50-19:20). */
enum { QP_PROBE_DEPTH = 1024, QP_PROBE_FEW = 8, QP_PROBE_MANY = 136 };

/* OpenBLAS 0.3.21 maps each buffer as exactly BUFFER_SIZE (128 MiB on x86_64): a line of
 * /proc/self/maps that is not a whole number of them holds something else too (another
 * mapping the kernel merged in), whose contents MADV_DONTNEED would zero, so it is left
 * alone, and so is its extent. */
static int qp_blas_whole_buffers(const qp_blas_mapping *m) {
  return (m->hi - m->lo) % ((unsigned long long)128 << 20) == 0;
}

/* The highest resident byte of any buffer of the mapping, as an offset from its buffer's
 * start, rounded up to a page (mincore in base pages); also each buffer's size. */
typedef struct {
  size_t extent, buffer_bytes;
} qp_blas_extent;

static int qp_blas_measure_extent(const qp_blas_mapping *m, void *context) {
  qp_blas_extent *e = context;
  if (!qp_blas_whole_buffers(m)) return 0;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)(m->hi - m->lo);
  const size_t stride = bytes / (size_t)m->buffers, pages = bytes / page;
  unsigned char *resident = malloc(pages);
  if (!resident) return 0;
  if (mincore((void *)(uintptr_t)m->lo, bytes, resident) == 0) {
    for (size_t i = 0; i < pages; ++i)
      if (resident[i] & 1) {
        const size_t end = (i * page) % stride + page;
        if (end > e->extent) e->extent = end;
      }
    if (stride > e->buffer_bytes) e->buffer_bytes = stride;
  }
  free(resident);
  return 1;
}

/* Empties every buffer (MADV_DONTNEED: their contents are scratch between calls, and no call
 * runs) and, when `base_pages`, keeps it in base pages (MADV_NOHUGEPAGE, so that the probe's
 * extent is read to 4 KiB whatever the kernel's THP setting) until qp_blas_buffers_huge_pages
 * advises it huge pages again. */
static int qp_blas_empty(const qp_blas_mapping *m, void *context) {
  const int base_pages = *(const int *)context;
  if (!m->writable || !qp_blas_whole_buffers(m)) return 0;
  void *lo = (void *)(uintptr_t)m->lo;
  const size_t bytes = (size_t)(m->hi - m->lo);
  if (base_pages) (void)madvise(lo, bytes, MADV_NOHUGEPAGE);
  return madvise(lo, bytes, MADV_DONTNEED) == 0;
}

static size_t qp_blas_extent_now(size_t *buffer_bytes) {
  qp_blas_extent e = {0, 0};
  (void)qp_blas_each_mapping(qp_blas_measure_extent, &e);
  if (buffer_bytes) *buffer_bytes = e.buffer_bytes;
  return e.extent;
}

static void qp_probe_gemm(double *a, double *b, double *c, int m, int n, int k) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, m, b, k, 0.0, c, m);
}

/* OpenBLAS: two single-threaded dgemm on the calling thread's emptied buffer, one that packs
 * A's whole block and QP_PROBE_FEW columns, one that packs QP_PROBE_MANY columns; the extent
 * of each, read by mincore, gives the bytes of a packed column (their difference over the
 * columns) and the bytes before the columns (the head). One thread, so that the columns are
 * not split among threads; every thread's buffer has the same layout. */
static void qp_blas_probe_openblas(qp_blas_footprint *f, double *a, double *b, double *c) {
  void (*set)(int) = (void (*)(int))qp_openblas_fn("openblas_set_num_threads");
  int (*parallel)(void) = (int (*)(void))qp_openblas_fn("openblas_get_parallel");
  const int threads = qp_blas_library_threads(), omp = omp_get_max_threads();
  if (!set) return;
  /* The calling thread's buffer mapped (a 1 x 1 dpotrf packs nothing into it). */
  double one = 1.0;
  (void)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', 1, &one, 1);
  int base_pages = 1;
  if (qp_blas_each_mapping(qp_blas_empty, &base_pages) == 0) return; /* no buffer mapped yet */
  /* The extents are read with the thread count restored: a mapping holds up to that many
   * buffers (qp_blas_buffers_in), and the kernel merges adjacent ones. */
  set(1);
  qp_probe_gemm(a, b, c, QP_PROBE_DEPTH, QP_PROBE_FEW, QP_PROBE_DEPTH);
  set(threads);
  const size_t few = qp_blas_extent_now(NULL);
  set(1);
  qp_probe_gemm(a, b, c, QP_PROBE_DEPTH, QP_PROBE_MANY, QP_PROBE_DEPTH);
  set(threads);
  size_t buffer_bytes = 0;
  const size_t many = qp_blas_extent_now(&buffer_bytes);
  if (parallel && parallel() == 2) omp_set_num_threads(omp); /* the OpenMP build set it too */
  base_pages = 0;
  (void)qp_blas_each_mapping(qp_blas_empty, &base_pages);
  /* MADV_NOHUGEPAGE stays until qp_blas_buffers_huge_pages, which always comes after this
   * (it measures first), advises them again where the kernel has huge pages. */
  /* Each extent is known to a page: their difference to one page either way, so a page more
   * over the columns, rounded up to whole doubles, is at least a column's bytes. */
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (many <= few || few < page) return;
  const size_t columns = QP_PROBE_MANY - QP_PROBE_FEW;
  const size_t column = (many - few + page + columns * 8 - 1) / (columns * 8) * 8;
  if (column < 8 || column / 8 >= QP_PROBE_DEPTH / 2) return; /* Q beyond what K measures */
  f->column_bytes = column;
  /* What lies before the first column: A's block and the buffer's offsets; the few columns'
   * bytes are taken off, and the page's rounding kept (an upper bound by < 4 KiB). */
  f->head_bytes = few - (size_t)QP_PROBE_FEW * column;
  f->buffer_bytes = buffer_bytes;
  f->per_thread = 1;
  f->measured = 1;
  snprintf(f->how, sizeof f->how,
           "measured: mincore of the calling thread's buffer after two dgemm (K %d)",
           QP_PROBE_DEPTH);
}

const qp_blas_footprint *qp_blas_footprint_get(void) {
  static qp_blas_footprint f;
  static int done = 0;
  if (done) return &f;
  done = 1;
  memset(&f, 0, sizeof f);
  qp_blas_library_identity(f.library, sizeof f.library, f.kernel, sizeof f.kernel);
  snprintf(f.how, sizeof f.how, "not measured");
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer maps regions of a buffer's size of its own, which the probe's
   * MADV_DONTNEED must not touch: the model falls back to Haswell's figures there (the
   * sanitizer build judges no RSS). */
  snprintf(f.how, sizeof f.how, "not measured (AddressSanitizer: its mappings pass for buffers)");
  return &f;
#endif
  if (qp_openblas_fn("openblas_get_num_threads")) {
    /* Under `ulimit -v` without room for the calling thread's buffer, its first call would
     * wait for ever (qp_blas_check_address_space says so before the warm-up): not probed. */
    if (qp_blas_check_address_space() != QP_OK) {
      qp_error_clear();
      return &f;
    }
    double *a = NULL, *b = NULL, *c = NULL;
    const int64_t operand = (int64_t)QP_PROBE_DEPTH * QP_PROBE_DEPTH;
    if (qp_budget_alloc_doubles("warm_up", QP_TERM_TRANSIENT, operand, &a) == QP_OK &&
        qp_budget_alloc_doubles("warm_up", QP_TERM_TRANSIENT,
                                (int64_t)QP_PROBE_DEPTH * QP_PROBE_MANY, &c) == QP_OK) {
      b = a; /* the values do not matter, only what the calls pack */
      qp_blas_probe_openblas(&f, a, b, c);
    }
    qp_error_clear();
    qp_budget_free(a);
    qp_budget_free(c);
  } else {
    qp_blas_pool_probe(&f); /* blas_pool.c */
  }
  return &f;
}

size_t qp_blas_footprint_bytes(const qp_blas_footprint *f, int64_t width, int threads) {
  if (threads < 1) threads = 1;
  if (!f->per_thread) return f->pool_bytes;
  /* Per thread: the head, then a column for each of the run's widest call (a right trsm gives
   * every thread the whole width) and, on one thread, the single-threaded potrf's trailing
   * panel beyond it (OpenBLAS puts it max(P, Q) x Q doubles in: the head or Q columns,
   * whichever is more); no more than the buffer. Whole huge pages: the buffers come in them
   * where the kernel gives them (qp_blas_buffers_huge_pages), and the warm-up commits this
   * figure whatever the setting, so that a plan does not depend on it. */
  const size_t q = f->column_bytes / 8;
  const size_t margin =
      threads == 1 ? (f->head_bytes > q * f->column_bytes ? f->head_bytes : q * f->column_bytes)
                   : 0;
  const size_t page = QP_BLAS_HUGE_PAGE_BYTES;
  size_t per = f->head_bytes + (size_t)(width > 0 ? width : 0) * f->column_bytes + margin;
  per = (per + page - 1) / page * page;
  if (f->buffer_bytes > 0 && per > f->buffer_bytes) per = f->buffer_bytes / page * page;
  return (size_t)threads * per;
}

/* ---- The workers' sleep after a call (qp_blas_threads_settle) ------------------------ */

/* openblas_get_parallel()'s answer for the pthreads build (0 serial, 2 OpenMP). */
#define QP_OPENBLAS_PTHREADS 1

qp_blas_threads_outcome qp_blas_threads_settle(void) {
  if (getenv("OPENBLAS_THREAD_TIMEOUT")) return QP_BLAS_THREADS_USER;
  if (qp_address_space_limit() != 0.0) return QP_BLAS_THREADS_LIMITED; /* or unreadable */
  /* Symbols, not declarations: OpenBLAS's headers do not declare these (see the .h). */
  void (*read_env)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "openblas_read_env");
  int (*timeout)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_thread_timeout");
  int (*shutdown)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
  int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_init");
  /* Looked up too, so that a build against another BLAS (BLIS: cmake/qp_blas.cmake) compiles
   * and does nothing here. */
  int (*parallel)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_parallel");
  int (*threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  if (!read_env || !timeout || !shutdown || !init || !parallel || !threads ||
      !qp_blas_library_is_openblas() || parallel() != QP_OPENBLAS_PTHREADS || threads() < 2)
    return QP_BLAS_THREADS_NOT_POOL;
  char value[16];
  snprintf(value, sizeof value, "%d", QP_BLAS_THREAD_TIMEOUT);
  if (setenv("OPENBLAS_THREAD_TIMEOUT", value, 1) != 0) return QP_BLAS_THREADS_NOT_POOL;
  read_env();
  (void)unsetenv("OPENBLAS_THREAD_TIMEOUT");
  if (timeout() != QP_BLAS_THREAD_TIMEOUT) return QP_BLAS_THREADS_NOT_POOL;
  /* The pool reads the timeout only as it starts: stop it (the workers join) and start it
   * again, as OpenBLAS itself does after a fork. */
  (void)shutdown();
  (void)init();
  return QP_BLAS_THREADS_SETTLED;
}
