/* blas_int.h: checked conversion of sizes to the BLAS/LAPACK integer.
 *
 * Debian's OpenBLAS and LAPACKE take 32-bit int; a product like n*n overflows it at n ~ 46341.
 * Every size handed to BLAS goes through qp_blas_int, which fails instead of wrapping. */
#ifndef QP_BLAS_INT_H
#define QP_BLAS_INT_H

#include <limits.h>
#include <stdint.h>

#include "qp_error.h"

#define QP_BLAS_INT(value, out, what)                                                          \
  QP_CHECK((value) >= 0 && (value) <= INT_MAX, QP_ERR_UNSUPPORTED,                             \
           "%s = %lld does not fit the 32-bit BLAS integer of this build", (what),             \
           (long long)(value));                                                                \
  *(out) = (int)(value)

#endif
