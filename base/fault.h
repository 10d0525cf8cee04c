/* fault.h: fault injection's sites in qmlpipe, a TEST HOOK (README "Fault injection",
 * docs/reliability.md).
 *
 * The environment variable QP_FAULT makes one chosen operation fail as if the system or the
 * library had refused it, so that a test can drive every error path with the real components
 * around it:
 *
 *   QP_FAULT=alloc:N[@R]           the Nth tracked host allocation (budget.h, counting from 1)
 *                                  fails as if mmap had refused it: QP_ERR_NOMEM, exit 3
 *   QP_FAULT=lapack:NAME[:N][@R]   the Nth call of LAPACK/ScaLAPACK routine NAME returns
 *                                  info = 1 (not positive definite, singular): exit 5
 *   QP_FAULT=hdf5:NAME[:N][@R]     the Nth call at HDF5 site NAME returns -1: exit 8
 *   QP_FAULT=count                 nothing fails; the counts are printed at exit
 *
 * @R limits it to MPI rank R (default: every rank). The names are the routines of
 * linalg/backends/cpu.c and linalg/backends/dist.c that factor (dpotrf dpotri dtrtri dgetrf pdpotrf
 * pdtrtri pdgetrf) and three HDF5 sites: matrix_read (io/h5_matrix.c, every dense read),
 * results_write (io/results_h5.c, every dataset of the results) and report_write
 * (budget/report_h5.c, the budget's table of terms). A value that does not parse, or names an
 * unknown site, is an input error: a typo must not make a test pass without injecting.
 *
 * This header is what the product holds: the sites (the macros below, one test of a global
 * flag each) and the entry points, which go to the test hooks (test_hooks.h). The reading of
 * QP_FAULT, the counts and the choice of the call that fails are the test library's
 * (tests/support/fault_inject.c), installed in qmlpipe-test and the C tests only: in qmlpipe
 * QP_FAULT is never read and no site ever fails.
 *
 * With QP_FAULT set, qmlpipe-test prints at exit (qp_fault_report) whether the fault was
 * reached and the tracked host bytes still alive (0 when every error path freed what it
 * allocated); `count` also prints one line per tracked allocation (term, stage) and the
 * totals.
 *
 * QP_TEST_STOP_AFTER_STAGE=<stage> (qp_fault_stop_after_stage, the test library's too) ends
 * the run with SIGTERM right after that stage (and its checkpoint), as a time limit or
 * scancel would there: the tests of checkpoint and restart stop a run at a chosen stage. */
#ifndef QP_FAULT_H
#define QP_FAULT_H

#include <stdio.h>

#include "qp_error.h"

typedef enum qp_fault_kind { QP_FAULT_ALLOC = 0, QP_FAULT_LAPACK, QP_FAULT_HDF5 } qp_fault_kind;

/** 1 when QP_FAULT is set (read by the check macros; written by the test library's
 *  fault_init only, never in qmlpipe). */
extern int qp_fault_on;

/** Parses QP_FAULT (unset or empty: off) for this process, MPI rank `rank`, where the test
 *  library is installed; QP_OK and nothing read otherwise. Call once, after MPI has started and
 *  before any tracked allocation. Errors: QP_ERR_INPUT naming the value and what is wrong
 *  with it. */
qp_err qp_fault_init(int rank);

/** 1 when this tracked allocation (of `term`, in the current stage) must fail. Counts it. */
int qp_fault_alloc_hit(const char *term);
/** 1 when this call at site `name` (of `kind`) must fail. Counts it. */
int qp_fault_call_hit(qp_fault_kind kind, const char *name);

/** At a tracked allocation: nonzero when it must fail (zero cost beyond a flag when off). */
#define QP_FAULT_ALLOC(term) (qp_fault_on && qp_fault_alloc_hit(term))
/** A LAPACK/ScaLAPACK info: 1 (a factorisation that failed) when this call must fail. */
#define QP_FAULT_INFO(name, info)                                                                  \
  (qp_fault_on && qp_fault_call_hit(QP_FAULT_LAPACK, name) ? 1 : (info))
/** An HDF5 status: -1 when this call at site `name` must fail. */
#define QP_FAULT_H5(name, status)                                                              \
  (qp_fault_on && qp_fault_call_hit(QP_FAULT_HDF5, name) ? -1 : (status))

/** QP_TEST_STOP_AFTER_STAGE: when it names `stage`, every rank meets (`agree`: qp_comm_agree,
 *  whose status is ignored: budget/ knows nothing of MPI; NULL: one process), rank 0 says so on
 *  stderr, and the process raises SIGTERM: the signal handler (interrupt.h) ends it, exit 143.
 *  Returns when the variable is unset or names another stage. Call where a stage has ended and
 *  its checkpoint is written. */
void qp_fault_stop_after_stage(const char *stage, qp_err (*agree)(qp_err));

/** With QP_FAULT set, prints "qp_fault: rank R: ..." lines to `out`: the counts (mode count),
 *  whether the fault was injected, and the tracked host bytes alive now. Nothing when off. */
void qp_fault_report(FILE *out);

#endif
