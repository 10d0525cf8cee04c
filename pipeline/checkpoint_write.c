/* checkpoint_write.c: a stage's state written to this rank's checkpoint file (checkpoint.h,
 * checkpoint_file.h). */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "checkpoint_file.h"
#include "checkpoint_inputs.h"
#include "clock.h"
#include "comm.h"
#include "h5_attr.h"
#include "h5_error.h"

/* The buffer of a pointer slot, NULL when the slot is empty; *count its elements. */
static void *qp_ck_buffer(const qp_problem *p, const qp_ck_slot *s, int64_t *count) {
  *count = qp_ck_count(p, s);
  return *(void **)qp_ck_field(p, s);
}

/* A matrix slot that this rank owns (a view is not saved) into one 1-D dataset of its local
 * part (qp_ck_stream_matrix), with the hash of those bytes; *bytes gets its size. */
static qp_err qp_ck_write_matrix(hid_t file, const char *where, const qp_ck_slot *s,
                                 const qp_matrix *m, size_t *bytes) {
  const int64_t count = qp_matrix_local_size(m);
  hid_t dset = -1;
  uint64_t hash = 0;
  QP_CALL(qp_h5_write_array(file, where, s->name, H5T_NATIVE_DOUBLE, (hsize_t)count, NULL,
                            &dset));
  /* The window never writes back when it only reads: the cast does not lose the const. */
  qp_err err = qp_ck_stream_matrix(dset, where, s->name, (qp_matrix *)m, 1, &hash);
  if (err == QP_OK) err = qp_h5_attr_write_i64(dset, where, "hash", (int64_t)hash);
  if (err == QP_OK) err = qp_h5_attr_write_i64(dset, where, "rows", m->rows);
  if (err == QP_OK) err = qp_h5_attr_write_i64(dset, where, "cols", m->cols);
  H5Dclose(dset);
  QP_CALL(err);
  *bytes += (size_t)count * sizeof(double);
  return QP_OK;
}

/* The scalars a resumed run checks or takes over. */
static qp_err qp_ck_write_header(hid_t file, const char *where, const qp_checkpoint *ck,
                                 const qp_problem *p, qp_stage_id done) {
  int64_t g[4];
  qp_ck_grid(p, g);
  QP_CALL(qp_h5_attr_write_string(file, where, "format", QP_CHECKPOINT_FORMAT));
  QP_CALL(qp_h5_attr_write_string(file, where, "stage", qp_stage_name(done)));
  QP_CALL(qp_h5_attr_write_string(file, where, "path_reason", p->plan->path_reason));
  QP_CALL(qp_h5_attr_write_string(file, where, "smw_refused", p->plan->smw_refused));
  for (int i = 0; i < 4; ++i) QP_CALL(qp_h5_attr_write_i64(file, where, qp_ck_grid_names[i], g[i]));
  const struct {
    const char *name;
    int64_t v;
  } ints[] = {{"rank", qp_comm_rank()},
              {"path_used", p->plan->path_used},
              {"smw", p->plan->smw},
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
  QP_CALL(qp_h5_write_array(file, where, "noise_field_mean", H5T_NATIVE_DOUBLE, 2,
                            p->noise_field_mean, NULL));
  return QP_OK;
}

/* Every live buffer with its hash (a device matrix through host windows); *bytes: their sum. */
static qp_err qp_ck_write_state(hid_t file, const char *where, const qp_problem *p,
                                size_t *bytes) {
  *bytes = 0;
  for (int i = 0; i < QP_CK_SLOTS; ++i) {
    const qp_ck_slot *s = &qp_ck_slots[i];
    if (s->type == QP_CK_MATRIX) {
      const qp_matrix *m = qp_ck_field(p, s);
      /* Every matrix this rank created, even one of which it holds no entry (a few maps'
       * columns on a grid): the resumed run needs its shape on every rank. */
      if (m->owns) QP_CALL(qp_ck_write_matrix(file, where, s, m, bytes));
      continue;
    }
    int64_t count = 0;
    const void *data = qp_ck_buffer(p, s, &count);
    if (!data) continue;
    const size_t n = (size_t)count * qp_ck_elem(s->type);
    hid_t dset = -1;
    QP_CALL(qp_h5_write_array(file, where, s->name, qp_ck_h5_type(s->type), (hsize_t)count, data,
                              &dset));
    qp_err err = qp_h5_attr_write_i64(dset, where, "hash",
                                      (int64_t)qp_hash_bytes(QP_HASH_BASIS, data, n));
    H5Dclose(dset);
    QP_CALL(err);
    *bytes += n;
  }
  /* Every tracked byte alive is in the file: nothing the next stage needs is left out. A
   * device backend also tracks buffers of its own (its workspaces, cuda's pinned staging)
   * that are not state: there the resumed runs of tests/pipeline/test_checkpoint_cli.c on
   * hostdev, the same bytes as uninterrupted ones, are what shows nothing is left out. */
  if (!qp_linalg_on_device(p->ops)) {
    /* dist's held tiled blocks (the harmonic routes) are the backend's, not state: held again
     * at a resume (checkpoint_read.c) */
    const size_t held = qp_problem_backend_held_bytes(p);
    QP_CHECK(*bytes + held == qp_budget_current(QP_SPACE_HOST), QP_ERR_INTERNAL,
             "checkpoint: %zu bytes of state saved and %zu of the backend's own held, but %zu "
             "tracked alive", *bytes, held, qp_budget_current(QP_SPACE_HOST));
  }
  return QP_OK;
}

/* A checkpoint is written where it will stay, through a private temporary beside it
 * (base/atomic_file.h: exclusive, unpredictable, removed by the signal handler), then fsync
 * and rename. HDF5 writes the file itself, straight from the tracked buffers: a checkpoint can
 * hold GiB, which the in-memory image of the results (h5_image.h) would double. An H5Fclose
 * that fails here leaves HDF5's table broken for its exit handler (h5_image.h): it is marked,
 * and qmlpipe then ends without the libraries' exit handlers (qp_h5_close_failed). HDF5's own
 * printing is off while the file is written: a failure (a full disk) is one message, the
 * caller's warning. */
qp_err qp_ck_write(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id done,
                   const char *path, int with_state, size_t *bytes) {
  qp_err err = QP_OK;
  hid_t fapl = -1, file = -1;
  qp_atomic_file temp;
  int begun = 0;
  qp_h5_quiet quiet;
  qp_h5_quiet_begin(&quiet);
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
  qp_h5_quiet_end(&quiet);
  return err;
}

void qp_checkpoint_save(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id done) {
  if (!ck->dir[0]) return;
  char path[QP_CK_PATH_MAX];
  qp_ck_path(ck, done, path, sizeof path);
  size_t bytes = 0;
  const double t0 = qp_clock_seconds();
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
            qp_stage_name(done), (double)bytes / 1048576.0, qp_clock_seconds() - t0, ck->dir);
}
