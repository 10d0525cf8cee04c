/* commands.h: the subcommands of the `qmlpipe` program. Each takes the arguments after its
 * name (argv[0] is the subcommand) and returns a process exit status; errors are printed. */
#ifndef QP_COMMANDS_H
#define QP_COMMANDS_H

int qp_cmd_run(int argc, char **argv);      /* qmlpipe run CONFIG.yaml [--output PATH] */
int qp_cmd_budget(int argc, char **argv);   /* qmlpipe budget CONFIG.yaml */
int qp_cmd_report(int argc, char **argv);   /* qmlpipe report RESULTS.h5|CONFIG.yaml */
int qp_cmd_simulate(int argc, char **argv); /* qmlpipe simulate ... */
int qp_cmd_plan(int argc, char **argv);      /* qmlpipe plan CONFIG.yaml */
int qp_cmd_calibrate(int argc, char **argv); /* qmlpipe calibrate [--output FILE] */
int qp_cmd_validate(int argc, char **argv); /* qmlpipe validate [OPTIONS] RESULTS.h5... */

#endif
