/* backends.c: the rows of backends.h, each with its start. */
#include "backends.h"

#include <stdio.h>
#include <string.h>

#include "matrix.h"
#include "qp_config.h"

/* The device context the plan reserves for cuda: measured 690.8 MiB on an H200 (CUDA 13.0,
 * driver 580; docs/gpu.md), with room for another card or driver; 640 MiB before that
 * measurement was 51 MiB short. `report` prints the measured baseline beside it. */
#define QP_DEVICE_CONTEXT_CUDA ((size_t)768 << 20)

/* What this build lacks: the start NULL and the message that says how to build it. */
#if QP_HAVE_CUDA
#define QP_START_CUDA qp_linalg_cuda_start
#define QP_START_CUDA_DIST qp_linalg_cuda_dist_start
#else
#define QP_START_CUDA NULL
#define QP_START_CUDA_DIST NULL
#endif
#if QP_HAVE_SCALAPACK
#define QP_START_DIST qp_linalg_dist_start
#else
#define QP_START_DIST NULL
#endif
#define QP_ABSENT_CUDA                                                                             \
  "this build of qmlpipe was not built with CUDA (configure with -DQP_ENABLE_CUDA=ON)"
#define QP_ABSENT_DIST                                                                           \
  "this build of qmlpipe has no distributed backend (configure with -DQP_ENABLE_MPI=ON "         \
  "-DQP_ENABLE_SCALAPACK=ON)"
#define QP_ABSENT_TEST                                                                           \
  "test-only: it is not built into this qmlpipe (the tests run it through qmlpipe-test, built " \
  "beside qmlpipe)"

/* The configurable ones first, in the order the config's error lists them; room after them
 * for the rows a test library adds (qp_backends_add). The test-only rows have their
 * description here, so that qmlpipe names them when it refuses them and `validate` reads a
 * results file qmlpipe-test wrote; their start is the test library's. */
enum { QP_BACKEND_ROWS_MAX = 12 };
static qp_backend qp_backend_rows[QP_BACKEND_ROWS_MAX] = {
    {.name = "cpu", .on_ranks = "dist", .space = QP_SPACE_HOST, .configurable = 1,
     .start = qp_linalg_cpu_start},
    {.name = "cuda", .on_ranks = "cuda-dist", .space = QP_SPACE_DEVICE, .configurable = 1,
     .gpu = 1, .context_bytes = QP_DEVICE_CONTEXT_CUDA, .start = QP_START_CUDA,
     .absent = QP_ABSENT_CUDA},
    {.name = "dist", .space = QP_SPACE_HOST, .configurable = 1, .start = QP_START_DIST,
     .absent = QP_ABSENT_DIST},
    {.name = "cuda-dist", .space = QP_SPACE_DEVICE, .gpu = 1,
     .context_bytes = QP_DEVICE_CONTEXT_CUDA, .start = QP_START_CUDA_DIST,
     .absent = QP_ABSENT_CUDA},
    {.name = "hostdev", .on_ranks = "hostdev-dist", .space = QP_SPACE_DEVICE, .configurable = 1,
     .device_in_host = 1, .test_only = 1, .absent = QP_ABSENT_TEST},
    {.name = "hostdev-dist", .space = QP_SPACE_DEVICE, .device_in_host = 1, .test_only = 1,
     .absent = QP_ABSENT_TEST},
    {.name = "hostdev-tiled", .space = QP_SPACE_DEVICE, .device_in_host = 1, .test_only = 1,
     .absent = QP_ABSENT_TEST},
};
static int qp_backend_rows_used = 7;

int qp_backend_count(void) { return qp_backend_rows_used; }

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

qp_err qp_backend_check_available(const qp_backend *row, const char *source) {
  QP_CHECK(!row->test_only || row->start, QP_ERR_INPUT, "%s: backend '%s' is %s", source,
           row->name, row->absent ? row->absent : "test-only");
  return QP_OK;
}

qp_err qp_backends_install(const char *name, qp_backend_start start, qp_backend_table sizes) {
  qp_backend *row = (qp_backend *)qp_backend_find(name);
  QP_CHECK(row && row->test_only, QP_ERR_INTERNAL,
           "qp_backends_install: no test-only backend '%s'", name);
  row->start = start;
  row->sizes_table = sizes;
  return QP_OK;
}

qp_err qp_backends_add(const qp_backend *row) {
  QP_CHECK(row && row->name && !qp_backend_find(row->name), QP_ERR_INTERNAL,
           "qp_backends_add: backend '%s' has a row already", row && row->name ? row->name : "");
  QP_CHECK(qp_backend_rows_used < QP_BACKEND_ROWS_MAX, QP_ERR_INTERNAL,
           "qp_backends_add: no room for backend '%s' (%d rows)", row->name,
           QP_BACKEND_ROWS_MAX);
  qp_backend_rows[qp_backend_rows_used++] = *row;
  return QP_OK;
}
