/* checkpoint.c: the resume decision and the lifetime of a run's checkpoint files
 * (checkpoint.h). Writing a file: checkpoint_write.c; checking and reading one:
 * checkpoint_read.c; the layout they share: checkpoint_file.h. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "checkpoint_file.h"
#include "checkpoint_inputs.h"
#include "comm.h"
#include "interrupt.h"
#include "terms.h"

/* What the signal handler says can be resumed (base/interrupt.h). */
void qp_ck_resume_hint(const qp_checkpoint *ck, int after) {
  char hint[512];
  if (after < 0)
    snprintf(hint, sizeof hint,
             "checkpoints in '%.300s', none written yet: the same command with --resume starts "
             "from the first stage",
             ck->dir);
  else
    snprintf(hint, sizeof hint,
             "the checkpoint after %s is in '%.300s': the same command with --resume continues "
             "from there",
             qp_stage_name((qp_stage_id)after), ck->dir);
  qp_interrupt_set_resume_hint(hint);
}

static int qp_ck_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int qp_checkpoint_saves(const qp_model_term *t) {
  if (strcmp(t->name, QP_TERM_KERNEL_HOST) == 0) return 1;
  for (int i = 0; i < QP_CK_SLOTS; ++i)
    if (strcmp(t->name, qp_ck_slots[i].term) == 0) return 1;
  return 0;
}

size_t qp_checkpoint_stage_bytes(const qp_model *model, int stage) {
  return qp_model_stage_persistent_if(model, stage, qp_checkpoint_saves);
}

size_t qp_checkpoint_disk_bytes(const qp_model *model) {
  size_t disk = 0;
  for (int s = 0; s < QP_STAGE_SPECTRA_RUN; ++s) {
    const size_t pair = qp_checkpoint_stage_bytes(model, s) +
                        (s > 0 ? qp_checkpoint_stage_bytes(model, s - 1) : 0);
    if (pair > disk) disk = pair;
  }
  return disk;
}

/* A warning (rank 0) when the directory's file system has less room than every rank's
 * checkpoints need: the run goes on, and a checkpoint that does not fit is skipped. */
static void qp_ck_check_space(const qp_checkpoint *ck, const qp_problem *p) {
  struct statvfs fs;
  const double need = (double)qp_checkpoint_disk_bytes(&p->plan->model) * qp_comm_size();
  if (qp_comm_rank() != 0 || statvfs(ck->dir, &fs) != 0) return;
  const double room = (double)fs.f_bavail * (double)fs.f_frsize;
  if (room < need)
    fprintf(stderr,
            "[qmlpipe] warning: checkpoint directory '%s' has %.1f MiB free, its checkpoints "
            "need up to %.1f MiB: those that do not fit are skipped with a warning\n",
            ck->dir, room / 1048576.0, need / 1048576.0);
}

/* A checkpoint's header written, checked and removed before the run's baseline: the
 * directory takes a file (exclusive create, rename) before any work, and HDF5's code for
 * writing and reading one is paged in then, not in the first stage after a checkpoint
 * (0.67 MiB of library pages seen in basis_setup's RSS at n_pix 1984 without it). */
static qp_err qp_ck_probe(const qp_checkpoint *ck, const qp_problem *p) {
  char path[QP_CK_PATH_MAX];
  snprintf(path, sizeof path, "%s/probe.rank%d.h5", ck->dir, qp_comm_rank());
  size_t bytes = 0;
  qp_err err = qp_ck_write(ck, p, QP_STAGE_COVARIANCE_SETUP, path, 0, &bytes);
  if (err == QP_OK) err = qp_ck_check_header(ck, p, QP_STAGE_COVARIANCE_SETUP, path);
  unlink(path);
  QP_CALL(err);
  return QP_OK;
}

/* This rank's files of earlier runs: a fresh run starts without them. */
static void qp_ck_remove_files(const qp_checkpoint *ck) {
  for (int s = 0; s < QP_STAGE_SPECTRA_RUN; ++s) {
    char path[QP_CK_PATH_MAX];
    qp_ck_path(ck, (qp_stage_id)s, path, sizeof path);
    unlink(path);
  }
}

qp_err qp_checkpoint_lock(const char *dir, int *fd) {
  char path[QP_CK_PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, QP_CK_LOCK_NAME);
  *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  QP_CHECK(*fd >= 0, QP_ERR_IO, "checkpoint directory '%s': cannot open its lock file '%s': %s",
           dir, path, strerror(errno));
  if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    char holder[128] = "";
    const ssize_t got = pread(*fd, holder, sizeof holder - 1, 0);
    holder[got > 0 ? got : 0] = '\0';
    holder[strcspn(holder, "\n")] = '\0';
    close(*fd);
    *fd = -1;
    QP_CHECK(why != EWOULDBLOCK, QP_ERR_IO,
             "checkpoint directory '%s' is in use by another run (%s): two runs in one "
             "directory would remove and overwrite each other's checkpoints; give each run its "
             "own (--checkpoint DIR)",
             dir, holder[0] ? holder : "its lock file names no process");
    QP_FAIL(QP_ERR_IO, "checkpoint directory '%s': cannot lock '%s': %s", dir, path,
            strerror(why));
  }
  char host[64] = "?", text[128];
  (void)gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  const int n = snprintf(text, sizeof text, "pid %ld host %s\n", (long)getpid(), host);
  if (ftruncate(*fd, 0) != 0 || pwrite(*fd, text, (size_t)n, 0) != n) {
    /* The lock holds without its note: a second run is refused all the same. */
  }
  return QP_OK;
}

void qp_checkpoint_unlock(int *fd) {
  if (*fd >= 0) close(*fd); /* closing drops the flock; the file stays, empty of meaning */
  *fd = -1;
}

qp_err qp_checkpoint_open(qp_checkpoint *ck, const char *dir, int resume, const qp_problem *p) {
  memset(ck, 0, sizeof *ck);
  ck->resume_after = -1;
  ck->lock_fd = -1;
  if (!dir || !dir[0]) return QP_OK;
  QP_CHECK(strlen(dir) + 64 < sizeof ck->dir, QP_ERR_INPUT, "checkpoint directory '%s' is too long",
           dir);
  snprintf(ck->dir, sizeof ck->dir, "%s", dir);
  ck->resume = resume;
  QP_CALL(qp_checkpoint_share_inputs(p->cfg, &ck->inputs));
  qp_ck_check_space(ck, p);
  QP_CALL(qp_comm_agree(qp_ck_probe(ck, p)));
  QP_CALL(qp_comm_agree(qp_comm_rank() == 0 ? qp_checkpoint_lock(ck->dir, &ck->lock_fd) : QP_OK));
  if (!resume) {
    qp_ck_remove_files(ck);
    qp_ck_resume_hint(ck, -1);
    return QP_OK;
  }
  /* The newest stage whose file every rank has: a file goes only once every rank has written
   * the next stage's, and a fresh run removes the old ones first. */
  double newest = -1.0;
  for (int s = QP_STAGE_SPECTRA_RUN - 1; s >= 0 && newest < 0; --s) {
    char path[QP_CK_PATH_MAX];
    qp_ck_path(ck, (qp_stage_id)s, path, sizeof path);
    if (qp_ck_exists(path)) newest = s;
  }
  newest = -newest;
  QP_CALL(qp_comm_max(&newest, 1));
  ck->resume_after = (int)-newest;
  qp_ck_resume_hint(ck, ck->resume_after);
  if (ck->resume_after < 0) {
    if (p->progress)
      fprintf(stderr, "[qmlpipe] --resume: no checkpoint in '%s', starting from the first stage\n",
              dir);
    return QP_OK;
  }
  char path[QP_CK_PATH_MAX];
  qp_ck_path(ck, (qp_stage_id)ck->resume_after, path, sizeof path);
  QP_CALL(qp_comm_agree(qp_ck_check_header(ck, p, (qp_stage_id)ck->resume_after, path)));
  if (p->progress)
    fprintf(stderr, "[qmlpipe] --resume: continuing after %s from '%s'\n",
            qp_stage_name((qp_stage_id)ck->resume_after), dir);
  return QP_OK;
}

void qp_checkpoint_remove(const qp_checkpoint *ck) {
  if (ck->dir[0]) qp_ck_remove_files(ck);
}

void qp_checkpoint_close(qp_checkpoint *ck) {
  if (ck->dir[0]) qp_interrupt_set_resume_hint(NULL);
  qp_checkpoint_unlock(&ck->lock_fd);
  free(ck->inputs);
  ck->inputs = NULL;
}
