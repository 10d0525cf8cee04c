/* backends.h: every backend qmlpipe knows, one row each, so that the config, the driver, the
 * planner and the job tools ask a row rather than compare names (issue 39). The rows say what
 * a backend is; qp_linalg_backend (matrix.h) starts one by its name. Adding a backend: its
 * file in linalg/ with its table, its row here (backends.c), and its start in matrix.c. */
#ifndef QP_BACKENDS_H
#define QP_BACKENDS_H

#include <stddef.h>

#include "budget.h"

typedef struct qp_backend {
  const char *name;     /* as the config's `backend:` and the results file say it */
  const char *on_ranks; /* the backend this one runs as on several MPI ranks; NULL: itself */
  qp_space space;       /* where its matrices live */
  int configurable;     /* 1: a config may name it (the others are what the driver picks) */
  int gpu;              /* 1: a GPU per rank (`plan --sbatch` asks Slurm for them) */
  int device_in_host;   /* 1: its device memory is the process's own (hostdev: RSS holds both) */
  int test_only;        /* 1: for tests (the device emulation) */
  size_t context_bytes; /* the device context `plan` reserves when memory.device_overhead is
                           absent (pipeline/planner.h explains cuda's figure) */
} qp_backend;

/** The row of `name`, or NULL when no backend has that name. */
const qp_backend *qp_backend_find(const char *name);
/** Rows 0 .. qp_backend_count() - 1 (for the config's list of names). */
int qp_backend_count(void);
const qp_backend *qp_backend_at(int i);
/** The names, ", "-separated, into buf (for messages): the configurable ones, or (all) every
 *  row's, the distributed forms the driver picks included. */
const char *qp_backend_names(char *buf, size_t size, int all);

#endif
