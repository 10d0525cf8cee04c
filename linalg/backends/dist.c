/* dist.c: the distributed backend, PBLAS and ScaLAPACK over the BLACS grid of grid.h.
 *
 * Matrices are block-cyclic (matrix.h); every operation is called on the whole matrix
 * (IA = JA = 1) but gemm_sub, a product of windows. ScaLAPACK's INFO of a factorisation is the same
 * on every rank, so a "not positive definite" error is raised on all ranks together and none hangs.
 * syrk is a gemm here: PBLAS's pdsyrk fills one triangle and mirroring a distributed matrix needs a
 * transpose through a second copy; the full product costs twice the flops but no memory. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "condition_estimate.h"
#include "fault.h"
#include "matrix.h"
#include "qp_config.h"
#include "tiled.h"

#if QP_HAVE_SCALAPACK
#include "scalapack.h"

static const int qp_one = 1;

static qp_err qp_info_check(int info, const char *routine, const qp_matrix *a) {
  QP_CHECK(info >= 0, QP_ERR_LIBRARY, "%s on '%s' (stage %s): argument %d is invalid", routine,
           a->name, qp_stage_label(), -info);
  return QP_OK;
}

static qp_err qp_dist_potrf(qp_matrix *a) {
  int n = (int)a->rows, info = 0;
  pdpotrf_("L", &n, a->data, &qp_one, &qp_one, a->desc, &info, 1);
  info = QP_FAULT_INFO("pdpotrf", info);
  QP_CALL(qp_info_check(info, "pdpotrf", a));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%d x %d) is not positive definite: its leading minor of "
           "order %d (row %d) is not positive",
           qp_stage_label(), a->name, n, n, info, info);
  return QP_OK;
}

static qp_err qp_dist_trtri(qp_matrix *l) {
  int n = (int)l->rows, info = 0;
  pdtrtri_("L", "N", &n, l->data, &qp_one, &qp_one, l->desc, &info, 1, 1);
  info = QP_FAULT_INFO("pdtrtri", info);
  QP_CALL(qp_info_check(info, "pdtrtri", l));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF, "stage %s: triangular factor '%s' is singular at row %d",
           qp_stage_label(), l->name, info);
  return QP_OK;
}

static qp_err qp_dist_triangular(int solve, qp_side side, qp_trans trans, double alpha,
                                 const qp_matrix *l, qp_matrix *b) {
  int m = (int)b->rows, n = (int)b->cols;
  const char *s = side == QP_LEFT ? "L" : "R", *t = trans ? "T" : "N";
  if (solve)
    pdtrsm_(s, "L", t, "N", &m, &n, &alpha, l->data, &qp_one, &qp_one, l->desc, b->data, &qp_one,
            &qp_one, b->desc, 1, 1, 1, 1);
  else
    pdtrmm_(s, "L", t, "N", &m, &n, &alpha, l->data, &qp_one, &qp_one, l->desc, b->data, &qp_one,
            &qp_one, b->desc, 1, 1, 1, 1);
  return QP_OK;
}

static qp_err qp_dist_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                           qp_matrix *b) {
  return qp_dist_triangular(0, side, trans, alpha, l, b);
}

static qp_err qp_dist_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                           qp_matrix *b) {
  return qp_dist_triangular(1, side, trans, alpha, l, b);
}

static qp_err qp_dist_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                           const qp_matrix *b, double beta, qp_matrix *c) {
  int m = (int)c->rows, n = (int)c->cols, k = (int)(ta ? a->rows : a->cols);
  pdgemm_(ta ? "T" : "N", tb ? "T" : "N", &m, &n, &k, &alpha, a->data, &qp_one, &qp_one, a->desc,
          b->data, &qp_one, &qp_one, b->desc, &beta, c->data, &qp_one, &qp_one, c->desc, 1, 1);
  return QP_OK;
}

static qp_err qp_dist_gemm_sub(qp_trans ta, qp_trans tb, int64_t m, int64_t n, int64_t k,
                               double alpha, const qp_matrix *a, int64_t ai, int64_t aj,
                               const qp_matrix *b, int64_t bi, int64_t bj, double beta,
                               qp_matrix *c, int64_t ci, int64_t cj) {
  int im = (int)m, in = (int)n, ik = (int)k;
  int ia = (int)ai + 1, ja = (int)aj + 1, ib = (int)bi + 1, jb = (int)bj + 1, ic = (int)ci + 1,
      jc = (int)cj + 1;
  pdgemm_(ta ? "T" : "N", tb ? "T" : "N", &im, &in, &ik, &alpha, a->data, &ia, &ja, a->desc,
          b->data, &ib, &jb, b->desc, &beta, c->data, &ic, &jc, c->desc, 1, 1);
  return QP_OK;
}

static qp_err qp_dist_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                           qp_matrix *c) {
  return qp_dist_gemm(trans, trans ? QP_NOTRANS : QP_TRANS, alpha, a, a, beta, c);
}

static qp_err qp_dist_potrs(const qp_matrix *l, qp_matrix *b) {
  int n = (int)l->rows, nrhs = (int)b->cols, info = 0;
  pdpotrs_("L", &n, &nrhs, l->data, &qp_one, &qp_one, l->desc, b->data, &qp_one, &qp_one, b->desc,
           &info, 1);
  QP_CALL(qp_info_check(info, "pdpotrs", l));
  return QP_OK;
}

static qp_err qp_dist_getrf(qp_matrix *a, int *pivots) {
  int n = (int)a->rows, info = 0;
  pdgetrf_(&n, &n, a->data, &qp_one, &qp_one, a->desc, pivots, &info);
  info = QP_FAULT_INFO("pdgetrf", info);
  QP_CALL(qp_info_check(info, "pdgetrf", a));
  QP_CHECK(info == 0, QP_ERR_NOT_POSDEF,
           "stage %s: matrix '%s' (%d x %d) is singular: U(%d,%d) = 0", qp_stage_label(), a->name,
           n, n, info, info);
  return QP_OK;
}

/* SMW's solves with pdgetrf's factors are the tiled getrs (tiled_lu.c, the cpu table as the
 * local one; ScaLAPACK's pivot layout is its): pdgetrs's PBLAS solves took buffers of their
 * own the model could not see, 37 MiB a rank above the prediction in fisher_run's solve with
 * G (n_modes 2300 on 1 x 2), and ran 2.4x slower there; the tiled one works in the held
 * blocks below, predicted to the byte (docs/distributed.md). */
static qp_err qp_dist_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  return qp_tiled_getrs(lu, pivots, b);
}

/* The tiled algorithms' blocks (tiled.h), held for a run that solves with the LU (SMW). */
static qp_err qp_dist_hold_workspace(const char *term, size_t bytes) {
  return qp_tiled_hold(term, QP_SPACE_HOST, bytes);
}

/* b's window <- a's window at the same global place on the same grid: every rank already
 * holds the entries it receives (a global index has one local index whatever the matrix's
 * size), so a local copy does it, with none of pdgemr2d's messages and the buffers it
 * allocates outside the budget (8.7 MiB a rank, not in the model, for Z's alignment in the
 * projection route's fisher_run at n_pix 1984 on 1 x 2: docs/distributed.md). */
static void qp_dist_copy_in_place(int64_t rows, int64_t cols, const qp_matrix *a, int64_t i0,
                                  int64_t j0, qp_matrix *b) {
  /* The local rows in [i0, i0 + rows): one run, since global rows grow with local ones. */
  int64_t lo = a->local_rows, hi = 0;
  for (int64_t li = 0; li < a->local_rows; ++li) {
    const int64_t gi = qp_matrix_global_row(a, li);
    if (gi >= i0 && gi < i0 + rows) {
      if (li < lo) lo = li;
      hi = li + 1;
    }
  }
  if (lo >= hi) return;
  for (int64_t lj = 0; lj < a->local_cols; ++lj) {
    const int64_t gj = qp_matrix_global_col(a, lj);
    if (gj >= j0 && gj < j0 + cols)
      memcpy(b->data + lo + lj * b->ld, a->data + lo + lj * a->ld,
             (size_t)(hi - lo) * sizeof(double));
  }
}

static qp_err qp_dist_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                               int64_t aj, qp_matrix *b, int64_t bi, int64_t bj) {
  QP_CHECK(a->grid && b->grid, QP_ERR_INTERNAL,
           "copy between '%s' and '%s': both must be "
           "distributed",
           a->name, b->name);
  if (a->grid == b->grid && ai == bi && aj == bj) {
    qp_dist_copy_in_place(rows, cols, a, ai, aj, b);
    return QP_OK;
  }
  /* A run that holds the tiled blocks (the harmonic routes: the model's) copies in them:
   * pdgemr2d's message buffers are outside the budget (34.7% of fisher_run's peak above the
   * model on SMW's field blocks, n_modes 2300 on 1 x 2). Every rank holds them or none. */
  if (qp_tiled_holding()) return qp_tiled_copy_sub(rows, cols, a, ai, aj, b, bi, bj);
  int m = (int)rows, n = (int)cols, ia = (int)ai + 1, ja = (int)aj + 1, ib = (int)bi + 1,
      jb = (int)bj + 1;
  pdgemr2d_(&m, &n, a->data, &ia, &ja, a->desc, b->data, &ib, &jb, b->desc, &a->desc[1]);
  return QP_OK;
}

static qp_err qp_dist_transpose(const qp_matrix *a, qp_matrix *b) {
  int m = (int)b->rows, n = (int)b->cols;
  const double one = 1.0, zero = 0.0;
  pdtran_(&m, &n, &one, a->data, &qp_one, &qp_one, a->desc, &zero, b->data, &qp_one, &qp_one,
          b->desc);
  return QP_OK;
}

/* The grid spans every rank (grid.h), so the matrices' partial sums are summed over all. */
static qp_err qp_dist_sum_partials(double *x, int64_t count) { return qp_comm_sum(x, count); }

/* pdlange's '1' work is LOCc(N) doubles: this rank's columns (plus a block, to be safe). */
static qp_err qp_dist_norm1(const qp_matrix *a, double *out) {
  int m = (int)a->rows, n = (int)a->cols;
  double *work = malloc((size_t)(a->local_cols + a->grid->block + 1) * sizeof *work);
  QP_CHECK(work, QP_ERR_NOMEM, "pdlange on '%s': no memory for its workspace", a->name);
  *out = pdlange_("1", &m, &n, a->data, &qp_one, &qp_one, a->desc, work, 1);
  free(work);
  return QP_OK;
}

/* pocon and gecon: the serial backends' estimator (dlacn2, condition_estimate.h) over
 * distributed solves, so that a guard judges the same figure on any number of ranks.
 * ScaLAPACK's pdpocon runs its own estimator (pdlacon), which on a QU nside 8 case with dense
 * correlated noise gave rcond(C) 2.24e-3 on 2 and 4 ranks against dpocon's 3.63e-4 on one
 * (exact 2.66e-4), and rcond(N_eff) 0.0324 against 0.00392: a guard 6-8x laxer under MPI
 * (issue 38). dlacn2 runs on every rank on the same replicated n-vector; each product puts it
 * into a block-cyclic n x 1 vector (held by process column 0), solves with the factor's
 * triangles by pdtrsv, and sums it back to every rank (each entry comes from one rank and
 * zeros: the sum is exact, so every rank's loop takes the same turns). O(n) scratch. */
typedef struct {
  const qp_matrix *factor;
  qp_factor_kind kind;
  double *local;      /* this rank's rows of the vector (process column 0), else unused */
  int64_t local_rows; /* of the vector, on this rank's process row */
  int desc[9];
} qp_dist_estimate;

static qp_err qp_dist_inverse_apply(void *context, int kase, double *x) {
  const qp_dist_estimate *e = context;
  const qp_matrix *f = e->factor;
  const qp_grid *g = f->grid;
  const int n = (int)f->rows, holds = g->mycol == 0;
  if (holds)
    for (int64_t li = 0; li < e->local_rows; ++li)
      e->local[li] = x[qp_bc_global_index(li, g->block, g->myrow, g->nprow)];
  qp_triangular_solve solves[2];
  qp_condition_solves(e->kind, kase, solves);
  for (int s = 0; s < 2; ++s)
    pdtrsv_(solves[s].upper ? "U" : "L", solves[s].transpose ? "T" : "N",
            solves[s].unit ? "U" : "N", &n, f->data, &qp_one, &qp_one, f->desc, e->local, &qp_one,
            &qp_one, e->desc, &qp_one, 1, 1, 1);
  memset(x, 0, (size_t)n * sizeof *x);
  if (holds)
    for (int64_t li = 0; li < e->local_rows; ++li)
      x[qp_bc_global_index(li, g->block, g->myrow, g->nprow)] = e->local[li];
  return qp_comm_sum(x, n);
}

static qp_err qp_dist_condition(qp_factor_kind kind, const qp_matrix *a, double anorm,
                                double *rcond) {
  const qp_grid *g = a->grid;
  const int64_t local_rows = qp_bc_local_count(a->rows, g->block, g->myrow, g->nprow);
  qp_dist_estimate e = {.factor = a, .kind = kind, .local_rows = local_rows};
  const int lld = local_rows > 0 ? (int)local_rows : 1;
  const int desc[9] = {1, g->context, (int)a->rows, 1, g->block, g->block, 0, 0, lld};
  memcpy(e.desc, desc, sizeof desc);
  e.local = malloc((size_t)lld * sizeof *e.local);
  QP_CHECK(e.local, QP_ERR_NOMEM, "condition estimate of '%s': no memory for its vector", a->name);
  const qp_err err =
      qp_condition_estimate(a->rows, anorm, qp_dist_inverse_apply, &e, a->name, rcond);
  free(e.local);
  return err;
}

static qp_err qp_dist_pocon(const qp_matrix *l, double anorm, double *rcond) {
  return qp_dist_condition(QP_FACTOR_CHOLESKY, l, anorm, rcond);
}

static qp_err qp_dist_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  return qp_dist_condition(QP_FACTOR_LU, lu, anorm, rcond);
}

static const qp_linalg_ops qp_dist_ops_table = {
    .name = "dist",
    .distributed = 1,
    .potrf = qp_dist_potrf,
    .trtri = qp_dist_trtri,
    .trmm = qp_dist_trmm,
    .trsm = qp_dist_trsm,
    .gemm = qp_dist_gemm,
    .gemm_sub = qp_dist_gemm_sub,
    .syrk = qp_dist_syrk,
    .potrs = qp_dist_potrs,
    .getrf = qp_dist_getrf,
    .getrs = qp_dist_getrs,
    .copy_sub = qp_dist_copy_sub,
    .norm1 = qp_dist_norm1,
    .pocon = qp_dist_pocon,
    .gecon = qp_dist_gecon,
    .transpose = qp_dist_transpose,
    .clear_upper = qp_matrix_clear_upper_local, /* each rank its own entries */
    .scale = qp_matrix_scale_local,
    .sum_partials = qp_dist_sum_partials,
    .moves_data = 1,
    .hold_workspace = qp_dist_hold_workspace,
    .release_workspaces = qp_tiled_release,
};

const qp_linalg_ops *qp_linalg_dist_ops(void) { return &qp_dist_ops_table; }

qp_err qp_linalg_dist_start(const qp_linalg_ops **ops) {
  *ops = NULL;
  QP_CHECK(qp_grid_current(), QP_ERR_MPI,
           "backend 'dist' needs its MPI process grid (qmlpipe sets it up when started with "
           "mpiexec or srun)");
  *ops = &qp_dist_ops_table;
  return QP_OK;
}

#else

const qp_linalg_ops *qp_linalg_dist_ops(void) { return NULL; }

#endif
