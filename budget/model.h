/* model.h: a program's predicted memory, stage by stage and term by term (generic: the
 * program declares its stages and terms; pipeline/memory_model.c is qmlpipe's).
 *
 * A term has a name (the one the program allocates it under, budget.h), exact bytes, a kind
 * and the stages where it is allocated and freed. A stage runs in phases 0, 1, 2, ...: a term
 * lives from (stage, phase) of its allocation to (stage, phase) of its release, and inside one
 * phase every live term is alive together. So:
 *   carried(s)    = bytes of terms allocated before s and still alive in s
 *   peak(s)       = max over the phases of s of the bytes alive in that phase
 *   persistent(s) = bytes alive at the end of s (persistent terms freed in the last stage are
 *                   results, kept to the end of the run)
 * The overhead (program, libraries, BLAS buffers) is a calibrated constant of the process,
 * measured before the first stage and reported beside the terms, never hidden. */
#ifndef QP_MODEL_H
#define QP_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "budget.h"
#include "checked_size.h"

enum { QP_MODEL_STAGES_MAX = 8, QP_PHASE_END = 99 };

/* A term's bytes: on this process (rank), and of the whole term (all ranks together, the same
 * on every rank; without a distribution the two are equal), saturated at SIZE_MAX; `approx`
 * is the whole in double, for messages. The size rule is checked on the whole, so that every
 * rank accepts or refuses the same dimensions; a rank's share never exceeds the whole. */
typedef struct qp_model_bytes {
  size_t here, whole;
  double approx;
} qp_model_bytes;

typedef struct qp_model_term {
  char name[QP_TERM_NAME_MAX];
  qp_term_kind kind;
  qp_space space;
  size_t bytes;
  int stage_alloc;     /* allocated in this stage (an index of the model's stages) */
  int stage_free;      /* freed at the end of (or inside) this stage */
  int phase_alloc;     /* phase of stage_alloc in which it is allocated (0: the first) */
  int phase_free;      /* last phase of stage_free in which it is alive (QP_PHASE_END) */
  const char *formula; /* how bytes follow from the dimensions, for the printed table */
} qp_model_term;

typedef struct qp_model {
  int n_stages;
  const char *stage_names[QP_MODEL_STAGES_MAX]; /* the program's, static strings */
  int n_terms;
  qp_model_term terms[QP_TERMS_MAX];
  size_t overhead_bytes;    /* program + libraries + BLAS buffers + HDF5: the calibrated constant,
                               at most QP_SIZE_TERM_MAX (calibration.h) */
  size_t overhead_parts[3]; /* program, BLAS buffers, HDF5 (the built-in default: its two
                               parts, BLAS buffers measured on the running kernel) */
  /* The BLAS library and kernel the BLAS part was measured for, and how (the report says it:
   * a prediction holds for the kernel it was made on). "" where the planner did not say. */
  char blas_library[64];
  char blas_kernel[48];
  char blas_how[160];
  /* The first term declared beyond QP_SIZE_TERM_MAX: its name (else ""), formula and whole
   * size in bytes (a double: it may not fit 64 bits). It counts 0 bytes, so that no sum of the
   * model can wrap before the program refuses it. */
  char oversize_term[QP_TERM_NAME_MAX];
  const char *oversize_formula;
  double oversize_bytes;
  int too_many_terms; /* more than QP_TERMS_MAX were declared (the rest are dropped) */
  /* The terms a checkpoint after a stage saves (the program's; NULL: every persistent host
   * term), for the report's predicted_checkpoint_bytes. */
  int (*checkpoint_saves)(const qp_model_term *term);
} qp_model;

/** An empty model of `n_stages` stages (at most QP_MODEL_STAGES_MAX) named `names` (static
 *  strings, the names the program pushes its budget stages under). */
void qp_model_init(qp_model *model, int n_stages, const char *const *names);
/** The name of stage `stage`, "?" outside the model's stages. */
const char *qp_model_stage_name(const qp_model *model, int stage);

/** count x elem bytes, the same on every rank (a replicated buffer). */
qp_model_bytes qp_model_vector_bytes(int64_t count, size_t elem);
/** k buffers of b's size. */
qp_model_bytes qp_model_bytes_times(size_t k, qp_model_bytes b);
/** 1 when b's whole is within QP_SIZE_TERM_MAX; else 0, recording the first such term. */
int qp_model_size_ok(qp_model *model, const char *name, qp_model_bytes b, const char *formula);
/** Declares a host term alive from phase 0 of stage `from` to the end of stage `to`; returns it
 *  so that the caller can set its phases (a dummy when the model is full: too_many_terms). */
qp_model_term *qp_model_add(qp_model *model, const char *name, qp_term_kind kind,
                            qp_model_bytes bytes, int from, int to, const char *formula);

/** 1 when the term is alive during `stage` (virtual and library terms never are). */
int qp_model_term_alive(const qp_model_term *term, int stage);
/* The sums below count the host space's terms; the _in forms one given space (a device
 * backend's matrices are QP_SPACE_DEVICE terms, summed and limited apart from the host's). */
size_t qp_model_stage_carried_in(const qp_model *model, int stage, qp_space space);
size_t qp_model_stage_peak_in(const qp_model *model, int stage, qp_space space);
size_t qp_model_stage_persistent_in(const qp_model *model, int stage, qp_space space);
size_t qp_model_peak_in(const qp_model *model, qp_space space);
/** The stage's peak of both spaces' terms together, phase by phase: what host memory holds
 *  where the device's memory is the host's (the hostdev emulation). */
size_t qp_model_stage_peak_both(const qp_model *model, int stage);
/** The bytes alive at the end of `stage` and kept past it (as qp_model_stage_persistent_in),
 *  in either space, of the terms `which` accepts (what a checkpoint saves, say). */
size_t qp_model_stage_persistent_if(const qp_model *model, int stage,
                                    int (*which)(const qp_model_term *term));
/** 1 when any term lives in device memory. */
int qp_model_has_device(const qp_model *model);
size_t qp_model_stage_carried(const qp_model *model, int stage);
/** Bytes of the library terms of a stage (QP_TERM_LIBRARY: allocated inside library calls,
 *  outside the tracked allocator): added to the peak where it is compared with RSS, never
 *  where it is compared with the allocator's own count. */
size_t qp_model_stage_library(const qp_model *model, int stage);
size_t qp_model_stage_peak(const qp_model *model, int stage);
size_t qp_model_stage_persistent(const qp_model *model, int stage);
/** The largest stage peak (tracked bytes, without the overhead). */
size_t qp_model_peak(const qp_model *model);
/** The term named `name`, or NULL. */
const qp_model_term *qp_model_find(const qp_model *model, const char *name);

/** Prints, per stage, the carried, peak, library and kept bytes and the live terms, then the
 *  overhead and the lifetime peak (the body of `qmlpipe budget`). */
void qp_model_print_stages(FILE *out, const qp_model *model);

#endif
