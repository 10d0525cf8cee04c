/* checkpoint_inputs.h: what a checkpoint records of the run's inputs, to refuse resuming on
 * changed ones: per input file (the config, maps, masks, C_ell, noise file, bins file) a line
 * "<hash> <bytes> <path>", the hash being qp_hash_bytes over the whole file then its size. */
#ifndef QP_CHECKPOINT_INPUTS_H
#define QP_CHECKPOINT_INPUTS_H

#include "checkpoint.h"

/** The list of the run's inputs (hashed by rank 0), on every rank: *text malloc'd.
 *  QP_ERR_IO naming an input that cannot be read. Collective under MPI. */
qp_err qp_checkpoint_share_inputs(const qp_config *cfg, char **text);
/** QP_ERR_INPUT naming the first input of `now` that differs from `then` (its content, or
 *  its path) and telling to remove `dir` or drop --resume; `file` is the checkpoint. */
qp_err qp_checkpoint_compare_inputs(const char *file, const char *then, const char *now,
                                    const char *dir);

#endif
