/* bench.h: the parts of qmlpipe-bench (bench.c, its options and main): the problems it
 * simulates and the config it writes (bench_problem.c), one problem's runs on one route and
 * the measurements made in a child process (bench_run.c). Private to pipeline/bench/. */
#ifndef QP_BENCH_H
#define QP_BENCH_H

#include "config.h"
#include "memory_model.h"
#include "qp_error.h"

typedef struct {
  const char *name;
  int nside, lmax, bin_width, n_maps;
  double cut;
  qp_fields fields;
} qp_bench_problem;

/* What one `qmlpipe run` printed and took. */
typedef struct {
  double wall, warm_up, baseline_mib, peak_mib;
  double accounting, sampler_cpu;    /* its "[qmlpipe] accounting" line; -1 when not printed */
  double commit_seconds, commit_mib; /* the same line's page commits; -1 when not printed */
  double stage_seconds[QP_STAGE_COUNT], stage_rate[QP_STAGE_COUNT];
  char path[64];
} qp_bench_run;

/* What a measurement in a child process hands back. */
typedef struct qp_bench_measured {
  double value[3];
  char detail[512];
} qp_bench_measured;
typedef qp_err (*qp_bench_measure)(const void *arg, qp_bench_measured *out);

/** The simulated map(s), the mask and the spectrum of problem b in `dir`. */
qp_err qp_bench_inputs(const char *dir, const qp_bench_problem *b);
/** Writes the config of problem b on `route` (auto, pixel, smw, projected) in `dir`. */
qp_err qp_bench_config(const char *dir, const qp_bench_problem *b, const char *route, char *config,
                       size_t size);
/** --fields T|QU|TQU; 0 with a message when it is none of them. */
int qp_bench_fields(const char *text, qp_fields *fields);
/** The problem a name stands for (a preset, or `custom`); 0 with a message when unknown. */
int qp_bench_find_problem(const char *name, const qp_bench_problem *custom, qp_bench_problem *b);
/** Runs `measure` in a forked child and reads its figures back (bench_run.c says why). */
qp_err qp_bench_in_child(qp_bench_measure measure, const void *arg, qp_bench_measured *out);
/** This machine's dgemm rate at order *(const int *)arg, in GFLOP/s (value[0]). */
qp_err qp_bench_dgemm(const void *arg, qp_bench_measured *out);
/** One problem on one route: `repeat` runs (and as many without the warm-up when `ab`), the
 *  best one's table and the floor. */
qp_err qp_bench_route(const char *qmlpipe, const char *dir, const qp_bench_problem *b,
                      const char *route, int repeat, int ab, double dgemm, double *wall);

#endif
