/* inputs_maps.c: the maps read where they are used. covariance_setup has checked every map
 * (inputs.c) and kept none: a batch of them is read again into a per-map matrix each time a
 * stage needs it (qp_maps_to_matrix), one map at a time through a buffer of one map, so that
 * no rank ever holds more than one map beside the batch's matrix, whatever n_maps is
 * (docs/memory-model.md, "Maps in batches"). */
#include "inputs_internal.h"

#include "comm.h"
#include "covariance_terms.h"
#include "host_window.h"

/* The file of column `column` of the maps (maps' columns 0 .. n_maps - 1, then maps2's) and
 * the words its errors name it by. */
static const char *qp_map_file(const qp_problem *p, int64_t column, const char **what) {
  const qp_config *cfg = p->cfg;
  if (column < cfg->n_maps) {
    *what = "map";
    return cfg->maps[column];
  }
  *what = "map (maps2)";
  return cfg->maps2[column - cfg->n_maps];
}

/* A map that covariance_setup read and checked and that now fails (cut, replaced, gone): the
 * reader's error, wrapped to say so; the same code (exit status). */
static qp_err qp_map_changed(qp_err err, const char *what, const char *path) {
  QP_FAIL(err,
          "%s '%s' was read and checked in covariance_setup but cannot be read again in %s, "
          "where its batch is used: was it changed or replaced while the run went on? Restore "
          "it and run again (%s)",
          what, path, qp_stage_current() ? qp_stage_current() : "this stage", qp_error_message());
}

/* Column j of m <- map (the whole data vector), on the ranks that hold that column: this
 * rank's rows, a panel of them at a time through a host window of that one column (all of
 * them unless memory.host_limit panels the host windows on a device backend). */
static qp_err qp_map_to_column(const qp_problem *p, const double *map, int64_t j, qp_matrix *m) {
  const int64_t lj = qp_matrix_local_col(m, j);
  if (lj < 0) return QP_OK;
  for (int64_t row0 = 0, rows; row0 < m->local_rows; row0 += rows) {
    rows = qp_host_panel_width(p, m->local_rows, row0);
    qp_host_window w;
    QP_CALL(qp_host_window_open_block(m, row0, rows, lj, 1, QP_ACCESS_WRITE, &w));
    for (int64_t i = 0; i < rows; ++i)
      w.data[i] = map[qp_matrix_global_row(m, row0 + i)];
    QP_CALL(qp_host_window_close(&w));
  }
  return QP_OK;
}

qp_err qp_maps_to_matrix(const qp_problem *p, int64_t first, qp_matrix *m) {
  const int64_t columns = p->n_maps * (p->plan->model_dims.cross_maps ? 2 : 1);
  QP_CHECK(first >= 0 && first + m->cols <= columns, QP_ERR_INTERNAL,
           "maps %lld..%lld into '%s' (%lld maps)", (long long)first, (long long)(first + m->cols),
           m->name, (long long)columns);
  /* The reading rank reads a map through its sky buffer into the map buffer, which every rank
   * then holds (a broadcast) and copies its own entries from. Every rank meets every
   * agreement, whatever failed where: a file that went bad since covariance_setup's check
   * (the reader's error, naming it) or a rank's own window (an upload) stops every rank at the
   * same map, none left waiting in a broadcast. */
  const int reader = qp_inputs_reader();
  double *map = NULL, *sky = NULL;
  qp_err err = QP_ALLOC_DOUBLES(QP_TERM_MAP_BUFFER, QP_TERM_TRANSIENT, p->n_pix, &map);
  if (err == QP_OK && reader)
    err = QP_ALLOC_DOUBLES(QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, p->n_sky, &sky);
  qp_err mine = err; /* this rank's own failure, told at the next agreement */
  for (int64_t j = 0; j <= m->cols; ++j) {
    if (mine == QP_OK && reader && j < m->cols) {
      const char *what;
      const char *path = qp_map_file(p, first + j, &what);
      mine = qp_inputs_read_fields(p, path, what, 0, sky, map);
      if (mine != QP_OK) mine = qp_map_changed(mine, what, path);
    }
    err = qp_comm_agree(mine);
    if (err != QP_OK || j == m->cols) break;
    err = qp_comm_bcast(map, (size_t)p->n_pix * sizeof(double));
    if (err != QP_OK) break;
    mine = qp_map_to_column(p, map, j, m);
  }
  qp_budget_free(sky);
  qp_budget_free(map);
  QP_CALL(err);
  return QP_OK;
}
