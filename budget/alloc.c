/* alloc.c: the tracked allocator and the stage stack (budget.h). */
#include "budget.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bytes_text.h"
#include "checked_size.h"
#include "clock.h"
#include "device_memory.h"
#include "fault.h"
#include "interrupt.h"
#include "page_commit.h"
#include "timeline.h"

/* Each host block starts with this header, so that free needs no lookup; the user's data
 * follows at a 64-byte boundary. Live blocks form a list for the leak dump. */
typedef struct qp_block_header {
  uint64_t magic;
  size_t bytes;        /* what the caller asked for */
  size_t mapped_bytes; /* header + bytes, rounded to pages */
  int term;
  int space;
  struct qp_block_header *prev, *next;
} qp_block_header;

enum { QP_HEADER_BYTES = 64, QP_STAGE_DEPTH_MAX = 8 };
static const uint64_t QP_BLOCK_MAGIC = 0x71706275646765ULL; /* "qpbudge" */

_Static_assert(sizeof(qp_block_header) <= QP_HEADER_BYTES, "block header must fit 64 bytes");

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
/* The sanitizer build (cmake/qp_sanitize.cmake): ASan watches malloc, not mmap, so the unused
 * bytes of a block's mapping (the header's padding before the data, the page rounding after
 * it) are poisoned while the block lives: a read or write just before or past a tracked buffer
 * is then reported as one past a malloc'ed buffer would be; QP_BLOCK_REDZONE keeps at least
 * 64 such bytes after a block whose data would end on a page boundary. Unpoisoned before
 * munmap (those bytes only: the data's shadow is never written, so stays unresident), so that
 * a later mapping at the same address starts clean. */
enum { QP_BLOCK_REDZONE = 64 };
static void qp_block_poison(qp_block_header *h, int poison) {
  char *base = (char *)h, *data_end = base + QP_HEADER_BYTES + h->bytes;
  size_t tail = h->mapped_bytes - QP_HEADER_BYTES - h->bytes;
  if (poison) {
    ASAN_POISON_MEMORY_REGION(base + sizeof *h, QP_HEADER_BYTES - sizeof *h);
    ASAN_POISON_MEMORY_REGION(data_end, tail);
  } else {
    ASAN_UNPOISON_MEMORY_REGION(base + sizeof *h, QP_HEADER_BYTES - sizeof *h);
    ASAN_UNPOISON_MEMORY_REGION(data_end, tail);
  }
}
#else
enum { QP_BLOCK_REDZONE = 0 };
static void qp_block_poison(qp_block_header *h, int poison) {
  (void)h;
  (void)poison;
}
#endif

/* A device block's record stays on the host: the host cannot read a header in device memory.
 * Device blocks are few (matrices and backend workspaces), so free finds them by walking this
 * list. The records are the allocator's own bookkeeping (malloc, no term), like the host
 * headers. Each keeps the provider (device_memory.h) that allocated it, its freer. */
typedef struct qp_device_block {
  void *ptr;
  size_t bytes;
  int term;
  const qp_device_memory *provider;
  struct qp_device_block *next;
} qp_device_block;

typedef struct qp_open_stage {
  qp_stage_record record;
  double start; /* qp_clock_seconds */
} qp_open_stage;

static struct {
  pthread_mutex_t lock;
  int n_terms;
  qp_term_stats terms[QP_TERMS_MAX];
  size_t current[2], peak[2];
  qp_block_header *live;
  qp_device_block *device_live;
  int depth;
  qp_open_stage open[QP_STAGE_DEPTH_MAX];
  int n_records;
  qp_stage_record records[QP_STAGES_MAX];
  double commit_seconds; /* host blocks' page commits since the last reset */
  size_t commit_bytes;
} qp_budget_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char *qp_term_kind_name(qp_term_kind kind) {
  switch (kind) {
  case QP_TERM_PERSISTENT: return "persistent";
  case QP_TERM_TRANSIENT: return "transient";
  case QP_TERM_VIRTUAL: return "virtual";
  case QP_TERM_LIBRARY: return "library";
  }
  return "?";
}

const char *qp_space_name(qp_space space) { return space == QP_SPACE_DEVICE ? "device" : "host"; }

/* Finds or adds a term; the caller holds the lock. Returns -1 when the table is full. */
static int qp_term_index(const char *name, qp_term_kind kind, qp_space space) {
  for (int i = 0; i < qp_budget_state.n_terms; ++i) {
    const qp_term_stats *t = &qp_budget_state.terms[i];
    if (t->space == space && strcmp(t->name, name) == 0) return i;
  }
  if (qp_budget_state.n_terms >= QP_TERMS_MAX) return -1;
  qp_term_stats *t = &qp_budget_state.terms[qp_budget_state.n_terms];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->kind = kind;
  t->space = space;
  return qp_budget_state.n_terms++;
}

static qp_stage_term *qp_stage_term_of(qp_stage_record *r, const qp_term_stats *t) {
  for (int i = 0; i < r->n_terms; ++i)
    if (r->terms[i].space == t->space && strcmp(r->terms[i].name, t->name) == 0) return &r->terms[i];
  if (r->n_terms >= QP_TERMS_MAX) return NULL;
  qp_stage_term *st = &r->terms[r->n_terms++];
  memset(st, 0, sizeof *st);
  memcpy(st->name, t->name, sizeof st->name); /* same size; both NUL-terminated */
  st->kind = t->kind;
  st->space = t->space;
  st->at_start = 0;
  return st;
}

/* Updates the term, the totals and every open stage after a change of `delta` bytes (the
 * caller holds the lock). */
static void qp_account(int term, qp_space space, size_t bytes, int sign) {
  qp_term_stats *t = &qp_budget_state.terms[term];
  if (sign > 0) {
    t->current += bytes;
    t->total += bytes;
    t->live_blocks++;
    t->total_blocks++;
    qp_budget_state.current[space] += bytes;
  } else {
    t->current -= bytes;
    t->live_blocks--;
    qp_budget_state.current[space] -= bytes;
  }
  if (t->current > t->peak) t->peak = t->current;
  if (qp_budget_state.current[space] > qp_budget_state.peak[space])
    qp_budget_state.peak[space] = qp_budget_state.current[space];
  for (int d = 0; d < qp_budget_state.depth; ++d) {
    qp_stage_record *r = &qp_budget_state.open[d].record;
    qp_stage_term *st = qp_stage_term_of(r, t);
    if (st && t->current > st->peak) st->peak = t->current;
    size_t *peak = space == QP_SPACE_HOST ? &r->tracked_peak : &r->device_tracked_peak;
    if (qp_budget_state.current[space] > *peak) *peak = qp_budget_state.current[space];
  }
}

/* The device space: the provider's block (cudaMalloc, hostdev's mapping), then the same
 * accounting as a host block. */
static qp_err qp_budget_alloc_device(const qp_device_memory *provider, const char *term,
                                     qp_term_kind kind, size_t bytes, void **out) {
  qp_device_block *b = malloc(sizeof *b);
  QP_CHECK(b != NULL, QP_ERR_NOMEM, "term '%s': no host memory for a device block's record", term);
  void *ptr = NULL;
  qp_err err = provider->alloc(term, bytes, &ptr);
  if (err != QP_OK) {
    free(b);
    qp_error_trace(__FILE__, __LINE__, __func__);
    return err;
  }
  pthread_mutex_lock(&qp_budget_state.lock);
  int index = qp_term_index(term, kind, QP_SPACE_DEVICE);
  if (index < 0) {
    pthread_mutex_unlock(&qp_budget_state.lock);
    provider->free(ptr);
    free(b);
    QP_FAIL(QP_ERR_INTERNAL, "more than %d budget terms", QP_TERMS_MAX);
  }
  *b = (qp_device_block){ptr, bytes, index, provider, qp_budget_state.device_live};
  qp_budget_state.device_live = b;
  qp_account(index, QP_SPACE_DEVICE, bytes, +1);
  pthread_mutex_unlock(&qp_budget_state.lock);
  *out = ptr;
  return QP_OK;
}

/* Frees `ptr` when it is a live device block; 0 when it is not one (then it is a host block). */
static int qp_budget_free_device(void *ptr) {
  pthread_mutex_lock(&qp_budget_state.lock);
  qp_device_block **link = &qp_budget_state.device_live;
  while (*link && (*link)->ptr != ptr)
    link = &(*link)->next;
  qp_device_block *b = *link;
  if (b) {
    *link = b->next;
    qp_account(b->term, QP_SPACE_DEVICE, b->bytes, -1);
  }
  pthread_mutex_unlock(&qp_budget_state.lock);
  if (!b) return 0;
  b->provider->free(ptr);
  free(b);
  return 1;
}

qp_err qp_budget_alloc(const char *term, qp_term_kind kind, qp_space space, size_t bytes,
                       void **out) {
  *out = NULL;
  QP_CHECK(term && term[0] && strlen(term) < QP_TERM_NAME_MAX, QP_ERR_INPUT,
           "budget term name '%s' is empty or longer than %d characters", term ? term : "",
           QP_TERM_NAME_MAX - 1);
  if (space == QP_SPACE_DEVICE) {
    const qp_device_memory *provider = qp_budget_device_memory_get();
    QP_CHECK(provider != NULL, QP_ERR_UNSUPPORTED,
             "term '%s': the device space needs a build of qmlpipe with CUDA (-DQP_ENABLE_CUDA=ON)",
             term);
    if (bytes == 0) return QP_OK;
    QP_CALL(qp_budget_alloc_device(provider, term, kind, bytes, out));
    return QP_OK;
  }
  if (bytes == 0) return QP_OK;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  /* Bounded: header and rounding add less than two pages to a checked byte count. */
  QP_CHECK(bytes <= SIZE_MAX - QP_HEADER_BYTES - QP_BLOCK_REDZONE - page, QP_ERR_NOMEM,
           "term '%s': %zu bytes cannot be addressed", term, bytes);
  size_t mapped = (bytes + QP_HEADER_BYTES + QP_BLOCK_REDZONE + page - 1) / page * page;
  void *base = QP_FAULT_ALLOC(term) ? MAP_FAILED : qp_page_map(mapped);
  QP_CHECK(base != MAP_FAILED, QP_ERR_NOMEM,
           "out of memory allocating term '%s' (%s) in stage '%s'", term,
           qp_bytes_readable((double)bytes).text, qp_stage_label());
  const double commit_start = qp_clock_seconds();
  qp_page_commit(base, mapped);
  const double commit_seconds = qp_clock_seconds() - commit_start;
  qp_block_header *h = base;
  pthread_mutex_lock(&qp_budget_state.lock);
  qp_budget_state.commit_seconds += commit_seconds;
  qp_budget_state.commit_bytes += mapped;
  int index = qp_term_index(term, kind, space);
  if (index < 0) {
    pthread_mutex_unlock(&qp_budget_state.lock);
    munmap(base, mapped);
    QP_FAIL(QP_ERR_INTERNAL, "more than %d budget terms", QP_TERMS_MAX);
  }
  *h = (qp_block_header){QP_BLOCK_MAGIC, bytes, mapped, index, (int)space, NULL,
                         qp_budget_state.live};
  if (qp_budget_state.live) qp_budget_state.live->prev = h;
  qp_budget_state.live = h;
  qp_account(index, space, bytes, +1);
  pthread_mutex_unlock(&qp_budget_state.lock);
  qp_block_poison(h, 1);
  *out = (char *)base + QP_HEADER_BYTES;
  return QP_OK;
}

qp_err qp_budget_alloc_array(const char *term, qp_term_kind kind, size_t count,
                             size_t elem_size, void **out) {
  *out = NULL;
  size_t bytes = 0;
  QP_CHECK(qp_size_mul(count, elem_size, &bytes), QP_ERR_NOMEM,
           "term '%s': %zu elements of %zu bytes overflow the address space", term, count,
           elem_size);
  QP_CALL(qp_budget_alloc(term, kind, QP_SPACE_HOST, bytes, out));
  return QP_OK;
}

qp_err qp_budget_alloc_doubles(const char *term, qp_term_kind kind, int64_t count, double **out) {
  *out = NULL;
  QP_CHECK(count >= 0, QP_ERR_INTERNAL,
           "term '%s': an element count of %lld doubles (negative: a size computation wrapped)",
           term, (long long)count);
  void *data = NULL;
  QP_CALL(qp_budget_alloc_array(term, kind, (size_t)count, sizeof(double), &data));
  *out = data;
  return QP_OK;
}

void qp_budget_free(void *ptr) {
  if (!ptr) return;
  if (qp_budget_free_device(ptr)) return;
  qp_block_header *h = (qp_block_header *)((char *)ptr - QP_HEADER_BYTES);
  if (h->magic != QP_BLOCK_MAGIC) {
    fprintf(stderr, "qmlpipe: internal error: qp_budget_free of a block it did not allocate\n");
    return;
  }
  pthread_mutex_lock(&qp_budget_state.lock);
  if (h->prev) h->prev->next = h->next;
  else qp_budget_state.live = h->next;
  if (h->next) h->next->prev = h->prev;
  qp_account(h->term, (qp_space)h->space, h->bytes, -1);
  pthread_mutex_unlock(&qp_budget_state.lock);
  h->magic = 0;
  qp_block_poison(h, 0);
  munmap(h, h->mapped_bytes);
}

int qp_budget_term_count(void) { return qp_budget_state.n_terms; }
const qp_term_stats *qp_budget_term(int index) {
  return index >= 0 && index < qp_budget_state.n_terms ? &qp_budget_state.terms[index] : NULL;
}
size_t qp_budget_current(qp_space space) { return qp_budget_state.current[space]; }
size_t qp_budget_peak(qp_space space) { return qp_budget_state.peak[space]; }
void qp_budget_commit_totals(double *seconds, size_t *bytes) {
  pthread_mutex_lock(&qp_budget_state.lock);
  *seconds = qp_budget_state.commit_seconds;
  *bytes = qp_budget_state.commit_bytes;
  pthread_mutex_unlock(&qp_budget_state.lock);
}

int qp_budget_dump_live(FILE *out) {
  int n = 0;
  pthread_mutex_lock(&qp_budget_state.lock);
  for (const qp_block_header *h = qp_budget_state.live; h; h = h->next, ++n)
    fprintf(out, "  live block: term '%s' %zu bytes (%s)\n",
            qp_budget_state.terms[h->term].name, h->bytes, qp_space_name((qp_space)h->space));
  for (const qp_device_block *b = qp_budget_state.device_live; b; b = b->next, ++n)
    fprintf(out, "  live block: term '%s' %zu bytes (device)\n",
            qp_budget_state.terms[b->term].name, b->bytes);
  pthread_mutex_unlock(&qp_budget_state.lock);
  return n;
}

void qp_budget_reset(void) {
  pthread_mutex_lock(&qp_budget_state.lock);
  for (int i = 0; i < qp_budget_state.n_terms; ++i) {
    qp_term_stats *t = &qp_budget_state.terms[i];
    t->peak = t->total = t->current;
    t->total_blocks = t->live_blocks;
  }
  for (int s = 0; s < 2; ++s) qp_budget_state.peak[s] = qp_budget_state.current[s];
  qp_budget_state.commit_seconds = 0.0;
  qp_budget_state.commit_bytes = 0;
  qp_budget_state.depth = 0;
  qp_budget_state.n_records = 0;
  qp_interrupt_reset();
  /* Written whole, not just forgotten: the records are ~190 KB of static storage whose pages
   * a run would otherwise touch one stage at a time (8 KB per push and per pop), untracked
   * growth inside its stages; after this they are resident, in the run's baseline. */
  memset(qp_budget_state.open, 0, sizeof qp_budget_state.open);
  memset(qp_budget_state.records, 0, sizeof qp_budget_state.records);
  pthread_mutex_unlock(&qp_budget_state.lock);
}

/* ---- stages ---- */

qp_err qp_stage_push(const char *name) {
  QP_CHECK(qp_budget_state.depth < QP_STAGE_DEPTH_MAX, QP_ERR_INTERNAL,
           "stage '%s': stages nest deeper than %d", name, QP_STAGE_DEPTH_MAX);
  QP_CHECK(strlen(name) < QP_STAGE_NAME_MAX, QP_ERR_INTERNAL, "stage name '%s' too long", name);
  qp_open_stage *s = &qp_budget_state.open[qp_budget_state.depth];
  memset(s, 0, sizeof *s);
  qp_stage_record *r = &s->record;
  snprintf(r->name, sizeof r->name, "%s", name);
  int hwm_reset = 0, cg_reset = 0;
  qp_meter_reset_peaks(&hwm_reset, &cg_reset);
  qp_meter_read(&r->meter_start);
  r->meter_start.hwm_reset = hwm_reset;
  r->meter_start.cgroup_peak_reset = cg_reset;
  pthread_mutex_lock(&qp_budget_state.lock);
  r->tracked_at_start = r->tracked_peak = qp_budget_state.current[QP_SPACE_HOST];
  r->device_tracked_at_start = r->device_tracked_peak = qp_budget_state.current[QP_SPACE_DEVICE];
  for (int i = 0; i < qp_budget_state.n_terms; ++i) {
    const qp_term_stats *t = &qp_budget_state.terms[i];
    if (t->current == 0) continue;
    qp_stage_term *st = qp_stage_term_of(r, t);
    if (st) st->at_start = st->peak = t->current;
  }
  qp_budget_state.depth++;
  pthread_mutex_unlock(&qp_budget_state.lock);
  qp_timeline_mark(name, 1); /* an event and a sample, when the sampler runs (timeline.h) */
  s->start = qp_clock_seconds();
  qp_interrupt_stage_enter(name); /* a signal now names this stage (interrupt.h) */
  return QP_OK;
}

qp_err qp_stage_pop(void) {
  QP_CHECK(qp_budget_state.depth > 0, QP_ERR_INTERNAL, "qp_stage_pop without a stage");
  qp_open_stage *s = &qp_budget_state.open[qp_budget_state.depth - 1];
  qp_stage_record *r = &s->record;
  r->seconds = qp_clock_seconds() - s->start;
  int hwm_reset = r->meter_start.hwm_reset, cg_reset = r->meter_start.cgroup_peak_reset;
  qp_meter_read(&r->meter_end);
  r->meter_end.hwm_reset = hwm_reset;
  r->meter_end.cgroup_peak_reset = cg_reset;
  pthread_mutex_lock(&qp_budget_state.lock);
  r->tracked_at_end = qp_budget_state.current[QP_SPACE_HOST];
  r->device_tracked_at_end = qp_budget_state.current[QP_SPACE_DEVICE];
  for (int i = 0; i < r->n_terms; ++i) {
    qp_stage_term *st = &r->terms[i];
    for (int k = 0; k < qp_budget_state.n_terms; ++k) {
      const qp_term_stats *t = &qp_budget_state.terms[k];
      if (t->space == st->space && strcmp(t->name, st->name) == 0) st->at_end = t->current;
    }
  }
  qp_budget_state.depth--;
  qp_interrupt_stage_leave();
  int stored = qp_budget_state.n_records < QP_STAGES_MAX;
  if (stored) qp_budget_state.records[qp_budget_state.n_records++] = *r;
  pthread_mutex_unlock(&qp_budget_state.lock);
  qp_timeline_mark(r->name, 0);
  QP_CHECK(stored, QP_ERR_INTERNAL, "more than %d stage records", QP_STAGES_MAX);
  return QP_OK;
}

void qp_stage_mark_resumed(void) {
  if (qp_budget_state.depth > 0) qp_budget_state.open[qp_budget_state.depth - 1].record.resumed = 1;
}

void qp_stage_add_flops(double flops) {
  for (int d = 0; d < qp_budget_state.depth; ++d) qp_budget_state.open[d].record.flops += flops;
}

const char *qp_stage_current(void) {
  return qp_budget_state.depth > 0 ? qp_budget_state.open[qp_budget_state.depth - 1].record.name
                                   : "";
}

const char *qp_stage_label(void) {
  const char *name = qp_stage_current();
  return name[0] ? name : "(none)";
}

int qp_stage_record_count(void) { return qp_budget_state.n_records; }
const qp_stage_record *qp_stage_record_get(int index) {
  return index >= 0 && index < qp_budget_state.n_records ? &qp_budget_state.records[index] : NULL;
}
const qp_stage_record *qp_stage_record_find(const char *name) {
  for (int i = qp_budget_state.n_records - 1; i >= 0; --i)
    if (strcmp(qp_budget_state.records[i].name, name) == 0) return &qp_budget_state.records[i];
  return NULL;
}
