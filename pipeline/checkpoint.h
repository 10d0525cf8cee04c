/* checkpoint.h: the state between stages on disk, so that a run stopped (time limit,
 * preemption, a signal) resumes after the last stage it finished (README "Checkpoint and
 * restart", docs/reliability.md).
 *
 * After covariance_setup, basis_setup and fisher_run each rank writes every buffer of the
 * problem that is alive at the stage's end (its own local blocks of the block-cyclic
 * matrices, and its copy of the replicated vectors) to DIR/stage-<name>.rank<k>.h5: exactly
 * the tracked persistent bytes of that stage (the write checks it), so the file's size is the
 * model's persistent bytes of the stage. HDF5 writes and reads them straight from and into the
 * tracked buffers: no staging copy, no memory beyond the model's. Each file carries the
 * stage, the rank count and grid, a hash of every input file and a hash of every buffer.
 * Once every rank has written a stage's file, the older stages' files go: the directory holds
 * at most two stages' files, while the newer is being written.
 *
 * A resumed run checks the newest complete set of files against its own inputs and grid
 * before any stage, then, inside the budget stage of the checkpoint, allocates the same terms
 * and reads them back; the stages before it are recorded as resumed (empty). The later stages
 * see bit for bit the state an uninterrupted run had, so the results are the same bytes. */
#ifndef QP_CHECKPOINT_H
#define QP_CHECKPOINT_H

#include <stdint.h>

#include "problem.h"

typedef struct qp_checkpoint {
  char dir[QP_PATH_MAX]; /* "" : no checkpoints */
  int resume;            /* --resume: continue from the newest checkpoint in dir */
  int resume_after;      /* the stage whose checkpoint is restored (qp_stage_id), -1: none */
  char *inputs;          /* "<hash> <bytes> <path>\n" per input file (malloc'd) */
  int lock_fd;           /* rank 0: the directory's lock (qp_checkpoint_lock), else -1 */
} qp_checkpoint;

/** The hash of checkpoints and inputs: 64-bit FNV-1a over 8-byte little-endian words (then
 *  the trailing bytes one at a time), each step h = (h ^ w) * 0x100000001b3 followed by
 *  h ^= h >> 29 so that high bits reach low ones; start from QP_HASH_BASIS. */
#define QP_HASH_BASIS 0xcbf29ce484222325ULL
uint64_t qp_hash_bytes(uint64_t h, const void *data, size_t n);

/** 1 when a checkpoint saves term t: a slot's (checkpoint_file.c) or W formed in blocks. */
int qp_checkpoint_saves(const qp_model_term *t);
/** The bytes a rank's checkpoint after `stage` saves: the model's terms of the checkpoint's
 *  slots alive past it, on the host and on a device (not a backend's own buffers). */
size_t qp_checkpoint_stage_bytes(const qp_model *model, int stage);
/** The disk a rank's checkpoints need at most: the largest sum of two consecutive stages'
 *  checkpoints, the older file being removed once the newer is written. */
size_t qp_checkpoint_disk_bytes(const qp_model *model);

/** The name of the lock file in a checkpoint directory. */
#define QP_CK_LOCK_NAME "qmlpipe.lock"

/** Takes the directory's lock (an exclusive flock on dir/qmlpipe.lock, which then holds
 *  "pid <pid> host <host>") into *fd, for the run's life; the system drops it when the
 *  process ends, however it ends. QP_ERR_IO when another run holds it, naming the directory
 *  and that run's pid and host: two runs in one directory removed and overwrote each other's
 *  files (issue 38). Not collective (rank 0 takes it). */
qp_err qp_checkpoint_lock(const char *dir, int *fd);
/** Drops a lock of qp_checkpoint_lock (fd -1: nothing). */
void qp_checkpoint_unlock(int *fd);

/** Sets up checkpointing for a run of `p` (planned): hashes the inputs (rank 0, shared with
 *  the others); without resume, removes this rank's checkpoints left in dir by earlier runs;
 *  with resume, finds the newest stage whose file every rank has and checks it (format,
 *  stage, rank count, grid, inputs): QP_ERR_INPUT naming the input whose content changed,
 *  QP_ERR_IO for a file that cannot be read. No dir: ck->dir is "" and nothing happens.
 *  Collective under MPI. */
qp_err qp_checkpoint_open(qp_checkpoint *ck, const char *dir, int resume, const qp_problem *p);
/** Writes this rank's state after stage `done` (atomically: a temporary file in dir, then
 *  rename). A failure is a warning on stderr (the run goes on without that checkpoint and no
 *  rank keeps its file of the stage). Collective under MPI. */
void qp_checkpoint_save(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id done);
/** Inside resumed stage `id`: when it is the checkpoint's stage, allocates and reads the
 *  state back (QP_ERR_IO naming the file and dataset when a buffer's hash differs). */
qp_err qp_checkpoint_restore(const qp_checkpoint *ck, qp_problem *p, qp_stage_id id);
/** Removes this rank's checkpoint files (after the results are written). */
void qp_checkpoint_remove(const qp_checkpoint *ck);
void qp_checkpoint_close(qp_checkpoint *ck);

#endif
