/* tiled_bench.c: the tiled algorithms (linalg/tiled/tiled.h) against ScaLAPACK on the same
 * matrices.
 *
 *   mpiexec -n P qp-tiled-bench [--repeat R] [--block B] N [N ...]
 *
 * For each order N, on the grid qp_grid_init chooses for P ranks: potrf of an N x N SPD
 * matrix, trtri of its factor, trsm (left, lower, L^-1 B and L^-T B) of N x N/2 right-hand sides,
 * the gemm C = A^T A of an N x N/2 A (syrk's form), and getrf of an N x N general matrix whose
 * partial pivoting interchanges rows at every step (a permutation plus a small dense part): each by
 * ScaLAPACK (the dist table) and by the tiled algorithm with the cpu table as the local one (the
 * code a GPU per rank would run with cuda local), best of R, seconds over the ranks' slowest; then
 * tiled / ScaLAPACK and both rates against this run's dgemm on one rank's share (the BLAS floor of
 * the machine, measured here because these machines drift by 15% from run to run). Rank 0 prints.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "grid.h"
#include "matrix.h"
#include "tiled.h"

enum { FILL_GENERAL, FILL_SPD, FILL_PIVOTED };

static void fill(qp_matrix *m, int kind) {
  for (int64_t lj = 0; lj < m->local_cols; ++lj)
    for (int64_t li = 0; li < m->local_rows; ++li) {
      const int64_t gi = qp_matrix_global_row(m, li), gj = qp_matrix_global_col(m, lj);
      double v = 0.5 * sin(0.37 * (double)(gi + 1) * (double)(gj + 2));
      if (kind == FILL_SPD)
        v = (gi == gj ? (double)m->rows : 0.0) + 0.5 * sin(0.37 * (double)(gi + gj + 2));
      if (kind == FILL_PIVOTED) v = (gj == (7 * gi + 3) % m->rows ? 1.0 : 0.0) + v / m->rows;
      m->data[li + lj * m->ld] = v;
    }
}

typedef enum { OP_POTRF, OP_TRTRI, OP_TRSM_N, OP_TRSM_T, OP_GEMM, OP_GETRF, OP_COUNT } bench_op;
static const char *const op_names[OP_COUNT] = {"potrf",       "trtri",      "trsm L^-1 B",
                                               "trsm L^-T B", "gemm A^T A", "getrf"};
static int *pivots; /* getrf's: qp_linalg_pivot_count of A */

/* Seconds of one run of `op` (tiled or not), the slowest rank's; the inputs are made fresh. */
static double run_once(bench_op op, int tiled, int64_t n, qp_matrix *a, qp_matrix *l, qp_matrix *b,
                       qp_matrix *c) {
  qp_err err = QP_OK;
  if (op == OP_POTRF || op == OP_TRTRI) fill(a, FILL_SPD);
  if (op == OP_GETRF) fill(a, FILL_PIVOTED);
  if (op == OP_TRTRI && qp_linalg_potrf(a) != QP_OK) qp_comm_abort(1); /* untimed: its L */
  if (op == OP_TRSM_N || op == OP_TRSM_T) fill(b, FILL_GENERAL);
  (void)n;
  qp_comm_agree(QP_OK); /* start together */
  const double t0 = qp_clock_seconds();
  switch (op) {
  case OP_POTRF: err = tiled ? qp_tiled_potrf(a) : qp_linalg_potrf(a); break;
  case OP_TRTRI: err = tiled ? qp_tiled_trtri(a) : qp_linalg_trtri(a); break;
  case OP_GETRF: err = tiled ? qp_tiled_getrf(a, pivots) : qp_linalg_getrf(a, pivots); break;
  case OP_TRSM_N:
  case OP_TRSM_T: {
    const qp_trans t = op == OP_TRSM_T ? QP_TRANS : QP_NOTRANS;
    err = tiled ? qp_tiled_trsm(QP_LEFT, t, 1.0, l, b) : qp_linalg_trsm(QP_LEFT, t, 1.0, l, b);
    break;
  }
  case OP_GEMM:
    err = tiled ? qp_tiled_gemm(QP_TRANS, QP_NOTRANS, 1.0, b, b, 0.0, c)
                : qp_linalg_gemm(QP_TRANS, QP_NOTRANS, 1.0, b, b, 0.0, c);
    break;
  default: break;
  }
  double dt = qp_clock_seconds() - t0;
  if (err != QP_OK) {
    fprintf(stderr, "qp-tiled-bench: %s: %s\n", op_names[op], qp_error_message());
    qp_comm_abort(1);
  }
  qp_comm_max(&dt, 1);
  return dt;
}

static double op_flops(bench_op op, int64_t n) {
  const double nn = (double)n, k = (double)(n / 2);
  switch (op) {
  case OP_POTRF:
  case OP_TRTRI: return nn * nn * nn / 3.0;
  case OP_TRSM_N:
  case OP_TRSM_T: return nn * nn * k;
  case OP_GEMM: return 2.0 * k * k * nn;
  case OP_GETRF: return 2.0 * nn * nn * nn / 3.0;
  default: return 0;
  }
}

/* This rank's dgemm rate on its share: C (n/Q x n/Q) += A^T B with A, B of n/P rows, as the
 * local steps of a distributed gemm are; GFLOP/s, the slowest rank's. */
static double dgemm_rate(int64_t n, const qp_grid *g) {
  const int64_t m = n / g->npcol > 64 ? n / g->npcol : 64,
                k = n / g->nprow > 64 ? n / g->nprow : 64;
  qp_matrix a, b, c;
  const qp_linalg_ops *cpu = qp_linalg_cpu_ops();
  if (qp_matrix_create(cpu, "bench A", QP_TERM_TRANSIENT, k, m, &a) != QP_OK ||
      qp_matrix_create(cpu, "bench B", QP_TERM_TRANSIENT, k, m, &b) != QP_OK ||
      qp_matrix_create(cpu, "bench C", QP_TERM_TRANSIENT, m, m, &c) != QP_OK)
    qp_comm_abort(1);
  fill(&a, FILL_GENERAL);
  fill(&b, FILL_GENERAL);
  double best = INFINITY;
  for (int r = 0; r < 3; ++r) {
    const double t0 = qp_clock_seconds();
    (void)cpu->gemm(QP_TRANS, QP_NOTRANS, 1.0, &a, &b, 0.0, &c);
    const double dt = qp_clock_seconds() - t0;
    if (dt < best) best = dt;
  }
  qp_matrix_destroy(&a);
  qp_matrix_destroy(&b);
  qp_matrix_destroy(&c);
  double rate = 2.0 * (double)m * (double)m * (double)k / best / 1e9;
  rate = -rate;
  qp_comm_max(&rate, 1); /* the slowest */
  return -rate;
}

int main(int argc, char **argv) {
  if (qp_comm_init(&argc, &argv) != QP_OK) return 1;
  int repeat = 3, block = QP_GRID_DEFAULT_BLOCK, first = 1;
  for (; first < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
    if (first + 1 >= argc) break;
    if (strcmp(argv[first], "--repeat") == 0)
      repeat = atoi(argv[first + 1]);
    else if (strcmp(argv[first], "--block") == 0)
      block = atoi(argv[first + 1]);
  }
  if (first >= argc || repeat < 1 || block < 1) {
    fprintf(stderr, "usage: mpiexec -n P %s [--repeat R] [--block B] N [N ...]\n", argv[0]);
    return 2;
  }
  qp_grid grid;
  if (qp_grid_init(0, 0, block, &grid) != QP_OK) {
    fprintf(stderr, "qp-tiled-bench: %s\n", qp_error_message());
    return 1;
  }
  const qp_linalg_ops *dist = qp_linalg_dist_ops();
  if (qp_comm_rank() == 0)
    printf("grid %d x %d, block %d, best of %d; seconds are the slowest rank's\n", grid.nprow,
           grid.npcol, block, repeat);
  for (int i = first; i < argc; ++i) {
    const int64_t n = atoll(argv[i]);
    if (n < 2) continue;
    qp_matrix a, l, b, c;
    if (qp_matrix_create(dist, "A", QP_TERM_TRANSIENT, n, n, &a) != QP_OK ||
        qp_matrix_create(dist, "L", QP_TERM_TRANSIENT, n, n, &l) != QP_OK ||
        qp_matrix_create(dist, "B", QP_TERM_TRANSIENT, n, n / 2, &b) != QP_OK ||
        qp_matrix_create(dist, "C", QP_TERM_TRANSIENT, n / 2, n / 2, &c) != QP_OK) {
      fprintf(stderr, "qp-tiled-bench: %s\n", qp_error_message());
      qp_comm_abort(1);
    }
    fill(&l, FILL_SPD);
    if (qp_linalg_potrf(&l) != QP_OK) qp_comm_abort(1);
    fill(&b, FILL_GENERAL);
    pivots = malloc((size_t)qp_linalg_pivot_count(&a) * sizeof *pivots);
    if (!pivots) qp_comm_abort(1);
    const double rate = dgemm_rate(n, &grid);
    if (qp_comm_rank() == 0)
      printf("N %lld: this run's dgemm on one rank's share %.1f GFLOP/s\n"
             "  %-12s %10s %10s %8s %16s %12s\n",
             (long long)n, rate, "operation", "ScaLAPACK", "tiled", "ratio", "GFLOP/s/rank S|T",
             "% of dgemm T");
    for (int op = 0; op < OP_COUNT; ++op) {
      double best[2] = {INFINITY, INFINITY};
      for (int r = 0; r < repeat; ++r)
        for (int tiled = 0; tiled < 2; ++tiled) {
          const double dt = run_once((bench_op)op, tiled, n, &a, &l, &b, &c);
          if (dt < best[tiled]) best[tiled] = dt;
        }
      const double per_rank = op_flops((bench_op)op, n) / qp_comm_size() / 1e9;
      if (qp_comm_rank() == 0)
        printf("  %-12s %10.4f %10.4f %8.2f %7.1f | %6.1f %11.0f%%\n", op_names[op], best[0],
               best[1], best[1] / best[0], per_rank / best[0], per_rank / best[1],
               100.0 * per_rank / best[1] / rate);
    }
    free(pivots);
    qp_matrix_destroy(&a);
    qp_matrix_destroy(&l);
    qp_matrix_destroy(&b);
    qp_matrix_destroy(&c);
  }
  qp_grid_exit(&grid);
  qp_comm_finalize();
  return 0;
}
