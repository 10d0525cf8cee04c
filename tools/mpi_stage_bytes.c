/* mpi_stage_bytes.c: a PMPI interposer (LD_PRELOAD) that counts each rank's MPI traffic and
 * time spent inside MPI, for tools/scaling_bench.sh (docs/distributed.md, "Scaling, measured
 * and modelled"). Not part of qmlpipe; built by the script with mpicc -shared -fPIC.
 *
 * Why an interposer: Debian's Open MPI 4.1 has the mpi_spc_* parameters but was not built with
 * --enable-spc (no SPC performance variable exists through MPI_T), and a veth's byte counters
 * see only the traffic between nodes, not the shared memory within one, and not per stage.
 *
 * What it counts, per rank (cumulative):
 *   p2p_bytes, p2p_msgs  bytes and messages this rank sends point to point (BLACS's and the
 *                        tiled algorithms' messages; count x MPI_Type_size, derived types too);
 *   coll_bytes, coll_n   bytes this rank must receive in collectives (a lower bound on the
 *                        wire, independent of the collective's algorithm): MPI_Bcast n on every
 *                        rank but the root, (All)reduce n on the ranks that get the result,
 *                        (All)gather(v) / alltoall(v) what comes from the other ranks;
 *   mpi_s                seconds inside the wrapped calls (waits included).
 * qmlpipe ends every stage with its agreement on errors (linalg/comm.c, qp_comm_agree: an
 * MPI_Iallreduce of one MPI_INT with MPI_MIN, then MPI_Wait); when such a wait returns, and at
 * MPI_Finalize, the rank appends "A wall_s p2p_bytes p2p_msgs coll_bytes coll_n mpi_s" to
 * $QP_MPI_BYTES_DIR/rank<R>.txt. Every rank takes part in every agreement, so the K-th "A" line
 * is the same moment of the run on every rank. Rank 0 prints "[qmlpipe] STAGE ..." when a stage
 * starts and "[qmlpipe] STAGE done in ..." when it ends (pipeline/run/driver.c); the interposer
 * sees these fprintf calls and appends "S STAGE K" / "E STAGE K", K the number of "A" lines
 * so far, and its own counters: a stage's traffic on any rank is its A line K_E minus its A line
 * K_S. Traffic between the last agreement and a stage's start (the distributed warm-up before
 * covariance_setup) falls into that stage on every rank but rank 0, whose S line has it. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double p2p_bytes, coll_bytes, mpi_s;
static long long p2p_msgs, coll_n, n_points;
static FILE *log_file;
static MPI_Request agree_request = MPI_REQUEST_NULL;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double type_bytes(int count, MPI_Datatype type) {
  int size = 0;
  if (type != MPI_DATATYPE_NULL) PMPI_Type_size(type, &size);
  return (double)count * (double)size;
}

static void open_log(void) {
  const char *dir = getenv("QP_MPI_BYTES_DIR");
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.txt", dir, rank);
  log_file = fopen(path, "w");
}

static void log_point(void) {
  if (!log_file) return;
  fprintf(log_file, "A %.6f %.0f %lld %.0f %lld %.6f\n", now(), p2p_bytes, p2p_msgs, coll_bytes,
          coll_n, mpi_s);
  ++n_points;
}

/* qmlpipe's stage lines (driver.c: "[qmlpipe] %s ...%s\n", "[qmlpipe] %s done in ..."). */
static void stage_mark(FILE *stream, const char *fmt, va_list ap) {
  if (!log_file || stream != stderr || strncmp(fmt, "[qmlpipe] %s ", 13) != 0) return;
  va_list copy;
  va_copy(copy, ap);
  const char *stage = va_arg(copy, const char *);
  va_end(copy);
  const int end = strncmp(fmt + 13, "done in", 7) == 0;
  if (end || strncmp(fmt + 13, "...", 3) == 0)
    fprintf(log_file, "%c %s %lld %.0f %lld %.0f %lld %.6f\n", end ? 'E' : 'S', stage, n_points,
            p2p_bytes, p2p_msgs, coll_bytes, coll_n, mpi_s);
}

int __vfprintf_chk(FILE *stream, int flag, const char *fmt, va_list ap);

int __fprintf_chk(FILE *stream, int flag, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  stage_mark(stream, fmt, ap);
  const int rc = __vfprintf_chk(stream, flag, fmt, ap);
  va_end(ap);
  return rc;
}

int fprintf(FILE *stream, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  stage_mark(stream, fmt, ap);
  const int rc = vfprintf(stream, fmt, ap);
  va_end(ap);
  return rc;
}

static int comm_size(MPI_Comm comm) {
  int n = 1;
  PMPI_Comm_size(comm, &n);
  return n;
}

static int comm_rank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

/* Time one call: `call` is evaluated between two clock readings. */
#define TIMED(call)                                                                                \
  do {                                                                                             \
    double t0_ = now();                                                                            \
    int rc_ = (call);                                                                              \
    mpi_s += now() - t0_;                                                                          \
    return rc_;                                                                                    \
  } while (0)

int MPI_Init(int *argc, char ***argv) {
  int rc = PMPI_Init(argc, argv);
  open_log();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  open_log();
  return rc;
}

int MPI_Finalize(void) {
  log_point();
  if (log_file) fclose(log_file);
  log_file = NULL;
  return PMPI_Finalize();
}

/* Point to point: the sender counts. */
#define SEND_COUNT(count, type)                                                                    \
  do {                                                                                             \
    p2p_bytes += type_bytes(count, type);                                                          \
    ++p2p_msgs;                                                                                    \
  } while (0)

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  SEND_COUNT(count, type);
  TIMED(PMPI_Send(buf, count, type, dest, tag, comm));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  SEND_COUNT(count, type);
  TIMED(PMPI_Ssend(buf, count, type, dest, tag, comm));
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  SEND_COUNT(count, type);
  TIMED(PMPI_Rsend(buf, count, type, dest, tag, comm));
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req) {
  SEND_COUNT(count, type);
  TIMED(PMPI_Isend(buf, count, type, dest, tag, comm, req));
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *req) {
  SEND_COUNT(count, type);
  TIMED(PMPI_Issend(buf, count, type, dest, tag, comm, req));
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request *req) {
  SEND_COUNT(count, type);
  TIMED(PMPI_Irsend(buf, count, type, dest, tag, comm, req));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status) {
  SEND_COUNT(scount, stype);
  TIMED(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm,
                      status));
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
  TIMED(PMPI_Recv(buf, count, type, source, tag, comm, status));
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
  const int agreement = agree_request != MPI_REQUEST_NULL && *req == agree_request;
  const double t0 = now();
  const int rc = PMPI_Wait(req, status);
  mpi_s += now() - t0;
  if (agreement) {
    agree_request = MPI_REQUEST_NULL;
    log_point();
  }
  return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  TIMED(PMPI_Waitall(n, reqs, statuses));
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
  TIMED(PMPI_Waitany(n, reqs, index, status));
}

/* Collectives: what this rank receives from the others. */
int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (comm_size(comm) > 1 && comm_rank(comm) != root) coll_bytes += type_bytes(count, type);
  ++coll_n;
  TIMED(PMPI_Bcast(buf, count, type, root, comm));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  if (comm_size(comm) > 1 && comm_rank(comm) == root) coll_bytes += type_bytes(count, type);
  ++coll_n;
  TIMED(PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  if (comm_size(comm) > 1) coll_bytes += type_bytes(count, type);
  ++coll_n;
  TIMED(PMPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *req) {
  if (comm_size(comm) > 1) coll_bytes += type_bytes(count, type);
  ++coll_n;
  const double t0 = now();
  const int rc = PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req);
  mpi_s += now() - t0;
  /* qmlpipe's agreement at the end of a stage (and at a few points between): logged when its
   * wait returns. */
  if (count == 1 && type == MPI_INT && op == MPI_MIN) agree_request = *req;
  return rc;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
  coll_bytes += type_bytes(rcount, rtype) * (comm_size(comm) - 1);
  ++coll_n;
  TIMED(PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm) {
  const int n = comm_size(comm), me = comm_rank(comm);
  for (int i = 0; i < n; ++i)
    if (i != me) coll_bytes += type_bytes(rcounts[i], rtype);
  ++coll_n;
  TIMED(PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (comm_rank(comm) == root) coll_bytes += type_bytes(rcount, rtype) * (comm_size(comm) - 1);
  ++coll_n;
  TIMED(PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm) {
  const int n = comm_size(comm), me = comm_rank(comm);
  if (me == root)
    for (int i = 0; i < n; ++i)
      if (i != me) coll_bytes += type_bytes(rcounts[i], rtype);
  ++coll_n;
  TIMED(PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (comm_rank(comm) != root) coll_bytes += type_bytes(rcount, rtype);
  ++coll_n;
  TIMED(PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (comm_rank(comm) != root) coll_bytes += type_bytes(rcount, rtype);
  ++coll_n;
  TIMED(PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm) {
  coll_bytes += type_bytes(rcount, rtype) * (comm_size(comm) - 1);
  ++coll_n;
  TIMED(PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm) {
  const int n = comm_size(comm), me = comm_rank(comm);
  for (int i = 0; i < n; ++i)
    if (i != me) coll_bytes += type_bytes(rcounts[i], rtype);
  ++coll_n;
  TIMED(PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}
