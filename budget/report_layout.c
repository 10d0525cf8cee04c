/* report_layout.c: the compound rows of the /budget report (report_layout.h). */
#include "report_layout.h"

/* The compound type of a terms row (used in memory and in the file). */
hid_t qp_report_row_type(void) {
  hid_t row = -1, name = -1, kind = -1, space = -1;
  int ok = 0;
  if ((row = H5Tcreate(H5T_COMPOUND, sizeof(qp_report_row))) < 0) goto done;
  if ((name = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(name, QP_TERM_NAME_MAX) < 0) goto done;
  if ((kind = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(kind, QP_REPORT_KIND_LEN) < 0) goto done;
  if ((space = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(space, QP_REPORT_SPACE_LEN) < 0) goto done;
  if (H5Tinsert(row, "name", HOFFSET(qp_report_row, name), name) < 0 ||
      H5Tinsert(row, "kind", HOFFSET(qp_report_row, kind), kind) < 0 ||
      H5Tinsert(row, "space", HOFFSET(qp_report_row, space), space) < 0 ||
      H5Tinsert(row, "predicted_bytes", HOFFSET(qp_report_row, predicted_bytes),
                H5T_NATIVE_INT64) < 0 ||
      H5Tinsert(row, "tracked_peak_bytes", HOFFSET(qp_report_row, tracked_peak_bytes),
                H5T_NATIVE_INT64) < 0 ||
      H5Tinsert(row, "tracked_start_bytes", HOFFSET(qp_report_row, tracked_start_bytes),
                H5T_NATIVE_INT64) < 0 ||
      H5Tinsert(row, "tracked_end_bytes", HOFFSET(qp_report_row, tracked_end_bytes),
                H5T_NATIVE_INT64) < 0)
    goto done;
  ok = 1;
done:
  if (name >= 0) H5Tclose(name);
  if (kind >= 0) H5Tclose(kind);
  if (space >= 0) H5Tclose(space);
  if (!ok && row >= 0) {
    H5Tclose(row);
    row = -1;
  }
  return row;
}

hid_t qp_report_event_type(int with_t, int with_stage, int with_kind) {
  hid_t row = -1, stage = -1, kind = -1;
  int ok = 0;
  if ((row = H5Tcreate(H5T_COMPOUND, sizeof(qp_report_event))) < 0) goto done;
  if ((stage = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(stage, QP_STAGE_NAME_MAX) < 0) goto done;
  if ((kind = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(kind, QP_REPORT_EVENT_KIND_LEN) < 0) goto done;
  if ((with_t &&
       H5Tinsert(row, "t_seconds", HOFFSET(qp_report_event, t_seconds), H5T_NATIVE_DOUBLE) < 0) ||
      (with_stage && H5Tinsert(row, "stage", HOFFSET(qp_report_event, stage), stage) < 0) ||
      (with_kind && H5Tinsert(row, "kind", HOFFSET(qp_report_event, kind), kind) < 0))
    goto done;
  ok = 1;
done:
  if (stage >= 0) H5Tclose(stage);
  if (kind >= 0) H5Tclose(kind);
  if (!ok && row >= 0) {
    H5Tclose(row);
    row = -1;
  }
  return row;
}
