/* blas_pool.c: another BLAS library's packing pool (BLIS, a site library), measured and
 * committed (blas_pool.h).
 *
 * BLIS packs into blocks of a pool it allocates with malloc at its first call (its pba: blocks
 * of MC x KC and KC x NC doubles, about 17 MiB for two threads of BLIS 0.9's zen3), keeps
 * them for the life of the process, and touches of a block only what a call packs: a
 * right-side trsm or potrf of order n leaves about 2 MiB per 1000 of n resident, a left trsm
 * or wide gemm the whole KC x NC block. What is resident thus grew stage by stage in a run (up
 * to 5.7 MiB untracked in test_budget_exact at n 3072) by amounts that depend on the
 * library's blocking, which differs by architecture. So the probe makes it fixed: it runs a
 * few calls (the pool is then allocated), finds the blocks in /proc/self/maps (anonymous
 * mappings that appeared during the calls and that glibc's header marks as one malloc'ed
 * chunk each) and writes every page of them (MADV_POPULATE_WRITE, or each page's first byte
 * written back to itself). Later calls can then add nothing: the pool is as resident as it
 * can be, and the model carries what RssAnon says the probe left. */
#define _GNU_SOURCE /* MADV_POPULATE_WRITE */
#include "blas_pool.h"

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "budget.h"
#include "meter.h"

/* The calls: deeper and wider than a packing block (K 512, n 8192), in the shapes the stages
 * use (a gemm with few columns, a wide one with few rows, a syrk): they make the pool
 * allocate its blocks; which pages each touches does not matter, the commit writes them all. */
enum { QP_POOL_DEPTH = 512, QP_POOL_ROWS = 1024, QP_POOL_WIDE = 8192, QP_POOL_FEW = 8 };

/* Address ranges of anonymous mappings (one line of /proc/self/maps each). */
enum { QP_POOL_RANGES_MAX = 8192 };
typedef struct {
  uintptr_t lo[QP_POOL_RANGES_MAX], hi[QP_POOL_RANGES_MAX];
  int n;
} qp_pool_ranges;

static void qp_pool_ranges_read(qp_pool_ranges *r) {
  r->n = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[512];
  while (r->n < QP_POOL_RANGES_MAX && fgets(line, sizeof line, f)) {
    unsigned long long lo, hi;
    char perms[8] = "", path[256] = "";
    if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3) continue;
    if (path[0] || strcmp(perms, "rw-p") != 0) continue;
    r->lo[r->n] = (uintptr_t)lo;
    r->hi[r->n] = (uintptr_t)hi;
    r->n++;
  }
  fclose(f);
}

/* The part of [lo, hi) that no range of `before` covers, as its first piece: the kernel merges
 * a new mapping into an adjacent old one's line, so a new block is what a line gained. The
 * pieces are found one at a time (*lo advances). Returns 0 when none is left. */
static int qp_pool_next_new(const qp_pool_ranges *before, uintptr_t *lo, uintptr_t hi,
                            uintptr_t *piece_hi) {
  while (*lo < hi) {
    uintptr_t next_old = hi;
    int covered = 0;
    for (int i = 0; i < before->n; i++) {
      if (before->lo[i] <= *lo && *lo < before->hi[i]) {
        *lo = before->hi[i]; /* skip the old part */
        covered = 1;
        break;
      }
      if (before->lo[i] > *lo && before->lo[i] < next_old) next_old = before->lo[i];
    }
    if (covered) continue;
    *piece_hi = next_old;
    return 1;
  }
  return 0;
}

/* Writes every page of [lo, hi): the kernel's prefault where it has one (Linux 5.14), else
 * each page's first byte written back (no other thread is in the library: the probe's
 * contract, openblas_tuning.h). */
static void qp_pool_commit(uintptr_t lo, uintptr_t hi) {
#ifdef MADV_POPULATE_WRITE
  if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0) return;
#endif
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  for (uintptr_t p = lo; p < hi; p += page) {
    volatile unsigned char *byte = (volatile unsigned char *)p;
    *byte = *byte;
  }
}

/* Commits the malloc'ed chunks that tile [lo, hi) from its start: glibc's header of a chunk it
 * mapped on its own (prev_size, then the size with IS_MMAPPED, 2) says how long each is. A
 * piece that does not start with such a header (a thread's stack, another mapping) is left
 * alone. Returns the bytes committed. */
static size_t qp_pool_commit_chunks(uintptr_t lo, uintptr_t hi) {
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), is_mmapped = 2, flags = 7;
  size_t done = 0;
  while (hi - lo >= page) {
    const size_t size_word = ((const size_t *)lo)[1];
    const size_t bytes = size_word & ~flags;
    if (!(size_word & is_mmapped) || bytes < page || bytes % page != 0 || bytes > hi - lo) break;
    qp_pool_commit(lo, lo + bytes);
    done += bytes;
    lo += bytes;
  }
  return done;
}

/* The process's anonymous RSS (VmRSS less its file-backed and shared pages: meter.h), -1 when
 * unreadable. */
static double qp_pool_rss_anon(void) {
  qp_meter_sample m;
  qp_meter_read(&m);
  return m.rss < 0 || m.rss_shared < 0 ? -1.0 : (double)(m.rss - m.rss_shared);
}

/* The probe's calls on every thread, its operands (term "warm_up") freed after. */
static void qp_pool_calls(void) {
  double *a = NULL, *b = NULL, *c = NULL;
  const int64_t a_count = (int64_t)QP_POOL_ROWS * QP_POOL_DEPTH,
                b_count = (int64_t)QP_POOL_DEPTH * QP_POOL_WIDE,
                c_count = (int64_t)QP_POOL_FEW * QP_POOL_WIDE; /* >= ROWS x FEW */
  if (qp_budget_alloc_doubles("warm_up", QP_TERM_TRANSIENT, a_count, &a) == QP_OK &&
      qp_budget_alloc_doubles("warm_up", QP_TERM_TRANSIENT, b_count, &b) == QP_OK &&
      qp_budget_alloc_doubles("warm_up", QP_TERM_TRANSIENT, c_count, &c) == QP_OK) {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, QP_POOL_ROWS, QP_POOL_FEW,
                QP_POOL_DEPTH, 1.0, a, QP_POOL_ROWS, b, QP_POOL_DEPTH, 0.0, c, QP_POOL_ROWS);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, QP_POOL_FEW, QP_POOL_WIDE,
                QP_POOL_DEPTH, 1.0, a, QP_POOL_ROWS, b, QP_POOL_DEPTH, 0.0, c, QP_POOL_FEW);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, QP_POOL_FEW, QP_POOL_DEPTH, 1.0, b,
                QP_POOL_DEPTH, 0.0, c, QP_POOL_FEW);
  }
  qp_error_clear();
  qp_budget_free(a);
  qp_budget_free(b);
  qp_budget_free(c);
}

void qp_blas_pool_probe(qp_blas_footprint *f) {
  static qp_pool_ranges before, after; /* 256 KiB: not on a thread's stack */
  const double rss_before = qp_pool_rss_anon();
  qp_pool_ranges_read(&before);
  qp_pool_calls();
  qp_pool_ranges_read(&after);
  size_t committed = 0;
  for (int i = 0; i < after.n; i++) {
    uintptr_t lo = after.lo[i], piece_hi = 0;
    while (qp_pool_next_new(&before, &lo, after.hi[i], &piece_hi)) {
      committed += qp_pool_commit_chunks(lo, piece_hi);
      lo = piece_hi;
    }
  }
  const double rss_after = qp_pool_rss_anon();
  if (rss_before < 0 || rss_after < 0) return;
  f->pool_bytes = rss_after > rss_before ? (size_t)(rss_after - rss_before) : 0;
  f->measured = 1;
  snprintf(f->how, sizeof f->how,
           "measured: RssAnon after dgemm and syrk on every thread, pool committed (%.1f MiB)",
           (double)committed / 1048576.0);
}
