/* test_hostdev_linalg.c: the test backend hostdev (tests/support/hostdev.h) against the cpu
 * backend, and the budget's device-memory provider (budget/device_memory.h) it plugs into.
 *
 * Every operation of the table on random operands of awkward shapes (37 x 23, ...) gives the
 * cpu result bitwise (equal and finite: the NaN-aware test_util.h comparison with tolerance 0),
 * a failing one the cpu's status; operands that are views into a block work, a host matrix or
 * a pointer outside every block is refused naming the operation and the matrix. Upload and
 * download of a sub-block; host windows (READ, WRITE, READ_WRITE, close uploads, discard does
 * not, staging under "host staging" and freed); align and replicate into a cpu work matrix.
 * The device space: tracked device bytes equal the matrices' bytes exactly, the device meter
 * (builds without CUDA) reads hostdev's page-rounded mapped bytes; a block is freed by its own
 * provider after another is set; zero, unaddressable, unmappable and over-capacity requests
 * fail naming the term (the capacity set by the test hook QP_HOSTDEV_CAPACITY too, whose bad
 * values are refused naming it). A forked child that reads a device matrix's entry from the host
 * dies with SIGSEGV: fresh, after an operation, after a failed one, through a view. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "budget.h"
#include "device_memory.h"
#include "host_window.h"
#include "hostdev.h"
#include "matrix.h"
#include "meter_device.h"
#include "qp_config.h"
#include "test_util.h"

static const qp_linalg_ops *hostdev, *cpu;

/* The device bytes the live hostdev matrices of this test hold: asked for, and page-rounded. */
static size_t device_bytes, device_pages;

/* A fixed linear congruential generator (Knuth's MMIX constants): values in [-1, 1). */
static uint64_t lcg_state = 20261123;
static double lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(lcg_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static size_t page_round(size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (bytes + page - 1) / page * page;
}

static void must(qp_err err) {
  if (err == QP_OK) return;
  qp_error_print(stderr, 1);
  exit(1);
}

/* One matrix twice: on cpu and on hostdev, with the same entries. */
typedef struct twin {
  qp_matrix cpu, dev;
} twin;

static twin twin_make(const char *term, int64_t rows, int64_t cols) {
  twin t;
  char cpu_term[QP_TERM_NAME_MAX];
  snprintf(cpu_term, sizeof cpu_term, "cpu %s", term);
  must(qp_matrix_create(cpu, cpu_term, QP_TERM_TRANSIENT, rows, cols, &t.cpu));
  must(qp_matrix_create(hostdev, term, QP_TERM_TRANSIENT, rows, cols, &t.dev));
  TEST_ASSERT(t.dev.space == QP_SPACE_DEVICE && t.dev.ops == hostdev,
              "hostdev matrix '%s' in space %d", term, (int)t.dev.space);
  const size_t bytes = (size_t)(rows * cols) * sizeof(double);
  device_bytes += bytes;
  device_pages += bytes ? page_round(bytes) : 0;
  for (int64_t k = 0; k < rows * cols; ++k)
    t.cpu.data[k] = lcg();
  must(qp_linalg_upload(t.cpu.data, t.cpu.ld, &t.dev, 0, 0, rows, cols));
  return t;
}

static void twin_destroy(twin *t) {
  const size_t bytes = (size_t)(t->dev.rows * t->dev.cols) * sizeof(double);
  device_bytes -= bytes;
  device_pages -= bytes ? page_round(bytes) : 0;
  qp_matrix_destroy(&t->cpu);
  qp_matrix_destroy(&t->dev);
}

/* hostdev's entries equal cpu's bitwise (and are finite: a NaN fails the tolerance 0). */
static void twin_check(const char *what, const twin *t) {
  const int64_t n = t->cpu.rows * t->cpu.cols;
  double *got = malloc((size_t)(n > 0 ? n : 1) * sizeof *got);
  if (!got) exit(1);
  TEST_OK(qp_linalg_download(&t->dev, 0, 0, t->dev.rows, t->dev.cols, got,
                             t->dev.rows > 0 ? t->dev.rows : 1));
  TEST_WITHIN(qp_test_max_diff(got, t->cpu.data, (size_t)n, 1.0), 0.0,
              "%s: hostdev '%s' differs from cpu", what, t->dev.name);
  TEST_ASSERT(n == 0 || memcmp(got, t->cpu.data, (size_t)n * sizeof *got) == 0,
              "%s: hostdev '%s' is not bitwise cpu's", what, t->dev.name);
  free(got);
}

static void same_scalar(const char *what, double on_cpu, double on_hostdev) {
  TEST_WITHIN(fabs(on_cpu - on_hostdev), 0.0, "%s: cpu %.17g, hostdev %.17g", what, on_cpu,
              on_hostdev);
}

/* A forked child reads *p from the host: it must die of SIGSEGV (hostdev's guarantee). The
 * child restores the default action first, so that a sanitizer's handler (ASan reports a SEGV
 * and exits 1) does not stand between the fault and the kernel's signal. */
static void expect_host_read_faults(const char *what, const double *p) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGSEGV, &dfl, NULL);
    volatile double x = *(volatile const double *)p;
    (void)x;
    _exit(0);
  }
  int status = 0;
  TEST_ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid, "%s: fork/waitpid failed", what);
  TEST_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
              "%s: a host read of device memory did not die of SIGSEGV (status 0x%x)", what,
              (unsigned)status);
}

static void test_backend(void) {
  const qp_linalg_ops *o = NULL;
  TEST_OK(qp_linalg_backend("hostdev", &o));
  TEST_ASSERT(o && o == qp_linalg_hostdev_ops() && strcmp(o->name, "hostdev") == 0 &&
                  o->space == QP_SPACE_DEVICE && !o->distributed && !o->sum_partials,
              "hostdev lookup gave %p", (const void *)o);
  hostdev = o;
  cpu = qp_linalg_cpu_ops();
  TEST_ASSERT(qp_linalg_host_ops(hostdev) == cpu && qp_linalg_on_device(hostdev) &&
                  qp_linalg_moves_data(hostdev),
              "hostdev's host table, space or moves_data");
  TEST_ASSERT(qp_budget_device_memory_get() != NULL &&
                  strcmp(qp_budget_device_memory_get()->name, QP_HOSTDEV_DEVICE_NAME) == 0,
              "hostdev's provider is not the budget's device memory");
  TEST_OK(qp_linalg_backend("hostdev", &o)); /* idempotent */
  TEST_ASSERT(o == hostdev, "second lookup");
}

/* gemm in the four transpositions, syrk in both, on 37 x 23 / 23 x 29 shapes. */
static void test_products(void) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      twin a = ta ? twin_make("gemm A", 23, 37) : twin_make("gemm A", 37, 23);
      twin b = tb ? twin_make("gemm B", 29, 23) : twin_make("gemm B", 23, 29);
      twin c = twin_make("gemm C", 37, 29);
      TEST_OK(qp_linalg_gemm((qp_trans)ta, (qp_trans)tb, 0.7, &a.cpu, &b.cpu, 0.3, &c.cpu));
      TEST_OK(qp_linalg_gemm((qp_trans)ta, (qp_trans)tb, 0.7, &a.dev, &b.dev, 0.3, &c.dev));
      twin_check(ta ? (tb ? "gemm TT" : "gemm TN") : (tb ? "gemm NT" : "gemm NN"), &c);
      twin_check("gemm's A untouched", &a);
      twin_destroy(&c);
      twin_destroy(&b);
      twin_destroy(&a);
    }
  for (int t = 0; t < 2; ++t) {
    twin a = t ? twin_make("syrk A", 23, 37) : twin_make("syrk A", 37, 23);
    twin c = twin_make("syrk C", 37, 37);
    TEST_OK(qp_linalg_syrk((qp_trans)t, -1.3, &a.cpu, 0.5, &c.cpu));
    TEST_OK(qp_linalg_syrk((qp_trans)t, -1.3, &a.dev, 0.5, &c.dev));
    twin_check(t ? "syrk T" : "syrk N", &c);
    twin_destroy(&c);
    twin_destroy(&a);
  }
  twin a = twin_make("trace A", 37, 23), b = twin_make("trace B", 23, 37);
  double on_cpu = 0, on_dev = 1;
  TEST_OK(qp_linalg_trace_product(&a.cpu, &b.cpu, &on_cpu));
  TEST_OK(qp_linalg_trace_product(&a.dev, &b.dev, &on_dev));
  same_scalar("trace_product", on_cpu, on_dev);
  twin at = twin_make("transpose", 23, 37);
  TEST_OK(qp_linalg_transpose(&a.cpu, &at.cpu));
  TEST_OK(qp_linalg_transpose(&a.dev, &at.dev));
  twin_check("transpose", &at);
  twin up = twin_make("clear_upper", 37, 37);
  TEST_OK(qp_linalg_clear_upper(&up.cpu));
  TEST_OK(qp_linalg_clear_upper(&up.dev));
  twin_check("clear_upper", &up);
  TEST_ASSERT(up.cpu.data[3 + 5 * up.cpu.ld] == 0.0 && up.cpu.data[5 + 3 * up.cpu.ld] != 0.0 &&
                  up.cpu.data[4 + 4 * up.cpu.ld] != 0.0,
              "clear_upper: (3, 5) must be 0, (5, 3) and (4, 4) kept");
  TEST_ASSERT(qp_linalg_clear_upper(&at.cpu) == QP_ERR_INTERNAL, "clear_upper of a 23 x 37");
  qp_error_clear();
  twin_destroy(&up);
  twin s = twin_make("copy_sub B", 29, 31);
  TEST_OK(qp_linalg_copy_sub(11, 13, &a.cpu, 5, 7, &s.cpu, 3, 2));
  TEST_OK(qp_linalg_copy_sub(11, 13, &a.dev, 5, 7, &s.dev, 3, 2));
  twin_check("copy_sub", &s);
  TEST_OK(qp_linalg_norm1(&a.cpu, &on_cpu));
  TEST_OK(qp_linalg_norm1(&a.dev, &on_dev));
  same_scalar("norm1", on_cpu, on_dev);
  twin_destroy(&s);
  twin_destroy(&at);
  twin_destroy(&b);
  twin_destroy(&a);
}

/* An SPD twin: S S^T + n I from a random S, through the cpu backend, then uploaded. */
static twin make_spd(const char *term, int64_t n) {
  twin a = twin_make(term, n, n), s = twin_make("spd factor", n, n);
  TEST_OK(qp_linalg_syrk(QP_NOTRANS, 1.0, &s.cpu, 0.0, &a.cpu));
  for (int64_t i = 0; i < n; ++i)
    a.cpu.data[i + i * a.cpu.ld] += (double)n;
  TEST_OK(qp_linalg_upload(a.cpu.data, a.cpu.ld, &a.dev, 0, 0, n, n));
  twin_destroy(&s);
  return a;
}

/* potrf, pocon, potrs, potri (full on both), trtri, trmm and trsm in every side and
 * transposition; getrf, gecon, getrs. */
static void test_factorisations(void) {
  twin a = make_spd("potrf A", 37);
  double anorm_cpu = 0, anorm_dev = 1, rc_cpu = 0, rc_dev = 1;
  TEST_OK(qp_linalg_norm1(&a.cpu, &anorm_cpu));
  TEST_OK(qp_linalg_norm1(&a.dev, &anorm_dev));
  TEST_OK(qp_linalg_potrf(&a.cpu));
  TEST_OK(qp_linalg_potrf(&a.dev));
  twin_check("potrf", &a);
  TEST_OK(qp_linalg_pocon(&a.cpu, anorm_cpu, &rc_cpu));
  TEST_OK(qp_linalg_pocon(&a.dev, anorm_dev, &rc_dev));
  same_scalar("pocon", rc_cpu, rc_dev);
  twin b = twin_make("potrs B", 37, 23);
  TEST_OK(qp_linalg_potrs(&a.cpu, &b.cpu));
  TEST_OK(qp_linalg_potrs(&a.dev, &b.dev));
  twin_check("potrs", &b);
  for (int side = 0; side < 2; ++side)
    for (int trans = 0; trans < 2; ++trans)
      for (int solve = 0; solve < 2; ++solve) {
        twin x =
            side == QP_LEFT ? twin_make("triangular B", 37, 23) : twin_make("triangular B", 23, 37);
        qp_err (*f)(qp_side, qp_trans, double, const qp_matrix *, qp_matrix *) =
            solve ? qp_linalg_trsm : qp_linalg_trmm;
        TEST_OK(f((qp_side)side, (qp_trans)trans, 0.9, &a.cpu, &x.cpu));
        TEST_OK(f((qp_side)side, (qp_trans)trans, 0.9, &a.dev, &x.dev));
        char what[64];
        snprintf(what, sizeof what, "%s side %d trans %d", solve ? "trsm" : "trmm", side, trans);
        twin_check(what, &x);
        twin_destroy(&x);
      }
  /* potri on a copy of L: both results full and symmetric, bitwise equal. */
  twin inv = twin_make("potri", 37, 37);
  TEST_OK(qp_linalg_copy_sub(37, 37, &a.cpu, 0, 0, &inv.cpu, 0, 0));
  TEST_OK(qp_linalg_copy_sub(37, 37, &a.dev, 0, 0, &inv.dev, 0, 0));
  TEST_OK(qp_linalg_potri(&inv.cpu));
  TEST_OK(qp_linalg_potri(&inv.dev));
  twin_check("potri (full)", &inv);
  TEST_OK(qp_linalg_trtri(&a.cpu));
  TEST_OK(qp_linalg_trtri(&a.dev));
  twin_check("trtri", &a);
  twin_destroy(&inv);
  twin_destroy(&b);
  twin_destroy(&a);

  twin g = twin_make("getrf A", 37, 37), r = twin_make("getrs B", 37, 23);
  int piv_cpu[37], piv_dev[37];
  TEST_OK(qp_linalg_norm1(&g.cpu, &anorm_cpu));
  TEST_OK(qp_linalg_getrf(&g.cpu, piv_cpu));
  TEST_OK(qp_linalg_getrf(&g.dev, piv_dev));
  twin_check("getrf", &g);
  TEST_ASSERT(memcmp(piv_cpu, piv_dev, sizeof piv_cpu) == 0, "getrf pivots differ");
  TEST_OK(qp_linalg_gecon(&g.cpu, anorm_cpu, &rc_cpu));
  TEST_OK(qp_linalg_gecon(&g.dev, anorm_cpu, &rc_dev));
  same_scalar("gecon", rc_cpu, rc_dev);
  TEST_OK(qp_linalg_getrs(&g.cpu, piv_cpu, &r.cpu));
  TEST_OK(qp_linalg_getrs(&g.dev, piv_dev, &r.dev));
  twin_check("getrs", &r);
  const qp_linalg_ops *ops = g.dev.ops;
  twin_destroy(&r);
  twin_destroy(&g);
  /* The emulated library's own buffers (hostdev.h), held after the matrices are gone: the
   * largest factorisation's panel and getrf's pivots at order 37, as the table says. */
  qp_workspace need[QP_WORKSPACES_MAX];
  int count = 0;
  TEST_OK(qp_linalg_workspaces(ops, QP_OP_GETRF, 37, 0, need, &count));
  TEST_ASSERT(count == 2 && need[0].bytes == 37 * QP_HOSTDEV_WORKSPACE_COLUMNS * 8 &&
                  need[1].bytes == 37 * 8 && need[0].space == QP_SPACE_DEVICE,
              "hostdev's getrf workspaces: %d terms", count);
  const size_t held = (size_t)37 * QP_HOSTDEV_WORKSPACE_COLUMNS * 8 + 37 * 8;
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == held,
              "hostdev's workspaces: %zu tracked device bytes, expected %zu",
              qp_budget_current(QP_SPACE_DEVICE), held);
  qp_linalg_release_workspaces(ops);
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0,
              "hostdev's workspaces released: %zu device bytes left",
              qp_budget_current(QP_SPACE_DEVICE));
}

/* A failing operation returns the cpu's status and leaves the block inaccessible again; views
 * into a block work as operands; host matrices and stray pointers are refused. */
static void test_failures_and_views(void) {
  twin a = twin_make("not posdef", 37, 37); /* random: not positive definite */
  qp_err on_cpu = qp_linalg_potrf(&a.cpu);
  qp_error_clear();
  EXPECT_ERROR(qp_linalg_potrf(&a.dev), on_cpu, "not positive definite", "not posdef");
  TEST_ASSERT(on_cpu == QP_ERR_NOT_POSDEF, "cpu potrf of a random matrix: %d", (int)on_cpu);
  twin_check("failed potrf", &a);
  expect_host_read_faults("after a failed potrf", a.dev.data);

  /* gemm on 23 x 11 windows of bigger matrices, as views with the bigger leading dimension */
  twin big = twin_make("view parent", 37, 29);
  qp_matrix va[2], vb[2], vc[2];
  for (int k = 0; k < 2; ++k) {
    const qp_matrix *p = k ? &big.dev : &big.cpu;
    const qp_linalg_ops *o = k ? hostdev : cpu;
    TEST_OK(qp_matrix_view(o, "view A", p->data + 3 + 2 * p->ld, 23, 11, p->ld, &va[k]));
    TEST_OK(qp_matrix_view(o, "view B", p->data + 5 + 15 * p->ld, 11, 13, p->ld, &vb[k]));
    TEST_OK(qp_matrix_view(o, "view C", p->data + 1 + 14 * p->ld, 23, 13, p->ld, &vc[k]));
  }
  TEST_OK(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.5, &va[0], &vb[0], -0.5, &vc[0]));
  TEST_OK(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.5, &va[1], &vb[1], -0.5, &vc[1]));
  twin_check("gemm on views", &big);
  expect_host_read_faults("through a view", vc[1].data);

  /* a host operand, and a "device" view of host memory */
  EXPECT_ERROR(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &va[0], &vb[1], 0.0, &vc[1]),
               QP_ERR_INTERNAL, "hostdev gemm", "'view A' is in host memory");
  qp_matrix stray;
  TEST_OK(qp_matrix_view(hostdev, "stray", big.cpu.data, 29, 37, 29, &stray));
  EXPECT_ERROR(qp_linalg_trace_product(&big.dev, &stray, &(double){0}), QP_ERR_INTERNAL,
               "hostdev trace_product", "'stray'", "does not lie inside a live hostdev block");
  /* a view running past the end of its block (inside the block's last page) */
  qp_matrix past;
  TEST_OK(qp_matrix_view(hostdev, "past the end", big.dev.data + 20 * 37, 37, 10, 37, &past));
  EXPECT_ERROR(qp_linalg_norm1(&past, &(double){0}), QP_ERR_INTERNAL, "hostdev norm1",
               "'past the end'");
  twin_check("views after refusals", &big);
  expect_host_read_faults("after a refused operation", big.dev.data);
  twin_destroy(&big);
  twin_destroy(&a);
}

/* Upload of an 11 x 7 block at (5, 9) from a host array with ld 13, download with ld 17. */
static void test_copies(void) {
  twin m = twin_make("copies", 37, 23);
  double src[13 * 7], back[17 * 7];
  for (int k = 0; k < 13 * 7; ++k)
    src[k] = lcg();
  TEST_OK(qp_linalg_upload(src, 13, &m.dev, 5, 9, 11, 7));
  TEST_OK(qp_linalg_upload(src, 13, &m.cpu, 5, 9, 11, 7));
  twin_check("upload of a sub-block", &m);
  memset(back, 0, sizeof back);
  TEST_OK(qp_linalg_download(&m.dev, 5, 9, 11, 7, back, 17));
  for (int j = 0; j < 7; ++j)
    TEST_WITHIN(qp_test_max_diff(back + 17 * j, src + 13 * j, 11, 1.0), 0.0,
                "download of column %d of the block", j);
  EXPECT_ERROR(qp_linalg_download(&m.dev, 30, 0, 11, 7, back, 17), QP_ERR_INTERNAL, "'copies'");
  expect_host_read_faults("after upload and download", m.dev.data + 5 + 9 * 37);
  twin_destroy(&m);
}

static size_t staging_bytes(void) {
  for (int i = 0; i < qp_budget_term_count(); ++i) {
    const qp_term_stats *t = qp_budget_term(i);
    if (t->space == QP_SPACE_HOST && strcmp(t->name, QP_TERM_HOST_STAGING) == 0) return t->current;
  }
  return 0;
}

/* Windows over columns [4, 11) of a 37 x 23 matrix. */
static void test_host_windows(void) {
  twin m = twin_make("windowed", 37, 23);
  const size_t host_before = qp_budget_current(QP_SPACE_HOST);
  const size_t bytes = 37 * 7 * sizeof(double);
  TEST_ASSERT(qp_host_window_bytes(hostdev, 37, 7) == bytes &&
                  qp_host_window_bytes(cpu, 37, 7) == 0,
              "qp_host_window_bytes");
  qp_host_window w;
  TEST_OK(qp_host_window_read(&m.dev, 4, 7, &w));
  TEST_ASSERT(w.staged && w.ld == 37 && staging_bytes() == bytes &&
                  qp_budget_current(QP_SPACE_HOST) == host_before + bytes,
              "READ window: staged %d, staging %zu bytes", w.staged, staging_bytes());
  TEST_WITHIN(qp_test_max_diff(w.data, m.cpu.data + 4 * 37, 37 * 7, 1.0), 0.0, "READ window");
  TEST_OK(qp_host_window_close(&w));
  TEST_ASSERT(staging_bytes() == 0 && qp_budget_current(QP_SPACE_HOST) == host_before,
              "READ window's staging not freed: %zu", staging_bytes());

  TEST_OK(qp_host_window_open(&m.dev, 4, 7, QP_ACCESS_WRITE, &w));
  TEST_WITHIN(qp_test_max_abs(w.data, 37 * 7), 0.0, "a WRITE window starts from zeros");
  for (int k = 0; k < 37 * 7; ++k)
    w.data[k] = m.cpu.data[4 * 37 + k] = lcg();
  TEST_OK(qp_host_window_close(&w));
  twin_check("WRITE window uploaded at close", &m);

  TEST_OK(qp_host_window_open(&m.dev, 4, 7, QP_ACCESS_READ_WRITE, &w));
  for (int k = 0; k < 37 * 7; ++k)
    w.data[k] = m.cpu.data[4 * 37 + k] *= -2.0;
  TEST_OK(qp_host_window_close(&w));
  twin_check("READ_WRITE window uploaded at close", &m);

  TEST_OK(qp_host_window_open(&m.dev, 4, 7, QP_ACCESS_READ_WRITE, &w));
  for (int k = 0; k < 37 * 7; ++k)
    w.data[k] = 1e300;
  qp_host_window_discard(&w);
  twin_check("discarded window not uploaded", &m);
  TEST_ASSERT(staging_bytes() == 0 && qp_budget_current(QP_SPACE_HOST) == host_before,
              "discarded window's staging not freed: %zu", staging_bytes());
  EXPECT_ERROR(qp_host_window_open(&m.dev, 20, 7, QP_ACCESS_READ, &w), QP_ERR_INTERNAL,
               "'windowed'");

  /* A block of rows 5..16 of columns 2..8 (V^T's panels of rows): staged as 12 x 7, read,
   * written back to those rows only; on the cpu backend the matrix's own entries. */
  TEST_OK(qp_host_window_open_block(&m.dev, 5, 12, 2, 7, QP_ACCESS_READ_WRITE, &w));
  TEST_ASSERT(w.staged && w.ld == 12 && w.row0 == 5 && w.rows == 12 &&
                  staging_bytes() == 12 * 7 * sizeof(double),
              "block window: staged %d, ld %lld, staging %zu bytes", w.staged, (long long)w.ld,
              staging_bytes());
  double block_diff = 0.0;
  for (int k = 0; k < 7; ++k) {
    block_diff = qp_test_worst(
        block_diff, qp_test_max_diff(w.data + k * w.ld, m.cpu.data + 5 + (2 + k) * 37, 12, 1.0));
    for (int i = 0; i < 12; ++i)
      w.data[i + k * w.ld] = m.cpu.data[(5 + i) + (2 + k) * 37] = lcg();
  }
  TEST_WITHIN(block_diff, 0.0, "block window read");
  TEST_OK(qp_host_window_close(&w));
  twin_check("block window uploaded to its rows only", &m);
  qp_host_window hw;
  TEST_OK(qp_host_window_open_block(&m.cpu, 5, 12, 2, 7, QP_ACCESS_WRITE, &hw));
  TEST_ASSERT(!hw.staged && hw.data == m.cpu.data + 5 + 2 * 37 && hw.ld == 37,
              "a host matrix's block window is its own entries");
  TEST_OK(qp_host_window_close(&hw));
  EXPECT_ERROR(qp_host_window_open_block(&m.dev, 30, 8, 0, 1, QP_ACCESS_READ, &w),
               QP_ERR_INTERNAL, "rows 30..38 of 'windowed' (37 local rows)");
  TEST_ASSERT(staging_bytes() == 0 && qp_budget_current(QP_SPACE_HOST) == host_before,
              "block windows' staging not freed: %zu", staging_bytes());
  TEST_OK(qp_matrix_set_identity(&m.dev, 2.5));
  TEST_OK(qp_matrix_set_identity(&m.cpu, 2.5));
  twin_check("set_identity through a window", &m);
  twin_destroy(&m);
}

/* Align a 11 x 7 window of A at (2, 3) with positions (4, 5) of a 40 x 30 layout, and
 * replicate A: hostdev's (through a cpu work matrix) equal cpu's (index arithmetic). */
static void test_align_replicate(void) {
  twin a = twin_make("align A", 37, 23);
  qp_matrix layout, work;
  must(qp_matrix_create(cpu, "layout", QP_TERM_TRANSIENT, 40, 30, &layout));
  must(qp_matrix_create(qp_linalg_host_ops(hostdev), "align work", QP_TERM_TRANSIENT, 40, 30,
                        &work));
  qp_aligned on_cpu, on_dev;
  TEST_OK(qp_linalg_align(&a.cpu, 2, 3, 11, 7, &layout, 4, 5, NULL, &on_cpu));
  TEST_OK(qp_linalg_align(&a.dev, 2, 3, 11, 7, &layout, 4, 5, &work, &on_dev));
  double worst = 0.0;
  for (int64_t j = 5; j < 12; ++j)
    for (int64_t i = 4; i < 15; ++i)
      worst =
          qp_test_worst(worst, fabs(qp_aligned_at(&on_dev, i, j) - qp_aligned_at(&on_cpu, i, j)));
  TEST_WITHIN(worst, 0.0, "align of a hostdev window");
  EXPECT_ERROR(qp_linalg_align(&a.dev, 2, 3, 11, 7, &layout, 4, 5, NULL, &on_dev), QP_ERR_INTERNAL,
               "work matrix");
  qp_matrix_destroy(&work);
  must(qp_matrix_create(cpu, "replicate work", QP_TERM_TRANSIENT, 37, 23, &work));
  const double *whole_cpu = NULL, *whole_dev = NULL;
  TEST_OK(qp_linalg_replicate(&a.cpu, NULL, &whole_cpu));
  TEST_OK(qp_linalg_replicate(&a.dev, &work, &whole_dev));
  TEST_ASSERT(whole_dev == work.data, "replicate of a device matrix must give the work matrix");
  TEST_WITHIN(qp_test_max_diff(whole_dev, whole_cpu, 37 * 23, 1.0), 0.0, "replicate");
  qp_matrix_destroy(&work);
  qp_matrix_destroy(&layout);
  twin_destroy(&a);
}

/* Tracked device bytes and the device meter against the live matrices. */
static void check_device_bytes(const char *when) {
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == device_bytes,
              "%s: %zu tracked device bytes, the matrices hold %zu", when,
              qp_budget_current(QP_SPACE_DEVICE), device_bytes);
  TEST_ASSERT(qp_hostdev_mapped_bytes() == device_pages, "%s: hostdev mapped %zu, expected %zu",
              when, qp_hostdev_mapped_bytes(), device_pages);
#if QP_HAVE_CUDA
  /* With CUDA the device meter is cudaMemGetInfo's (meter_device.c), not hostdev's. */
#else
  qp_device_sample s;
  qp_meter_device_read(&s);
  TEST_ASSERT(s.baseline == 0 && s.used == (int64_t)device_pages && s.total > 0,
              "%s: device meter used %lld baseline %lld total %lld, expected %zu mapped", when,
              (long long)s.used, (long long)s.baseline, (long long)s.total, device_pages);
  TEST_ASSERT(strcmp(qp_meter_device_name(), QP_HOSTDEV_DEVICE_NAME) == 0, "meter name '%s'",
              qp_meter_device_name());
#endif
}

static void test_device_space(void) {
  /* the emulated library's buffers that earlier factorisations left (test_factorisations) */
  qp_linalg_release_workspaces(qp_linalg_hostdev_ops());
  check_device_bytes("at start");
  twin a = twin_make("space A", 37, 23), b = twin_make("space B", 1, 1),
       c = twin_make("space C", 0, 5);
  TEST_ASSERT(c.dev.data == NULL, "a 0 x 5 device matrix has no block");
  check_device_bytes("three matrices");
  expect_host_read_faults("a fresh device matrix", a.dev.data);
  expect_host_read_faults("another fresh device matrix", b.dev.data);
  twin_destroy(&b);
  check_device_bytes("after a destroy");

  /* The provider's refusals, each naming the term; nothing is tracked or mapped for them. */
  const qp_device_memory *provider = qp_budget_device_memory_get();
  void *p = &p;
  EXPECT_ERROR(provider->alloc("empty block", 0, &p), QP_ERR_INTERNAL, "'empty block'", "0 bytes");
  TEST_ASSERT(p == NULL, "a refused allocation left a pointer");
  TEST_OK(qp_budget_alloc("zero bytes", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, 0, &p));
  TEST_ASSERT(p == NULL, "0 device bytes gave a block");
  EXPECT_ERROR(
      qp_budget_alloc("unaddressable", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, SIZE_MAX - 7, &p),
      QP_ERR_NOMEM, "'unaddressable'", "cannot be addressed");
  EXPECT_ERROR(
      qp_budget_alloc("beyond mmap", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, (size_t)1 << 60, &p),
      QP_ERR_NOMEM, "out of device memory", "'beyond mmap'", "mmap");
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  /* The capacity from the test hook QP_HOSTDEV_CAPACITY (read by qp_hostdev_init) */
  const char *bad[] = {"12x", "-5", "", "4KK", "99999999999999G"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
    setenv("QP_HOSTDEV_CAPACITY", bad[k], 1);
    EXPECT_ERROR(qp_hostdev_init(), QP_ERR_INPUT, "QP_HOSTDEV_CAPACITY", bad[k]);
  }
  setenv("QP_HOSTDEV_CAPACITY", "3K", 1); /* below what is mapped already */
  TEST_OK(qp_hostdev_init());
  EXPECT_ERROR(qp_budget_alloc("past 3K", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, 1, &p), QP_ERR_NOMEM,
               "'past 3K'", "capacity is 3072 bytes");
  char capacity[32];
  snprintf(capacity, sizeof capacity, "%zu", qp_hostdev_mapped_bytes() + page);
  setenv("QP_HOSTDEV_CAPACITY", capacity, 1);
  TEST_OK(qp_hostdev_init());
  unsetenv("QP_HOSTDEV_CAPACITY");
  EXPECT_ERROR(qp_budget_alloc("over capacity", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, page + 1, &p),
               QP_ERR_NOMEM, "out of device memory", "'over capacity'", "capacity");
  TEST_OK(qp_budget_alloc("at capacity", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, page, &p));
  device_bytes += page;
  device_pages += page;
  check_device_bytes("at capacity");
#if !QP_HAVE_CUDA
  qp_device_sample s;
  qp_meter_device_read(&s);
  TEST_ASSERT(s.total == (int64_t)(device_pages), "meter total %lld, capacity %zu",
              (long long)s.total, device_pages);
#endif
  qp_budget_free(p);
  device_bytes -= page;
  device_pages -= page;
  qp_hostdev_set_capacity(0);
  check_device_bytes("after the refusals");

#if !QP_HAVE_CUDA
  /* No provider: the device space is unsupported, as before hostdev; a hostdev block is still
   * freed by hostdev. */
  qp_budget_device_memory_set(NULL);
  EXPECT_ERROR(qp_budget_alloc("no provider", QP_TERM_TRANSIENT, QP_SPACE_DEVICE, 8, &p),
               QP_ERR_UNSUPPORTED, "'no provider'", "-DQP_ENABLE_CUDA=ON");
  twin_destroy(&a);
  check_device_bytes("freed with no provider set");
  TEST_OK(qp_hostdev_init());
#else
  twin_destroy(&a);
#endif
  twin_destroy(&c);
  check_device_bytes("at the end");
}

int main(void) {
  test_backend();
  if (!hostdev) return 1;
  test_products();
  test_factorisations();
  test_failures_and_views();
  test_copies();
  test_host_windows();
  test_align_replicate();
  test_device_space();
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0 && qp_budget_current(QP_SPACE_DEVICE) == 0,
              "%zu host and %zu device bytes still live", qp_budget_current(QP_SPACE_HOST),
              qp_budget_current(QP_SPACE_DEVICE));
  if (qp_budget_current(QP_SPACE_HOST) || qp_budget_current(QP_SPACE_DEVICE))
    qp_budget_dump_live(stderr);
  if (qp_test_failures == 0) printf("test_hostdev_linalg: all checks passed\n");
  return TEST_RETURN();
}
