/* inputs_internal.h: what the parts of the inputs share (inputs_plan.c before the plan,
 * inputs.c inside covariance_setup, inputs_maps.c where the maps are used); for them alone. */
#ifndef QP_INPUTS_INTERNAL_H
#define QP_INPUTS_INTERNAL_H

#include "fits_map.h"
#include "inputs.h"

/* HEALPix marks unobserved pixels with this value (healpy's UNSEEN). */
#define QP_HEALPIX_UNSEEN (-1.6375e30)
/* sqrt(DBL_MAX): the largest value whose square is finite. */
#define QP_INPUTS_VALUE_MAX 1.3407807929942596e154

int qp_is_unseen(double v);
/* The masks: T's is `mask`; Q and U's is `mask_pol`, or `mask` when that is not given. */
int qp_has_t(const qp_config *cfg);
int qp_has_p(const qp_config *cfg);
const char *qp_mask_pol(const qp_config *cfg);
/* With MPI, rank 0 reads (it alone holds the sky buffer) and every rank gets what is small:
 * the plan's counts and C_ell, the positions and variances are replicated, the maps passed on
 * one at a time (inputs_maps.c); a read error on rank 0 is every rank's. */
int qp_inputs_reader(void);
/* Reads a mask into `sky` and counts its observed pixels (nonzero, not UNSEEN). */
qp_err qp_inputs_read_mask(const qp_problem *p, const char *path, double *sky, int64_t *n_observed);
/* Which columns of a file hold T, Q and U (-1: not used). healpy's files are I, Q, U: with
 * three or more columns those are columns 0, 1, 2; a file with exactly two columns holds Q
 * and U; a one-column file holds T. */
qp_err qp_inputs_columns(const qp_problem *p, const char *path, const char *what,
                         const qp_healpix_info *info, int column[3]);
/* Reads every field a file holds for the analysis, through `sky` (n_sky: one full-sky
 * column), into x (n_pix, data-vector order), checking each value at an observed pixel
 * (finite, not UNSEEN, its square finite; positive when `positive`), the errors naming `what`,
 * the file and the pixel. x NULL: checks only. */
qp_err qp_inputs_read_fields(const qp_problem *p, const char *path, const char *what, int positive,
                             double *sky, double *x);

#endif
