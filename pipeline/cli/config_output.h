/* config_output.h: a file a command writes, checked against the inputs its config names
 * (base/output_path.h): `run`'s results file and `plan --sbatch`'s job script. */
#ifndef QP_CONFIG_OUTPUT_H
#define QP_CONFIG_OUTPUT_H

#include "config.h"
#include "qp_error.h"

/** qp_output_path_check of `path` with the inputs of `cfg` as the files it must not be: the
 *  config file itself, every map, mask, mask_pol, cls, the noise file (variance map or
 *  covariance), the bins file and the calibration file (memory.calibration, else
 *  $QMLPIPE_CALIBRATION). `source` and `noun` as there ("--output", "the results file").
 *  Not collective. Errors: as qp_output_path_check; QP_ERR_NOMEM for the list. */
qp_err qp_config_output_check(const qp_config *cfg, const char *path, const char *source,
                              const char *noun);

#endif
