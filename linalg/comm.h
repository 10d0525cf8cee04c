/* comm.h: the few collective operations the pipeline needs across MPI ranks, and what rank
 * this process is. Without MPI (or before qp_comm_init) there is one rank and every call is
 * a no-op, so single-process code calls them unconditionally.
 *
 * Rank 0 reads the inputs and writes the outputs; what is small (maps, pixel lists, the
 * Fisher matrix) is replicated with qp_comm_bcast / qp_comm_sum. */
#ifndef QP_COMM_H
#define QP_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "qp_error.h"

/** Starts MPI when this process was launched by an MPI launcher (mpiexec, srun) and the build
 *  has MPI; otherwise one rank. Safe to call more than once. */
qp_err qp_comm_init(int *argc, char ***argv);
/** Ends MPI if qp_comm_init started it. */
void qp_comm_finalize(void);
/** 1 when MPI is running (even with one rank). */
int qp_comm_active(void);
int qp_comm_rank(void);
int qp_comm_size(void);
/** Ranks on this rank's node (MPI_COMM_TYPE_SHARED), 1 without MPI: each rank's own node,
 *  which may hold another number of ranks than rank 0's (uneven placement). */
int qp_comm_node_size(void);
/** The longest host name kept, its terminating NUL included (Linux's HOST_NAME_MAX + 1). */
enum { QP_COMM_HOST_MAX = 65 };
/** This process's host name: MPI_Get_processor_name under MPI, else gethostname; "unknown"
 *  when neither answers. Cut to QP_COMM_HOST_MAX - 1 characters. */
const char *qp_comm_host(void);

/** x <- sum over ranks of x (in place, every rank gets it). */
qp_err qp_comm_sum(double *x, int64_t count);
/** x <- max over ranks of x (in place). */
qp_err qp_comm_max(double *x, int64_t count);
/** bytes from rank 0 to every rank. */
qp_err qp_comm_bcast(void *buf, size_t bytes);
/** Gathers `count` doubles from every rank into `all` (rank-major, count x size) on every rank. */
qp_err qp_comm_allgather(const double *mine, double *all, int64_t count);
/** Gathers `bytes` bytes from every rank into `all` (rank-major, bytes x size) on every rank
 *  (`bytes` below 2^31). */
qp_err qp_comm_allgather_bytes(const void *mine, void *all, size_t bytes);
/** bytes from rank `root` to every rank. */
qp_err qp_comm_bcast_from(void *buf, size_t bytes, int root);
/** Gathers counts[r] doubles from every rank r into `all` (rank-major: rank 0's first) on
 *  every rank; `mine` holds this rank's counts[rank]. Each count and their sum below 2^31
 *  (MPI's int): QP_ERR_INTERNAL otherwise, on every rank alike (the counts are every rank's). */
qp_err qp_comm_allgatherv(const double *mine, double *all, const int64_t *counts);
/** Seconds a failed rank waits for the others in qp_comm_agree before it ends the job. */
#define QP_COMM_AGREE_GRACE_DEFAULT 3.0

/** Agrees on an error: returns the first non-OK status of any rank (by rank order) on every
 *  rank, with that rank's message ("(rank R) ..." on the others), so that all ranks leave a
 *  stage together instead of hanging in a collective. Collective, on a communicator of its
 *  own. A rank that succeeded waits for all; a rank whose `err` is an error waits at most the
 *  grace period (QP_AGREE_GRACE_SECONDS, default QP_COMM_AGREE_GRACE_DEFAULT): when the others
 *  have not all arrived by then (they wait inside a collective this rank will not enter), it
 *  prints "qmlpipe: rank R: error (...): message" and ends the whole job with MPI_Abort and
 *  the error's exit status (mpiexec exits with it), never returning. */
qp_err qp_comm_agree(qp_err err);
/** The grace period of qp_comm_agree, in seconds (QP_AGREE_GRACE_SECONDS when it is a number
 *  from 0 to 3600, else the default). */
double qp_comm_agree_grace(void);
/** Ends every rank with `status` (MPI_Abort; _exit without MPI), stdout and stderr flushed
 *  first: a rank that fails alone while the others are in a collective cannot be recovered. */
void qp_comm_abort(int status);

#endif
