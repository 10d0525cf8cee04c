/* output_path.h: the one check of a file a command is about to write (issue 38).
 *
 * Every command that writes a file the user named (run's results, `calibrate --output`,
 * `simulate`'s maps, mask and example files, `plan --sbatch`) checks its path here before it
 * computes anything, so that a refusal costs seconds, not the run:
 *   - an existing target must be a regular file: the writer renames its temporary over the
 *     name (atomic_file.h), which would replace a character device (/dev/null, as root), a
 *     FIFO or a socket by a regular file; a directory cannot take a file. A symlink's target
 *     is what counts (the name the user gave stands for it); a dangling symlink is replaced;
 *   - the target must not be one of the command's inputs: the same device and inode as an
 *     input, also through a symlink or a hard link, or the symlink itself (replacing the
 *     link would lose the user's name for the input);
 *   - its directory must exist and be writable, and a temporary is made and removed there
 *     the way the file will be written (qp_atomic_probe): a read-only file system, an NFS
 *     root squash or a full inode table are found now.
 * The kind is checked again just before the rename (qp_atomic_commit), for a target that
 * became a device or a FIFO while the command ran. Refusals are QP_ERR_IO (exit 8), naming
 * where the path came from (the option or the config key), the path and the reason. */
#ifndef QP_OUTPUT_PATH_H
#define QP_OUTPUT_PATH_H

#include <stddef.h>
#include <sys/stat.h>

#include "qp_error.h"

/** One input of the command, which its output must not be: `what` names it for the message
 *  ("mask", "--cls", "the config file"); a NULL or empty `path` is skipped, and so is one that
 *  does not exist (its reader says so). */
typedef struct qp_output_input {
  const char *what;
  const char *path;
} qp_output_input;

/** The whole check above, before the command computes anything.
 *  @param path    the file to write (relative to the current directory)
 *  @param source  where the path came from, first in the message: "--output", "--mask",
 *                 "config 'c.yaml' key 'output'", "--example 'ex'"
 *  @param noun    what is written, for the message: "the results file", "the mask"
 *  @param inputs  the command's inputs (may be NULL when n_inputs is 0)
 *  Not collective. Errors: QP_ERR_INPUT for an empty or too long path; QP_ERR_IO otherwise
 *  (the path ends in '/', is not a regular file, is an input, its directory is missing or not
 *  writable, the probe failed); nothing is left on disk. */
qp_err qp_output_path_check(const char *path, const char *source, const char *noun,
                            const qp_output_input *inputs, size_t n_inputs);

/** The kind alone: QP_OK when `path` does not exist (a dangling symlink included) or is a
 *  regular file (through a symlink); else QP_ERR_IO "SOURCE: 'PATH' is a named pipe (FIFO),
 *  not a regular file: writing NOUN there would replace it". What qp_atomic_commit asks just
 *  before its rename, with source NULL (the message then starts at the path). */
qp_err qp_output_path_replaceable(const char *path, const char *source, const char *noun);

#endif
