/* config_fields.c: typed values of a YAML config, with errors that name file, line and key
 * (config_fields.h). */
#include "config_fields.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qp_node_line(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

const char *qp_node_kind(const yaml_node_t *node) {
  switch (node->type) {
  case YAML_SEQUENCE_NODE: return "a list";
  case YAML_MAPPING_NODE: return "a mapping";
  default: return "a value";
  }
}

/* "known keys: a, b, c" into buf. */
const char *qp_key_list(const char *const *keys, int n, char *buf, size_t size) {
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
qp_err qp_cfg_scalar(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
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

qp_err qp_cfg_int(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
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

qp_err qp_cfg_double(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
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

qp_err qp_cfg_bool(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
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
qp_err qp_cfg_choice(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
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
qp_err qp_cfg_path(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
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

qp_err qp_cfg_bytes(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                           double *out) {
  const char *text = NULL;
  QP_CALL(qp_cfg_scalar(ctx, key, node, &text));
  QP_CHECK(qp_parse_bytes(text, out) == QP_OK, QP_ERR_INPUT, "config %s line %d: key '%s': %s",
           ctx->file, qp_node_line(node), key, qp_error_message());
  return QP_OK;
}

/* Index of `name` in keys, or -1. */
int qp_key_index(const char *name, const char *const *keys, int n) {
  for (int i = 0; i < n; ++i)
    if (strcmp(name, keys[i]) == 0) return i;
  return -1;
}

/* Walks the pairs of a mapping node (config_fields.h). */
qp_err qp_cfg_walk(qp_cfg_ctx *ctx, const yaml_node_t *map, const char *where,
                          const char *const *keys, int n_keys, qp_cfg_visit visit, void *state) {
  int seen_line[QP_CFG_KEYS_MAX] = {0};
  char list[512];
  QP_CHECK(n_keys <= QP_CFG_KEYS_MAX, QP_ERR_INTERNAL, "config: a key table of %d keys", n_keys);
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

