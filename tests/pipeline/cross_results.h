/* cross_results.h: a results file of `qmlpipe run` read with HDF5 and compared with the dense
 * reference of cross_dense.h (test_cross_reference.c says what and to what tolerance), and the
 * reference written in the same binding layout (issue 40, docs/output.md), which the test reads
 * back to check this reader on datasets qmlpipe does not produce yet.
 * Header-only: its checks count in the including test's failures (test_util.h). */
#ifndef QP_TEST_CROSS_RESULTS_H
#define QP_TEST_CROSS_RESULTS_H

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cross_dense.h"
#include "cross_inputs.h"
#include "test_util.h"

/* The outputs of issue 40 that land one by one; F, y, b, C_hat and the error bars are always
 * required. */
typedef enum feature { FEATURE_COVARIANCE, FEATURE_WINDOW, FEATURE_CROSS, FEATURE_COUNT } feature;
static const char *const feature_keys[FEATURE_COUNT] = {"covariance", "window", "cross"};
/* Which features a comparison requires (an absent one fails), and how often an absent one that
 * is not required was skipped. */
typedef struct expectations {
  int required[FEATURE_COUNT];
  int skipped[FEATURE_COUNT];
} expectations;

static const double qp_cross_tolerance = 1e-10;

/* A dataset's absence: a failure when required, else a skip said once per run. */
static void absent(expectations *ex, feature f, int req, const char *label, const char *name) {
  if (req) {
    TEST_ASSERT(0, "%s: %s is missing, and %s is required", label, name, feature_keys[f]);
    return;
  }
  ++ex->skipped[f];
  printf("  %s: SKIP %s: not produced yet\n", label, name);
}

typedef enum read_status { READ_OK, READ_ABSENT, READ_BAD } read_status;

/* Dataset `name` of shape (d0) or (d0, d1) (d1 = 0: one dimension) as doubles into *out. */
static read_status read_set(hid_t file, const char *label, const char *name, hsize_t d0, hsize_t d1,
                            double **out) {
  *out = NULL;
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return READ_ABSENT;
  hid_t set = H5Dopen2(file, name, H5P_DEFAULT);
  hid_t space = set >= 0 ? H5Dget_space(set) : -1;
  hsize_t dims[2] = {0, 0};
  const int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  if (rank == 1 || rank == 2) H5Sget_simple_extent_dims(space, dims, NULL);
  const int shaped = rank == (d1 ? 2 : 1) && dims[0] == d0 && dims[1] == d1;
  double *v = shaped ? malloc((size_t)(d0 * (d1 ? d1 : 1)) * sizeof *v) : NULL;
  if (v && H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) free(v), v = NULL;
  if (space >= 0) H5Sclose(space);
  if (set >= 0) H5Dclose(set);
  TEST_ASSERT(v, "%s: %s is of rank %d, shape (%llu, %llu), or unreadable: expected (%llu%s%.0llu)",
              label, name, rank, (unsigned long long)dims[0], (unsigned long long)dims[1],
              (unsigned long long)d0, d1 ? ", " : "", (unsigned long long)d1);
  *out = v;
  return v ? READ_OK : READ_BAD;
}

/* The root attribute `cross`: -1 absent, else its value; an attribute that is not a scalar
 * 64-bit signed integer fails. */
static int64_t read_cross(hid_t file, const char *label) {
  if (H5Aexists(file, "cross") <= 0) return -1;
  int64_t value = -2;
  hid_t attr = H5Aopen(file, "cross", H5P_DEFAULT);
  hid_t type = attr >= 0 ? H5Aget_type(attr) : -1;
  hid_t space = attr >= 0 ? H5Aget_space(attr) : -1;
  const int ok = type >= 0 && H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 8 &&
                 H5Tget_sign(type) == H5T_SGN_2 && H5Sget_simple_extent_npoints(space) == 1 &&
                 H5Aread(attr, H5T_NATIVE_INT64, &value) >= 0;
  TEST_ASSERT(ok, "%s: the attribute cross is not one int64", label);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  return ok ? value : -2;
}

/* The worst figure of each compared dataset, per route and field set (the summary). */
typedef struct figures {
  double f, y, b, cl, cov, err, win;
} figures;

static void note(double *slot, double value) { *slot = qp_test_worst(*slot, value); }

static double compare_set(const char *label, const char *name, const double *ref, const double *got,
                          size_t count) {
  const double d = qp_test_max_rel_diff(ref, got, count);
  TEST_WITHIN(d, qp_cross_tolerance, "%s: %s differs from the dense reference", label, name);
  return d;
}

/* The file's window against the reference, then its own relations (header). */
static double check_window(const qp_cross_case *c, const qp_cross_sky *sky,
                           const qp_dense_result *ref, const double *w, const double *w_ell,
                           int cross, const char *label) {
  const int np = ref->n_params, nw = ref->n_window, n_ell = c->lmax - c->ell_min + 1;
  double *expect = calloc((size_t)nw, sizeof *expect);
  for (int k = 0; k < nw; ++k)
    expect[k] = c->ell_min + k % n_ell;
  TEST_WITHIN(qp_test_max_diff(expect, w_ell, (size_t)nw, 1.0), 0.0,
              "%s: /spectra/window_ell is not ell_min..lmax per spectrum", label);
  free(expect);
  const double d = compare_set(label, "/spectra/window", ref->window, w, (size_t)(np * nw));
  double *sums = calloc((size_t)(np * np), sizeof *sums), *ident = calloc((size_t)(np * np), 8);
  double *flat = calloc((size_t)np, sizeof *flat), *wflat = calloc((size_t)np, sizeof *wflat);
  double *wfid = calloc((size_t)np, sizeof *wfid), *mean = calloc((size_t)np, sizeof *mean);
  for (int p = 0; p < np; ++p) {
    ident[p + p * np] = 1.0;
    const int s = p / sky->n_bins, b = p % sky->n_bins;
    for (int l = sky->bin_lo[b]; l <= sky->bin_hi[b]; ++l)
      flat[p] += sky->cls.cl[c->spectra[s]][l] / (sky->bin_hi[b] - sky->bin_lo[b] + 1);
  }
  for (int p = 0; p < np; ++p) {
    for (int k = 0; k < nw; ++k) {
      const int s = k / n_ell, l = c->ell_min + k % n_ell, b = (l - c->ell_min) / c->bin_width;
      const double wk = w[(int64_t)p * nw + k];
      sums[p + (s * sky->n_bins + b) * np] += wk;
      wflat[p] += wk * flat[s * sky->n_bins + b];
      wfid[p] += wk * sky->cls.cl[c->spectra[s]][l];
    }
    for (int q = 0; q < np; ++q) /* <C_hat> = F^-1 (<y> - b) from the estimated multipoles */
      mean[p] += ref->f_inv[p + q * np] *
                 (ref->expect_y[q] - (cross ? ref->fixed_y[q] : ref->noise_bias[q]));
  }
  TEST_WITHIN(qp_test_max_diff(ident, sums, (size_t)(np * np), 1.0), qp_cross_tolerance,
              "%s: the window's rows summed over a bin are not delta_pq", label);
  TEST_WITHIN(qp_test_max_rel_diff(flat, wflat, (size_t)np), qp_cross_tolerance,
              "%s: W does not return a C_ell flat in the bins", label);
  TEST_WITHIN(qp_test_max_rel_diff(mean, wfid, (size_t)np), qp_cross_tolerance,
              "%s: sum_ell W C^fid_ell is not <C_hat>", label);
  free(sums), free(ident), free(flat), free(wflat), free(wfid), free(mean);
  return d;
}

/* One results file against the reference. */
static void compare_run(expectations *ex, const qp_cross_case *c, const qp_cross_sky *sky,
                        const qp_dense_result *ref, const char *path, int cross, const char *label,
                        figures *fig) {
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  TEST_ASSERT(file >= 0, "%s: cannot open %s", label, path);
  if (file < 0) return;
  const int64_t attr = read_cross(file, label);
  if (!cross)
    TEST_ASSERT(attr == -1 || attr == 0, "%s: auto run with cross = %lld", label, (long long)attr);
  if (cross && attr != 1) {
    if (attr == -1)
      absent(ex, FEATURE_CROSS, ex->required[FEATURE_CROSS], label, "attribute cross");
    else
      TEST_ASSERT(0, "%s: cross run with cross = %lld", label, (long long)attr);
    H5Fclose(file);
    return;
  }
  const hsize_t np = (hsize_t)ref->n_params, nm = (hsize_t)c->n_maps, nb = (hsize_t)sky->n_bins;
  double *v[10] = {0};
  const read_status lo = read_set(file, label, "/bins/ell_min", nb, 0, &v[0]);
  const read_status hi = read_set(file, label, "/bins/ell_max", nb, 0, &v[1]);
  TEST_ASSERT(lo != READ_ABSENT && hi != READ_ABSENT, "%s: /bins/ell_min or ell_max missing",
              label);
  if (lo == READ_OK && hi == READ_OK)
    for (int b = 0; b < sky->n_bins; ++b)
      TEST_ASSERT(v[0][b] == sky->bin_lo[b] && v[1][b] == sky->bin_hi[b],
                  "%s: bin %d is [%g, %g], the test made [%d, %d]", label, b, v[0][b], v[1][b],
                  sky->bin_lo[b], sky->bin_hi[b]);
  static const char *const always[5] = {"/fisher", "/spectra/yb", "/spectra/noise_bias",
                                        "/spectra/cl", "/spectra/error"};
  const hsize_t rows[5] = {np, nm, np, nm, np}, cols[5] = {np, np, 0, np, 0};
  const double *refs[5] = {ref->fisher, ref->yb, ref->noise_bias, ref->cl, ref->error};
  double *slots[5] = {&fig->f, &fig->y, &fig->b, &fig->cl, &fig->err};
  for (int k = 0; k < 5; ++k) {
    const read_status st = read_set(file, label, always[k], rows[k], cols[k], &v[2 + k]);
    TEST_ASSERT(st != READ_ABSENT, "%s: %s is missing", label, always[k]);
    if (st != READ_OK) continue;
    const size_t count = (size_t)(rows[k] * (cols[k] ? cols[k] : 1));
    if (cross && k == 2 && qp_test_max_abs(refs[k], count) == 0.0) {
      /* no switch: no bias at all, zeros exactly */
      const double b = qp_test_max_abs(v[2 + k], count);
      TEST_WITHIN(b, 0.0, "%s: the cross noise bias is not zero", label);
      note(slots[k], b);
    } else {
      note(slots[k], compare_set(label, always[k], refs[k], v[2 + k], count));
    }
  }
  const int req_cov = ex->required[FEATURE_COVARIANCE] && (!cross || ex->required[FEATURE_CROSS]);
  const read_status cov = read_set(file, label, "/spectra/covariance", np, np, &v[7]);
  if (cov == READ_ABSENT) absent(ex, FEATURE_COVARIANCE, req_cov, label, "/spectra/covariance");
  if (cov == READ_OK)
    note(&fig->cov,
         compare_set(label, "/spectra/covariance", ref->covariance, v[7], (size_t)(np * np)));
  const int req_win = ex->required[FEATURE_WINDOW] && (!cross || ex->required[FEATURE_CROSS]);
  const hsize_t nw = (hsize_t)ref->n_window;
  const read_status win = read_set(file, label, "/spectra/window", np, nw, &v[8]);
  const read_status ell = read_set(file, label, "/spectra/window_ell", nw, 0, &v[9]);
  if (win == READ_ABSENT) absent(ex, FEATURE_WINDOW, req_win, label, "/spectra/window");
  if (ell == READ_ABSENT) absent(ex, FEATURE_WINDOW, req_win, label, "/spectra/window_ell");
  TEST_ASSERT((win == READ_ABSENT) == (ell == READ_ABSENT),
              "%s: one of /spectra/window and /spectra/window_ell without the other", label);
  if (win == READ_OK && ell == READ_OK)
    note(&fig->win, check_window(c, sky, ref, v[8], v[9], cross, label));
  for (int k = 0; k < 10; ++k)
    free(v[k]);
  H5Fclose(file);
}

/* ---- The reference in the binding layout, to check the reader above ---- */

/* Dataset `name` of shape (d0) or (d0, d1) (d1 = 0: one dimension), row-major. */
static int put_set(hid_t file, const char *name, hsize_t d0, hsize_t d1, const double *v) {
  const hsize_t dims[2] = {d0, d1};
  hid_t space = H5Screate_simple(d1 ? 2 : 1, dims, NULL);
  hid_t set = H5Dcreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const int ok =
      set >= 0 && H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0;
  if (set >= 0) H5Dclose(set);
  H5Sclose(space);
  return ok;
}

/* How write_reference spoils its file, for the reader's own checks. */
typedef enum spoil_kind {
  SPOIL_NONE,
  SPOIL_WINDOW,
  SPOIL_COVARIANCE,
  SPOIL_WINDOW_TRANSPOSED
} spoil_kind;

/* Writes `ref` as issue 40 lays a results file out: /fisher, /spectra/{yb, cl, noise_bias,
 * error, covariance, window, window_ell}, /bins/{ell_min, ell_max} and the root attribute
 * cross (int64), row-major (n_maps, n_params) and (n_params, n_window); spoiled as asked (one
 * entry moved by 1e-8 of the largest, or the window written (n_window, n_params)). */
static int write_reference(const char *path, const qp_cross_case *c, const qp_cross_sky *sky,
                           const qp_dense_result *ref, int cross, spoil_kind how) {
  const hsize_t np = (hsize_t)ref->n_params, nm = (hsize_t)c->n_maps, nw = (hsize_t)ref->n_window;
  const hsize_t nb = (hsize_t)sky->n_bins;
  double *w = malloc(np * nw * sizeof *w), *cov = malloc(np * np * sizeof *cov);
  double *ell = malloc(nw * sizeof *ell), *lo = malloc(nb * sizeof *lo),
         *hi = malloc(nb * sizeof *hi);
  memcpy(w, ref->window, np * nw * sizeof *w);
  memcpy(cov, ref->covariance, np * np * sizeof *cov);
  for (hsize_t k = 0; k < nw; ++k)
    ell[k] = c->ell_min + (int)(k % (hsize_t)(c->lmax - c->ell_min + 1));
  for (hsize_t b = 0; b < nb; ++b)
    lo[b] = sky->bin_lo[b], hi[b] = sky->bin_hi[b];
  if (how == SPOIL_WINDOW) w[np * nw - 1] += 1e-8 * qp_test_max_abs(w, np * nw);
  if (how == SPOIL_COVARIANCE) cov[np * np - 1] += 1e-8 * qp_test_max_abs(cov, np * np);
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  int ok = file >= 0;
  if (ok) {
    H5Gclose(H5Gcreate2(file, "/spectra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Gclose(H5Gcreate2(file, "/bins", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    ok = put_set(file, "/fisher", np, np, ref->fisher) &&
         put_set(file, "/spectra/yb", nm, np, ref->yb) &&
         put_set(file, "/spectra/cl", nm, np, ref->cl) &&
         put_set(file, "/spectra/noise_bias", np, 0, ref->noise_bias) &&
         put_set(file, "/spectra/error", np, 0, ref->error) &&
         put_set(file, "/spectra/covariance", np, np, cov) &&
         put_set(file, "/spectra/window", how == SPOIL_WINDOW_TRANSPOSED ? nw : np,
                 how == SPOIL_WINDOW_TRANSPOSED ? np : nw, w) &&
         put_set(file, "/spectra/window_ell", nw, 0, ell) &&
         put_set(file, "/bins/ell_min", nb, 0, lo) && put_set(file, "/bins/ell_max", nb, 0, hi);
    const int64_t one = cross;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "cross", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && attr >= 0 && H5Awrite(attr, H5T_NATIVE_INT64, &one) >= 0;
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
    H5Fclose(file);
  }
  free(w), free(cov), free(ell), free(lo), free(hi);
  TEST_ASSERT(ok, "cannot write the reference file %s", path);
  return ok;
}

#endif
