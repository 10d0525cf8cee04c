/* blas_headroom.h: OpenBLAS under an address-space limit (RLIMIT_AS, `ulimit -v`).
 *
 * OpenBLAS gives each of its threads a buffer of 128 MiB the first time the thread computes:
 * every worker as it starts, the calling thread at its first BLAS call. A buffer it cannot
 * map it asks for again, for ever (blas_memory_alloc): under a limit that leaves less than
 * that, the first dgemm of the warm-up never returned (issue 12, defect 6). The planner's
 * limit keeps 200 MiB a thread aside under RLIMIT_AS (budget/job_limit.h) and so refuses such
 * a run; this check holds even when the planner is told to ignore the job's limits
 * (QMLPIPE_IGNORE_JOB_LIMIT=1): it refuses a run whose next BLAS call would wait for ever. */
#ifndef QP_BLAS_HEADROOM_H
#define QP_BLAS_HEADROOM_H

#include "qp_error.h"

/** Bytes of one OpenBLAS thread buffer as mapped (BUFFER_SIZE of x86_64, 128 MiB, and the
 *  allocator's page or two), with a little more for the thread's own needs. */
#define QP_BLAS_BUFFER_BYTES (129.0 * 1048576.0)

/** Under RLIMIT_AS: QP_OK when the address space left (the limit less VmSize) holds a buffer
 *  for each OpenBLAS thread that has none mapped yet (threads from openblas_get_num_threads,
 *  buffers counted in /proc/self/maps), and then maps the calling thread's buffer at once
 *  (a 1 x 1 dpotrf), before anything else can take the room; else QP_ERR_BUDGET (exit 4)
 *  naming the limit, what is left, what OpenBLAS needs and how to get it. QP_OK without a
 *  limit. Local (not collective); call it before the first large allocation of a run. */
qp_err qp_blas_check_address_space(void);

#endif
