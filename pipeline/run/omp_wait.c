/* omp_wait.c: OMP_WAIT_POLICY=passive before libgomp reads it (omp_wait.h). */
#include "omp_wait.h"

#include <stdlib.h>

static int qp_omp_wait_set_here = 0;

#ifdef QP_OPENMP_LINKED_IN
/* 101, the first priority a program may use: prioritised constructors run before plain
 * ones, and libgomp's (initialize_env) is a plain one, linked in. */
__attribute__((constructor(101))) static void qp_omp_wait_before_runtime(void) {
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  qp_omp_wait_set_here = setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
}
#endif

int qp_omp_wait_passive_set(void) { return qp_omp_wait_set_here; }

void qp_omp_wait_forget(void) {
  if (qp_omp_wait_set_here) unsetenv("OMP_WAIT_POLICY");
}
