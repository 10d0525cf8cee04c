/* report_layout.h: the compound rows of the /budget report, shared by its writer
 * (report_h5.c) and its reader (report_print.c). Private to budget/. */
#ifndef QP_REPORT_LAYOUT_H
#define QP_REPORT_LAYOUT_H

#include <hdf5.h>
#include <stdint.h>

#include "budget.h"

enum {
  QP_REPORT_KIND_LEN = 16, /* fixed-length strings of the terms dataset */
  QP_REPORT_SPACE_LEN = 16,
  QP_REPORT_EVENT_KIND_LEN = 8,          /* "push" / "pop" in /budget/timeline/events */
  QP_REPORT_ROWS_MAX = 2 * QP_TERMS_MAX, /* predicted terms plus tracked terms, at most */
  QP_REPORT_WHERE_MAX = 1024
};

/* One row of /budget/<stage>/terms. */
typedef struct qp_report_row {
  char name[QP_TERM_NAME_MAX];
  char kind[QP_REPORT_KIND_LEN];
  char space[QP_REPORT_SPACE_LEN];
  int64_t predicted_bytes;
  int64_t tracked_peak_bytes;
  int64_t tracked_start_bytes;
  int64_t tracked_end_bytes;
} qp_report_row;

/* One row of /budget/timeline/events. */
typedef struct qp_report_event {
  double t_seconds;
  char stage[QP_STAGE_NAME_MAX];
  char kind[QP_REPORT_EVENT_KIND_LEN];
} qp_report_event;

/** The HDF5 compound type of a terms row (H5Tclose it); -1 on failure. */
hid_t qp_report_row_type(void);
/** The compound type of an events row; fields by name, so a reader may pick some; -1 on
 *  failure. */
hid_t qp_report_event_type(int with_t, int with_stage, int with_kind);

#endif
