/* hostdev_memory.c: the emulated device memory of the test backend hostdev (hostdev.h): host
 * memory mapped PROT_NONE, opened only inside hostdev's operations, the budget's device-memory
 * provider (its blocks, capacity, meter) and the test hooks QP_HOSTDEV_CAPACITY and
 * QP_HOSTDEV_CONTEXT. */
#include "hostdev_private.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bytes_text.h"
#include "device_memory.h"
#include "meter_device.h"
#include "qp_config.h"

/* The registry of live blocks (the allocator's own bookkeeping, malloc'ed like alloc.c's
 * device records). `mapped` is the sum of their bytes, what the meter reports; allocations
 * reserve their bytes there before mapping, so that the capacity holds under any thread. */
static struct {
  pthread_mutex_t lock;
  qp_hostdev_block *blocks;
  int count, slots;
  size_t mapped, capacity;
  char *context; /* QP_HOSTDEV_CONTEXT's block (never freed), or NULL */
  size_t context_bytes;
} qp_hostdev_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

size_t qp_hostdev_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* A batch (qp_hostdev_dist's tiled operations): the blocks its local steps opened, each whole
 * and once, kept open until the distributed operation ends. Strictly one page range per
 * operand and step, a tiled potrf of n_pix 240 on block 8 makes ~10^5 mprotect calls at ~40 us
 * each on this VM (a 2-rank hostdev test 50 s, against 3 s without them); batched, a few per
 * operation. Between a stage's calls every block is PROT_NONE as before; inside, only the
 * tiled code of linalg runs, whose host accesses are its own host buffers (test_tiled runs it
 * on hostdev step by step, unbatched). */
enum { QP_HOSTDEV_BATCH_MAX = 16 };
static struct {
  int active;
  qp_hostdev_block open[QP_HOSTDEV_BATCH_MAX];
  int count;
} qp_hostdev_batch;

void qp_hostdev_batch_begin(void) { qp_hostdev_batch.active = 1; }

void qp_hostdev_batch_end(void) {
  for (int i = 0; i < qp_hostdev_batch.count; ++i)
    if (mprotect(qp_hostdev_batch.open[i].base, qp_hostdev_batch.open[i].bytes, PROT_NONE) != 0)
      fprintf(stderr, "qmlpipe: hostdev: mprotect(PROT_NONE) failed: %s\n", strerror(errno));
  qp_hostdev_batch.count = 0;
  qp_hostdev_batch.active = 0;
}

int qp_hostdev_batch_open(const qp_hostdev_block *b) {
  if (!qp_hostdev_batch.active) return 0;
  for (int i = 0; i < qp_hostdev_batch.count; ++i)
    if (qp_hostdev_batch.open[i].base == b->base) return 1;
  if (qp_hostdev_batch.count == QP_HOSTDEV_BATCH_MAX ||
      mprotect(b->base, b->bytes, PROT_READ | PROT_WRITE) != 0)
    return 0;
  qp_hostdev_batch.open[qp_hostdev_batch.count++] = *b;
  return 1;
}

/* A block freed inside a batch (a transient workspace) leaves it. */
static void qp_hostdev_batch_forget(const void *base) {
  for (int i = 0; i < qp_hostdev_batch.count; ++i)
    if (qp_hostdev_batch.open[i].base == base) {
      qp_hostdev_batch.open[i] = qp_hostdev_batch.open[--qp_hostdev_batch.count];
      return;
    }
}

/* ---- the device-memory provider (device_memory.h) ---- */

/* Adds a mapped block to the registry; 0 when its record cannot be had. */
static int qp_hostdev_register(char *base, size_t bytes, size_t asked) {
  pthread_mutex_lock(&qp_hostdev_state.lock);
  int ok = 1;
  if (qp_hostdev_state.count == qp_hostdev_state.slots) {
    int slots = qp_hostdev_state.slots ? 2 * qp_hostdev_state.slots : 64;
    qp_hostdev_block *grown =
        realloc(qp_hostdev_state.blocks, (size_t)slots * sizeof *qp_hostdev_state.blocks);
    if (grown) {
      qp_hostdev_state.blocks = grown;
      qp_hostdev_state.slots = slots;
    } else {
      ok = 0;
    }
  }
  if (ok)
    qp_hostdev_state.blocks[qp_hostdev_state.count++] = (qp_hostdev_block){base, bytes, asked};
  pthread_mutex_unlock(&qp_hostdev_state.lock);
  return ok;
}

/* Reserves (sign > 0) or gives back `bytes` of the capacity; 0 when they do not fit. */
static int qp_hostdev_reserve(size_t bytes, int sign) {
  pthread_mutex_lock(&qp_hostdev_state.lock);
  int ok = 1;
  if (sign < 0)
    qp_hostdev_state.mapped -= bytes;
  else if (qp_hostdev_state.capacity && /* a capacity set below what is mapped admits nothing */
           (qp_hostdev_state.mapped > qp_hostdev_state.capacity ||
            bytes > qp_hostdev_state.capacity - qp_hostdev_state.mapped))
    ok = 0;
  else
    qp_hostdev_state.mapped += bytes;
  pthread_mutex_unlock(&qp_hostdev_state.lock);
  return ok;
}

/* Maps `bytes` (page-rounded, > 0) of committed zero pages followed by a guard page, all
 * PROT_NONE on return; NULL with errno when mmap or mprotect refuses. The guard is reserved
 * only (never committed): the data is mapped over the first part of the reservation. */
static char *qp_hostdev_map(size_t bytes) {
  const size_t page = qp_hostdev_page();
  char *base =
      mmap(NULL, bytes + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return NULL;
  if (mmap(base, bytes, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0) == MAP_FAILED ||
      mprotect(base, bytes, PROT_NONE) != 0) {
    const int saved = errno;
    munmap(base, bytes + page);
    errno = saved;
    return NULL;
  }
  return base;
}

static qp_err qp_hostdev_alloc(const char *term, size_t bytes, void **out) {
  *out = NULL;
  QP_CHECK(bytes > 0, QP_ERR_INTERNAL, "hostdev: term '%s': a device block of 0 bytes", term);
  const size_t page = qp_hostdev_page();
  QP_CHECK(bytes <= SIZE_MAX - 2 * page, QP_ERR_NOMEM,
           "term '%s': %zu device bytes cannot be addressed", term, bytes);
  const size_t rounded = (bytes + page - 1) / page * page;
  QP_CHECK(qp_hostdev_reserve(rounded, +1), QP_ERR_NOMEM,
           "out of device memory allocating term '%s' (%zu bytes, %s) in stage '%s': "
           "hostdev's capacity is %zu bytes and %zu are in use",
           term, bytes, qp_bytes_readable((double)bytes).text, qp_stage_label(),
           qp_hostdev_state.capacity, qp_hostdev_mapped_bytes());
  char *base = qp_hostdev_map(rounded);
  if (!base) {
    const int saved = errno;
    qp_hostdev_reserve(rounded, -1);
    QP_FAIL(QP_ERR_NOMEM,
            "out of device memory allocating term '%s' (%s) in stage '%s' (hostdev: "
            "mmap: %s)",
            term, qp_bytes_readable((double)bytes).text, qp_stage_label(), strerror(saved));
  }
  if (!qp_hostdev_register(base, rounded, bytes)) {
    munmap(base, rounded + page);
    qp_hostdev_reserve(rounded, -1);
    QP_FAIL(QP_ERR_NOMEM, "term '%s': no host memory for hostdev's record of its block", term);
  }
  *out = base;
  return QP_OK;
}

static void qp_hostdev_free(void *ptr) {
  pthread_mutex_lock(&qp_hostdev_state.lock);
  size_t bytes = 0;
  for (int i = 0; i < qp_hostdev_state.count; ++i) {
    if (qp_hostdev_state.blocks[i].base != ptr) continue;
    bytes = qp_hostdev_state.blocks[i].bytes;
    qp_hostdev_state.blocks[i] = qp_hostdev_state.blocks[--qp_hostdev_state.count];
    qp_hostdev_state.mapped -= bytes;
    break;
  }
  pthread_mutex_unlock(&qp_hostdev_state.lock);
  if (bytes == 0) {
    fprintf(stderr, "qmlpipe: internal error: hostdev free of a block it did not allocate\n");
    return;
  }
  qp_hostdev_batch_forget(ptr);
  munmap(ptr, bytes + qp_hostdev_page());
}

static void qp_hostdev_meter(int64_t *used, int64_t *total) {
  pthread_mutex_lock(&qp_hostdev_state.lock);
  *used = (int64_t)qp_hostdev_state.mapped;
  size_t capacity = qp_hostdev_state.capacity;
  pthread_mutex_unlock(&qp_hostdev_state.lock);
  if (!capacity) capacity = (size_t)sysconf(_SC_PHYS_PAGES) * qp_hostdev_page();
  *total = (int64_t)capacity;
}

static const qp_device_memory qp_hostdev_memory = {.name = QP_HOSTDEV_DEVICE_NAME,
                                                   .alloc = qp_hostdev_alloc,
                                                   .free = qp_hostdev_free,
                                                   .meter = qp_hostdev_meter};

void qp_hostdev_set_capacity(size_t bytes) {
  pthread_mutex_lock(&qp_hostdev_state.lock);
  qp_hostdev_state.capacity = bytes;
  pthread_mutex_unlock(&qp_hostdev_state.lock);
}

size_t qp_hostdev_mapped_bytes(void) {
  pthread_mutex_lock(&qp_hostdev_state.lock);
  const size_t mapped = qp_hostdev_state.mapped;
  pthread_mutex_unlock(&qp_hostdev_state.lock);
  return mapped;
}

/* A byte count from the environment variable `name` ("what": what it gives, for the message):
 * bytes, with an optional K, M or G (1024-based); *set 0 when it is unset. */
static qp_err qp_hostdev_bytes_from_env(const char *name, const char *what, size_t *bytes,
                                        int *set) {
  const char *text = getenv(name);
  *set = text != NULL;
  if (!text) return QP_OK;
  char *end = NULL;
  errno = 0;
  const unsigned long long value = strtoull(text, &end, 10);
  const char *units = "KMG";
  const char *unit = end && *end ? strchr(units, *end) : NULL;
  const int shift = unit ? 10 * (int)(unit - units + 1) : 0;
  QP_CHECK(text[0] >= '0' && text[0] <= '9' && errno == 0 && end != text &&
               (*end == '\0' || (unit && end[1] == '\0')) && value <= (SIZE_MAX >> shift),
           QP_ERR_INPUT, "%s='%s': expected %s, e.g. 268435456 or 256M (K, M, G: 1024-based)", name,
           text, what);
  *bytes = (size_t)value << shift;
  return QP_OK;
}

/* QP_HOSTDEV_CAPACITY: the emulated device's size; unset leaves it be. */
static qp_err qp_hostdev_capacity_from_env(void) {
  size_t bytes = 0;
  int set = 0;
  QP_CALL(qp_hostdev_bytes_from_env("QP_HOSTDEV_CAPACITY", "the emulated device's bytes", &bytes,
                                    &set));
  if (set) qp_hostdev_set_capacity(bytes);
  return QP_OK;
}

/* QP_HOSTDEV_CONTEXT: the emulated context, mapped once (the first init) and never freed, as
 * a CUDA context lives as long as the process; not tracked (cudaMalloc does not see a
 * context), only metered. */
static qp_err qp_hostdev_context_from_env(void) {
  size_t bytes = 0;
  int set = 0;
  if (qp_hostdev_state.context) return QP_OK;
  QP_CALL(qp_hostdev_bytes_from_env("QP_HOSTDEV_CONTEXT", "the emulated context's bytes", &bytes,
                                    &set));
  if (!set || bytes == 0) return QP_OK;
  void *block = NULL;
  QP_CALL(qp_hostdev_alloc("device context (QP_HOSTDEV_CONTEXT)", bytes, &block));
  qp_hostdev_state.context = block;
  qp_hostdev_state.context_bytes = bytes;
  return QP_OK;
}

qp_err qp_hostdev_init(void) {
  QP_CALL(qp_hostdev_capacity_from_env());
  QP_CALL(qp_hostdev_context_from_env());
  qp_budget_device_memory_set(&qp_hostdev_memory);
#if !QP_HAVE_CUDA
  /* With CUDA the device meter is cudaMemGetInfo's, whose baseline needs a CUDA context. */
  if (strcmp(qp_meter_device_name(), QP_HOSTDEV_DEVICE_NAME) != 0)
    QP_CALL(qp_meter_device_baseline());
#endif
  return QP_OK;
}

int qp_hostdev_find(uintptr_t first, uintptr_t end, qp_hostdev_block *found) {
  int ok = 0;
  pthread_mutex_lock(&qp_hostdev_state.lock);
  for (int i = 0; i < qp_hostdev_state.count && !ok; ++i) {
    const qp_hostdev_block *b = &qp_hostdev_state.blocks[i];
    if (first >= (uintptr_t)b->base && end <= (uintptr_t)b->base + b->asked) {
      *found = *b;
      ok = 1;
    }
  }
  pthread_mutex_unlock(&qp_hostdev_state.lock);
  return ok;
}

