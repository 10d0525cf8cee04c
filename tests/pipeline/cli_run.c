/* cli_run.c: see cli_run.h. */
#include "cli_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

extern char **environ;

char *qp_cli_slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *text = NULL;
  size_t len = 0;
  if (f) {
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size > 0 && (text = malloc((size_t)size + 1)) != NULL)
      len = fread(text, 1, (size_t)size, f);
    fclose(f);
  }
  if (!text) text = malloc(1);
  if (text) text[len] = '\0';
  return text;
}

void qp_cli_run(const char *program, const char *tag, const char *const *args, qp_cli_result *r) {
  memset(r, 0, sizeof *r);
  char out_path[256], err_path[256];
  snprintf(out_path, sizeof out_path, "%s.out", tag);
  snprintf(err_path, sizeof err_path, "%s.err", tag);
  char *argv[QP_CLI_ARGS_MAX + 2];
  int argc = 0;
  argv[argc++] = (char *)program;
  for (int i = 0; args[i] && argc <= QP_CLI_ARGS_MAX; ++i)
    argv[argc++] = (char *)args[i];
  argv[argc] = NULL;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  r->cpu_seconds = NAN;
  pid_t pid;
  double t0 = qp_clock_seconds();
  int rc = posix_spawn(&pid, program, &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    fprintf(stderr, "  cannot start %s: %s\n", program, strerror(rc));
  } else {
    r->started = 1;
    int wstatus = 0;
    struct rusage ru;
    pid_t got;
    while ((got = wait4(pid, &wstatus, 0, &ru)) < 0 && errno == EINTR)
      continue;
    r->seconds = qp_clock_seconds() - t0;
    if (got == pid)
      r->cpu_seconds = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                       (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    if (WIFEXITED(wstatus)) {
      r->exited = 1;
      r->status = WEXITSTATUS(wstatus);
    } else if (WIFSIGNALED(wstatus)) {
      r->signal = WTERMSIG(wstatus);
    }
  }
  r->out = qp_cli_slurp(out_path);
  r->err = qp_cli_slurp(err_path);
}

void qp_cli_run_ranks(const char *program, const char *mpiexec, int ranks, const char *tag,
                      const char *const *args, qp_cli_result *r) {
  const char *full[QP_CLI_ARGS_MAX + 1];
  int n = 0;
  char count[16];
  if (ranks > 1) {
    snprintf(count, sizeof count, "%d", ranks);
    const char *head[] = {"-n", count, "--oversubscribe", "--allow-run-as-root", program};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; ++i)
      full[n++] = head[i];
  }
  for (int i = 0; args[i] && n < QP_CLI_ARGS_MAX; ++i)
    full[n++] = args[i];
  full[n] = NULL;
  qp_cli_run(ranks > 1 ? mpiexec : program, tag, full, r);
}

void qp_cli_free(qp_cli_result *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

void qp_cli_remove_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
}

int qp_cli_setup(int argc, char **argv, const char *test_name, const char *work_dir,
                 char *program) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH_OF_QMLPIPE\n", test_name);
    return 2;
  }
  if (!realpath(argv[1], program)) {
    fprintf(stderr, "%s: cannot resolve '%s': %s\n", test_name, argv[1], strerror(errno));
    return 1;
  }
  if ((mkdir(work_dir, 0755) != 0 && errno != EEXIST) || chdir(work_dir) != 0) {
    fprintf(stderr, "%s: cannot use directory '%s': %s\n", test_name, work_dir, strerror(errno));
    return 1;
  }
  qp_cli_remove_files(".");
  return 0;
}

int qp_cli_setup_with_file(int argc, char **argv, const char *test_name, const char *work_dir,
                           char *program, char *file) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s QMLPIPE FILE\n", test_name);
    return 2;
  }
  if (!realpath(argv[2], file)) { /* before qp_cli_setup enters work_dir */
    fprintf(stderr, "%s: cannot resolve '%s': %s\n", test_name, argv[2], strerror(errno));
    return 1;
  }
  return qp_cli_setup(argc, argv, test_name, work_dir, program);
}
