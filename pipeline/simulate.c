/* simulate.c: maps from real spherical harmonics with Gaussian a_lm, plus white noise. */
#include "simulate.h"

#include <chealpix.h>
#include <math.h>
#include <stdlib.h>

#include "legendre.h"
#include "matrix.h"
#include "ylm.h"

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
  for (int i = 0; i < 4; ++i) r->s[i] = qp_splitmix64(&seed);
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

qp_err qp_simulate_maps(const qp_cls *cls, const qp_sim_options *o, double *maps) {
  QP_CHECK(o->nside >= 1 && o->n_maps >= 1, QP_ERR_INPUT, "simulate: nside and n_maps must be >= 1");
  QP_CHECK(o->ell_min >= 0 && o->lmax >= o->ell_min && o->lmax <= cls->lmax, QP_ERR_INPUT,
           "simulate: need 0 <= ell_min <= lmax <= %d (the C_ell file's last ell), got %d..%d",
           cls->lmax, o->ell_min, o->lmax);
  const int64_t n_sky = 12 * o->nside * o->nside;
  const int n_modes = qp_ylm_count(o->ell_min, o->lmax);
  const int64_t block = 256; /* pixels per harmonic block */
  qp_err err = QP_OK;
  qp_matrix alm = {0}, ylm = {0}, out = {0};
  double *lambda = malloc((size_t)(o->lmax + 1) * (size_t)(o->lmax + 2) / 2 * sizeof *lambda);
  double *row = malloc((size_t)n_modes * sizeof *row);
  QP_CHECK_GOTO(lambda && row, QP_ERR_NOMEM, done, "simulate: out of memory");
  const qp_linalg_ops *ops = qp_linalg_cpu_ops();
  QP_CALL_GOTO(qp_matrix_create(ops, "sim_alm", QP_TERM_TRANSIENT, n_modes, o->n_maps, &alm), done);
  QP_CALL_GOTO(qp_matrix_create(ops, "sim_harmonics", QP_TERM_TRANSIENT, block, n_modes, &ylm),
               done);
  QP_CALL_GOTO(qp_matrix_create(ops, "sim_block", QP_TERM_TRANSIENT, block, o->n_maps, &out), done);

  qp_rng rng;
  qp_rng_seed(&rng, o->seed);
  for (int k = 0; k < o->n_maps; ++k)
    for (int l = o->ell_min; l <= o->lmax; ++l) {
      double sigma = sqrt(fmax(cls->cl[0][l], 0.0)) * qp_beam_gaussian(l, o->beam_fwhm_arcmin);
      for (int m = -l; m <= l; ++m)
        alm.data[qp_ylm_index(l, m, o->ell_min) + (int64_t)k * n_modes] =
            sigma * qp_rng_gaussian(&rng);
    }
  for (int64_t first = 0; first < n_sky; first += block) {
    int64_t count = n_sky - first < block ? n_sky - first : block;
    for (int64_t i = 0; i < count; ++i) {
      double theta, phi;
      pix2ang_ring64(o->nside, first + i, &theta, &phi);
      qp_ylm_real(o->ell_min, o->lmax, cos(theta), phi, lambda, row);
      for (int j = 0; j < n_modes; ++j) ylm.data[i + (int64_t)j * block] = row[j];
    }
    qp_matrix rows, dest;
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_harmonics", ylm.data, count, n_modes, block, &rows), done);
    QP_CALL_GOTO(qp_matrix_view(ops, "sim_block", out.data, count, o->n_maps, block, &dest), done);
    QP_CALL_GOTO(qp_linalg_gemm(QP_NOTRANS, QP_NOTRANS, 1.0, &rows, &alm, 0.0, &dest), done);
    for (int k = 0; k < o->n_maps; ++k)
      for (int64_t i = 0; i < count; ++i) maps[k * n_sky + first + i] = out.data[i + k * block];
  }
  /* Noise after the signal, map by map, so a map's noise does not depend on lmax. */
  if (o->noise_variance > 0) {
    double sd = sqrt(o->noise_variance);
    for (int k = 0; k < o->n_maps; ++k)
      for (int64_t i = 0; i < n_sky; ++i) maps[k * n_sky + i] += sd * qp_rng_gaussian(&rng);
  }
done:
  free(row);
  free(lambda);
  qp_matrix_destroy(&out);
  qp_matrix_destroy(&ylm);
  qp_matrix_destroy(&alm);
  return err;
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
