/* test_pixel_reference: the pixel covariance S and bin matrices P_p of pixel_matrices.c at high
 * ell against an independent reference made with healpy (tools/make_pixel_reference.py: column
 * Y_j of a matrix is the map synthesised from C_ell times the harmonic transform of a delta in
 * component Y at pixel j; no qmlpipe code). For TQU with all six spectra nonzero, at nside 128
 * and 256 with ell up to 3 nside - 1, every stored entry of S and of P_TT .. P_EB on the top bin
 * (reference pixels near the poles, on the equator, generic, and one whose centre vector's
 * r.r rounds 4.4e-16 below 1, against themselves, their antipodes, neighbours, nearby, polar
 * and random pixels, every T/Q/U combination) must agree to 1e-10 of the largest stored entry
 * of that matrix. Every entry of the whole qmlpipe matrices must also be finite. The figures
 * are in docs/numerical-checks.md.
 *
 * usage: test_pixel_reference CLS_FILE REFERENCE_FILE...   (tests/data/) */
#include <chealpix.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cls_text.h"
#include "pixel_matrices.h"
#include "test_util.h"

enum { N_MATRICES = 7, N_VALUES = 9 * N_MATRICES };
static const char *const matrix_names[N_MATRICES] = {"S",    "P_TT", "P_EE", "P_BB",
                                                     "P_TE", "P_TB", "P_EB"};
static const char *const xy_names[9] = {"TT", "TQ", "TU", "QT", "QQ", "QU", "UT", "UQ", "UU"};
static const double tolerance = 1e-10;

typedef struct reference {
  int64_t nside;
  int lmax, ell_min, bin_lo, bin_hi;
  int64_t n_pairs;
  int64_t *j, *i; /* RING pixels: column j, row i of each pair */
  double *values; /* n_pairs x N_VALUES: per matrix, M[X_i, Y_j] for XY in xy_names */
} reference;

/* Reads a file of tools/make_pixel_reference.py; 0 on success. */
static int read_reference(const char *path, reference *r) {
  memset(r, 0, sizeof *r);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  char line[8192];
  long long nside = 0, pairs = -1;
  int have_header = 0;
  while (fgets(line, sizeof line, f) && line[0] == '#') {
    if (sscanf(line, "# nside %lld lmax %d ell_min %d bin %d %d", &nside, &r->lmax, &r->ell_min,
               &r->bin_lo, &r->bin_hi) == 5)
      have_header = 1;
    sscanf(line, "# pairs %lld", &pairs);
  }
  if (!have_header || pairs <= 0) {
    fprintf(stderr, "%s: no '# nside .. lmax .. ell_min .. bin .. ..' or '# pairs' line\n", path);
    fclose(f);
    return 1;
  }
  r->nside = nside;
  r->n_pairs = pairs;
  r->j = malloc((size_t)pairs * sizeof(int64_t));
  r->i = malloc((size_t)pairs * sizeof(int64_t));
  r->values = malloc((size_t)(pairs * N_VALUES) * sizeof(double));
  int ok = 1;
  /* `line` holds the first data line already (the loop stopped on it). */
  for (int64_t k = 0; ok && k < pairs; ++k) {
    if (k > 0 && !fgets(line, sizeof line, f)) ok = 0;
    char *at = line, *end;
    long long j = ok ? strtoll(at, &end, 10) : 0;
    ok = ok && end != at;
    at = end;
    long long i = ok ? strtoll(at, &end, 10) : 0;
    ok = ok && end != at;
    at = end;
    for (int v = 0; ok && v < N_VALUES; ++v) {
      r->values[k * N_VALUES + v] = strtod(at, &end);
      ok = end != at;
      at = end;
    }
    r->j[k] = j;
    r->i[k] = i;
    if (!ok) fprintf(stderr, "%s: bad data line %lld\n", path, (long long)k + 1);
  }
  fclose(f);
  return ok ? 0 : 1;
}

static void free_reference(reference *r) {
  free(r->j);
  free(r->i);
  free(r->values);
}

static int compare_int64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The position (0..n-1) of RING pixel `pixel` among the sorted observed pixels. */
static int64_t position_of(const int64_t *sorted, int64_t n, int64_t pixel) {
  const int64_t *at = bsearch(&pixel, sorted, (size_t)n, sizeof *sorted, compare_int64);
  return at ? at - sorted : -1;
}

static void run_reference(const reference *r, const qp_cls *cls) {
  const double t0 = qp_clock_seconds();
  /* The observed pixels: the union of every j and i, ascending RING index. */
  int64_t *pixels = malloc((size_t)(2 * r->n_pairs) * sizeof *pixels), n_obs = 0;
  for (int64_t k = 0; k < r->n_pairs; ++k) {
    pixels[2 * k] = r->j[k];
    pixels[2 * k + 1] = r->i[k];
  }
  qsort(pixels, (size_t)(2 * r->n_pairs), sizeof *pixels, compare_int64);
  for (int64_t k = 0; k < 2 * r->n_pairs; ++k)
    if (n_obs == 0 || pixels[k] != pixels[n_obs - 1]) pixels[n_obs++] = pixels[k];

  qp_config cfg;
  qp_config_defaults(&cfg);
  cfg.fields = QP_FIELDS_TQU;
  cfg.ell_min = r->ell_min;
  cfg.lmax = cfg.lmax_signal = r->lmax;
  cfg.n_spectra = 6;
  for (int s = 0; s < 6; ++s)
    cfg.spectra[s] = (qp_spectrum)s;
  qp_problem p;
  memset(&p, 0, sizeof p);
  p.cfg = &cfg;
  p.plan = &p.plan_store; /* no plan: the pixel matrices whole (qp_host_panel) */
  p.nside = r->nside;
  p.n_sky = 12 * r->nside * r->nside;
  p.n_obs_t = p.n_obs_p = n_obs;
  p.n_observed = 2 * n_obs; /* T positions, then the same pixels as polarised positions */
  p.n_pix = 3 * n_obs;      /* [T | Q | U] */
  p.observed = malloc((size_t)p.n_observed * sizeof(int64_t));
  p.vectors = malloc((size_t)(3 * p.n_observed) * sizeof(double));
  for (int64_t k = 0; k < p.n_observed; ++k) {
    p.observed[k] = pixels[k % n_obs];
    pix2vec_ring64(r->nside, p.observed[k], p.vectors + 3 * k);
  }
  int lo = r->bin_lo, hi = r->bin_hi;
  p.n_bins = 1;
  p.bin_lo = &lo;
  p.bin_hi = &hi;
  p.n_params = 6;
  p.cls = *cls; /* borrowed: the file reaches 767 */
  p.ell_weight = malloc((size_t)(r->lmax + 1) * sizeof(double));
  for (int l = 0; l <= r->lmax; ++l)
    p.ell_weight[l] = (2.0 * l + 1.0) / (4.0 * M_PI);

  const int64_t n = p.n_pix;
  double *m = calloc((size_t)(N_MATRICES * n * n), sizeof(double)); /* S, then P_TT..P_EB */
  const double t1 = qp_clock_seconds();
  qp_pixel_matrices_build(&p, m, 0, 6, m + n * n, (size_t)(n * n));
  const double t_build = qp_clock_seconds() - t1;

  /* S alone: its T-T tiles take the fused path (qp_tile_tt), which the build with the bin
   * matrices above does not; the two must agree to the bit. */
  double *s_alone = calloc((size_t)(n * n), sizeof(double));
  qp_pixel_matrices_build(&p, s_alone, 0, 0, NULL, 0);
  int64_t s_differ = 0;
  for (int64_t k = 0; k < n * n; ++k)
    if (memcmp(&s_alone[k], &m[k], sizeof(double)) != 0) ++s_differ;
  TEST_ASSERT(s_differ == 0,
              "nside %lld: S built alone (the fused T-T tiles) differs from S built with the "
              "bin matrices in %lld of %lld entries",
              (long long)r->nside, (long long)s_differ, (long long)(n * n));
  free(s_alone);

  double *mine = malloc((size_t)(9 * r->n_pairs) * sizeof(double));
  double *ref = malloc((size_t)(9 * r->n_pairs) * sizeof(double));
  for (int x = 0; x < N_MATRICES; ++x) {
    const double *mx = m + x * n * n;
    for (int64_t k = 0; k < r->n_pairs; ++k) {
      const int64_t pi = position_of(pixels, n_obs, r->i[k]),
                    pj = position_of(pixels, n_obs, r->j[k]);
      for (int c = 0; c < 9; ++c) {
        const int64_t row = (c / 3) * n_obs + pi, col = (c % 3) * n_obs + pj;
        mine[9 * k + c] = mx[row + col * n];
        ref[9 * k + c] = r->values[k * N_VALUES + 9 * x + c];
      }
    }
    const double scale = qp_test_max_abs(ref, (size_t)(9 * r->n_pairs));
    const double err = qp_test_max_diff(mine, ref, (size_t)(9 * r->n_pairs), scale);
    /* Where the worst entry is (the first at err, or the first not finite). */
    int64_t at = 0;
    for (int64_t k = 0; k < 9 * r->n_pairs; ++k) {
      const double d = fabs(mine[k] - ref[k]) / scale;
      if (isnan(err) ? !isfinite(mine[k]) || !isfinite(ref[k]) : !(d < err)) {
        at = k;
        break;
      }
    }
    /* Every entry of the whole matrix finite, not only the compared ones. */
    const double whole = qp_test_max_abs(mx, (size_t)(n * n));
    printf("nside %3lld lmax %3d %-4s (ell %d..%d): worst %.2e of the largest entry %.4e "
           "(j %lld, i %lld, %s: qmlpipe %.17g, healpy %.17g); whole matrix max |.| %.4e\n",
           (long long)r->nside, r->lmax, matrix_names[x], x == 0 ? r->ell_min : r->bin_lo, r->lmax,
           err, scale, (long long)r->j[at / 9], (long long)r->i[at / 9], xy_names[at % 9], mine[at],
           ref[at], whole);
    TEST_WITHIN(err, tolerance, "nside %lld: %s", (long long)r->nside, matrix_names[x]);
    TEST_ASSERT(isfinite(whole), "nside %lld: %s has a non-finite entry", (long long)r->nside,
                matrix_names[x]);
  }
  printf("nside %3lld: %lld pixels (n_pix %lld), %lld pairs x 9 entries per matrix; build "
         "%.2f s, all %.2f s\n",
         (long long)r->nside, (long long)n_obs, (long long)n, (long long)r->n_pairs, t_build,
         qp_clock_seconds() - t0);
  free(mine);
  free(ref);
  free(m);
  free(pixels);
  free(p.observed);
  free(p.vectors);
  free(p.ell_weight);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_pixel_reference CLS_FILE REFERENCE_FILE...\n");
    return 2;
  }
  qp_cls cls;
  memset(&cls, 0, sizeof cls);
  TEST_OK(qp_cls_read(argv[1], &cls));
  if (qp_test_failures) return TEST_RETURN();
  for (int a = 2; a < argc; ++a) {
    reference r;
    if (read_reference(argv[a], &r) != 0) {
      ++qp_test_failures;
      free_reference(&r);
      continue;
    }
    TEST_ASSERT(cls.lmax >= r.lmax, "%s needs C_ell to %d, %s ends at %d", argv[a], r.lmax, argv[1],
                cls.lmax);
    if (cls.lmax >= r.lmax) run_reference(&r, &cls);
    free_reference(&r);
  }
  qp_cls_free(&cls);
  return TEST_RETURN();
}
