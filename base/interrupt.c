/* interrupt.c: see interrupt.h. Everything the handler reads is static memory, written
 * before it is published (a signal fence, then the count or flag that makes it visible). */
#include "interrupt.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "clock.h"
#include "test_hooks.h"

enum { QP_INT_DEPTH = 8, QP_INT_NAME = 64, QP_INT_DONE = 512, QP_INT_HINT = 512 };

static char qp_int_names[QP_INT_DEPTH][QP_INT_NAME];
static double qp_int_starts[QP_INT_DEPTH]; /* qp_clock_seconds */
static volatile sig_atomic_t qp_int_depth = 0;
static int qp_int_overflow = 0; /* pushes beyond QP_INT_DEPTH, not recorded */
static char qp_int_done[QP_INT_DONE];  /* finished top-level stages, ", "-separated */
static char qp_int_hint[2][QP_INT_HINT]; /* two buffers: one is written while the other shows */
static volatile sig_atomic_t qp_int_hint_at = -1; /* the one shown; -1: the default */
static double qp_int_t0;
static volatile sig_atomic_t qp_int_rank = 0;
static volatile sig_atomic_t qp_int_installed = 0;
static atomic_int qp_int_handling = 0;

/* Every signal whose default action ends the process and that reaches a batch job or a
 * terminal in practice: Ctrl-C and Ctrl-\, a closed terminal or ssh session (SIGHUP), scancel
 * and time limits (SIGTERM), Slurm's --signal (any name; USR1 and USR2 the usual), a CPU-time
 * limit, a timer someone armed (alarm, setitimer; qmlpipe arms none). Not here: SIGPROF (a
 * profiler's own timer), the faults of a bug (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
 * SIGTRAP, SIGSYS: their core and the sanitizers' report matter more; the next run on the
 * output removes what they leave), SIGKILL and SIGSTOP (cannot be caught), SIGPIPE and SIGXFSZ
 * (ignored, qp_int_ignored). */
static const int qp_int_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,  SIGUSR1,
                                     SIGUSR2, SIGALRM, SIGXCPU, SIGVTALRM};
/* Ignored, so that the write that would raise them fails instead (EPIPE, EFBIG) and the
 * writer's own error path reports the file, removes its temporary and exits 8: a file over
 * `ulimit -f`, standard output into a pipe whose reader is gone. Sent by kill, they do nothing. */
static const int qp_int_ignored[] = {SIGPIPE, SIGXFSZ};

/* ---- async-signal-safe text ---- */

typedef struct qp_int_text {
  char buf[4096];
  size_t len;
} qp_int_text;

static void qp_int_put(qp_int_text *t, const char *s) {
  while (s && *s && t->len + 1 < sizeof t->buf) t->buf[t->len++] = *s++;
}

static void qp_int_put_u(qp_int_text *t, unsigned long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n < (int)sizeof digits);
  while (n > 0 && t->len + 1 < sizeof t->buf) t->buf[t->len++] = digits[--n];
}

/* Seconds from `from` (qp_clock_seconds) to now, with one decimal. */
static void qp_int_put_seconds(qp_int_text *t, double from) {
  long long tenths = (long long)((qp_clock_seconds() - from) * 10.0);
  if (tenths < 0) tenths = 0;
  qp_int_put_u(t, (unsigned long)(tenths / 10));
  qp_int_put(t, ".");
  qp_int_put_u(t, (unsigned long)(tenths % 10));
  qp_int_put(t, " s");
}

static const char *qp_int_signal_name(int sig) {
  switch (sig) {
  case SIGHUP: return "SIGHUP";
  case SIGINT: return "SIGINT";
  case SIGQUIT: return "SIGQUIT";
  case SIGTERM: return "SIGTERM";
  case SIGUSR1: return "SIGUSR1";
  case SIGUSR2: return "SIGUSR2";
  case SIGALRM: return "SIGALRM";
  case SIGXCPU: return "SIGXCPU";
  case SIGVTALRM: return "SIGVTALRM";
  }
  return "a signal";
}

static void qp_int_handler(int sig) {
  /* One thread handles; a second signal (or the same one in another thread) waits for the
   * first to _exit. */
  if (atomic_exchange(&qp_int_handling, 1)) {
    for (;;) pause();
  }
  const int saved = errno;
  const char *writing = NULL;
  const int removed = qp_atomic_remove_registered(&writing);
  if (qp_int_rank == 0) {
    qp_int_text t = {.len = 0};
    qp_int_put(&t, "qmlpipe: interrupted by ");
    qp_int_put(&t, qp_int_signal_name(sig));
    qp_int_put(&t, " (signal ");
    qp_int_put_u(&t, (unsigned long)sig);
    qp_int_put(&t, ")");
    const int depth = qp_int_depth;
    if (depth > 0) {
      qp_int_put(&t, " in stage ");
      qp_int_put(&t, qp_int_names[depth - 1]);
      qp_int_put(&t, " after ");
      qp_int_put_seconds(&t, qp_int_starts[depth - 1]);
      qp_int_put(&t, " in it");
    } else if (writing) {
      qp_int_put(&t, " while writing '");
      qp_int_put(&t, writing);
      qp_int_put(&t, "'");
    } else if (!qp_int_done[0]) {
      qp_int_put(&t, " before the first stage");
    } else {
      qp_int_put(&t, " between stages");
    }
    qp_int_put(&t, "; ");
    qp_int_put_seconds(&t, qp_int_t0);
    qp_int_put(&t, " since qmlpipe started\nqmlpipe: finished stages: ");
    qp_int_put(&t, qp_int_done[0] ? qp_int_done : "none");
    if (removed > 0) {
      qp_int_put(&t, "; removed the unfinished temporary file of '");
      qp_int_put(&t, writing);
      qp_int_put(&t, "' (an existing file of that name is untouched)");
    }
    qp_int_put(&t, "\nqmlpipe: ");
    const int hint = qp_int_hint_at;
    qp_int_put(&t, hint >= 0 ? qp_int_hint[hint]
                             : "checkpoint: not configured, nothing can be resumed; run again "
                               "from the start");
    qp_int_put(&t, "\n");
    ssize_t w = write(STDERR_FILENO, t.buf, t.len);
    (void)w;
  }
  errno = saved;
  _exit(128 + sig);
}

void qp_interrupt_install(int rank) {
  qp_int_rank = rank;
  if (qp_int_installed) return;
  qp_int_t0 = qp_clock_seconds();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = qp_int_handler;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof qp_int_signals / sizeof qp_int_signals[0]; ++i)
    sigaddset(&sa.sa_mask, qp_int_signals[i]);
  for (size_t i = 0; i < sizeof qp_int_signals / sizeof qp_int_signals[0]; ++i) {
    struct sigaction old;
    /* A signal ignored when qmlpipe started (nohup) stays ignored, as POSIX shells expect. */
    if (sigaction(qp_int_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(qp_int_signals[i], &sa, NULL);
  }
  for (size_t i = 0; i < sizeof qp_int_ignored / sizeof qp_int_ignored[0]; ++i)
    signal(qp_int_ignored[i], SIG_IGN);
  qp_int_installed = 1;
}

void qp_interrupt_stage_enter(const char *name) {
  const int depth = qp_int_depth;
  if (depth >= QP_INT_DEPTH) {
    ++qp_int_overflow;
    return;
  }
  snprintf(qp_int_names[depth], QP_INT_NAME, "%s", name);
  qp_int_starts[depth] = qp_clock_seconds();
  atomic_signal_fence(memory_order_seq_cst);
  qp_int_depth = depth + 1;
  qp_interrupt_test_pause(name);
}

void qp_interrupt_stage_leave(void) {
  if (qp_int_overflow > 0) {
    --qp_int_overflow;
    return;
  }
  const int depth = qp_int_depth;
  if (depth <= 0) return;
  qp_int_depth = depth - 1;
  atomic_signal_fence(memory_order_seq_cst);
  if (depth == 1) {
    /* Appended behind the terminating NUL, which is replaced last: the handler sees the old
     * list or the new one, never a part. */
    char add[QP_INT_NAME + 2];
    const size_t len = strlen(qp_int_done);
    const int n = snprintf(add, sizeof add, "%s%s", len ? ", " : "", qp_int_names[0]);
    if (n > 0 && len + (size_t)n + 1 < sizeof qp_int_done) {
      memcpy(qp_int_done + len + 1, add + 1, (size_t)n); /* with add's NUL */
      atomic_signal_fence(memory_order_seq_cst);
      qp_int_done[len] = add[0];
    }
  }
}

void qp_interrupt_reset(void) {
  /* Written whole: their pages resident before the run's baseline, not first touched inside
   * covariance_setup (the stages' RSS is measured; budget.h). */
  qp_int_done[0] = '\0';
  atomic_signal_fence(memory_order_seq_cst);
  memset(qp_int_done + 1, 0, sizeof qp_int_done - 1);
  if (qp_int_depth == 0) {
    memset(qp_int_names, 0, sizeof qp_int_names);
    memset(qp_int_starts, 0, sizeof qp_int_starts);
  }
}

void qp_interrupt_set_resume_hint(const char *text) {
  if (!text || !text[0]) {
    qp_int_hint_at = -1;
    return;
  }
  const int next = qp_int_hint_at == 0 ? 1 : 0;
  snprintf(qp_int_hint[next], QP_INT_HINT, "%s", text);
  atomic_signal_fence(memory_order_seq_cst);
  qp_int_hint_at = next;
}

void qp_interrupt_test_pause(const char *where) { qp_test_pause(where); }
