/* simulate_outputs.c: see simulate_outputs.h. */
#include "simulate_outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output_path.h"

int qp_simulate_map_path(const char *prefix, int k, char *out, size_t size) {
  const int n = snprintf(out, size, "%s_%04d.fits", prefix, k);
  return n > 0 && (size_t)n < size;
}

/* The maps PREFIX_0000.fits.. of one set (--out or --out2): each a path qmlpipe may write, none
 * the C_ell file it reads, none the mask written after them. */
static qp_err qp_simulate_check_set(const char *prefix, const char *option, const char *what,
                                    int n_maps, const char *mask, const char *cls) {
  const qp_output_input inputs[] = {{"--cls", cls}};
  char path[4200];
  for (int k = 0; k < n_maps; ++k) {
    QP_CHECK(qp_simulate_map_path(prefix, k, path, sizeof path), QP_ERR_INPUT,
             "%s: the prefix is too long for a map name: '%s'", option, prefix);
    QP_CALL(qp_output_path_check(path, option, what, inputs, 1));
    /* The mask written after the maps would replace one of them. */
    QP_CHECK(!mask || strcmp(mask, path) != 0, QP_ERR_IO,
             "--mask: '%s' is also map %d of %s '%s': give another path", mask, k, option, prefix);
  }
  return QP_OK;
}

qp_err qp_simulate_check_outputs(const char *prefix, int n_maps, const char *mask,
                                 const char *cls) {
  QP_CALL(qp_simulate_check_set(prefix, "--out", "a map", n_maps, mask, cls));
  const qp_output_input inputs[] = {{"--cls", cls}};
  if (mask) QP_CALL(qp_output_path_check(mask, "--mask", "the mask", inputs, 1));
  return QP_OK;
}

qp_err qp_simulate_check_pairs(const char *prefix2, int n_maps, const char *mask, const char *cls) {
  return qp_simulate_check_set(prefix2, "--out2", "a map of the second set", n_maps, mask, cls);
}

/* 1 when `config` is a regular file that starts with QP_EXAMPLE_MARK (an earlier example's
 * config). Opened without blocking and read only when regular: an open of a FIFO for reading
 * waits for a writer (a FIFO there hung --example). */
static int qp_is_example_config(const char *config) {
  const int fd = open(config, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
  if (!f) {
    close(fd);
    return 0;
  }
  char line[128] = "";
  const int ok =
      fgets(line, sizeof line, f) && strncmp(line, QP_EXAMPLE_MARK, strlen(QP_EXAMPLE_MARK)) == 0;
  fclose(f);
  return ok;
}

qp_err qp_simulate_check_example(const char *dir, int n_maps, const char *cls) {
  QP_CHECK(dir[0], QP_ERR_INPUT, "--example: the directory name is empty");
  QP_CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST, QP_ERR_IO,
           "--example: cannot create directory '%s': %s", dir,
           errno == ENOENT ? "its parent directory does not exist" : strerror(errno));
  struct stat st;
  QP_CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), QP_ERR_IO,
           "--example: '%s' is not a directory", dir);
  char config[4200];
  QP_CHECK(snprintf(config, sizeof config, "%s/config.yaml", dir) < (int)sizeof config,
           QP_ERR_INPUT, "--example: the directory name '%s' is too long", dir);
  const int earlier = qp_is_example_config(config);
  const qp_output_input inputs[] = {{"--cls", cls}};
  char path[4200];
  for (int k = -3; k < n_maps; ++k) {
    const char *fixed[] = {"config.yaml", "cls.txt", "mask.fits"};
    const int fits =
        k < 0 ? snprintf(path, sizeof path, "%s/%s", dir, fixed[k + 3]) < (int)sizeof path
              : snprintf(path, sizeof path, "%s/map_%04d.fits", dir, k) < (int)sizeof path;
    QP_CHECK(fits, QP_ERR_INPUT, "--example: the directory name '%s' is too long", dir);
    QP_CALL(qp_output_path_check(path, "--example", k < 0 ? "the example" : "a map", inputs, 1));
    QP_CHECK(earlier || lstat(path, &st) != 0, QP_ERR_IO,
             "--example: '%s' exists and %s%s%s is not the config of an earlier example (its "
             "first line is not \"%s\"): the example would replace another run's files; give a "
             "new directory or remove them",
             path, k == -3 ? "" : "'", k == -3 ? "it" : config, k == -3 ? "" : "'",
             QP_EXAMPLE_MARK);
  }
  return QP_OK;
}
