/* input_file.h: the one gate every file a user names as an input passes through (issue 38,
 * "hostile inputs"): the config, the maps, masks and variance maps, the C_ell, bins, noise
 * covariance and calibration files, sacct output, checkpoints and results files.
 *
 * The rule: an input is a regular file, named without a leading or trailing blank.
 * - Opening never blocks: O_RDONLY | O_NONBLOCK, so a FIFO with no writer opens at once
 *   instead of waiting for one; the kind is then read from the open descriptor (fstat), so
 *   what is checked is what is read, not a name that may have changed since.
 * - Anything else is refused, naming the file's role, its path and what it is: a named pipe
 *   (FIFO), a character device (/dev/zero would feed a reader forever), a block device, a
 *   socket, a directory.
 * - A blank at either end of the path or of its file name is refused: cfitsio strips leading
 *   blanks, so " mask.fits" would read mask.fits while the checkpoint hashed " mask.fits".
 * - Text inputs have a size bound (QP_INPUT_TEXT_MAX_BYTES), read from the descriptor, so no
 *   reader's buffer grows past it.
 * cfitsio and HDF5 open files by name: their readers call qp_input_check first, which opens
 * and checks a descriptor, then let the library open the name. */
#ifndef QP_INPUT_FILE_H
#define QP_INPUT_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "qp_error.h"

/* The largest text input accepted (config, C_ell, bins, calibration, sacct output): 1 GiB,
 * some thousand times the largest real one (a C_ell table to ell 10^6 is ~100 MiB). */
#define QP_INPUT_TEXT_MAX_BYTES ((int64_t)1 << 30)
/* No bound on the size (FITS maps, HDF5 files, checkpoints: their readers check shapes). */
#define QP_INPUT_ANY_SIZE ((int64_t)0)

/** Opens the input `path` for reading and checks it against the rule above.
 *  role: what the file is for, first in every message ("C_ell file", "mask file").
 *  max_bytes: the largest size accepted; QP_INPUT_ANY_SIZE for none.
 *  *fd: on success a descriptor in blocking mode with close-on-exec (the caller closes it);
 *  -1 on failure, when nothing is left open.
 *  Errors: QP_ERR_IO when it cannot be opened (errno's reason) or is not a regular file
 *  (naming its kind); QP_ERR_INPUT for a blank at an end of the name or a size over max_bytes.
 *  Not collective; any thread. */
qp_err qp_input_open(const char *role, const char *path, int64_t max_bytes, int *fd);

/** qp_input_open as a stdio stream ("r"): *out is NULL on failure. */
qp_err qp_input_fopen(const char *role, const char *path, int64_t max_bytes, FILE **out);

/** qp_input_open, then closes the descriptor: for libraries that open by name (cfitsio, HDF5),
 *  called just before they do. Same errors. */
qp_err qp_input_check(const char *role, const char *path, int64_t max_bytes);

/** What a file mode is, in words ("a named pipe (FIFO)", "a directory", "a regular file"). */
const char *qp_input_kind(unsigned mode);

#endif
