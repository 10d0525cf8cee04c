/* plan.h: the plan of one analysis, a value: the route and why, the chunks and the memory
 * model they give, the host memory limit it keeps to and where that came from, the grid it
 * sizes and its flops. The planner (planner.h) builds it once, before the first stage, the
 * SMW conditioning re-route included; its owner (the driver for `run`, the command for
 * `budget` and `plan`) hands it to the problem as `const qp_plan *`, and nothing below the
 * driver writes it. */
#ifndef QP_PLAN_H
#define QP_PLAN_H

#include <stdint.h>

#include "config.h"
#include "grid.h"
#include "memory_model.h"

typedef struct qp_plan {
  /* The route: the config's path, or auto by leading cost (planner_route.c). */
  qp_path path_used; /* QP_PATH_PIXEL_DIRECT or QP_PATH_HARMONIC */
  int smw;           /* harmonic: 1 = stable SMW, 0 = projection (harmonic_method) */
  int switched;      /* lmax < lmax_signal: S_fixed of (lmax, lmax_signal] joins the noise */
  char path_reason[1024];
  /* Why SMW is ruled out (its noise too ill-conditioned for cfg->accuracy), or "" */
  char smw_refused[256];
  /* rcond of the diagonal N in the fields' units as the SMW check found it (NaN: not
   * checked), the run's /diagnostics figure for it until a stage measures it again */
  double noise_rcond;
  /* 1 when the SMW check on the variance map moved a route chosen as SMW to another one */
  int rerouted;

  /* The host memory limit the plan keeps to (bytes, 0: none) and where it came from; one
   * writer, qp_plan_limit. limit_from_job: an outside source (the job) decided. */
  double host_limit;
  char limit_source[768];
  int limit_from_job;

  /* `qmlpipe budget/plan --ranks`: a grid to size (nprow > 0) without running MPI; the model
   * is then that of rank (myrow, mycol) of it. */
  qp_grid grid;
  /* The leading flop count of the route chosen (QML.md 3, with the re-formed products of a
   * chunked fisher_run), for the whole problem: `plan --sbatch` estimates --time from it. */
  double flops;

  /* The chosen route's default map batch (planner_batch.c, docs/memory-model.md "Maps in
   * batches"): model_dims.map_batch below it was made smaller by memory.device_limit. */
  int64_t map_batch_default;

  qp_model model;           /* the memory model of the route and chunks chosen */
  qp_model_dims model_dims; /* the dimensions (chunks, batches, blocks, panels) it was
                               predicted from */
} qp_plan;

/** The route's name as the results file, `plan --json` and the job script say it. */
static inline const char *qp_plan_route_name(const qp_plan *plan) {
  return plan->path_used == QP_PATH_PIXEL_DIRECT ? "pixel_direct"
         : plan->smw                             ? "harmonic_smw"
                                                 : "harmonic_projected";
}

#endif
