/* h5_image.h: HDF5 files built in memory and written to disk whole, atomically.
 *
 * Why in memory: with HDF5 1.10 (Debian 12), an H5Fclose whose final flush fails (a full disk:
 * "No space left on device", a file-size limit) frees the file's structure but leaves its ID
 * in HDF5's table, and HDF5's exit handler (H5_term_library -> H5F__close_cb) then uses the
 * freed memory: the process died of SIGSEGV (exit 139) after the right message. The library's
 * table cannot be repaired from outside (HDFGroup/hdf5 pull request 2291, in 1.14.1). Built
 * with the core driver and no backing store, a file is never written by HDF5: H5Fclose frees
 * memory only and cannot fail on the disk, and the bytes go to disk through atomic_file.h,
 * whose write(2) errors are ours to report (exit 8, naming the file, nothing left behind).
 * The cost: the file's size in memory twice while it is written (the core driver's copy and
 * the image), untracked by the budget, after the stages. */
#ifndef QP_H5_IMAGE_H
#define QP_H5_IMAGE_H

#include <hdf5.h>

#include "qp_error.h"

/** Creates an empty HDF5 file in memory (core driver, no backing store; strong close degree:
 *  closing it closes every object still open in it). `target` is the path it will be saved
 *  to, for messages. QP_ERR_IO on an HDF5 failure. */
qp_err qp_h5_image_create(const char *target, hid_t *file);

/** Flushes `file`, closes it (always, also on failure) and writes its bytes to `target`
 *  through atomic_file.h (a private temporary beside it, fsync, rename). QP_ERR_IO naming
 *  `target` and the reason; then nothing new is left under `target` and an existing file of
 *  that name is untouched. */
qp_err qp_h5_image_save(hid_t file, const char *target);

#endif
