/* results_path.c: see results_path.h. */
#include "results_path.h"

#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int qp_ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n > k && strcasecmp(s + n - k, suffix) == 0;
}

int qp_results_arg_is_config(const char *arg) {
  return qp_ends_with(arg, ".yaml") || qp_ends_with(arg, ".yml");
}

qp_err qp_results_path_resolve(const char *arg, char out[QP_PATH_MAX]) {
  if (!qp_results_arg_is_config(arg)) {
    QP_CHECK(strlen(arg) < QP_PATH_MAX, QP_ERR_INPUT, "results path longer than %d characters",
             QP_PATH_MAX - 1);
    snprintf(out, QP_PATH_MAX, "%s", arg);
    return QP_OK;
  }
  qp_config cfg;
  QP_CALL(qp_config_load(arg, &cfg));
  snprintf(out, QP_PATH_MAX, "%s", cfg.output);
  qp_config_free(&cfg);
  struct stat st;
  QP_CHECK(stat(out, &st) == 0, QP_ERR_IO,
           "config '%s' names the results file '%s' (its 'output'), which cannot be opened: %s. "
           "Run `qmlpipe run %s` first, or give the results file itself (a run with --output "
           "wrote there, not to the config's output)",
           arg, out, strerror(errno), arg);
  QP_CHECK(!S_ISDIR(st.st_mode), QP_ERR_IO,
           "config '%s' names the results file '%s' (its 'output'), which is a directory", arg,
           out);
  return QP_OK;
}

qp_err qp_results_path_check_writable(const char *path, const char *source) {
  const size_t len = strlen(path);
  QP_CHECK(len > 0, QP_ERR_INPUT, "%s: the results path is empty", source);
  QP_CHECK(len < QP_PATH_MAX, QP_ERR_INPUT, "%s: results path longer than %d characters", source,
           QP_PATH_MAX - 1);
  QP_CHECK(path[len - 1] != '/', QP_ERR_IO,
           "%s: the results path '%s' ends in '/'; give a file name (e.g. '%sresults.h5')",
           source, path, path);
  char dir[QP_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0'; /* "/results.h5": the root */
  else
    *slash = '\0';
  struct stat st;
  QP_CHECK(stat(dir, &st) == 0, QP_ERR_IO,
           "%s: cannot write the results file '%s': its directory '%s' %s (create it first)",
           source, path, dir, errno == ENOENT ? "does not exist" : strerror(errno));
  QP_CHECK(S_ISDIR(st.st_mode), QP_ERR_IO,
           "%s: cannot write the results file '%s': '%s' is not a directory", source, path, dir);
  QP_CHECK(access(dir, W_OK | X_OK) == 0, QP_ERR_IO,
           "%s: cannot write the results file '%s': directory '%s': %s", source, path, dir,
           strerror(errno));
  QP_CHECK(stat(path, &st) != 0 || !S_ISDIR(st.st_mode), QP_ERR_IO,
           "%s: the results path '%s' is a directory; give a file name (e.g. '%s/results.h5')",
           source, path, path);
  return QP_OK;
}

qp_err qp_results_path_make_dir(const char *dir, const char *source) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    QP_CHECK(errno == ENOENT && mkdir(dir, 0777) == 0, QP_ERR_IO,
             "%s: cannot create the checkpoint directory '%s': %s", source, dir, strerror(errno));
    QP_CHECK(stat(dir, &st) == 0, QP_ERR_IO, "%s: '%s': %s", source, dir, strerror(errno));
  }
  QP_CHECK(S_ISDIR(st.st_mode), QP_ERR_IO, "%s: the checkpoint directory '%s' is not a directory",
           source, dir);
  QP_CHECK(access(dir, W_OK | X_OK) == 0, QP_ERR_IO, "%s: checkpoint directory '%s': %s", source,
           dir, strerror(errno));
  return QP_OK;
}

/* What kind of file st is, for a message. */
static const char *qp_file_kind(const struct stat *st) {
  if (S_ISDIR(st->st_mode)) return "a directory";
  if (S_ISCHR(st->st_mode)) return "a character device";
  if (S_ISBLK(st->st_mode)) return "a block device";
  if (S_ISFIFO(st->st_mode)) return "a named pipe (FIFO)";
  if (S_ISSOCK(st->st_mode)) return "a socket";
  return "not a regular file";
}

/* The output must not be the input `path` (the config's `key`): the same device and inode
 * as the output or, when the output is a symlink, as the link itself; a hard link or a symlink
 * to an input is the input. */
static qp_err qp_output_not_input(const char *output, const struct stat *out, int out_exists,
                                  const struct stat *out_link, const char *source,
                                  const char *key, const char *path) {
  struct stat in;
  if (!path || !path[0] || stat(path, &in) != 0) return QP_OK; /* the reader says what is wrong */
  const int same = (out_exists && in.st_dev == out->st_dev && in.st_ino == out->st_ino) ||
                   (in.st_dev == out_link->st_dev && in.st_ino == out_link->st_ino);
  QP_CHECK(!same, QP_ERR_IO,
           "%s: the results file '%s' is the run's input '%s' (%s): writing the results would "
           "destroy it; give another results path",
           source, output, path, key);
  return QP_OK;
}

qp_err qp_results_path_check_output(const qp_config *cfg, const char *source) {
  const char *output = cfg->output;
  QP_CALL(qp_results_path_check_writable(output, source));
  struct stat out, link;
  if (lstat(output, &link) == 0) {
    const int out_exists = stat(output, &out) == 0;
    /* rename() would replace a device, a FIFO or a socket by a regular file: /dev/null as
     * root became a file. A symlink's target is what the user means by the name. */
    QP_CHECK(!out_exists || S_ISREG(out.st_mode), QP_ERR_IO,
             "%s: the results path '%s' exists and is %s, not a regular file; give a file name",
             source, output, qp_file_kind(&out));
    QP_CALL(qp_output_not_input(output, &out, out_exists, &link, source, "the config file",
                                cfg->source));
    for (int i = 0; i < cfg->n_maps; ++i)
      QP_CALL(qp_output_not_input(output, &out, out_exists, &link, source, "maps", cfg->maps[i]));
    const struct {
      const char *key, *path;
    } inputs[] = {
        {"mask", cfg->mask},
        {"mask_pol", cfg->mask_pol},
        {"cls", cfg->cls},
        {"noise", cfg->noise_file},
        {"bins", cfg->bins_file},
        {"memory.calibration", cfg->calibration[0] ? cfg->calibration
                                                   : getenv("QMLPIPE_CALIBRATION")},
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; ++i)
      QP_CALL(qp_output_not_input(output, &out, out_exists, &link, source, inputs[i].key,
                                  inputs[i].path));
  }
  /* The way the results will be written, tried now: a read-only file system, a directory
   * that root may not write (NFS root squash), a full inode table. */
  QP_CALL(qp_atomic_probe(output, source));
  return QP_OK;
}
