/* tiled_work.c: the tiled algorithms' workspace, gather and packing (tiled_work.h). */
#include "tiled_work.h"

#include <stdlib.h>
#include <string.h>

#include "comm.h"

int64_t qp_tiled_host_doubles(const qp_tiled_sizes *s) { return 3 * s->window + s->stage; }

int64_t qp_tiled_local_doubles(const qp_tiled_sizes *s) {
  return s->panel_a + s->panel_b + s->tile + s->vector;
}

static int64_t qp_tiled_max(int64_t a, int64_t b) { return a > b ? a : b; }

qp_tiled_sizes qp_tiled_gemm_sizes(int64_t m, int64_t n, int64_t k, int nb, int nprow, int npcol,
                                   int myrow, int mycol) {
  const int64_t panel = (int64_t)nb * QP_TILED_GEMM_BLOCKS, width = k < panel ? k : panel;
  const int64_t lm = qp_bc_local_count(m, nb, myrow, nprow);
  const int64_t ln = qp_bc_local_count(n, nb, mycol, npcol);
  return (qp_tiled_sizes){.window = qp_tiled_max(m, n) * width,
                          .stage = qp_tiled_max(lm, ln) * width,
                          .panel_a = lm * width,
                          .panel_b = ln * width};
}

qp_tiled_sizes qp_tiled_triangular_sizes(int64_t rows, int64_t cols, int nb,
                                         int nprow, int npcol, int myrow, int mycol) {
  /* the left and right sweeps need the same panels, each in the other role */
  const int64_t lm = qp_bc_local_count(rows, nb, myrow, nprow);
  const int64_t ln = qp_bc_local_count(cols, nb, mycol, npcol);
  return (qp_tiled_sizes){.window = qp_tiled_max(rows, cols) * nb,
                          .stage = qp_tiled_max(qp_tiled_max(lm, ln), nb) * nb,
                          .panel_a = lm * nb,
                          .panel_b = ln * nb,
                          .tile = (int64_t)nb * nb};
}

qp_tiled_sizes qp_tiled_potrf_sizes(int64_t n, int nb, int nprow, int npcol, int myrow,
                                    int mycol) {
  const int64_t lm = qp_bc_local_count(n, nb, myrow, nprow);
  const int64_t ln = qp_bc_local_count(n, nb, mycol, npcol);
  return (qp_tiled_sizes){.window = n * nb,
                          .stage = qp_tiled_max(lm, ln) * nb,
                          .panel_a = lm * nb,
                          .panel_b = ln * nb,
                          .tile = (int64_t)nb * nb};
}

qp_tiled_sizes qp_tiled_bound_sizes(int64_t max_dim, int nb, int nprow, int npcol, int myrow,
                                    int mycol) {
  const int64_t width = (int64_t)nb * QP_TILED_GEMM_BLOCKS;
  const int64_t lm = qp_bc_local_count(max_dim, nb, myrow, nprow);
  const int64_t ln = qp_bc_local_count(max_dim, nb, mycol, npcol);
  return (qp_tiled_sizes){.window = max_dim * width,
                          .stage = (qp_tiled_max(lm, ln) + nb) * width,
                          .panel_a = lm * width,
                          .panel_b = ln * width,
                          .tile = (int64_t)nb * nb,
                          .vector = lm};
}

/* The held blocks (qp_tiled_hold): one thread calls the operations. */
static struct {
  double *host, *local;
  size_t host_bytes, local_bytes;
  qp_space local_space;
} qp_tiled_held;

qp_err qp_tiled_hold(const char *term, qp_space space, size_t bytes) {
  const int host = strcmp(term, QP_TERM_TILED_HOST) == 0;
  if (!host && strcmp(term, QP_TERM_TILED_PANELS) != 0) return QP_OK;
  double **block = host ? &qp_tiled_held.host : &qp_tiled_held.local;
  size_t *held = host ? &qp_tiled_held.host_bytes : &qp_tiled_held.local_bytes;
  if (bytes <= *held && (host || space == qp_tiled_held.local_space)) return QP_OK;
  qp_budget_free(*block);
  *block = NULL;
  *held = 0;
  QP_CALL(qp_budget_alloc(term, QP_TERM_PERSISTENT, host ? QP_SPACE_HOST : space, bytes,
                          (void **)block));
  *held = bytes;
  if (!host) qp_tiled_held.local_space = space;
  return QP_OK;
}

void qp_tiled_release(void) {
  qp_budget_free(qp_tiled_held.host);
  qp_budget_free(qp_tiled_held.local);
  memset(&qp_tiled_held, 0, sizeof qp_tiled_held);
}

int qp_tiled_holding(void) { return qp_tiled_held.host && qp_tiled_held.local; }

double *qp_tiled_held_vector(int64_t doubles, int64_t before) {
  const size_t need = (size_t)(doubles + before) * sizeof(double);
  if (!qp_tiled_held.local || need > qp_tiled_held.local_bytes) return NULL;
  return qp_tiled_held.local + qp_tiled_held.local_bytes / sizeof(double) - doubles;
}

/* w's buffers: the held blocks where they fit `host` and `local` doubles, else its own. */
static qp_err qp_tiled_work_buffers(qp_tiled_work *w, int64_t host, int64_t local) {
  if ((size_t)host * sizeof(double) <= qp_tiled_held.host_bytes &&
      (size_t)local * sizeof(double) <= qp_tiled_held.local_bytes &&
      (local == 0 || qp_tiled_held.local_space == w->local->space)) {
    w->host = host > 0 ? qp_tiled_held.host : NULL;
    w->panels = local > 0 ? qp_tiled_held.local : NULL;
    return QP_OK;
  }
  w->owns = 1;
  if (host > 0) QP_CALL(QP_ALLOC_DOUBLES(QP_TERM_TILED_HOST, QP_TERM_TRANSIENT, host, &w->host));
  if (local > 0)
    QP_CALL(qp_budget_alloc(QP_TERM_TILED_PANELS, QP_TERM_TRANSIENT, w->local->space,
                            (size_t)local * sizeof(double), (void **)&w->panels));
  return QP_OK;
}

qp_err qp_tiled_work_open(const qp_matrix *like, const qp_tiled_sizes *sizes, qp_tiled_work *w) {
  memset(w, 0, sizeof *w);
  w->grid = like->grid;
  w->local = qp_linalg_local_ops(like->ops);
  w->sizes = *sizes;
  qp_err err = QP_OK;
  if (!w->grid || !w->local)
    err = qp_error_set(QP_ERR_INTERNAL, __FILE__, __LINE__, __func__,
                       "tiled operation on '%s': not a distributed matrix", like->name);
  if (err == QP_OK)
    err = qp_tiled_work_buffers(w, qp_tiled_host_doubles(sizes), qp_tiled_local_doubles(sizes));
  if (err == QP_OK) {
    w->counts = malloc((size_t)qp_comm_size() * sizeof *w->counts);
    if (!w->counts)
      err = qp_error_set(QP_ERR_NOMEM, __FILE__, __LINE__, __func__,
                         "tiled operation on '%s': no memory for %d counts", like->name,
                         qp_comm_size());
  }
  err = qp_comm_agree(err);
  if (err != QP_OK) {
    qp_tiled_work_close(w);
    return err;
  }
  w->send = w->host;
  w->recv = w->send ? w->send + sizes->window : NULL;
  w->window = w->recv ? w->recv + sizes->window : NULL;
  w->stage = w->window ? w->window + sizes->window : NULL;
  w->panel_a = w->panels;
  w->panel_b = w->panels ? w->panel_a + sizes->panel_a : NULL;
  w->tile = w->panels ? w->panel_b + sizes->panel_b : NULL;
  return QP_OK;
}

void qp_tiled_work_close(qp_tiled_work *w) {
  if (w->owns) {
    qp_budget_free(w->host);
    qp_budget_free(w->panels);
  }
  free(w->counts);
  memset(w, 0, sizeof *w);
}

/* A block-long run at a time: runs of local indices within one block are consecutive global
 * indices. */
void qp_tiled_copy_column(double *packed, int64_t l0, int64_t count, int nb, int iproc,
                          int nprocs, int64_t i0, double *window, int to_window) {
  for (int64_t s = 0; s < count;) {
    const int64_t l = l0 + s;
    int64_t run = nb - l % nb;
    if (run > count - s) run = count - s;
    double *at = window + (qp_bc_global_index(l, nb, iproc, nprocs) - i0);
    memcpy(to_window ? at : packed + s, to_window ? packed + s : at, (size_t)run * sizeof *at);
    s += run;
  }
}

qp_err qp_tiled_gather(qp_tiled_work *w, qp_err pending, const qp_matrix *m, int64_t i0,
                       int64_t j0, int64_t rows, int64_t cols) {
  const qp_grid *g = w->grid;
  QP_CHECK(rows * cols <= w->sizes.window, QP_ERR_INTERNAL,
           "tiled gather of '%s': a %lld x %lld window past the workspace's %lld", m->name,
           (long long)rows, (long long)cols, (long long)w->sizes.window);
  int64_t r0, r1, c0, c1;
  qp_tiled_local_range(i0, i0 + rows, g->block, g->myrow, g->nprow, &r0, &r1);
  qp_tiled_local_range(j0, j0 + cols, g->block, g->mycol, g->npcol, &c0, &c1);
  qp_err err = pending;
  if (err == QP_OK)
    err = qp_linalg_download(m, r0, c0, r1 - r0, c1 - c0, w->send, r1 > r0 ? r1 - r0 : 1);
  QP_CALL(qp_comm_agree(err));
  const int ranks = qp_comm_size();
  for (int q = 0; q < ranks; ++q) {
    const int prow = q / g->npcol, pcol = q % g->npcol;
    int64_t a0, a1, b0, b1;
    qp_tiled_local_range(i0, i0 + rows, g->block, prow, g->nprow, &a0, &a1);
    qp_tiled_local_range(j0, j0 + cols, g->block, pcol, g->npcol, &b0, &b1);
    w->counts[q] = (a1 - a0) * (b1 - b0);
  }
  QP_CALL(qp_comm_allgatherv(w->send, w->recv, w->counts));
  double *in = w->recv;
  for (int q = 0; q < ranks; ++q) {
    const int prow = q / g->npcol, pcol = q % g->npcol;
    int64_t a0, a1, b0, b1;
    qp_tiled_local_range(i0, i0 + rows, g->block, prow, g->nprow, &a0, &a1);
    qp_tiled_local_range(j0, j0 + cols, g->block, pcol, g->npcol, &b0, &b1);
    for (int64_t lj = b0; lj < b1; ++lj, in += a1 - a0) {
      const int64_t gj = qp_bc_global_index(lj, g->block, pcol, g->npcol) - j0;
      qp_tiled_copy_column(in, a0, a1 - a0, g->block, prow, g->nprow, i0, w->window + gj * rows,
                           1);
    }
  }
  return QP_OK;
}

static qp_tiled_targets qp_tiled_targets_of(int64_t l0, int64_t l1, int64_t offset, int nb,
                                            int iproc, int nprocs) {
  return (qp_tiled_targets){.first = l0, .count = l1 > l0 ? l1 - l0 : 0, .offset = offset,
                            .nb = nb, .iproc = iproc, .nprocs = nprocs};
}

qp_tiled_targets qp_tiled_rows(const qp_matrix *m, int64_t l0, int64_t l1, int64_t offset) {
  return qp_tiled_targets_of(l0, l1, offset, m->grid->block, m->grid->myrow, m->grid->nprow);
}

qp_tiled_targets qp_tiled_cols(const qp_matrix *m, int64_t l0, int64_t l1, int64_t offset) {
  return qp_tiled_targets_of(l0, l1, offset, m->grid->block, m->grid->mycol, m->grid->npcol);
}

/* The doubles of w's local-space panel that starts at `panel` (0 for none of them). */
static int64_t qp_tiled_panel_capacity(const qp_tiled_work *w, const double *panel) {
  if (!panel) return 0;
  if (panel == w->panel_a) return w->sizes.panel_a;
  if (panel == w->panel_b) return w->sizes.panel_b;
  if (panel == w->tile) return w->sizes.tile;
  return 0;
}

qp_err qp_tiled_pack(qp_tiled_work *w, int64_t window_ld, int along_rows, int64_t width,
                     const qp_tiled_targets *t, int transposed, double *panel, const char *name,
                     qp_matrix *out) {
  const int64_t count = t->count;
  const int64_t rows = transposed ? width : count, cols = transposed ? count : width;
  QP_CHECK(count * width <= w->sizes.stage, QP_ERR_INTERNAL,
           "tiled pack '%s': %lld x %lld past the stage's %lld", name, (long long)count,
           (long long)width, (long long)w->sizes.stage);
  QP_CHECK(count * width <= qp_tiled_panel_capacity(w, panel) || count * width == 0,
           QP_ERR_INTERNAL, "tiled pack '%s': %lld x %lld past its panel", name,
           (long long)count, (long long)width);
  for (int64_t s = 0; s < count; ++s) {
    const int64_t at = qp_bc_global_index(t->first + s, t->nb, t->iproc, t->nprocs) - t->offset;
    for (int64_t c = 0; c < width; ++c) {
      const double v = along_rows ? w->window[at + c * window_ld] : w->window[c + at * window_ld];
      w->stage[transposed ? c + s * width : s + c * count] = v;
    }
  }
  QP_CALL(qp_matrix_view(w->local, name, panel, rows, cols, rows > 0 ? rows : 1, out));
  QP_CALL(qp_linalg_upload(w->stage, rows > 0 ? rows : 1, out, 0, 0, rows, cols));
  return QP_OK;
}

qp_err qp_tiled_upload_tile(qp_tiled_work *w, int64_t kb, const char *name, qp_matrix *out) {
  QP_CHECK(kb > 0 && kb * kb <= w->sizes.tile, QP_ERR_INTERNAL,
           "tiled tile '%s': %lld x %lld past the workspace's", name, (long long)kb,
           (long long)kb);
  QP_CALL(qp_matrix_view(w->local, name, w->tile, kb, kb, kb, out));
  QP_CALL(qp_linalg_upload(w->window, kb, out, 0, 0, kb, kb));
  return QP_OK;
}

qp_err qp_tiled_local_view(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                           int64_t cols, const char *name, qp_matrix *out) {
  QP_CHECK(li >= 0 && lj >= 0 && li + rows <= m->local_rows && lj + cols <= m->local_cols,
           QP_ERR_INTERNAL, "tiled view '%s' of '%s': (%lld, %lld) + %lld x %lld outside its "
           "%lld x %lld local part", name, m->name, (long long)li, (long long)lj,
           (long long)rows, (long long)cols, (long long)m->local_rows, (long long)m->local_cols);
  return qp_matrix_view(qp_linalg_local_ops(m->ops), name, m->data + li + lj * m->ld, rows, cols,
                        m->ld, out);
}
