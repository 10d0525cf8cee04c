/* matrix_check.h: private to linalg/'s dispatch files (matrix_ops.c, matrix_move.c): the check
 * that a matrix's table has an operation. */
#ifndef QP_MATRIX_CHECK_H
#define QP_MATRIX_CHECK_H

#include "matrix.h"

#define QP_NEED_OP(m, op)                                                                      \
  QP_CHECK((m)->ops && (m)->ops->op, QP_ERR_UNSUPPORTED, "backend '%s' has no " #op,            \
           (m)->ops ? (m)->ops->name : "(none)")

#endif
