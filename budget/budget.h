/* budget.h: the tracked allocator and the stages that account for memory.
 *
 * Every large buffer of qmlpipe comes from qp_budget_alloc with a term name (the same name the
 * model in model.h predicts), a kind and a space. The allocator keeps, per term: current, peak
 * and total bytes and counts, and per stage (qp_stage_push/pop): each term's bytes at the start,
 * its peak inside the stage, the tracked total's peak, the wall time, the flops the stage
 * declares, and what the meters (meter.h) saw: RSS, its peak, the cgroup's usage.
 *
 * Host blocks are mapped with mmap and their pages committed at once (zeroed), so that the
 * process RSS follows the budget exactly: a buffer counts from the moment it is allocated, not
 * from whenever its pages are first touched, and it leaves RSS when it is freed.
 *
 * Not thread-safe for concurrent alloc/free of the same block; alloc/free from several threads
 * are serialised by a mutex. */
#ifndef QP_BUDGET_H
#define QP_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "meter.h"
#include "qp_error.h"

typedef enum qp_term_kind {
  QP_TERM_PERSISTENT = 0, /* outlives the stage that allocates it */
  QP_TERM_TRANSIENT = 1,  /* freed inside the stage that allocates it */
  QP_TERM_VIRTUAL = 2,    /* never materialised (computed on the fly); bytes for information */
  QP_TERM_LIBRARY = 3     /* allocated and freed inside a library call (PBLAS's panels), which
                             takes no workspace argument: predicted, then seen in RSS only */
} qp_term_kind;

typedef enum qp_space { QP_SPACE_HOST = 0, QP_SPACE_DEVICE = 1 } qp_space;

enum { QP_TERM_NAME_MAX = 48, QP_STAGE_NAME_MAX = 32, QP_TERMS_MAX = 96, QP_STAGES_MAX = 16 };

const char *qp_term_kind_name(qp_term_kind kind);
const char *qp_space_name(qp_space space);

/** Allocates `bytes` (zero-filled, pages committed) charged to `term`. bytes may be 0 (then
 *  *out is NULL). QP_SPACE_DEVICE: a block of the device-memory provider (device_memory.h):
 *  by default in builds with CUDA cudaMalloc on the calling thread's current device, or the
 *  test backend hostdev's (tests/support/hostdev.h) once it is set; zero-filled; *out is a device
 *  pointer, freed by qp_budget_free like a host block; the bytes are the ones asked for (the
 *  driver's rounding shows in the device meter, meter_device.h, not here). Errors:
 *  QP_ERR_NOMEM (naming the term and the bytes; for the device, out of device memory),
 *  QP_ERR_INPUT for a term name too long, QP_ERR_UNSUPPORTED for the device space with no
 *  provider (a build without CUDA) or on a machine without a CUDA device, QP_ERR_GPU for
 *  another CUDA failure. */
qp_err qp_budget_alloc(const char *term, qp_term_kind kind, qp_space space, size_t bytes,
                       void **out);
/** Allocates count elements of elem_size bytes each, checking the product for overflow
 *  (QP_ERR_NOMEM naming the term when it does not fit a size_t). */
qp_err qp_budget_alloc_array(const char *term, qp_term_kind kind, size_t count,
                             size_t elem_size, void **out);
/** Host doubles for a count held in an int64 (a dimension or a product of them): a negative
 *  count, what a wrapped int64 product leaves, is QP_ERR_INTERNAL naming the term and the
 *  count, never 2^64 - |count| elements; else as qp_budget_alloc_array. */
qp_err qp_budget_alloc_doubles(const char *term, qp_term_kind kind, int64_t count, double **out);
/** Frees a block from qp_budget_alloc, host or device (NULL is allowed). */
void qp_budget_free(void *ptr);

/** Host doubles: QP_ALLOC_DOUBLES("C", QP_TERM_PERSISTENT, n * n, &c), count an int64 (a
 *  size_t count above INT64_MAX arrives negative and is refused: no buffer is that large). */
#define QP_ALLOC_DOUBLES(term, kind, count, ptr)                                                   \
  qp_budget_alloc_doubles((term), (kind), (int64_t)(count), (ptr))

typedef struct qp_term_stats {
  char name[QP_TERM_NAME_MAX];
  qp_term_kind kind;
  qp_space space;
  size_t current, peak, total; /* bytes: live now, largest live, ever allocated */
  long live_blocks, total_blocks;
} qp_term_stats;

/** Number of terms seen so far, and each term's statistics over the whole run. */
int qp_budget_term_count(void);
const qp_term_stats *qp_budget_term(int index);
/** Tracked bytes live now in a space, and their peak over the run. */
size_t qp_budget_current(qp_space space);
size_t qp_budget_peak(qp_space space);
/** The seconds spent committing host blocks' pages at their allocation (alloc.c), and the
 *  bytes committed, since the last qp_budget_reset. Not the accounting's cost: a program that
 *  did not commit at allocation would fault the same pages in at first touch; printed by
 *  `qmlpipe run` so that a benchmark can tell fresh memory's cost (on a VM whose host takes
 *  freed pages back, 0.6 GB/s) from the kernels'. */
void qp_budget_commit_totals(double *seconds, size_t *bytes);
/** Prints every block still alive (term, bytes); returns how many. */
int qp_budget_dump_live(FILE *out);
/** Forgets all statistics and stage records (blocks still alive stay counted), and writes the
 *  records' storage so that its pages are resident from here on. `qmlpipe run` calls it
 *  before reading its baseline; tests call it between runs. */
void qp_budget_reset(void);

/* ---- stages ---- */

typedef struct qp_stage_term {
  char name[QP_TERM_NAME_MAX];
  qp_term_kind kind;
  qp_space space;
  size_t at_start, peak, at_end; /* this term's live bytes at push, max inside, at pop */
} qp_stage_term;

typedef struct qp_stage_record {
  char name[QP_STAGE_NAME_MAX];
  double seconds;
  double flops;                  /* declared by the stage through qp_stage_add_flops */
  size_t tracked_at_start;       /* host bytes live at push */
  size_t tracked_peak;           /* host bytes: max live inside the stage */
  size_t tracked_at_end;
  size_t device_tracked_at_start, device_tracked_peak, device_tracked_at_end;
  qp_meter_sample meter_start;   /* at push, after the peak meters were reset */
  qp_meter_sample meter_end;     /* at pop: hwm is the peak since push when hwm_reset */
  int n_terms;
  qp_stage_term terms[QP_TERMS_MAX];
  int resumed;                   /* 1: restored from a checkpoint, not computed (checkpoint.h) */
} qp_stage_record;

/** Starts a stage: resets the peak meters, samples them, notes the time and the live bytes.
 *  Stages nest (up to 8 deep); every push needs a pop. */
qp_err qp_stage_push(const char *name);
/** Ends the innermost stage and stores its record. */
qp_err qp_stage_pop(void);
/** Marks the innermost open stage as resumed: its figures are those of reading a checkpoint
 *  (pipeline/checkpoint.h), not of the stage's work, and are not judged against the model. */
void qp_stage_mark_resumed(void);
/** Adds floating-point operations to every open stage (for GFLOP/s in reports). */
void qp_stage_add_flops(double flops);
/** The innermost open stage's name ("" outside stages): errors name the stage they happen in. */
const char *qp_stage_current(void);
/** The same for messages: "(none)" outside stages. */
const char *qp_stage_label(void);
/** Records of the stages popped so far, in order of their pop. */
int qp_stage_record_count(void);
const qp_stage_record *qp_stage_record_get(int index);
/** The record of a popped stage by name, or NULL. */
const qp_stage_record *qp_stage_record_find(const char *name);

#endif
