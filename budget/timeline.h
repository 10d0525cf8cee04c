/* timeline.h: memory over time, sampled by a thread while a run's stages go by.
 *
 * qp_timeline_start starts one sampler thread. Every interval it reads the meters (meter.h:
 * VmRSS, the cgroup's usage) and the tracked host bytes (qp_budget_current), and records
 *   (seconds since the start, RSS, cgroup usage, tracked bytes, innermost open stage).
 * Every qp_stage_push and qp_stage_pop (budget.h) is recorded as an event (time, stage name,
 * push or pop), with one more sample taken at that moment, so that a stage shorter than the
 * interval still shows its memory at both ends. The report writes all of it under
 * /budget/timeline (report_h5.h, docs/output.md).
 *
 * Bounds. At most QP_TIMELINE_CAPACITY (65536) samples are kept. When the store is full,
 * every other periodic sample is dropped (the first sample and the samples at stage
 * boundaries are kept) and the interval doubles, so that a run of any length keeps a
 * timeline of its whole length, coarser the longer it runs. With the default 20 ms interval
 * the store fills after 65536 x 20 ms = 1310.72 s (21.8 min); at a run time T beyond that,
 * the interval is 20 ms x 2^k with k = ceil(log2(T / 1310.72 s)): 80 ms after 1 h (about
 * 45000 samples), 640 ms after 10 h, 2.56 s after 24 h. A run of a few seconds gets a
 * sample every 20 ms (hundreds of points); each sample costs one read of /proc/self/status
 * and two of the cgroup files (qp_meter_read: 56 us measured here), 0.3% of one core at 20 ms.
 * At most QP_TIMELINE_EVENTS_MAX (1024) events are kept; later ones are counted as dropped.
 *
 * Memory. The sample and event stores are the accounting's own bookkeeping: they are mapped
 * with mmap at qp_timeline_start, outside the budget (no term), in one fixed block of
 * QP_TIMELINE_CAPACITY x 37 bytes (t 8, rss 8, cgroup 8, tracked 8, stage 4, flag 1:
 * 2424832 B) plus QP_TIMELINE_EVENTS_MAX x 48 bytes (49152 B), 2473984 B = 2.36 MiB in all.
 * Its pages are committed at qp_timeline_start, which returns once the sampler thread has
 * read the meters once: a run starts the timeline before it reads its baseline, so the store,
 * the thread's stack and its stdio buffers are all in the baseline (the overhead), and RSS does
 * not grow with the samples inside the stages. The block is unmapped by qp_timeline_clear or
 * the next qp_timeline_start. docs/memory-model.md ("What is not tracked") lists it.
 *
 * Threads. The sampler reads the meters and qp_budget_current only; the stores, the events
 * and the stage stack are guarded by one mutex. Start, stop and clear are meant for one
 * (the main) thread. Not collective over MPI: each rank samples its own process. */
#ifndef QP_TIMELINE_H
#define QP_TIMELINE_H

#include <stdint.h>

#include "budget.h"
#include "qp_error.h"

enum { QP_TIMELINE_CAPACITY = 65536, QP_TIMELINE_EVENTS_MAX = 1024 };

/** The default sampling interval (config `memory.sample_interval_ms`), milliseconds. */
#define QP_TIMELINE_DEFAULT_INTERVAL_MS 20.0

typedef enum qp_timeline_event_kind {
  QP_TIMELINE_POP = 0,
  QP_TIMELINE_PUSH = 1
} qp_timeline_event_kind;

/** A stage boundary. */
typedef struct qp_timeline_event {
  double t_seconds;              /* since qp_timeline_start */
  char stage[QP_STAGE_NAME_MAX]; /* the stage's name */
  qp_timeline_event_kind kind;
} qp_timeline_event;

/** What the timeline holds, as arrays of n_samples (one column per figure). The pointers stay
 *  valid until the next qp_timeline_start or qp_timeline_clear. */
typedef struct qp_timeline_data {
  int n_samples;
  const double *t_seconds;      /* seconds since qp_timeline_start, non-decreasing */
  const int64_t *rss_bytes;     /* VmRSS, -1 when unreadable */
  const int64_t *cgroup_bytes;  /* the cgroup's usage (memory.current), -1 when unreadable */
  const int64_t *tracked_bytes; /* qp_budget_current(QP_SPACE_HOST) */
  const int32_t *stage_index;   /* row in `events` of the push of the innermost open stage;
                                   -1 outside stages (or when that push was dropped) */
  int n_events;
  const qp_timeline_event *events; /* in the order they happened */
  int n_events_dropped;            /* events past QP_TIMELINE_EVENTS_MAX, not kept */
  double interval_ms;              /* the final interval, after every doubling */
  double initial_interval_ms;      /* the interval asked for */
  int capacity;                    /* samples the store holds before it decimates */
} qp_timeline_data;

/** Starts the sampler: forgets any earlier timeline, maps the stores (pages committed), takes
 *  the first sample (t = 0) and starts the thread that samples every `interval_ms`
 *  milliseconds; returns once that thread has read the meters once (see Memory above).
 *  @param interval_ms  > 0 and finite
 *  Errors: QP_ERR_INPUT for a bad interval; QP_ERR_INTERNAL when the sampler is running
 *  already; QP_ERR_NOMEM when the stores cannot be mapped; QP_ERR_LIBRARY when the thread
 *  cannot be created (with strerror's text). Nothing runs after a failure. */
qp_err qp_timeline_start(double interval_ms);

/** Stops the sampler (takes a last sample, joins the thread). The samples stay readable
 *  (qp_timeline_get) until the next start or clear. A no-op when it is not running. */
void qp_timeline_stop(void);

/** The CPU seconds the sampler thread of the last start used, once stopped (0 while it runs,
 *  or before any start): the timeline's own cost (self_cost.h). */
double qp_timeline_sampler_cpu_seconds(void);

/** Stops the sampler if it runs, forgets the timeline and unmaps its stores. */
void qp_timeline_clear(void);

/** 1 while the sampler runs. */
int qp_timeline_running(void);

/** The recorded timeline (n_samples 0 when there is none).
 *  Errors: QP_ERR_INTERNAL while the sampler runs (stop it first). */
qp_err qp_timeline_get(qp_timeline_data *data);

/* ---- internal: for budget/alloc.c and the tests ---- */

/** Records a stage boundary and takes a sample at it (called by qp_stage_push after the
 *  stage opened, and by qp_stage_pop after it closed). A no-op when the sampler is not
 *  running. `is_push` is 1 for a push, 0 for a pop. */
void qp_timeline_mark(const char *stage, int is_push);

/** Sets the number of samples the next qp_timeline_start keeps before it decimates (at least
 *  16; values outside 16..QP_TIMELINE_CAPACITY are clamped), so that a test can see the
 *  decimation in a fraction of a second. 0 restores QP_TIMELINE_CAPACITY. */
void qp_timeline_set_capacity(int capacity);

#endif
