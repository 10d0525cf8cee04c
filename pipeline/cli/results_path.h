/* results_path.h: where a run's results file is: resolved from a config or taken as given
 * (`qmlpipe report` and `validate`), and checked writable before a run starts (`run`). */
#ifndef QP_RESULTS_PATH_H
#define QP_RESULTS_PATH_H

#include "config.h"
#include "qp_error.h"

/** 1 when `arg` names a config (ends in .yaml or .yml, any case), else 0 (a results file). */
int qp_results_arg_is_config(const char *arg);

/** The results file an argument of `report` or `validate` stands for.
 *
 *  @param arg  a config (qp_results_arg_is_config): read with qp_config_load, its `output`
 *              (relative to the config's directory, as `run` takes it); else a results path,
 *              used as is (relative to the current directory).
 *  @param out  the path (QP_PATH_MAX bytes).
 *  Not collective. Errors: the config's own (QP_ERR_INPUT, QP_ERR_IO), QP_ERR_IO when the
 *  config's results file does not exist (naming both files); a results path is not opened. */
qp_err qp_results_path_resolve(const char *arg, char out[QP_PATH_MAX]);

/** Makes directory `dir` when it does not exist (one level: its parent must exist) and checks
 *  that it is a directory this process can write (the checkpoints of `run`). QP_ERR_IO naming
 *  `source` and the directory otherwise. */
qp_err qp_results_path_make_dir(const char *dir, const char *source);
/** Everything checked before a run about its results file (rank 0 writes it): the shared
 *  check of every written file (base/output_path.h) with the run's inputs
 *  (qp_config_output_check): an existing `output` must be a regular file, not one of the
 *  inputs, in a writable directory, and a temporary is made and removed beside it.
 *  `source` says where the path came from ("--output", "config 'c.yaml' key 'output'").
 *  QP_ERR_IO naming the path, the input and the reason. */
qp_err qp_results_path_check_output(const qp_config *cfg, const char *source);

#endif
