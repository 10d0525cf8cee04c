/* fixture.h: writes a small simulated temperature problem (maps, mask, C_ell file) into the
 * test's directory and fills a qp_config for it, so pipeline tests need no data files. */
#ifndef QP_TEST_FIXTURE_H
#define QP_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "problem.h"
#include "qp_error.h"

typedef struct qp_fixture {
  const char *name; /* file prefix, unique per test */
  int64_t nside;
  double cut_deg; /* Galactic cut of the mask; 0 = full sky */
  int ell_min, lmax, lmax_signal, bin_width;
  int sim_lmax; /* multipoles drawn into the maps (usually lmax_signal) */
  int n_maps;
  double noise_variance;
  double cl_flat; /* C_l = cl_flat (constant) when > 0 ... */
  double dl_flat; /* ... else C_l = 2 pi dl_flat / (l (l+1)) */
  uint64_t seed;
  /* polarisation (all zero: temperature only) */
  qp_fields fields;          /* QP_FIELDS_T (default), QU or TQU */
  double noise_variance_pol; /* Q and U; <= 0: noise_variance */
  double ee_ratio, bb_ratio; /* C^EE = ee_ratio C^TT, C^BB = bb_ratio C^TT */
  double te_corr;            /* C^TE = te_corr sqrt(C^TT C^EE) */
  int n_spectra;             /* 0: TT for T, EE BB for QU, TT EE BB TE for TQU */
  qp_spectrum spectra[6];
} qp_fixture;

/** Writes <name>_mask.fits, <name>_map_*.fits, <name>_cls.txt and fills *cfg (defaults plus
 *  the fixture's settings; output <name>_results.h5). */
qp_err qp_fixture_write(const qp_fixture *f, qp_config *cfg);
/** Runs every stage on cfg, quietly and without a results file (qp_driver_run). */
qp_err qp_fixture_run(const qp_config *cfg, qp_problem *p, qp_meter_sample *baseline);
/** Makes cfg's noise a dense covariance written to `path` (dataset /covariance): diagonal
 *  1 + 0.01 (i % 5), and `off_diagonal` beside the diagonal (0: none), of the n_pix that a run
 *  of cfg finds (the run is done here, on cfg's backend). */
qp_err qp_fixture_dense_noise(qp_config *cfg, const char *path, double off_diagonal);
/** Cross-spectra (docs/science.md): writes f's maps again from `seed` with white noise of
 *  `variance` (T and Q/U alike) under `name` (the same mask and sky model, another draw) and
 *  gives them to cfg as maps2, with noise2 {variance: variance}. cfg keeps its own maps. */
qp_err qp_fixture_add_maps2(const qp_fixture *f, const char *name, uint64_t seed, double variance,
                            qp_config *cfg);
/** This rank's copy of a fixture file name: `name` alone on one rank, `name`_r<rank> under
 *  mpiexec, so that no two ranks write one file (each writes the same content). */
const char *qp_fixture_rank_name(char *buf, size_t size, const char *name);
/** qp_fixture_write under this rank's copy of `name` (qp_fixture_rank_name), then the config's
 *  grid block set to `grid_block` (what a run under mpiexec lays its matrices out in). f->name
 *  is left NULL: the name's buffer ends with the call. */
qp_err qp_fixture_write_ranked(qp_fixture *f, const char *name, int grid_block, qp_config *cfg);
/** x (n_pix) <- the data vector of map file `path` as run p reads it (the maps are not kept
 *  by the run: qp_maps_to_matrix): T at p's observed T pixels, then Q and U at the polarisation
 *  pixels, from healpy's columns (I, Q, U; a two-column file Q, U). */
qp_err qp_fixture_data_vector(const qp_problem *p, const char *path, double *x);
/** C_l^TT of the fixture. */
double qp_fixture_cl(const qp_fixture *f, int l);
/** C_l of spectrum s (QP_TT..QP_EB) of the fixture. */
double qp_fixture_cl_spectrum(const qp_fixture *f, qp_spectrum s, int l);

#endif
