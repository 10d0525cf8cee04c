/* inputs.c: reading and checking the inputs inside covariance_setup (inputs.h): the geometry,
 * the maps and the noise, each against the others; what the plan reads first: inputs_plan.c. */
#include "inputs_internal.h"

#include <chealpix.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "covariance_terms.h"
#include "h5_matrix.h"
#include "host_window.h"
#include "input_file.h"
#include "spin_harmonics.h"

int qp_is_unseen(double v) { return fabs(v - QP_HEALPIX_UNSEEN) < 1e-5 * 1.6375e30; }

int qp_has_t(const qp_config *cfg) { return cfg->fields != QP_FIELDS_QU; }
int qp_has_p(const qp_config *cfg) { return cfg->fields != QP_FIELDS_T; }
const char *qp_mask_pol(const qp_config *cfg) {
  return cfg->mask_pol[0] ? cfg->mask_pol : cfg->mask;
}

int qp_inputs_reader(void) { return qp_comm_rank() == 0; }

qp_err qp_inputs_read_mask(const qp_problem *p, const char *path, double *sky,
                           int64_t *n_observed) {
  qp_healpix_info info;
  /* Checked under its key's name first: the map reader's own check says only "map file". */
  QP_CALL(qp_input_check(path == p->cfg->mask ? "mask file" : "mask_pol file", path,
                         QP_INPUT_ANY_SIZE));
  QP_CALL(qp_fits_map_info(path, &info));
  QP_CHECK(info.nside == p->nside, QP_ERR_INPUT,
           "mask '%s' has nside %lld but the mask '%s' has nside %lld", path, (long long)info.nside,
           p->cfg->mask, (long long)p->nside);
  QP_CALL(qp_fits_map_read(path, &info, 0, sky));
  int64_t n = 0;
  for (int64_t i = 0; i < p->n_sky; ++i) {
    QP_CHECK(isfinite(sky[i]), QP_ERR_INPUT, "mask '%s' has a non-finite value at RING pixel %lld",
             path, (long long)i);
    if (sky[i] != 0.0 && !qp_is_unseen(sky[i])) ++n;
  }
  QP_CHECK(n > 0, QP_ERR_INPUT, "mask '%s' is empty: no pixel is observed (nonzero)", path);
  *n_observed = n;
  return QP_OK;
}

qp_err qp_inputs_columns(const qp_problem *p, const char *path, const char *what,
                         const qp_healpix_info *info, int column[3]) {
  const qp_config *cfg = p->cfg;
  column[0] = column[1] = column[2] = -1;
  if (qp_has_t(cfg)) {
    /* A two-column file holds Q and U (see above): no temperature to read there. */
    QP_CHECK(info->n_columns != 2, QP_ERR_INPUT,
             "%s '%s' has 2 columns (%s, %s), read as Q and U, but fields %s need a "
             "temperature column (healpy's layout: I, Q, U)",
             what, path, info->column_names[0], info->column_names[1],
             cfg->fields == QP_FIELDS_T ? "T" : "TQU");
    column[0] = 0;
  }
  if (qp_has_p(cfg)) {
    QP_CHECK(info->n_columns >= 2, QP_ERR_INPUT,
             "%s '%s' has %d column(s) (%s), but fields %s need Q and U columns (healpy's "
             "layout: I, Q, U)",
             what, path, info->n_columns, info->column_names[0],
             cfg->fields == QP_FIELDS_QU ? "QU" : "TQU");
    QP_CHECK(cfg->fields == QP_FIELDS_QU || info->n_columns >= 3, QP_ERR_INPUT,
             "%s '%s' has 2 columns, but fields TQU need I, Q and U", what, path);
    column[1] = info->n_columns >= 3 ? 1 : 0;
    column[2] = column[1] + 1;
  }
  return QP_OK;
}

qp_err qp_inputs_touch_libraries(const qp_problem *p) {
  /* What covariance_setup will call for the first time: the pixel geometry (chealpix, libm)
   * and a map file's header and first column (cfitsio). Their code and data pages then belong
   * to the baseline: ~0.6 MiB that otherwise appeared in covariance_setup untracked. */
  double v[3];
  pix2vec_ring64(p->nside > 0 ? p->nside : 1, 0, v);
  /* And the harmonic basis of basis_setup (pix2ang, sincos): 64 KiB of libm code otherwise
   * paged in there. */
  double theta, phi, work[24] /* qp_harmonics_work_size(2) */, basis[5][9];
  pix2ang_ring64(p->nside > 0 ? p->nside : 1, 0, &theta, &phi);
  qp_harmonics_at(0, 2, theta, phi, work, basis[0], basis[1], basis[2], basis[3], basis[4]);
  if (p->cfg->has_dimensions || p->cfg->n_maps == 0 || !qp_inputs_reader()) return QP_OK;
  qp_healpix_info info;
  QP_CALL(qp_fits_map_info(p->cfg->maps[0], &info));
  return QP_OK;
}

/* Appends the observed pixels of the mask in p->sky as positions from *k on. */
static void qp_inputs_positions(qp_problem *p, int64_t *k) {
  for (int64_t i = 0; i < p->n_sky; ++i) {
    if (p->sky[i] == 0.0 || qp_is_unseen(p->sky[i])) continue;
    p->observed[*k] = i;
    pix2vec_ring64(p->nside, i, p->vectors + 3 * *k);
    ++*k;
  }
}

/* The mask(s) into the positions (rank 0 only with MPI). */
static qp_err qp_inputs_read_positions(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  int64_t k = 0, n = 0;
  if (qp_has_t(cfg)) {
    QP_CALL(qp_inputs_read_mask(p, cfg->mask, p->sky, &n));
    QP_CHECK(n == p->n_obs_t, QP_ERR_INPUT, "mask '%s' changed during the run", cfg->mask);
    qp_inputs_positions(p, &k);
  }
  if (qp_has_p(cfg)) {
    QP_CALL(qp_inputs_read_mask(p, qp_mask_pol(cfg), p->sky, &n));
    QP_CHECK(n == p->n_obs_p, QP_ERR_INPUT, "mask '%s' changed during the run", qp_mask_pol(cfg));
    qp_inputs_positions(p, &k);
  }
  return QP_OK;
}

qp_err qp_inputs_read_geometry(qp_problem *p) {
  const int reader = qp_inputs_reader();
  /* Each rank's allocations go into the agreement below: a rank refused one (out of memory)
   * must not leave the others waiting in it while it returns (found by the fault sweep). */
  qp_err err = QP_OK;
  if (reader) err = QP_ALLOC_DOUBLES(QP_TERM_SKY_BUFFER, QP_TERM_TRANSIENT, p->n_sky, &p->sky);
  if (err == QP_OK)
    err = qp_budget_alloc_array(QP_TERM_OBSERVED_INDEX, QP_TERM_PERSISTENT, (size_t)p->n_observed,
                                sizeof(int64_t), (void **)&p->observed);
  if (err == QP_OK)
    err =
        QP_ALLOC_DOUBLES(QP_TERM_PIXEL_VECTORS, QP_TERM_PERSISTENT, 3 * p->n_observed, &p->vectors);
  if (err == QP_OK && reader) err = qp_inputs_read_positions(p);
  QP_CALL(qp_comm_agree(err));
  QP_CALL(qp_comm_bcast(p->observed, (size_t)p->n_observed * sizeof(int64_t)));
  QP_CALL(qp_comm_bcast(p->vectors, (size_t)(3 * p->n_observed) * sizeof(double)));
  return QP_OK;
}

/* Copies the sky map's values at positions [first, first + count) into x, checking each (x
 * NULL: checks only). */
static qp_err qp_inputs_gather(const qp_problem *p, const double *sky, int64_t first, int64_t count,
                               const char *path, const char *what, int positive, double *x) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t pixel = p->observed[first + k];
    double v = sky[pixel];
    QP_CHECK(isfinite(v) && !qp_is_unseen(v), QP_ERR_INPUT,
             "%s '%s' has a %s value at observed RING pixel %lld", what, path,
             isnan(v) ? "NaN" : (isfinite(v) ? "UNSEEN" : "infinite"), (long long)pixel);
    QP_CHECK(!positive || v > 0.0, QP_ERR_INPUT,
             "%s '%s' has a non-positive variance %g at observed RING pixel %lld", what, path, v,
             (long long)pixel);
    /* The quadratic forms square the values: one whose square overflows can only give inf or
     * NaN downstream (1e200 at one pixel made /spectra/cl NaN with exit 0). */
    QP_CHECK(fabs(v) <= QP_INPUTS_VALUE_MAX, QP_ERR_INPUT,
             "%s '%s' has the value %g at observed RING pixel %lld, whose square overflows a "
             "double (|value| must be <= %.3g): rescale the map (e.g. K to uK is 1e6)",
             what, path, v, (long long)pixel, QP_INPUTS_VALUE_MAX);
    if (x) x[k] = v;
  }
  return QP_OK;
}

qp_err qp_inputs_read_fields(const qp_problem *p, const char *path, const char *what, int positive,
                             double *sky, double *x) {
  qp_healpix_info info;
  QP_CALL(qp_fits_map_info(path, &info));
  QP_CHECK(info.nside == p->nside, QP_ERR_INPUT,
           "%s '%s' has nside %lld but the mask '%s' has nside %lld", what, path,
           (long long)info.nside, p->cfg->mask, (long long)p->nside);
  int column[3];
  QP_CALL(qp_inputs_columns(p, path, what, &info, column));
  const int64_t first[3] = {0, p->n_obs_t, p->n_obs_t};
  const int64_t count[3] = {p->n_obs_t, p->n_obs_p, p->n_obs_p};
  const int64_t offset[3] = {0, p->n_obs_t, p->n_obs_t + p->n_obs_p};
  for (int f = 0; f < 3; ++f) {
    if (column[f] < 0) continue;
    QP_CALL(qp_fits_map_read(path, &info, column[f], sky));
    QP_CALL(qp_inputs_gather(p, sky, first[f], count[f], path, what, positive,
                             x ? x + offset[f] : NULL));
  }
  return QP_OK;
}

/* Adds the diagonal entries of n that window w (n's local columns col0.., w's width) holds to
 * sum[field] (T's entries, then Q's and U's). */
static void qp_inputs_noise_diagonal(const qp_problem *p, const qp_matrix *n,
                                     const qp_host_window *w, int64_t col0, int64_t width,
                                     double sum[2]) {
  for (int64_t lj = col0; lj < col0 + width; ++lj) {
    const int64_t gj = qp_matrix_global_col(n, lj), li = qp_matrix_local_row(n, gj);
    if (li >= 0) sum[gj >= p->n_obs_t] += w->data[li + (lj - col0) * w->ld];
  }
}

/* The mean of N's diagonal over each field from each rank's partial sums (collective: called
 * once every rank has read its blocks, after they agreed that all did). */
static qp_err qp_inputs_noise_means(qp_problem *p, double sum[2]) {
  QP_CALL(qp_linalg_sum_partials(p->noise.ops, sum, 2));
  for (int f = 0; f < 2; ++f) {
    const int64_t count = f == 0 ? p->n_obs_t : p->n_pix - p->n_obs_t;
    p->noise_field_mean[f] = count > 0 ? sum[f] / (double)count : 0.0;
  }
  return QP_OK;
}

/* A dense noise covariance `dataset` of `file` (n_pix x n_pix, symmetric) into n, created
 * already on the run's backend; this rank's sums of its diagonal by field into sum. */
static qp_err qp_inputs_read_dense(qp_problem *p, const char *file, const char *dataset,
                                   qp_matrix *n, double sum[2]) {
  const int64_t rows = p->n_pix;
  /* Read on the host (into N itself on a host backend), checked there, then handed over. */
  qp_host_window w = {0};
  qp_err err = QP_OK;
  sum[0] = sum[1] = 0.0;
  const qp_grid *g = n->grid;
  if (!g && qp_host_panel(p) >= n->local_cols) {
    /* One process, whole: one read, then every entry against its mirror in memory. */
    QP_CALL(qp_host_window_open(n, 0, n->local_cols, QP_ACCESS_WRITE, &w));
    QP_CALL_GOTO(qp_h5_matrix_read_symmetric(file, dataset, rows, w.data), fail);
    qp_inputs_noise_diagonal(p, n, &w, 0, n->local_cols, sum);
    QP_CALL(qp_host_window_close(&w));
    return QP_OK;
  }
  /* Distributed, or in panels of columns (a device run under memory.host_limit): each rank
   * reads its own blocks (one process: a panel's columns in one read), a panel of its local
   * columns at a time, and checks each entry against its mirror in the file; nothing of size
   * n_pix^2 goes through one rank, nor more than a panel of it through the host at once. */
  for (int64_t col0 = 0, width; col0 < n->local_cols; col0 += width) {
    width = qp_host_panel_width(p, n->local_cols, col0);
    QP_CALL(qp_host_window_open(n, col0, width, QP_ACCESS_WRITE, &w));
    if (g)
      QP_CALL_GOTO(qp_h5_matrix_read_local_columns(file, dataset, rows, g->block, g->nprow,
                                                   g->npcol, g->myrow, g->mycol, col0, width,
                                                   w.data, w.ld),
                   fail);
    else
      QP_CALL_GOTO(qp_h5_matrix_read_columns(file, dataset, rows, col0, width, w.data, w.ld), fail);
    qp_inputs_noise_diagonal(p, n, &w, col0, width, sum);
    QP_CALL(qp_host_window_close(&w));
  }
  return QP_OK;
fail:
  qp_host_window_discard(&w);
  return err;
}

/* Its shape against the data vector's, naming `key` (noise or noise2). */
static qp_err qp_inputs_dense_shape(const qp_problem *p, const char *key, const char *file,
                                    const char *dataset) {
  int64_t rows, cols;
  QP_CALL(qp_h5_matrix_info(file, dataset, &rows, &cols));
  QP_CHECK(rows == p->n_pix && cols == p->n_pix, QP_ERR_INPUT,
           "%s covariance '%s' dataset '%s' is %lld x %lld, but the data vector has %lld "
           "entries (T at the observed pixels of the mask '%s', then Q and U at those of "
           "mask_pol)",
           key, file, dataset, (long long)rows, (long long)cols, (long long)p->n_pix, p->cfg->mask);
  return QP_OK;
}

static qp_err qp_inputs_dense_noise(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  QP_CALL(qp_inputs_dense_shape(p, "noise", cfg->noise_file, cfg->noise_dataset));
  QP_CALL(
      qp_matrix_create(p->ops, QP_TERM_NOISE, QP_TERM_PERSISTENT, p->n_pix, p->n_pix, &p->noise));
  QP_CALL(
      qp_inputs_read_dense(p, cfg->noise_file, cfg->noise_dataset, &p->noise, p->noise_field_mean));
  return QP_OK;
}

qp_err qp_inputs_read_noise2(qp_problem *p, qp_matrix *into) {
  const qp_config *cfg = p->cfg;
  double sum[2];
  qp_err err = qp_inputs_dense_shape(p, "noise2", cfg->noise2_file, cfg->noise2_dataset);
  if (err == QP_OK) err = qp_inputs_read_dense(p, cfg->noise2_file, cfg->noise2_dataset, into, sum);
  /* Distributed, a rank may find a bad block alone: every rank learns it here. */
  QP_CALL(qp_comm_agree(err));
  return QP_OK;
}

/* The maps checked, each read and let go (they are read again, a batch at a time, where they
 * are used: qp_maps_to_matrix), and a variance map read (rank 0 only with MPI); for
 * cross-spectra maps2 after the maps and noise2's variance map. */
static qp_err qp_inputs_read_map_files(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  for (int m = 0; m < cfg->n_maps; ++m)
    QP_CALL(qp_inputs_read_fields(p, cfg->maps[m], "map", 0, p->sky, NULL));
  for (int m = 0; m < cfg->n_maps2; ++m)
    QP_CALL(qp_inputs_read_fields(p, cfg->maps2[m], "map (maps2)", 0, p->sky, NULL));
  if (cfg->noise_kind == QP_NOISE_VARIANCE_MAP)
    QP_CALL(qp_inputs_read_fields(p, cfg->noise_file, "noise variance map", 1, p->sky,
                                  p->noise_variance));
  if (cfg->n_maps2 > 0 && cfg->noise2_kind == QP_NOISE_VARIANCE_MAP)
    QP_CALL(qp_inputs_read_fields(p, cfg->noise2_file, "noise variance map (noise2)", 1, p->sky,
                                  p->noise_variance_b));
  return QP_OK;
}

qp_err qp_inputs_read_data(qp_problem *p) {
  const qp_config *cfg = p->cfg;
  /* The allocations agreed on first: a rank refused one (out of memory) must not leave the
   * others waiting in the collectives below (qp_inputs_read_geometry). */
  const int cross = cfg->n_maps2 > 0;
  qp_err err = QP_OK;
  if (cfg->noise_kind != QP_NOISE_COVARIANCE)
    err =
        QP_ALLOC_DOUBLES(QP_TERM_NOISE_VARIANCE, QP_TERM_PERSISTENT, p->n_pix, &p->noise_variance);
  /* A dense noise2 is read into C_B's buffer in covariance_setup (qp_inputs_read_noise2). */
  if (err == QP_OK && cross && cfg->noise2_kind != QP_NOISE_COVARIANCE)
    err = QP_ALLOC_DOUBLES(QP_TERM_NOISE_VARIANCE_B, QP_TERM_PERSISTENT, p->n_pix,
                           &p->noise_variance_b);
  QP_CALL(qp_comm_agree(err));
  if (cross && cfg->noise2_kind == QP_NOISE_VARIANCE)
    for (int64_t k = 0; k < p->n_pix; ++k)
      p->noise_variance_b[k] = k < p->n_obs_t ? cfg->noise2_variance : cfg->noise2_variance_pol;
  switch (cfg->noise_kind) {
  case QP_NOISE_VARIANCE:
  case QP_NOISE_VARIANCE_MAP:
    if (cfg->noise_kind == QP_NOISE_VARIANCE)
      for (int64_t k = 0; k < p->n_pix; ++k)
        p->noise_variance[k] = k < p->n_obs_t ? cfg->noise_variance : cfg->noise_variance_pol;
    break;
  case QP_NOISE_COVARIANCE:
    /* Distributed, a rank may find a bad block alone: every rank learns it here. */
    QP_CALL(qp_comm_agree(qp_inputs_dense_noise(p)));
    QP_CALL(qp_inputs_noise_means(p, p->noise_field_mean));
    break;
  }
  QP_CALL(qp_comm_agree(qp_inputs_reader() ? qp_inputs_read_map_files(p) : QP_OK));
  if (p->noise_variance_b)
    QP_CALL(qp_comm_bcast(p->noise_variance_b, (size_t)p->n_pix * sizeof(double)));
  if (p->noise_variance) {
    QP_CALL(qp_comm_bcast(p->noise_variance, (size_t)p->n_pix * sizeof(double)));
    double sum[2] = {0.0, 0.0};
    for (int64_t k = 0; k < p->n_pix; ++k)
      sum[k >= p->n_obs_t] += p->noise_variance[k];
    for (int f = 0; f < 2; ++f) {
      const int64_t count = f == 0 ? p->n_obs_t : p->n_pix - p->n_obs_t;
      p->noise_field_mean[f] = count > 0 ? sum[f] / (double)count : 0.0;
    }
  }
  return QP_OK;
}
