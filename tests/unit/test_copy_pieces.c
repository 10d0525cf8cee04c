/* test_copy_pieces: how the cuda backend cuts a host <-> device copy into pieces of its pinned
 * staging buffers (linalg/backends/copy_pieces.h), checked on CPU. For block shapes from a single
 * entry to columns longer than the buffer, and buffers from one double to larger than the block:
 * every piece fits the buffer, the pieces cover every entry of the block exactly once, and a
 * block packed piece by piece into a "device" array through two alternating buffers (the order
 * cuda_pinned.c copies in) and unpacked back into a strided host array is bitwise the source,
 * with the padding rows between columns untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copy_pieces.h"
#include "test_util.h"

static void check_shape(int64_t rows, int64_t cols, int64_t capacity) {
  const int64_t sld = rows + 3, dld = rows + 5;
  double *src = malloc((size_t)(sld * cols) * sizeof *src);
  double *device = malloc((size_t)(rows * cols) * sizeof *device);
  double *back = malloc((size_t)(dld * cols) * sizeof *back);
  int *seen = calloc((size_t)(rows * cols), sizeof *seen);
  double *buffers[2] = {malloc((size_t)capacity * sizeof(double)),
                        malloc((size_t)capacity * sizeof(double))};
  TEST_ASSERT(src && device && back && seen && buffers[0] && buffers[1], "out of memory");
  if (!src || !device || !back || !seen || !buffers[0] || !buffers[1]) goto done;
  for (int64_t i = 0; i < sld * cols; ++i) src[i] = (double)i + 0.25;
  for (int64_t i = 0; i < dld * cols; ++i) back[i] = -1.0;
  const int64_t count = qp_copy_piece_count(rows, cols, capacity);
  int64_t covered = 0;
  for (int64_t t = 0; t < count; ++t) {
    const qp_copy_piece p = qp_copy_piece_at(rows, cols, capacity, t);
    TEST_ASSERT(p.rows >= 1 && p.cols >= 1 && p.rows * p.cols <= capacity &&
                    p.row0 + p.rows <= rows && p.col0 + p.cols <= cols,
                "%lld x %lld, capacity %lld: piece %lld (%lld+%lld, %lld+%lld) out of bounds",
                (long long)rows, (long long)cols, (long long)capacity, (long long)t,
                (long long)p.row0, (long long)p.rows, (long long)p.col0, (long long)p.cols);
    for (int64_t k = 0; k < p.cols; ++k)
      for (int64_t r = 0; r < p.rows; ++r) ++seen[p.row0 + r + (p.col0 + k) * rows];
    covered += p.rows * p.cols;
    /* upload: pack into buffer t % 2, then the "device" copy of the packed piece */
    double *b = buffers[t & 1];
    qp_copy_pack(src, sld, p, b);
    for (int64_t k = 0; k < p.cols; ++k)
      memcpy(device + p.row0 + (p.col0 + k) * rows, b + k * p.rows, (size_t)p.rows * sizeof *b);
  }
  TEST_ASSERT(covered == rows * cols, "%lld x %lld, capacity %lld: pieces cover %lld entries",
              (long long)rows, (long long)cols, (long long)capacity, (long long)covered);
  for (int64_t i = 0; i < rows * cols; ++i)
    if (seen[i] != 1) {
      TEST_ASSERT(0, "%lld x %lld, capacity %lld: entry %lld covered %d times", (long long)rows,
                  (long long)cols, (long long)capacity, (long long)i, seen[i]);
      break;
    }
  /* download: the "device" copy into buffer t % 2, then unpack */
  for (int64_t t = 0; t < count; ++t) {
    const qp_copy_piece p = qp_copy_piece_at(rows, cols, capacity, t);
    double *b = buffers[t & 1];
    for (int64_t k = 0; k < p.cols; ++k)
      memcpy(b + k * p.rows, device + p.row0 + (p.col0 + k) * rows, (size_t)p.rows * sizeof *b);
    qp_copy_unpack(b, p, back, dld);
  }
  int64_t bad = 0;
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < dld; ++i) {
      const double want = i < rows ? src[i + j * sld] : -1.0;
      bad += back[i + j * dld] != want;
    }
  TEST_ASSERT(bad == 0, "%lld x %lld, capacity %lld: %lld entries differ after the round trip",
              (long long)rows, (long long)cols, (long long)capacity, (long long)bad);
done:
  free(src);
  free(device);
  free(back);
  free(seen);
  free(buffers[0]);
  free(buffers[1]);
}

int main(void) {
  const int64_t shapes[][2] = {{1, 1}, {1, 9}, {9, 1}, {7, 5}, {64, 3}, {100, 37}, {333, 2}};
  const int64_t capacities[] = {1, 2, 6, 7, 8, 64, 99, 100, 101, 250, 10000};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s)
    for (size_t c = 0; c < sizeof capacities / sizeof *capacities; ++c)
      check_shape(shapes[s][0], shapes[s][1], capacities[c]);
  TEST_ASSERT(qp_copy_piece_count(0, 5, 8) == 0 && qp_copy_piece_count(5, 0, 8) == 0,
              "an empty block has pieces");
  /* whole columns while one fits: 100 x 37 in 250 doubles is 2 columns a piece, 19 pieces */
  TEST_ASSERT(qp_copy_piece_count(100, 37, 250) == 19, "100 x 37 in 250: %lld pieces",
              (long long)qp_copy_piece_count(100, 37, 250));
  /* a column longer than the buffer is cut: 333 x 2 in 100 is 4 runs per column */
  TEST_ASSERT(qp_copy_piece_count(333, 2, 100) == 8, "333 x 2 in 100: %lld pieces",
              (long long)qp_copy_piece_count(333, 2, 100));
  return TEST_RETURN();
}
