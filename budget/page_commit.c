/* page_commit.c: the pages of the tracked allocator's host blocks (private/page_commit.h):
 * mapped on huge-page boundaries and committed at once, by several threads for a large block. */
#define _GNU_SOURCE /* sched_getaffinity: the CPUs that commit a large block's pages */
#include "page_commit.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

/* Commits the pages [base, base + bytes): MADV_POPULATE_WRITE (Linux >= 5.14), or writing
 * zeros on older kernels. */
static void qp_commit_range(char *base, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(base, bytes, MADV_POPULATE_WRITE) == 0) return;
#endif
  memset(base, 0, bytes);
}

static void *qp_commit_worker(void *arg) {
  const struct iovec *part = arg;
  qp_commit_range(part->iov_base, part->iov_len);
  return NULL;
}

enum { QP_HUGE_PAGE = 2 << 20, QP_COMMIT_PART_MIN = 8 << 20, QP_COMMIT_THREADS_MAX = 8 };

/* Threads for committing `bytes`: the CPUs this process may run on (its binding under MPI or
 * Slurm), at most OMP_NUM_THREADS when that is set, one per QP_COMMIT_PART_MIN bytes. */
static int qp_commit_threads(size_t bytes) {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  /* OMP_NUM_THREADS's first level ("4" of "4,2"); a value strtol cannot read, or out of
   * range, is ignored (atoi's overflow is undefined). budget/ does not link OpenMP. */
  const char *omp = getenv("OMP_NUM_THREADS");
  char *end = NULL;
  errno = 0;
  const long omp_threads = omp ? strtol(omp, &end, 10) : 0;
  if (omp && errno == 0 && end != omp && omp_threads > 0 && omp_threads < cpus)
    cpus = (int)omp_threads;
  size_t by_size = bytes / QP_COMMIT_PART_MIN;
  int n = cpus < QP_COMMIT_THREADS_MAX ? cpus : QP_COMMIT_THREADS_MAX;
  if ((size_t)n > by_size) n = (int)by_size;
  return n < 1 ? 1 : n;
}

/* Commits the pages of a fresh mapping, so that RSS equals the budget from the moment of the
 * allocation. Transparent huge pages where the kernel allows them, then MADV_POPULATE_WRITE:
 * measured here, 3.5 GB commit in 0.2 s this way against 2-8 s by writing zeros page by page
 * (docs/benchmarks.md). Large blocks are committed by several threads, in parts on huge-page
 * boundaries: where pages are faulted in from a hypervisor (this project's VMs return freed
 * pages to their host within seconds) one thread commits 0.6 GB/s and two 1.0 GB/s, so the
 * commit of T nside 16's 110 MB of matrices was a fifth of its run (docs/benchmarks.md). */
void qp_page_commit(void *base, size_t bytes) {
#ifdef MADV_HUGEPAGE
  (void)madvise(base, bytes, MADV_HUGEPAGE);
#endif
  int threads = qp_commit_threads(bytes);
  struct iovec parts[QP_COMMIT_THREADS_MAX];
  pthread_t ids[QP_COMMIT_THREADS_MAX];
  int started[QP_COMMIT_THREADS_MAX] = {0};
  size_t part = (bytes / (size_t)threads + QP_HUGE_PAGE - 1) / QP_HUGE_PAGE * QP_HUGE_PAGE;
  for (int t = 0; t < threads; ++t) {
    size_t from = (size_t)t * part;
    size_t to = from + part < bytes ? from + part : bytes;
    parts[t] = (struct iovec){(char *)base + from, from < bytes ? to - from : 0};
  }
  for (int t = 1; t < threads; ++t)
    if (parts[t].iov_len)
      started[t] = pthread_create(&ids[t], NULL, qp_commit_worker, &parts[t]) == 0;
  qp_commit_range(parts[0].iov_base, parts[0].iov_len);
  for (int t = 1; t < threads; ++t) {
    if (started[t]) pthread_join(ids[t], NULL);
    else if (parts[t].iov_len) qp_commit_range(parts[t].iov_base, parts[t].iov_len);
  }
}

/* A fresh mapping of `mapped` bytes; from 4 MiB up its start is on a huge-page boundary (the
 * slack mapped for that is unmapped again), so that the whole block can be huge pages. */
void *qp_page_map(size_t mapped) {
  if (mapped < 2 * (size_t)QP_HUGE_PAGE)
    return mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *raw = mmap(NULL, mapped + QP_HUGE_PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  size_t head = (QP_HUGE_PAGE - (uintptr_t)raw % QP_HUGE_PAGE) % QP_HUGE_PAGE;
  if (head) munmap(raw, head);
  if (QP_HUGE_PAGE - head) munmap(raw + head + mapped, QP_HUGE_PAGE - head);
  return raw + head;
}
