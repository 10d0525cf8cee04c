/* null_backend.h: "null", a backend of the test build only, that can do nothing: every
 * operation is QP_ERR_UNSUPPORTED. It is how docs/architecture.md's "How to add a backend" was
 * checked: this one file (its table, its start, its row) and the one row a test registers
 * (qp_backends_add), then qp_linalg_backend("null") starts it by name
 * (tests/unit/test_null_backend.c). */
#ifndef QP_NULL_BACKEND_H
#define QP_NULL_BACKEND_H

#include "backends.h"

/** The row of "null" (host space, test-only, its start). */
const qp_backend *qp_null_backend_row(void);

#endif
