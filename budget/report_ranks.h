/* report_ranks.h: the per-rank budget of a distributed run, /budget/ranks of the results file.
 *
 * Each rank predicts its own bytes (model.h with its grid position) and measures its own RSS;
 * rank 0 gathers one row per rank and stage and writes them as 2-D datasets [rank][stage]:
 *   predicted_peak_bytes, predicted_persistent_bytes  the model of that rank
 *   tracked_peak_bytes, tracked_end_bytes             the allocator of that rank
 *   rss_peak_bytes, rss_end_bytes                     VmHWM / VmRSS minus that rank's baseline
 *   seconds
 *   predicted_library_bytes                           PBLAS's own buffers (in RSS, not tracked)
 * with baseline_rss_bytes [rank], the stage names (attribute stages, comma-separated), the grid
 * (attributes grid_rows, grid_cols, block, ranks_per_node: the most ranks any node held) and,
 * per quantity, its max and min over the ranks (<name>_max, <name>_min [stage]). Where the
 * ranks ran: host [rank] (fixed-width strings, the host name each rank found) and node_ranks
 * [rank] (the ranks on that rank's node), so that a reader groups ranks into nodes by host,
 * never by blocks of ranks_per_node (placement may be uneven: 1 + 3). Files from before them
 * lack both. Budget knows nothing of MPI: the pipeline gathers the rows. */
#ifndef QP_REPORT_RANKS_H
#define QP_REPORT_RANKS_H

#include <hdf5.h>
#include <stdio.h>

#include "model.h"
#include "qp_error.h"

enum {
  QP_RANK_PREDICTED_PEAK = 0,
  QP_RANK_PREDICTED_PERSISTENT,
  QP_RANK_TRACKED_PEAK,
  QP_RANK_TRACKED_END,
  QP_RANK_RSS_PEAK,
  QP_RANK_RSS_END,
  QP_RANK_SECONDS,
  QP_RANK_PREDICTED_LIBRARY,
  QP_RANK_FIELDS
};

/** One rank's row: QP_MODEL_STAGES_MAX x QP_RANK_FIELDS values (the model's stages first, the
 *  rest unused), then its baseline RSS and the shared part of it (meter.h rss_shared), then
 *  the ranks on its node (the caller's to fill: budget knows nothing of nodes; 0 unknown). */
enum {
  QP_RANK_BASELINE = QP_MODEL_STAGES_MAX * QP_RANK_FIELDS,
  QP_RANK_NODE_RANKS = QP_RANK_BASELINE + 2,
  QP_RANK_ROW = QP_RANK_BASELINE + 3
};
/** The width of /budget/ranks/host's strings, bytes (a host name of up to 64 characters). */
enum { QP_RANK_HOST_MAX = 65 };

typedef struct qp_rank_table {
  int n_ranks, grid_rows, grid_cols, block, ranks_per_node;
  const qp_model *model; /* the stages (every rank's model has the same) */
  const double *rows;    /* n_ranks x QP_RANK_ROW */
  const char *hosts;     /* n_ranks x QP_RANK_HOST_MAX, NUL-terminated each; NULL: not written */
} qp_rank_table;

/** This rank's row from its stage records (budget.h), its model and baseline. */
void qp_rank_row(const qp_model *model, const qp_meter_sample *baseline, double row[QP_RANK_ROW]);
/** Writes /budget/ranks (the /budget group must exist). */
qp_err qp_report_write_ranks(hid_t file, const qp_rank_table *table);
enum { QP_RANK_WHERE_MAX = 4096 + 64 }; /* "'<path>': /budget/ranks" */

/** Reads dataset `name` of a rank table (`group`: /budget/ranks, open), `count` doubles, into
 *  `out`. `where` names the group in messages ("FILE: /budget/ranks").
 *  A missing dataset is the caller's choice: `missing` is the error recorded (QP_ERR_IO where
 *  the file is damaged, QP_ERR_INPUT where it is not the file the command needs: exit 8 or
 *  6), or, with QP_OK, none (a file from before the dataset existed: *found = 0).
 *  QP_ERR_INPUT when it holds another number of values (never read past `out`); QP_ERR_IO
 *  when HDF5 fails. `found` (may be NULL): 1 when read. */
qp_err qp_rank_field_read(hid_t group, const char *where, const char *name, double *out,
                          long long count, qp_err missing, int *found);
/** Reads /budget/ranks/host (`group` open, `where` as above) into `hosts` (n x
 *  QP_RANK_HOST_MAX). A file without it (from before it): *found = 0, QP_OK. QP_ERR_INPUT
 *  when it is not n strings; QP_ERR_IO when HDF5 fails. */
qp_err qp_rank_hosts_read(hid_t group, const char *where, long long n,
                          char (*hosts)[QP_RANK_HOST_MAX], int *found);
/** Prints the per-rank table of a results file; *mismatch = 1 when some rank's tracked peak
 *  differs from its prediction. QP_ERR_INPUT when the file has no /budget/ranks. */
qp_err qp_report_print_ranks(const char *path, FILE *out, int *mismatch);

#endif
