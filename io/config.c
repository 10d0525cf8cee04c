/* config.c: the YAML run configuration (config.h), read with libyaml's document API.
 *
 * The whole file is loaded into a libyaml document (it is small), then walked once: every key
 * is looked up in a table, its value converted and range-checked, and the line of each key is
 * kept so that the checks that involve several keys (lmax_signal >= lmax, spectra vs fields)
 * can still point at a line. Every error message starts "config FILE line N:". */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "timeline.h"

static const char *const qp_spectrum_names[QP_SPECTRA_MAX] = {"TT", "EE", "BB", "TE", "TB", "EB"};

const char *qp_spectrum_name(qp_spectrum s) {
  return (s >= QP_TT && s <= QP_EB) ? qp_spectrum_names[s] : "??";
}

void qp_config_defaults(qp_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->fields = QP_FIELDS_T;
  cfg->noise_kind = QP_NOISE_VARIANCE;
  snprintf(cfg->noise_dataset, sizeof cfg->noise_dataset, "%s", "/covariance");
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
}

void qp_config_free(qp_config *cfg) {
  if (!cfg) return;
  free(cfg->maps);
  cfg->maps = NULL;
  cfg->n_maps = 0;
}

/* ---- byte sizes ---- */

qp_err qp_parse_bytes(const char *text, double *bytes) {
  /* Decimal units are powers of 1000; "i" units and Slurm's bare K/M/G/T are powers of 1024. */
  static const struct {
    const char *suffix;
    double factor;
  } units[] = {
      {"", 1.0},
      {"B", 1.0},
      {"kB", 1e3},
      {"KB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"KiB", 1024.0},
      {"MiB", 1048576.0},
      {"GiB", 1073741824.0},
      {"TiB", 1099511627776.0},
      {"K", 1024.0},
      {"M", 1048576.0},
      {"G", 1073741824.0},
      {"T", 1099511627776.0},
  };
  QP_CHECK(text != NULL && bytes != NULL, QP_ERR_INTERNAL, "qp_parse_bytes: NULL argument");
  const char *p = text;
  while (isspace((unsigned char)*p))
    ++p;
  char *end = NULL;
  errno = 0;
  double value = strtod(p, &end);
  QP_CHECK(end != p && errno != ERANGE, QP_ERR_INPUT,
           "bad byte size '%s': expected a number with an optional unit (e.g. 20GiB, 512MB, "
           "1.5e9)",
           text);
  while (isspace((unsigned char)*end))
    ++end;
  size_t len = strlen(end);
  while (len > 0 && isspace((unsigned char)end[len - 1]))
    --len;
  double factor = -1.0;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; ++i) {
    if (strlen(units[i].suffix) == len && strncmp(units[i].suffix, end, len) == 0) {
      factor = units[i].factor;
      break;
    }
  }
  QP_CHECK(factor > 0, QP_ERR_INPUT,
           "bad byte size '%s': unknown unit '%.*s' (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)",
           text, (int)len, end);
  double total = value * factor;
  QP_CHECK(total >= 0, QP_ERR_INPUT, "bad byte size '%s': must be a number >= 0", text);
  /* Every size is later compared with, or converted to, 64-bit byte counts. */
  QP_CHECK(total < QP_BYTES_MAX, QP_ERR_INPUT,
           "bad byte size '%s': %.3g bytes is beyond the largest size, 2^63 bytes (8 EiB)", text,
           total);
  *bytes = floor(total);
  return QP_OK;
}

/* ---- the parse context and value converters ---- */

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
  K_PATH,
  K_HARMONIC_METHOD,
  K_BACKEND,
  K_OUTPUT,
  K_MEMORY,
  K_DIMENSIONS,
  K_GRID,
  K_ACCURACY,
  K_COUNT
};

static const char *const qp_top_keys[K_COUNT] = {
    "maps",         "mask", "mask_pol", "fields",      "cls",       "noise", "spectra",
    "ell_min",      "lmax", "lmax_signal", "bin_width", "bins",  "beam_fwhm_arcmin",
    "pixel_window", "path", "harmonic_method", "backend",     "output",    "memory", "dimensions", "grid",
    "accuracy"};

enum {
  N_VARIANCE = 0,
  N_VARIANCE_T,
  N_VARIANCE_P,
  N_VARIANCE_MAP,
  N_COVARIANCE,
  N_DATASET,
  N_COUNT
};
static const char *const qp_noise_keys[N_COUNT] = {
    "variance", "variance_t", "variance_p", "variance_map", "covariance", "dataset"};

enum { D_N_PIX = 0, D_N_MODES, D_LMAX_SIGNAL, D_LMAX, D_N_BINS, D_N_MAPS, D_NSIDE, D_COUNT };
static const char *const qp_dimension_keys[D_COUNT] = {"n_pix",  "n_modes", "lmax_signal", "lmax",
                                                       "n_bins", "n_maps",  "nside"};

enum { M_HOST = 0, M_DEVICE, M_INTERVAL, M_CALIBRATION, M_COUNT };
static const char *const qp_memory_keys[M_COUNT] = {"host_limit", "device_limit",
                                                    "sample_interval_ms", "calibration"};

enum { G_ROWS = 0, G_COLS, G_BLOCK, G_COUNT };
static const char *const qp_grid_keys[G_COUNT] = {"rows", "cols", "block"};

typedef struct qp_cfg_ctx {
  const char *file;      /* the config path, for messages */
  char dir[QP_PATH_MAX]; /* its directory with a trailing '/', or "" when it has none */
  yaml_document_t *doc;
  int line[K_COUNT]; /* 1-based line of each top-level key seen, 0 when absent */
  int variance_t_line, variance_p_line; /* noise.variance_t / variance_p, 0 when absent */
} qp_cfg_ctx;

static int qp_node_line(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

static const char *qp_node_kind(const yaml_node_t *node) {
  switch (node->type) {
  case YAML_SEQUENCE_NODE: return "a list";
  case YAML_MAPPING_NODE: return "a mapping";
  default: return "a value";
  }
}

/* "known keys: a, b, c" into buf. */
static const char *qp_key_list(const char *const *keys, int n, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < size; ++i) {
    int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", keys[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  return buf;
}

/* The text of a scalar node that must hold a value (not a list, mapping, or null). */
static qp_err qp_cfg_scalar(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                            const char **text) {
  QP_CHECK(node->type == YAML_SCALAR_NODE, QP_ERR_INPUT,
           "config %s line %d: key '%s' must be a single value, not %s", ctx->file,
           qp_node_line(node), key, qp_node_kind(node));
  const char *value = (const char *)node->data.scalar.value;
  int plain = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  int is_null =
      value[0] == '\0' || (plain && (strcmp(value, "~") == 0 || strcmp(value, "null") == 0 ||
                                     strcmp(value, "Null") == 0 || strcmp(value, "NULL") == 0));
  QP_CHECK(!is_null, QP_ERR_INPUT, "config %s line %d: key '%s' has no value", ctx->file,
           qp_node_line(node), key);
  *text = value;
  return QP_OK;
}

static qp_err qp_cfg_int(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                         int *out) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  int ok = end != text && *end == '\0' && errno != ERANGE && value >= INT_MIN && value <= INT_MAX;
  QP_CHECK(ok, QP_ERR_INPUT, "config %s line %d: key '%s' must be an integer, got '%s'", ctx->file,
           qp_node_line(node), key, text);
  *out = (int)value;
  return QP_OK;
}

static qp_err qp_cfg_double(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                            double *out) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  char *end = NULL;
  errno = 0;
  double value = strtod(text, &end);
  int ok = end != text && *end == '\0' && errno != ERANGE && isfinite(value);
  QP_CHECK(ok, QP_ERR_INPUT, "config %s line %d: key '%s' must be a finite number, got '%s'",
           ctx->file, qp_node_line(node), key, text);
  *out = value;
  return QP_OK;
}

static qp_err qp_cfg_bool(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                          int *out) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  if (strcmp(text, "true") == 0 || strcmp(text, "True") == 0 || strcmp(text, "TRUE") == 0) {
    *out = 1;
  } else if (strcmp(text, "false") == 0 || strcmp(text, "False") == 0 ||
             strcmp(text, "FALSE") == 0) {
    *out = 0;
  } else {
    QP_FAIL(QP_ERR_INPUT, "config %s line %d: key '%s' must be true or false, got '%s'", ctx->file,
            qp_node_line(node), key, text);
  }
  return QP_OK;
}

/* One of `names` (exact match); *out is its index. */
static qp_err qp_cfg_choice(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                            const char *const *names, int n, int *out) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  for (int i = 0; i < n; ++i) {
    if (strcmp(text, names[i]) == 0) {
      *out = i;
      return QP_OK;
    }
  }
  char list[256];
  QP_FAIL(QP_ERR_INPUT, "config %s line %d: key '%s' must be one of %s; got '%s'", ctx->file,
          qp_node_line(node), key, qp_key_list(names, n, list, sizeof list), text);
}

/* A file path: relative paths are taken relative to the config file's directory. */
static qp_err qp_cfg_path(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                          char out[QP_PATH_MAX]) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  const char *prefix = text[0] == '/' ? "" : ctx->dir;
  int n = snprintf(out, QP_PATH_MAX, "%s%s", prefix, text);
  QP_CHECK(n >= 0 && n < QP_PATH_MAX, QP_ERR_INPUT,
           "config %s line %d: key '%s': path longer than %d characters", ctx->file,
           qp_node_line(node), key, QP_PATH_MAX - 1);
  return QP_OK;
}

static qp_err qp_cfg_bytes(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                           double *out) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  QP_CHECK(qp_parse_bytes(text, out) == QP_OK, QP_ERR_INPUT, "config %s line %d: key '%s': %s",
           ctx->file, qp_node_line(node), key, qp_error_message());
  return QP_OK;
}

/* Index of `name` in keys, or -1. */
static int qp_key_index(const char *name, const char *const *keys, int n) {
  for (int i = 0; i < n; ++i)
    if (strcmp(name, keys[i]) == 0) return i;
  return -1;
}

/* Walks the pairs of a mapping node, checking that each key is a known scalar given once.
 * Calls back with the key's index in `keys`. `where` is "" at the top level, else the parent
 * key (for messages). */
typedef qp_err (*qp_cfg_visit)(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                               const yaml_node_t *value, void *state);

static qp_err qp_cfg_walk(qp_cfg_ctx *ctx, const yaml_node_t *map, const char *where,
                          const char *const *keys, int n_keys, qp_cfg_visit visit, void *state) {
  int seen_line[K_COUNT] = {0}; /* K_COUNT is the largest key table */
  char list[512];
  for (yaml_node_pair_t *pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top;
       ++pair) {
    const yaml_node_t *key = yaml_document_get_node(ctx->doc, pair->key);
    const yaml_node_t *value = yaml_document_get_node(ctx->doc, pair->value);
    QP_CHECK(key && value, QP_ERR_INTERNAL, "config %s: broken YAML document", ctx->file);
    QP_CHECK(key->type == YAML_SCALAR_NODE, QP_ERR_INPUT,
             "config %s line %d: a key%s%s must be a plain name, not %s", ctx->file,
             qp_node_line(key), where[0] ? " in " : "", where, qp_node_kind(key));
    const char *name = (const char *)key->data.scalar.value;
    int index = qp_key_index(name, keys, n_keys);
    QP_CHECK(index >= 0, QP_ERR_INPUT, "config %s line %d: unknown key '%s'%s%s (known keys: %s)",
             ctx->file, qp_node_line(key), name, where[0] ? " in " : "", where,
             qp_key_list(keys, n_keys, list, sizeof list));
    QP_CHECK(seen_line[index] == 0, QP_ERR_INPUT,
             "config %s line %d: key '%s'%s%s given twice (first on line %d)", ctx->file,
             qp_node_line(key), name, where[0] ? " in " : "", where, seen_line[index]);
    seen_line[index] = qp_node_line(key);
    QP_CALL(visit(ctx, index, key, value, state));
  }
  return QP_OK;
}

/* ---- sections ---- */

typedef struct qp_noise_state {
  qp_config *cfg;
  int n_kinds;      /* how many of variance / variance_map / covariance were given */
  int per_field;    /* variance_t / variance_p given (count as one kind together) */
  int dataset_line; /* line of `dataset:`, 0 when absent */
} qp_noise_state;

static qp_err qp_cfg_noise_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                               const yaml_node_t *value, void *state) {
  qp_noise_state *ns = state;
  qp_config *cfg = ns->cfg;
  switch (index) {
  case N_VARIANCE:
    QP_CALL(qp_cfg_double(ctx, "noise.variance", value, &cfg->noise_variance));
    QP_CHECK(cfg->noise_variance > 0, QP_ERR_INPUT,
             "config %s line %d: noise.variance must be > 0, got %g", ctx->file,
             qp_node_line(value), cfg->noise_variance);
    cfg->noise_kind = QP_NOISE_VARIANCE;
    ++ns->n_kinds;
    break;
  case N_VARIANCE_T:
  case N_VARIANCE_P: {
    double *target = index == N_VARIANCE_T ? &cfg->noise_variance : &cfg->noise_variance_pol;
    *(index == N_VARIANCE_T ? &ctx->variance_t_line : &ctx->variance_p_line) =
        qp_node_line(key_node);
    const char *name = index == N_VARIANCE_T ? "noise.variance_t" : "noise.variance_p";
    QP_CALL(qp_cfg_double(ctx, name, value, target));
    QP_CHECK(*target > 0, QP_ERR_INPUT, "config %s line %d: %s must be > 0, got %g", ctx->file,
             qp_node_line(value), name, *target);
    cfg->noise_kind = QP_NOISE_VARIANCE;
    if (!ns->per_field++) ++ns->n_kinds;
    break;
  }
  case N_VARIANCE_MAP:
    QP_CALL(qp_cfg_path(ctx, "noise.variance_map", value, cfg->noise_file));
    cfg->noise_kind = QP_NOISE_VARIANCE_MAP;
    ++ns->n_kinds;
    break;
  case N_COVARIANCE:
    QP_CALL(qp_cfg_path(ctx, "noise.covariance", value, cfg->noise_file));
    cfg->noise_kind = QP_NOISE_COVARIANCE;
    ++ns->n_kinds;
    break;
  case N_DATASET: {
    const char *text = NULL;
    QP_CALL(qp_cfg_scalar(ctx, "noise.dataset", value, &text));
    QP_CHECK(strlen(text) < sizeof cfg->noise_dataset, QP_ERR_INPUT,
             "config %s line %d: noise.dataset longer than %zu characters", ctx->file,
             qp_node_line(value), sizeof cfg->noise_dataset - 1);
    snprintf(cfg->noise_dataset, sizeof cfg->noise_dataset, "%s", text);
    ns->dataset_line = qp_node_line(key_node);
    break;
  }
  default: QP_FAIL(QP_ERR_INTERNAL, "noise key index %d", index);
  }
  return QP_OK;
}

static qp_err qp_cfg_noise(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  QP_CHECK(node->type == YAML_MAPPING_NODE, QP_ERR_INPUT,
           "config %s line %d: key 'noise' must be a mapping with one of variance, "
           "variance_map, covariance (e.g. noise: {variance: 1.0e-4})",
           ctx->file, qp_node_line(node));
  qp_noise_state ns = {cfg, 0, 0, 0};
  QP_CALL(qp_cfg_walk(ctx, node, "noise", qp_noise_keys, N_COUNT, qp_cfg_noise_key, &ns));
  QP_CHECK(ns.n_kinds == 1, QP_ERR_INPUT,
           "config %s line %d: 'noise' needs exactly one of variance, variance_t/variance_p, "
           "variance_map, covariance (%d given)",
           ctx->file, qp_node_line(node), ns.n_kinds);
  QP_CHECK(ns.dataset_line == 0 || cfg->noise_kind == QP_NOISE_COVARIANCE, QP_ERR_INPUT,
           "config %s line %d: noise.dataset only goes with noise.covariance", ctx->file,
           ns.dataset_line);
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
  case D_LMAX_SIGNAL: cfg->lmax_signal = v; ctx->line[K_LMAX_SIGNAL] = qp_node_line(value); break;
  case D_LMAX: cfg->lmax = v; ctx->line[K_LMAX] = qp_node_line(value); break;
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
  if (index == M_HOST) {
    QP_CALL(qp_cfg_bytes(ctx, "memory.host_limit", value, &cfg->host_limit));
  } else if (index == M_DEVICE) {
    QP_CALL(qp_cfg_bytes(ctx, "memory.device_limit", value, &cfg->device_limit));
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

static qp_err qp_cfg_maps(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  int n = 1;
  if (node->type == YAML_SEQUENCE_NODE) {
    n = (int)(node->data.sequence.items.top - node->data.sequence.items.start);
    QP_CHECK(n > 0, QP_ERR_INPUT, "config %s line %d: key 'maps' is an empty list", ctx->file,
             qp_node_line(node));
  } else {
    QP_CHECK(node->type == YAML_SCALAR_NODE, QP_ERR_INPUT,
             "config %s line %d: key 'maps' must be a path or a list of paths, not %s", ctx->file,
             qp_node_line(node), qp_node_kind(node));
  }
  free(cfg->maps);
  cfg->n_maps = 0;
  cfg->maps = malloc((size_t)n * sizeof *cfg->maps);
  QP_CHECK(cfg->maps != NULL, QP_ERR_NOMEM, "config %s: no memory for %d map paths", ctx->file, n);
  for (int i = 0; i < n; ++i) {
    const yaml_node_t *item =
        node->type == YAML_SEQUENCE_NODE
            ? yaml_document_get_node(ctx->doc, node->data.sequence.items.start[i])
            : node;
    QP_CHECK(item != NULL, QP_ERR_INTERNAL, "config %s: broken YAML document", ctx->file);
    QP_CALL(qp_cfg_path(ctx, "maps", item, cfg->maps[i]));
    cfg->n_maps = i + 1;
  }
  return QP_OK;
}

static qp_err qp_cfg_spectra(qp_cfg_ctx *ctx, qp_config *cfg, const yaml_node_t *node) {
  int n = 1;
  if (node->type == YAML_SEQUENCE_NODE) {
    n = (int)(node->data.sequence.items.top - node->data.sequence.items.start);
    QP_CHECK(n > 0, QP_ERR_INPUT, "config %s line %d: key 'spectra' is an empty list", ctx->file,
             qp_node_line(node));
  } else {
    QP_CHECK(node->type == YAML_SCALAR_NODE, QP_ERR_INPUT,
             "config %s line %d: key 'spectra' must be a name or a list of names, not %s",
             ctx->file, qp_node_line(node), qp_node_kind(node));
  }
  int requested[QP_SPECTRA_MAX] = {0};
  char list[64];
  for (int i = 0; i < n; ++i) {
    const yaml_node_t *item =
        node->type == YAML_SEQUENCE_NODE
            ? yaml_document_get_node(ctx->doc, node->data.sequence.items.start[i])
            : node;
    QP_CHECK(item != NULL, QP_ERR_INTERNAL, "config %s: broken YAML document", ctx->file);
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

static qp_err qp_cfg_top_key(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                             const yaml_node_t *value, void *state) {
  static const char *const fields_names[] = {"T", "QU", "TQU"};
  static const char *const path_names[] = {"auto", "pixel_direct", "harmonic"};
  static const char *const backend_names[] = {"cpu", "cuda", "dist"};
  qp_config *cfg = state;
  const char *key = qp_top_keys[index];
  ctx->line[index] = qp_node_line(key_node);
  int choice = 0;
  switch (index) {
  case K_MAPS: QP_CALL(qp_cfg_maps(ctx, cfg, value)); break;
  case K_MASK: QP_CALL(qp_cfg_path(ctx, key, value, cfg->mask)); break;
  case K_MASK_POL: QP_CALL(qp_cfg_path(ctx, key, value, cfg->mask_pol)); break;
  case K_FIELDS:
    QP_CALL(qp_cfg_choice(ctx, key, value, fields_names, 3, &choice));
    cfg->fields = (qp_fields)choice;
    break;
  case K_CLS: QP_CALL(qp_cfg_path(ctx, key, value, cfg->cls)); break;
  case K_NOISE: QP_CALL(qp_cfg_noise(ctx, cfg, value)); break;
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
    QP_CALL(qp_cfg_choice(ctx, key, value, backend_names, 3, &choice));
    snprintf(cfg->backend, sizeof cfg->backend, "%s", backend_names[choice]);
    break;
  case K_OUTPUT: QP_CALL(qp_cfg_path(ctx, key, value, cfg->output)); break;
  case K_DIMENSIONS:
    QP_CHECK(value->type == YAML_MAPPING_NODE, QP_ERR_INPUT,
             "config %s line %d: key 'dimensions' must be a mapping (e.g. dimensions: {n_pix: "
             "59136, n_modes: 33274, lmax_signal: 256, lmax: 128, n_bins: 127})",
             ctx->file, qp_node_line(value));
    QP_CALL(
        qp_cfg_walk(ctx, value, "dimensions", qp_dimension_keys, D_COUNT, qp_cfg_dims_key, cfg));
    cfg->has_dimensions = 1;
    break;
  case K_MEMORY:
    QP_CHECK(value->type == YAML_MAPPING_NODE, QP_ERR_INPUT,
             "config %s line %d: key 'memory' must be a mapping (e.g. memory: {host_limit: "
             "20GiB})",
             ctx->file, qp_node_line(value));
    QP_CALL(qp_cfg_walk(ctx, value, "memory", qp_memory_keys, M_COUNT, qp_cfg_memory_key, cfg));
    break;
  case K_GRID:
    QP_CHECK(value->type == YAML_MAPPING_NODE, QP_ERR_INPUT,
             "config %s line %d: key 'grid' must be a mapping (e.g. grid: {rows: 2, cols: 2, "
             "block: 64})",
             ctx->file, qp_node_line(value));
    QP_CALL(qp_cfg_walk(ctx, value, "grid", qp_grid_keys, G_COUNT, qp_cfg_grid_key, cfg));
    break;
  default: QP_FAIL(QP_ERR_INTERNAL, "config key index %d", index);
  }
  return QP_OK;
}

/* The checks that involve several keys, after the whole file was read. */
static qp_err qp_cfg_check(qp_cfg_ctx *ctx, qp_config *cfg) {
  static const int required[] = {K_MAPS, K_MASK, K_CLS, K_NOISE, K_LMAX};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; ++i) {
    /* A `dimensions:` block stands for the data: no maps, mask or C_ell file then. */
    if (cfg->has_dimensions && required[i] != K_NOISE && required[i] != K_LMAX) continue;
    QP_CHECK(ctx->line[required[i]] > 0, QP_ERR_INPUT, "config %s: missing required key '%s'",
             ctx->file, qp_top_keys[required[i]]);
  }
  if (cfg->has_dimensions) {
    QP_CHECK(ctx->line[K_MAPS] == 0 && ctx->line[K_MASK] == 0, QP_ERR_INPUT,
             "config %s line %d: 'dimensions' stands for maps and mask: give one or the other",
             ctx->file, ctx->line[K_DIMENSIONS]);
    QP_CHECK(cfg->dim_n_pix > 0 && cfg->dim_n_bins > 0, QP_ERR_INPUT,
             "config %s line %d: 'dimensions' needs n_pix and n_bins (and lmax)", ctx->file,
             ctx->line[K_DIMENSIONS]);
    if (cfg->dim_n_maps == 0) cfg->dim_n_maps = 1;
  }
  QP_CHECK(cfg->lmax >= cfg->ell_min, QP_ERR_INPUT,
           "config %s line %d: lmax (%d) must be >= ell_min (%d)", ctx->file, ctx->line[K_LMAX],
           cfg->lmax, cfg->ell_min);
  if (ctx->line[K_LMAX_SIGNAL] == 0) cfg->lmax_signal = cfg->lmax;
  QP_CHECK(cfg->lmax_signal >= cfg->lmax, QP_ERR_INPUT,
           "config %s line %d: lmax_signal (%d) must be >= lmax (%d)", ctx->file,
           ctx->line[K_LMAX_SIGNAL], cfg->lmax_signal, cfg->lmax);
  /* (lmax + 1)^2, the (l, m) of a field, must be an int (spin_harmonics.h): lmax <= 46339. */
  const int lmax_key = cfg->lmax > QP_LMAX_MAX ? K_LMAX : K_LMAX_SIGNAL;
  QP_CHECK(cfg->lmax_signal <= QP_LMAX_MAX, QP_ERR_INPUT,
           "config %s line %d: %s = %d is beyond %d, the largest multipole qmlpipe indexes "
           "((lmax + 1)^2 modes a field must fit an int)",
           ctx->file, ctx->line[lmax_key], qp_top_keys[lmax_key],
           lmax_key == K_LMAX ? cfg->lmax : cfg->lmax_signal, QP_LMAX_MAX);
  /* Bins are disjoint sets of multipoles: no more of them than multipoles (and n_bins x
   * spectra, the parameters, then fits an int). */
  QP_CHECK(!cfg->has_dimensions || cfg->dim_n_bins <= (int64_t)cfg->lmax - cfg->ell_min + 1,
           QP_ERR_INPUT,
           "config %s line %d: dimensions.n_bins = %lld is more than the %d multipoles from "
           "ell_min %d to lmax %d",
           ctx->file, ctx->line[K_DIMENSIONS], (long long)cfg->dim_n_bins,
           cfg->lmax - cfg->ell_min + 1, cfg->ell_min, cfg->lmax);
  QP_CHECK(ctx->line[K_BIN_WIDTH] == 0 || ctx->line[K_BINS] == 0, QP_ERR_INPUT,
           "config %s line %d: give either bin_width (line %d) or bins, not both", ctx->file,
           ctx->line[K_BINS], ctx->line[K_BIN_WIDTH]);

  const int has_t = cfg->fields != QP_FIELDS_QU, has_p = cfg->fields != QP_FIELDS_T;
  QP_CHECK(has_p || ctx->line[K_MASK_POL] == 0, QP_ERR_INPUT,
           "config %s line %d: mask_pol is the mask of Q and U, but fields is T", ctx->file,
           ctx->line[K_MASK_POL]);
  if (ctx->variance_t_line || ctx->variance_p_line) {
    /* Per-field variances must match the fields: none missing, none ignored. */
    QP_CHECK(has_t == (ctx->variance_t_line > 0), QP_ERR_INPUT,
             "config %s line %d: fields %s %s noise.variance_t", ctx->file, ctx->line[K_NOISE],
             has_t ? (has_p ? "TQU" : "T") : "QU", has_t ? "need" : "have no T for");
    QP_CHECK(has_p == (ctx->variance_p_line > 0), QP_ERR_INPUT,
             "config %s line %d: fields %s %s noise.variance_p", ctx->file, ctx->line[K_NOISE],
             has_p ? (has_t ? "TQU" : "QU") : "T", has_p ? "need" : "have no Q/U for");
  }
  if (cfg->noise_kind == QP_NOISE_VARIANCE) {
    QP_CHECK(!has_t || cfg->noise_variance > 0, QP_ERR_INPUT,
             "config %s line %d: fields with T need noise.variance or noise.variance_t", ctx->file,
             ctx->line[K_NOISE]);
    QP_CHECK(!has_p || cfg->noise_variance_pol > 0 || cfg->noise_variance > 0, QP_ERR_INPUT,
             "config %s line %d: fields with Q/U need noise.variance or noise.variance_p",
             ctx->file, ctx->line[K_NOISE]);
    if (cfg->noise_variance_pol <= 0) cfg->noise_variance_pol = cfg->noise_variance;
  }

  /* Without a `spectra:` key, every auto-spectrum the fields allow (plus TE for TQU):
   * T -> TT, QU -> EE BB, TQU -> TT EE BB TE. The header's default TT is the T case. */
  if (ctx->line[K_SPECTRA] == 0) {
    static const qp_spectrum defaults[3][4] = {
        {QP_TT}, {QP_EE, QP_BB}, {QP_TT, QP_EE, QP_BB, QP_TE}};
    static const int n_defaults[3] = {1, 2, 4};
    cfg->n_spectra = n_defaults[cfg->fields];
    for (int i = 0; i < cfg->n_spectra; ++i)
      cfg->spectra[i] = defaults[cfg->fields][i];
  }
  static const char *const fields_names[] = {"T", "QU", "TQU"};
  static const char *const allowed_text[] = {"TT", "EE BB EB", "TT EE BB TE TB EB"};
  for (int i = 0; i < cfg->n_spectra; ++i) {
    qp_spectrum s = cfg->spectra[i];
    int ok = cfg->fields == QP_FIELDS_TQU || (cfg->fields == QP_FIELDS_T && s == QP_TT) ||
             (cfg->fields == QP_FIELDS_QU && (s == QP_EE || s == QP_BB || s == QP_EB));
    QP_CHECK(ok, QP_ERR_INPUT,
             "config %s line %d: spectrum %s needs maps with %s; fields %s allows only %s",
             ctx->file, ctx->line[K_SPECTRA], qp_spectrum_name(s),
             (s == QP_TT)                 ? "T"
             : (s == QP_TE || s == QP_TB) ? "T and Q/U"
                                          : "Q/U",
             fields_names[cfg->fields], allowed_text[cfg->fields]);
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

  file = fopen(path, "rb");
  QP_CHECK_GOTO(file != NULL, QP_ERR_IO, done, "cannot open config file '%s': %s", path,
                strerror(errno));
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
