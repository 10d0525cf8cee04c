/* blas_headroom.c: OpenBLAS's buffers: room for them under RLIMIT_AS, and huge pages
 * (blas_headroom.h). */
#include "blas_headroom.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "job_limit.h"

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
  const int threads = openblas_get_num_threads() > 0 ? openblas_get_num_threads() : 1;
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
  if (limit <= 0) return QP_OK; /* none, or unreadable */
  const int threads = openblas_get_num_threads() > 0 ? openblas_get_num_threads() : 1;
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
  return read && !strstr(mode, "[never]");
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
  if (!qp_blas_huge_pages_available()) return 0;
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
  return qp_blas_each_mapping(qp_blas_populate, &bytes);
#else
  (void)bytes;
  return 0;
#endif
}
