/* test_hostdev_host_panels: C (and fisher_run's N_eff) built on the host a panel of columns at
 * a time under memory.host_limit on a device backend (pixel_matrices.h, planner.c,
 * docs/memory-model.md "C in panels"), on the hostdev device emulation (tests/support/hostdev.h).
 * Projection problems with fewer modes than pixels, where C's host staging (n_pix^2) is the
 * run's host peak, and pixel-direct ones (T and QU), whose products and bin matrices are
 * built the same way (their chunks stay whole: the host side is judged at the least panel):
 *  - T, and TQU with the switch (lmax < lmax_signal: N_eff = N + S_fixed built again in
 *    fisher_run, in panels too): a host_limit equal to the host peak the model predicts at a
 *    chosen panel makes the planner pick the widest panel that fits it (that one, or wider
 *    where another stage's host peak is above what it leaves), a last panel narrower than the
 *    others; F, b, y and C_hat equal those of the same run with C whole to the bit (every
 *    entry of C is the same sum wherever its panel starts), and the cpu run's to 1e-12; both
 *    spaces' tracked peaks and terms equal the model's exactly (budget_check.h), and the
 *    route's reason names the panel;
 *  - a limit below what a panel of one column leaves is refused before anything is
 *    allocated, naming memory.host_limit.
 * The projection cases also check that V^T is built in panels of rows and Z read for the
 * noise bias in panels of columns (their host staging terms), and a T SMW case builds and
 * whitens V^T in panels of rows and builds I + K Lambda and reads G in panels of columns; on
 * both harmonic routes F's block sums read W's field blocks in panels of columns (F to the
 * bit); a T projection case with a dense N reads it in panels of
 * columns, and refuses the same file made asymmetric in its last panel.
 * Under mpiexec (tests/mpi/CMakeLists.txt: 2 and 4 ranks, grid block 8) the same on backend
 * hostdev-dist against dist: each rank builds its own local columns in panels (no collective
 * inside), the narrowest panel any rank needs is every rank's. */
#include <string.h>

#include "block_cyclic.h"
#include "budget_check.h"
#include "comm.h"
#include "driver.h"
#include "fixture.h"
#include "h5_matrix.h"
#include "host_window.h"
#include "results_compare.h"
#include "terms.h"
#include "test_util.h"

/* The route of the case being checked: projection (or SMW: method 1), or pixel-direct. */
static qp_path route = QP_PATH_HARMONIC;
static int method = 2;

static void set_projection(qp_config *cfg, const char *backend, double host_limit) {
  cfg->path = route;
  cfg->harmonic_method = method;
  cfg->host_limit = host_limit;
  cfg->device_limit = 0;
  snprintf(cfg->backend, sizeof cfg->backend, "%s", backend);
}

/* The largest rank's host peak plus overhead of the hostdev plan of cfg with its pixel
 * matrices in panels of `panel` local columns (0: whole), and pixel-direct's chunks at one
 * product and bin matrix when `least_chunks`: the limit that plan fits to the byte. */
static double host_need_chunks_at(qp_config *cfg, int64_t panel, int least_chunks) {
  qp_problem p;
  qp_meter_sample baseline;
  set_projection(cfg, "hostdev", 0);
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  qp_model_dims dims = p.plan->model_dims;
  const size_t overhead = p.plan->model.overhead_bytes;
  qp_problem_free(&p);
  dims.host_panel = panel;
  if (least_chunks) dims.fisher_chunk = dims.spectra_chunk = 1;
  qp_model model;
  TEST_OK(qp_model_predict(&dims, &model));
  double need = (double)(qp_model_peak(&model) + overhead);
  TEST_OK(qp_comm_max(&need, 1));
  return need;
}

static double host_need_at(qp_config *cfg, int64_t panel) {
  return host_need_chunks_at(cfg, panel, 0);
}

/* The host staging the model gives stage s (0: none). */
static size_t staging_of(const qp_model *m, qp_stage_id s) {
  for (int i = 0; i < m->n_terms; ++i)
    if (strcmp(m->terms[i].name, QP_TERM_HOST_STAGING) == 0 && m->terms[i].stage_alloc == (int)s)
      return m->terms[i].bytes;
  return 0;
}

/* Projection in panels: V^T's window in basis_setup is host_panel local rows by every local
 * column, as is the maps' window in spectra_run, and the bias's window in fisher_run a panel of Z's
 * columns (qp_model_mode_panel), each below the whole matrix's; with the tracked terms equal to
 * these (budget_check.h), the stages open no wider window. */
static void check_projection_windows(const qp_problem *p, const char *what) {
  const qp_model_dims *d = &p->plan->model_dims;
  const int64_t local_rows = d->grid_rows > 0
                                 ? qp_bc_local_count(p->n_pix, d->block, d->grid_row, d->grid_rows)
                                 : p->n_pix;
  const int64_t mode_cols = d->grid_rows > 0
                                ? qp_bc_local_count(p->n_modes, d->block, d->grid_col, d->grid_cols)
                                : p->n_modes;
  const int64_t panel_rows = d->host_panel < local_rows ? d->host_panel : local_rows;
  const int64_t bias_cols = d->grid_rows > 0 ? qp_bc_local_count(qp_model_mode_panel(d), d->block,
                                                                 d->grid_col, d->grid_cols)
                                             : qp_model_mode_panel(d);
  const size_t basis = staging_of(&p->plan->model, QP_STAGE_BASIS_SETUP),
               fisher = staging_of(&p->plan->model, QP_STAGE_FISHER_RUN);
  TEST_ASSERT(basis == (size_t)(panel_rows * mode_cols) * sizeof(double) && panel_rows < local_rows,
              "%s: basis_setup's staging %zu B, not V^T's panel of %lld of %lld rows", what, basis,
              (long long)panel_rows, (long long)local_rows);
  /* On a grid the bias's panel is whole blocks (qp_model_mode_panel): at least one. */
  int64_t want = d->host_panel;
  if (d->grid_rows > 0) want = want / d->block > 1 ? want / d->block * d->block : d->block;
  TEST_ASSERT(fisher >= (size_t)(local_rows * bias_cols) * sizeof(double) &&
                  bias_cols == (want < mode_cols ? want : mode_cols),
              "%s: fisher_run's staging %zu B, bias panel %lld of %lld columns (want %lld)", what,
              fisher, (long long)bias_cols, (long long)mode_cols, (long long)want);
  /* spectra_run writes the batch of maps a map at a time, a panel of its rows at a time
   * (inputs_maps.c): one column's panel, whatever the batch. */
  const size_t spectra = staging_of(&p->plan->model, QP_STAGE_SPECTRA_RUN);
  TEST_ASSERT(spectra == (size_t)panel_rows * sizeof(double),
              "%s: spectra_run's staging %zu B, not one map's panel of %lld of %lld rows", what,
              spectra, (long long)panel_rows, (long long)local_rows);
  if (qp_comm_rank() == 0)
    printf("  V^T and the maps in panels of %lld of %lld local rows, Z of %lld of %lld local "
           "columns\n",
           (long long)panel_rows, (long long)local_rows, (long long)bias_cols,
           (long long)mode_cols);
}

/* A panel of a matrix's columns as the plan cuts them, worked out here from the grid (the
 * model's qp_model_panel_of is what it checks): host_panel, on a grid whole blocks on every
 * process column (at least one), at most `lines`; with this rank's local rows of a matrix of
 * `rows` rows, its local columns of the panel and of all `lines`. */
typedef struct panel_shape {
  int64_t want, rows, cols, whole;
} panel_shape;

static panel_shape panel_of(const qp_model_dims *d, int64_t rows, int64_t lines) {
  const int grid = d->grid_rows > 0;
  panel_shape s = {d->host_panel, rows, 0, lines};
  if (grid) s.want = (s.want / d->block > 1 ? s.want / d->block : 1) * d->block * d->grid_cols;
  if (s.want > lines) s.want = lines;
  s.cols = s.want;
  if (grid) {
    s.rows = qp_bc_local_count(rows, d->block, d->grid_row, d->grid_rows);
    s.cols = qp_bc_local_count(s.want, d->block, d->grid_col, d->grid_cols);
    s.whole = qp_bc_local_count(lines, d->block, d->grid_col, d->grid_cols);
  }
  return s;
}

/* The bytes of the model's term `name` (0: none). */
static size_t term_bytes(const qp_model *m, const char *name) {
  for (int i = 0; i < m->n_terms; ++i)
    if (strcmp(m->terms[i].name, name) == 0) return m->terms[i].bytes;
  return 0;
}

/* The harmonic routes in panels: fisher_run lines up W's field blocks (n_lm x n_lm each) a
 * panel of columns at a time, so the term W_field_blocks (tracked equal to it) is n_fields^2
 * local n_lm x panel windows, below the whole blocks where the panel is narrower. */
static void check_field_windows(const qp_problem *p, const char *what) {
  const qp_model_dims *d = &p->plan->model_dims;
  const panel_shape s = panel_of(d, d->n_lm, d->n_lm);
  const size_t bytes = term_bytes(&p->plan->model, QP_TERM_FIELD_BLOCKS),
               expect =
                   (size_t)(d->n_fields * d->n_fields) * (size_t)(s.rows * s.cols) * sizeof(double);
  TEST_ASSERT(qp_model_field_panel(d) == s.want && bytes == expect,
              "%s: W's field blocks %zu B in panels of %lld columns, want %zu B in panels of "
              "%lld of %lld",
              what, bytes, (long long)qp_model_field_panel(d), expect, (long long)s.want,
              (long long)d->n_lm);
  if (qp_comm_rank() == 0)
    printf("  W's field blocks in panels of %lld of %lld columns (%lld of %lld local)\n",
           (long long)s.want, (long long)d->n_lm, (long long)s.cols, (long long)s.whole);
}

/* SMW in panels: I + K Lambda is built, with K's columns lined up with it (SMW_COLUMNS), and
 * G read for the bias, a panel of qp_model_mode_panel columns at a time: fisher_run's staging
 * and K_columns are a local n_modes x panel window, below the whole n_modes^2. */
static void check_smw_windows(const qp_problem *p, const char *what) {
  const qp_model_dims *d = &p->plan->model_dims;
  const panel_shape s = panel_of(d, p->n_modes, p->n_modes);
  const size_t expect = (size_t)(s.rows * s.cols) * sizeof(double),
               columns = term_bytes(&p->plan->model, QP_TERM_SMW_COLUMNS),
               fisher = staging_of(&p->plan->model, QP_STAGE_FISHER_RUN);
  TEST_ASSERT(qp_model_mode_panel(d) == s.want && columns == expect && fisher == expect &&
                  s.cols < s.whole,
              "%s: K_columns %zu B and fisher_run's staging %zu B, want %zu B (panels of %lld of "
              "%lld local columns)",
              what, columns, fisher, expect, (long long)s.cols, (long long)s.whole);
  if (qp_comm_rank() == 0)
    printf("  I + K Lambda and G in panels of %lld of %lld columns (%lld of %lld local)\n",
           (long long)s.want, (long long)p->n_modes, (long long)s.cols, (long long)s.whole);
}

static void check_panels(qp_config *cfg, int64_t panel, const char *what) {
  qp_meter_sample baseline;
  qp_problem p;
  set_projection(cfg, "cpu", 0);
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  results cpu;
  results_keep(&p, &cpu);
  qp_problem_free(&p);
  /* C whole on the device backend: the bits the panels must give. */
  set_projection(cfg, "hostdev", 0);
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  results whole;
  results_keep(&p, &whole);
  TEST_ASSERT(p.plan->model_dims.host_panel == 0, "%s: panels without a limit", what);
  qp_problem_free(&p);

  const double need_whole = host_need_at(cfg, 0), need = host_need_at(cfg, panel);
  TEST_ASSERT(need < need_whole, "%s: panels of %lld do not lower the host peak", what,
              (long long)panel);
  set_projection(cfg, "hostdev", need);
  TEST_OK(qp_fixture_run(cfg, &p, &baseline));
  if (qp_comm_rank() == 0)
    printf("%s on %d rank(s), backend %s: n_pix %lld, n_modes %lld, host_limit %.0f B (C "
           "whole: %.0f B): host_panel %lld, host peak %zu B\n  route: %s\n",
           what, qp_comm_size(), p.ops->name, (long long)p.n_pix, (long long)p.n_modes, need,
           need_whole, (long long)p.plan->model_dims.host_panel, qp_model_peak(&p.plan->model),
           p.plan->path_reason);
  const int64_t planned = p.plan->model_dims.host_panel;
  TEST_ASSERT(strstr(p.plan->path_reason, "host windows in panels of") != NULL,
              "%s: the route's reason does not name the panels: %s", what, p.plan->path_reason);
  /* Several panels on every rank, the last narrower. */
  const qp_model_dims *d = &p.plan->model_dims;
  const int64_t local_cols =
      d->grid_rows > 0 ? qp_bc_local_count(p.n_pix, d->block, d->grid_col, d->grid_cols) : p.n_pix;
  TEST_ASSERT(local_cols > planned && local_cols % planned != 0,
              "%s: %lld local columns in panels of %lld: want several, the last narrower", what,
              (long long)local_cols, (long long)planned);
  const size_t np = (size_t)p.n_params, n_maps = (size_t)p.n_maps;
  TEST_ASSERT(memcmp(whole.fisher, p.fisher, np * np * sizeof(double)) == 0 &&
                  memcmp(whole.noise_bias, p.noise_bias, np * sizeof(double)) == 0 &&
                  memcmp(whole.yb, p.yb, np * n_maps * sizeof(double)) == 0 &&
                  memcmp(whole.cl, p.cl, np * n_maps * sizeof(double)) == 0,
              "%s: C in panels: not the bits of C whole", what);
  /* Pixel-direct: the chunks stay whole (the host side was judged at the least panel). */
  TEST_ASSERT(p.plan->model_dims.fisher_chunk == p.n_params &&
                  p.plan->model_dims.spectra_chunk == p.n_params,
              "%s: chunks %lld and %lld of %d parameters under the host limit", what,
              (long long)p.plan->model_dims.fisher_chunk,
              (long long)p.plan->model_dims.spectra_chunk, p.n_params);
  if (route == QP_PATH_HARMONIC && method == 2) check_projection_windows(&p, what);
  if (route == QP_PATH_HARMONIC && method == 1) check_smw_windows(&p, what);
  if (route == QP_PATH_HARMONIC) check_field_windows(&p, what);
  results_free(&whole);
  compare_exact_and_free(&cpu, &p, what);
  /* The widest panel that fits: `panel` or wider (another stage's host peak may stay above
   * what the narrower panels leave), one column more does not fit. */
  TEST_ASSERT(planned >= panel && host_need_at(cfg, planned) <= need &&
                  host_need_at(cfg, planned + 1) > need,
              "%s: planned panels of %lld, not the widest that fits from %lld", what,
              (long long)planned, (long long)panel);

  /* Below a panel of one column (and pixel-direct's chunks of one): refused before anything
   * is allocated. */
  set_projection(cfg, "hostdev", host_need_chunks_at(cfg, 1, 1) - 8);
  const qp_err err = qp_fixture_run(cfg, &p, &baseline);
  if (err == QP_OK) qp_problem_free(&p);
  TEST_ASSERT(err == QP_ERR_BUDGET && strstr(qp_error_message(), "memory.host_limit") &&
                  strstr(qp_error_message(), "already in panels of 1 local line ("),
              "%s below a panel of one column: got %s: %s", what, qp_err_name(err),
              qp_error_message());
  if (qp_comm_rank() == 0) printf("  refused: %s\n", qp_error_message());
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "%s: device bytes left after the refusal",
              what);
}

/* Writes fixture f (this rank's copy of its files), checks it, frees its config. */
static void check_case(qp_fixture *f, const char *name, int64_t panel, const char *what) {
  qp_config cfg;
  TEST_OK(qp_fixture_write_ranked(f, name, 8, &cfg));
  check_panels(&cfg, panel, what);
  qp_config_free(&cfg);
}

/* A dense N (qp_fixture_dense_noise, off-diagonal 0.1), read a panel of columns at a time
 * (each block checked against its mirror block in the file): checked as above; then the same
 * file with N(n-1, n-2) unlike its mirror (both in the last panel of columns on one rank) is
 * refused under the same limit, naming the entry, with nothing left on the device, and read
 * whole on the cpu backend too. */
static void check_dense_case(qp_fixture *f, const char *name, int64_t panel, const char *what) {
  qp_config cfg;
  char buf[96];
  TEST_OK(qp_fixture_write_ranked(f, name, 8, &cfg));
  const char *path = qp_fixture_rank_name(buf, sizeof buf, "host_panels_dense_noise.h5");
  TEST_OK(qp_fixture_dense_noise(&cfg, path, 0.1));
  check_panels(&cfg, panel, what);
  const double need = host_need_at(&cfg, panel);
  int64_t n = 0, cols = 0;
  TEST_OK(qp_h5_matrix_info(path, "covariance", &n, &cols));
  double *noise = malloc((size_t)(n * n) * sizeof *noise);
  TEST_ASSERT(noise != NULL, "no memory for N");
  if (!noise) return;
  TEST_OK(qp_h5_matrix_read(path, "covariance", n, n, noise));
  noise[(n - 1) + (n - 2) * n] += 0.5;
  TEST_OK(qp_h5_matrix_write(path, "covariance", n, n, noise));
  free(noise);
  set_projection(&cfg, "hostdev", need);
  qp_problem p;
  qp_meter_sample baseline;
  const qp_err err = qp_fixture_run(&cfg, &p, &baseline);
  if (err == QP_OK) qp_problem_free(&p);
  char entry[2][64];
  snprintf(entry[0], sizeof entry[0], "entry (%lld, %lld)", (long long)(n - 1), (long long)(n - 2));
  snprintf(entry[1], sizeof entry[1], "entry (%lld, %lld)", (long long)(n - 2), (long long)(n - 1));
  const char *msg = qp_error_message();
  TEST_ASSERT(err == QP_ERR_INPUT && strstr(msg, "is not symmetric") &&
                  (strstr(msg, entry[0]) || strstr(msg, entry[1])),
              "%s, N asymmetric at (%lld, %lld), read in panels: got %s: %s", what,
              (long long)(n - 1), (long long)(n - 2), qp_err_name(err), msg);
  if (qp_comm_rank() == 0) printf("  refused: %s\n", msg);
  qp_error_clear();
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "%s: device bytes left after the refusal",
              what);
  /* Read whole (cpu, or dist by blocks on a grid): the same refusal. */
  set_projection(&cfg, "cpu", 0);
  const qp_err whole = qp_fixture_run(&cfg, &p, &baseline);
  if (whole == QP_OK) qp_problem_free(&p);
  msg = qp_error_message();
  TEST_ASSERT(whole == QP_ERR_INPUT && strstr(msg, "is not symmetric") &&
                  (strstr(msg, entry[0]) || strstr(msg, entry[1])),
              "%s, N asymmetric, read whole: got %s: %s", what, qp_err_name(whole), msg);
  qp_error_clear();
  qp_config_free(&cfg);
}

int main(int argc, char **argv) {
  TEST_OK(qp_comm_init(&argc, &argv));
  /* T: nside 8 with a cut, l 2..11: 140 modes against a few hundred pixels. */
  qp_fixture t = {.nside = 8,
                  .cut_deg = 30,
                  .ell_min = 2,
                  .lmax = 11,
                  .lmax_signal = 11,
                  .bin_width = 3,
                  .sim_lmax = 11,
                  .n_maps = 2,
                  .noise_variance = 1.0,
                  .dl_flat = 100.0,
                  .seed = 41};
  check_case(&t, "host_panels_t", 100, "T projection");

  /* TQU with the switch: nside 4, l 2..5 in V (96 modes), S_fixed up to 8 joins N. */
  qp_fixture tqu = t;
  tqu.nside = 4;
  tqu.cut_deg = 20;
  tqu.lmax = 5;
  tqu.lmax_signal = tqu.sim_lmax = 8;
  tqu.bin_width = 2;
  tqu.seed = 42;
  tqu.fields = QP_FIELDS_TQU;
  tqu.ee_ratio = 0.3;
  tqu.bb_ratio = 0.1;
  tqu.te_corr = 0.4;
  check_case(&tqu, "host_panels_tqu", 20, "TQU projection, switched");

  /* T projection with a dense N: N read in panels of columns, N_eff Z for the bias (Z
   * lined up with it a panel at a time). */
  qp_fixture dense = t;
  dense.seed = 45;
  check_dense_case(&dense, "host_panels_dense", 100, "T projection, dense N");

  /* SMW on T: V^T built and whitened in panels of rows, where V^T (n_pix x n_modes) is the
   * host's largest window, I + K Lambda built and G and W's field blocks read in panels of
   * columns. */
  method = 1;
  check_case(&t, "host_panels_smw", 40, "T SMW");
  method = 2;

  /* Pixel-direct, T and QU at nside 4: C, the whitened noise's window, every product P_p in
   * fisher_run and the bin matrices in spectra_run in panels. */
  route = QP_PATH_PIXEL_DIRECT;
  qp_fixture pd = t;
  pd.nside = 4;
  pd.cut_deg = 20;
  pd.seed = 43;
  check_case(&pd, "host_panels_pd", 40, "T pixel-direct");
  pd.fields = QP_FIELDS_QU;
  pd.ee_ratio = 0.3;
  pd.bb_ratio = 0.1;
  pd.seed = 44;
  check_case(&pd, "host_panels_pd_qu", 40, "QU pixel-direct");
  qp_comm_finalize();
  return TEST_RETURN();
}
