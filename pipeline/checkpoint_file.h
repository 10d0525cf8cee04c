/* checkpoint_file.h: what one rank's checkpoint file holds, and the functions the checkpoint's
 * source files share. Private to them; checkpoint.h is the interface.
 *
 *   checkpoint_file.c   the layout: the buffers of the state (slots), the file name, the grid
 *   checkpoint_write.c  writing a stage's file (qp_checkpoint_save)
 *   checkpoint_read.c   a file checked against this run, and the state read back from it
 *                       (qp_checkpoint_restore)
 *   checkpoint.c        the resume decision (qp_checkpoint_open) and the files' lifetime
 *   checkpoint_inputs.c the hashes of the run's input files */
#ifndef QP_CHECKPOINT_FILE_H
#define QP_CHECKPOINT_FILE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

/* The root attribute "format" of every checkpoint, bumped when what a stage's checkpoint
 * holds changes: another qmlpipe format is refused on resume (exit 6), never read as this
 * one; a text without the prefix is not a qmlpipe checkpoint (exit 8). Format 2: the maps are
 * no longer saved (a resumed run reads them again from their files, which the checkpoint's
 * input hashes tie to the interrupted run's). */
#define QP_CHECKPOINT_FORMAT_PREFIX "qmlpipe checkpoint "
#define QP_CHECKPOINT_FORMAT QP_CHECKPOINT_FORMAT_PREFIX "2"

/* The room for a checkpoint's path: the directory (checked shorter than QP_PATH_MAX - 64 by
 * qp_checkpoint_open) and "/stage-<name>.rank<k>.h5". */
enum { QP_CK_PATH_MAX = QP_PATH_MAX + 64 };

/* ---- the state: every buffer of qp_problem a stage can leave alive ---- */

typedef enum qp_ck_type { QP_CK_F64, QP_CK_I64, QP_CK_INT, QP_CK_MATRIX } qp_ck_type;

typedef struct qp_ck_slot {
  const char *name; /* the dataset */
  const char *term; /* the budget term it is allocated under (always persistent) */
  qp_ck_type type;
  size_t offset;    /* of the pointer or qp_matrix in qp_problem */
} qp_ck_slot;

/* The slots, in restore order (checkpoint_file.c). */
enum { QP_CK_SLOTS = 25 };
extern const qp_ck_slot qp_ck_slots[QP_CK_SLOTS];

/* The pointer or qp_matrix of slot `s` in `p`. */
void *qp_ck_field(const qp_problem *p, const qp_ck_slot *s);
/* The elements of a pointer slot, from the dimensions that sized it. */
int64_t qp_ck_count(const qp_problem *p, const qp_ck_slot *s);
/* The HDF5 type and the size of one element of a slot's type. */
hid_t qp_ck_h5_type(qp_ck_type t);
size_t qp_ck_elem(qp_ck_type t);

/* Moves this rank's local part of matrix m (ld = its local rows) to (`to_file` 1) or from (0)
 * the 1-D dataset `dset`, column panel by column panel through host windows: all of a host
 * matrix at once (the window is its own buffer: nothing is copied); of a device matrix, as
 * many columns as QP_CK_PANEL_BYTES of host staging hold (at least one), so that a device
 * run's checkpoint needs no host copy of its largest matrix. *hash: qp_hash_bytes of the
 * bytes in the dataset's order. */
enum { QP_CK_PANEL_BYTES = 16 << 20 };
qp_err qp_ck_stream_matrix(hid_t dset, const char *where, const char *name, qp_matrix *m,
                           int to_file, uint64_t *hash);

/* This rank's file of stage `id` in ck->dir. */
void qp_ck_path(const qp_checkpoint *ck, qp_stage_id id, char *out, size_t size);

/* The grid of this run: ranks, rows, cols, block (1 1 1 0 without the distributed backend),
 * and the names of the root attributes that record them. */
void qp_ck_grid(const qp_problem *p, int64_t g[4]);
extern const char *const qp_ck_grid_names[4];

/* ---- shared between the files ---- */

/* Writes the file of stage `done` at `path` (atomically), with the state when `with_state`
 * (the probe writes the header only); *bytes: the state's bytes (checkpoint_write.c). */
qp_err qp_ck_write(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id done,
                   const char *path, int with_state, size_t *bytes);
/* Checks the file of stage `id` at `path` against this run: format, stage, grid, inputs,
 * route (checkpoint_read.c). */
qp_err qp_ck_check_header(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id id,
                          const char *path);
/* Tells the signal handler what can be resumed: the checkpoint after stage `after`, or
 * none yet (-1) (checkpoint.c). */
void qp_ck_resume_hint(const qp_checkpoint *ck, int after);

#endif
