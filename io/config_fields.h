/* config_fields.h: reading one YAML config's values (io/config.c's helpers, not a public API).
 *
 * Every reader takes the key's name and its value node and checks the value's form (a single
 * value, not null; an integer, a finite number, true/false, one of a list, a path, a byte
 * size): an error names the config file, the node's line and the key. Paths are taken
 * relative to the config's directory. qp_cfg_walk goes over a mapping's keys, refusing
 * unknown ones and duplicates. */
#ifndef QP_CONFIG_FIELDS_H
#define QP_CONFIG_FIELDS_H

#include <stddef.h>
#include <yaml.h>

#include "config.h"
#include "qp_error.h"

/** The most keys one mapping of the config may know (the top level has the most). */
enum { QP_CFG_KEYS_MAX = 48 };

typedef struct qp_cfg_ctx {
  const char *file;      /* the config path, for messages */
  char dir[QP_PATH_MAX]; /* its directory with a trailing '/', or "" when it has none */
  yaml_document_t *doc;
  int line[QP_CFG_KEYS_MAX]; /* 1-based line of each top-level key seen, 0 when absent */
  int variance_t_line, variance_p_line; /* noise.variance_t / variance_p, 0 when absent */
  int variance2_t_line, variance2_p_line; /* the same keys of noise2 */
} qp_cfg_ctx;

int qp_node_line(const yaml_node_t *node);
/** "a list", "a mapping" or "a value", for messages. */
const char *qp_node_kind(const yaml_node_t *node);
/** The index of `name` in keys, or -1. */
int qp_key_index(const char *name, const char *const *keys, int n);
/** "a, b, c" into buf. */
const char *qp_key_list(const char *const *keys, int n, char *buf, size_t size);
/** The text of a scalar node that must hold a value (not a list, mapping, or null). */
qp_err qp_cfg_scalar(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                     const char **text);
qp_err qp_cfg_int(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node, int *out);
qp_err qp_cfg_double(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                     double *out);
qp_err qp_cfg_bool(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node, int *out);
/** One of `names` (exact match); *out is its index. */
qp_err qp_cfg_choice(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                     const char *const *names, int n, int *out);
/** A file path: relative paths are taken relative to the config file's directory. */
qp_err qp_cfg_path(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                   char out[QP_PATH_MAX]);
/** A byte size (qp_parse_bytes). */
qp_err qp_cfg_bytes(const qp_cfg_ctx *ctx, const char *key, const yaml_node_t *node,
                    double *out);

/** Walks the pairs of a mapping node, checking that each key is a known scalar given once.
 * Calls back with the key's index in `keys`. `where` is "" at the top level, else the parent
 * key (for messages). */
typedef qp_err (*qp_cfg_visit)(qp_cfg_ctx *ctx, int index, const yaml_node_t *key_node,
                               const yaml_node_t *value, void *state);
qp_err qp_cfg_walk(qp_cfg_ctx *ctx, const yaml_node_t *map, const char *where,
                   const char *const *keys, int n_keys, qp_cfg_visit visit, void *state);

#endif
