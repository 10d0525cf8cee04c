/* openblas_tuning.h: everything qmlpipe does to OpenBLAS, in one place, and nothing under another
 * BLAS library (its functions are looked up at run time: qp_blas_library_is_openblas). Its
 * buffers under an address-space limit (RLIMIT_AS, `ulimit -v`), measured on the running
 * kernel (qp_blas_footprint_get), in huge pages and committed; its idle workers put to sleep
 * soon after each call (qp_blas_threads_settle, at the end).
 *
 * OpenBLAS gives each of its threads a buffer of 128 MiB the first time the thread computes:
 * every worker as it starts, the calling thread at its first BLAS call. A buffer it cannot
 * map it asks for again, for ever (blas_memory_alloc): under a limit that leaves less than
 * that, the first dgemm of the warm-up never returned (issue 12, defect 6). The planner's
 * limit keeps 200 MiB a thread aside under RLIMIT_AS (budget/job_limit.h) and so refuses such
 * a run; this check holds even when the planner is told to ignore the job's limits
 * (QMLPIPE_IGNORE_JOB_LIMIT=1): it refuses a run whose next BLAS call would wait for ever. */
#ifndef QP_OPENBLAS_TUNING_H
#define QP_OPENBLAS_TUNING_H

#include <stddef.h>
#include <stdint.h>

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

/** Transparent huge pages for OpenBLAS's buffers. Each of its threads packs its operands into
 *  its buffer, whose pages the first calls of the warm-up fault in (pipeline/run/warm_up.c) and the
 *  process keeps: ~5 MiB a thread at n_pix 1984, 2500 faults of 4 KiB at ~8 us each on this
 *  project's VM, half of the warm-up (docs/benchmarks.md). Marked MADV_HUGEPAGE before any is
 *  touched, the same range comes in 2 MiB pages: 3 faults a thread. Maps the calling thread's
 *  buffer first (a 1 x 1 dpotrf, which touches none of it), then advises every anonymous
 *  mapping of one or more buffers' size (/proc/self/maps; the kernel merges adjacent ones,
 *  two threads' buffers were one 256 MiB line in most runs; a worker maps its own as it
 *  starts, which in a young process may not have happened yet: that one keeps 4 KiB pages).
 *  Once a process; returns the buffers advised (0 where the kernel has no transparent huge pages or
 * none was found). Best effort: a buffer not advised keeps 4 KiB pages, nothing fails. Call it
 * before the first BLAS call that packs anything. */
int qp_blas_buffers_huge_pages(void);

/** Commits the first `bytes` of every OpenBLAS buffer mapped now (each thread's that has one;
 *  /proc/self/maps as above, private read-write mappings only), as the first calls that pack
 *  into them would: the part a call of the run's widest width fills, A's block and then the
 *  packed columns, starts at the buffer's first byte (docs/memory-model.md "The warm-up").
 *  MADV_POPULATE_WRITE (Linux >= 5.14), which faults in what is not resident and changes no
 *  byte of what is; in huge pages where qp_blas_buffers_huge_pages advised them. Returns the
 *  buffers committed: 0 on older kernels, where the caller has OpenBLAS touch them itself. */
int qp_blas_buffers_commit(size_t bytes);

/** The pages the advised buffers get on x86_64 (the PMD size): the resident part of each
 *  buffer is a whole number of them (qp_blas_buffer_bytes, pipeline/blas_buffers.h, rounds to it
 * whatever the kernel's setting, an upper bound where the buffers keep 4 KiB pages). */
#define QP_BLAS_HUGE_PAGE_BYTES ((size_t)2 << 20)

/** 1 where the kernel has transparent huge pages for advised mappings
 *  (/sys/kernel/mm/transparent_hugepage/enabled 'always' or 'madvise') and this process may
 *  have them (/proc/self/status "THP_enabled: 1", or no such line); 0 where the setting is
 *  'never' or unreadable, or the process has them off (prctl PR_SET_THP_DISABLE). */
int qp_blas_huge_pages_available(void);

/** What the BLAS library the process runs leaves resident in its buffers, measured on this
 *  machine, with the kernel it was measured for (docs/memory-model.md "The warm-up"). */
typedef struct qp_blas_footprint {
  char library[64];    /* "OpenBLAS 0.3.21", "BLIS 0.9.0", or the file that answers dgemm_ */
  char kernel[48];     /* openblas_get_corename() ("Haswell", "SkylakeX"), BLIS's arch */
  int measured;        /* 1: the probe ran here; 0: not (no buffer found, a limit, a failure) */
  int per_thread;      /* 1: OpenBLAS's per-thread buffers (head and columns below) */
  size_t head_bytes;   /* per buffer: what comes before the packed columns (A's block) */
  size_t column_bytes; /* per buffer: what a packed column adds (GEMM_Q doubles) */
  size_t buffer_bytes; /* per buffer: its size as mapped (the cap) */
  size_t pool_bytes;   /* another library: what its probe left resident, all threads */
  char how[128];       /* how it was found, for the report */
} qp_blas_footprint;

/** Measures the footprint once per process (later calls return the same): under OpenBLAS, two
 *  single-threaded dgemm (1024 x 1024 by 8 and by 136 columns, ~0.3 GFLOP) on the calling
 *  thread's emptied buffer, whose extents (mincore, in 4 KiB pages: the buffers are kept from
 *  huge pages until then) give the bytes of a packed column and those before the first; the
 *  buffers are emptied again after (MADV_DONTNEED: scratch between calls). Under another
 *  library, the RssAnon that calls deeper and wider than its blocking leave (its pool keeps
 *  them). Its operands (8 MiB and 1.1 MiB, or 36 MiB under another library) are term
 *  "warm_up", freed before it returns. Call it where no other thread is in a BLAS call, before
 *  the warm-up commits the buffers (qp_blas_buffers_huge_pages and qp_blas_buffers_commit call
 *  it first). Never fails: `measured` 0 says it could not. Local, not collective. */
const qp_blas_footprint *qp_blas_footprint_get(void);

/** Bytes the BLAS library keeps resident for a run whose widest call is `width` columns on
 *  `threads` threads: per thread, the head, `width` columns and on one thread the
 *  single-threaded potrf's panel beyond them, in whole huge pages, at most a buffer; under
 *  another library its measured pool. 0 when not measured. */
size_t qp_blas_footprint_bytes(const qp_blas_footprint *f, int64_t width, int threads);

/* OpenBLAS's idle worker threads put to sleep soon after each call.
 *
 * OpenBLAS's pthreads build keeps each worker spinning (sched_yield) for 2^28 TSC ticks, about
 * 0.1 s, after every call it took part in, before it sleeps on a condition variable. Every
 * stage of a run ends its BLAS calls with OpenMP regions (S's pair sums, V's build, F's block
 * sums, the noise bias): the spinning workers take a core from them for that 0.1 s. On T
 * nside 16 on 2 cores, covariance_setup 0.035 -> 0.020 s and fisher_run 0.127 -> 0.108 s
 * with a short timeout, the whole run 0.604 -> 0.543 s (median of 8 alternating runs;
 * docs/benchmarks.md). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (log2 of the ticks) only when
 * its thread pool starts, which happens while it loads, before main. */
/** The timeout qmlpipe gives OpenBLAS's workers, as OPENBLAS_THREAD_TIMEOUT's log2 of TSC
 *  ticks: 2^20, about 0.4 ms at 2.5 GHz, long enough to keep the workers awake between
 *  back-to-back calls (a ScaLAPACK step, a panel loop), short enough that they sleep before an
 *  OpenMP region after the call. 16 to 22 gave the same walls on T nside 16; 24 and 26 lost
 *  10-20 ms of the gain, the default 28 all of it. */
#define QP_BLAS_THREAD_TIMEOUT 20

/** What qp_blas_threads_settle did. */
typedef enum {
  QP_BLAS_THREADS_SETTLED = 0,  /* the pool restarted with QP_BLAS_THREAD_TIMEOUT */
  QP_BLAS_THREADS_USER = 1,     /* OPENBLAS_THREAD_TIMEOUT was set: OpenBLAS uses the user's */
  QP_BLAS_THREADS_NOT_POOL = 2, /* not OpenBLAS's pthreads pool (a serial or OpenMP build,
                                   another BLAS, one thread): nothing to do */
  QP_BLAS_THREADS_LIMITED = 3   /* under RLIMIT_AS: left alone (see below) */
} qp_blas_threads_outcome;

/** Restarts OpenBLAS's worker threads with QP_BLAS_THREAD_TIMEOUT unless the environment sets
 *  OPENBLAS_THREAD_TIMEOUT (then the user's value stands) or an address-space limit is set
 *  (RLIMIT_AS, `ulimit -v`): there a worker whose 128 MiB buffer was refused as it started
 *  asks for it again for ever (linalg/blas/openblas_tuning.h), and the shutdown's join would wait
 *  for it for ever (tests/faults/rlimit_as.sh hung so). OpenBLAS exports what this needs
 *  (openblas_read_env, blas_thread_shutdown_, blas_thread_init: its own re-start after fork)
 *  but declares none of it: they are looked up at run time, and where one is missing nothing
 *  changes. Call it early in main, before any other thread calls BLAS (a second call only
 *  restarts the pool again): the pool is shut down and started again (the workers' buffers stay in
 * OpenBLAS's pool, their pages with them). The variable is set while OpenBLAS re-reads its
 * environment, then taken away again, so that no child process inherits it. */
qp_blas_threads_outcome qp_blas_threads_settle(void);

#endif
