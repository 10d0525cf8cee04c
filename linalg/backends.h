/* backends.h: every backend qmlpipe knows, one row each, so that the config, the driver, the
 * planner and the job tools ask a row rather than compare names (issue 39). A row says what a
 * backend is and how to start it; qp_linalg_backend (matrix.h) starts one by its name.
 *
 * Adding a backend: its file in linalg/ with its table and its start, its row here
 * (backends.c) naming that start, and the file in linalg/CMakeLists.txt. A test-only backend
 * has a row without a start in the product: the test library (tests/support/) installs the
 * start (qp_backends_install), or adds a whole row of its own (qp_backends_add), in the
 * programs that link it (qmlpipe-test and the C tests), never in qmlpipe. */
#ifndef QP_BACKENDS_H
#define QP_BACKENDS_H

#include <stddef.h>

#include "budget.h"

struct qp_linalg_ops;

/** Starts a backend for this process (its context, its device, its check of the process
 *  grid) and hands back its table (matrix.h). */
typedef qp_err (*qp_backend_start)(const struct qp_linalg_ops **ops);
/** A backend's table as it is before any start: what `plan`, which starts no backend, may ask
 *  for the sizes of its workspaces (matrix.h, workspaces). */
typedef const struct qp_linalg_ops *(*qp_backend_table)(void);

typedef struct qp_backend {
  const char *name;     /* as the config's `backend:` and the results file say it */
  const char *on_ranks; /* the backend this one runs as on several MPI ranks; NULL: itself */
  qp_space space;       /* where its matrices live */
  int configurable;     /* 1: a config may name it (the others are what the driver picks) */
  int gpu;              /* 1: a GPU per rank (`plan --sbatch` asks Slurm for them) */
  int device_in_host;   /* 1: its device memory is the process's own (hostdev: RSS holds both) */
  int test_only;        /* 1: for tests (the device emulation): started only where the test
                           library installed it (qmlpipe-test), refused by qmlpipe's config */
  size_t context_bytes; /* the device context `plan` reserves when memory.device_overhead is
                           absent (pipeline/planner.h explains cuda's figure) */
  qp_backend_start start; /* NULL where this program lacks it (cuda without CUDA; a test-only
                             backend outside the test programs) */
  qp_backend_table sizes_table; /* NULL: its workspaces cannot be known without a start */
  const char *absent;   /* why `start` is NULL in this build, for the message */
} qp_backend;

/** The row of `name`, or NULL when no backend has that name. */
const qp_backend *qp_backend_find(const char *name);
/** Rows 0 .. qp_backend_count() - 1 (for the config's list of names). */
int qp_backend_count(void);
const qp_backend *qp_backend_at(int i);
/** The names, ", "-separated, into buf (for messages): the configurable ones, or (all) every
 *  row's, the distributed forms the driver picks included. */
const char *qp_backend_names(char *buf, size_t size, int all);
/** QP_OK when this program may run `row`; QP_ERR_INPUT naming it when it is test-only and not
 *  installed here (the config's check: qmlpipe refuses `backend: hostdev`). */
qp_err qp_backend_check_available(const qp_backend *row, const char *source);

/** Test library only: gives the test-only row `name` its start and sizes table. Errors:
 *  QP_ERR_INTERNAL when no test-only row has that name. Not thread-safe: at program start. */
qp_err qp_backends_install(const char *name, qp_backend_start start, qp_backend_table sizes);
/** Test library only: adds a row of its own (a backend that exists in test builds alone,
 *  the `null` backend of tests/support/). Errors: QP_ERR_INTERNAL when the name is taken or
 *  the table of rows is full. The row is copied; its strings must outlive the program. */
qp_err qp_backends_add(const qp_backend *row);

#endif
