/* backend_terms.h: the terms no stage allocates with a name of its own, declared to the memory
 * model after the stages' (backend_terms.c): a device run's host staging (the driver reserves
 * it, host_window.h), the backend's own buffers (matrix.h's workspaces; the tiled algorithms'
 * blocks, tiled.h) and PBLAS's panels inside ScaLAPACK (dist). They look behind the linalg
 * table (spaces, the grid), which the stages' term files may not (tests/check_layering.cmake). */
#ifndef QP_BACKEND_TERMS_H
#define QP_BACKEND_TERMS_H

#include "memory_model.h"

#define QP_TERM_PBLAS_PANELS "pblas_panels" /* PBLAS/ScaLAPACK's own panel buffers (library) */

/** Adds to `m` the host staging of a device run (one block per stage), the backend's own
 *  buffers for the operations the stages of `d` run, and dist's PBLAS panels. Fails where the
 *  backend's table does on a workspace query, and on more backend terms than it keeps. */
qp_err qp_backend_terms(const qp_model_dims *d, qp_model *m);

#endif
