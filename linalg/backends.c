/* backends.c: the rows of backends.h. */
#include "backends.h"

#include <stdio.h>
#include <string.h>

/* The device context the plan reserves for cuda: measured 690.8 MiB on an H200 (CUDA 13.0,
 * driver 580; docs/gpu.md), with room for another card or driver; 640 MiB before that
 * measurement was 51 MiB short. `report` prints the measured baseline beside it. */
#define QP_DEVICE_CONTEXT_CUDA ((size_t)768 << 20)

/* The configurable ones first, in the order the config's error lists them. */
static const qp_backend qp_backend_rows[] = {
    {.name = "cpu", .on_ranks = "dist", .space = QP_SPACE_HOST, .configurable = 1},
    {.name = "cuda", .on_ranks = "cuda-dist", .space = QP_SPACE_DEVICE, .configurable = 1,
     .gpu = 1, .context_bytes = QP_DEVICE_CONTEXT_CUDA},
    {.name = "dist", .space = QP_SPACE_HOST, .configurable = 1},
    {.name = "cuda-dist", .space = QP_SPACE_DEVICE, .gpu = 1,
     .context_bytes = QP_DEVICE_CONTEXT_CUDA},
    {.name = "hostdev", .on_ranks = "hostdev-dist", .space = QP_SPACE_DEVICE, .configurable = 1,
     .device_in_host = 1, .test_only = 1},
    {.name = "hostdev-dist", .space = QP_SPACE_DEVICE, .device_in_host = 1, .test_only = 1},
    {.name = "hostdev-tiled", .space = QP_SPACE_DEVICE, .device_in_host = 1, .test_only = 1},
};

int qp_backend_count(void) { return (int)(sizeof qp_backend_rows / sizeof qp_backend_rows[0]); }

const qp_backend *qp_backend_at(int i) {
  return i >= 0 && i < qp_backend_count() ? &qp_backend_rows[i] : NULL;
}

const qp_backend *qp_backend_find(const char *name) {
  for (int i = 0; name && i < qp_backend_count(); ++i)
    if (strcmp(qp_backend_rows[i].name, name) == 0) return &qp_backend_rows[i];
  return NULL;
}

const char *qp_backend_names(char *buf, size_t size, int all) {
  size_t used = 0;
  if (size) buf[0] = '\0';
  for (int i = 0; i < qp_backend_count(); ++i) {
    if (!all && !qp_backend_rows[i].configurable) continue;
    const int n = snprintf(buf + used, size > used ? size - used : 0, "%s%s", used ? ", " : "",
                           qp_backend_rows[i].name);
    if (n > 0) used += (size_t)n;
  }
  return buf;
}
