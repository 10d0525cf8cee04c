/* cls_text.h: the fiducial spectrum text file of QML.md 6.
 *
 * Columns `ell TT EE BB TE [TB EB]`, C_ell (not D_ell), one row per ell starting at 0 and
 * consecutive; lines starting with # are comments. TB and EB are zero when absent. */
#ifndef QP_CLS_TEXT_H
#define QP_CLS_TEXT_H

#include "qp_error.h"

typedef struct qp_cls {
  int lmax;       /* last ell in the file */
  int n_columns;  /* spectra columns present: 4 or 6 */
  double *cl[6];  /* TT EE BB TE TB EB, each lmax+1 values (malloc'd: small) */
} qp_cls;

/** Reads a C_ell file. QP_ERR_IO when it cannot be opened; QP_ERR_INPUT naming the file and line
 *  for a bad row (wrong column count, ell not consecutive from 0, non-finite value, negative
 *  TT/EE/BB, |TE| > sqrt(TT EE)). */
qp_err qp_cls_read(const char *path, qp_cls *cls);
void qp_cls_free(qp_cls *cls);
/** Writes a C_ell file in the same format (for simulate and tests). */
qp_err qp_cls_write(const char *path, const qp_cls *cls);

#endif
