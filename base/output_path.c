/* output_path.c: see output_path.h. */
#include "output_path.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "input_file.h"

qp_err qp_output_path_replaceable(const char *path, const char *source, const char *noun) {
  struct stat link, target;
  if (lstat(path, &link) != 0) return QP_OK; /* nothing there: a new file */
  /* A dangling symlink: rename() replaces the link itself by the new file. */
  if (stat(path, &target) != 0) return QP_OK;
  /* rename() would put a regular file in the place of a device, a FIFO or a socket (as root,
   * /dev/null became a file); a reader blocked on a FIFO would get nothing. */
  QP_CHECK(S_ISREG(target.st_mode), QP_ERR_IO,
           "%s%s'%s' is %s%s, not a regular file: writing %s there would replace it; give the "
           "name of a regular file",
           source ? source : "", source ? ": " : "", path,
           S_ISLNK(link.st_mode) ? "a symlink to " : "", qp_input_kind(target.st_mode), noun);
  return QP_OK;
}

/* `path` must not be `in` (the input `what`): the same device and inode as the output's
 * target or, when the output is a symlink, as the link itself; a hard link or a symlink to an
 * input is the input. */
static qp_err qp_output_not_input(const char *path, const struct stat *target, int target_exists,
                                  const struct stat *link, const char *source, const char *noun,
                                  const qp_output_input *in) {
  struct stat st;
  if (!in->path || !in->path[0] || stat(in->path, &st) != 0) return QP_OK; /* its reader says */
  const int same = (target_exists && st.st_dev == target->st_dev && st.st_ino == target->st_ino) ||
                   (st.st_dev == link->st_dev && st.st_ino == link->st_ino);
  QP_CHECK(!same, QP_ERR_IO,
           "%s: '%s' is this command's input '%s' (%s): writing %s there would destroy it; give "
           "another path",
           source, path, in->path, in->what, noun);
  return QP_OK;
}

/* The directory `path` will be written in ("." for a bare name, "/" for the root). */
static void qp_output_dir(const char *path, char dir[PATH_MAX]) {
  snprintf(dir, PATH_MAX, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, PATH_MAX, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
}

qp_err qp_output_path_check(const char *path, const char *source, const char *noun,
                            const qp_output_input *inputs, size_t n_inputs) {
  const size_t len = strlen(path);
  QP_CHECK(len > 0, QP_ERR_INPUT, "%s: the path of %s is empty", source, noun);
  QP_CHECK(len < PATH_MAX, QP_ERR_INPUT, "%s: the path of %s is longer than %d characters", source,
           noun, PATH_MAX - 1);
  QP_CHECK(path[len - 1] != '/', QP_ERR_IO,
           "%s: '%s' ends in '/': %s needs a file name (e.g. '%sresults.h5')", source, path, noun,
           path);
  /* The kind first: /dev/null is refused as a device, not for its directory, which only root
   * may write. */
  QP_CALL(qp_output_path_replaceable(path, source, noun));
  struct stat link, target;
  if (lstat(path, &link) == 0) {
    const int target_exists = stat(path, &target) == 0;
    for (size_t i = 0; i < n_inputs; ++i)
      QP_CALL(qp_output_not_input(path, &target, target_exists, &link, source, noun, &inputs[i]));
  }
  char dir[PATH_MAX];
  qp_output_dir(path, dir);
  struct stat st;
  QP_CHECK(stat(dir, &st) == 0, QP_ERR_IO,
           "%s: cannot write %s '%s': its directory '%s' %s (create it first)", source, noun, path,
           dir, errno == ENOENT ? "does not exist" : strerror(errno));
  QP_CHECK(S_ISDIR(st.st_mode), QP_ERR_IO, "%s: cannot write %s '%s': '%s' is not a directory",
           source, noun, path, dir);
  QP_CHECK(access(dir, W_OK | X_OK) == 0, QP_ERR_IO, "%s: cannot write %s '%s': directory '%s': %s",
           source, noun, path, dir, strerror(errno));
  /* The way the file will be written, tried now: a read-only file system, a directory that
   * root may not write (NFS root squash), a full inode table. */
  QP_CALL(qp_atomic_probe(path, source));
  return QP_OK;
}
