/* hostdev.h: the backend "hostdev", a strict device emulation for tests on machines without a
 * GPU. TEST-ONLY: part of the test library (tests/support/, never linked into qmlpipe;
 * hostdev_memory.c the emulated memory, hostdev_ops.c the one-rank table, hostdev_dist.c the
 * tables on several ranks). It computes on the CPU (the cpu backend's operations) and is no
 * faster than `cpu`; its purpose is to run the device path of qmlpipe (issue 15) in CTest.
 *
 * Its matrices live in the device space (QP_SPACE_DEVICE): their "device memory" is host
 * memory that hostdev maps itself (device_memory.h provider, charged to the budget's device
 * space like cudaMalloc's blocks) and keeps PROT_NONE except inside its own operations. Any
 * host access to a device matrix from elsewhere, m->data[i] in a stage say, dies with SIGSEGV
 * at the faulting instruction, where on a GPU it would read garbage or fault later. Host code
 * reaches the entries only as it must on a GPU: through qp_linalg_download/upload, i.e. host
 * windows (host_window.h), align and replicate.
 *
 * Each operation checks that every operand is a device matrix lying inside a live hostdev
 * block (QP_ERR_INTERNAL naming the operation and the matrix otherwise: the bug a GPU would
 * report as an illegal address), makes the pages the operands' entries span readable and
 * writable (not their whole blocks: an operation on a tile of a matrix costs the kernel that
 * tile's pages, and the rest of the block still faults; a download or upload opens the block
 * it copies), runs the cpu table's operation on the same handles, makes those pages PROT_NONE
 * again and returns its status, so
 * that hostdev gives the cpu results bitwise. As on cuda, potri leaves the full symmetric
 * inverse (qp_linalg_potri mirrors host matrices only). Each block has a PROT_NONE guard page
 * after it, so that an operation running past its operand's block faults too.
 *
 * Memory: blocks are mapped with their pages committed (so host RSS includes them, as the
 * budget's host blocks), rounded to pages; the device meter (meter_device.h, builds without
 * CUDA) reports the bytes mapped, page-rounded, above the baseline qp_hostdev_init takes, to be
 * compared with the tracked device bytes (budget.h) as a GPU's cudaMemGetInfo would be.
 *
 * On several MPI ranks (qp_linalg_hostdev_dist_ops, "hostdev-dist") each rank's block-cyclic
 * local part lives in that rank's emulated device. Its Cholesky, triangular solves and
 * products, gemm, syrk, norm1 and pocon are the tiled algorithms (tiled.h) over the one-rank
 * hostdev operations, each run as a batch: a block a local step opens stays open (whole) until
 * the distributed operation returns, then all are PROT_NONE again (one page range per operand
 * and step cost ~40 us of mprotect each on this VM, 10^5 of them in a small 2-rank test). So
 * are the inverse, copies, transpose and clearing; the LU, its solves and estimate (SMW's) are
 * the dist table's on the opened local parts.
 *
 * "hostdev-tiled" (qp_linalg_hostdev_tiled_ops) is cuda-dist's table (tiled_table.h) over
 * hostdev: the GPU-per-rank backend exactly, but for the cuda operations' bodies, unbatched
 * and without an LU; hostdev-dist's start gives it instead when the test hook
 * QP_TEST_HOSTDEV_TABLE=tiled is set (docs/gpu.md).
 *
 * One thread calls the operations; allocation, free and the meter may come from any thread. */
#ifndef QP_HOSTDEV_H
#define QP_HOSTDEV_H

#include <stddef.h>

#include "matrix.h"

/* hostdev's own buffers, EMULATING a cuSOLVER-like library (the cuda backend's "cusolver
 * workspace" and "device pivots", linalg/backends/cuda_backend.h) so that the memory model's prediction of
 * a backend's workspaces is checked exactly on CPU: blocks of its device memory that it never
 * reads, held from first need and grown as cuda's are (matrix.h, qp_workspace), freed by the
 * table's release_workspaces. One rank only: hostdev-dist's distributed operations hold none. */
#define QP_TERM_HOSTDEV_WORKSPACE "hostdev solver workspace" /* potrf, potri, trtri, getrf */
#define QP_TERM_HOSTDEV_PIVOTS "hostdev pivots"              /* getrf, getrs */
/** The emulated workspace's panel: potrf, potri, trtri and getrf of order n hold
 *  n x QP_HOSTDEV_WORKSPACE_COLUMNS doubles (a blocked factorisation's panel); getrf and getrs
 *  8 n bytes of pivots (cuSOLVER's int64 ones). */
#define QP_HOSTDEV_WORKSPACE_COLUMNS 64

/** The name the device meter gives hostdev's memory. */
#define QP_HOSTDEV_DEVICE_NAME "hostdev (host memory, test-only)"

/** Makes hostdev's memory the budget's device space (qp_budget_device_memory_set) and, in a
 *  build without CUDA, takes the device meter's baseline unless it is already taken on hostdev.
 *  Idempotent. qp_linalg_backend("hostdev", ...) calls it (qp_hostdev_start). A TEST HOOK: the
 * environment variable QP_HOSTDEV_CAPACITY (bytes, or with K, M, G: 1024-based), when set, is the
 *  emulated device's size (qp_hostdev_set_capacity), so that a `qmlpipe run` on hostdev can be
 *  given a device of a chosen size; a value that does not parse is QP_ERR_INPUT naming it. */
qp_err qp_hostdev_init(void);
/* A second TEST HOOK: QP_HOSTDEV_CONTEXT (bytes, K, M, G as above), when set at the first
 * qp_hostdev_init, maps that many bytes of untracked emulated device memory before the meter's
 * baseline, as a CUDA context and library handles are (what memory.device_overhead predicts):
 * the baseline is then that context, and it takes its share of the capacity. */
/** The hostdev operation table (name "hostdev", space QP_SPACE_DEVICE, host table cpu). Its
 *  matrices need qp_hostdev_init first (their memory comes from its provider). */
const qp_linalg_ops *qp_linalg_hostdev_ops(void);
/** The distributed hostdev table (name "hostdev-dist"; NULL in a build without ScaLAPACK):
 *  matrices block-cyclic over qp_grid_current() as dist's, each rank's local part in its own
 *  emulated device, every operation a tiled algorithm (tiled.h) over hostdev's operations,
 *  the LU included. Its host table is dist (align's and replicate's work matrices, staging
 *  of local parts), its local table hostdev (a rank's stacks of local parts), sum_partials
 *  dist's. Each step agrees on its errors (qp_comm_agree): a rank whose operand is refused
 *  returns its error on every rank, none waits in a collective. */
const qp_linalg_ops *qp_linalg_hostdev_dist_ops(void);
/** cuda-dist's table over hostdev ("hostdev-tiled", above), or NULL in a build without
 *  ScaLAPACK's grid. */
const qp_linalg_ops *qp_linalg_hostdev_tiled_ops(void);
/** The starts of the rows "hostdev", "hostdev-dist" and "hostdev-tiled" (linalg/backends.c),
 *  which the test library installs (test_support.h): qp_hostdev_init, then the table; the
 *  two on several ranks need ScaLAPACK's process grid. hostdev-dist's start gives
 *  hostdev-tiled's table under the test hook QP_TEST_HOSTDEV_TABLE=tiled (what the driver
 *  starts for `backend: hostdev` on several ranks). */
qp_err qp_hostdev_start(const qp_linalg_ops **ops);
qp_err qp_hostdev_dist_start(const qp_linalg_ops **ops);
qp_err qp_hostdev_tiled_start(const qp_linalg_ops **ops);
/** Limits hostdev's memory to `bytes` in all (page-rounded blocks), as a device's size does:
 *  an allocation beyond it fails with QP_ERR_NOMEM "out of device memory" naming the term, as
 *  cudaMalloc's would. 0 (the default): only the host's memory limits it. The device meter's
 *  total is this capacity, or the host's physical memory when there is none. */
void qp_hostdev_set_capacity(size_t bytes);
/** Bytes hostdev has mapped now: its live blocks, each rounded up to pages (no guard pages). */
size_t qp_hostdev_mapped_bytes(void);

#endif
