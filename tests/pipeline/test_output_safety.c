/* test_output_safety: the real qmlpipe binary (argv[1]) against hostile results paths and
 * conditions, with the real file system, real mounts and real signals (issue 12, defects
 * 1-5). Each part checks the exit status, the words on stderr, that nothing ran when the run
 * had to be refused first ("[qmlpipe] covariance_setup" absent), that no temporary
 * (QP_ATOMIC_TEMP_MARK) is left, and that the files which must not change did not.
 *  1. refused outputs: a character device (a private copy of /dev/null made with mknod), a
 *     FIFO, the mask, the config itself, a hard link to the C_ell file, a symlink to a map,
 *     and the config's own `output:` naming the mask;
 *  2. symlinks planted at the old predictable temporary name (<out>.tmp.<pid>, the pid known
 *     before qmlpipe starts) and at a name of the new pattern: their target is untouched and
 *     the results file is a new regular file with mode 0666 & ~umask;
 *  3. probe before the first stage: a file system without a free inode (tmpfs nr_inodes=2)
 *     and a read-only one (tmpfs -o ro): exit 8 in seconds, no stage run;
 *  4. a full disk during the write (tmpfs of 24 KiB, an old results file in it): exit 8
 *     naming the file and ENOSPC, no temporary, the old file intact, no crash;
 *  5. SIGTERM, SIGUSR1 and SIGXCPU in a stage, SIGINT in the write window (test hook
 *     QP_TEST_PAUSE): exit 128 + signal, the stage or the file named, the finished stages,
 *     "checkpoint: not configured", no temporary, the old results intact; SIGKILL in the write
 *     window leaves the temporary, which the next run on that output removes with a note (while
 *     a live process's and another host's are left alone).
 *  6. with MPI (argv[2]: mpiexec, else "none"): SIGTERM in a stage and SIGUSR1 in the write
 *     window sent to mpiexec, which forwards them to both ranks: one message (rank 0), no
 *     temporary, the old results intact.
 * Mounts need root (CAP_SYS_ADMIN): without it parts 3 and 4 are skipped, said on stdout, and
 * the test exits 77 (SKIP_RETURN_CODE) if nothing else failed. Everything happens in
 * output_safety.d. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cli_run.h"
#include "clock.h"
#include "fixture.h"
#include "test_util.h"

#define WORK_DIR "output_safety.d"
#define OUT "safe_results.h5"

static char qmlpipe[PATH_MAX];
static int skipped = 0;

/* ---- files ---- */

static int is_kind(const char *path, mode_t kind) {
  struct stat st;
  return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == kind;
}

static int find_temps(const char *dir, char *out, size_t size) {
  return qp_test_find_temps(dir, out, size);
}

static void expect_no_temps(const char *tag, const char *dir) {
  char names[2048];
  const int n = find_temps(dir, names, sizeof names);
  TEST_ASSERT(n == 0, "%s: temporaries left in %s: %s", tag, dir, names);
}

static void write_text(const char *path, const char *text) { qp_test_write_text(path, text); }

/* 1 when the file holds exactly `text`. */
static int holds(const char *path, const char *text) {
  char *got = qp_cli_slurp(path);
  const int same = got && strcmp(got, text) == 0;
  free(got);
  return same;
}

/* 1 when the two files have the same bytes. */
static int same_bytes(const char *a, const char *b) {
  char *x = qp_cli_slurp(a), *y = qp_cli_slurp(b);
  struct stat sa, sb;
  const int same = x && y && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_size == sb.st_size &&
                   memcmp(x, y, (size_t)sa.st_size) == 0;
  free(x);
  free(y);
  return same;
}

static int copy_file(const char *from, const char *to) {
  char cmd[PATH_MAX * 2 + 16];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
  return system(cmd) == 0;
}

/* ---- running qmlpipe ---- */

/* A child started but held before exec until go() (so that its pid is known first). */
typedef struct child {
  pid_t pid;
  int gate; /* write end of the pipe the child waits on */
  char tag[64];
} child;

/* Forks `program` (qmlpipe or mpiexec) with args (NULL-terminated; at most 14), stdout/stderr
 * in <tag>.out/.err, QP_TEST_PAUSE=pause when pause is not NULL. */
static void start_program(child *c, const char *tag, const char *program, const char *const *args,
                          const char *pause) {
  snprintf(c->tag, sizeof c->tag, "%s", tag);
  int fds[2];
  if (pipe(fds) != 0) {
    c->pid = -1;
    return;
  }
  char out[128], err[128];
  snprintf(out, sizeof out, "%s.out", tag);
  snprintf(err, sizeof err, "%s.err", tag);
  c->pid = fork();
  if (c->pid == 0) {
    close(fds[1]);
    const int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || in < 0) _exit(120);
    dup2(in, 0);
    dup2(o, 1);
    dup2(e, 2);
    if (pause) setenv("QP_TEST_PAUSE", pause, 1);
    char byte;
    if (read(fds[0], &byte, 1) != 1) _exit(121);
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)program;
    for (int i = 0; args[i] && n < 15; ++i)
      argv[n++] = (char *)args[i];
    argv[n] = NULL;
    execv(program, argv);
    _exit(122);
  }
  close(fds[0]);
  c->gate = fds[1];
}

static void start(child *c, const char *tag, const char *const *args, const char *pause) {
  start_program(c, tag, qmlpipe, args, pause);
}

static void go(child *c) {
  if (c->gate >= 0) {
    (void)!write(c->gate, "g", 1);
    close(c->gate);
    c->gate = -1;
  }
}

/* Waits (at most 120 s) for `text` in the child's stderr; 1 when it came. */
static int wait_for(const child *c, const char *text) {
  char err[128];
  snprintf(err, sizeof err, "%s.err", c->tag);
  for (int i = 0; i < 1200; ++i) {
    char *got = qp_cli_slurp(err);
    const int found = got && strstr(got, text);
    free(got);
    if (found) return 1;
    if (waitpid(c->pid, NULL, WNOHANG) == c->pid) return 0;
    struct timespec t = {0, 100000000};
    nanosleep(&t, NULL);
  }
  return 0;
}

/* Waits for the child; fills r (status or signal, stdout, stderr). */
static void finish(child *c, qp_cli_result *r) {
  memset(r, 0, sizeof *r);
  go(c);
  int ws = 0;
  r->started = c->pid > 0;
  while (c->pid > 0 && waitpid(c->pid, &ws, 0) < 0 && errno == EINTR)
    continue;
  if (WIFEXITED(ws)) {
    r->exited = 1;
    r->status = WEXITSTATUS(ws);
  } else if (WIFSIGNALED(ws)) {
    r->signal = WTERMSIG(ws);
  }
  char path[128];
  snprintf(path, sizeof path, "%s.out", c->tag);
  r->out = qp_cli_slurp(path);
  snprintf(path, sizeof path, "%s.err", c->tag);
  r->err = qp_cli_slurp(path);
}

/* Runs qmlpipe to the end. */
static void run(const char *tag, const char *const *args, qp_cli_result *r) {
  child c;
  start(&c, tag, args, NULL);
  finish(&c, r);
}

/* Exit status `status` (not a crash), every word on stderr; `before_stages`: no stage ran. */
static void expect(const char *tag, const qp_cli_result *r, int status, const char *const *words,
                   int before_stages) {
  const int before = qp_test_failures;
  TEST_ASSERT(r->started && r->exited, "%s: did not exit normally (signal %d: %s)", tag, r->signal,
              r->signal ? strsignal(r->signal) : "-");
  TEST_ASSERT(r->status == status, "%s: exit status %d, expected %d", tag, r->status, status);
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(r->err && strstr(r->err, words[i]), "%s: stderr lacks '%s'", tag, words[i]);
  if (before_stages)
    TEST_ASSERT(r->err && !strstr(r->err, "[qmlpipe] covariance_setup"),
                "%s: a stage ran before the refusal", tag);
  if (qp_test_failures != before)
    fprintf(stderr, "  --- stderr of %s ---\n%s  ---\n", tag, r->err);
  else
    printf("  %s: exit %d ok\n", tag, r->status);
  fflush(stdout);
}

/* Writes safe.yaml (output `output`, relative to it). */
static void write_config(const char *name, const char *output) {
  char text[1024];
  snprintf(text, sizeof text,
           "maps: [safe_map_0000.fits]\nmask: safe_mask.fits\ncls: safe_cls.txt\n"
           "noise: {variance: 1.0}\nlmax: 10\nbin_width: 3\npath: pixel_direct\n"
           "output: %s\nmemory: {host_limit: 8GiB}\n",
           output);
  write_text(name, text);
}

/* ---- 1. outputs that must be refused ---- */

static void refused(const char *tag, const char *output, const char *const *words) {
  const char *args[] = {"run", "safe.yaml", "--output", output, NULL};
  qp_cli_result r;
  run(tag, args, &r);
  expect(tag, &r, 8, words, 1);
  qp_cli_free(&r);
}

static void part_refused_outputs(void) {
  printf("1. outputs refused before the first stage\n");
  /* A private null device: as root, the old rename turned /dev/null into a regular file. */
  unlink("null_dev");
  if (mknod("null_dev", S_IFCHR | 0666, makedev(1, 3)) == 0) {
    const char *w[] = {"'null_dev'", "character device", NULL};
    refused("device", "null_dev", w);
    TEST_ASSERT(is_kind("null_dev", S_IFCHR), "null_dev is no longer a character device");
  } else {
    printf("  device: skipped (mknod: %s)\n", strerror(errno));
  }
  unlink("fifo.h5");
  TEST_ASSERT(mkfifo("fifo.h5", 0644) == 0, "mkfifo: %s", strerror(errno));
  {
    const char *w[] = {"'fifo.h5'", "FIFO", NULL};
    refused("fifo", "fifo.h5", w);
    TEST_ASSERT(is_kind("fifo.h5", S_IFIFO), "fifo.h5 is no longer a FIFO");
  }
  TEST_ASSERT(copy_file("safe_mask.fits", "mask.orig"), "cannot copy the mask");
  {
    const char *w[] = {"'safe_mask.fits'", "(mask)", "would destroy it", NULL};
    refused("mask", "safe_mask.fits", w);
  }
  {
    const char *w[] = {"'safe.yaml'", "(the config file)", NULL};
    refused("config", "safe.yaml", w);
  }
  TEST_ASSERT(copy_file("safe_cls.txt", "cls.orig"), "cannot copy the C_ell file");
  unlink("hard.h5");
  TEST_ASSERT(link("safe_cls.txt", "hard.h5") == 0, "link: %s", strerror(errno));
  {
    const char *w[] = {"'hard.h5'", "'safe_cls.txt' (cls)", NULL};
    refused("hard_link", "hard.h5", w);
  }
  unlink("sym.h5");
  TEST_ASSERT(symlink("safe_map_0000.fits", "sym.h5") == 0, "symlink: %s", strerror(errno));
  TEST_ASSERT(copy_file("safe_map_0000.fits", "map.orig"), "cannot copy the map");
  {
    const char *w[] = {"'sym.h5'", "(maps)", NULL};
    refused("symlink", "sym.h5", w);
  }
  /* The config's own output: naming the mask. */
  write_config("self.yaml", "safe_mask.fits");
  {
    const char *args[] = {"run", "self.yaml", NULL};
    const char *w[] = {"key 'output'", "(mask)", NULL};
    qp_cli_result r;
    run("config_output", args, &r);
    expect("config_output", &r, 8, w, 1);
    qp_cli_free(&r);
  }
  TEST_ASSERT(same_bytes("safe_mask.fits", "mask.orig"), "the mask changed");
  TEST_ASSERT(same_bytes("safe_cls.txt", "cls.orig"), "the C_ell file changed");
  TEST_ASSERT(same_bytes("safe_map_0000.fits", "map.orig"), "the map changed");
  TEST_ASSERT(is_kind("sym.h5", S_IFLNK), "sym.h5 is no longer a symlink");
  expect_no_temps("refused", ".");
  unlink("null_dev");
  unlink("fifo.h5");
  unlink("hard.h5");
  unlink("sym.h5");
}

/* ---- 2. planted symlinks ---- */

static void part_planted_symlinks(void) {
  printf("2. symlinks planted at temporary names\n");
  write_text("victim.txt", "precious\n");
  unlink("planted.h5");
  const char *args[] = {"run", "safe.yaml", "--quiet", "--output", "planted.h5", NULL};
  child c;
  start(&c, "planted", args, NULL);
  char old_name[256], new_name[PATH_MAX];
  snprintf(old_name, sizeof old_name, "planted.h5.tmp.%ld", (long)c.pid);
  TEST_ASSERT(qp_atomic_temp_prefix("planted.h5", new_name, sizeof new_name - 32),
              "qp_atomic_temp_prefix");
  snprintf(new_name + strlen(new_name), 32, "%ld.AAAAAA", (long)c.pid);
  TEST_ASSERT(symlink("victim.txt", old_name) == 0, "symlink %s: %s", old_name, strerror(errno));
  TEST_ASSERT(symlink("victim.txt", new_name) == 0, "symlink %s: %s", new_name, strerror(errno));
  qp_cli_result r;
  finish(&c, &r);
  expect("planted", &r, 0, NULL, 0);
  TEST_ASSERT(holds("victim.txt", "precious\n"), "the symlinks' target was written");
  TEST_ASSERT(is_kind("planted.h5", S_IFREG), "planted.h5 is not a regular file");
  const mode_t mask = umask(0);
  umask(mask);
  struct stat st;
  TEST_ASSERT(stat("planted.h5", &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask),
              "planted.h5 has mode %o, expected %o", (unsigned)(st.st_mode & 0777),
              (unsigned)(0666 & ~mask));
  qp_cli_free(&r);
  unlink(old_name);
  unlink(new_name);
  unlink("planted.h5");
  expect_no_temps("planted", ".");
}

/* ---- 3. and 4. mounts ---- */

/* Mounts a tmpfs on `dir` with `options`; 0 (and a note) when not permitted. */
static int mount_tmpfs(const char *dir, unsigned long flags, const char *options) {
  mkdir(dir, 0755);
  if (mount("tmpfs", dir, "tmpfs", flags, options) == 0) return 1;
  printf("  cannot mount a tmpfs on %s (%s): %s; skipped\n", dir, options, strerror(errno));
  skipped = 1;
  return 0;
}

static void part_probe(void) {
  printf("3. the output's file system tried before the first stage\n");
  if (mount_tmpfs("noinode", 0, "size=1m,nr_inodes=2")) {
    const char *args[] = {"run", "safe.yaml", "--output", "noinode/r.h5", NULL};
    const char *w[] = {"--output", "checked before the work starts", "'noinode/r.h5'",
                       "No space left on device", NULL};
    qp_cli_result r;
    const double t0 = qp_clock_seconds();
    run("no_inode", args, &r);
    expect("no_inode", &r, 8, w, 1);
    TEST_ASSERT(qp_clock_seconds() - t0 < 30, "no_inode: %.1f s to refuse",
                qp_clock_seconds() - t0);
    qp_cli_free(&r);
    expect_no_temps("no_inode", "noinode");
    umount("noinode");
  }
  if (mount_tmpfs("readonly", MS_RDONLY, "size=1m")) {
    const char *args[] = {"run", "safe.yaml", "--output", "readonly/r.h5", NULL};
    const char *w[] = {"'readonly/r.h5'", "Read-only file system", NULL};
    qp_cli_result r;
    run("read_only", args, &r);
    expect("read_only", &r, 8, w, 1);
    qp_cli_free(&r);
    umount("readonly");
  }
}

static void part_disk_full(void) {
  printf("4. a full disk during the write\n");
  if (!mount_tmpfs("full", 0, "size=24k")) return;
  write_text("full/r.h5", "old results\n");
  const char *args[] = {"run", "safe.yaml", "--quiet", "--output", "full/r.h5", NULL};
  const char *w[] = {"'full/r.h5'", "No space left on device", NULL};
  qp_cli_result r;
  run("disk_full", args, &r);
  expect("disk_full", &r, 8, w, 0);
  TEST_ASSERT(holds("full/r.h5", "old results\n"), "disk_full: the old results changed");
  expect_no_temps("disk_full", "full");
  qp_cli_free(&r);
  umount("full");
}

/* ---- 5. signals ---- */

/* Runs to `pause`, sends `sig`, expects 128 + sig and the words; the old results intact. */
static void signalled(const char *tag, const char *pause, int sig, const char *const *words) {
  const char *args[] = {"run", "safe.yaml", "--output", OUT, NULL};
  child c;
  start(&c, tag, args, pause);
  go(&c);
  const int paused = wait_for(&c, "QP_TEST_PAUSE: paused in");
  TEST_ASSERT(paused, "%s: never paused in %s", tag, pause);
  if (paused && strcmp(pause, "before_rename") == 0) {
    char names[1024];
    TEST_ASSERT(find_temps(".", names, sizeof names) == 1, "%s: no temporary while writing", tag);
  }
  kill(c.pid, sig);
  qp_cli_result r;
  finish(&c, &r);
  expect(tag, &r, 128 + sig, words, 0);
  TEST_ASSERT(same_bytes(OUT, "old.h5"), "%s: the old results changed", tag);
  expect_no_temps(tag, ".");
  qp_cli_free(&r);
}

static void part_signals(void) {
  printf("5. signals\n");
  {
    const char *w[] = {"SIGTERM", "in stage fisher_run",
                       "finished stages: covariance_setup, "
                       "basis_setup",
                       "checkpoint: not configured", NULL};
    signalled("sigterm_stage", "fisher_run", SIGTERM, w);
  }
  {
    const char *w[] = {"SIGUSR1", "in stage covariance_setup", "finished stages: none", NULL};
    signalled("sigusr1_stage", "covariance_setup", SIGUSR1, w);
  }
  {
    const char *w[] = {"SIGXCPU", "in stage spectra_run", NULL};
    signalled("sigxcpu_stage", "spectra_run", SIGXCPU, w);
  }
  {
    const char *w[] = {"SIGINT", "while writing '" OUT "'", "spectra_run",
                       "removed the unfinished temporary file", NULL};
    signalled("sigint_write", "before_rename", SIGINT, w);
  }
  /* SIGKILL cannot be handled: the temporary stays, and the next run removes it. */
  const char *args[] = {"run", "safe.yaml", "--quiet", "--output", OUT, NULL};
  child c;
  start(&c, "sigkill_write", args, "before_rename");
  go(&c);
  TEST_ASSERT(wait_for(&c, "QP_TEST_PAUSE: paused in"), "sigkill_write: never paused");
  kill(c.pid, SIGKILL);
  qp_cli_result r;
  finish(&c, &r);
  qp_cli_free(&r);
  char names[1024];
  TEST_ASSERT(find_temps(".", names, sizeof names) == 1, "sigkill_write: no temporary left (%s)",
              names);
  /* Beside it: one of this (live) test process, and one of a dead pid on another host. */
  char live[PATH_MAX], other[PATH_MAX];
  TEST_ASSERT(qp_atomic_temp_prefix(OUT, live, sizeof live - 32), "qp_atomic_temp_prefix");
  snprintf(live + strlen(live), 32, "%ld.LLLLLL", (long)getpid());
  snprintf(other, sizeof other, "./." OUT QP_ATOMIC_TEMP_MARK "otherhost.%ld.OOOOOO", (long)c.pid);
  TEST_ASSERT(mkdir(live, 0700) == 0 && mkdir(other, 0700) == 0, "mkdir: %s", strerror(errno));
  run("after_kill", args, &r);
  const char *w[] = {"removed the temporary file", "no longer running", NULL};
  expect("after_kill", &r, 0, w, 0);
  TEST_ASSERT(is_kind(live, S_IFDIR) && is_kind(other, S_IFDIR),
              "after_kill: removed a live process's or another host's temporary");
  rmdir(live);
  rmdir(other);
  expect_no_temps("after_kill", ".");
  qp_cli_free(&r);
}

/* ---- 6. a signal to an MPI job (mpiexec forwards it to every rank) ---- */

static void part_mpi(const char *mpiexec) {
  printf("6. signals to 2 MPI ranks\n");
  TEST_ASSERT(copy_file(OUT, "old.h5"), "no results of the run after SIGKILL");
  struct {
    const char *tag, *pause, *words;
    int sig;
  } cases[] = {{"mpi_sigterm_stage", "fisher_run", "in stage fisher_run", SIGTERM},
               {"mpi_sigusr1_write", "before_rename", "while writing", SIGUSR1}};
  for (int k = 0; k < 2; ++k) {
    const char *args[] = {"-n",
                          "2",
                          "--oversubscribe",
                          "--allow-run-as-root",
                          "-x",
                          "QP_TEST_PAUSE",
                          qmlpipe,
                          "run",
                          "safe.yaml",
                          "--output",
                          OUT,
                          NULL};
    child c;
    start_program(&c, cases[k].tag, mpiexec, args, cases[k].pause);
    go(&c);
    TEST_ASSERT(wait_for(&c, "QP_TEST_PAUSE: paused in"), "%s: never paused", cases[k].tag);
    kill(c.pid, cases[k].sig);
    qp_cli_result r;
    finish(&c, &r);
    /* mpiexec's own status is its business (1 for Open MPI); the ranks' words are ours. */
    TEST_ASSERT(r.exited && r.status != 0, "%s: mpiexec exit %d (signal %d)", cases[k].tag,
                r.status, r.signal);
    const char *first = r.err ? strstr(r.err, "qmlpipe: interrupted by") : NULL;
    TEST_ASSERT(first && strstr(first, cases[k].words), "%s: stderr lacks '%s'", cases[k].tag,
                cases[k].words);
    TEST_ASSERT(!first || !strstr(first + 1, "qmlpipe: interrupted by"),
                "%s: more than one rank printed", cases[k].tag);
    TEST_ASSERT(same_bytes(OUT, "old.h5"), "%s: the old results changed", cases[k].tag);
    expect_no_temps(cases[k].tag, ".");
    if (qp_test_failures)
      fprintf(stderr, "  --- stderr ---\n%s  ---\n", r.err);
    else
      printf("  %s: ok\n", cases[k].tag);
    qp_cli_free(&r);
  }
}

int main(int argc, char **argv) {
  const char *mpiexec = argc > 2 && strcmp(argv[2], "none") != 0 ? argv[2] : NULL;
  int setup = qp_cli_setup(argc < 2 ? argc : 2, argv, "test_output_safety", WORK_DIR, qmlpipe);
  if (setup != 0) return setup;
  (void)system("for d in noinode readonly full; do umount $d 2>/dev/null; done; rm -rf "
               "./.*" QP_ATOMIC_TEMP_MARK "*");
  const double t0 = qp_clock_seconds();
  qp_fixture f = {.name = "safe",
                  .nside = 8,
                  .cut_deg = 30,
                  .ell_min = 2,
                  .lmax = 10,
                  .lmax_signal = 10,
                  .bin_width = 3,
                  .sim_lmax = 10,
                  .n_maps = 1,
                  .noise_variance = 1.0,
                  .cl_flat = 1.0,
                  .seed = 3};
  qp_config cfg;
  TEST_OK(qp_fixture_write(&f, &cfg));
  qp_config_free(&cfg);
  write_config("safe.yaml", OUT);
  {
    const char *args[] = {"run", "safe.yaml", "--quiet", NULL};
    qp_cli_result r;
    run("control", args, &r);
    expect("control", &r, 0, NULL, 0);
    qp_cli_free(&r);
  }
  TEST_ASSERT(copy_file(OUT, "old.h5"), "no results from the control run");
  if (qp_test_failures) return 1;
  part_refused_outputs();
  part_planted_symlinks();
  part_probe();
  part_disk_full();
  part_signals();
  if (mpiexec) part_mpi(mpiexec);
  printf("%d failed check(s), %.1f s\n", qp_test_failures, qp_clock_seconds() - t0);
  if (qp_test_failures) return 1;
  qp_cli_remove_files(".");
  return skipped ? 77 : 0;
}
