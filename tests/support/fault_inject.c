/* fault_inject.c: the QP_FAULT, QP_TEST_STOP_AFTER_STAGE and QP_TEST_TRUNCATE_AFTER_STAGE test
 * hooks (base/fault.h): the test library's, installed by test_support.c into the hooks of
 * base/test_hooks.h, which qmlpipe leaves empty. */
#include "test_support_private.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "fault.h"

/* The sites a fault can name: each appears at exactly one kind of call. */
static const struct {
  qp_fault_kind kind;
  const char *name;
} qp_fault_sites[] = {
    {QP_FAULT_LAPACK, "dpotrf"},        {QP_FAULT_LAPACK, "dpotri"},
    {QP_FAULT_LAPACK, "dtrtri"},        {QP_FAULT_LAPACK, "dgetrf"},
    {QP_FAULT_LAPACK, "pdpotrf"},       {QP_FAULT_LAPACK, "pdtrtri"},
    {QP_FAULT_LAPACK, "pdgetrf"},       {QP_FAULT_HDF5, "matrix_read"},
    {QP_FAULT_HDF5, "results_write"},   {QP_FAULT_HDF5, "report_write"},
};
enum { QP_FAULT_SITES = sizeof qp_fault_sites / sizeof qp_fault_sites[0] };

static const char *const qp_fault_kind_names[] = {"alloc", "lapack", "hdf5"};

static struct {
  int count_only;      /* QP_FAULT=count */
  qp_fault_kind kind;  /* what fails */
  int site;            /* index into qp_fault_sites (lapack, hdf5) */
  long nth;            /* which call of it, from 1 */
  int rank;            /* this process's rank */
  long allocs;         /* tracked allocations so far */
  long calls[QP_FAULT_SITES];
  int injected;
  char injected_at[160]; /* the term or site and the stage where it was injected */
  char spec[128];
} qp_fault;

/* A whole number >= min at text (*end after it); QP_ERR_INPUT in *err otherwise. */
static long qp_fault_number(const char *text, long min, const char *what, const char *spec,
                            char **end, qp_err *err) {
  errno = 0;
  long v = strtol(text, end, 10);
  if (*end == text || errno != 0 || v < min || v > 1000000000L) {
    *err = qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__,
                        "QP_FAULT='%s': the %s must be a whole number from %ld", spec, what, min);
    return -1;
  }
  return v;
}

qp_err qp_fault_inject_init(int rank) {
  const char *value = getenv("QP_FAULT");
  memset(&qp_fault, 0, sizeof qp_fault);
  qp_fault_on = 0;
  qp_fault.rank = rank; /* also for qp_fault_stop_after_stage, with QP_FAULT unset */
  if (!value || !value[0]) return QP_OK;
  QP_CHECK(strlen(value) < sizeof qp_fault.spec, QP_ERR_INPUT, "QP_FAULT is longer than %zu "
           "characters", sizeof qp_fault.spec - 1);
  snprintf(qp_fault.spec, sizeof qp_fault.spec, "%s", value);
  qp_fault.nth = 1;
  if (strcmp(value, "count") == 0) {
    qp_fault.count_only = 1;
    qp_fault_on = 1;
    return QP_OK;
  }
  /* KIND:WHAT[:N][@R] */
  char text[128];
  snprintf(text, sizeof text, "%s", value);
  int target = -1;
  char *at = strchr(text, '@');
  qp_err err = QP_OK;
  if (at) {
    *at = '\0';
    char *end = NULL;
    target = (int)qp_fault_number(at + 1, 0, "rank", value, &end, &err);
    if (err != QP_OK) return err;
    QP_CHECK(*end == '\0', QP_ERR_INPUT, "QP_FAULT='%s': nothing may follow the rank", value);
  }
  char *colon = strchr(text, ':');
  QP_CHECK(colon, QP_ERR_INPUT,
           "QP_FAULT='%s': expected count, alloc:N, lapack:NAME[:N] or hdf5:NAME[:N], each "
           "with an optional @RANK",
           value);
  *colon = '\0';
  const char *kind = text, *what = colon + 1;
  int k = 0;
  while (k < 3 && strcmp(kind, qp_fault_kind_names[k]) != 0) ++k;
  QP_CHECK(k < 3, QP_ERR_INPUT, "QP_FAULT='%s': unknown kind '%s' (alloc, lapack or hdf5)", value,
           kind);
  qp_fault.kind = (qp_fault_kind)k;
  char *end = NULL;
  if (qp_fault.kind == QP_FAULT_ALLOC) {
    qp_fault.nth = qp_fault_number(what, 1, "allocation number", value, &end, &err);
    if (err != QP_OK) return err;
    QP_CHECK(*end == '\0', QP_ERR_INPUT, "QP_FAULT='%s': alloc takes one number", value);
  } else {
    char *nth = strchr(what, ':');
    if (nth) {
      *nth = '\0';
      qp_fault.nth = qp_fault_number(nth + 1, 1, "call number", value, &end, &err);
      if (err != QP_OK) return err;
      QP_CHECK(*end == '\0', QP_ERR_INPUT, "QP_FAULT='%s': trailing characters", value);
    }
    qp_fault.site = -1;
    for (int s = 0; s < QP_FAULT_SITES; ++s)
      if (qp_fault_sites[s].kind == qp_fault.kind && strcmp(qp_fault_sites[s].name, what) == 0)
        qp_fault.site = s;
    QP_CHECK(qp_fault.site >= 0, QP_ERR_INPUT,
             "QP_FAULT='%s': no %s site '%s' (lapack: dpotrf dpotri dtrtri dgetrf pdpotrf pdtrtri "
             "pdgetrf; hdf5: matrix_read results_write report_write)",
             value, kind, what);
  }
  /* Only the chosen rank injects; every rank still counts and reports. */
  qp_fault_on = 1;
  if (target >= 0 && target != rank) qp_fault.nth = 0;
  return QP_OK;
}

static void qp_fault_note(const char *what) {
  snprintf(qp_fault.injected_at, sizeof qp_fault.injected_at, "%.80s in stage '%.40s'", what,
           qp_stage_label());
  qp_fault.injected = 1;
}

int qp_fault_inject_alloc(const char *term) {
  const long n = __atomic_add_fetch(&qp_fault.allocs, 1, __ATOMIC_RELAXED);
  if (qp_fault.count_only) {
    fprintf(stderr, "qp_fault: rank %d: alloc %ld term '%s' stage '%s'\n", qp_fault.rank, n, term,
            qp_stage_label());
    return 0;
  }
  if (qp_fault.kind != QP_FAULT_ALLOC || n != qp_fault.nth) return 0;
  char what[96];
  snprintf(what, sizeof what, "term '%.48s'", term);
  qp_fault_note(what);
  return 1;
}

int qp_fault_inject_call(qp_fault_kind kind, const char *name) {
  int s = 0;
  while (s < QP_FAULT_SITES && !(qp_fault_sites[s].kind == kind &&
                                 strcmp(qp_fault_sites[s].name, name) == 0))
    ++s;
  if (s == QP_FAULT_SITES) return 0; /* a site missing from the table: a test would see it */
  const long n = __atomic_add_fetch(&qp_fault.calls[s], 1, __ATOMIC_RELAXED);
  if (qp_fault.count_only) {
    fprintf(stderr, "qp_fault: rank %d: %s %s call %ld stage '%s'\n", qp_fault.rank,
            qp_fault_kind_names[kind], name, n, qp_stage_label());
    return 0;
  }
  if (qp_fault.kind != kind || s != qp_fault.site || n != qp_fault.nth) return 0;
  qp_fault_note(name);
  return 1;
}

/* QP_TEST_TRUNCATE_AFTER_STAGE=<stage>:<file>: when the stage that just ended is <stage>, rank 0
 * cuts <file> to half its size once every rank has ended it, and every rank meets again before
 * going on: a file the run has read and reads again later (a map: inputs_maps.c) damaged
 * between the two, as another process would (tests/pipeline/test_map_reread_cli.c). */
static void qp_fault_truncate_after_stage(const char *stage, qp_err (*agree)(qp_err)) {
  const char *hook = getenv("QP_TEST_TRUNCATE_AFTER_STAGE");
  const char *colon = hook ? strchr(hook, ':') : NULL;
  if (!colon || strlen(stage) != (size_t)(colon - hook) || strncmp(hook, stage, strlen(stage)))
    return;
  const char *path = colon + 1;
  if (agree) (void)agree(QP_OK);
  if (qp_fault.rank == 0) {
    struct stat st;
    const int cut = stat(path, &st) == 0 && truncate(path, st.st_size / 2) == 0;
    fprintf(stderr, "[qmlpipe] QP_TEST_TRUNCATE_AFTER_STAGE: '%s' %s after %s (test hook)\n", path,
            cut ? "cut to half its size" : "could not be cut", stage);
  }
  fflush(NULL);
  if (agree) (void)agree(QP_OK);
}

void qp_fault_inject_stage_ended(const char *stage, qp_err (*agree)(qp_err)) {
  qp_fault_truncate_after_stage(stage, agree);
  const char *hook = getenv("QP_TEST_STOP_AFTER_STAGE");
  if (!hook || strcmp(hook, stage) != 0) return;
  /* Every rank has written the stage's checkpoint before any is stopped. */
  if (agree) (void)agree(QP_OK);
  if (qp_fault.rank == 0)
    fprintf(stderr, "[qmlpipe] QP_TEST_STOP_AFTER_STAGE: SIGTERM after %s (test hook)\n", stage);
  fflush(NULL);
  raise(SIGTERM);
}

void qp_fault_inject_report(FILE *out) {
  if (!qp_fault_on) return;
  const int r = qp_fault.rank;
  if (qp_fault.count_only) {
    fprintf(out, "qp_fault: rank %d: %ld allocations\n", r, qp_fault.allocs);
    for (int s = 0; s < QP_FAULT_SITES; ++s)
      if (qp_fault.calls[s] > 0)
        fprintf(out, "qp_fault: rank %d: %s %s %ld calls\n", r,
                qp_fault_kind_names[qp_fault_sites[s].kind], qp_fault_sites[s].name,
                qp_fault.calls[s]);
  } else if (qp_fault.injected) {
    fprintf(out, "qp_fault: rank %d: injected %s at %s\n", r, qp_fault.spec,
            qp_fault.injected_at);
  } else {
    fprintf(out, "qp_fault: rank %d: %s not reached on this rank\n", r, qp_fault.spec);
  }
  fprintf(out, "qp_fault: rank %d: live tracked bytes at exit: %zu\n", r,
          qp_budget_current(QP_SPACE_HOST));
  fflush(out);
}
