/* simulate.c: T or T, Q, U maps from the real harmonic basis (spin_harmonics.h) with Gaussian
 * coefficients, plus white noise. */
#include "simulate.h"

#include <chealpix.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spin_harmonics.h"
#include "legendre.h"
#include "matrix.h"

/* xoshiro256** seeded by splitmix64: small, fast, and the same on every machine. */
typedef struct qp_rng {
  uint64_t s[4];
} qp_rng;

static uint64_t qp_splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void qp_rng_seed(qp_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; ++i)
    r->s[i] = qp_splitmix64(&seed);
}

static uint64_t qp_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t qp_rng_next(qp_rng *r) {
  uint64_t *s = r->s, result = qp_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = qp_rotl(s[3], 45);
  return result;
}

/* Uniform in (0, 1], never 0 (the log below). */
static double qp_rng_uniform(qp_rng *r) {
  return ((double)(qp_rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

static double qp_rng_gaussian(qp_rng *r) {
  double u = qp_rng_uniform(r), v = qp_rng_uniform(r);
  return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* The 3x3 TEB covariance of multipole l, times B_l^2, row-major. */
static void qp_sim_cov(const qp_cls *cls, int l, double beam, double c[3][3]) {
  double v[6];
  for (int s = 0; s < 6; ++s)
    v[s] = cls->cl[s] ? cls->cl[s][l] * beam * beam : 0.0;
  c[0][0] = v[0], c[1][1] = v[1], c[2][2] = v[2];
  c[0][1] = c[1][0] = v[3];
  c[0][2] = c[2][0] = v[4];
  c[1][2] = c[2][1] = v[5];
}

/* c = f f^T with f lower triangular, for a positive semidefinite c: Cholesky that skips zero
 * pivots (their column of f is 0), which handles C_l = 0, BB = 0 or |TE| = sqrt(TT EE).
 * Returns 0 when c is not positive semidefinite (beyond round-off). Round-off is judged
 * against each entry's own scale (a pivot against its variance, a correlation against
 * sqrt(c_ii c_jj)): a tolerance from the largest variance took EE for 0 whenever T's values
 * were ~1e5 times Q's (T in uK against Q/U in K, or TT in other units), and drew maps without
 * E or B signal (issue 38). */
static int qp_sim_factor(const double c[3][3], double f[3][3]) {
  const double rel = 1e-10;
  memset(f, 0, 9 * sizeof(double));
  for (int j = 0; j < 3; ++j) {
    double d = c[j][j];
    for (int k = 0; k < j; ++k)
      d -= f[j][k] * f[j][k];
    const double tol = rel * fabs(c[j][j]);
    if (d < -tol) return 0;
    int zero = d <= tol;
    if (!zero) f[j][j] = sqrt(d);
    for (int i = j + 1; i < 3; ++i) {
      double r = c[i][j];
      for (int k = 0; k < j; ++k)
        r -= f[i][k] * f[j][k];
      if (zero) {
        /* a zero pivot with a non-zero correlation */
        if (fabs(r) > rel * sqrt(fabs(c[i][i]) * fabs(c[j][j]))) return 0;
      } else {
        f[i][j] = r / f[j][j];
      }
    }
  }
  return 1;
}

/* The pixel window of field f (0: T, 1 and 2: E and B) at l; 1 without one. */
static double qp_sim_window(const qp_sim_options *o, int f, int l) {
  return o->pixel_window ? (f ? o->pixel_window->p : o->pixel_window->t)[l] : 1.0;
}

/* Draws the real coefficients: coef[(f * n_modes + mode) + k * ld] for map k, field f. */
static qp_err qp_sim_draw(const qp_cls *cls, const qp_sim_options *o, int polarised, int n_modes,
                          int64_t ld, qp_rng *rng, double *coef) {
  for (int k = 0; k < o->n_maps; ++k)
    for (int l = o->ell_min; l <= o->lmax; ++l) {
      double beam = qp_beam_gaussian(l, o->beam_fwhm_arcmin);
      if (!polarised) {
        double sigma = sqrt(fmax(cls->cl[0][l], 0.0)) * beam * qp_sim_window(o, 0, l);
        for (int m = -l; m <= l; ++m)
          coef[qp_harmonic_index(l, m, o->ell_min) + k * ld] = sigma * qp_rng_gaussian(rng);
        continue;
      }
      double c[3][3], f[3][3];
      qp_sim_cov(cls, l, beam, c);
      QP_CHECK(qp_sim_factor(c, f), QP_ERR_INPUT,
               "simulate: the TT/EE/BB/TE/TB/EB matrix at ell %d is not positive semidefinite", l);
      for (int m = -l; m <= l; ++m) {
        double z[3];
        for (int a = 0; a < 3; ++a)
          z[a] = qp_rng_gaussian(rng);
        int64_t at = qp_harmonic_index(l, m, o->ell_min) + k * ld;
        for (int a = 0; a < 3; ++a)
          coef[at + (int64_t)a * n_modes] =
              qp_sim_window(o, a, l) * (f[a][0] * z[0] + f[a][1] * z[1] + f[a][2] * z[2]);
      }
    }
  return QP_OK;
}

/* Adds white noise of variance var_t to T (column 0) and var_p to Q and U (columns 1, 2) of
 * each map, map by map, from `rng` (a variance <= 0: no draws for that column). */
static void qp_sim_add_noise(qp_rng *rng, int n_maps, int n_col, int64_t n_sky, double var_t,
                             double var_p, double *maps) {
  for (int k = 0; k < n_maps; ++k)
    for (int c = 0; c < n_col; ++c) {
      const double var = c > 0 ? var_p : var_t;
      if (!(var > 0)) continue;
      double sd = sqrt(var), *map = maps + ((int64_t)k * n_col + c) * n_sky;
      for (int64_t i = 0; i < n_sky; ++i)
        map[i] += sd * qp_rng_gaussian(rng);
    }
}

/* qp_simulate_sky and qp_simulate_pairs: maps2 == NULL for one set (pair unused). */
static qp_err qp_sim_sky_sets(const qp_cls *cls, const qp_sim_options *o, const qp_sim_pol *pol,
                              const qp_sim_pair *pair, double *maps, double *maps2) {
  QP_CHECK(o->nside >= 1 && o->n_maps >= 1, QP_ERR_INPUT,
           "simulate: nside and n_maps must be >= 1");
  QP_CHECK(o->ell_min >= 0 && o->lmax >= o->ell_min && o->lmax <= cls->lmax, QP_ERR_INPUT,
           "simulate: need 0 <= ell_min <= lmax <= %d (the C_ell file's last ell), got %d..%d",
           cls->lmax, o->ell_min, o->lmax);
  QP_CHECK(!o->pixel_window || o->pixel_window->lmax >= o->lmax, QP_ERR_INTERNAL,
           "simulate: a pixel window to l = %d, the maps to l = %d",
           o->pixel_window ? o->pixel_window->lmax : -1, o->lmax);
  const qp_fields fields = pol ? pol->fields : QP_FIELDS_T;
  QP_CHECK(fields == QP_FIELDS_T || fields == QP_FIELDS_QU || fields == QP_FIELDS_TQU, QP_ERR_INPUT,
           "simulate: unknown fields %d", (int)fields);
  const int polarised = fields != QP_FIELDS_T, n_col = qp_simulate_columns(fields);
  const int64_t n_sky = 12 * o->nside * o->nside;
  const int n_modes = qp_harmonic_count(o->ell_min, o->lmax);
  const int64_t n_coef = (int64_t)n_modes * (polarised ? 3 : 1);
  const int64_t block = 256; /* pixels per harmonic block */
  qp_err err = QP_OK;
  /* coef: [T | E | B] coefficients x maps. t_rows: block x modes of t. p_rows: the Q rows then
   * the U rows of a block (ld 2 block) x [E modes | B modes]. out: T or [Q; U] of a block. */
  qp_matrix coef = {0}, t_rows = {0}, p_rows = {0}, out = {0};
  qp_harmonics_ring ring = {0}; /* pixels in RING order: a ring's Legendre functions once */
  const int ring_ready = qp_harmonics_ring_init(&ring, o->lmax, polarised);
  double *row = malloc((size_t)n_modes * (polarised ? 5 : 1) * sizeof *row);
  QP_CHECK_GOTO(ring_ready && row, QP_ERR_NOMEM, done, "simulate: out of memory");
  const qp_linalg_ops *ops = qp_linalg_cpu_ops();
  QP_CALL_GOTO(qp_matrix_create(ops, "sim_alm", QP_TERM_TRANSIENT, n_coef, o->n_maps, &coef), done);
  QP_CALL_GOTO(qp_matrix_create(ops, "sim_harmonics", QP_TERM_TRANSIENT, block, n_modes, &t_rows),
               done);
  if (polarised)
    QP_CALL_GOTO(qp_matrix_create(ops, "sim_harmonics_pol", QP_TERM_TRANSIENT, 2 * block,
                                  2 * (int64_t)n_modes, &p_rows),
                 done);
  QP_CALL_GOTO(qp_matrix_create(ops, "sim_block", QP_TERM_TRANSIENT, (polarised ? 2 : 1) * block,
                                o->n_maps, &out),
               done);

  qp_rng rng;
  qp_rng_seed(&rng, o->seed);
  QP_CALL_GOTO(qp_sim_draw(cls, o, polarised, n_modes, n_coef, &rng, coef.data), done);
  double *t = row, *qe = NULL, *ue = NULL, *qb = NULL, *ub = NULL;
  if (polarised) qe = row + n_modes, ue = qe + n_modes, qb = ue + n_modes, ub = qb + n_modes;
  for (int64_t first = 0; first < n_sky; first += block) {
    int64_t count = n_sky - first < block ? n_sky - first : block;
    const int64_t pld = 2 * block;
    for (int64_t i = 0; i < count; ++i) {
      double theta, phi;
      pix2ang_ring64(o->nside, first + i, &theta, &phi);
      qp_harmonics_ring_at(&ring, o->ell_min, theta, phi, t, qe, ue, qb, ub);
      if (polarised) {
        double *pq = p_rows.data + i, *pu = p_rows.data + count + i;
        const int64_t b_off = (int64_t)n_modes * pld;
        for (int64_t j = 0; j < n_modes; ++j) {
          pq[j * pld] = qe[j];
          pu[j * pld] = ue[j];
          pq[b_off + j * pld] = qb[j];
          pu[b_off + j * pld] = ub[j];
        }
      }
      for (int64_t j = 0; j < n_modes; ++j)
        t_rows.data[i + j * block] = t[j];
    }
    qp_matrix rows, dest, alm;
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_harmonics", t_rows.data, count, n_modes, block, &rows),
                 done);
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_alm", coef.data, n_modes, o->n_maps, n_coef, &alm), done);
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_block", out.data, count, o->n_maps, out.ld, &dest), done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &rows, &alm, 0.0, &dest), done);
    for (int k = 0; k < o->n_maps; ++k)
      for (int64_t i = 0; i < count; ++i)
        maps[(int64_t)k * n_col * n_sky + first + i] = out.data[i + k * out.ld];
    if (!polarised) continue;
    /* [Q; U] of the block = [qe qb; ue ub] [r_E; r_B]. */
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_harmonics_pol", p_rows.data, 2 * count,
                                2 * (int64_t)n_modes, pld, &rows),
                 done);
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_alm", coef.data + n_modes, 2 * (int64_t)n_modes,
                                o->n_maps, n_coef, &alm),
                 done);
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_block", out.data, 2 * count, o->n_maps, out.ld, &dest),
                 done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &rows, &alm, 0.0, &dest), done);
    for (int k = 0; k < o->n_maps; ++k)
      for (int c = 1; c < 3; ++c)
        for (int64_t i = 0; i < count; ++i)
          maps[((int64_t)k * n_col + c) * n_sky + first + i] =
              out.data[(c - 1) * count + i + k * out.ld];
  }
  /* The second set's signal: the same sky, copied before any noise. */
  if (maps2) memcpy(maps2, maps, (size_t)o->n_maps * (size_t)n_col * (size_t)n_sky * sizeof *maps);
  /* Noise after the signal, map by map, so a map's noise does not depend on lmax; the second
   * set's after all of the first set's, so the first set is the same maps as without pairs. */
  const double var_p =
      pol && pol->noise_variance_pol >= 0 ? pol->noise_variance_pol : o->noise_variance;
  qp_sim_add_noise(&rng, o->n_maps, n_col, n_sky, o->noise_variance, var_p, maps);
  if (maps2)
    qp_sim_add_noise(
        &rng, o->n_maps, n_col, n_sky, pair->noise_variance,
        pair->noise_variance_pol >= 0 ? pair->noise_variance_pol : pair->noise_variance, maps2);
done:
  free(row);
  qp_harmonics_ring_free(&ring);
  qp_matrix_destroy(&out);
  qp_matrix_destroy(&p_rows);
  qp_matrix_destroy(&t_rows);
  qp_matrix_destroy(&coef);
  return err;
}

qp_err qp_simulate_sky(const qp_cls *cls, const qp_sim_options *o, const qp_sim_pol *pol,
                       double *maps) {
  QP_CALL(qp_sim_sky_sets(cls, o, pol, NULL, maps, NULL));
  return QP_OK;
}

qp_err qp_simulate_pairs(const qp_cls *cls, const qp_sim_options *o, const qp_sim_pol *pol,
                         const qp_sim_pair *pair, double *maps, double *maps2) {
  QP_CHECK(pair && maps2, QP_ERR_INTERNAL, "simulate: pairs need the second set's noise and maps");
  QP_CHECK(isfinite(pair->noise_variance) && pair->noise_variance >= 0 &&
               isfinite(pair->noise_variance_pol),
           QP_ERR_INPUT, "simulate: the second set's noise variances must be finite and >= 0");
  QP_CALL(qp_sim_sky_sets(cls, o, pol, pair, maps, maps2));
  return QP_OK;
}

qp_err qp_simulate_maps(const qp_cls *cls, const qp_sim_options *options, double *maps) {
  QP_CALL(qp_simulate_sky(cls, options, NULL, maps));
  return QP_OK;
}

void qp_simulate_galactic_mask(int64_t nside, double b0_deg, double *mask) {
  const int64_t n_sky = 12 * nside * nside;
  for (int64_t i = 0; i < n_sky; ++i) {
    double theta, phi;
    pix2ang_ring64(nside, i, &theta, &phi);
    double b = 90.0 - theta * 180.0 / M_PI;
    mask[i] = fabs(b) > b0_deg || b0_deg <= 0.0 ? 1.0 : 0.0;
  }
}
