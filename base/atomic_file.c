/* atomic_file.c: see atomic_file.h. */
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interrupt.h"
#include "output_path.h"

/* The registry the signal handler reads: a slot is published (live = 1) only after its paths
 * are written, and unpublished before they change. Slots are claimed under a mutex (writers of
 * several threads), never in the handler. */
typedef struct qp_atomic_slot {
  volatile sig_atomic_t live;
  int claimed;
  char target[QP_ATOMIC_PATH_MAX];
  char dir[QP_ATOMIC_PATH_MAX];
  char path[QP_ATOMIC_PATH_MAX];
} qp_atomic_slot;

static qp_atomic_slot qp_atomic_slots[QP_ATOMIC_SLOTS];
static pthread_mutex_t qp_atomic_lock = PTHREAD_MUTEX_INITIALIZER;

/* Characters of a base name kept in the temporary's name (NAME_MAX is 255). */
enum { QP_ATOMIC_BASE_KEPT = 96, QP_ATOMIC_HOST_KEPT = 32 };

/* The directory ("." when none) and base name of `target`; 0 when it has no base name. */
static int qp_atomic_split(const char *target, char *dir, const char **base) {
  const char *slash = strrchr(target, '/');
  *base = slash ? slash + 1 : target;
  if (!slash)
    snprintf(dir, QP_ATOMIC_PATH_MAX, ".");
  else if (slash == target)
    snprintf(dir, QP_ATOMIC_PATH_MAX, "/");
  else
    snprintf(dir, QP_ATOMIC_PATH_MAX, "%.*s", (int)(slash - target), target);
  return (*base)[0] != '\0';
}

/* This host's short name, letters, digits, '-' and '_' only (a shared file system sees the
 * temporaries of every node: a pid means something on its own host only). */
static void qp_atomic_host(char host[QP_ATOMIC_HOST_KEPT + 1]) {
  char raw[256] = "";
  if (gethostname(raw, sizeof raw - 1) != 0) raw[0] = '\0';
  int n = 0;
  for (const char *c = raw; *c && *c != '.' && n < QP_ATOMIC_HOST_KEPT; ++c)
    if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
        *c == '-' || *c == '_')
      host[n++] = *c;
  host[n] = '\0';
  if (n == 0) snprintf(host, QP_ATOMIC_HOST_KEPT + 1, "host");
}

/* "<dir>/.<base>.qmlpipe-tmp.<host>." : what every temporary of `target` on this host starts
 * with (the pid and mkdtemp's six characters follow). */
static int qp_atomic_prefix(const char *dir, const char *base, char *out, size_t size) {
  char host[QP_ATOMIC_HOST_KEPT + 1];
  qp_atomic_host(host);
  const int n = snprintf(out, size, "%s/.%.*s" QP_ATOMIC_TEMP_MARK "%s.", dir,
                         QP_ATOMIC_BASE_KEPT, base, host);
  return n > 0 && (size_t)n < size;
}

static void qp_atomic_release(qp_atomic_file *f) {
  if (f->slot < 0) return;
  qp_atomic_slot *s = &qp_atomic_slots[f->slot];
  s->live = 0;
  atomic_signal_fence(memory_order_seq_cst);
  pthread_mutex_lock(&qp_atomic_lock);
  s->claimed = 0;
  pthread_mutex_unlock(&qp_atomic_lock);
  f->slot = -1;
}

qp_err qp_atomic_begin(const char *target, qp_atomic_file *f) {
  f->slot = -1;
  f->dir[0] = f->path[0] = '\0';
  QP_CHECK(target && strlen(target) < QP_ATOMIC_PATH_MAX - 256, QP_ERR_IO,
           "cannot write '%s': the path is longer than %d characters", target ? target : "",
           QP_ATOMIC_PATH_MAX - 256);
  snprintf(f->target, sizeof f->target, "%s", target);
  char dir[QP_ATOMIC_PATH_MAX], prefix[QP_ATOMIC_PATH_MAX];
  const char *base;
  QP_CHECK(qp_atomic_split(target, dir, &base), QP_ERR_IO,
           "cannot write '%s': the path ends in '/' (a file name is needed)", target);
  QP_CHECK(qp_atomic_prefix(dir, base, prefix, sizeof prefix), QP_ERR_IO,
           "cannot write '%s': the path is too long", target);

  pthread_mutex_lock(&qp_atomic_lock);
  for (int i = 0; i < QP_ATOMIC_SLOTS && f->slot < 0; ++i)
    if (!qp_atomic_slots[i].claimed) {
      qp_atomic_slots[i].claimed = 1;
      f->slot = i;
    }
  pthread_mutex_unlock(&qp_atomic_lock);
  QP_CHECK(f->slot >= 0, QP_ERR_IO, "cannot write '%s': more than %d files written at once",
           target, QP_ATOMIC_SLOTS);
  qp_atomic_slot *s = &qp_atomic_slots[f->slot];
  snprintf(s->target, sizeof s->target, "%s", target);
  s->path[0] = '\0';
  const int n = snprintf(s->dir, sizeof s->dir, "%s%ld.XXXXXX", prefix, (long)getpid());
  if (n <= 0 || (size_t)n >= sizeof s->dir) {
    qp_atomic_release(f);
    QP_FAIL(QP_ERR_IO, "cannot write '%s': the path is too long", target);
  }
  /* Published before mkdtemp fills in the name: a signal in between removes what exists. */
  atomic_signal_fence(memory_order_seq_cst);
  s->live = 1;
  if (!mkdtemp(s->dir)) {
    const int why = errno;
    qp_atomic_release(f);
    QP_FAIL(QP_ERR_IO, "cannot write '%s': cannot create a temporary directory in '%s': %s",
            target, dir, strerror(why));
  }
  snprintf(f->dir, sizeof f->dir, "%s", s->dir);
  const int m = snprintf(f->path, sizeof f->path, "%s/%s", f->dir, base);
  if (m <= 0 || (size_t)m >= sizeof f->path) {
    rmdir(f->dir);
    f->dir[0] = '\0';
    qp_atomic_release(f);
    QP_FAIL(QP_ERR_IO, "cannot write '%s': the path is too long", target);
  }
  snprintf(s->path, sizeof s->path, "%s", f->path);
  atomic_signal_fence(memory_order_seq_cst);
  return QP_OK;
}

/* The new file, exclusively (nothing can be there: the directory is ours, but say so). */
static int qp_atomic_create(const qp_atomic_file *f, int mode) {
  return open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
}

qp_err qp_atomic_fopen(qp_atomic_file *f, int mode, FILE **out) {
  *out = NULL;
  const int fd = qp_atomic_create(f, mode);
  QP_CHECK(fd >= 0, QP_ERR_IO, "cannot write '%s': cannot create '%s': %s", f->target, f->path,
           strerror(errno));
  *out = fdopen(fd, "w");
  if (!*out) {
    const int why = errno;
    close(fd);
    QP_FAIL(QP_ERR_IO, "cannot write '%s': %s", f->target, strerror(why));
  }
  return QP_OK;
}

qp_err qp_atomic_write_bytes(qp_atomic_file *f, const void *data, size_t bytes) {
  const int fd = qp_atomic_create(f, 0666);
  QP_CHECK(fd >= 0, QP_ERR_IO, "cannot write '%s': cannot create '%s': %s", f->target, f->path,
           strerror(errno));
  const char *at = data;
  size_t left = bytes;
  int why = 0;
  while (left > 0 && !why) {
    const ssize_t n = write(fd, at, left);
    if (n > 0) {
      at += n;
      left -= (size_t)n;
    } else if (n < 0 && errno != EINTR) {
      why = errno;
    }
  }
  if (close(fd) != 0 && !why) why = errno;
  QP_CHECK(!why, QP_ERR_IO, "cannot write '%s' (%zu bytes, %zu written): %s", f->target, bytes,
           bytes - left, strerror(why));
  return QP_OK;
}

/* fsync of a closed file (its data) or of a directory (the new name in it). */
static int qp_atomic_sync(const char *path, int directory) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : O_NOFOLLOW));
  if (fd < 0) return -1;
  const int rc = fsync(fd);
  const int why = errno;
  close(fd);
  errno = why;
  return rc;
}

qp_err qp_atomic_commit(qp_atomic_file *f, int replace) {
  qp_err err = QP_OK;
  QP_CHECK_GOTO(qp_atomic_sync(f->path, 0) == 0, QP_ERR_IO, done,
                "cannot flush '%s' to disk (written as '%s'): %s", f->target, f->path,
                strerror(errno));
  qp_interrupt_test_pause("before_rename");
  if (replace) {
    /* Checked before the command started (output_path.h); again here, for a target that
     * became a device or a FIFO meanwhile: rename() would replace it. */
    QP_CALL_GOTO(qp_output_path_replaceable(f->target, NULL, "the new file"), done);
    QP_CHECK_GOTO(rename(f->path, f->target) == 0, QP_ERR_IO, done,
                  "cannot rename '%s' to '%s': %s", f->path, f->target, strerror(errno));
  } else {
    /* link() refuses an existing name, atomically (no race with another writer). */
    const int linked = link(f->path, f->target);
    const int why = errno;
    QP_CHECK_GOTO(linked == 0, QP_ERR_IO, done, "%s'%s'%s: %s",
                  why == EEXIST ? "" : "cannot put the file in place as ", f->target,
                  why == EEXIST ? " exists" : "", strerror(why));
    unlink(f->path);
  }
  rmdir(f->dir);
  char dir[QP_ATOMIC_PATH_MAX];
  const char *base;
  qp_atomic_split(f->target, dir, &base);
  (void)qp_atomic_sync(dir, 1); /* best effort: some file systems refuse fsync on a directory */
  qp_atomic_release(f);
done:
  if (err != QP_OK) qp_atomic_abort(f);
  return err;
}

qp_err qp_atomic_fcommit(qp_atomic_file *f, FILE *out, int replace) {
  const int failed = ferror(out);
  const int why = errno;
  const int closed = fclose(out) == 0;
  if (failed || !closed) {
    const int reason = failed ? why : errno;
    qp_atomic_abort(f);
    QP_FAIL(QP_ERR_IO, "cannot write '%s': %s", f->target, strerror(reason));
  }
  QP_CALL(qp_atomic_commit(f, replace));
  return QP_OK;
}

void qp_atomic_abort(qp_atomic_file *f) {
  if (f->path[0]) unlink(f->path);
  if (f->dir[0]) rmdir(f->dir);
  f->path[0] = f->dir[0] = '\0';
  qp_atomic_release(f);
}

qp_err qp_atomic_probe(const char *target, const char *source) {
  qp_atomic_file f;
  FILE *out = NULL;
  qp_err err = qp_atomic_begin(target, &f);
  if (err == QP_OK) err = qp_atomic_fopen(&f, 0666, &out);
  if (out && fclose(out) != 0 && err == QP_OK)
    err = qp_error_set(QP_ERR_IO, __FILE__, __LINE__, __func__, "cannot write '%s': %s", target,
                       strerror(errno));
  if (f.slot >= 0) qp_atomic_abort(&f);
  QP_CHECK(err == QP_OK, err, "%s: checked before the work starts: %s", source,
           qp_error_message());
  return QP_OK;
}

int qp_atomic_temp_prefix(const char *target, char *out, size_t size) {
  char dir[QP_ATOMIC_PATH_MAX];
  const char *base;
  if (!target || strlen(target) >= QP_ATOMIC_PATH_MAX - 256 || !qp_atomic_split(target, dir, &base))
    return 0;
  return qp_atomic_prefix(dir, base, out, size);
}

int qp_atomic_remove_stale(const char *target, FILE *notes) {
  char dir[QP_ATOMIC_PATH_MAX], prefix[QP_ATOMIC_PATH_MAX];
  const char *base;
  if (!target || strlen(target) >= QP_ATOMIC_PATH_MAX - 256 || !qp_atomic_split(target, dir, &base))
    return 0;
  if (!qp_atomic_prefix(dir, base, prefix, sizeof prefix)) return 0;
  const char *name_prefix = prefix + strlen(dir) + 1; /* ".<base>.qmlpipe-tmp.<host>." */
  const size_t prefix_len = strlen(name_prefix);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int removed = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, name_prefix, prefix_len) != 0) continue;
    /* "<pid>.XXXXXX" and nothing else */
    const char *rest = e->d_name + prefix_len;
    char *end = NULL;
    errno = 0;
    const long pid = strtol(rest, &end, 10);
    if (errno || end == rest || pid <= 0 || *end != '.' || strlen(end + 1) != 6) continue;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char temp_dir[QP_ATOMIC_PATH_MAX + 256], temp_file[2 * QP_ATOMIC_PATH_MAX];
    snprintf(temp_dir, sizeof temp_dir, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(temp_dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    snprintf(temp_file, sizeof temp_file, "%s/%s", temp_dir, base);
    const int had_file = unlink(temp_file) == 0;
    if (rmdir(temp_dir) == 0) {
      ++removed;
      if (notes)
        fprintf(notes,
                "[qmlpipe] removed the temporary %s '%s' of an earlier run on this output (pid "
                "%ld, no longer running: killed?)\n",
                had_file ? "file" : "directory", had_file ? temp_file : temp_dir, pid);
    } else if (notes) {
      fprintf(notes, "[qmlpipe] left '%s' (an earlier run's temporary directory): %s\n",
              temp_dir, strerror(errno));
    }
  }
  closedir(d);
  return removed;
}

int qp_atomic_remove_registered(const char **last) {
  int n = 0;
  for (int i = 0; i < QP_ATOMIC_SLOTS; ++i) {
    qp_atomic_slot *s = &qp_atomic_slots[i];
    if (!s->live) continue;
    if (s->path[0] && unlink(s->path) == 0) {
      ++n;
      if (last) *last = s->target;
    }
    rmdir(s->dir);
  }
  return n;
}
