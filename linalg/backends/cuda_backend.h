/* cuda_backend.h: the cuda backend (cuBLAS + cuSOLVER on one device), built with QP_HAVE_CUDA
 * only. Not named cuda.h: that is the CUDA toolkit's driver API header, which a quoted include
 * finds instead where linalg/backends/ is not on the include path.
 *
 * Its matrices live in device memory: space QP_SPACE_DEVICE, data a device pointer, allocated
 * through the budget in the device space. Its operations (the table of matrix.h) run on one
 * stream of one device and leave their results on the device; host code sees them through
 * the table's download (host windows, host_window.h) or qp_cuda_matrix_copy. What the
 * operations need besides their operands (cuSOLVER and cuBLAS workspaces, the info word,
 * getrf's pivots, the reductions' sums) is held by one context per process and charged to the
 * terms below (QP_TERM_CUBLAS_WORKSPACE, ...), so that no library allocates device memory
 * behind the budget's back once the context exists.
 *
 * Not thread-safe: one thread drives the context. Not collective over MPI (one device per
 * rank: each rank calls qp_cuda_init with its own device). */
#ifndef QP_CUDA_BACKEND_H
#define QP_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

/* the cuda backend's own buffers (linalg/backends/cuda_context.c), held from qp_cuda_init (or the
 * first operation that needs them) to qp_cuda_finalize; all in the device space but the last */
#define QP_TERM_CUBLAS_WORKSPACE "cublas workspace"     /* 32 MiB (sm_90 and up), else 4 MiB */
#define QP_TERM_CUSOLVER_WORKSPACE "cusolver workspace" /* the largest *_bufferSize so far */
#define QP_TERM_CUSOLVER_INFO "cusolver info"           /* one int */
#define QP_TERM_DEVICE_PIVOTS "device pivots"           /* getrf's int64 pivots, the largest n */
#define QP_TERM_DEVICE_REDUCTION "device reduction" /* column sums + 1; pocon's vector */
#define QP_TERM_CUSOLVER_HOST_WORKSPACE "cusolver host workspace" /* host space, often 0 */
/* Host space: two page-locked halves of QP_PINNED_STAGING_BYTES / 2 through which pageable
 * host <-> device copies go (cuda_pinned.c), held from init to finalize. */
#define QP_TERM_PINNED_STAGING "pinned staging"
#define QP_PINNED_STAGING_BYTES ((size_t)16 << 20)

#include "matrix.h"

/** Creates the context on `device` (once; a second call with the same device does nothing):
 *  the CUDA context, a stream, the cuBLAS and cuSOLVER handles bound to it, then the device
 *  meter's baseline (meter_device.h), then the cuBLAS workspace (cublasSetWorkspace) and the
 *  info word through the budget. qp_linalg_backend("cuda") calls it through
 *  qp_cuda_init_for_rank.
 *  Errors: QP_ERR_UNSUPPORTED when there is no usable device (the message says why: "no CUDA
 *  device"), QP_ERR_INPUT for a device index out of range or another device than the first
 *  call's, QP_ERR_GPU for a CUDA/cuBLAS/cuSOLVER failure (with the library's message),
 *  QP_ERR_NOMEM for the workspace. */
qp_err qp_cuda_init(int device);
/** qp_cuda_init on this rank's GPU: local rank % visible devices, the local rank from the
 *  launcher (device_choice.h: OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, MPI_LOCALRANKID;
 *  device 0 without one; CUDA_VISIBLE_DEVICES applied by the runtime). Errors as
 *  qp_cuda_init's, and QP_ERR_INPUT for a malformed launcher variable. A context that exists
 *  already (qp_cuda_init with an explicit device) stays as it is. */
qp_err qp_cuda_init_for_rank(void);
/** Frees the context's buffers (through the budget), destroys the handles and the stream and
 *  forgets the meter's baseline. Device matrices are the caller's to destroy, before or after.
 *  Safe to call without a context. */
void qp_cuda_finalize(void);
/** 1 once qp_cuda_init succeeded (and until qp_cuda_finalize). */
int qp_cuda_ready(void);
/** 1 when this build synchronises and checks after every CUDA, cuBLAS and cuSOLVER call
 *  (CMAKE_BUILD_TYPE=Debug or -DQP_CUDA_SYNC_CHECK=ON), so that an asynchronous error names
 *  the operation that caused it; 0 in release builds, whose operations stay asynchronous
 *  (timings are taken with 0: gpu_bench prints which). */
int qp_cuda_sync_checking(void);

/** The number of CUDA devices (0 when there are none or no usable driver). `why` (may be NULL)
 *  gets a reason of at most `why_size` bytes when the count is 0. Creates no context. */
int qp_cuda_device_count(char *why, size_t why_size);

/** The cuda operation table, or NULL before qp_cuda_init. */
const qp_linalg_ops *qp_linalg_cuda_ops(void);
/** "cuda-dist": matrices block-cyclic over the ranks, each rank's part on its GPU, every
 *  operation a tiled one over the cuda table (tiled_table.h; SMW's LU is
 *  tiled_lu.c's). NULL before qp_cuda_init or in a build without ScaLAPACK's grid. */
const qp_linalg_ops *qp_linalg_cuda_dist_ops(void);
/* Their starts, qp_linalg_cuda_start and qp_linalg_cuda_dist_start, are declared in matrix.h
 * with the others, for backends.c's rows. */

typedef struct qp_cuda_device_info {
  int device;              /* index */
  char name[256];          /* e.g. "NVIDIA H100 80GB HBM3" */
  int cc_major, cc_minor;  /* compute capability */
  size_t total_bytes;      /* device memory */
  size_t cublas_workspace; /* bytes given to cublasSetWorkspace */
} qp_cuda_device_info;
/** The context's device. QP_ERR_INTERNAL before qp_cuda_init. */
qp_err qp_cuda_device_get(qp_cuda_device_info *info);

/* ---- device matrices and copies ---- */

/** Allocates a rows x cols device matrix (zero-filled, ld = rows) under the device term `term`,
 *  with the cuda table. Needs the context. Errors as qp_budget_alloc's (device space). */
qp_err qp_cuda_matrix_create(const char *term, qp_term_kind kind, int64_t rows, int64_t cols,
                             qp_matrix *m);
/** Wraps a device buffer (e.g. a block of a device matrix); not freed by qp_matrix_destroy. */
qp_err qp_cuda_matrix_view(const char *name, double *device_data, int64_t rows, int64_t cols,
                           int64_t ld, qp_matrix *m);
/** Copies src into dst, of the same shape; each may be host or device (by its space), with any
 *  leading dimensions. Returns when the copy is done. The bytes are counted (see below). */
qp_err qp_cuda_matrix_copy(const qp_matrix *src, qp_matrix *dst);
/** A device copy of the host matrix `host`, created under the device term `term`. */
qp_err qp_cuda_matrix_upload(const qp_matrix *host, const char *term, qp_term_kind kind,
                             qp_matrix *device);
/** Bytes copied host -> device and device -> host since qp_cuda_init by every copy of the
 *  backend: qp_cuda_matrix_copy, the table's download/upload (host windows), norm1's result
 *  and the condition estimates' vectors. */
void qp_cuda_transfer_bytes(uint64_t *to_device, uint64_t *to_host);
/** Waits for everything queued on the context's stream (for timing: the operations return
 *  before the device is done, except those that read an info word back). */
qp_err qp_cuda_synchronize(void);

/* ---- workspaces ---- */

typedef enum qp_cuda_solver_op {
  QP_CUDA_POTRF = 0,
  QP_CUDA_POTRI,
  QP_CUDA_TRTRI,
  QP_CUDA_GETRF
} qp_cuda_solver_op;
/** The cuSOLVER workspace (device and host bytes) `op` asks for at order n, from its
 *  *_bufferSize query; the operation holds max(this, what earlier operations asked for) under
 *  QP_TERM_CUSOLVER_WORKSPACE / QP_TERM_CUSOLVER_HOST_WORKSPACE. Needs the context. */
qp_err qp_cuda_solver_workspace(qp_cuda_solver_op op, int64_t n, size_t *device_bytes,
                                size_t *host_bytes);
/** Frees the growing buffers (cuSOLVER workspaces, pivots, reduction) so that a stage can give
 *  their bytes back; the next operation that needs one allocates it again. The cuBLAS workspace
 *  and the info word stay. */
void qp_cuda_release_workspaces(void);

#endif
