/* cli_run.h: running a program (the real qmlpipe binary) from a test, with its stdout and
 * stderr captured in files of the working directory and read back. */
#ifndef QP_TEST_CLI_RUN_H
#define QP_TEST_CLI_RUN_H

typedef struct qp_cli_result {
  int started;    /* posix_spawn succeeded */
  int exited;     /* normal exit (else killed by a signal) */
  int status;     /* exit status when exited */
  int signal;     /* the signal when killed */
  double seconds; /* wall time of the child: printed, or a hang's ceiling (docs/reliability.md) */
  double cpu_seconds; /* the child's own CPU time (user + system, wait4), NaN when unknown:
                       * what "refused before computing" is judged on, unmoved by load */
  char *out, *err;    /* its stdout and stderr (malloc'd, NUL-terminated) */
} qp_cli_result;

/** The most arguments qp_cli_run passes (the rest are dropped). */
enum { QP_CLI_ARGS_MAX = 30 };

/** Runs `program args...` (args NULL-terminated, at most QP_CLI_ARGS_MAX) with stdin from
 *  /dev/null, stdout in <tag>.out and stderr in <tag>.err. */
void qp_cli_run(const char *program, const char *tag, const char *const *args, qp_cli_result *r);
/** qp_cli_run of `program args...` on `ranks` processes: under `mpiexec -n ranks
 *  --oversubscribe --allow-run-as-root` when ranks > 1 (mpiexec its path), alone otherwise. */
void qp_cli_run_ranks(const char *program, const char *mpiexec, int ranks, const char *tag,
                      const char *const *args, qp_cli_result *r);
void qp_cli_free(qp_cli_result *r);
/** The whole file as a NUL-terminated string ("" when unreadable); the caller frees it. */
char *qp_cli_slurp(const char *path);
/** The start of a CLI test: resolves argv[1] (the program) into `program` (PATH_MAX bytes),
 *  then enters `work_dir` (created if needed) and empties it, so leftover checks see only this
 *  test's files. Returns 0, or the exit status for main after printing why. */
int qp_cli_setup(int argc, char **argv, const char *test_name, const char *work_dir, char *program);
/** qp_cli_setup for a test of two arguments, QMLPIPE and a file (a C_ell file, say): the
 *  file's absolute path into `file` (PATH_MAX bytes), resolved before entering work_dir. */
int qp_cli_setup_with_file(int argc, char **argv, const char *test_name, const char *work_dir,
                           char *program, char *file);
/** Removes the files of a directory (not recursive). */
void qp_cli_remove_files(const char *dir);
#endif
