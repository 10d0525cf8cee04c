/* cuda_context.c: the cuda backend's context (cuda_backend.h, cuda_private.h): device, stream,
 * cuBLAS and cuSOLVER handles, the buffers the operations share, and the wrappers of the
 * libraries' statuses. */
#include <stdio.h>
#include <string.h>

#include "cuda_private.h"
#include "device_choice.h"
#include "meter_device.h"

/* Debug builds define it to 1 (linalg/CMakeLists.txt); 0 otherwise. */
#ifndef QP_CUDA_SYNC_CHECK
#define QP_CUDA_SYNC_CHECK 0
#endif

qp_cuda_context qp_cuda_ctx;

/* cuBLAS's advice for cublasSetWorkspace: 32 MiB on Hopper and later, 4 MiB before. */
enum { QP_CUBLAS_WORKSPACE_HOPPER = 32 << 20, QP_CUBLAS_WORKSPACE_OTHER = 4 << 20 };

/* ---- statuses ---- */

int qp_cuda_sync_checking(void) { return QP_CUDA_SYNC_CHECK; }

/* After a call that succeeded: with QP_CUDA_SYNC_CHECK, wait for the stream and collect the
 * error of any work it queued (a kernel's bad access, a library's failed execution), so that
 * it is reported by the call that queued it, not by a later one; without, nothing (release
 * builds stay asynchronous). Before the stream exists (context creation) there is nothing
 * queued to wait for. */
static qp_err qp_cuda_sync_check(const char *what) {
  if (!QP_CUDA_SYNC_CHECK || !qp_cuda_ctx.stream) return QP_OK;
  cudaError_t e = cudaStreamSynchronize(qp_cuda_ctx.stream);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) return QP_OK;
  (void)cudaGetLastError();
  QP_FAIL(QP_ERR_GPU, "%s (stage %s): CUDA error %s after it (debug synchronisation): %s", what,
          qp_stage_label(), cudaGetErrorName(e), cudaGetErrorString(e));
}

qp_err qp_cuda_status(cudaError_t status, const char *what) {
  if (status == cudaSuccess) return qp_cuda_sync_check(what);
  (void)cudaGetLastError(); /* clear a non-sticky error so that later calls start clean */
  QP_FAIL(QP_ERR_GPU, "%s (stage %s): CUDA error %s: %s", what,
          qp_stage_label(), cudaGetErrorName(status),
          cudaGetErrorString(status));
}

qp_err qp_cublas_status(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS) return qp_cuda_sync_check(what);
  QP_FAIL(QP_ERR_GPU, "%s (stage %s): cuBLAS error %s: %s", what,
          qp_stage_label(), cublasGetStatusName(status),
          cublasGetStatusString(status));
}

/* cuSOLVER has no status-to-string function: the names of cusolver_common.h. */
static const char *qp_cusolver_status_name(cusolverStatus_t status) {
  switch (status) {
  case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
  case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
  case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
  case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
  case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
  case CUSOLVER_STATUS_MAPPING_ERROR: return "CUSOLVER_STATUS_MAPPING_ERROR";
  case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
  case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
  case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
    return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
  case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
  case CUSOLVER_STATUS_ZERO_PIVOT: return "CUSOLVER_STATUS_ZERO_PIVOT";
  case CUSOLVER_STATUS_INVALID_LICENSE: return "CUSOLVER_STATUS_INVALID_LICENSE";
  case CUSOLVER_STATUS_INVALID_WORKSPACE: return "CUSOLVER_STATUS_INVALID_WORKSPACE";
  default: return "a cuSOLVER status";
  }
}

qp_err qp_cusolver_status(cusolverStatus_t status, const char *what) {
  if (status == CUSOLVER_STATUS_SUCCESS) return qp_cuda_sync_check(what);
  QP_FAIL(QP_ERR_GPU, "%s (stage %s): cuSOLVER error %s (%d)", what,
          qp_stage_label(), qp_cusolver_status_name(status),
          (int)status);
}

/* ---- devices ---- */

int qp_cuda_device_count(char *why, size_t why_size) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  if (count == 0 && why && why_size > 0) {
    if (e != cudaSuccess)
      snprintf(why, why_size, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    else
      snprintf(why, why_size, "the CUDA runtime sees no device");
  }
  return count;
}

int qp_cuda_ready(void) { return qp_cuda_ctx.ready; }

qp_err qp_cuda_device_get(qp_cuda_device_info *info) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL, "the cuda backend is not initialised");
  *info = qp_cuda_ctx.info;
  return QP_OK;
}

qp_err qp_cuda_check_operand(const qp_matrix *m, const char *routine) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL,
           "%s on '%s': the cuda backend is not initialised (qp_cuda_init)", routine, m->name);
  QP_CHECK(m->space == QP_SPACE_DEVICE, QP_ERR_INTERNAL,
           "%s: matrix '%s' is in host memory; the cuda backend works on device matrices "
           "(qp_cuda_matrix_create, qp_cuda_matrix_upload)",
           routine, m->name);
  return QP_OK;
}

/* ---- the context ---- */

/* Creates what init needs, in order; qp_cuda_finalize undoes whatever part of it exists. */
static qp_err qp_cuda_create(int device) {
  qp_cuda_context *c = &qp_cuda_ctx;
  QP_CALL(qp_cuda_status(cudaSetDevice(device), "cudaSetDevice"));
  /* cudaFree(0) is the documented way to create the primary context now, not at first use. */
  QP_CALL(qp_cuda_status(cudaFree(NULL), "creating the CUDA context"));
  struct cudaDeviceProp prop;
  QP_CALL(qp_cuda_status(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"));
  c->info.device = device;
  snprintf(c->info.name, sizeof c->info.name, "%s", prop.name);
  c->info.cc_major = prop.major;
  c->info.cc_minor = prop.minor;
  c->info.total_bytes = prop.totalGlobalMem;
  QP_CALL(qp_cuda_status(cudaStreamCreate(&c->stream), "cudaStreamCreate"));
  QP_CALL(qp_cublas_status(cublasCreate(&c->blas), "cublasCreate"));
  QP_CALL(qp_cublas_status(cublasSetStream(c->blas, c->stream), "cublasSetStream"));
  QP_CALL(qp_cusolver_status(cusolverDnCreate(&c->solver), "cusolverDnCreate"));
  QP_CALL(qp_cusolver_status(cusolverDnSetStream(c->solver, c->stream), "cusolverDnSetStream"));
  QP_CALL(qp_cusolver_status(cusolverDnCreateParams(&c->params), "cusolverDnCreateParams"));
  QP_CALL(qp_cuda_pinned_events()); /* the context's: before the baseline; the block is a stage's */
  /* The baseline: the context and the handles exist; from here on, device memory should be
   * the budget's (what the libraries still take at first use shows as measured - tracked). */
  QP_CALL(qp_meter_device_baseline());
  c->info.cublas_workspace =
      prop.major >= 9 ? QP_CUBLAS_WORKSPACE_HOPPER : QP_CUBLAS_WORKSPACE_OTHER;
  QP_CALL(qp_budget_alloc(QP_TERM_CUBLAS_WORKSPACE, QP_TERM_PERSISTENT, QP_SPACE_DEVICE,
                          c->info.cublas_workspace, &c->blas_workspace));
  /* After cublasSetStream, which resets a handle's workspace to cuBLAS's own pool: nothing
   * may call cublasSetStream on this handle again. */
  QP_CALL(qp_cublas_status(cublasSetWorkspace(c->blas, c->blas_workspace, c->info.cublas_workspace),
                           "cublasSetWorkspace"));
  void *info_word = NULL;
  QP_CALL(qp_budget_alloc(QP_TERM_CUSOLVER_INFO, QP_TERM_PERSISTENT, QP_SPACE_DEVICE, sizeof(int),
                          &info_word));
  c->info_word = info_word;
  return QP_OK;
}

/* The device count, QP_ERR_UNSUPPORTED "no CUDA device (why)" when it is 0. */
static qp_err qp_cuda_usable_count(int *count) {
  char why[256] = "";
  *count = qp_cuda_device_count(why, sizeof why);
  QP_CHECK(*count > 0, QP_ERR_UNSUPPORTED, "backend 'cuda': no CUDA device (%s)", why);
  return QP_OK;
}

qp_err qp_cuda_init_for_rank(void) {
  if (qp_cuda_ctx.ready) return QP_OK; /* the context's device, however it was chosen */
  int count = 0;
  QP_CALL(qp_cuda_usable_count(&count));
  qp_device_choice choice;
  QP_CALL(qp_device_choose(count, &choice));
  QP_CALL(qp_cuda_init(choice.device));
  return QP_OK;
}

qp_err qp_cuda_init(int device) {
  if (qp_cuda_ctx.ready) {
    QP_CHECK(device == qp_cuda_ctx.info.device, QP_ERR_INPUT,
             "the cuda backend runs on device %d already; it cannot also take device %d",
             qp_cuda_ctx.info.device, device);
    return QP_OK;
  }
  int count = 0;
  QP_CALL(qp_cuda_usable_count(&count));
  QP_CHECK(device >= 0 && device < count, QP_ERR_INPUT,
           "backend 'cuda': device %d does not exist (this machine has %d)", device, count);
  memset(&qp_cuda_ctx, 0, sizeof qp_cuda_ctx);
  qp_err err = qp_cuda_create(device);
  if (err != QP_OK) {
    qp_cuda_finalize();
    qp_error_trace(__FILE__, __LINE__, __func__);
    return err;
  }
  qp_cuda_ctx.ready = 1;
  return QP_OK;
}

void qp_cuda_finalize(void) {
  qp_cuda_context *c = &qp_cuda_ctx;
  if (c->stream) (void)cudaStreamSynchronize(c->stream);
  qp_cuda_release_workspaces();
  /* cuBLAS must not keep the workspace pointer once it is freed. */
  if (c->blas && c->blas_workspace) (void)cublasSetWorkspace(c->blas, NULL, 0);
  qp_budget_free(c->blas_workspace);
  qp_budget_free(c->info_word);
  qp_cuda_pinned_destroy();
  if (c->params) (void)cusolverDnDestroyParams(c->params);
  if (c->solver) (void)cusolverDnDestroy(c->solver);
  if (c->blas) (void)cublasDestroy(c->blas);
  if (c->stream) (void)cudaStreamDestroy(c->stream);
  qp_meter_device_clear();
  memset(c, 0, sizeof *c);
}

qp_err qp_cuda_synchronize(void) {
  QP_CHECK(qp_cuda_ctx.ready, QP_ERR_INTERNAL, "the cuda backend is not initialised");
  QP_CALL(qp_cuda_status(cudaStreamSynchronize(qp_cuda_ctx.stream), "cudaStreamSynchronize"));
  return QP_OK;
}

qp_err qp_cuda_read_info(int *info) {
  QP_CALL(qp_cuda_status(cudaMemcpyAsync(info, qp_cuda_ctx.info_word, sizeof *info,
                                         cudaMemcpyDeviceToHost, qp_cuda_ctx.stream),
                         "reading cuSOLVER's info"));
  QP_CALL(qp_cuda_status(cudaStreamSynchronize(qp_cuda_ctx.stream), "reading cuSOLVER's info"));
  return QP_OK;
}

/* ---- growing buffers ---- */

/* Replaces *buffer by one of `bytes` under `term` when it holds fewer. The stream is drained
 * first: queued work may still read the old buffer. */
static qp_err qp_cuda_grow(const char *term, qp_space space, size_t bytes, void **buffer,
                           size_t *held) {
  if (bytes <= *held) return QP_OK;
  QP_CALL(qp_cuda_status(cudaStreamSynchronize(qp_cuda_ctx.stream), "growing a workspace"));
  qp_budget_free(*buffer);
  *buffer = NULL;
  *held = 0;
  QP_CALL(qp_budget_alloc(term, QP_TERM_PERSISTENT, space, bytes, buffer));
  *held = bytes;
  return QP_OK;
}

qp_err qp_cuda_reserve_solver(size_t device_bytes, size_t host_bytes) {
  QP_CALL(qp_cuda_grow(QP_TERM_CUSOLVER_WORKSPACE, QP_SPACE_DEVICE, device_bytes,
                       &qp_cuda_ctx.solver_workspace, &qp_cuda_ctx.solver_workspace_bytes));
  QP_CALL(qp_cuda_grow(QP_TERM_CUSOLVER_HOST_WORKSPACE, QP_SPACE_HOST, host_bytes,
                       &qp_cuda_ctx.solver_host_workspace,
                       &qp_cuda_ctx.solver_host_workspace_bytes));
  return QP_OK;
}

/* The typed buffers go through a void * and back whatever happens: a failed grow leaves NULL. */
qp_err qp_cuda_reserve_pivots(int64_t n) {
  void *p = qp_cuda_ctx.pivots;
  qp_err err = qp_cuda_grow(QP_TERM_DEVICE_PIVOTS, QP_SPACE_DEVICE, (size_t)n * sizeof(int64_t), &p,
                            &qp_cuda_ctx.pivots_bytes);
  qp_cuda_ctx.pivots = p;
  QP_CALL(err);
  return QP_OK;
}

qp_err qp_cuda_reserve_reduction(int64_t n) {
  void *p = qp_cuda_ctx.reduction;
  qp_err err = qp_cuda_grow(QP_TERM_DEVICE_REDUCTION, QP_SPACE_DEVICE, (size_t)n * sizeof(double),
                            &p, &qp_cuda_ctx.reduction_bytes);
  qp_cuda_ctx.reduction = p;
  QP_CALL(err);
  return QP_OK;
}

void qp_cuda_release_workspaces(void) {
  qp_cuda_context *c = &qp_cuda_ctx;
  if (c->stream) (void)cudaStreamSynchronize(c->stream);
  qp_budget_free(c->solver_workspace);
  qp_budget_free(c->solver_host_workspace);
  qp_budget_free(c->pivots);
  qp_budget_free(c->reduction);
  c->solver_workspace = c->solver_host_workspace = NULL;
  c->pivots = NULL;
  c->reduction = NULL;
  c->solver_workspace_bytes = c->solver_host_workspace_bytes = 0;
  c->pivots_bytes = c->reduction_bytes = 0;
}
