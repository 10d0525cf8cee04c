/* atomic_file.h: a file written whole or not at all, beside its final name, safely.
 *
 * Every writer of qmlpipe (the results file, HDF5 matrices, C_ell files, FITS maps, the
 * calibration file, job scripts) writes its target T = <dir>/<name> through this helper:
 *
 *   <dir>/.<name>.qmlpipe-tmp.<host>.<pid>.XXXXXX/     a private directory (mode 0700), made by
 *                                                     mkdtemp: an unpredictable name, created
 *                                                     atomically, refusing anything already
 *                                                     there (a planted symlink included)
 *   <dir>/.<name>.qmlpipe-tmp.<host>.<pid>.XXXXXX/<name>   the file being written
 *
 * and, once the file is complete, closed and flushed (fsync), renames it over T and removes
 * the directory. Why a directory rather than a file of that name: HDF5 (H5Fcreate) and cfitsio
 * (fits_create_diskfile, which can open neither an existing empty file nor a descriptor)
 * create their files by name, following symlinks; inside a directory that only we can write,
 * nothing can be planted between choosing the name and creating the file, so every library's
 * own create is safe. stdio writers create theirs with O_CREAT|O_EXCL|O_NOFOLLOW besides.
 * The file gets mode 0666 & ~umask like any new file (0777 & ~umask for job scripts).
 *
 * Every live temporary is registered, so that the signal handler (interrupt.h) removes it
 * with async-signal-safe calls. A temporary left by a run killed outright (SIGKILL, a node
 * crash) carries its host and pid: qp_atomic_remove_stale removes those of processes of this
 * host that are gone. Not collective; one writer at a time per process is the usual case, up
 * to QP_ATOMIC_SLOTS at once. */
#ifndef QP_ATOMIC_FILE_H
#define QP_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "qp_error.h"

/** What every temporary's name holds (tests look for leftovers by it). */
#define QP_ATOMIC_TEMP_MARK ".qmlpipe-tmp."
/** Temporaries alive at once in one process. */
#define QP_ATOMIC_SLOTS 8

enum { QP_ATOMIC_PATH_MAX = 4096 + 256 };

typedef struct qp_atomic_file {
  char target[QP_ATOMIC_PATH_MAX]; /* the final name, as given */
  char dir[QP_ATOMIC_PATH_MAX];    /* the private directory beside it */
  char path[QP_ATOMIC_PATH_MAX];   /* the file to write: <dir>/<name> */
  int slot;                        /* registry slot; -1 when nothing is alive */
} qp_atomic_file;

/** Makes the private directory beside `target` and registers it.
 *  @param target  the final path (its directory must exist and be writable)
 *  @param f       out: f->path is the file to create (by name: HDF5, cfitsio) or through
 *                 qp_atomic_fopen. Not collective.
 *  Errors: QP_ERR_IO naming `target` and the reason (read-only file system, permission, no
 *  such directory, too many temporaries at once); nothing is left then. */
qp_err qp_atomic_begin(const char *target, qp_atomic_file *f);

/** Creates f->path with O_CREAT|O_EXCL|O_NOFOLLOW and the given mode (less the umask) and
 *  opens it for writing with stdio. QP_ERR_IO naming the target. */
qp_err qp_atomic_fopen(qp_atomic_file *f, int mode, FILE **out);

/** Writes `bytes` of `data` to a new f->path (created as by qp_atomic_fopen), with write(2),
 *  then closes it. QP_ERR_IO naming the target and the reason ("No space left on device"). */
qp_err qp_atomic_write_bytes(qp_atomic_file *f, const void *data, size_t bytes);

/** Flushes the closed file to disk, puts it in place and removes the directory.
 *  @param replace  1: rename over the target (atomic; an existing file is replaced);
 *                  0: link to the target, refusing an existing one (EEXIST, atomically)
 *  On failure the temporary is removed (qp_atomic_abort) and QP_ERR_IO names both paths.
 *  Test hook: QP_TEST_PAUSE=before_rename pauses here (interrupt.h). */
qp_err qp_atomic_commit(qp_atomic_file *f, int replace);

/** For stdio writers (qp_atomic_fopen): closes `out`, checking that every write and the close
 *  succeeded, then qp_atomic_commit. On any failure the temporary is removed (qp_atomic_abort)
 *  and QP_ERR_IO names the target and the reason. */
qp_err qp_atomic_fcommit(qp_atomic_file *f, FILE *out, int replace);

/** Removes the temporary file and directory, if any; safe to call twice. */
void qp_atomic_abort(qp_atomic_file *f);

/** Checks that `target` can be written the way qp_atomic_begin/commit will: makes the private
 *  directory and an empty file in it, and removes both. `source` says where the path came
 *  from, for the message. QP_ERR_IO naming the path and the reason. */
qp_err qp_atomic_probe(const char *target, const char *source);

/** What the temporaries of `target` made on this host start with:
 *  "<dir>/.<name>.qmlpipe-tmp.<host>." (the pid, '.' and six random characters follow).
 *  1 on success, 0 when `target` has no file name or `out` is too small. */
int qp_atomic_temp_prefix(const char *target, char *out, size_t size);

/** Removes the temporaries of `target` left by processes of this host that no longer run
 *  (only directories of the exact pattern, owned by this user, holding at most the target's
 *  name), with a note on `notes` (may be NULL) for each. Returns how many were removed. */
int qp_atomic_remove_stale(const char *target, FILE *notes);

/** Removes every registered temporary: async-signal-safe (unlink, rmdir), for the signal
 *  handler. Returns how many files it removed; `last` (may be NULL) gets the target of the last
 *  one (the final name that was being written)
 *  (pointing into the registry). */
int qp_atomic_remove_registered(const char **last);

#endif
