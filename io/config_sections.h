/* config_sections.h: the parts of the config reader (io/config.c's, not a public API): the
 * top-level keys, the sections under them (config_sections.c) and the checks across keys
 * (config_check.c). */
#ifndef QP_CONFIG_SECTIONS_H
#define QP_CONFIG_SECTIONS_H

#include <yaml.h>

#include "config.h"
#include "config_fields.h"

/* The top-level keys, in qp_top_keys' order; qp_cfg_ctx.line[] is indexed by them. */
enum {
  K_MAPS = 0,
  K_MASK,
  K_MASK_POL,
  K_FIELDS,
  K_CLS,
  K_NOISE,
  K_SPECTRA,
  K_ELL_MIN,
  K_LMAX,
  K_LMAX_SIGNAL,
  K_BIN_WIDTH,
  K_BINS,
  K_BEAM,
  K_PIXEL_WINDOW,
  K_PIXEL_WINDOW_FILE,
  K_PATH,
  K_HARMONIC_METHOD,
  K_BACKEND,
  K_OUTPUT,
  K_MEMORY,
  K_DIMENSIONS,
  K_GRID,
  K_ACCURACY,
  K_CHECKPOINT,
  K_MAPS2,
  K_NOISE2,
  K_WINDOW_FUNCTIONS,
  K_COUNT
};

/** The names of the top-level keys (config.c). */
extern const char *const qp_top_keys[K_COUNT];
/** `fields:` T, QU, TQU, in qp_fields order (config.c). */
extern const char *const qp_cfg_field_names[3];

/* The sections, each given its key's value node; errors name the file, line and key. */
/** `maps` (second 0) or `maps2` (second 1: the maps crossed with them, map k with map k). */
qp_err qp_cfg_maps(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node, int second);
qp_err qp_cfg_spectra(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node);
/** `noise` (second 0) or `noise2` (second 1: the noise of `maps2`), the same keys. */
qp_err qp_cfg_noise(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node, int second);
qp_err qp_cfg_dimensions(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node);
qp_err qp_cfg_memory(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node);
qp_err qp_cfg_grid(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node);

/** The checks that involve several keys, and the defaults that depend on other keys
 *  (lmax_signal, noise.variance_p, spectra), after the whole file was read. */
qp_err qp_cfg_check(qp_cfg_ctx *ctx, qp_config *cfg);

#endif
