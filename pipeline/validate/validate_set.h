/* validate_set.h: what `qmlpipe validate` reads from results files and how it judges and prints
 * it (cmd_validate.c: the command; validate_read.c, validate_print.c). Private to cli/. */
#ifndef QP_VALIDATE_SET_H
#define QP_VALIDATE_SET_H

#include <stdint.h>
#include <stdio.h>

#include "budget.h"
#include "qp_error.h"

enum {
  QP_VAL_TEXT_MAX = 64, /* path_used, stage names as printed */
  QP_VAL_WHERE_MAX = 4096 + 320,
  QP_VAL_SUFFIX_DEPTH = 16 /* path components tried to make short file names unique */
};


/* One results file. */
typedef struct qp_val_file {
  const char *path;
  const char *short_name; /* the shortest trailing part of the path unique among the files */
  char path_used[QP_VAL_TEXT_MAX];
  int64_t n_pix;    /* -1 when the file lacks it */
  int64_t baseline; /* /budget baseline_rss_bytes; -1 unknown */
  /* a device run's context (/budget device_context_*_bytes): predicted by the plan, measured
   * by the device meter's baseline; -1 unknown (host runs, older files) */
  int64_t context_predicted, context_measured;
  /* 1: the backend's device memory is host memory (hostdev, the CPU emulation of a device):
   * RSS then holds both spaces, and both are compared with it */
  int device_in_host;
  int read_ok;
} qp_val_file;

/* One stage of one file, with its verdict. */
typedef struct qp_val_stage {
  int file;
  char name[QP_VAL_TEXT_MAX];
  int model_has_stage, hwm_reset;
  int64_t pred_peak, pred_persistent; /* tracked bytes above the baseline */
  int64_t library;                    /* predicted_library_bytes (in pred_peak) */
  int64_t meas_peak, meas_persistent; /* RSS above the baseline; -1 unknown */
  double err_peak, err_persistent;    /* (measured - predicted) / measured; NAN unknown */
  int judge_peak, judge_persistent;   /* compared against the tolerance */
  int fail_peak, fail_persistent;
  int n_terms, drift; /* rows of "terms"; rows whose two columns differ */
  int resumed;        /* restored from a checkpoint: shown, never judged (checkpoint.h) */
} qp_val_stage;

/* One term whose predicted and tracked bytes differ. */
typedef struct qp_val_drift {
  int stage; /* index into the stages */
  char term[QP_TERM_NAME_MAX];
  int64_t predicted, tracked;
} qp_val_drift;

/* Everything read, grown as files are read. */
typedef struct qp_val_set {
  qp_val_file *files;
  int n_files;
  qp_val_stage *stages;
  int n_stages, cap_stages;
  qp_val_drift *drifts;
  int n_drifts, cap_drifts;
} qp_val_set;

/** Reads one results file into the set: its root attributes, /budget, and every stage group
 *  in the order the stages ran. */
qp_err qp_val_read_file(qp_val_set *set, int file);
/** Each stage's errors and verdicts against `tolerance`; stages under `min_bytes` not judged. */
void qp_val_judge(qp_val_set *set, double tolerance, int64_t min_bytes);
int qp_val_stage_failed(const qp_val_stage *s);
/** Each file's shortest trailing part of its path that no other file shares. */
void qp_val_short_names(qp_val_set *set);
/** The table and the error distribution. */
void qp_val_print(FILE *out, const qp_val_set *set, double tolerance, int64_t min_bytes);
/** The failures, one line each; returns how many stages failed. */
int qp_val_print_failures(FILE *out, const qp_val_set *set, double tolerance);

#endif
