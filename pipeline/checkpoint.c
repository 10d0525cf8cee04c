/* checkpoint.c: the state between stages on disk (checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "h5_attr.h"
#include "atomic_file.h"
#include "checkpoint_inputs.h"
#include "interrupt.h"
#include "h5_error.h"
#include "terms.h"

#define QP_CHECKPOINT_FORMAT "qmlpipe checkpoint 1"
/* ---- the state: every buffer of qp_problem a stage can leave alive ---- */

typedef enum qp_ck_type { QP_CK_F64, QP_CK_I64, QP_CK_INT, QP_CK_MATRIX } qp_ck_type;

typedef struct qp_ck_slot {
  const char *name; /* the dataset */
  const char *term; /* the budget term it is allocated under (always persistent) */
  qp_ck_type type;
  size_t offset;    /* of the pointer or qp_matrix in qp_problem */
} qp_ck_slot;

/* In restore order: smw_lu before its pivots (their count follows its layout), N before
 * noise_factor (a view of it when N is dense). */
static const qp_ck_slot qp_ck_slots[] = {
    {"observed", QP_TERM_OBSERVED_INDEX, QP_CK_I64, offsetof(qp_problem, observed)},
    {"vectors", QP_TERM_PIXEL_VECTORS, QP_CK_F64, offsetof(qp_problem, vectors)},
    {"maps", QP_TERM_MAPS, QP_CK_F64, offsetof(qp_problem, maps)},
    {"noise_variance", QP_TERM_NOISE_VARIANCE, QP_CK_F64, offsetof(qp_problem, noise_variance)},
    {"noise", QP_TERM_NOISE, QP_CK_MATRIX, offsetof(qp_problem, noise)},
    {"covariance", QP_TERM_COVARIANCE, QP_CK_MATRIX, offsetof(qp_problem, cov)},
    {"noise_factor", QP_TERM_NOISE_EFF, QP_CK_MATRIX, offsetof(qp_problem, noise_factor)},
    {"vt", QP_TERM_V, QP_CK_MATRIX, offsetof(qp_problem, vt)},
    {"kernel", QP_TERM_KERNEL, QP_CK_MATRIX, offsetof(qp_problem, kernel)},
    {"smw_lu", QP_TERM_SMW_LU, QP_CK_MATRIX, offsetof(qp_problem, smw_lu)},
    {"pivots", QP_TERM_PIVOTS, QP_CK_INT, offsetof(qp_problem, pivots)},
    {"mode_maps", QP_TERM_MODE_MAPS, QP_CK_MATRIX, offsetof(qp_problem, mode_maps)},
    {"fisher", QP_TERM_FISHER, QP_CK_F64, offsetof(qp_problem, fisher)},
    {"noise_bias", QP_TERM_NOISE_BIAS, QP_CK_F64, offsetof(qp_problem, noise_bias)},
};
enum { QP_CK_SLOTS = sizeof qp_ck_slots / sizeof qp_ck_slots[0] };

static void *qp_ck_field(const qp_problem *p, const qp_ck_slot *s) {
  return (char *)p + s->offset;
}

/* The elements of a pointer slot, from the dimensions that sized it. */
static int64_t qp_ck_count(const qp_problem *p, const qp_ck_slot *s) {
  if (s->offset == offsetof(qp_problem, observed)) return p->n_observed;
  if (s->offset == offsetof(qp_problem, vectors)) return 3 * p->n_observed;
  if (s->offset == offsetof(qp_problem, maps)) return p->n_pix * p->n_maps;
  if (s->offset == offsetof(qp_problem, noise_variance)) return p->n_pix;
  if (s->offset == offsetof(qp_problem, pivots)) return qp_linalg_pivot_count(&p->smw_lu);
  if (s->offset == offsetof(qp_problem, fisher)) return (int64_t)p->n_params * p->n_params;
  return p->n_params; /* noise_bias */
}

static hid_t qp_ck_h5_type(qp_ck_type t) {
  return t == QP_CK_I64 ? H5T_NATIVE_INT64 : t == QP_CK_INT ? H5T_NATIVE_INT : H5T_NATIVE_DOUBLE;
}

static size_t qp_ck_elem(qp_ck_type t) {
  return t == QP_CK_I64 ? sizeof(int64_t) : t == QP_CK_INT ? sizeof(int) : sizeof(double);
}

/* The buffer of a slot that this rank holds and owns (a view is not saved), and its elements;
 * NULL when the slot is empty. */
static void *qp_ck_buffer(const qp_problem *p, const qp_ck_slot *s, int64_t *count) {
  if (s->type == QP_CK_MATRIX) {
    const qp_matrix *m = qp_ck_field(p, s);
    *count = qp_matrix_local_size(m);
    return m->data && m->owns ? m->data : NULL;
  }
  *count = qp_ck_count(p, s);
  return *(void **)qp_ck_field(p, s);
}

/* ---- names ---- */

static void qp_ck_path(const qp_checkpoint *ck, qp_stage_id id, char *out, size_t size) {
  snprintf(out, size, "%s/stage-%s.rank%d.h5", ck->dir, qp_stage_name(id), qp_comm_rank());
}

/* ---- small HDF5 helpers ---- */

static qp_err qp_ck_attr_u64(hid_t obj, const char *where, const char *name, uint64_t *v) {
  int64_t x = 0;
  QP_CALL(qp_h5_attr_i64(obj, where, name, 1, &x));
  *v = (uint64_t)x;
  return QP_OK;
}

/* ---- save ---- */

/* The grid of this run: ranks, rows, cols, block (1 1 1 0 without the distributed backend). */
static void qp_ck_grid(const qp_problem *p, int64_t g[4]) {
  const qp_grid *grid = p->ops && p->ops->distributed ? qp_grid_current() : NULL;
  g[0] = qp_comm_size();
  g[1] = grid ? grid->nprow : 1;
  g[2] = grid ? grid->npcol : 1;
  g[3] = grid ? grid->block : 0;
}

static const char *const qp_ck_grid_names[4] = {"n_ranks", "grid_rows", "grid_cols", "block"};

/* The scalars a resumed run checks or takes over. */
static qp_err qp_ck_write_header(hid_t file, const char *where, const qp_checkpoint *ck,
                                 const qp_problem *p, qp_stage_id done) {
  int64_t g[4];
  qp_ck_grid(p, g);
  QP_CALL(qp_h5_attr_write_string(file, where, "format", QP_CHECKPOINT_FORMAT));
  QP_CALL(qp_h5_attr_write_string(file, where, "stage", qp_stage_name(done)));
  QP_CALL(qp_h5_attr_write_string(file, where, "path_reason", p->path_reason));
  QP_CALL(qp_h5_attr_write_string(file, where, "smw_refused", p->smw_refused));
  for (int i = 0; i < 4; ++i) QP_CALL(qp_h5_attr_write_i64(file, where, qp_ck_grid_names[i], g[i]));
  const struct {
    const char *name;
    int64_t v;
  } ints[] = {{"rank", qp_comm_rank()},
              {"path_used", p->path_used},
              {"smw", p->smw},
              {"n_pix", p->n_pix},
              {"n_modes", p->n_modes},
              {"n_params", p->n_params},
              {"n_maps", p->n_maps},
              {"noise_factor_is_noise",
               p->noise_factor.data && p->noise_factor.data == p->noise.data}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i)
    QP_CALL(qp_h5_attr_write_i64(file, where, ints[i].name, ints[i].v));
  QP_CALL(qp_h5_write_array(file, where, "inputs", H5T_NATIVE_CHAR, strlen(ck->inputs), ck->inputs,
                            NULL));
  QP_CALL(qp_h5_write_array(file, where, "rcond", H5T_NATIVE_DOUBLE, QP_RCOND_COUNT, p->rcond,
                            NULL));
  return QP_OK;
}

/* Every live buffer, straight from memory, with its hash; *bytes: their sum. */
static qp_err qp_ck_write_state(hid_t file, const char *where, const qp_problem *p,
                                size_t *bytes) {
  *bytes = 0;
  for (int i = 0; i < QP_CK_SLOTS; ++i) {
    const qp_ck_slot *s = &qp_ck_slots[i];
    int64_t count = 0;
    const void *data = qp_ck_buffer(p, s, &count);
    if (!data) continue;
    if (s->type == QP_CK_MATRIX) {
      const qp_matrix *m = qp_ck_field(p, s);
      QP_CHECK(m->space == QP_SPACE_HOST, QP_ERR_UNSUPPORTED,
               "checkpoint: matrix '%s' is in device memory (backend cuda): checkpoints need "
               "the cpu or dist backend",
               s->name);
      QP_CHECK(m->ld == m->local_rows || m->local_rows == 0, QP_ERR_INTERNAL,
               "checkpoint: matrix '%s' has ld %lld for %lld local rows", s->name,
               (long long)m->ld, (long long)m->local_rows);
    }
    const size_t n = (size_t)count * qp_ck_elem(s->type);
    hid_t dset = -1;
    QP_CALL(qp_h5_write_array(file, where, s->name, qp_ck_h5_type(s->type), (hsize_t)count, data,
                              &dset));
    qp_err err = qp_h5_attr_write_i64(dset, where, "hash",
                                      (int64_t)qp_hash_bytes(QP_HASH_BASIS, data, n));
    if (err == QP_OK && s->type == QP_CK_MATRIX) {
      const qp_matrix *m = qp_ck_field(p, s);
      err = qp_h5_attr_write_i64(dset, where, "rows", m->rows);
      if (err == QP_OK) err = qp_h5_attr_write_i64(dset, where, "cols", m->cols);
    }
    H5Dclose(dset);
    QP_CALL(err);
    *bytes += n;
  }
  /* Every tracked byte alive is in the file: nothing the next stage needs is left out. */
  QP_CHECK(*bytes == qp_budget_current(QP_SPACE_HOST), QP_ERR_INTERNAL,
           "checkpoint: %zu bytes of state saved but %zu tracked alive", *bytes,
           qp_budget_current(QP_SPACE_HOST));
  return QP_OK;
}

/* A checkpoint is written where it will stay, through a private temporary beside it
 * (budget/atomic_file.h: exclusive, unpredictable, removed by the signal handler), then fsync
 * and rename. HDF5 writes the file itself, straight from the tracked buffers: a checkpoint can
 * hold GiB, which the in-memory image of the results (h5_image.h) would double. An H5Fclose
 * that fails here leaves HDF5's table broken for its exit handler (h5_image.h): it is marked,
 * and qmlpipe then ends without the libraries' exit handlers (qp_h5_close_failed). */
static qp_err qp_ck_write(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id done,
                          const char *path, int with_state, size_t *bytes) {
  qp_err err = QP_OK;
  hid_t fapl = -1, file = -1;
  qp_atomic_file temp;
  int begun = 0;
  QP_H5_GOTO(fapl = H5Pcreate(H5P_FILE_ACCESS), done, "%s: file access list", path);
  QP_H5_GOTO(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), done, "%s: file access list", path);
  QP_CALL_GOTO(qp_atomic_begin(path, &temp), done);
  begun = 1;
  QP_H5_GOTO(file = H5Fcreate(temp.path, H5F_ACC_EXCL, H5P_DEFAULT, fapl), done,
             "cannot create checkpoint '%s'", path);
  QP_CALL_GOTO(qp_ck_write_header(file, path, ck, p, done), done);
  if (with_state) QP_CALL_GOTO(qp_ck_write_state(file, path, p, bytes), done);
  herr_t closed = H5Fclose(file);
  file = -1;
  if (closed < 0) qp_h5_mark_close_failed();
  QP_H5_GOTO(closed, done, "cannot close checkpoint '%s'", path);
  QP_CALL_GOTO(qp_atomic_commit(&temp, 1), done);
  begun = 0;
done:
  if (file >= 0 && H5Fclose(file) < 0) qp_h5_mark_close_failed();
  if (fapl >= 0) H5Pclose(fapl);
  if (begun) qp_atomic_abort(&temp);
  return err;
}

static double qp_ck_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* What the signal handler says can be resumed (budget/interrupt.h). */
static void qp_ck_resume_hint(const qp_checkpoint *ck, int after) {
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

void qp_checkpoint_save(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id done) {
  if (!ck->dir[0]) return;
  char path[QP_PATH_MAX + 64];
  qp_ck_path(ck, done, path, sizeof path);
  size_t bytes = 0;
  const double t0 = qp_ck_now();
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  qp_err err = qp_comm_agree(qp_ck_write(ck, p, done, path, 1, &bytes));
  if (err != QP_OK) {
    /* No rank keeps a file of this stage: a resume takes the older complete set. */
    unlink(path);
    if (qp_comm_rank() == 0)
      fprintf(stderr, "[qmlpipe] warning: no checkpoint after %s (the run goes on): %s\n",
              qp_stage_name(done), qp_error_message());
    qp_error_clear();
    return;
  }
  /* Every rank has this stage's file now: the older ones are not needed any more, so the
   * directory holds at most two stages' files (while the newer is written). */
  for (int s = 0; s < (int)done; ++s) {
    qp_ck_path(ck, (qp_stage_id)s, path, sizeof path);
    unlink(path);
  }
  qp_ck_resume_hint(ck, (int)done);
  if (p->progress)
    fprintf(stderr, "[qmlpipe] checkpoint after %s: %.2f MiB in %.2f s (%s)\n",
            qp_stage_name(done), (double)bytes / 1048576.0, qp_ck_now() - t0, ck->dir);
}

/* ---- open (resume) ---- */

static int qp_ck_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Checks this rank's file of stage `id` at `path` against this run. */
static qp_err qp_ck_check_header(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id id,
                                 const char *path) {
  qp_err err = QP_OK;
  char text[256];
  char *inputs = NULL;
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0)
    QP_H5_FAIL(QP_ERR_IO,
               "checkpoint '%s' cannot be read (truncated or damaged?); remove it to resume from "
               "the stage before, or remove '%s' to start again",
               path, ck->dir);
  QP_CALL_GOTO(qp_h5_attr_string(file, path, "format", text, sizeof text), done);
  QP_CHECK_GOTO(strcmp(text, QP_CHECKPOINT_FORMAT) == 0, QP_ERR_IO, done,
                "'%s' is not a qmlpipe checkpoint (format '%s', expected '%s')", path, text,
                QP_CHECKPOINT_FORMAT);
  QP_CALL_GOTO(qp_h5_attr_string(file, path, "stage", text, sizeof text), done);
  QP_CHECK_GOTO(strcmp(text, qp_stage_name(id)) == 0, QP_ERR_IO, done,
                "checkpoint '%s' holds stage '%s'", path, text);
  int64_t g[4], then[4];
  qp_ck_grid(p, g);
  for (int i = 0; i < 4; ++i)
    QP_CALL_GOTO(qp_h5_attr_i64(file, path, qp_ck_grid_names[i], 1, &then[i]), done);
  QP_CHECK_GOTO(memcmp(g, then, sizeof g) == 0, QP_ERR_INPUT, done,
                "checkpoint '%s' was written by %lld rank(s) on a %lld x %lld grid, block %lld; "
                "this run has %lld on %lld x %lld, block %lld: resume with the same ranks and "
                "grid, or remove '%s' to start again",
                path, (long long)then[0], (long long)then[1], (long long)then[2],
                (long long)then[3], (long long)g[0], (long long)g[1], (long long)g[2],
                (long long)g[3], ck->dir);
  hid_t dset = -1, space = -1;
  QP_H5_GOTO(dset = H5Dopen2(file, "inputs", H5P_DEFAULT), done, "%s: dataset 'inputs'", path);
  space = H5Dget_space(dset);
  const hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (space >= 0) H5Sclose(space);
  H5Dclose(dset);
  QP_H5_GOTO(n, done, "%s: dataset 'inputs'", path);
  inputs = calloc((size_t)n + 1, 1);
  QP_CHECK_GOTO(inputs, QP_ERR_NOMEM, done, "no memory for checkpoint '%s'", path);
  QP_CALL_GOTO(qp_h5_read_array(file, path, "inputs", H5T_NATIVE_CHAR, inputs, n), done);
  QP_CALL_GOTO(qp_checkpoint_compare_inputs(path, inputs, ck->inputs, ck->dir), done);
  /* The route: a run that left SMW inside covariance_setup (qp_plan_reroute_smw) resumes
   * on another route than its plan's; not supported. */
  int64_t route[2];
  QP_CALL_GOTO(qp_h5_attr_i64(file, path, "path_used", 1, &route[0]), done);
  QP_CALL_GOTO(qp_h5_attr_i64(file, path, "smw", 1, &route[1]), done);
  QP_CHECK_GOTO(route[0] == p->path_used && route[1] == p->smw, QP_ERR_UNSUPPORTED, done,
                "checkpoint '%s' continues another route than this run's plan (the run left SMW "
                "after reading the noise): resuming it is not supported; remove '%s'",
                path, ck->dir);
done:
  free(inputs);
  H5Fclose(file);
  return err;
}

size_t qp_checkpoint_disk_bytes(const qp_model *model) {
  size_t disk = 0;
  for (int s = 0; s < QP_STAGE_SPECTRA_RUN; ++s) {
    const size_t pair = qp_model_stage_persistent(model, (qp_stage_id)s) +
                        (s > 0 ? qp_model_stage_persistent(model, (qp_stage_id)(s - 1)) : 0);
    if (pair > disk) disk = pair;
  }
  return disk;
}

/* A warning (rank 0) when the directory's file system has less room than every rank's
 * checkpoints need: the run goes on, and a checkpoint that does not fit is skipped. */
static void qp_ck_check_space(const qp_checkpoint *ck, const qp_problem *p) {
  struct statvfs fs;
  const double need = (double)qp_checkpoint_disk_bytes(&p->model) * qp_comm_size();
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
  char path[QP_PATH_MAX + 64];
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
    char path[QP_PATH_MAX + 64];
    qp_ck_path(ck, (qp_stage_id)s, path, sizeof path);
    unlink(path);
  }
}

qp_err qp_checkpoint_open(qp_checkpoint *ck, const char *dir, int resume, const qp_problem *p) {
  memset(ck, 0, sizeof *ck);
  ck->resume_after = -1;
  if (!dir || !dir[0]) return QP_OK;
  QP_CHECK(strlen(dir) + 64 < sizeof ck->dir, QP_ERR_INPUT, "checkpoint directory '%s' is too long",
           dir);
  snprintf(ck->dir, sizeof ck->dir, "%s", dir);
  ck->resume = resume;
  QP_CHECK(strcmp(p->cfg->backend, "cuda") != 0, QP_ERR_UNSUPPORTED,
           "checkpoint '%s': the cuda backend keeps its matrices in device memory; checkpoints "
           "need the cpu or dist backend",
           dir);
  QP_CALL(qp_checkpoint_share_inputs(p->cfg, &ck->inputs));
  qp_ck_check_space(ck, p);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  QP_CALL(qp_comm_agree(qp_ck_probe(ck, p)));
  if (!resume) {
    qp_ck_remove_files(ck);
    qp_ck_resume_hint(ck, -1);
    return QP_OK;
  }
  /* The newest stage whose file every rank has: a file goes only once every rank has written
   * the next stage's, and a fresh run removes the old ones first. */
  double newest = -1.0;
  for (int s = QP_STAGE_SPECTRA_RUN - 1; s >= 0 && newest < 0; --s) {
    char path[QP_PATH_MAX + 64];
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
  char path[QP_PATH_MAX + 64];
  qp_ck_path(ck, (qp_stage_id)ck->resume_after, path, sizeof path);
  QP_CALL(qp_comm_agree(qp_ck_check_header(ck, p, (qp_stage_id)ck->resume_after, path)));
  if (p->progress)
    fprintf(stderr, "[qmlpipe] --resume: continuing after %s from '%s'\n",
            qp_stage_name((qp_stage_id)ck->resume_after), dir);
  return QP_OK;
}

/* ---- restore ---- */

/* One slot from the file into a newly allocated buffer of its term. */
static qp_err qp_ck_restore_slot(hid_t file, const char *where, qp_problem *p,
                                 const qp_ck_slot *s) {
  qp_err err = QP_OK;
  hid_t dset = -1;
  int64_t count = 0, rows = 0, cols = 0;
  uint64_t hash = 0;
  QP_H5_GOTO(dset = H5Dopen2(file, s->name, H5P_DEFAULT), done, "%s: dataset '%s'", where,
             s->name);
  QP_CALL_GOTO(qp_ck_attr_u64(dset, where, "hash", &hash), done);
  void *data = NULL;
  if (s->type == QP_CK_MATRIX) {
    qp_matrix *m = qp_ck_field(p, s);
    QP_CALL_GOTO(qp_h5_attr_i64(dset, where, "rows", 1, &rows), done);
    QP_CALL_GOTO(qp_h5_attr_i64(dset, where, "cols", 1, &cols), done);
    QP_CALL_GOTO(qp_matrix_create(p->ops, s->term, QP_TERM_PERSISTENT, rows, cols, m), done);
    data = m->data;
    count = qp_matrix_local_size(m);
  } else {
    count = qp_ck_count(p, s);
    QP_CALL_GOTO(qp_budget_alloc_array(s->term, QP_TERM_PERSISTENT, (size_t)count,
                                       qp_ck_elem(s->type), (void **)qp_ck_field(p, s)),
                 done);
    data = *(void **)qp_ck_field(p, s);
  }
  H5Dclose(dset);
  dset = -1;
  QP_CALL_GOTO(qp_h5_read_array(file, where, s->name, qp_ck_h5_type(s->type), data, count), done);
  const uint64_t got = qp_hash_bytes(QP_HASH_BASIS, data, (size_t)count * qp_ck_elem(s->type));
  QP_CHECK_GOTO(got == hash, QP_ERR_IO, done,
                "checkpoint '%s' is damaged: dataset '%s' does not have the hash it was written "
                "with (%016llx, read %016llx); remove the file to resume from the stage before",
                where, s->name, (unsigned long long)hash, (unsigned long long)got);
done:
  if (dset >= 0) H5Dclose(dset);
  return err;
}

static qp_err qp_ck_restore_file(qp_problem *p, const char *path) {
  qp_err err = QP_OK;
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) QP_H5_FAIL(QP_ERR_IO, "checkpoint '%s' cannot be read", path);
  QP_CALL_GOTO(qp_h5_attr_string(file, path, "path_reason", p->path_reason,
                                  sizeof p->path_reason),
               done);
  QP_CALL_GOTO(qp_h5_attr_string(file, path, "smw_refused", p->smw_refused,
                                  sizeof p->smw_refused),
               done);
  QP_CALL_GOTO(qp_h5_read_array(file, path, "rcond", H5T_NATIVE_DOUBLE, p->rcond, QP_RCOND_COUNT),
               done);
  int64_t view = 0;
  QP_CALL_GOTO(qp_h5_attr_i64(file, path, "noise_factor_is_noise", 1, &view), done);
  for (int i = 0; i < QP_CK_SLOTS; ++i) {
    const htri_t has = H5Lexists(file, qp_ck_slots[i].name, H5P_DEFAULT);
    QP_H5_GOTO(has, done, "%s: dataset '%s'", path, qp_ck_slots[i].name);
    if (has) QP_CALL_GOTO(qp_ck_restore_slot(file, path, p, &qp_ck_slots[i]), done);
  }
  if (view)
    QP_CALL_GOTO(qp_matrix_view(p->ops, QP_TERM_NOISE, p->noise.data, p->n_pix, p->n_pix, p->n_pix,
                                &p->noise_factor),
                 done);
done:
  H5Fclose(file);
  return err;
}

qp_err qp_checkpoint_restore(const qp_checkpoint *ck, qp_problem *p, qp_stage_id id) {
  if ((int)id != ck->resume_after) return QP_OK; /* an earlier stage: nothing of its own */
  char path[QP_PATH_MAX + 64];
  qp_ck_path(ck, id, path, sizeof path);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  QP_CALL(qp_ck_restore_file(p, path));
  return QP_OK;
}

void qp_checkpoint_remove(const qp_checkpoint *ck) {
  if (ck->dir[0]) qp_ck_remove_files(ck);
}

void qp_checkpoint_close(qp_checkpoint *ck) {
  if (ck->dir[0]) qp_interrupt_set_resume_hint(NULL);
  free(ck->inputs);
  ck->inputs = NULL;
}
