/* pixel_matrices.h: pixel-space signal covariance and its derivatives for temperature (QML.md 1-2).
 *
 *   S_ij   = sum_{l=ell_min}^{lmax_signal} C_l (2l+1)/(4 pi) B_l^2 P_l(r_i . r_j)
 *   P_b,ij = sum_{l in bin b}                   (2l+1)/(4 pi) B_l^2 P_l(r_i . r_j)
 *
 * One Legendre recursion per pixel pair serves C and every bin matrix asked for at once. */
#ifndef QP_PIXEL_MATRICES_H
#define QP_PIXEL_MATRICES_H

#include "problem.h"

/** Fills full symmetric matrices (column-major, leading dimension n_pix): `cov` with S (when
 *  not NULL; noise is added by the caller) and, for k = 0..n_slots-1, slots + k*slot_stride
 *  with P_{first_bin + k}. OpenMP-parallel over columns. */
void qp_pixel_matrices_build(const qp_problem *p, double *cov, int first_bin, int n_slots, double *slots,
                     size_t slot_stride);

#endif
