/* test_rank_field: qp_rank_field_read, the one reader of /budget/ranks datasets (`qmlpipe
 * report --ranks` and `qmlpipe validate --sacct`), on a real rank table: a dataset read whole;
 * one of another size refused (QP_ERR_INPUT); a missing one the caller's error, QP_ERR_IO for
 * report (exit 8), QP_ERR_INPUT for --sacct (exit 6), or no error and *found = 0 (a dataset
 * older files lack). */
#include <hdf5.h>
#include <stdio.h>
#include <unistd.h>

#include "report_ranks.h"
#include "test_util.h"

#define PATH "test_rank_field.h5"

int main(void) {
  /* A 2-rank table of 2 stages (as test_rank_table_sizes), then one dataset removed. */
  static const char *const stages[2] = {"load", "solve"};
  static qp_model model;
  qp_model_init(&model, 2, stages);
  double rows[2 * QP_RANK_ROW];
  for (int i = 0; i < 2 * QP_RANK_ROW; ++i) rows[i] = 1048576.0 * (1 + i % 7);
  qp_rank_table t = {.n_ranks = 2, .grid_rows = 1, .grid_cols = 2, .block = 64,
                     .ranks_per_node = 1, .model = &model, .rows = rows};
  hid_t file = H5Fcreate(PATH, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t budget = H5Gcreate2(file, "budget", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(file >= 0 && budget >= 0, "cannot create %s", PATH);
  TEST_OK(qp_report_write_ranks(file, &t));
  hid_t ranks = H5Gopen2(file, "budget/ranks", H5P_DEFAULT);
  TEST_ASSERT(ranks >= 0 && H5Ldelete(ranks, "baseline_rss_bytes", H5P_DEFAULT) >= 0,
              "cannot remove /budget/ranks/baseline_rss_bytes");
  const char *where = PATH ": /budget/ranks";

  /* Present: 2 ranks x 2 stages, the rows' predicted peaks. */
  double v[4] = {0, 0, 0, 0}, want[4];
  for (int r = 0; r < 2; ++r)
    for (int s = 0; s < 2; ++s)
      want[r * 2 + s] = rows[r * QP_RANK_ROW + s * QP_RANK_FIELDS + QP_RANK_PREDICTED_PEAK];
  int found = 0;
  TEST_OK(qp_rank_field_read(ranks, where, "predicted_peak_bytes", v, 4, QP_ERR_INPUT, &found));
  TEST_ASSERT(found == 1, "predicted_peak_bytes read but not found");
  TEST_WITHIN(qp_test_max_rel_diff(want, v, 4), 0.0, "predicted_peak_bytes read back");
  /* Another size than n_ranks and the stages say: never read past the buffer. */
  EXPECT_ERROR(qp_rank_field_read(ranks, where, "predicted_peak_bytes", v, 3, QP_OK, &found),
               QP_ERR_INPUT, PATH, "holds 4 values, but n_ranks and the stages say 3");

  /* Missing: the caller's status. */
  double base[2];
  EXPECT_ERROR(qp_rank_field_read(ranks, where, "baseline_rss_bytes", base, 2, QP_ERR_IO, NULL),
               QP_ERR_IO, PATH, "baseline_rss_bytes");
  EXPECT_ERROR(qp_rank_field_read(ranks, where, "baseline_rss_bytes", base, 2, QP_ERR_INPUT,
                                  &found),
               QP_ERR_INPUT, PATH, "baseline_rss_bytes");
  found = 1;
  TEST_OK(qp_rank_field_read(ranks, where, "baseline_rss_bytes", base, 2, QP_OK, &found));
  TEST_ASSERT(found == 0, "a missing dataset reported found");
  if (ranks >= 0) H5Gclose(ranks);
  if (budget >= 0) H5Gclose(budget);
  if (file >= 0) H5Fclose(file);

  /* `qmlpipe report --ranks` on that file: the missing dataset is exit 8. */
  FILE *sink = fopen("/dev/null", "w");
  int mismatch = 0;
  EXPECT_ERROR(qp_report_print_ranks(PATH, sink, &mismatch), QP_ERR_IO, PATH,
               "baseline_rss_bytes");
  TEST_ASSERT(qp_err_exit_status(QP_ERR_IO) == 8, "QP_ERR_IO is not exit status 8");
  fclose(sink);
  unlink(PATH);
  return TEST_RETURN();
}
