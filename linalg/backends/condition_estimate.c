/* condition_estimate.c: LAPACK's condition estimate over a backend's solves
 * (condition_estimate.h). */
#include "condition_estimate.h"

#include <lapack.h>
#include <math.h>
#include <stdlib.h>

#include "blas_int.h"
#include "budget.h"

void qp_condition_solves(qp_factor_kind kind, int kase, qp_triangular_solve solves[2]) {
  if (kind == QP_FACTOR_CHOLESKY) {
    solves[0] = (qp_triangular_solve){.upper = 0, .transpose = 0, .unit = 0};
    solves[1] = (qp_triangular_solve){.upper = 0, .transpose = 1, .unit = 0};
  } else if (kase == 1) {
    solves[0] = (qp_triangular_solve){.upper = 0, .transpose = 0, .unit = 1};
    solves[1] = (qp_triangular_solve){.upper = 1, .transpose = 0, .unit = 0};
  } else {
    solves[0] = (qp_triangular_solve){.upper = 1, .transpose = 1, .unit = 0};
    solves[1] = (qp_triangular_solve){.upper = 0, .transpose = 1, .unit = 1};
  }
}

/* |A^-1|_1 by dlacn2's loop: it asks, `apply` answers, until kase comes back 0. */
static qp_err qp_inverse_norm1(int n, qp_inverse_apply apply, void *context, const char *name,
                               double *est) {
  double *v = malloc((size_t)n * sizeof *v), *x = malloc((size_t)n * sizeof *x);
  int *isgn = malloc((size_t)n * sizeof *isgn);
  qp_err err = QP_OK;
  QP_CHECK_GOTO(v && x && isgn, QP_ERR_NOMEM, done,
                "condition estimate of '%s' (order %d): no memory for its vectors", name, n);
  int kase = 0, isave[3] = {0, 0, 0};
  *est = 0.0;
  for (;;) {
    LAPACK_dlacn2(&n, v, x, isgn, est, &kase, isave);
    if (kase == 0) break;
    QP_CALL_GOTO(apply(context, kase, x), done);
  }
done:
  free(v);
  free(x);
  free(isgn);
  return err;
}

qp_err qp_condition_estimate(int64_t n, double anorm, qp_inverse_apply apply, void *context,
                             const char *name, double *rcond) {
  QP_CHECK(!(anorm < 0), QP_ERR_LIBRARY,
           "condition estimate of '%s' (stage %s): anorm %g is "
           "negative",
           name, qp_stage_label(), anorm);
  *rcond = 0.0;
  if (n == 0) {
    *rcond = 1.0;
    return QP_OK;
  }
  if (isnan(anorm)) {
    *rcond = anorm;
    return QP_OK;
  }
  if (anorm == 0.0) return QP_OK;
  int order;
  QP_BLAS_INT(n, &order, "matrix order (dlacn2)");
  double est = 0.0;
  QP_CALL(qp_inverse_norm1(order, apply, context, name, &est));
  if (est != 0.0 && isfinite(est)) *rcond = (1.0 / est) / anorm;
  return QP_OK;
}
