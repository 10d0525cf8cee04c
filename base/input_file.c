/* input_file.c: opening a user-named input file safely (input_file.h). */
#include "input_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes_text.h"

const char *qp_input_kind(unsigned mode) {
  switch (mode & S_IFMT) {
  case S_IFREG: return "a regular file";
  case S_IFDIR: return "a directory";
  case S_IFIFO: return "a named pipe (FIFO)";
  case S_IFCHR: return "a character device";
  case S_IFBLK: return "a block device";
  case S_IFSOCK: return "a socket";
  case S_IFLNK: return "a symbolic link";
  default: return "not a file of a known kind";
  }
}

static int qp_input_blank(char c) { return isspace((unsigned char)c) != 0; }

/* A blank at either end of the path, or of its last component ("dir/ mask.fits" once the
 * config's directory is put before the name it gave): cfitsio strips leading blanks from a
 * name, so the file it reads would not be the one named, checked and hashed. */
static qp_err qp_input_check_name(const char *role, const char *path) {
  const size_t len = strlen(path);
  const char *name = strrchr(path, '/');
  name = name ? name + 1 : path;
  const int begins = len > 0 && (qp_input_blank(path[0]) || qp_input_blank(name[0]));
  const int ends = len > 0 && qp_input_blank(path[len - 1]);
  QP_CHECK(!begins && !ends, QP_ERR_INPUT,
           "%s '%s': the name %s with a blank, refused: cfitsio strips such blanks, so another "
           "file than the one named (and hashed) could be read; remove the blank from the path, "
           "or rename the file",
           role, path, begins ? "begins" : "ends");
  return QP_OK;
}

static qp_err qp_input_refuse_kind(const char *role, const char *path, unsigned mode) {
  QP_FAIL(QP_ERR_IO,
          "%s '%s' is %s, not a regular file: refused (only regular files are read as inputs: "
          "a FIFO or a device can block a reader or feed it for ever)",
          role, path, qp_input_kind(mode));
}

qp_err qp_input_open(const char *role, const char *path, int64_t max_bytes, int *fd) {
  *fd = -1;
  QP_CHECK(role != NULL && path != NULL, QP_ERR_INTERNAL, "qp_input_open: NULL argument");
  QP_CHECK(path[0] != '\0', QP_ERR_INPUT, "%s: the path is empty", role);
  QP_CALL(qp_input_check_name(role, path));
  /* A first look by name, so that a device is never opened at all (opening one can act: a
   * tape rewinds, a terminal becomes ours). It decides nothing alone: the name may change
   * before the open, so the kind that counts is the descriptor's, below. */
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    QP_CALL(qp_input_refuse_kind(role, path, (unsigned)st.st_mode));
  /* O_NONBLOCK: a FIFO without a writer opens at once rather than waiting for one. */
  const int d = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (d < 0) {
    const int e = errno;
    /* A socket cannot be opened (ENXIO): say what it is rather than "No such device". */
    if (e == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode))
      QP_CALL(qp_input_refuse_kind(role, path, (unsigned)st.st_mode));
    QP_FAIL(QP_ERR_IO, "cannot open %s '%s': %s", role, path, strerror(e));
  }
  qp_err err = QP_OK;
  QP_CHECK_GOTO(fstat(d, &st) == 0, QP_ERR_IO, fail, "cannot read the kind of %s '%s': %s", role,
                path, strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    err = qp_input_refuse_kind(role, path, (unsigned)st.st_mode);
    goto fail;
  }
  QP_CHECK_GOTO(max_bytes <= 0 || (int64_t)st.st_size <= max_bytes, QP_ERR_INPUT, fail,
                "%s '%s' holds %s, more than the %s accepted for an input of its kind: not a "
                "file qmlpipe reads",
                role, path, qp_bytes_readable((double)st.st_size).text,
                qp_bytes_readable((double)max_bytes).text);
  /* Reads of a regular file ignore O_NONBLOCK; cleared so the descriptor is an ordinary one. */
  const int flags = fcntl(d, F_GETFL);
  QP_CHECK_GOTO(flags >= 0 && fcntl(d, F_SETFL, flags & ~O_NONBLOCK) == 0, QP_ERR_IO, fail,
                "%s '%s': cannot set its descriptor to blocking reads: %s", role, path,
                strerror(errno));
  *fd = d;
  return QP_OK;
fail:
  close(d);
  return err;
}

qp_err qp_input_fopen(const char *role, const char *path, int64_t max_bytes, FILE **out) {
  *out = NULL;
  int fd = -1;
  QP_CALL(qp_input_open(role, path, max_bytes, &fd));
  FILE *f = fdopen(fd, "r");
  if (!f) {
    const int e = errno;
    close(fd);
    QP_FAIL(QP_ERR_NOMEM, "cannot read %s '%s': %s", role, path, strerror(e));
  }
  *out = f;
  return QP_OK;
}

qp_err qp_input_check(const char *role, const char *path, int64_t max_bytes) {
  int fd = -1;
  QP_CALL(qp_input_open(role, path, max_bytes, &fd));
  close(fd);
  return QP_OK;
}
