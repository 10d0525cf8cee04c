/* results_h5.h: the results file of `qmlpipe run` (layout in docs/output.md and QML.md 6).
 *
 * Written to a private temporary beside <path> (base/atomic_file.h) and renamed to <path>
 * only when complete, so a failed run never leaves a partial results file. */
#ifndef QP_RESULTS_H5_H
#define QP_RESULTS_H5_H

#include <stdint.h>

#include "config.h"
#include "model.h"
#include "qp_error.h"
#include "report_ranks.h"

typedef struct qp_results {
  const qp_config *config; /* every setting becomes an attribute of "/" */
  int64_t nside;
  int64_t n_observed;     /* positions: observed pixels of T plus those of Q/U */
  int64_t n_observed_t;   /* observed pixels of T (mask) */
  int64_t n_observed_pol; /* observed pixels of Q and U (mask_pol) */
  int64_t n_modes;        /* harmonic path: modes of V (0 on the pixel-direct path) */
  int64_t n_pix;          /* length of the data vector */
  int64_t n_params, n_bins, n_maps;
  int n_spectra;
  const qp_spectrum *spectra; /* n_spectra, binding order */
  const int *bin_ell_min;     /* n_bins */
  const int *bin_ell_max;     /* n_bins */
  const double *fisher;       /* n_params x n_params (symmetric) */
  const double *yb;           /* raw quadratic y_p: n_maps x n_params, map-major */
  const double *noise_bias;   /* b_p: n_params */
  const double *cl;           /* C_hat = F^-1 (y - b): n_maps x n_params, map-major */
  const double *error;        /* sqrt(diag F^-1): n_params */
  const double *covariance;   /* of C_hat, F^-1 (auto-spectra): n_params x n_params */
  /* The window functions W (C order n_params x n_window) and their columns' multipoles:
   * n_spectra blocks of window_ell_min .. window_ell_max, spectrum major (window.h). */
  const double *window;
  int64_t n_window;
  int window_ell_min, window_ell_max;
  const char *path_used;   /* "pixel_direct" */
  const char *path_reason; /* why that path */
  const char
      *pixel_window;     /* what pixel window was applied (pixel_window.h's text); NULL: "none" */
  const qp_model *model; /* the prediction, written beside the measurement */
  /* The host memory limit the run planned to, bytes (0: none), and where it came from
   * ("memory.host_limit", a cgroup, Slurm, RLIMIT_AS): attributes memory_limit and
   * memory_limit_source of /budget when memory_limit_source is not NULL. */
  double memory_limit;
  const char *memory_limit_source;
  /* A device run's context: predicted (bytes) and where from, measured (the device meter's
   * baseline, -1 without one); written to /budget when device_context_source is not NULL. */
  double device_context_predicted;
  int64_t device_context_measured;
  const char *device_context_source;
  const qp_meter_sample *baseline; /* meters before the first stage, or NULL (then -1) */
  const qp_rank_table *ranks;      /* distributed runs: every rank's budget, or NULL */
  /* Slurm's JobAcctGatherType the job ran under and where it was read: attributes
   * slurm_jobacct_gather and slurm_jobacct_gather_source of /budget when not NULL. */
  const char *slurm_gather, *slurm_gather_source;
  /* /diagnostics: reciprocal condition numbers of the route's key matrices (NaN: not formed
   * on this route), written as attributes rcond_<name>, and the accuracy they were held to. */
  int n_rcond;
  const double *rcond;
  const char *const *rcond_names;
  double accuracy;
  /* the largest rounding error of C_hat in units of its error bars (NaN: not estimated) */
  double spectra_error;
} qp_results;

/** Writes the results file (with the /budget report of every stage recorded so far).
 *  QP_ERR_IO naming the file on any HDF5 or disk failure (a full disk included); nothing new
 *  is left under `path` then and an existing file there is untouched. */
qp_err qp_results_write(const char *path, const qp_results *results);

#endif
