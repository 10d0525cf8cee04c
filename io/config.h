/* config.h: the run configuration, read from YAML with libyaml.
 *
 * Keys (README "Config reference"): maps, mask, mask_pol, fields, cls, noise, spectra, ell_min,
 * lmax, lmax_signal, bin_width | bins, beam_fwhm_arcmin, pixel_window, pixel_window_file, path,
 * harmonic_method, backend, output, checkpoint,
 * memory {host_limit, device_limit, device_overhead, sample_interval_ms, calibration}.
 * An unknown key, a wrong type or an
 * out-of-range value is QP_ERR_INPUT naming the file, the key and (when known) the line. Relative
 * file paths are taken relative to the directory of the config file. */
#ifndef QP_CONFIG_IO_H
#define QP_CONFIG_IO_H

#include <stdint.h>

#include "qp_error.h"

enum { QP_PATH_MAX = 4096, QP_SPECTRA_MAX = 6 };

/* Bounds of values whose products size the run, so that those products fit their types:
 *  - lmax and lmax_signal: (lmax + 1)^2, the (l, m) of a field, is an int (spin_harmonics.h);
 *  - dimensions.nside: HEALPix's largest, 2^29 (12 nside^2 then fits int64);
 *  - grid.block: a block of block^2 doubles is read at a time (h5_matrix.h);
 *  - byte sizes (qp_parse_bytes): below 2^63, so that they convert to int64 and size_t. */
enum { QP_LMAX_MAX = 46339, QP_GRID_BLOCK_MAX = 4096 };
#define QP_NSIDE_MAX ((int64_t)1 << 29)
#define QP_BYTES_MAX 9223372036854775808.0 /* 2^63, exclusive */

typedef enum qp_fields { QP_FIELDS_T = 0, QP_FIELDS_QU, QP_FIELDS_TQU } qp_fields;
typedef enum qp_path { QP_PATH_AUTO = 0, QP_PATH_PIXEL_DIRECT, QP_PATH_HARMONIC } qp_path;
typedef enum qp_noise_kind {
  QP_NOISE_VARIANCE = 0, /* noise: {variance: 1.0e-4} or {variance_t: .., variance_p: ..} */
  QP_NOISE_VARIANCE_MAP, /* noise: {variance_map: var.fits}, one column per field */
  QP_NOISE_COVARIANCE    /* noise: {covariance: noise.h5, dataset: /covariance} */
} qp_noise_kind;

/* Spectrum indices, in the binding order of QML.md 6. */
typedef enum qp_spectrum { QP_TT = 0, QP_EE, QP_BB, QP_TE, QP_TB, QP_EB } qp_spectrum;
/** "TT", "EE", ... */
const char *qp_spectrum_name(qp_spectrum s);

typedef struct qp_config {
  char source[QP_PATH_MAX];  /* the YAML file itself */
  int n_maps;
  char (*maps)[QP_PATH_MAX]; /* n_maps paths (malloc'd) */
  char mask[QP_PATH_MAX];
  char mask_pol[QP_PATH_MAX];        /* mask of Q and U; "" = the same as mask */
  qp_fields fields;
  char cls[QP_PATH_MAX];
  qp_noise_kind noise_kind;
  double noise_variance;             /* QP_NOISE_VARIANCE: per pixel, T (and Q, U unless below) */
  double noise_variance_pol;         /* QP_NOISE_VARIANCE: Q and U (noise.variance_p); 0 = same */
  char noise_file[QP_PATH_MAX];      /* variance map or HDF5 covariance */
  char noise_dataset[256];           /* HDF5 dataset, default "/covariance" */
  /* Cross-spectra (QML.md 2, docs/science.md): maps2 are crossed with maps, map k with map k,
   * their noise noise2 independent of the first; n_maps2 = 0: auto-spectra. */
  int n_maps2;
  char (*maps2)[QP_PATH_MAX]; /* n_maps2 paths (malloc'd) */
  qp_noise_kind noise2_kind;
  double noise2_variance, noise2_variance_pol;
  char noise2_file[QP_PATH_MAX];
  char noise2_dataset[256];
  int n_spectra;
  qp_spectrum spectra[QP_SPECTRA_MAX]; /* requested, sorted into the binding order */
  int ell_min, lmax, lmax_signal;
  int bin_width;                     /* used when bins_file is empty */
  char bins_file[QP_PATH_MAX];       /* rows "ell_min ell_max" (io/bins_text.h) */
  double beam_fwhm_arcmin;
  int window_functions; /* 1 (default): /spectra/window; 0: none (docs/science.md: their cost) */
  int pixel_window;                    /* 0 (default) or 1: the HEALPix pixel window of the
                                          maps' nside multiplies S and P_p (docs/science.md) */
  char pixel_window_file[QP_PATH_MAX]; /* its table; "" = HEALPix's own (io/pixel_window.h) */
  qp_path path;
  int harmonic_method;               /* 0 auto, 1 smw, 2 projected */
  /* Relative accuracy asked of F and the spectra (default 1e-6): a route whose key matrix has
   * eps / rcond above it is refused (pipeline/conditioning.h). */
  double accuracy;
  char backend[16];                  /* "cpu", "cuda", "dist", "hostdev" (test-only) */
  /* grid: {rows, cols, block}: the process grid of the distributed backend; 0 = chosen */
  int grid_rows, grid_cols, grid_block;
  char output[QP_PATH_MAX];
  char checkpoint[QP_PATH_MAX];      /* directory of the stage checkpoints; "" = none */
  /* dimensions: {n_pix, n_modes, lmax_signal, lmax, n_bins, n_maps, nside}: sizes a job
   * without data (budget and plan only; maps, mask and cls are then not needed) */
  int has_dimensions;
  int64_t dim_n_pix, dim_n_modes, dim_n_bins, dim_n_maps, dim_nside;
  double host_limit;                 /* bytes; 0 = no limit */
  double device_limit;               /* bytes; 0 = no limit */
  double device_overhead;            /* bytes of the device context and library handles
                                        (untracked, the device meter's baseline); -1 = the
                                        backend's default (planner.h) */
  double sample_interval_ms;         /* memory timeline sampling (budget/timeline.h); 0 = off */
  char calibration[QP_PATH_MAX];     /* `qmlpipe calibrate` file; "" = $QMLPIPE_CALIBRATION or
                                        the built-in overhead */
} qp_config;

/** 1 when the config's backend keeps matrices in device memory (cuda; hostdev, its CPU test
 *  bed): what the memory model and memory.device_limit apply to. */
int qp_config_device_backend(const qp_config *cfg);

/** Fills *cfg with defaults (ell_min 2, bin_width 1, path auto, backend cpu,
 *  output results.h5, fields T, spectra TT, lmax_signal = lmax, sample_interval_ms 20). */
void qp_config_defaults(qp_config *cfg);
/** Reads and checks a YAML config. On error *cfg is freed and the message names file/key/line. */
qp_err qp_config_load(const char *path, qp_config *cfg);
/** Frees what qp_config_load allocated (safe twice). */
void qp_config_free(qp_config *cfg);
/** "20GiB", "512 MB", "1.5e9" -> bytes (KiB/MiB/GiB/TiB are 1024-based, kB/MB/GB/TB 1000).
 *  QP_ERR_INPUT for anything else, and for a size of 2^63 bytes (8 EiB) or more. */
qp_err qp_parse_bytes(const char *text, double *bytes);

#endif
