/* cross_inputs.h: the inputs of test_cross_reference and the matrices of its dense reference.
 * One case writes a C_ell file, a Galactic-cut mask and two map sets A and B of the same
 * simulated signal with independent white noise (variances of A and of B differ), as FITS
 * files in the working directory, and builds on the observed pixels what the dense formulas
 * need: S (fiducial C_ell and beam over [ell_min, lmax_signal]), S_fixed (its multipoles in
 * (lmax, lmax_signal]: the switch of QML.md 3), the unbinned P_ell of every requested spectrum
 * and ell in [ell_min, lmax], N_A and N_B, and the data vectors x_A and x_B. S and P_ell come
 * from the project's builder (pipeline/sky/pixel_matrices.h, checked against healpy by
 * test_pixel_reference and against the harmonic basis by test_spin2_covariance); the beam's
 * B_ell, the bins, the mask's positions and the data vectors are written out again here. */
#ifndef QP_TEST_CROSS_INPUTS_H
#define QP_TEST_CROSS_INPUTS_H

#include <stdint.h>

#include "cls_text.h"
#include "config.h"

enum { QP_CROSS_MAX_MAPS = 4 };

typedef struct qp_cross_case {
  const char *name; /* file prefix, unique per case */
  qp_fields fields;
  int n_spectra;
  qp_spectrum spectra[6]; /* in the parameters' order (TT EE BB TE TB EB) */
  int ell_min, lmax, lmax_signal, bin_width;
  int64_t nside;
  double cut_deg;          /* |b| > cut_deg observed */
  double beam_fwhm_arcmin; /* Gaussian, T and P alike */
  int n_maps;
  double var_t[2], var_p[2]; /* white noise per pixel of A ([0]) and B ([1]) */
  uint64_t seed;
} qp_cross_case;

typedef struct qp_cross_sky {
  qp_cls cls;                   /* the fiducial, as written to <name>_cls.txt */
  int n_bins, *bin_lo, *bin_hi; /* the bins the config's bin_width makes */
  int64_t n;                    /* n_pix of the data vector */
  double *s, *s_fixed;          /* n x n; s_fixed NULL when lmax == lmax_signal */
  double *noise[2];             /* N_A, N_B: n x n (diagonal) */
  double *p_ell;                /* n_spectra (lmax - ell_min + 1) matrices n x n */
  double *x[2];                 /* x_A, x_B: n x n_maps */
  char cls_file[96], mask_file[96];
  char maps[2][QP_CROSS_MAX_MAPS][96]; /* the map files of A and of B */
} qp_cross_sky;

/** Writes the case's files and builds its matrices. Returns 0, or 1 after printing why. */
int qp_cross_sky_make(const qp_cross_case *c, qp_cross_sky *sky);
void qp_cross_sky_free(qp_cross_sky *sky);

#endif
