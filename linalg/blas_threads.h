/* blas_threads.h: OpenBLAS's idle worker threads put to sleep soon after each call.
 *
 * OpenBLAS's pthreads build keeps each worker spinning (sched_yield) for 2^28 TSC ticks, about
 * 0.1 s, after every call it took part in, before it sleeps on a condition variable. Every
 * stage of a run ends its BLAS calls with OpenMP regions (S's pair sums, V's build, F's block
 * sums, the noise bias): the spinning workers take a core from them for that 0.1 s. On T
 * nside 16 on 2 cores, covariance_setup 0.035 -> 0.020 s and fisher_run 0.127 -> 0.108 s
 * with a short timeout, the whole run 0.604 -> 0.543 s (median of 8 alternating runs;
 * docs/benchmarks.md). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (log2 of the ticks) only when
 * its thread pool starts, which happens while it loads, before main. */
#ifndef QP_BLAS_THREADS_H
#define QP_BLAS_THREADS_H

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
 *  asks for it again for ever (linalg/blas_headroom.h), and the shutdown's join would wait
 *  for it for ever (tests/faults/rlimit_as.sh hung so). OpenBLAS exports what this needs
 *  (openblas_read_env, blas_thread_shutdown_, blas_thread_init: its own re-start after fork)
 *  but declares none of it: they are looked up at run time, and where one is missing nothing
 *  changes. Call it early in main, before any other thread calls BLAS (a second call only
 *  restarts the pool again): the pool is shut down and started again (the workers' buffers stay in OpenBLAS's pool, their pages with
 *  them). The variable is set while OpenBLAS re-reads its environment, then taken away again,
 *  so that no child process inherits it. */
qp_blas_threads_outcome qp_blas_threads_settle(void);

#endif
