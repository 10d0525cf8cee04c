/* comm.c: MPI collectives for the pipeline, or one rank without MPI (comm.h). */
#include "comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "qp_config.h"

/* The host name once read (qp_comm_host). */
static char qp_host[QP_COMM_HOST_MAX];

static void qp_host_set(const char *name) {
  snprintf(qp_host, sizeof qp_host, "%s", name && name[0] ? name : "unknown");
}

#if QP_HAVE_MPI
#include <mpi.h>

static int qp_started = 0; /* 1: qp_comm_init called MPI_Init_thread */
static int qp_rank = 0, qp_size = 1, qp_node_size = 1;
/* qp_comm_agree's own communicator: its nonblocking reduction can never be matched with a
 * collective of a stage that the other ranks are still inside (a rank that failed alone used
 * to pair its agreement with rank 0's broadcast of the maps, leave, and leave rank 0 waiting). */
static MPI_Comm qp_agree_comm = MPI_COMM_NULL;

/* Launched by an MPI launcher: Open MPI's mpiexec, PMIx (srun --mpi=pmix) or PMI-1/2. A plain
 * `qmlpipe run` does not start MPI: that keeps a laptop or a login node free of its cost. */
static int qp_launched_by_mpi(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i)
    if (getenv(vars[i])) return 1;
  return 0;
}

qp_err qp_comm_init(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!qp_launched_by_mpi()) return QP_OK;
    int provided = 0;
    /* Only the main thread calls MPI; OpenMP threads compute between the calls. */
    QP_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS, QP_ERR_MPI,
             "MPI_Init_thread failed");
    qp_started = 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &qp_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &qp_size);
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_size(node, &qp_node_size);
    MPI_Comm_free(&node);
  }
  QP_CHECK(qp_agree_comm != MPI_COMM_NULL ||
               MPI_Comm_dup(MPI_COMM_WORLD, &qp_agree_comm) == MPI_SUCCESS,
           QP_ERR_MPI, "MPI_Comm_dup of MPI_COMM_WORLD failed");
  return QP_OK;
}

void qp_comm_finalize(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && qp_agree_comm != MPI_COMM_NULL) MPI_Comm_free(&qp_agree_comm);
  if (qp_started && !finalized) MPI_Finalize();
  qp_started = 0;
}

int qp_comm_active(void) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int qp_comm_rank(void) { return qp_comm_active() ? qp_rank : 0; }
int qp_comm_size(void) { return qp_comm_active() ? qp_size : 1; }
int qp_comm_node_size(void) { return qp_comm_active() ? qp_node_size : 1; }

const char *qp_comm_host(void) {
  if (!qp_host[0]) {
    char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int len = 0;
    if (qp_comm_active() && MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0)
      name[len < MPI_MAX_PROCESSOR_NAME ? len : MPI_MAX_PROCESSOR_NAME] = '\0';
    else if (gethostname(name, sizeof name - 1) != 0)
      name[0] = '\0';
    qp_host_set(name);
  }
  return qp_host;
}

qp_err qp_comm_allgather_bytes(const void *mine, void *all, size_t bytes) {
  if (!qp_comm_active() || qp_size == 1) {
    memmove(all, mine, bytes);
    return QP_OK;
  }
  QP_CHECK(bytes < (size_t)INT32_MAX, QP_ERR_INTERNAL, "allgather of %zu bytes", bytes);
  QP_CHECK(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) ==
               MPI_SUCCESS,
           QP_ERR_MPI, "MPI_Allgather of %zu bytes failed", bytes);
  return QP_OK;
}

qp_err qp_comm_bcast_from(void *buf, size_t bytes, int root) {
  if (!qp_comm_active() || qp_size == 1) return QP_OK;
  QP_CHECK(bytes < (size_t)INT32_MAX && root >= 0 && root < qp_size, QP_ERR_INTERNAL,
           "broadcast of %zu bytes from rank %d of %d", bytes, root, qp_size);
  QP_CHECK(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS, QP_ERR_MPI,
           "MPI_Bcast of %zu bytes from rank %d failed", bytes, root);
  return QP_OK;
}

/* MPI counts are int: large buffers go in pieces. */
enum { QP_MPI_PIECE = 1 << 28 };

static qp_err qp_comm_reduce(double *x, int64_t count, MPI_Op op) {
  if (!qp_comm_active() || qp_size == 1) return QP_OK;
  for (int64_t at = 0; at < count; at += QP_MPI_PIECE) {
    int n = (int)(count - at < QP_MPI_PIECE ? count - at : QP_MPI_PIECE);
    QP_CHECK(MPI_Allreduce(MPI_IN_PLACE, x + at, n, MPI_DOUBLE, op, MPI_COMM_WORLD) == MPI_SUCCESS,
             QP_ERR_MPI, "MPI_Allreduce of %lld doubles failed", (long long)count);
  }
  return QP_OK;
}

qp_err qp_comm_sum(double *x, int64_t count) { return qp_comm_reduce(x, count, MPI_SUM); }
qp_err qp_comm_max(double *x, int64_t count) { return qp_comm_reduce(x, count, MPI_MAX); }

qp_err qp_comm_bcast(void *buf, size_t bytes) {
  if (!qp_comm_active() || qp_size == 1) return QP_OK;
  for (size_t at = 0; at < bytes; at += QP_MPI_PIECE) {
    int n = (int)(bytes - at < QP_MPI_PIECE ? bytes - at : QP_MPI_PIECE);
    QP_CHECK(MPI_Bcast((char *)buf + at, n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS, QP_ERR_MPI,
             "MPI_Bcast of %zu bytes failed", bytes);
  }
  return QP_OK;
}

qp_err qp_comm_allgather(const double *mine, double *all, int64_t count) {
  if (!qp_comm_active() || qp_size == 1) {
    memmove(all, mine, (size_t)count * sizeof *all);
    return QP_OK;
  }
  QP_CHECK(count < QP_MPI_PIECE, QP_ERR_INTERNAL, "allgather of %lld doubles", (long long)count);
  QP_CHECK(MPI_Allgather(mine, (int)count, MPI_DOUBLE, all, (int)count, MPI_DOUBLE,
                         MPI_COMM_WORLD) == MPI_SUCCESS,
           QP_ERR_MPI, "MPI_Allgather failed");
  return QP_OK;
}

qp_err qp_comm_allgatherv(const double *mine, double *all, const int64_t *counts) {
  if (!qp_comm_active() || qp_size == 1) {
    memmove(all, mine, (size_t)counts[0] * sizeof *all);
    return QP_OK;
  }
  int64_t total = 0;
  for (int r = 0; r < qp_size; ++r)
    total += counts[r];
  QP_CHECK(total < INT32_MAX, QP_ERR_INTERNAL,
           "allgatherv of %lld doubles: more than MPI's int counts", (long long)total);
  int *sizes = malloc(2 * (size_t)qp_size * sizeof *sizes);
  QP_CHECK(sizes, QP_ERR_NOMEM, "allgatherv: no memory for %d counts", qp_size);
  int *displs = sizes + qp_size;
  for (int r = 0, at = 0; r < qp_size; at += sizes[r], ++r) {
    sizes[r] = (int)counts[r];
    displs[r] = at;
  }
  const int ok = MPI_Allgatherv(mine, sizes[qp_rank], MPI_DOUBLE, all, sizes, displs, MPI_DOUBLE,
                                MPI_COMM_WORLD) == MPI_SUCCESS;
  free(sizes);
  QP_CHECK(ok, QP_ERR_MPI, "MPI_Allgatherv of %lld doubles failed", (long long)total);
  return QP_OK;
}

double qp_comm_agree_grace(void) {
  const char *text = getenv("QP_AGREE_GRACE_SECONDS");
  char *end = NULL;
  const double v = text && text[0] ? strtod(text, &end) : -1.0;
  return end && *end == '\0' && v >= 0.0 && v <= 3600.0 ? v : QP_COMM_AGREE_GRACE_DEFAULT;
}

/* A failed rank waits for the others at the agreement for the grace period; 0 when they did
 * not all come (some are inside a collective that waits for this rank). */
static int qp_comm_wait_grace(MPI_Request *request) {
  const double grace = qp_comm_agree_grace();
  const struct timespec pause = {0, 1000000}; /* 1 ms */
  const double start = qp_clock_seconds();
  for (;;) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return 1;
    if (qp_clock_seconds() - start > grace) return 0;
    nanosleep(&pause, NULL);
  }
}

qp_err qp_comm_agree(qp_err err) {
  if (!qp_comm_active() || qp_size == 1) return err;
  /* The lowest failing rank tells its code and message to everyone. A rank that succeeded
   * waits for the others as long as they take; one that failed waits the grace period, then
   * says its error itself and ends the job: the others may be inside a collective that needs
   * this rank, which it will never enter. */
  int mine = err != QP_OK ? qp_rank : qp_size, first = qp_size;
  /* (MPI started by someone else than qp_comm_init: no communicator of our own.) */
  MPI_Comm comm = qp_agree_comm != MPI_COMM_NULL ? qp_agree_comm : MPI_COMM_WORLD;
  MPI_Request request;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &request);
  if (err == QP_OK)
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  else if (!qp_comm_wait_grace(&request)) {
    const int status = qp_err_exit_status(err);
    fprintf(stderr, "qmlpipe: rank %d: error (%s): %s\n", qp_rank, qp_err_name(err),
            qp_error_message());
    fprintf(stderr,
            "qmlpipe: rank %d: the other ranks did not reach the agreement on errors "
            "within %.1f s (they wait inside a collective): ending the job, exit "
            "status %d\n",
            qp_rank, qp_comm_agree_grace(), status);
    qp_comm_abort(status);
  }
  if (first == qp_size) return QP_OK;
  char message[1024] = "";
  int code = (int)err;
  if (qp_rank == first) snprintf(message, sizeof message, "%s", qp_error_message());
  MPI_Bcast(&code, 1, MPI_INT, first, comm);
  MPI_Bcast(message, (int)sizeof message, MPI_CHAR, first, comm);
  if (qp_rank != first)
    return qp_error_set((qp_err)code, __FILE__, __LINE__, __func__, "(rank %d) %s", first, message);
  return err;
}

void qp_comm_abort(int status) {
  fflush(stdout);
  fflush(stderr);
  if (qp_comm_active()) MPI_Abort(MPI_COMM_WORLD, status);
  _exit(status);
}

#else /* one rank */

qp_err qp_comm_init(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return QP_OK;
}
void qp_comm_finalize(void) {}
int qp_comm_active(void) { return 0; }
int qp_comm_rank(void) { return 0; }
int qp_comm_size(void) { return 1; }
int qp_comm_node_size(void) { return 1; }
const char *qp_comm_host(void) {
  if (!qp_host[0]) {
    char name[QP_COMM_HOST_MAX] = "";
    if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
    qp_host_set(name);
  }
  return qp_host;
}
qp_err qp_comm_allgather_bytes(const void *mine, void *all, size_t bytes) {
  memmove(all, mine, bytes);
  return QP_OK;
}
qp_err qp_comm_bcast_from(void *buf, size_t bytes, int root) {
  (void)buf;
  (void)bytes;
  (void)root;
  return QP_OK;
}
qp_err qp_comm_sum(double *x, int64_t count) {
  (void)x;
  (void)count;
  return QP_OK;
}
qp_err qp_comm_max(double *x, int64_t count) {
  (void)x;
  (void)count;
  return QP_OK;
}
qp_err qp_comm_bcast(void *buf, size_t bytes) {
  (void)buf;
  (void)bytes;
  return QP_OK;
}
qp_err qp_comm_allgather(const double *mine, double *all, int64_t count) {
  memmove(all, mine, (size_t)count * sizeof *all);
  return QP_OK;
}
qp_err qp_comm_allgatherv(const double *mine, double *all, const int64_t *counts) {
  memmove(all, mine, (size_t)counts[0] * sizeof *all);
  return QP_OK;
}
qp_err qp_comm_agree(qp_err err) { return err; }
double qp_comm_agree_grace(void) { return QP_COMM_AGREE_GRACE_DEFAULT; }
void qp_comm_abort(int status) {
  fflush(stdout);
  fflush(stderr);
  _exit(status);
}

#endif
