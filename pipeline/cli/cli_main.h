/* cli_main.h: the qmlpipe command line, the body of both programs built from it: qmlpipe
 * (main.c) and qmlpipe-test (tests/support/qmlpipe_test_main.c, the same after installing the
 * test library: the backend hostdev and the test hooks). */
#ifndef QP_CLI_MAIN_H
#define QP_CLI_MAIN_H

/** Runs the command of argv (run, budget, plan, ...) from the start of the process to its end:
 *  MPI, the BLAS threads, the signal handlers, the command, the flush of its output. Returns
 *  the exit status where the process may return it; it may also end the process itself
 *  (_exit) after a failed command or where the libraries' exit handlers are not needed. */
int qp_cli_main(int argc, char **argv);

#endif
