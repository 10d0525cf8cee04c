/* config_output.c: see config_output.h. */
#include "config_output.h"

#include <stdlib.h>

#include "output_path.h"

qp_err qp_config_output_check(const qp_config *cfg, const char *path, const char *source,
                              const char *noun) {
  const qp_output_input named[] = {
      {"the config file", cfg->source},
      {"mask", cfg->mask},
      {"mask_pol", cfg->mask_pol},
      {"cls", cfg->cls},
      {"noise", cfg->noise_file},
      {"noise2", cfg->n_maps2 > 0 ? cfg->noise2_file : ""},
      {"bins", cfg->bins_file},
      {"pixel_window_file", cfg->pixel_window_file},
      {"memory.calibration",
       cfg->calibration[0] ? cfg->calibration : getenv("QMLPIPE_CALIBRATION")},
  };
  const size_t n_named = sizeof named / sizeof named[0];
  const size_t n_maps =
      (cfg->n_maps > 0 ? (size_t)cfg->n_maps : 0) + (cfg->n_maps2 > 0 ? (size_t)cfg->n_maps2 : 0);
  qp_output_input *inputs = calloc(n_named + n_maps, sizeof *inputs);
  QP_CHECK(inputs, QP_ERR_NOMEM, "%s: cannot check '%s' against the config's %zu inputs", source,
           path, n_named + n_maps);
  for (size_t i = 0; i < n_named; ++i)
    inputs[i] = named[i];
  for (size_t i = 0; i < n_maps; ++i)
    inputs[n_named + i] = i < (size_t)cfg->n_maps
                              ? (qp_output_input){"maps", cfg->maps[i]}
                              : (qp_output_input){"maps2", cfg->maps2[i - (size_t)cfg->n_maps]};
  const qp_err err = qp_output_path_check(path, source, noun, inputs, n_named + n_maps);
  free(inputs);
  QP_CALL(err);
  return QP_OK;
}
