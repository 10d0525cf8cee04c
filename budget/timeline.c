/* timeline.c: the sampler thread and its bounded stores (timeline.h). */
#include "timeline.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "meter.h"

enum {
  QP_TIMELINE_CAPACITY_MIN = 16,
  QP_TIMELINE_DEPTH_MAX = 16, /* stage nesting followed for stage_index (alloc.c allows 8) */
  QP_SAMPLE_BYTES = 8 + 8 + 8 + 8 + 4 + 1
};

_Static_assert(sizeof(qp_timeline_event) == 48, "the event size documented in timeline.h");

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;       /* signalled by qp_timeline_stop */
  pthread_cond_t ready_cond; /* signalled by the sampler once it has read the meters */
  pthread_t thread;
  int running, stopping, have_thread, ready;
  int capacity_next; /* set by qp_timeline_set_capacity; 0: QP_TIMELINE_CAPACITY */
  double t0; /* qp_clock_seconds at the start */
  double sampler_cpu; /* the sampler thread's CPU seconds, set as it ends */
  double interval_ms, initial_interval_ms;
  /* one mapping: the columns, then the events */
  void *block;
  size_t block_bytes;
  int capacity, n;
  double *t;
  int64_t *rss, *cgroup, *tracked;
  int32_t *stage;
  uint8_t *boundary; /* 1: taken at a stage boundary (or the first): kept when decimating */
  qp_timeline_event *events;
  int n_events, n_events_dropped;
  int depth;                            /* stages open since the start */
  int32_t stack[QP_TIMELINE_DEPTH_MAX]; /* their push rows in events (-1: dropped) */
} qp_tl = {.lock = PTHREAD_MUTEX_INITIALIZER, .ready_cond = PTHREAD_COND_INITIALIZER};

static double qp_tl_now(void) { return qp_clock_seconds() - qp_tl.t0; }

static int32_t qp_tl_stage_locked(void) {
  if (qp_tl.depth <= 0) return -1;
  int d = qp_tl.depth < QP_TIMELINE_DEPTH_MAX ? qp_tl.depth : QP_TIMELINE_DEPTH_MAX;
  return qp_tl.stack[d - 1];
}

/* Halves the store: keeps the first sample, every sample at an even position and every
 * boundary sample; doubles the interval. When boundary samples alone would keep the store
 * more than three quarters full, they are thinned like the others, so that each decimation
 * frees at least a quarter of the store. The caller holds the lock. */
static void qp_tl_decimate_locked(void) {
  int odd_boundaries = 0;
  for (int i = 1; i < qp_tl.n; i += 2)
    odd_boundaries += qp_tl.boundary[i];
  int keep_boundaries = (qp_tl.n + 1) / 2 + odd_boundaries <= qp_tl.capacity - qp_tl.capacity / 4;
  int k = 0;
  for (int i = 0; i < qp_tl.n; ++i) {
    if (i % 2 != 0 && !(keep_boundaries && qp_tl.boundary[i])) continue;
    qp_tl.t[k] = qp_tl.t[i];
    qp_tl.rss[k] = qp_tl.rss[i];
    qp_tl.cgroup[k] = qp_tl.cgroup[i];
    qp_tl.tracked[k] = qp_tl.tracked[i];
    qp_tl.stage[k] = qp_tl.stage[i];
    qp_tl.boundary[k] = qp_tl.boundary[i];
    ++k;
  }
  qp_tl.n = k;
  qp_tl.interval_ms *= 2.0;
}

/* Appends a sample taken at time t (the caller holds the lock). */
static void qp_tl_append_locked(double t, const qp_meter_sample *m, size_t tracked, int32_t stage,
                                int boundary) {
  if (qp_tl.n >= qp_tl.capacity) qp_tl_decimate_locked();
  int i = qp_tl.n++;
  qp_tl.t[i] = t;
  qp_tl.rss[i] = m->rss;
  qp_tl.cgroup[i] = m->cgroup_current;
  qp_tl.tracked[i] = tracked > (size_t)INT64_MAX ? INT64_MAX : (int64_t)tracked;
  qp_tl.stage[i] = stage;
  qp_tl.boundary[i] = (uint8_t)(boundary != 0);
}

/* Reads the meters (without the lock: file reads) and appends a sample stamped now. */
static void qp_tl_sample(int boundary) {
  qp_meter_sample m;
  qp_meter_read(&m);
  size_t tracked = qp_budget_current(QP_SPACE_HOST);
  pthread_mutex_lock(&qp_tl.lock);
  if (qp_tl.block) qp_tl_append_locked(qp_tl_now(), &m, tracked, qp_tl_stage_locked(), boundary);
  pthread_mutex_unlock(&qp_tl.lock);
}

static void *qp_tl_main(void *arg) {
  (void)arg;
  /* One read of the meters before qp_timeline_start returns: what this thread touches to
   * sample (its stack, the malloc arena of its stdio) then exists before the caller reads its
   * baseline, instead of appearing in whichever stage the first sample falls in. */
  qp_meter_sample warm;
  qp_meter_read(&warm);
  pthread_mutex_lock(&qp_tl.lock);
  qp_tl.ready = 1;
  pthread_cond_signal(&qp_tl.ready_cond);
  double next = qp_tl.t0;
  while (!qp_tl.stopping) {
    next += 1e-3 * qp_tl.interval_ms;
    const double now = qp_clock_seconds();
    if (next < now) /* fell behind (a stalled machine): no burst of samples */
      next = now + 1e-3 * qp_tl.interval_ms;
    const struct timespec deadline = qp_clock_timespec(next); /* wake is on CLOCK_MONOTONIC */
    int rc = 0;
    while (!qp_tl.stopping && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&qp_tl.wake, &qp_tl.lock, &deadline);
    if (qp_tl.stopping) break;
    pthread_mutex_unlock(&qp_tl.lock);
    qp_tl_sample(0);
    pthread_mutex_lock(&qp_tl.lock);
  }
  qp_tl.sampler_cpu = qp_clock_thread_cpu_seconds();
  pthread_mutex_unlock(&qp_tl.lock);
  return NULL;
}

/* Unmaps the stores and forgets the samples; the sampler must not be running. */
static void qp_tl_release(void) {
  pthread_mutex_lock(&qp_tl.lock);
  void *block = qp_tl.block;
  size_t bytes = qp_tl.block_bytes;
  qp_tl.block = NULL;
  qp_tl.block_bytes = 0;
  qp_tl.n = qp_tl.capacity = qp_tl.n_events = qp_tl.n_events_dropped = qp_tl.depth = 0;
  qp_tl.t = NULL;
  qp_tl.rss = qp_tl.cgroup = qp_tl.tracked = NULL;
  qp_tl.stage = NULL;
  qp_tl.boundary = NULL;
  qp_tl.events = NULL;
  pthread_mutex_unlock(&qp_tl.lock);
  if (block) munmap(block, bytes);
}

qp_err qp_timeline_start(double interval_ms) {
  QP_CHECK(isfinite(interval_ms) && interval_ms > 0, QP_ERR_INPUT,
           "timeline: the sampling interval must be a positive number of milliseconds, got %g",
           interval_ms);
  QP_CHECK(!qp_timeline_running(), QP_ERR_INTERNAL, "timeline: the sampler is running already");
  qp_tl_release();

  int capacity = qp_tl.capacity_next > 0 ? qp_tl.capacity_next : QP_TIMELINE_CAPACITY;
  /* Columns of 8-byte figures first, then the 4- and 1-byte ones, then the events (their
   * offset rounded up to 8 bytes): every column aligned. */
  size_t n = (size_t)capacity;
  size_t events_at = (n * QP_SAMPLE_BYTES + 7) / 8 * 8;
  size_t bytes = events_at + sizeof(qp_timeline_event) * QP_TIMELINE_EVENTS_MAX;
  /* mmap, not malloc: munmap gives the pages back, and glibc's malloc thresholds (which a
   * freed 2 MB malloc block would raise) stay as they are for the rest of the program. The
   * pages are committed here (MAP_POPULATE): the whole store is resident from the start,
   * before a run reads its baseline, rather than growing by 37 bytes a sample inside the
   * stages, where no term accounts for it. */
  void *block =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  QP_CHECK(block != MAP_FAILED, QP_ERR_NOMEM, "timeline: cannot map %zu bytes for %d samples: %s",
           bytes, capacity, strerror(errno));

  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc == 0) {
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0) rc = pthread_cond_init(&qp_tl.wake, &attr);
    pthread_condattr_destroy(&attr);
  }
  if (rc != 0) {
    munmap(block, bytes);
    QP_FAIL(QP_ERR_LIBRARY, "timeline: cannot create the sampler's condition variable: %s",
            strerror(rc));
  }

  qp_meter_sample first;
  qp_meter_read(&first);
  size_t tracked = qp_budget_current(QP_SPACE_HOST);

  pthread_mutex_lock(&qp_tl.lock);
  char *base = block;
  qp_tl.block = block;
  qp_tl.block_bytes = bytes;
  qp_tl.capacity = capacity;
  qp_tl.t = (double *)base;
  qp_tl.rss = (int64_t *)(base + 8 * n);
  qp_tl.cgroup = (int64_t *)(base + 16 * n);
  qp_tl.tracked = (int64_t *)(base + 24 * n);
  qp_tl.stage = (int32_t *)(base + 32 * n);
  qp_tl.boundary = (uint8_t *)(base + 36 * n);
  qp_tl.events = (qp_timeline_event *)(base + events_at);
  qp_tl.n = qp_tl.n_events = qp_tl.n_events_dropped = qp_tl.depth = 0;
  qp_tl.interval_ms = qp_tl.initial_interval_ms = interval_ms;
  qp_tl.stopping = 0;
  qp_tl.t0 = qp_clock_seconds();
  qp_tl.sampler_cpu = 0.0;
  qp_tl_append_locked(0.0, &first, tracked, -1, 1); /* kept by every decimation */
  qp_tl.ready = 0;
  rc = pthread_create(&qp_tl.thread, NULL, qp_tl_main, NULL);
  qp_tl.running = qp_tl.have_thread = rc == 0;
  while (rc == 0 && !qp_tl.ready)
    pthread_cond_wait(&qp_tl.ready_cond, &qp_tl.lock);
  pthread_mutex_unlock(&qp_tl.lock);
  if (rc != 0) {
    pthread_cond_destroy(&qp_tl.wake);
    qp_tl_release();
    QP_FAIL(QP_ERR_LIBRARY, "timeline: cannot start the sampler thread: %s", strerror(rc));
  }
  return QP_OK;
}

void qp_timeline_stop(void) {
  pthread_mutex_lock(&qp_tl.lock);
  int joinable = qp_tl.have_thread;
  qp_tl.stopping = 1;
  if (joinable) pthread_cond_signal(&qp_tl.wake);
  pthread_mutex_unlock(&qp_tl.lock);
  if (!joinable) return;
  pthread_join(qp_tl.thread, NULL);
  pthread_cond_destroy(&qp_tl.wake);
  pthread_mutex_lock(&qp_tl.lock);
  qp_tl.have_thread = 0;
  pthread_mutex_unlock(&qp_tl.lock);
  qp_tl_sample(1); /* the end of the timeline, kept like a boundary */
  pthread_mutex_lock(&qp_tl.lock);
  qp_tl.running = 0;
  pthread_mutex_unlock(&qp_tl.lock);
}

double qp_timeline_sampler_cpu_seconds(void) {
  pthread_mutex_lock(&qp_tl.lock);
  const double seconds = qp_tl.sampler_cpu;
  pthread_mutex_unlock(&qp_tl.lock);
  return seconds;
}

void qp_timeline_clear(void) {
  qp_timeline_stop();
  qp_tl_release();
}

int qp_timeline_running(void) {
  pthread_mutex_lock(&qp_tl.lock);
  int running = qp_tl.running;
  pthread_mutex_unlock(&qp_tl.lock);
  return running;
}

qp_err qp_timeline_get(qp_timeline_data *data) {
  memset(data, 0, sizeof *data);
  pthread_mutex_lock(&qp_tl.lock);
  int running = qp_tl.running;
  if (!running && qp_tl.block) {
    *data = (qp_timeline_data){.n_samples = qp_tl.n,
                               .t_seconds = qp_tl.t,
                               .rss_bytes = qp_tl.rss,
                               .cgroup_bytes = qp_tl.cgroup,
                               .tracked_bytes = qp_tl.tracked,
                               .stage_index = qp_tl.stage,
                               .n_events = qp_tl.n_events,
                               .events = qp_tl.events,
                               .n_events_dropped = qp_tl.n_events_dropped,
                               .interval_ms = qp_tl.interval_ms,
                               .initial_interval_ms = qp_tl.initial_interval_ms,
                               .capacity = qp_tl.capacity};
  }
  pthread_mutex_unlock(&qp_tl.lock);
  QP_CHECK(!running, QP_ERR_INTERNAL,
           "timeline: the sampler is still running (qp_timeline_stop before reading it)");
  return QP_OK;
}

/* A push is stamped, recorded and sampled inside the new stage; a pop is sampled inside the
 * stage it closes (same time stamp as its event), then the stage leaves the stack. */
void qp_timeline_mark(const char *stage, int is_push) {
  pthread_mutex_lock(&qp_tl.lock);
  int running = qp_tl.running;
  pthread_mutex_unlock(&qp_tl.lock);
  if (!running) return;
  qp_meter_sample m;
  qp_meter_read(&m);
  size_t tracked = qp_budget_current(QP_SPACE_HOST);

  pthread_mutex_lock(&qp_tl.lock);
  if (qp_tl.running && qp_tl.block) {
    double t = qp_tl_now();
    int32_t row = -1;
    if (qp_tl.n_events < QP_TIMELINE_EVENTS_MAX) {
      row = qp_tl.n_events++;
      qp_timeline_event *e = &qp_tl.events[row];
      memset(e, 0, sizeof *e);
      e->t_seconds = t;
      snprintf(e->stage, sizeof e->stage, "%s", stage ? stage : "");
      e->kind = is_push ? QP_TIMELINE_PUSH : QP_TIMELINE_POP;
    } else {
      ++qp_tl.n_events_dropped;
    }
    if (is_push) {
      if (qp_tl.depth < QP_TIMELINE_DEPTH_MAX) qp_tl.stack[qp_tl.depth] = row;
      ++qp_tl.depth;
      qp_tl_append_locked(t, &m, tracked, qp_tl_stage_locked(), 1);
    } else {
      qp_tl_append_locked(t, &m, tracked, qp_tl_stage_locked(), 1);
      if (qp_tl.depth > 0) --qp_tl.depth; /* a pop of a stage opened before the start: none */
    }
  }
  pthread_mutex_unlock(&qp_tl.lock);
}

void qp_timeline_set_capacity(int capacity) {
  if (capacity != 0 && capacity < QP_TIMELINE_CAPACITY_MIN) capacity = QP_TIMELINE_CAPACITY_MIN;
  if (capacity > QP_TIMELINE_CAPACITY) capacity = QP_TIMELINE_CAPACITY;
  pthread_mutex_lock(&qp_tl.lock);
  qp_tl.capacity_next = capacity;
  pthread_mutex_unlock(&qp_tl.lock);
}
