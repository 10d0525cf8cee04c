/* test_model_sizes: byte counts of the memory model, the tracked allocator and the
 * calibration file that do not fit 64 bits.
 *  - The model: n_pix 1518500250 makes C = n_pix^2 x 8 = 2^64 + 3.3e9 bytes, which wrapped to
 *    277 MiB. Every term must be refused past 2^56 bytes (base/checked_size.h), naming the
 *    term, its formula and the dimensions, on every rank of a grid alike (each rank's share of
 *    C fits 64 bits; the decision must not depend on the rank). A model just at the bound is
 *    accepted and its stage sums are exact.
 *  - The allocator: an element count that is negative (a wrapped int64 product) is refused
 *    naming the term, not turned into 2^64 - 1 elements.
 *  - The calibration file: an overhead beyond 2^56 bytes (or beyond long long) is refused. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "calibration.h"
#include "memory_model.h"
#include "test_util.h"

static qp_model_dims pixel_dims(int64_t n_pix, int64_t n_params) {
  return (qp_model_dims){.path = QP_MODEL_PIXEL_DIRECT,
                         .n_sky = 0,
                         .n_positions = n_pix,
                         .n_pix = n_pix,
                         .n_maps = 1,
                         .n_params = n_params,
                         .fisher_chunk = n_params,
                         .spectra_chunk = n_params,
                         .reader = 1};
}

int main(void) {
  static qp_model m; /* ~20 KiB */
  qp_model_dims d = pixel_dims(1518500250, 10);
  EXPECT_ERROR(qp_model_predict(&d, &m), QP_ERR_INPUT, "term 'C'", "n_pix^2 x 8",
               "n_pix=1518500250", "2^56");
  /* Distributed over 2 x 2: every rank refuses alike, though its quarter of C fits. */
  for (int r = 0; r < 4; ++r) {
    d.grid_rows = d.grid_cols = 2;
    d.block = 64;
    d.grid_row = r / 2;
    d.grid_col = r % 2;
    d.reader = r == 0;
    EXPECT_ERROR(qp_model_predict(&d, &m), QP_ERR_INPUT, "term 'C'", "n_pix=1518500250");
  }
  /* The sky buffer of n_sky = 12 nside^2 at nside 2^29, 2.8e19 bytes. */
  d = pixel_dims(1000, 2);
  d.n_sky = (int64_t)12 << 58;
  EXPECT_ERROR(qp_model_predict(&d, &m), QP_ERR_INPUT, "term 'sky_buffer'", "n_sky=");
  /* A batch of every map, n_pix n_maps x 8 = 3.2e19 bytes on the harmonic routes. */
  d = pixel_dims(2000000000, 2);
  d.path = QP_MODEL_HARMONIC_SMW;
  d.n_modes = 100;
  d.n_maps = 2000000000;
  EXPECT_ERROR(qp_model_predict(&d, &m), QP_ERR_INPUT, "term 'weighted_maps'", "map_batch",
               "n_maps=2000000000");

  /* At the bound: n_pix 2^26, C = 2^55 bytes, products (1 + 1) x 2^55 = 2^56: accepted, and
   * fisher_run's peak is the exact sum of its terms. */
  d = pixel_dims((int64_t)1 << 26, 1);
  TEST_OK(qp_model_predict(&d, &m));
  const qp_model_term *c = qp_model_find(&m, "C"), *products = qp_model_find(&m, "products");
  TEST_ASSERT(c && c->bytes == (size_t)1 << 55, "C is %zu bytes", c ? c->bytes : 0);
  TEST_ASSERT(products && products->bytes == (size_t)1 << 56, "products are %zu bytes",
              products ? products->bytes : 0);
  size_t sum = 0;
  for (int i = 0; i < m.n_terms; ++i)
    if (qp_model_term_alive(&m.terms[i], QP_STAGE_FISHER_RUN)) sum += m.terms[i].bytes;
  TEST_ASSERT(qp_model_stage_peak(&m, QP_STAGE_FISHER_RUN) == sum,
              "fisher_run peak %zu, its terms %zu", qp_model_stage_peak(&m, QP_STAGE_FISHER_RUN),
              sum);
  TEST_ASSERT(qp_model_peak(&m) >= ((size_t)3 << 55), "lifetime peak %zu below C + products",
              qp_model_peak(&m));
  /* One step past it: 2 x (2^26 + 1)^2 x 8 > 2^56. */
  d = pixel_dims(((int64_t)1 << 26) + 1, 1);
  EXPECT_ERROR(qp_model_predict(&d, &m), QP_ERR_INPUT, "term 'products'");

  /* The allocator: a negative count. */
  double *x = NULL;
  const int64_t wrapped = -2; /* what a wrapped int64 product may leave */
  EXPECT_ERROR(QP_ALLOC_DOUBLES("wrapped_term", QP_TERM_TRANSIENT, wrapped, &x), QP_ERR_INTERNAL,
               "term 'wrapped_term'", "-2");
  TEST_ASSERT(x == NULL, "a refused allocation returned a pointer");
  EXPECT_ERROR(qp_budget_alloc_array("wide_term", QP_TERM_TRANSIENT, SIZE_MAX / 4, 8, (void **)&x),
               QP_ERR_NOMEM, "term 'wide_term'");

  /* The calibration file. */
  qp_calibration cal;
  qp_test_write_text("test_sizes_cal1.txt", "overhead_bytes 9223372036854775807\n");
  EXPECT_ERROR(qp_calibration_load("test_sizes_cal1.txt", &cal), QP_ERR_INPUT,
               "test_sizes_cal1.txt", "line 1", "overhead_bytes", "2^56");
  qp_test_write_text("test_sizes_cal2.txt", "overhead_bytes 99999999999999999999\n");
  EXPECT_ERROR(qp_calibration_load("test_sizes_cal2.txt", &cal), QP_ERR_INPUT,
               "test_sizes_cal2.txt", "line 1", "99999999999999999999");
  qp_test_write_text("test_sizes_cal3.txt", "overhead_bytes 33554432\nblas_bytes 12x\n");
  EXPECT_ERROR(qp_calibration_load("test_sizes_cal3.txt", &cal), QP_ERR_INPUT,
               "test_sizes_cal3.txt", "line 2");
  qp_test_write_text("test_sizes_cal4.txt", "overhead_bytes 33554432\nthreads 4294967297\n");
  EXPECT_ERROR(qp_calibration_load("test_sizes_cal4.txt", &cal), QP_ERR_INPUT,
               "test_sizes_cal4.txt", "line 2", "threads");
  unlink("test_sizes_cal1.txt");
  unlink("test_sizes_cal2.txt");
  unlink("test_sizes_cal3.txt");
  unlink("test_sizes_cal4.txt");
  return TEST_RETURN();
}
