/* self_cost.h: what the memory accounting costs the run itself, in seconds, beside the warm-up
 * (pipeline/run/warm_up.h times that): the driver's meter reads and stage records, the memory
 * timeline's start and stop, the budget's part of the results file and the report printed at
 * the end. `qmlpipe run` prints the sum ("[qmlpipe] accounting ... s") and qmlpipe-bench reads
 * it (docs/benchmarks.md: issue 14's "accounting <= 3% of the run").
 *
 * Called from the driver's thread only (rank by rank), so a plain running sum. */
#ifndef QP_SELF_COST_H
#define QP_SELF_COST_H

/** The start of a piece of accounting work: pass the value to qp_self_cost_end. */
double qp_self_cost_begin(void);
/** Adds the seconds since `start` (qp_self_cost_begin's value) to the run's sum. */
void qp_self_cost_end(double start);
/** The run's sum so far, in seconds of wall-clock time. */
double qp_self_cost_seconds(void);
/** Zero, at the start of a run. */
void qp_self_cost_reset(void);

#endif
