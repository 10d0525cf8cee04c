/* hostdev.c: the test backend hostdev (hostdev.h): the cpu operations (one rank) or the dist
 * operations (several) on host memory that is inaccessible (PROT_NONE) outside them. */
#include "hostdev.h"

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
#include "tiled.h"
#include "tiled_table.h"

/* A live block: `bytes` (page-rounded) of data at `base`, followed by one guard page; `asked`
 * of them were asked for, and operands must lie inside those. */
typedef struct qp_hostdev_block {
  char *base;
  size_t bytes, asked;
} qp_hostdev_block;

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

static size_t qp_hostdev_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

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

static void qp_hostdev_batch_begin(void) { qp_hostdev_batch.active = 1; }

static void qp_hostdev_batch_end(void) {
  for (int i = 0; i < qp_hostdev_batch.count; ++i)
    if (mprotect(qp_hostdev_batch.open[i].base, qp_hostdev_batch.open[i].bytes, PROT_NONE) != 0)
      fprintf(stderr, "qmlpipe: hostdev: mprotect(PROT_NONE) failed: %s\n", strerror(errno));
  qp_hostdev_batch.count = 0;
  qp_hostdev_batch.active = 0;
}

/* In a batch: 1 when b is open, opening it (whole) when there is room; 0 outside a batch or
 * when the batch is full (the operand is then opened for its step only). */
static int qp_hostdev_batch_open(const qp_hostdev_block *b) {
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

/* ---- the emulated library's own buffers (hostdev.h): what the memory model predicts ---- */

/* The buffers hostdev holds for `op` at order n (the table's workspaces, matrix.h): a panel of
 * QP_HOSTDEV_WORKSPACE_COLUMNS doubles per row for the factorisations, 8 n of pivots for the
 * LU's two operations; nothing for the rest. Sizes of whole matrices' orders: no overflow
 * below 2^52 rows, far beyond any term the model accepts (2^56 bytes). */
static qp_err qp_hostdev_workspaces(qp_linalg_op op, int64_t n, int64_t nrhs, qp_workspace *out,
                                    int *count) {
  (void)nrhs;
  *count = 0;
  const size_t rows = n > 0 ? (size_t)n : 0;
  if (op == QP_OP_POTRF || op == QP_OP_POTRI || op == QP_OP_TRTRI || op == QP_OP_GETRF)
    out[(*count)++] = (qp_workspace){QP_TERM_HOSTDEV_WORKSPACE, QP_SPACE_DEVICE,
                                     rows * QP_HOSTDEV_WORKSPACE_COLUMNS * sizeof(double)};
  if (op == QP_OP_GETRF || op == QP_OP_GETRS)
    out[(*count)++] = (qp_workspace){QP_TERM_HOSTDEV_PIVOTS, QP_SPACE_DEVICE, rows * 8};
  return QP_OK;
}

/* The blocks held now, one per term of qp_hostdev_workspaces (the calling thread's: one thread
 * calls the operations). */
enum { QP_HOSTDEV_HELD = 2 };
static struct {
  void *block;
  size_t bytes;
} qp_hostdev_held[QP_HOSTDEV_HELD];

static int qp_hostdev_held_slot(const char *term) {
  return strcmp(term, QP_TERM_HOSTDEV_WORKSPACE) == 0 ? 0 : 1;
}

/* Grows term `term` to `bytes`, as cuda's workspaces grow: the old block is freed before the
 * larger one is taken (the table's hold_workspace; a term it does not hold is left alone). */
static qp_err qp_hostdev_hold_workspace(const char *term, size_t bytes) {
  if (strcmp(term, QP_TERM_HOSTDEV_WORKSPACE) != 0 && strcmp(term, QP_TERM_HOSTDEV_PIVOTS) != 0)
    return QP_OK;
  const int slot = qp_hostdev_held_slot(term);
  if (bytes <= qp_hostdev_held[slot].bytes) return QP_OK;
  qp_budget_free(qp_hostdev_held[slot].block);
  qp_hostdev_held[slot].block = NULL;
  qp_hostdev_held[slot].bytes = 0;
  QP_CALL(qp_budget_alloc(term, QP_TERM_PERSISTENT, QP_SPACE_DEVICE, bytes,
                          &qp_hostdev_held[slot].block));
  qp_hostdev_held[slot].bytes = bytes;
  return QP_OK;
}

/* Holds what `op` on m needs. Distributed operands (hostdev-dist's) hold nothing. */
static qp_err qp_hostdev_hold(qp_linalg_op op, const qp_matrix *m) {
  if (m->grid) return QP_OK;
  qp_workspace need[QP_WORKSPACES_MAX];
  int count = 0;
  QP_CALL(qp_hostdev_workspaces(op, m->rows, 0, need, &count));
  for (int i = 0; i < count; ++i) QP_CALL(qp_hostdev_hold_workspace(need[i].term, need[i].bytes));
  return QP_OK;
}

static void qp_hostdev_release_workspaces(void) {
  for (int slot = 0; slot < QP_HOSTDEV_HELD; ++slot) {
    qp_budget_free(qp_hostdev_held[slot].block);
    qp_hostdev_held[slot].block = NULL;
    qp_hostdev_held[slot].bytes = 0;
  }
}

/* ---- operations: the inner table's, inside a scope where their operands' blocks are open ---- */

/* The wrappers below run the cpu table's operations on one process's operands: hostdev's own,
 * and the views of local parts that the tiled algorithms of hostdev-dist and hostdev-tiled
 * hand their local table. A block-cyclic matrix's host twin (a download or upload of its
 * local part) is dist's. */
static const qp_linalg_ops *qp_hostdev_inner(const qp_matrix *m) {
  return m->grid ? qp_linalg_dist_ops() : qp_linalg_cpu_ops();
}

enum { QP_HOSTDEV_OPERANDS_MAX = 3 };

/* The page ranges an operation opened: each operand's span of pages, not its whole block, so
 * that an operation on a view (a tile, a panel: the tiled algorithms' local steps) costs the
 * kernel its pages only, and touching the block outside the operand still faults. */
typedef struct qp_hostdev_scope {
  qp_hostdev_block open[QP_HOSTDEV_OPERANDS_MAX]; /* base and bytes: a page range */
  int count;
} qp_hostdev_scope;

static void qp_hostdev_close(qp_hostdev_scope *s) {
  for (int i = 0; i < s->count; ++i)
    if (mprotect(s->open[i].base, s->open[i].bytes, PROT_NONE) != 0)
      fprintf(stderr, "qmlpipe: hostdev: mprotect(PROT_NONE) failed: %s\n", strerror(errno));
  s->count = 0;
}

/* The live block whose asked-for bytes hold every entry of m (local_rows x local_cols at ld),
 * or 0: a view running past them is refused, even inside the page rounding. */
static uintptr_t qp_hostdev_end(const qp_matrix *m) { /* one past m's last entry */
  return (uintptr_t)m->data +
         (uintptr_t)((m->local_cols - 1) * m->ld + m->local_rows) * sizeof(double);
}

static int qp_hostdev_find(const qp_matrix *m, qp_hostdev_block *found) {
  const uintptr_t first = (uintptr_t)m->data, end = qp_hostdev_end(m);
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

/* Checks that m is a hostdev device matrix and opens the pages its entries span. */
static qp_err qp_hostdev_open_one(const char *op, const qp_matrix *m, qp_hostdev_scope *s) {
  QP_CHECK(m->space == QP_SPACE_DEVICE, QP_ERR_INTERNAL,
           "hostdev %s: matrix '%s' is in host memory, not on the device", op, m->name);
  if (m->local_rows == 0 || m->local_cols == 0) return QP_OK; /* no entry: nothing to open */
  qp_hostdev_block b;
  QP_CHECK(m->data && qp_hostdev_find(m, &b), QP_ERR_INTERNAL,
           "hostdev %s: matrix '%s' (%lldx%lld, ld %lld) does not lie inside a live hostdev "
           "block (a device address a GPU would call illegal)",
           op, m->name, (long long)m->local_rows, (long long)m->local_cols, (long long)m->ld);
  if (qp_hostdev_batch_open(&b)) return QP_OK;
  const uintptr_t page = qp_hostdev_page(), first = (uintptr_t)m->data, end = qp_hostdev_end(m);
  char *from = (char *)(first / page * page);
  const size_t bytes = (end + page - 1) / page * page - (uintptr_t)from; /* inside b's pages */
  QP_CHECK(mprotect(from, bytes, PROT_READ | PROT_WRITE) == 0, QP_ERR_INTERNAL,
           "hostdev %s: mprotect of matrix '%s': %s", op, m->name, strerror(errno));
  s->open[s->count++] = (qp_hostdev_block){from, bytes, bytes};
  return QP_OK;
}

/* Opens the blocks of every operand; on an error, none stays open. An operation (`compute`)
 * on a block-cyclic operand is refused: no table sends one here (hostdev-dist's operations are
 * the tiled algorithms, which call this table on local views), and the cpu operations would
 * read its local part as a whole matrix. Downloads and uploads of a local part are fine. */
static qp_err qp_hostdev_open(const char *op, int compute, const qp_matrix *const *operands,
                              int n, qp_hostdev_scope *s) {
  s->count = 0;
  for (int k = 0; k < n; ++k)
    QP_CHECK(!compute || !operands[k]->grid, QP_ERR_INTERNAL,
             "hostdev %s: matrix '%s' is block-cyclic: a distributed table's operations are "
             "tiled (linalg/tiled/tiled.h)", op, operands[k]->name);
  qp_err err = QP_OK;
  for (int k = 0; k < n && err == QP_OK; ++k) err = qp_hostdev_open_one(op, operands[k], s);
  if (err != QP_OK) qp_hostdev_close(s);
  return err;
}

/* Runs `call` (a qp_err expression on the operands) inside their scope and returns its status;
 * `compute`: an operation (not a copy to or from the host). */
#define QP_HOSTDEV_SCOPED(op, compute, call, ...)                                                \
  do {                                                                                           \
    const qp_matrix *const operands_[] = {__VA_ARGS__};                                          \
    qp_hostdev_scope scope_;                                                                     \
    QP_CALL(qp_hostdev_open(op, compute, operands_,                                              \
                            (int)(sizeof operands_ / sizeof *operands_), &scope_));              \
    const qp_err status_ = (call);                                                               \
    qp_hostdev_close(&scope_);                                                                   \
    if (status_ != QP_OK) qp_error_trace(__FILE__, __LINE__, __func__);                          \
    return status_;                                                                              \
  } while (0)

/* The cpu table's operation `member` on the operands. */
#define QP_HOSTDEV_RUN(member, args, ...)                                                        \
  QP_HOSTDEV_SCOPED(#member, 1, qp_linalg_cpu_ops()->member args, __VA_ARGS__)

/* A host-space twin of a device matrix: what qp_linalg_download/upload copy through while
 * its block is open (local entries only: no rank's download or upload is collective). */
static qp_matrix qp_hostdev_as_host(const qp_matrix *m) {
  qp_matrix h = *m;
  h.space = QP_SPACE_HOST;
  h.ops = qp_hostdev_inner(m);
  return h;
}

/* The local block (li.., lj..) of m, rows x cols: what a download or upload opens. */
static qp_matrix qp_hostdev_sub(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                                int64_t cols) {
  qp_matrix sub = *m;
  sub.data = m->data + li + lj * m->ld;
  sub.local_rows = rows;
  sub.local_cols = cols;
  return sub;
}

static qp_err qp_hostdev_download(const qp_matrix *m, int64_t li, int64_t lj, int64_t rows,
                                  int64_t cols, double *host, int64_t ld) {
  const qp_matrix h = qp_hostdev_as_host(m), sub = qp_hostdev_sub(m, li, lj, rows, cols);
  QP_HOSTDEV_SCOPED("download", 0, qp_linalg_download(&h, li, lj, rows, cols, host, ld), &sub);
}

static qp_err qp_hostdev_upload(const double *host, int64_t ld, qp_matrix *m, int64_t li,
                                int64_t lj, int64_t rows, int64_t cols) {
  qp_matrix h = qp_hostdev_as_host(m);
  const qp_matrix sub = qp_hostdev_sub(m, li, lj, rows, cols);
  QP_HOSTDEV_SCOPED("upload", 0, qp_linalg_upload(host, ld, &h, li, lj, rows, cols), &sub);
}

static qp_err qp_hostdev_potrf(qp_matrix *a) {
  QP_CALL(qp_hostdev_hold(QP_OP_POTRF, a));
  QP_HOSTDEV_RUN(potrf, (a), a);
}

/* cpu's potri leaves the lower half; a device backend leaves the full inverse (matrix.h). The
 * dist table has no potri, nor hostdev-dist. */
static qp_err qp_hostdev_potri_full(qp_matrix *l) {
  QP_CALL(qp_linalg_cpu_ops()->potri(l));
  qp_matrix_symmetrize_lower(l);
  return QP_OK;
}
static qp_err qp_hostdev_potri(qp_matrix *l) {
  QP_CALL(qp_hostdev_hold(QP_OP_POTRI, l));
  QP_HOSTDEV_SCOPED("potri", 1, qp_hostdev_potri_full(l), l);
}

static qp_err qp_hostdev_trtri(qp_matrix *l) {
  QP_CALL(qp_hostdev_hold(QP_OP_TRTRI, l));
  QP_HOSTDEV_RUN(trtri, (l), l);
}

static qp_err qp_hostdev_trmm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                              qp_matrix *b) {
  QP_HOSTDEV_RUN(trmm, (side, trans, alpha, l, b), l, b);
}

static qp_err qp_hostdev_trsm(qp_side side, qp_trans trans, double alpha, const qp_matrix *l,
                              qp_matrix *b) {
  QP_HOSTDEV_RUN(trsm, (side, trans, alpha, l, b), l, b);
}

static qp_err qp_hostdev_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                              const qp_matrix *b, double beta, qp_matrix *c) {
  QP_HOSTDEV_RUN(gemm, (ta, tb, alpha, a, b, beta, c), a, b, c);
}

static qp_err qp_hostdev_syrk(qp_trans trans, double alpha, const qp_matrix *a, double beta,
                              qp_matrix *c) {
  QP_HOSTDEV_RUN(syrk, (trans, alpha, a, beta, c), a, c);
}

static qp_err qp_hostdev_getrf(qp_matrix *a, int *pivots) {
  QP_CALL(qp_hostdev_hold(QP_OP_GETRF, a));
  QP_HOSTDEV_RUN(getrf, (a, pivots), a);
}

static qp_err qp_hostdev_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_CALL(qp_hostdev_hold(QP_OP_GETRS, lu));
  QP_HOSTDEV_RUN(getrs, (lu, pivots, b), lu, b);
}

static qp_err qp_hostdev_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_RUN(potrs, (l, b), l, b);
}

/* The dist table has no trace_product, nor hostdev-dist (stages sum partial products). */
static qp_err qp_hostdev_trace_product(const qp_matrix *a, const qp_matrix *b, double *out) {
  QP_HOSTDEV_RUN(trace_product, (a, b, out), a, b);
}

/* A host destination is accepted: on several ranks qp_linalg_align redistributes a window of
 * a device matrix into a host work matrix of another layout with it (on a GPU: a device
 * gemr2d, then a download). */
static qp_err qp_hostdev_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a, int64_t ai,
                                  int64_t aj, qp_matrix *b, int64_t bi, int64_t bj) {
  if (b->space == QP_SPACE_HOST) QP_HOSTDEV_RUN(copy_sub, (rows, cols, a, ai, aj, b, bi, bj), a);
  QP_HOSTDEV_RUN(copy_sub, (rows, cols, a, ai, aj, b, bi, bj), a, b);
}

static qp_err qp_hostdev_norm1(const qp_matrix *a, double *out) {
  QP_HOSTDEV_RUN(norm1, (a, out), a);
}

static qp_err qp_hostdev_pocon(const qp_matrix *l, double anorm, double *rcond) {
  QP_HOSTDEV_RUN(pocon, (l, anorm, rcond), l);
}

static qp_err qp_hostdev_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  QP_HOSTDEV_RUN(gecon, (lu, anorm, rcond), lu);
}

static qp_err qp_hostdev_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_HOSTDEV_RUN(transpose, (a, b), a, b);
}

static qp_err qp_hostdev_clear_upper(qp_matrix *a) { QP_HOSTDEV_RUN(clear_upper, (a), a); }
static qp_err qp_hostdev_scale(qp_matrix *a, const qp_run_scale *rows, const qp_run_scale *cols) {
  QP_HOSTDEV_RUN(scale, (a, rows, cols), a);
}

/* The wrappers every hostdev table has; the tables differ in their layout, the host table
 * that goes with them, how partial sums are completed, the two operations dist lacks, and
 * those hostdev-dist runs as tiled algorithms. */
#define QP_HOSTDEV_SHARED_OPS                                                                    \
  .space = QP_SPACE_DEVICE, .moves_data = 1, .download = qp_hostdev_download,                    \
  .upload = qp_hostdev_upload

/* One rank: align and replicate download into host work matrices of the cpu table (moves_data
 * because the space is the device's); sum_partials NULL: one process holds every matrix. */
static const qp_linalg_ops qp_hostdev_ops_table = {
    QP_HOSTDEV_SHARED_OPS,
    .getrf = qp_hostdev_getrf,
    .getrs = qp_hostdev_getrs,
    .potrs = qp_hostdev_potrs,
    .gecon = qp_hostdev_gecon,
    .potrf = qp_hostdev_potrf,
    .trmm = qp_hostdev_trmm,
    .trsm = qp_hostdev_trsm,
    .gemm = qp_hostdev_gemm,
    .syrk = qp_hostdev_syrk,
    .norm1 = qp_hostdev_norm1,
    .pocon = qp_hostdev_pocon,
    .trtri = qp_hostdev_trtri,
    .copy_sub = qp_hostdev_copy_sub,
    .transpose = qp_hostdev_transpose,
    .clear_upper = qp_hostdev_clear_upper,
    .scale = qp_hostdev_scale,
    .name = "hostdev",
    .host_table = qp_linalg_cpu_ops,
    .potri = qp_hostdev_potri,
    .trace_product = qp_hostdev_trace_product,
    .workspaces = qp_hostdev_workspaces,
    .release_workspaces = qp_hostdev_release_workspaces,
    .hold_workspace = qp_hostdev_hold_workspace,
};

const qp_linalg_ops *qp_linalg_hostdev_ops(void) { return &qp_hostdev_ops_table; }

/* The local parts of block-cyclic matrices, each rank's in its own emulated device: the host
 * matrices beside them are dist's (work matrices of align and replicate, staging is their
 * local parts), a rank's partial sums are completed over the ranks as dist's are. */
static qp_err qp_hostdev_sum_partials(double *x, int64_t count) {
  return qp_linalg_sum_partials(qp_linalg_dist_ops(), x, count);
}

/* Its buffers: the tiled algorithms' held blocks and its local table's (the diagonal blocks'
 * Cholesky). */
static qp_err qp_hostdev_dist_hold_workspace(const char *term, size_t bytes) {
  QP_CALL(qp_tiled_hold(term, QP_SPACE_DEVICE, bytes));
  return qp_hostdev_hold_workspace(term, bytes);
}

static void qp_hostdev_dist_release_workspaces(void) {
  qp_tiled_release();
  qp_hostdev_release_workspaces();
}

/* The tiled operations, each a batch (above). */
#define QP_HOSTDEV_BATCHED(call)                                                                 \
  do {                                                                                           \
    qp_hostdev_batch_begin();                                                                    \
    const qp_err status_ = (call);                                                               \
    qp_hostdev_batch_end();                                                                      \
    return status_;                                                                              \
  } while (0)

static qp_err qp_hostdev_dist_potrf(qp_matrix *a) { QP_HOSTDEV_BATCHED(qp_tiled_potrf(a)); }
static qp_err qp_hostdev_dist_trsm(qp_side side, qp_trans trans, double alpha,
                                   const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_trsm(side, trans, alpha, l, b));
}
static qp_err qp_hostdev_dist_trmm(qp_side side, qp_trans trans, double alpha,
                                   const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_trmm(side, trans, alpha, l, b));
}
static qp_err qp_hostdev_dist_gemm(qp_trans ta, qp_trans tb, double alpha, const qp_matrix *a,
                                   const qp_matrix *b, double beta, qp_matrix *c) {
  QP_HOSTDEV_BATCHED(qp_tiled_gemm(ta, tb, alpha, a, b, beta, c));
}
static qp_err qp_hostdev_dist_syrk(qp_trans trans, double alpha, const qp_matrix *a,
                                   double beta, qp_matrix *c) {
  QP_HOSTDEV_BATCHED(qp_tiled_syrk(trans, alpha, a, beta, c));
}
static qp_err qp_hostdev_dist_norm1(const qp_matrix *a, double *out) {
  QP_HOSTDEV_BATCHED(qp_tiled_norm1(a, out));
}
static qp_err qp_hostdev_dist_pocon(const qp_matrix *l, double anorm, double *rcond) {
  QP_HOSTDEV_BATCHED(qp_tiled_pocon(l, anorm, rcond));
}
static qp_err qp_hostdev_dist_trtri(qp_matrix *l) { QP_HOSTDEV_BATCHED(qp_tiled_trtri(l)); }
static qp_err qp_hostdev_dist_transpose(const qp_matrix *a, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_transpose(a, b));
}
static qp_err qp_hostdev_dist_clear_upper(qp_matrix *a) {
  QP_HOSTDEV_BATCHED(qp_tiled_clear_upper(a));
}
static qp_err qp_hostdev_dist_scale(qp_matrix *a, const qp_run_scale *rows,
                                    const qp_run_scale *cols) {
  QP_HOSTDEV_BATCHED(qp_tiled_scale(a, rows, cols));
}
static qp_err qp_hostdev_dist_getrf(qp_matrix *a, int *pivots) {
  QP_HOSTDEV_BATCHED(qp_tiled_getrf(a, pivots));
}
static qp_err qp_hostdev_dist_getrs(const qp_matrix *lu, const int *pivots, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_getrs(lu, pivots, b));
}
static qp_err qp_hostdev_dist_potrs(const qp_matrix *l, qp_matrix *b) {
  QP_HOSTDEV_BATCHED(qp_tiled_potrs(l, b));
}
static qp_err qp_hostdev_dist_gecon(const qp_matrix *lu, double anorm, double *rcond) {
  QP_HOSTDEV_BATCHED(qp_tiled_gecon(lu, anorm, rcond));
}
static qp_err qp_hostdev_dist_copy_sub(int64_t rows, int64_t cols, const qp_matrix *a,
                                       int64_t ai, int64_t aj, qp_matrix *b, int64_t bi,
                                       int64_t bj) {
  QP_HOSTDEV_BATCHED(qp_tiled_table_copy_sub(rows, cols, a, ai, aj, b, bi, bj));
}

/* Every operation is a tiled algorithm (linalg/tiled/tiled.h) over hostdev's local operations, in
 * batches: what a GPU per rank runs (the cuda table as the local one), exercised here on the
 * emulated devices. */
static const qp_linalg_ops qp_hostdev_dist_ops_table = {
    QP_HOSTDEV_SHARED_OPS,
    .getrf = qp_hostdev_dist_getrf,
    .getrs = qp_hostdev_dist_getrs,
    .potrs = qp_hostdev_dist_potrs,
    .gecon = qp_hostdev_dist_gecon,
    .potrf = qp_hostdev_dist_potrf,
    .trmm = qp_hostdev_dist_trmm,
    .trsm = qp_hostdev_dist_trsm,
    .gemm = qp_hostdev_dist_gemm,
    .syrk = qp_hostdev_dist_syrk,
    .norm1 = qp_hostdev_dist_norm1,
    .pocon = qp_hostdev_dist_pocon,
    .trtri = qp_hostdev_dist_trtri,
    .copy_sub = qp_hostdev_dist_copy_sub,
    .transpose = qp_hostdev_dist_transpose,
    .clear_upper = qp_hostdev_dist_clear_upper,
    .scale = qp_hostdev_dist_scale,
    .name = "hostdev-dist",
    .distributed = 1,
    .host_table = qp_linalg_dist_ops,
    .local_table = qp_linalg_hostdev_ops,
    .sum_partials = qp_hostdev_sum_partials,
    .hold_workspace = qp_hostdev_dist_hold_workspace,
    .release_workspaces = qp_hostdev_dist_release_workspaces,
};

const qp_linalg_ops *qp_linalg_hostdev_dist_ops(void) {
  return qp_linalg_dist_ops() ? &qp_hostdev_dist_ops_table : NULL;
}

/* cuda-dist's table (tiled_table.h) with hostdev as its local table instead of cuda: every
 * line of the GPU-per-rank backend but the cuda operations' bodies, on the emulated devices,
 * unbatched (each local step opens its operands alone, as each cuda call stands alone). */
QP_TILED_TABLE(qp_hostdev_tiled_ops_table, "hostdev-tiled", qp_linalg_hostdev_ops);

const qp_linalg_ops *qp_linalg_hostdev_tiled_ops(void) {
  return qp_linalg_dist_ops() ? &qp_hostdev_tiled_ops_table : NULL;
}
