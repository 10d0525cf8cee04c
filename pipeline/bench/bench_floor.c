/* bench_floor.c: the BLAS floor of a run (bench_floor.h). */
#include "bench_floor.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "matrix.h"

/* Sums each kernel's time and flops, and names it in the detail. */
typedef struct {
  double seconds, flops;
  char *detail;
  size_t size, used;
} qp_floor_sum;

static void qp_floor_add(qp_floor_sum *s, const char *what, double t0, double flops, int times) {
  const double dt = qp_clock_seconds() - t0;
  s->seconds += times * dt;
  s->flops += times * flops;
  if (s->used < s->size)
    s->used += (size_t)snprintf(s->detail + s->used, s->size - s->used, "%s%s %.3f s",
                                s->used ? ", " : "", what, dt);
  if (times > 1 && s->used < s->size)
    s->used += (size_t)snprintf(s->detail + s->used, s->size - s->used, " (x %d)", times);
}

/* A symmetric positive definite n x n matrix (diagonally dominant), or any full one. */
static void qp_floor_fill(qp_matrix *a, int spd) {
  const int64_t n = a->rows, m = a->cols;
  for (int64_t j = 0; j < m; ++j)
    for (int64_t i = 0; i < n; ++i)
      a->data[i + j * a->ld] = (i == j && spd) ? (double)n : 1.0 / (double)(1 + (i + j) % 7);
}

qp_err qp_bench_floor(const qp_problem *p, double *seconds, double *flops, double *bias_solve,
                      char *detail, size_t size) {
  const qp_linalg_ops *ops = qp_linalg_cpu_ops();
  const int64_t n = p->n_pix, nm = p->n_modes;
  const int harmonic = p->plan->path_used == QP_PATH_HARMONIC;
  const int dense = p->plan->switched || p->cfg->noise_kind == QP_NOISE_COVARIANCE;
  qp_floor_sum s = {.detail = detail, .size = size};
  qp_matrix c = {0}, v = {0}, k = {0};
  int *pivots = NULL;
  qp_err err = QP_OK;
  detail[0] = '\0';
  *bias_solve = 0.0;
  char what[96];
  double t0 = 0;
  if (!harmonic || !p->plan->smw || dense) {
    /* C = L L^T of n_pix, the route's first factorisation */
    QP_CALL_GOTO(qp_matrix_create(ops, "bench_floor", QP_TERM_TRANSIENT, n, n, &c), done);
    qp_floor_fill(&c, 1);
    snprintf(what, sizeof what, "potrf %lld", (long long)n);
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_potrf(&c), done);
    qp_floor_add(&s, what, t0, qp_flops_potrf(n), 1);
  }
  if (!harmonic) {
    snprintf(what, sizeof what, "trtri %lld", (long long)n);
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_trtri(&c), done);
    qp_floor_add(&s, what, t0, qp_flops_trtri(n), 1);
    QP_CALL_GOTO(qp_matrix_create(ops, "bench_floor", QP_TERM_TRANSIENT, n, n, &k), done);
    qp_floor_fill(&k, 0);
    snprintf(what, sizeof what, "trmm left + right %lld", (long long)n);
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_trmm(QP_LEFT, QP_NOTRANS, 1.0, &c, &k), done);
    QP_CALL_GOTO(qp_linalg_trmm(QP_RIGHT, QP_TRANS, 1.0, &c, &k), done);
    qp_floor_add(&s, what, t0, qp_flops_trmm(QP_LEFT, n, n) + qp_flops_trmm(QP_RIGHT, n, n),
                 p->n_params + 1);
    goto done;
  }
  QP_CALL_GOTO(qp_matrix_create(ops, "bench_floor", QP_TERM_TRANSIENT, n, nm, &v), done);
  qp_floor_fill(&v, 0);
  if (c.data) {
    /* Y = L^-1 V^T (n_pix x n_modes) */
    snprintf(what, sizeof what, "trsm %lld^2 x %lld", (long long)n, (long long)nm);
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_NOTRANS, 1.0, &c, &v), done);
    qp_floor_add(&s, what, t0, qp_flops_trmm(QP_LEFT, n, nm), 1);
    if (p->plan->smw) qp_matrix_destroy(&c);
  }
  /* K = Y^T Y (n_modes^2 over n_pix) */
  QP_CALL_GOTO(qp_matrix_create(ops, "bench_floor", QP_TERM_TRANSIENT, nm, nm, &k), done);
  snprintf(what, sizeof what, "syrk %lld^2 x %lld", (long long)nm, (long long)n);
  t0 = qp_clock_seconds();
  QP_CALL_GOTO(qp_linalg_syrk(QP_TRANS, 1.0, &v, 0.0, &k), done);
  qp_floor_add(&s, what, t0, qp_flops_syrk(nm, n), 1);
  if (!p->plan->smw) {
    /* Not the floor: the projection's Z = L^-T Y for the noise bias, timed apart */
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_trsm(QP_LEFT, QP_TRANS, 1.0, &c, &v), done);
    *bias_solve = qp_clock_seconds() - t0;
  }
  if (p->plan->smw) {
    /* I + K Lambda = P L U, then G = (I + K Lambda)^-1 K: the right-hand sides reuse V */
    qp_matrix_destroy(&v);
    QP_CALL_GOTO(qp_matrix_create(ops, "bench_floor", QP_TERM_TRANSIENT, nm, nm, &v), done);
    qp_floor_fill(&v, 1);
    pivots = malloc((size_t)nm * sizeof *pivots);
    QP_CHECK_GOTO(pivots, QP_ERR_NOMEM, done, "out of memory for %lld pivots", (long long)nm);
    snprintf(what, sizeof what, "getrf %lld", (long long)nm);
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_getrf(&v, pivots), done);
    qp_floor_add(&s, what, t0, 2.0 / 3.0 * (double)nm * (double)nm * (double)nm, 1);
    snprintf(what, sizeof what, "getrs %lld x %lld", (long long)nm, (long long)nm);
    t0 = qp_clock_seconds();
    QP_CALL_GOTO(qp_linalg_getrs(&v, pivots, &k), done);
    qp_floor_add(&s, what, t0, 2.0 * (double)nm * (double)nm * (double)nm, 1);
  }
done:
  free(pivots);
  qp_matrix_destroy(&c);
  qp_matrix_destroy(&v);
  qp_matrix_destroy(&k);
  *seconds = s.seconds;
  *flops = s.flops;
  return err;
}
