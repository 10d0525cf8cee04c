/* bench_floor.h: the BLAS floor of a run for qmlpipe-bench (bench.c): the time of its route's
 * dominant dense kernels, run in the benchmark's own process on matrices of the run's sizes. */
#ifndef QP_BENCH_FLOOR_H
#define QP_BENCH_FLOOR_H

#include <stddef.h>

#include "problem.h"

/** The floor of a planned problem (p->plan->path_used, p->plan->smw, n_pix, n_modes, n_params from
 *  qp_inputs_plan): seconds and flops of
 *  - harmonic projection: potrf of n_pix, trsm of n_pix^2 x n_modes, syrk of n_modes^2 x n_pix;
 *  - harmonic SMW: syrk of n_modes^2 x n_pix, getrf and getrs of n_modes (with a dense
 *    noise, or lmax < lmax_signal, also potrf of n_pix and trsm of n_pix^2 x n_modes);
 *  - pixel-direct: potrf and trtri of n_pix, and n_params + 1 times the two n_pix^3 trmm that
 *    form one L^-1 P_p L^-T (timed once).
 *  `bias_solve`: on the projection route, the seconds of the trsm L^-T Y that fisher_run adds
 *  for the noise bias (not in the floor, as the issue defines it); 0 on the other routes.
 *  Each kernel once, its operands filled before the clock starts (fresh pages are not the
 *  kernel's time). `detail` gets each kernel's seconds. Matrices tracked as term
 *  "bench_floor", at most three at a time, freed before it returns. Errors: QP_ERR_NOMEM. */
qp_err qp_bench_floor(const qp_problem *p, double *seconds, double *flops, double *bias_solve,
                      char *detail, size_t size);

#endif
