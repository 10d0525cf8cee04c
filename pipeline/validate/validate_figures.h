/* validate_figures.h: the comparison and the printed figures that `qmlpipe validate` shares
 * between its per-stage table (cmd_validate.c) and its job table (validate_sacct.c). */
#ifndef QP_VALIDATE_FIGURES_H
#define QP_VALIDATE_FIGURES_H

#include <stddef.h>
#include <stdint.h>

/** (measured - predicted) / measured: positive when the model predicted too little; NAN when
 *  either is unknown (measured <= 0 or predicted < 0). */
double qp_val_rel_error(int64_t measured, int64_t predicted);
/** A judged comparison fails when its error is unknown (NaN) or beyond the tolerance. */
int qp_val_outside(double err, double tolerance);
/** Bytes as MiB with two decimals; "n/a" when negative (unknown). */
const char *qp_val_mib_text(int64_t bytes, char *buf, size_t size);
/** An error in percent: "+1.23", "(+1.23)" when not judged, "n/a" when unknown. */
const char *qp_val_err_text(double err, int judged, char *buf, size_t size);

#endif
