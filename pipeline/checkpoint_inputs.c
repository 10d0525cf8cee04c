/* checkpoint_inputs.c: the hash of a checkpoint's inputs and buffers (checkpoint_inputs.h). */
#include "checkpoint_inputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "input_file.h"

#define QP_HASH_PRIME 0x100000001b3ULL

static uint64_t qp_hash_word(uint64_t h, uint64_t w) {
  h = (h ^ w) * QP_HASH_PRIME;
  return h ^ (h >> 29);
}

uint64_t qp_hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = qp_hash_word(h, w);
  }
  for (; i < n; ++i)
    h = qp_hash_word(h, b[i]);
  return h;
}

static qp_err qp_ck_hash_file(const char *role, const char *path, uint64_t *hash, int64_t *bytes) {
  enum { QP_CK_CHUNK = 1 << 20 }; /* a multiple of 8: chunks keep the words aligned */
  /* Through the shared check (input_file.h): what is hashed is the regular file the readers
   * read, and a FIFO or /dev/zero named as an input can neither block nor feed this forever. */
  FILE *f = NULL;
  QP_CALL(qp_input_fopen(role, path, QP_INPUT_ANY_SIZE, &f));
  unsigned char *buf = malloc(QP_CK_CHUNK);
  if (!buf) {
    fclose(f);
    QP_FAIL(QP_ERR_NOMEM, "checkpoint: no memory to hash input '%s'", path);
  }
  uint64_t h = QP_HASH_BASIS;
  int64_t total = 0;
  size_t n;
  while ((n = fread(buf, 1, QP_CK_CHUNK, f)) > 0) {
    h = qp_hash_bytes(h, buf, n);
    total += (int64_t)n;
  }
  const int failed = ferror(f);
  free(buf);
  fclose(f);
  QP_CHECK(!failed, QP_ERR_IO, "checkpoint: error reading input '%s'", path);
  *hash = qp_hash_word(h, (uint64_t)total);
  *bytes = total;
  return QP_OK;
}

/* Appends one input's line to the growing text. */
static qp_err qp_ck_add_input(char **text, size_t *len, const char *role, const char *path) {
  uint64_t h = 0;
  int64_t bytes = 0;
  QP_CALL(qp_ck_hash_file(role, path, &h, &bytes));
  const size_t need = *len + strlen(path) + 64;
  char *grown = realloc(*text, need);
  QP_CHECK(grown, QP_ERR_NOMEM, "checkpoint: no memory for the list of inputs");
  *text = grown;
  *len += (size_t)snprintf(grown + *len, need - *len, "%016llx %lld %s\n", (unsigned long long)h,
                           (long long)bytes, path);
  return QP_OK;
}

/* The config and every file it reads (rank 0), one line each. */
static qp_err qp_ck_hash_inputs(const qp_config *cfg, char **text) {
  size_t len = 0;
  *text = calloc(1, 1);
  QP_CHECK(*text, QP_ERR_NOMEM, "checkpoint: no memory for the list of inputs");
  QP_CALL(qp_ck_add_input(text, &len, "config file", cfg->source));
  for (int m = 0; m < cfg->n_maps; ++m)
    QP_CALL(qp_ck_add_input(text, &len, "map file", cfg->maps[m]));
  for (int m = 0; m < cfg->n_maps2; ++m)
    QP_CALL(qp_ck_add_input(text, &len, "map file (maps2)", cfg->maps2[m]));
  const char *more[] = {cfg->mask,
                        cfg->mask_pol,
                        cfg->cls,
                        cfg->noise_kind != QP_NOISE_VARIANCE ? cfg->noise_file : "",
                        cfg->n_maps2 > 0 && cfg->noise2_kind != QP_NOISE_VARIANCE ? cfg->noise2_file
                                                                                  : "",
                        cfg->bins_file,
                        cfg->pixel_window ? cfg->pixel_window_file : ""};
  const char *roles[] = {"mask file",   "mask_pol file", "C_ell file",        "noise file",
                         "noise2 file", "bins file",     "pixel window table"};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; ++i)
    if (more[i][0]) QP_CALL(qp_ck_add_input(text, &len, roles[i], more[i]));
  return QP_OK;
}

qp_err qp_checkpoint_share_inputs(const qp_config *cfg, char **text) {
  qp_err err = qp_comm_agree(qp_comm_rank() == 0 ? qp_ck_hash_inputs(cfg, text) : QP_OK);
  QP_CALL(err);
  double len = qp_comm_rank() == 0 ? (double)strlen(*text) : 0.0;
  QP_CALL(qp_comm_max(&len, 1));
  if (qp_comm_rank() != 0) {
    *text = calloc((size_t)len + 1, 1);
    QP_CHECK(*text, QP_ERR_NOMEM, "checkpoint: no memory for the list of inputs");
  }
  QP_CALL(qp_comm_bcast(*text, (size_t)len + 1));
  return QP_OK;
}

/* "<hash> <bytes> <path>": the length of "<hash> <bytes>" and where the path starts. */
static void qp_ck_split(const char *line, size_t len, int *meta, const char **path, int *plen) {
  const char *sp = memchr(line, ' ', len);
  const char *sp2 = sp ? memchr(sp + 1, ' ', len - (size_t)(sp + 1 - line)) : NULL;
  *meta = sp2 ? (int)(sp2 - line) : (int)len;
  *path = sp2 ? sp2 + 1 : line + len;
  *plen = (int)(len - (size_t)(*path - line));
}

qp_err qp_checkpoint_compare_inputs(const char *file, const char *then, const char *now,
                                    const char *dir) {
  while (*then || *now) {
    const char *te = strchr(then, '\n'), *ne = strchr(now, '\n');
    const size_t tl = te ? (size_t)(te - then) : strlen(then);
    const size_t nl = ne ? (size_t)(ne - now) : strlen(now);
    if (tl != nl || memcmp(then, now, tl) != 0) {
      int tm, nm, tpl, npl;
      const char *tp, *np;
      qp_ck_split(then, tl, &tm, &tp, &tpl);
      qp_ck_split(now, nl, &nm, &np, &npl);
      if (tpl == npl && memcmp(tp, np, (size_t)tpl) == 0)
        QP_FAIL(QP_ERR_INPUT,
                "checkpoint '%s' was written for other inputs: the content of '%.*s' changed "
                "since (hash and bytes then: %.*s, now: %.*s); remove '%s' (or run without "
                "--resume) to start again",
                file, npl, np, tm, then, nm, now, dir);
      QP_FAIL(QP_ERR_INPUT,
              "checkpoint '%s' was written for other inputs: it lists '%.*s' where this run "
              "reads '%.*s'; remove '%s' (or run without --resume) to start again",
              file, tpl, tp, npl, np, dir);
    }
    then += tl + (te ? 1 : 0);
    now += nl + (ne ? 1 : 0);
  }
  return QP_OK;
}
