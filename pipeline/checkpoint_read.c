/* checkpoint_read.c: a checkpoint file checked against this run, and the state read back from
 * it (checkpoint.h, checkpoint_file.h). HDF5's own printing is off while a file is read: its
 * failures come back as one message naming the file and dataset. */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_file.h"
#include "checkpoint_inputs.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "input_file.h"
#include "memory_model.h"
#include "terms.h"

/* An attribute written as int64 (h5_attr.h) taken back as the uint64 it holds: read as int64,
 * since HDF5 would clamp a negative int64 to 0 when converting to an unsigned type. */
static qp_err qp_ck_attr_u64(hid_t obj, const char *where, const char *name, uint64_t *v) {
  int64_t x = 0;
  QP_CALL(qp_h5_attr_i64(obj, where, name, 1, &x));
  *v = (uint64_t)x;
  return QP_OK;
}

/* The inputs the file records ("<hash> <bytes> <path>\n" lines), into *text (malloc'd). */
static qp_err qp_ck_read_inputs(hid_t file, const char *path, char **text) {
  /* H5LT writes one extent per dimension the file has: room for any, dims[0] used (the
   * element count check of qp_h5_read_array refuses a dataset of another shape). */
  hsize_t dims[H5S_MAX_RANK] = {0};
  if (H5LTget_dataset_info(file, "inputs", dims, NULL, NULL) < 0)
    QP_H5_FAIL(QP_ERR_IO, "%s: dataset 'inputs'", path);
  *text = calloc((size_t)dims[0] + 1, 1);
  QP_CHECK(*text, QP_ERR_NOMEM, "no memory for checkpoint '%s'", path);
  QP_CALL(qp_h5_read_array(file, path, "inputs", H5T_NATIVE_CHAR, *text, (int64_t)dims[0]));
  return QP_OK;
}

qp_err qp_ck_check_header(const qp_checkpoint *ck, const qp_problem *p, qp_stage_id id,
                          const char *path) {
  qp_err err = QP_OK;
  char text[256];
  char *inputs = NULL;
  qp_h5_quiet quiet;
  /* A checkpoint that is not a regular file (a FIFO would block HDF5's open) is refused
   * before HDF5 opens the name (input_file.h). */
  QP_CALL(qp_input_check("checkpoint", path, QP_INPUT_ANY_SIZE));
  qp_h5_quiet_begin(&quiet);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  QP_H5_GOTO(file, done,
             "checkpoint '%s' cannot be read (truncated or damaged?); remove it to resume from "
             "the stage before, or remove '%s' to start again",
             path, ck->dir);
  QP_CALL_GOTO(qp_h5_attr_string(file, path, "format", text, sizeof text), done);
  const size_t prefix = strlen(QP_CHECKPOINT_FORMAT_PREFIX);
  QP_CHECK_GOTO(strncmp(text, QP_CHECKPOINT_FORMAT_PREFIX, prefix) != 0 ||
                    strcmp(text, QP_CHECKPOINT_FORMAT) == 0,
                QP_ERR_INPUT, done,
                "checkpoint '%s' was written by another version of qmlpipe (format '%s'; this "
                "one reads '%s'): remove '%s' to start again",
                path, text, QP_CHECKPOINT_FORMAT, ck->dir);
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
  QP_CALL_GOTO(qp_ck_read_inputs(file, path, &inputs), done);
  QP_CALL_GOTO(qp_checkpoint_compare_inputs(path, inputs, ck->inputs, ck->dir), done);
  /* The route: the plan's, re-route included (planner_route.c), the same for the same inputs;
   * a checkpoint of another route (written by an older qmlpipe that re-routed inside
   * covariance_setup) is refused. */
  int64_t route[2];
  QP_CALL_GOTO(qp_h5_attr_i64(file, path, "path_used", 1, &route[0]), done);
  QP_CALL_GOTO(qp_h5_attr_i64(file, path, "smw", 1, &route[1]), done);
  QP_CHECK_GOTO(route[0] == p->plan->path_used && route[1] == p->plan->smw, QP_ERR_UNSUPPORTED,
                done,
                "checkpoint '%s' continues another route than this run's plan (planned under "
                "another memory limit, or by an older qmlpipe that left SMW inside "
                "covariance_setup): resuming it is not supported; remove '%s'",
                path, ck->dir);
done:
  free(inputs);
  if (file >= 0) H5Fclose(file);
  qp_h5_quiet_end(&quiet);
  return err;
}

/* The checksum error of a slot whose bytes do not hash as they were written. */
static qp_err qp_ck_damaged(const char *where, const char *name, uint64_t hash, uint64_t got) {
  QP_FAIL(QP_ERR_IO,
          "checkpoint '%s' is damaged: dataset '%s' does not have the hash it was written "
          "with (%016llx, read %016llx); remove the file to resume from the stage before",
          where, name, (unsigned long long)hash, (unsigned long long)got);
}

/* A matrix slot into a new matrix of its term, in the run's space (W formed in blocks: the
 * host's W_host), through qp_ck_stream_matrix, its bytes hashed in the order they were
 * written. */
static qp_err qp_ck_restore_matrix(hid_t dset, const char *where, qp_problem *p,
                                   const qp_ck_slot *s, uint64_t hash) {
  int64_t rows = 0, cols = 0;
  QP_CALL(qp_h5_attr_i64(dset, where, "rows", 1, &rows));
  QP_CALL(qp_h5_attr_i64(dset, where, "cols", 1, &cols));
  qp_matrix *m = qp_ck_field(p, s);
  const int w_host = m == &p->kernel && qp_w_block(p) < p->n_modes;
  QP_CALL(qp_matrix_create(w_host ? qp_linalg_host_ops(p->ops) : p->ops,
                           w_host ? QP_TERM_KERNEL_HOST : s->term, QP_TERM_PERSISTENT, rows, cols,
                           m));
  const int64_t count = qp_matrix_local_size(m);
  const hid_t space = H5Dget_space(dset);
  const hssize_t stored = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
  if (space >= 0) H5Sclose(space);
  QP_CHECK(stored == count, QP_ERR_IO,
           "%s: dataset '%s' has %lld elements where %lld are expected", where, s->name,
           (long long)stored, (long long)count);
  uint64_t got = 0;
  QP_CALL(qp_ck_stream_matrix(dset, where, s->name, m, 0, &got));
  if (got != hash) QP_CALL(qp_ck_damaged(where, s->name, hash, got));
  return QP_OK;
}

/* One slot from the file into a newly allocated buffer of its term. */
static qp_err qp_ck_restore_slot(hid_t file, const char *where, qp_problem *p,
                                 const qp_ck_slot *s) {
  qp_err err = QP_OK;
  hid_t dset = -1;
  uint64_t hash = 0;
  QP_H5_GOTO(dset = H5Dopen2(file, s->name, H5P_DEFAULT), done, "%s: dataset '%s'", where,
             s->name);
  QP_CALL_GOTO(qp_ck_attr_u64(dset, where, "hash", &hash), done);
  if (s->type == QP_CK_MATRIX) {
    err = qp_ck_restore_matrix(dset, where, p, s, hash);
    goto done;
  }
  const int64_t count = qp_ck_count(p, s);
  QP_CALL_GOTO(qp_budget_alloc_array(s->term, QP_TERM_PERSISTENT, (size_t)count,
                                     qp_ck_elem(s->type), (void **)qp_ck_field(p, s)),
               done);
  void *data = *(void **)qp_ck_field(p, s);
  H5Dclose(dset);
  dset = -1;
  QP_CALL_GOTO(qp_h5_read_array(file, where, s->name, qp_ck_h5_type(s->type), data, count), done);
  const uint64_t got = qp_hash_bytes(QP_HASH_BASIS, data, (size_t)count * qp_ck_elem(s->type));
  if (got != hash) err = qp_ck_damaged(where, s->name, hash, got);
done:
  if (dset >= 0) H5Dclose(dset);
  return err;
}

static qp_err qp_ck_restore_file(qp_problem *p, const char *path) {
  qp_err err = QP_OK;
  qp_h5_quiet quiet;
  QP_CALL(qp_input_check("checkpoint", path, QP_INPUT_ANY_SIZE));
  qp_h5_quiet_begin(&quiet);
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  QP_H5_GOTO(file, done, "checkpoint '%s' cannot be read", path);
  /* path_reason and smw_refused are the plan's: this run planned the same route (checked when
   * the checkpoint was opened), before the first stage, as the run that wrote it did. */
  QP_CALL_GOTO(qp_h5_read_array(file, path, "rcond", H5T_NATIVE_DOUBLE, p->rcond, QP_RCOND_COUNT),
               done);
  QP_CALL_GOTO(qp_h5_read_array(file, path, "noise_field_mean", H5T_NATIVE_DOUBLE,
                                p->noise_field_mean, 2),
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
  if (file >= 0) H5Fclose(file);
  qp_h5_quiet_end(&quiet);
  return err;
}

/* The backend's own buffers as the stages up to `id` had grown them (the model's backend
 * terms allocated by then: each grows to its largest so far), so that the stages after a
 * resume hold and track what an uninterrupted run's do. */
static qp_err qp_ck_hold_workspaces(const qp_problem *p, qp_stage_id id) {
  for (int i = 0; i < p->plan->model.n_terms; ++i) {
    const qp_model_term *t = &p->plan->model.terms[i];
    if (qp_model_backend_term(t) && t->stage_alloc <= (int)id)
      QP_CALL(qp_linalg_hold_workspace(p->ops, t->name, t->bytes));
  }
  return QP_OK;
}

qp_err qp_checkpoint_restore(const qp_checkpoint *ck, qp_problem *p, qp_stage_id id) {
  if ((int)id != ck->resume_after) return QP_OK; /* an earlier stage: nothing of its own */
  char path[QP_CK_PATH_MAX];
  qp_ck_path(ck, id, path, sizeof path);
  QP_CALL(qp_ck_restore_file(p, path));
  QP_CALL(qp_ck_hold_workspaces(p, id));
  return QP_OK;
}
