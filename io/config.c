/* config.c: the YAML run configuration (config.h), read with libyaml's document API.
 *
 * The whole file is loaded into a libyaml document (it is small), then walked once: every key
 * is looked up in a table, its value converted and range-checked, and the line of each key is
 * kept so that the checks that involve several keys (lmax_signal >= lmax, spectra vs fields)
 * can still point at a line. Every error message starts "config FILE line N:".
 *
 * Here: the defaults, the top-level keys and the load. The sections under them (noise,
 * dimensions, memory, grid, the lists of maps and spectra) are config_sections.c; the checks
 * across keys config_check.c; one value's conversion config_fields.c; byte sizes byte_size.c. */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "backends.h"
#include "config_sections.h"
#include "input_file.h"
#include "timeline.h"

void qp_config_defaults(qp_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->fields = QP_FIELDS_T;
  cfg->noise_kind = QP_NOISE_VARIANCE;
  snprintf(cfg->noise_dataset, sizeof cfg->noise_dataset, "%s", "/covariance");
  snprintf(cfg->noise2_dataset, sizeof cfg->noise2_dataset, "%s", "/covariance");
  cfg->window_functions = 1;
  cfg->n_spectra = 1;
  cfg->spectra[0] = QP_TT;
  cfg->ell_min = 2;
  cfg->lmax = 0;
  cfg->lmax_signal = 0; /* set to lmax by qp_config_load when the key is absent */
  cfg->bin_width = 1;
  cfg->path = QP_PATH_AUTO;
  cfg->accuracy = 1e-6;
  snprintf(cfg->backend, sizeof cfg->backend, "%s", "cpu");
  /* Left relative on purpose: without an `output:` key the results go to the working
   * directory, as any command-line tool's default output would. */
  snprintf(cfg->output, sizeof cfg->output, "%s", "results.h5");
  cfg->sample_interval_ms = QP_TIMELINE_DEFAULT_INTERVAL_MS;
  cfg->device_overhead = -1;
}

void qp_config_free(qp_config *cfg) {
  if (!cfg) return;
  free(cfg->maps);
  cfg->maps = NULL;
  cfg->n_maps = 0;
  free(cfg->maps2);
  cfg->maps2 = NULL;
  cfg->n_maps2 = 0;
}

/* ---- the top level ---- */

_Static_assert((int)K_COUNT <= (int)QP_CFG_KEYS_MAX,
               "more top-level keys than config_fields.h allows");
const char *const qp_top_keys[K_COUNT] = {"maps",
                                          "mask",
                                          "mask_pol",
                                          "fields",
                                          "cls",
                                          "noise",
                                          "spectra",
                                          "ell_min",
                                          "lmax",
                                          "lmax_signal",
                                          "bin_width",
                                          "bins",
                                          "beam_fwhm_arcmin",
                                          "pixel_window",
                                          "pixel_window_file",
                                          "path",
                                          "harmonic_method",
                                          "backend",
                                          "output",
                                          "memory",
                                          "dimensions",
                                          "grid",
                                          "accuracy",
                                          "checkpoint",
                                          "maps2",
                                          "noise2",
                                          "window_functions"};
const char *const qp_cfg_field_names[3] = {"T", "QU", "TQU"};

/* The backends a config may name: the registry's configurable rows (linalg/backends.h), a
 * test-only one only in the programs of the test library. */
static qp_err qp_cfg_backend(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                             char *out, size_t size) {
  const char *names[16];
  int n = 0;
  for (int i = 0; i < qp_backend_count() && n < 16; ++i)
    if (qp_backend_at(i)->configurable) names[n++] = qp_backend_at(i)->name;
  int choice = 0;
  QP_CALL(qp_cfg_choice(ctx, key, node, names, n, &choice));
  /* A test-only row (hostdev) is refused where the test library is not installed: qmlpipe. */
  char where[QP_PATH_MAX + 32];
  snprintf(where, sizeof where, "config %s line %d", ctx->file, qp_node_line(node));
  QP_CALL(qp_backend_check_available(qp_backend_find(names[choice]), where));
  snprintf(out, size, "%s", names[choice]);
  return QP_OK;
}

static qp_err qp_cfg_top_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                             const yaml_node_t *value, void *state) {
  static const char *const path_names[] = {"auto", "pixel_direct", "harmonic"};
  qp_config *cfg = state;
  const char *key = qp_top_keys[index];
  ctx->line[index] = qp_node_line(key_node);
  int choice = 0;
  switch (index) {
  case K_MAPS: QP_CALL(qp_cfg_maps(ctx, cfg, value, 0)); break;
  case K_MASK: QP_CALL(qp_cfg_path(ctx, key, value, cfg->mask)); break;
  case K_MASK_POL: QP_CALL(qp_cfg_path(ctx, key, value, cfg->mask_pol)); break;
  case K_FIELDS:
    QP_CALL(qp_cfg_choice(ctx, key, value, qp_cfg_field_names, 3, &choice));
    cfg->fields = (qp_fields)choice;
    break;
  case K_CLS: QP_CALL(qp_cfg_path(ctx, key, value, cfg->cls)); break;
  case K_NOISE: QP_CALL(qp_cfg_noise(ctx, cfg, value, 0)); break;
  case K_NOISE2: QP_CALL(qp_cfg_noise(ctx, cfg, value, 1)); break;
  case K_MAPS2: QP_CALL(qp_cfg_maps(ctx, cfg, value, 1)); break;
  case K_SPECTRA: QP_CALL(qp_cfg_spectra(ctx, cfg, value)); break;
  case K_ELL_MIN:
    QP_CALL(qp_cfg_int(ctx, key, value, &cfg->ell_min));
    QP_CHECK(cfg->ell_min >= 0, QP_ERR_INPUT, "config %s line %d: ell_min (%d) must be >= 0",
             ctx->file, ctx->line[index], cfg->ell_min);
    break;
  case K_LMAX: QP_CALL(qp_cfg_int(ctx, key, value, &cfg->lmax)); break;
  case K_LMAX_SIGNAL: QP_CALL(qp_cfg_int(ctx, key, value, &cfg->lmax_signal)); break;
  case K_BIN_WIDTH:
    QP_CALL(qp_cfg_int(ctx, key, value, &cfg->bin_width));
    QP_CHECK(cfg->bin_width >= 1, QP_ERR_INPUT, "config %s line %d: bin_width (%d) must be >= 1",
             ctx->file, ctx->line[index], cfg->bin_width);
    break;
  case K_BINS: QP_CALL(qp_cfg_path(ctx, key, value, cfg->bins_file)); break;
  case K_BEAM:
    QP_CALL(qp_cfg_double(ctx, key, value, &cfg->beam_fwhm_arcmin));
    QP_CHECK(cfg->beam_fwhm_arcmin >= 0, QP_ERR_INPUT,
             "config %s line %d: beam_fwhm_arcmin (%g) must be >= 0", ctx->file, ctx->line[index],
             cfg->beam_fwhm_arcmin);
    break;
  case K_ACCURACY:
    QP_CALL(qp_cfg_double(ctx, key, value, &cfg->accuracy));
    QP_CHECK(cfg->accuracy > 0 && cfg->accuracy < 1, QP_ERR_INPUT,
             "config %s line %d: accuracy (%g) must be in (0, 1), e.g. 1e-6", ctx->file,
             ctx->line[index], cfg->accuracy);
    break;
  case K_PIXEL_WINDOW: QP_CALL(qp_cfg_bool(ctx, key, value, &cfg->pixel_window)); break;
  case K_WINDOW_FUNCTIONS: QP_CALL(qp_cfg_bool(ctx, key, value, &cfg->window_functions)); break;
  case K_PIXEL_WINDOW_FILE: QP_CALL(qp_cfg_path(ctx, key, value, cfg->pixel_window_file)); break;
  case K_PATH:
    QP_CALL(qp_cfg_choice(ctx, key, value, path_names, 3, &choice));
    cfg->path = (qp_path)choice;
    break;
  case K_HARMONIC_METHOD: {
    static const char *const method_names[] = {"auto", "smw", "projected"};
    QP_CALL(qp_cfg_choice(ctx, key, value, method_names, 3, &choice));
    cfg->harmonic_method = choice;
    break;
  }
  case K_BACKEND:
    QP_CALL(qp_cfg_backend(ctx, key, value, cfg->backend, sizeof cfg->backend));
    break;
  case K_OUTPUT: QP_CALL(qp_cfg_path(ctx, key, value, cfg->output)); break;
  case K_CHECKPOINT: QP_CALL(qp_cfg_path(ctx, key, value, cfg->checkpoint)); break;
  case K_DIMENSIONS: QP_CALL(qp_cfg_dimensions(ctx, cfg, value)); break;
  case K_MEMORY: QP_CALL(qp_cfg_memory(ctx, cfg, value)); break;
  case K_GRID: QP_CALL(qp_cfg_grid(ctx, cfg, value)); break;
  default: QP_FAIL(QP_ERR_INTERNAL, "config key index %d", index);
  }
  return QP_OK;
}

/* Sets ctx->dir to the directory part of the config path ("" when it has none). */
static qp_err qp_cfg_dir(qp_cfg_ctx *ctx, const char *path) {
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path) + 1 : 0;
  QP_CHECK(len < sizeof ctx->dir, QP_ERR_INPUT, "config path '%s' is too long", path);
  memcpy(ctx->dir, path, len);
  ctx->dir[len] = '\0';
  return QP_OK;
}

qp_err qp_config_load(const char *path, qp_config *cfg) {
  qp_err err = QP_OK;
  FILE *file = NULL;
  yaml_parser_t parser;
  yaml_document_t doc;
  int have_parser = 0, have_doc = 0;
  qp_cfg_ctx ctx;
  memset(&ctx, 0, sizeof ctx);

  QP_CHECK(path != NULL && cfg != NULL, QP_ERR_INTERNAL, "qp_config_load: NULL argument");
  qp_config_defaults(cfg);
  QP_CHECK_GOTO(strlen(path) < sizeof cfg->source, QP_ERR_INPUT, done,
                "config path '%s' is too long", path);
  snprintf(cfg->source, sizeof cfg->source, "%s", path);
  ctx.file = path;
  QP_CALL_GOTO(qp_cfg_dir(&ctx, path), done);

  QP_CALL_GOTO(qp_input_fopen("config file", path, QP_INPUT_TEXT_MAX_BYTES, &file), done);
  QP_CHECK_GOTO(yaml_parser_initialize(&parser), QP_ERR_NOMEM, done,
                "cannot initialise the YAML parser");
  have_parser = 1;
  yaml_parser_set_input_file(&parser, file);
  if (!yaml_parser_load(&parser, &doc)) {
    QP_CHECK_GOTO(0, QP_ERR_INPUT, done, "config %s line %d: YAML error: %s%s%s", path,
                  (int)parser.problem_mark.line + 1,
                  parser.problem ? parser.problem : "unknown problem", parser.context ? " " : "",
                  parser.context ? parser.context : "");
  }
  have_doc = 1;
  ctx.doc = &doc;
  /* One document: a second (after `---`) was ignored, its keys silently lost (issue 38). */
  {
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
      QP_CHECK_GOTO(0, QP_ERR_INPUT, done, "config %s line %d: YAML error: %s", path,
                    (int)parser.problem_mark.line + 1,
                    parser.problem ? parser.problem : "unknown problem");
    }
    const yaml_node_t *second = yaml_document_get_root_node(&next);
    const int line = second ? (int)second->start_mark.line + 1 : 0;
    yaml_document_delete(&next);
    QP_CHECK_GOTO(second == NULL, QP_ERR_INPUT, done,
                  "config %s line %d: a second YAML document (after '---'): a config is one "
                  "document; merge its keys into the first",
                  path, line);
  }

  const yaml_node_t *root = yaml_document_get_root_node(&doc);
  QP_CHECK_GOTO(root != NULL, QP_ERR_INPUT, done, "config %s: the file is empty", path);
  QP_CHECK_GOTO(root->type == YAML_MAPPING_NODE, QP_ERR_INPUT, done,
                "config %s line %d: the top level must be a mapping of keys (maps:, mask:, ...)",
                path, qp_node_line(root));
  QP_CALL_GOTO(qp_cfg_walk(&ctx, root, "", qp_top_keys, K_COUNT, qp_cfg_top_key, cfg), done);
  QP_CALL_GOTO(qp_cfg_check(&ctx, cfg), done);

done:
  if (have_doc) yaml_document_delete(&doc);
  if (have_parser) yaml_parser_delete(&parser);
  if (file) fclose(file);
  if (err != QP_OK) qp_config_free(cfg);
  return err;
}

int qp_config_device_backend(const qp_config *cfg) {
  const qp_backend *b = qp_backend_find(cfg->backend);
  return b && b->space == QP_SPACE_DEVICE;
}
