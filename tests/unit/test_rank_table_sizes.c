/* test_rank_table_sizes: `qmlpipe report --ranks` reads /budget/ranks of a results file, whose
 * n_ranks attribute sized its buffers: (size_t)n x stages x 8 bytes, wrapped for a negative
 * or huge n, and each dataset was read whole into them whatever its size. A file whose n_ranks
 * disagrees with its datasets, or is no rank count, must be refused naming the file and what
 * is wrong (QP_ERR_INPUT), never read past a buffer. */
#include <hdf5.h>
#include <stdio.h>
#include <unistd.h>

#include "report_ranks.h"
#include "test_util.h"

#define PATH "test_rank_table.h5"

/* A results file with /budget and a 2-rank table, then n_ranks overwritten with `n`. */
static int write_table(long long n) {
  hid_t file = H5Fcreate(PATH, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t budget = H5Gcreate2(file, "budget", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  double rows[2 * QP_RANK_ROW];
  for (int i = 0; i < 2 * QP_RANK_ROW; ++i)
    rows[i] = 1048576.0;
  /* Any program's stages: budget/ knows none of its own. */
  static const char *const stages[3] = {"load", "solve", "store"};
  static qp_model model;
  qp_model_init(&model, 3, stages);
  qp_rank_table t = {.n_ranks = 2, .grid_rows = 1, .grid_cols = 2, .block = 64,
                     .ranks_per_node = 1, .model = &model, .rows = rows};
  int ok = file >= 0 && budget >= 0 && qp_report_write_ranks(file, &t) == QP_OK;
  if (budget >= 0) H5Gclose(budget);
  if (file >= 0) H5Fclose(file);
  file = H5Fopen(PATH, H5F_ACC_RDWR, H5P_DEFAULT);
  /* Replaced, not rewritten in place (HDF5 1.10 refuses that for this attribute). */
  ok = ok && H5Adelete_by_name(file, "budget/ranks", "n_ranks", H5P_DEFAULT) >= 0;
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate_by_name(file, "budget/ranks", "n_ranks", H5T_STD_I64LE, space, H5P_DEFAULT,
                                 H5P_DEFAULT, H5P_DEFAULT);
  ok = ok && attr >= 0 && H5Awrite(attr, H5T_NATIVE_LLONG, &n) >= 0;
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  if (file >= 0) H5Fclose(file);
  return ok;
}

int main(void) {
  FILE *sink = fopen("/dev/null", "w");
  int mismatch = 0;
  TEST_ASSERT(write_table(2), "cannot write the rank table");
  TEST_OK(qp_report_print_ranks(PATH, sink, &mismatch));

  TEST_ASSERT(write_table(-1), "cannot write the rank table");
  EXPECT_ERROR(qp_report_print_ranks(PATH, sink, &mismatch), QP_ERR_INPUT, PATH, "n_ranks = -1");
  TEST_ASSERT(write_table((long long)1 << 61), "cannot write the rank table");
  EXPECT_ERROR(qp_report_print_ranks(PATH, sink, &mismatch), QP_ERR_INPUT, PATH,
               "n_ranks = 2305843009213693952");
  /* One rank claimed, two in the datasets: 2 x 3 stages = 6 values for a buffer of 3. */
  TEST_ASSERT(write_table(1), "cannot write the rank table");
  EXPECT_ERROR(qp_report_print_ranks(PATH, sink, &mismatch), QP_ERR_INPUT, PATH,
               "holds 6 values, but n_ranks and the stages say 3");
  fclose(sink);
  unlink(PATH);
  return TEST_RETURN();
}
