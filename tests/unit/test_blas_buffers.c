/* test_blas_buffers.c: OpenBLAS's buffers in transparent huge pages
 * (linalg/blas/openblas_tuning.h).
 *
 * Where the kernel has them ('always' or 'madvise'): qp_blas_buffers_huge_pages finds at least
 * the calling thread's buffer (mapped by its 1 x 1 dpotrf; a worker maps its own as it starts,
 * which as this test's main begins may not have happened yet, and under a sanitizer another
 * anonymous mapping of a buffer's size is advised too, which is harmless: the count is
 * printed, not judged); a wide dgemm then leaves huge
 * pages resident (AnonHugePages of the process above 0); a second call advises nothing again
 * and returns the first count. Where the kernel has none: 0, and nothing else changes. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openblas_tuning.h"
#include "blas_library.h"
#include "test_util.h"

/* AnonHugePages of the whole process in KiB (-1: unreadable). */
static long anon_huge_kib(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "AnonHugePages:", 14) == 0) sscanf(line + 14, "%ld", &kib);
  fclose(f);
  return kib;
}

int main(void) {
  if (!qp_blas_library_is_openblas()) {
    printf("the BLAS is %s, not OpenBLAS: no OpenBLAS buffers to advise: skipped\n",
           qp_blas_library_name());
    return 77;
  }
  const int available = qp_blas_huge_pages_available();
  const int threads = qp_blas_library_threads();
  const long before = anon_huge_kib();
  const int advised = qp_blas_buffers_huge_pages();
  printf("transparent huge pages %s; OpenBLAS threads %d; buffers advised %d\n",
         available ? "available" : "not available", threads, advised);
  if (!available) {
    TEST_ASSERT(advised == 0, "no huge pages, yet %d buffers advised", advised);
    return TEST_RETURN();
  }
  TEST_ASSERT(advised >= 1, "huge pages available, but not even the calling thread's buffer "
              "was found in /proc/self/maps");
  /* A gemm as wide as the warm-up's panels packs ~5 MiB into each thread's buffer. */
  const int m = 1024, n = 4096, k = 256;
  double *a = calloc((size_t)m * k, sizeof *a), *b = calloc((size_t)k * n, sizeof *b),
         *c = calloc((size_t)m * n, sizeof *c);
  TEST_ASSERT(a && b && c, "out of memory for the operands");
  if (a && b && c) {
    for (size_t i = 0; i < (size_t)m * k; ++i) a[i] = 1.0 / (double)(1 + i % 7);
    for (size_t i = 0; i < (size_t)k * n; ++i) b[i] = 1.0 / (double)(1 + i % 5);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, m, b, k, 0.0, c, m);
    const long after = anon_huge_kib();
    printf("AnonHugePages %ld kB before, %ld kB after a %d x %d x %d dgemm\n", before, after, m,
           n, k);
    TEST_ASSERT(after > (before > 0 ? before : 0),
                "no huge page resident after the dgemm (AnonHugePages %ld kB, %ld before)",
                after, before);
  }
  free(a);
  free(b);
  free(c);
  TEST_ASSERT(qp_blas_buffers_huge_pages() == advised,
              "a second call did not return the first count %d", advised);
  return TEST_RETURN();
}
