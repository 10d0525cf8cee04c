/* config_sections.c: the config's sections (config_sections.h): the noise, dimensions,
 * memory and grid mappings, key by key, and the lists of maps and spectra. Each value is
 * converted and range-checked where it is read (config_fields.h); what involves several keys
 * waits for config_check.c. */
#include "config_sections.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const qp_spectrum_names[QP_SPECTRA_MAX] = {"TT", "EE", "BB", "TE", "TB", "EB"};

const char *qp_spectrum_name(qp_spectrum s) {
  return (s >= QP_TT && s <= QP_EB) ? qp_spectrum_names[s] : "??";
}

/* The keys of each section, in the order of their enum. */
enum {
  N_VARIANCE = 0,
  N_VARIANCE_T,
  N_VARIANCE_P,
  N_VARIANCE_MAP,
  N_COVARIANCE,
  N_DATASET,
  N_COUNT
};
static const char *const qp_noise_keys[N_COUNT] = {"variance",     "variance_t", "variance_p",
                                                   "variance_map", "covariance", "dataset"};

enum { D_N_PIX = 0, D_N_MODES, D_LMAX_SIGNAL, D_LMAX, D_N_BINS, D_N_MAPS, D_NSIDE, D_COUNT };
static const char *const qp_dimension_keys[D_COUNT] = {"n_pix",  "n_modes", "lmax_signal", "lmax",
                                                       "n_bins", "n_maps",  "nside"};

enum { M_HOST = 0, M_DEVICE, M_INTERVAL, M_CALIBRATION, M_DEVICE_OVERHEAD, M_COUNT };
static const char *const qp_memory_keys[M_COUNT] = {
    "host_limit", "device_limit", "sample_interval_ms", "calibration", "device_overhead"};

enum { G_ROWS = 0, G_COLS, G_BLOCK, G_COUNT };
static const char *const qp_grid_keys[G_COUNT] = {"rows", "cols", "block"};

/* One noise section, `noise` or `noise2` (the noise of maps2): the same keys into the
 * config's fields for that section. */
typedef struct qp_noise_state {
  const char *section;
  qp_noise_kind *kind;
  double *variance, *variance_pol;
  char *file;           /* QP_PATH_MAX */
  char *dataset;        /* 256 */
  int *t_line, *p_line; /* variance_t / variance_p lines (config_check.c) */
  int n_kinds;          /* how many of variance / variance_map / covariance were given */
  int per_field;        /* variance_t / variance_p given (count as one kind together) */
  int dataset_line;     /* line of `dataset:`, 0 when absent */
} qp_noise_state;

static qp_err qp_cfg_noise_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                               const yaml_node_t *value, void *state) {
  qp_noise_state *ns = state;
  char name[64];
  snprintf(name, sizeof name, "%s.%s", ns->section, qp_noise_keys[index]);
  switch (index) {
  case N_VARIANCE:
    QP_CALL(qp_cfg_double(ctx, name, value, ns->variance));
    QP_CHECK(*ns->variance > 0, QP_ERR_INPUT, "config %s line %d: %s must be > 0, got %g",
             ctx->file, qp_node_line(value), name, *ns->variance);
    *ns->kind = QP_NOISE_VARIANCE;
    ++ns->n_kinds;
    break;
  case N_VARIANCE_T:
  case N_VARIANCE_P: {
    double *target = index == N_VARIANCE_T ? ns->variance : ns->variance_pol;
    *(index == N_VARIANCE_T ? ns->t_line : ns->p_line) = qp_node_line(key_node);
    QP_CALL(qp_cfg_double(ctx, name, value, target));
    QP_CHECK(*target > 0, QP_ERR_INPUT, "config %s line %d: %s must be > 0, got %g", ctx->file,
             qp_node_line(value), name, *target);
    *ns->kind = QP_NOISE_VARIANCE;
    if (!ns->per_field++) ++ns->n_kinds;
    break;
  }
  case N_VARIANCE_MAP:
    QP_CALL(qp_cfg_path(ctx, name, value, ns->file));
    *ns->kind = QP_NOISE_VARIANCE_MAP;
    ++ns->n_kinds;
    break;
  case N_COVARIANCE:
    QP_CALL(qp_cfg_path(ctx, name, value, ns->file));
    *ns->kind = QP_NOISE_COVARIANCE;
    ++ns->n_kinds;
    break;
  case N_DATASET: {
    const char *text = NULL;
    QP_CALL(qp_cfg_scalar(ctx, name, value, &text));
    QP_CHECK(strlen(text) < 256, QP_ERR_INPUT, "config %s line %d: %s longer than %d characters",
             ctx->file, qp_node_line(value), name, 255);
    snprintf(ns->dataset, 256, "%s", text);
    ns->dataset_line = qp_node_line(key_node);
    break;
  }
  default: QP_FAIL(QP_ERR_INTERNAL, "%s key index %d", ns->section, index);
  }
  return QP_OK;
}

qp_err qp_cfg_noise(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node, int second) {
  _Static_assert(sizeof cfg->noise_dataset == 256 && sizeof cfg->noise2_dataset == 256,
                 "qp_cfg_noise_key writes 256-byte dataset names");
  qp_noise_state ns = {0};
  if (second)
    ns = (qp_noise_state){"noise2",
                          &cfg->noise2_kind,
                          &cfg->noise2_variance,
                          &cfg->noise2_variance_pol,
                          cfg->noise2_file,
                          cfg->noise2_dataset,
                          &ctx->variance2_t_line,
                          &ctx->variance2_p_line,
                          0,
                          0,
                          0};
  else
    ns = (qp_noise_state){"noise",
                          &cfg->noise_kind,
                          &cfg->noise_variance,
                          &cfg->noise_variance_pol,
                          cfg->noise_file,
                          cfg->noise_dataset,
                          &ctx->variance_t_line,
                          &ctx->variance_p_line,
                          0,
                          0,
                          0};
  QP_CHECK(node->type == YAML_MAPPING_NODE, QP_ERR_INPUT,
           "config %s line %d: key '%s' must be a mapping with one of variance, "
           "variance_map, covariance (e.g. %s: {variance: 1.0e-4})",
           ctx->file, qp_node_line(node), ns.section, ns.section);
  QP_CALL(qp_cfg_walk(ctx, node, ns.section, qp_noise_keys, N_COUNT, qp_cfg_noise_key, &ns));
  QP_CHECK(ns.n_kinds == 1, QP_ERR_INPUT,
           "config %s line %d: '%s' needs exactly one of variance, variance_t/variance_p, "
           "variance_map, covariance (%d given)",
           ctx->file, qp_node_line(node), ns.section, ns.n_kinds);
  QP_CHECK(ns.dataset_line == 0 || *ns.kind == QP_NOISE_COVARIANCE, QP_ERR_INPUT,
           "config %s line %d: %s.dataset only goes with %s.covariance", ctx->file, ns.dataset_line,
           ns.section, ns.section);
  return QP_OK;
}

static qp_err qp_cfg_dims_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                              const yaml_node_t *value, void *state) {
  qp_config *cfg = state;
  (void)key_node;
  int v = 0;
  char name[64];
  snprintf(name, sizeof name, "dimensions.%s", qp_dimension_keys[index]);
  QP_CALL(qp_cfg_int(ctx, name, value, &v));
  QP_CHECK(v > 0 || (index == D_N_MODES && v == 0), QP_ERR_INPUT,
           "config %s line %d: %s must be positive, got %d", ctx->file, qp_node_line(value), name,
           v);
  QP_CHECK(index != D_NSIDE || v <= QP_NSIDE_MAX, QP_ERR_INPUT,
           "config %s line %d: %s = %d is beyond HEALPix's largest nside, 2^29", ctx->file,
           qp_node_line(value), name, v);
  switch (index) {
  case D_N_PIX: cfg->dim_n_pix = v; break;
  case D_N_MODES: cfg->dim_n_modes = v; break;
  case D_LMAX_SIGNAL:
    cfg->lmax_signal = v;
    ctx->line[K_LMAX_SIGNAL] = qp_node_line(value);
    break;
  case D_LMAX:
    cfg->lmax = v;
    ctx->line[K_LMAX] = qp_node_line(value);
    break;
  case D_N_BINS: cfg->dim_n_bins = v; break;
  case D_N_MAPS: cfg->dim_n_maps = v; break;
  case D_NSIDE: cfg->dim_nside = v; break;
  default: QP_FAIL(QP_ERR_INTERNAL, "dimensions key index %d", index);
  }
  return QP_OK;
}

static qp_err qp_cfg_memory_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                                const yaml_node_t *value, void *state) {
  qp_config *cfg = state;
  (void)key_node;
  /* A limit of 0 bytes is no memory at all, not "no limit" (which is the key left out): it
   * was taken as none (issue 38). */
  if (index == M_HOST) {
    QP_CALL(qp_cfg_bytes(ctx, "memory.host_limit", value, &cfg->host_limit));
    QP_CHECK(cfg->host_limit > 0, QP_ERR_INPUT,
             "config %s line %d: memory.host_limit is 0: no run fits in no memory; leave the "
             "key out for no limit of the config's own",
             ctx->file, qp_node_line(value));
  } else if (index == M_DEVICE) {
    QP_CALL(qp_cfg_bytes(ctx, "memory.device_limit", value, &cfg->device_limit));
    QP_CHECK(cfg->device_limit > 0, QP_ERR_INPUT,
             "config %s line %d: memory.device_limit is 0: no run fits in no memory; leave the "
             "key out for the device's own memory",
             ctx->file, qp_node_line(value));
  } else if (index == M_DEVICE_OVERHEAD) {
    QP_CALL(qp_cfg_bytes(ctx, "memory.device_overhead", value, &cfg->device_overhead));
  } else if (index == M_CALIBRATION) {
    QP_CALL(qp_cfg_path(ctx, "memory.calibration", value, cfg->calibration));
  } else {
    QP_CALL(qp_cfg_double(ctx, "memory.sample_interval_ms", value, &cfg->sample_interval_ms));
    QP_CHECK(cfg->sample_interval_ms >= 0, QP_ERR_INPUT,
             "config %s line %d: memory.sample_interval_ms must be >= 0 (0 turns the timeline "
             "off), got %g",
             ctx->file, qp_node_line(value), cfg->sample_interval_ms);
  }
  return QP_OK;
}

static qp_err qp_cfg_grid_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                              const yaml_node_t *value, void *state) {
  qp_config *cfg = state;
  (void)key_node;
  int *field[G_COUNT] = {&cfg->grid_rows, &cfg->grid_cols, &cfg->grid_block};
  char name[32];
  snprintf(name, sizeof name, "grid.%s", qp_grid_keys[index]);
  QP_CALL(qp_cfg_int(ctx, name, value, field[index]));
  QP_CHECK(*field[index] >= 1, QP_ERR_INPUT, "config %s line %d: %s must be >= 1, got %d",
           ctx->file, qp_node_line(value), name, *field[index]);
  QP_CHECK(index != G_BLOCK || *field[index] <= QP_GRID_BLOCK_MAX, QP_ERR_INPUT,
           "config %s line %d: %s = %d is more than %d", ctx->file, qp_node_line(value), name,
           *field[index], QP_GRID_BLOCK_MAX);
  return QP_OK;
}

/* A section that is a mapping of known keys: `example` shows one in the message otherwise. */
static qp_err qp_cfg_mapping(qp_cfg_ctx *ctx, const yaml_node_t *node, const char *key,
                             const char *example, const char *const *keys, int n_keys,
                             qp_cfg_visit visit, qp_config *cfg) {
  QP_CHECK(node->type == YAML_MAPPING_NODE, QP_ERR_INPUT,
           "config %s line %d: key '%s' must be a mapping (e.g. %s: {%s})", ctx->file,
           qp_node_line(node), key, key, example);
  QP_CALL(qp_cfg_walk(ctx, node, key, keys, n_keys, visit, cfg));
  return QP_OK;
}

qp_err qp_cfg_dimensions(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  QP_CALL(qp_cfg_mapping(ctx, node, "dimensions",
                         "n_pix: 59136, n_modes: 33274, lmax_signal: 256, lmax: 128, n_bins: 127",
                         qp_dimension_keys, D_COUNT, qp_cfg_dims_key, cfg));
  cfg->has_dimensions = 1;
  return QP_OK;
}

qp_err qp_cfg_memory(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  QP_CALL(qp_cfg_mapping(ctx, node, "memory", "host_limit: 20GiB", qp_memory_keys, M_COUNT,
                         qp_cfg_memory_key, cfg));
  return QP_OK;
}

qp_err qp_cfg_grid(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  QP_CALL(qp_cfg_mapping(ctx, node, "grid", "rows: 2, cols: 2, block: 64", qp_grid_keys, G_COUNT,
                         qp_cfg_grid_key, cfg));
  return QP_OK;
}

/* A key whose value is one scalar or a non-empty list of them (`what` each is, for the
 * message): *n items; qp_cfg_item gives item i. */
static qp_err qp_cfg_list(const qp_cfg_ctx *ctx, const char *key, const char *what,
                          const yaml_node_t *node, int *n) {
  *n = 1;
  if (node->type == YAML_SEQUENCE_NODE) {
    *n = (int)(node->data.sequence.items.top - node->data.sequence.items.start);
    QP_CHECK(*n > 0, QP_ERR_INPUT, "config %s line %d: key '%s' is an empty list", ctx->file,
             qp_node_line(node), key);
  } else {
    QP_CHECK(node->type == YAML_SCALAR_NODE, QP_ERR_INPUT,
             "config %s line %d: key '%s' must be a %s or a list of %ss, not %s", ctx->file,
             qp_node_line(node), key, what, what, qp_node_kind(node));
  }
  return QP_OK;
}

static qp_err qp_cfg_item(const qp_cfg_ctx *ctx, const yaml_node_t *node, int i,
                          const yaml_node_t **item) {
  *item = node->type == YAML_SEQUENCE_NODE
              ? yaml_document_get_node(ctx->doc, node->data.sequence.items.start[i])
              : node;
  QP_CHECK(*item != NULL, QP_ERR_INTERNAL, "config %s: broken YAML document", ctx->file);
  return QP_OK;
}

qp_err qp_cfg_maps(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node, int second) {
  const char *key = second ? "maps2" : "maps";
  char(**list)[QP_PATH_MAX] = second ? &cfg->maps2 : &cfg->maps;
  int *count = second ? &cfg->n_maps2 : &cfg->n_maps;
  int n = 0;
  QP_CALL(qp_cfg_list(ctx, key, "path", node, &n));
  free(*list);
  *count = 0;
  *list = malloc((size_t)n * sizeof **list);
  QP_CHECK(*list != NULL, QP_ERR_NOMEM, "config %s: no memory for %d %s paths", ctx->file, n, key);
  for (int i = 0; i < n; ++i) {
    const yaml_node_t *item = NULL;
    QP_CALL(qp_cfg_item(ctx, node, i, &item));
    QP_CALL(qp_cfg_path(ctx, key, item, (*list)[i]));
    *count = i + 1;
  }
  return QP_OK;
}

qp_err qp_cfg_spectra(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  int n = 0;
  QP_CALL(qp_cfg_list(ctx, "spectra", "name", node, &n));
  int requested[QP_SPECTRA_MAX] = {0};
  char list[64];
  for (int i = 0; i < n; ++i) {
    const yaml_node_t *item = NULL;
    QP_CALL(qp_cfg_item(ctx, node, i, &item));
    const char *text = NULL;
    QP_CALL(qp_cfg_scalar(ctx, "spectra", item, &text));
    int s = qp_key_index(text, qp_spectrum_names, QP_SPECTRA_MAX);
    QP_CHECK(s >= 0, QP_ERR_INPUT,
             "config %s line %d: unknown spectrum '%s' in 'spectra' (known: %s)", ctx->file,
             qp_node_line(item), text,
             qp_key_list(qp_spectrum_names, QP_SPECTRA_MAX, list, sizeof list));
    QP_CHECK(!requested[s], QP_ERR_INPUT, "config %s line %d: spectrum '%s' listed twice",
             ctx->file, qp_node_line(item), text);
    requested[s] = 1;
  }
  /* Stored in the binding order of QML.md 6, whatever order the file lists them in. */
  cfg->n_spectra = 0;
  for (int s = 0; s < QP_SPECTRA_MAX; ++s)
    if (requested[s]) cfg->spectra[cfg->n_spectra++] = (qp_spectrum)s;
  return QP_OK;
}
