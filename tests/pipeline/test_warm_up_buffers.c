/* test_warm_up_buffers.c: the warm-up commits OpenBLAS's buffers without a BLAS call
 * (qp_blas_buffers_commit, linalg/blas/openblas_tuning.h), and the pages the stages' calls then
 * touch lie inside what it committed.
 *
 * The warm-up used to have OpenBLAS pack thin panels as wide as the run's widest call, so
 * that the buffer pages a stage's call fills were resident before the baseline; it now
 * commits the first qp_blas_buffer_bytes(width) / threads bytes of each buffer
 * directly. That is only right while OpenBLAS fills its buffers from their first byte on and
 * no further than that figure. This test checks both on the OpenBLAS it runs with: it commits
 * the prefix for width 2300 (T nside 16's projection route), then makes that route's calls at
 * its sizes (potrf 1984, trsm 1984 x 2300 both ways, syrk 2300 over 1984, a gemm of the maps)
 * and counts the buffers' resident pages (mincore) before and after: the same count, or a
 * stage would measure what the warm-up left out. Without huge pages for the buffers (none are
 * advised here) the count is in 4 KiB pages. Skips (77) without MADV_POPULATE_WRITE (Linux <
 * 5.14: the warm-up then packs its panels, the old way), without OpenBLAS's buffers, and
 * under AddressSanitizer, whose own mappings of a buffer's size come and go in residency. */
#include <cblas.h>
#include <lapacke.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blas_library.h"
#include "openblas_tuning.h"
#include "test_util.h"
#include "warm_up.h"

enum { N_PIX = 1984, N_MODES = 2300, N_MAPS = 3 };

/* Resident pages of the anonymous read-write mappings of one or more 128 MiB (OpenBLAS's
 * buffers), and how many buffers they hold; resident_in_prefix: of those, in each buffer's
 * first `prefix` bytes. */
typedef struct {
  long resident, resident_in_prefix, prefix_pages;
  int buffers;
} buffer_pages;

static buffer_pages count_pages(size_t prefix) {
  buffer_pages out = {0};
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), one = (size_t)128 << 20;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return out;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = "", path[256] = "";
    if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) < 3) continue;
    const size_t bytes = (size_t)(hi - lo);
    const size_t k = bytes / one, threads = (size_t)qp_blas_library_threads();
    if (path[0] || strcmp(perms, "rw-p") != 0 || k < 1 || k > threads ||
        bytes > k * (one + ((size_t)1 << 20)))
      continue;
    const size_t pages = bytes / page, stride = bytes / k;
    unsigned char *v = malloc(pages);
    if (!v || mincore((void *)(uintptr_t)lo, bytes, v) != 0) {
      free(v);
      continue;
    }
    for (size_t i = 0; i < pages; ++i) {
      const int in = v[i] & 1;
      out.resident += in;
      out.resident_in_prefix += in && (i * page) % stride < prefix;
    }
    out.buffers += (int)k;
    out.prefix_pages += (long)(k * ((prefix + page - 1) / page));
    free(v);
  }
  fclose(f);
  return out;
}

static double *filled(size_t count, int spd_order) {
  double *a = malloc(count * sizeof *a);
  if (!a) return NULL;
  for (size_t i = 0; i < count; ++i)
    a[i] = 1.0 / (double)(1 + i % 7);
  for (int i = 0; i < spd_order; ++i)
    a[i + (size_t)i * spd_order] += spd_order;
  return a;
}

int main(void) {
  if (!qp_blas_library_is_openblas()) {
    printf("the BLAS is %s, not OpenBLAS: no OpenBLAS buffers to commit: skipped\n",
           qp_blas_library_name());
    return 77;
  }
#ifdef __SANITIZE_ADDRESS__
  printf("AddressSanitizer's mappings pass for buffers here: skipped\n");
  return 77;
#endif
#ifndef MADV_POPULATE_WRITE
  printf("no MADV_POPULATE_WRITE in this kernel's headers: the warm-up packs its panels\n");
  return 77;
#else
  const int threads = omp_get_max_threads();
  const size_t prefix = qp_blas_buffer_bytes(N_MODES) / (size_t)threads;
  /* Every thread's buffer mapped: the workers' as they start (a threaded call waits for
   * them), the caller's at its first call. What this call packs lies inside the prefixes. */
  double *a = filled(512 * 512, 0), *b = filled(512 * 512, 0);
  TEST_ASSERT(a && b, "out of memory for the first call's operands");
  if (a && b)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 512, 512, 512, 1.0, a, 512, a, 512, 0.0,
                b, 512);
  free(a);
  free(b);
  const buffer_pages before = count_pages(prefix);
  printf("OpenBLAS threads %d, OpenMP threads %d; %d buffer(s), %ld page(s) resident after a "
         "512^3 dgemm; prefix "
         "%.2f MiB a buffer (width %d)\n",
         qp_blas_library_threads(), threads, before.buffers, before.resident,
         (double)prefix / 1048576.0, N_MODES);
  if (before.buffers == 0) {
    printf("no OpenBLAS buffer found in /proc/self/maps: skipped\n");
    return 77;
  }
  const int committed = qp_blas_buffers_commit(prefix);
  const buffer_pages after = count_pages(prefix);
  printf("committed %d buffer(s): %ld page(s) resident, %ld of the %ld in the prefixes\n",
         committed, after.resident, after.resident_in_prefix, after.prefix_pages);
  TEST_ASSERT(committed == before.buffers, "%d of %d buffers committed", committed, before.buffers);
  TEST_ASSERT(after.resident_in_prefix == after.prefix_pages,
              "%ld of the prefixes' %ld pages resident after the commit", after.resident_in_prefix,
              after.prefix_pages);
  TEST_ASSERT(after.resident == after.prefix_pages,
              "%ld pages resident in the buffers, %ld in their prefixes: a 512^3 dgemm "
              "touched pages beyond the prefix",
              after.resident, after.prefix_pages);
  /* The projection route's calls at T nside 16's sizes. */
  double *c = filled((size_t)N_PIX * N_PIX, N_PIX), *v = filled((size_t)N_PIX * N_MODES, 0),
         *w = filled((size_t)N_MODES * N_MODES, 0), *x = filled((size_t)N_PIX * N_MAPS, 0),
         *z = filled((size_t)N_MODES * N_MAPS, 0);
  TEST_ASSERT(c && v && w && x && z, "out of memory for the operands");
  if (c && v && w && x && z) {
    TEST_ASSERT(LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', N_PIX, c, N_PIX) == 0,
                "dpotrf of the test matrix failed");
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, N_PIX, N_MODES,
                1.0, c, N_PIX, v, N_PIX);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, N_MODES, N_PIX, 1.0, v, N_PIX, 0.0, w,
                N_MODES);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasNonUnit, N_PIX, N_MODES, 1.0,
                c, N_PIX, v, N_PIX);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, N_MODES, N_MAPS, N_PIX, 1.0, v, N_PIX, x,
                N_PIX, 0.0, z, N_MODES);
    const buffer_pages stages = count_pages(prefix);
    printf("after the route's calls: %ld page(s) resident in the buffers\n", stages.resident);
    TEST_ASSERT(stages.resident == after.resident,
                "the calls left %ld pages resident in OpenBLAS's buffers, %ld after the "
                "commit: they touched %ld beyond the prefix the warm-up commits",
                stages.resident, after.resident, stages.resident - after.resident);
  }
  free(c);
  free(v);
  free(w);
  free(x);
  free(z);
  return TEST_RETURN();
#endif
}
