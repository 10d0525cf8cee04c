/* main.c: qmlpipe, the program a user runs: the command line of cli_main.h, nothing of the
 * test library (tests/support/: hostdev and the test hooks are qmlpipe-test's). */
#include "cli_main.h"

int main(int argc, char **argv) { return qp_cli_main(argc, argv); }
