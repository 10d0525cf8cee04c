/* spin_harmonics.h: the real spherical-harmonic basis of temperature (spin 0) and polarisation
 * (spin 2, E and B patterns in Q and U), in healpy's convention, at one direction.
 *
 * The basis is DEFINED by healpy (COSMO polarisation convention). Real coefficients r_lm map to
 * healpy's complex a_lm by a_l0 = r_l0 and, for m > 0, a_lm = (r_l,m + i r_l,-m) / sqrt(2).
 * So basis(l, m > 0) is the map healpy.alm2map([T, E, B], pol=True) makes from the single
 * a_lm = 1/sqrt(2), basis(l, -m) the map of a_lm = i/sqrt(2), basis(l, 0) the map of a_l0 = 1
 * (in the T alm for t, the E alm for (qe, ue), the B alm for (qb, ub)). A map
 * sum_lm r_lm basis_lm with real r_lm ~ N(0, C_l) (3x3 TEB correlations per (l, m)) then has
 * healpy's covariance (QML.md 1), and S = V^T Lambda V for V the rows of this basis (QML.md 3).
 *
 * With lambda_lm the orthonormalised associated Legendre functions (Condon-Shortley phase
 * included), x = cos theta, s2 = sin^2 theta, N_l = 2 / sqrt((l-1) l (l+1) (l+2)),
 * r_lm = sqrt((2l+1)(l-m) / ((2l-1)(l+m))) (lambda_l-1,m = 0 when l-1 < m), and for m >= 0
 *   G1_lm = N_l ( -((l - m^2)/s2 + l(l-1)/2) lambda_lm + (l+m) x/s2 r_lm lambda_l-1,m )
 *   G2_lm = N_l (m/s2) ( (l-1) x lambda_lm - (l+m) r_lm lambda_l-1,m ),
 * the basis functions are (c = cos(m phi), s = sin(m phi), m > 0):
 *            m = 0          (l, m)                       (l, -m)
 *   t        lambda_l0      sqrt2 lambda c               -sqrt2 lambda s
 *   qe, ue   -G1, 0         -sqrt2 G1 c,  sqrt2 G2 s     sqrt2 G1 s,  sqrt2 G2 c
 *   qb, ub   0, -G1         -sqrt2 G2 s, -sqrt2 G1 c     -sqrt2 G2 c, sqrt2 G1 s
 * Spin-2 functions vanish for l < 2. tests/unit/test_harmonics.c checks every pixel of an
 * nside-4 map against healpy (tests/data/healpy_harmonics_nside4.txt, made by
 * tools/make_healpy_reference.py). */
#ifndef QP_HARMONICS_H
#define QP_HARMONICS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/** Index of (l, m), -l <= m <= l, in a row of basis values that starts at l = ell_min:
 *  l^2 - ell_min^2 + l + m. Valid for l < 46340 (int range). */
static inline int qp_harmonic_index(int l, int m, int ell_min) {
  return l * l - ell_min * ell_min + l + m;
}

/** The l of index `index` of qp_harmonic_index(l, m, ell_min): l^2 <= index + ell_min^2. */
static inline int qp_harmonic_ell(int64_t index, int ell_min) {
  const int64_t k = index + (int64_t)ell_min * ell_min;
  int64_t l = (int64_t)sqrt((double)k);
  while (l * l > k) --l;          /* sqrt's rounding, either way */
  while ((l + 1) * (l + 1) <= k) ++l;
  return (int)l;
}

/** Number of (l, m) with ell_min <= l <= lmax: (lmax+1)^2 - ell_min^2 (per field). */
static inline int qp_harmonic_count(int ell_min, int lmax) {
  return (lmax + 1) * (lmax + 1) - ell_min * ell_min;
}

/** Number of (l, m) with 0 <= m <= l <= lmax: (lmax+1)(lmax+2)/2, the size of one triangle of
 *  a ring's factors (qp_harmonics_ring). */
static inline int64_t qp_harmonics_triangle(int lmax) {
  return (int64_t)(lmax + 1) * (lmax + 2) / 2;
}

/** Number of doubles the `work` argument of qp_harmonics_at needs: the four triangles of a
 *  ring's factors, 2 (lmax+1)(lmax+2). */
static inline int64_t qp_harmonics_work_size(int lmax) { return 4 * qp_harmonics_triangle(lmax); }

/** Evaluates the real basis at the direction (theta, phi) (colatitude and longitude in
 *  radians, as chealpix pix2ang_ring64 returns them) for every l in [ell_min, lmax] and
 *  m in [-l, l]: out[qp_harmonic_index(l, m, ell_min)] for each requested output.
 *  - ell_min, lmax: 0 <= ell_min <= lmax.
 *  - work (scratch): qp_harmonics_work_size(lmax) doubles, host memory.
 *  - t, qe, ue, qb, ub (out): qp_harmonic_count(ell_min, lmax) doubles each, host memory: the
 *    temperature basis, and the Q and U of the E and B patterns. Any may be NULL (not
 *    computed). Spin-2 entries with l < 2 are set to 0.
 *  Directions must not be at the poles: the spin-2 formulas divide by sin^2 theta. HEALPix
 *  pixel centres never are. For fail-safety, theta closer than 1e-10 to 0 or pi is moved to
 *  1e-10 from the pole; the values are then finite but not accurate.
 *  Cost O(lmax^2); no allocation, no failure, thread-safe (distinct work arrays). */
void qp_harmonics_at(int ell_min, int lmax, double theta, double phi, double *work, double *t,
                     double *qe, double *ue, double *qb, double *ub);

/** The basis at many directions in a row (one thread's scratch): what depends on the
 *  colatitude alone, computed once per theta and reused by every direction on it (the pixels
 *  of a HEALPix ring: at nside 16, 1984 observed pixels lie on ~50 rings; the recursion and
 *  its square roots were a quarter of the V build's time there). Every value of the basis is
 *  then one factor, times cos(|m| phi) or sin(|m| phi) where m != 0, negated or not. The
 *  factors, each a triangle of qp_harmonics_triangle(lmax) (m-major, l >= m, entry
 *  m (2 lmax - m + 3) / 2 + l - m): t = lambda_lm (m = 0) or sqrt2 lambda_lm; h1, h2 = G1, G2
 *  (m = 0) or sqrt2 G1, sqrt2 G2 (spin 2 only). */
typedef struct qp_harmonics_ring {
  int lmax, spin2;
  double theta;                /* of the factors; NaN: none yet */
  double *lambda, *t, *h1, *h2; /* one allocation; h1, h2 NULL without spin 2 */
} qp_harmonics_ring;

/** Allocates r's factors for l <= lmax (malloc: 2 or, with spin2, 4 triangles of
 *  (lmax+1)(lmax+2)/2 doubles). 0 when out of memory (nothing to free then). */
int qp_harmonics_ring_init(qp_harmonics_ring *r, int lmax, int spin2);
void qp_harmonics_ring_free(qp_harmonics_ring *r);

/** Brings r's factors to colatitude theta (moved off the poles as by qp_harmonics_at): the
 *  recursion runs only when theta differs from the last call's. */
void qp_harmonics_ring_theta(qp_harmonics_ring *r, double theta);

/** The basis at (theta, phi) as qp_harmonics_at gives it (which is this on a ring made of its
 *  work array), with r's lmax and factors. Spin-2 outputs need r made with spin2. */
void qp_harmonics_ring_at(qp_harmonics_ring *r, int ell_min, double theta, double phi, double *t,
                          double *qe, double *ue, double *qb, double *ub);

/** The outputs of qp_harmonics_at, as one value's recipe names them. */
typedef enum qp_basis_output {
  QP_BASIS_T,
  QP_BASIS_QE,
  QP_BASIS_UE,
  QP_BASIS_QB,
  QP_BASIS_UB
} qp_basis_output;

typedef enum { QP_FACTOR_NONE, QP_FACTOR_T, QP_FACTOR_H1, QP_FACTOR_H2 } qp_basis_factor;
typedef enum { QP_TRIG_NONE, QP_TRIG_COS, QP_TRIG_SIN } qp_basis_trig;

/** How one value of the basis, output `out` at (l, m), comes from a ring's factors: factor
 *  `source` at entry k (QP_FACTOR_NONE: the value is +0), times cos or sin of |m| phi (or
 *  nothing at m = 0), negated when `negate`. For a whole column of V at once: its recipe is the
 *  same at every pixel (basis_setup's V build). */
typedef struct qp_basis_recipe {
  int64_t k;
  int m; /* |m| */
  unsigned char source, trig, negate;
} qp_basis_recipe;

qp_basis_recipe qp_basis_recipe_of(int lmax, qp_basis_output out, int l, int m);

/** The factor a recipe multiplies (NULL: the value is +0). */
static inline const double *qp_basis_factors(const qp_harmonics_ring *r,
                                             const qp_basis_recipe *c) {
  return c->source == QP_FACTOR_T    ? r->t
         : c->source == QP_FACTOR_H1 ? r->h1
         : c->source == QP_FACTOR_H2 ? r->h2
                                     : NULL;
}

/** The factor recipe c multiplies, with its sign (f non-NULL: qp_basis_factors(r, c)). The
 *  sign goes on the factor, not the product: (-f) x t is -(f x t) exactly, so a caller may
 *  multiply a whole block of cos or sin by it (basis_setup's V build). */
static inline double qp_basis_signed_factor(const qp_basis_recipe *c, const double *f) {
  return c->negate ? -f[c->k] : f[c->k];
}

/** The value of recipe c at a direction on r's colatitude whose cos(|m| phi), sin(|m| phi)
 *  are cm, sm: bitwise qp_harmonics_at's. */
static inline double qp_basis_value(const qp_harmonics_ring *r, const qp_basis_recipe *c,
                                    double cm, double sm) {
  const double *f = qp_basis_factors(r, c);
  if (!f) return 0.0;
  const double s = qp_basis_signed_factor(c, f);
  return c->trig == QP_TRIG_COS ? s * cm : c->trig == QP_TRIG_SIN ? s * sm : s;
}

#endif
