/* results_path.c: see results_path.h. */
#include "results_path.h"

#include "config_output.h"

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

qp_err qp_results_path_check_output(const qp_config *cfg, const char *source) {
  QP_CALL(qp_config_output_check(cfg, cfg->output, source, "the results file"));
  return QP_OK;
}
