/* results_compare.h: a run's estimates kept (F, b, y, C_hat, the covariance of C_hat and the
 * window functions) and compared with another run's to
 * 1e-12 (relative to the largest entry, NaN-aware: test_util.h), for the tests that run one
 * problem on two backends or plans (test_hostdev_stages, test_hostdev_map_batches,
 * test_hostdev_w_blocks).
 * Header-only: its checks count in the including test's failures. */
#ifndef QP_TEST_RESULTS_COMPARE_H
#define QP_TEST_RESULTS_COMPARE_H

#include <stdlib.h>
#include <string.h>

#include "budget_check.h"
#include "problem.h"
#include "test_util.h"

typedef struct results {
  double *fisher, *noise_bias, *yb, *cl, *covariance, *window;
  int64_t np, n_maps, n_window;
} results;

static void results_keep(const qp_problem *p, results *r) {
  r->np = p->n_params;
  r->n_maps = p->n_maps;
  const size_t np = (size_t)r->np, nm = (size_t)r->n_maps;
  r->fisher = malloc(np * np * sizeof(double));
  r->noise_bias = malloc(np * sizeof(double));
  r->yb = malloc(np * nm * sizeof(double));
  r->cl = malloc(np * nm * sizeof(double));
  memcpy(r->fisher, p->fisher, np * np * sizeof(double));
  memcpy(r->noise_bias, p->noise_bias, np * sizeof(double));
  memcpy(r->yb, p->yb, np * nm * sizeof(double));
  memcpy(r->cl, p->cl, np * nm * sizeof(double));
  r->n_window = p->plan->model_dims.n_window;
  const size_t nw = (size_t)r->n_window;
  const double *cov = p->spectra_covariance ? p->spectra_covariance : p->fisher_inverse;
  r->covariance = malloc(np * np * sizeof(double));
  r->window = malloc(np * nw * sizeof(double));
  memcpy(r->covariance, cov, np * np * sizeof(double));
  memcpy(r->window, p->window, np * nw * sizeof(double));
}

static void results_free(results *r) {
  free(r->fisher);
  free(r->noise_bias);
  free(r->yb);
  free(r->cl);
  free(r->covariance);
  free(r->window);
}

static void compare(const results *cpu, const qp_problem *p, const char *what) {
  TEST_ASSERT(p->n_params == cpu->np && p->n_maps == cpu->n_maps, "%s: dimensions differ", what);
  const size_t np = (size_t)cpu->np, nm = (size_t)cpu->n_maps;
  TEST_WITHIN(qp_test_max_rel_diff(cpu->fisher, p->fisher, np * np), 1e-12, "%s: F", what);
  TEST_WITHIN(qp_test_max_rel_diff(cpu->noise_bias, p->noise_bias, np), 1e-12, "%s: b", what);
  TEST_WITHIN(qp_test_max_rel_diff(cpu->yb, p->yb, np * nm), 1e-12, "%s: y", what);
  TEST_WITHIN(qp_test_max_rel_diff(cpu->cl, p->cl, np * nm), 1e-12, "%s: C_hat", what);
  const double *cov = p->spectra_covariance ? p->spectra_covariance : p->fisher_inverse;
  TEST_WITHIN(qp_test_max_rel_diff(cpu->covariance, cov, np * np), 1e-12, "%s: covariance", what);
  TEST_ASSERT(p->plan->model_dims.n_window == cpu->n_window, "%s: window sizes differ", what);
  TEST_WITHIN(qp_test_max_rel_diff(cpu->window, p->window, np * (size_t)cpu->n_window), 1e-12,
              "%s: window", what);
}

/* The end of a device run checked against the cpu run's results: compared, the model exact
 * (budget_check.h), both freed, and nothing left on the device. */
static inline void compare_exact_and_free(results *cpu, qp_problem *p, const char *what) {
  compare(cpu, p, what);
  qp_check_budget_exact(p);
  qp_problem_free(p);
  results_free(cpu);
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "%s: %zu device bytes left", what,
              qp_budget_current(QP_SPACE_DEVICE));
}

#endif
