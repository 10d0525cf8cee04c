/* test_harmonics: the real T/E/B basis of spin_harmonics.h IS healpy's.
 * 1. Every pixel of nside 4 against healpy's own alm2map values (argv[1], the file
 *    tests/data/healpy_harmonics_nside4.txt written by tools/make_healpy_reference.py), to
 *    1e-12 absolute, for t, qe, ue, qb, ub.
 * 2. The spin-0 addition theorem sum_m t_lm(a) t_lm(b) = (2l+1)/(4pi) P_l(a . b) for random
 *    pairs of directions, to 1e-12.
 * 3. ell_min > 0 and NULL outputs give the same values at the shifted indices.
 * 4. A ring's factors (qp_harmonics_ring_at, and each value's recipe as basis_setup's V build
 *    applies it a column at a time) give qp_harmonics_at's values to the bit. */
#include <chealpix.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spin_harmonics.h"
#include "legendre.h"
#include "test_util.h"

enum { KINDS = 5 };
static const char *kind_names[KINDS] = {"t", "qe", "ue", "qb", "ub"};

typedef struct basis_rows {
  int ell_min, lmax, n;
  double *work, *out[KINDS];
} basis_rows;

static void rows_init(basis_rows *b, int ell_min, int lmax) {
  b->ell_min = ell_min;
  b->lmax = lmax;
  b->n = qp_harmonic_count(ell_min, lmax);
  b->work = malloc((size_t)qp_harmonics_work_size(lmax) * sizeof(double));
  for (int k = 0; k < KINDS; ++k)
    b->out[k] = malloc((size_t)b->n * sizeof(double));
}

static void rows_free(basis_rows *b) {
  free(b->work);
  for (int k = 0; k < KINDS; ++k)
    free(b->out[k]);
}

static void rows_eval(basis_rows *b, double theta, double phi) {
  qp_harmonics_at(b->ell_min, b->lmax, theta, phi, b->work, b->out[0], b->out[1], b->out[2],
                  b->out[3], b->out[4]);
}

/* 1. healpy's values, pixel by pixel. */
static void check_healpy(const char *path) {
  FILE *f = fopen(path, "r");
  TEST_ASSERT(f != NULL, "cannot open the reference file '%s'", path);
  if (!f) return;
  char line[1024];
  long nside = 0, lmax = -1, rows = 0;
  double worst[KINDS] = {0};
  basis_rows b = {0};
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#') {
      long ns, lm, np;
      if (sscanf(line, "# nside %ld lmax %ld npix %ld", &ns, &lm, &np) == 3) {
        nside = ns;
        lmax = lm;
        rows_init(&b, 0, (int)lmax);
      }
      continue;
    }
    int l, m;
    long pix;
    double ref[KINDS];
    int got = sscanf(line, "%d %d %ld %lf %lf %lf %lf %lf", &l, &m, &pix, &ref[0], &ref[1], &ref[2],
                     &ref[3], &ref[4]);
    TEST_ASSERT(got == 8 && nside > 0 && l >= 0 && l <= lmax && abs(m) <= l && pix >= 0 &&
                    pix < 12 * nside * nside,
                "bad reference line: %s", line);
    if (got != 8 || nside <= 0 || l < 0 || l > lmax || abs(m) > l) break;
    double theta, phi;
    pix2ang_ring64(nside, pix, &theta, &phi);
    rows_eval(&b, theta, phi);
    int i = qp_harmonic_index(l, m, 0);
    for (int k = 0; k < KINDS; ++k) {
      double d = fabs(b.out[k][i] - ref[k]);
      worst[k] = qp_test_worst(worst[k], d);
      TEST_WITHIN(d, 1e-12, "(l %d, m %d) pixel %ld %s: %.17g, healpy %.17g", l, m, pix,
                  kind_names[k], b.out[k][i], ref[k]);
    }
    ++rows;
  }
  fclose(f);
  rows_free(&b);
  TEST_ASSERT(rows >= 12 * nside * nside, "only %ld reference rows read from '%s'", rows, path);
  printf("healpy nside %ld lmax %ld: %ld (l, m, pixel) rows; largest |diff| t %.2e qe %.2e "
         "ue %.2e qb %.2e ub %.2e\n",
         nside, lmax, rows, worst[0], worst[1], worst[2], worst[3], worst[4]);
}

/* Uniform in [0, 1) from a fixed 64-bit LCG: the same pairs on every machine. */
static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*state >> 11) * 0x1.0p-53;
}

/* 2. The addition theorem for spin 0. */
static void check_addition(void) {
  const int lmax = 40;
  basis_rows a = {0}, b = {0};
  rows_init(&a, 0, lmax);
  rows_init(&b, 0, lmax);
  double p[41], worst = 0;
  uint64_t state = 12345;
  for (int pair = 0; pair < 50; ++pair) {
    double th1 = acos(1 - 2 * uniform(&state)), ph1 = 2 * M_PI * uniform(&state);
    double th2 = acos(1 - 2 * uniform(&state)), ph2 = 2 * M_PI * uniform(&state);
    rows_eval(&a, th1, ph1);
    rows_eval(&b, th2, ph2);
    double z = cos(th1) * cos(th2) + sin(th1) * sin(th2) * cos(ph1 - ph2);
    qp_legendre(lmax, z, p);
    for (int l = 0; l <= lmax; ++l) {
      double sum = 0;
      for (int m = -l; m <= l; ++m) {
        int i = qp_harmonic_index(l, m, 0);
        sum += a.out[0][i] * b.out[0][i];
      }
      double want = (2 * l + 1) / (4 * M_PI) * p[l], d = fabs(sum - want);
      worst = qp_test_worst(worst, d);
      TEST_WITHIN(d, 1e-12, "addition theorem l %d pair %d: %.17g vs %.17g", l, pair, sum, want);
    }
  }
  printf("addition theorem, 50 random pairs, l <= %d: largest |diff| %.2e\n", lmax, worst);
  rows_free(&a);
  rows_free(&b);
}

/* 3. ell_min > 0 and NULL outputs. */
static void check_offsets(void) {
  const int lmax = 12, ell_min = 3;
  basis_rows full = {0}, part = {0};
  rows_init(&full, 0, lmax);
  rows_init(&part, ell_min, lmax);
  TEST_ASSERT(qp_harmonic_count(ell_min, lmax) == 169 - 9, "count %d",
              qp_harmonic_count(ell_min, lmax));
  const double theta = 1.1, phi = 4.3;
  rows_eval(&full, theta, phi);
  for (int k = 0; k < KINDS; ++k) {
    memset(part.out[k], 0, (size_t)part.n * sizeof(double));
    double *only[KINDS] = {NULL};
    only[k] = part.out[k];
    qp_harmonics_at(ell_min, lmax, theta, phi, part.work, only[0], only[1], only[2], only[3],
                    only[4]);
    for (int l = ell_min; l <= lmax; ++l)
      for (int m = -l; m <= l; ++m) {
        double x = part.out[k][qp_harmonic_index(l, m, ell_min)];
        double y = full.out[k][qp_harmonic_index(l, m, 0)];
        TEST_ASSERT(x == y, "%s (l %d, m %d): ell_min %d gives %.17g, ell_min 0 %.17g",
                    kind_names[k], l, m, ell_min, x, y);
      }
  }
  /* Spin 2 vanishes below l = 2; near a pole the values stay finite. */
  for (int l = 0; l < 2; ++l)
    for (int m = -l; m <= l; ++m)
      for (int k = 1; k < KINDS; ++k)
        TEST_ASSERT(full.out[k][qp_harmonic_index(l, m, 0)] == 0.0, "%s (l %d, m %d) not 0",
                    kind_names[k], l, m);
  const double poles[] = {0.0, 1e-14, M_PI};
  for (int j = 0; j < 3; ++j) {
    rows_eval(&full, poles[j], 0.3);
    for (int k = 0; k < KINDS; ++k)
      for (int i = 0; i < full.n; ++i)
        TEST_ASSERT(isfinite(full.out[k][i]), "%s[%d] at theta %g not finite", kind_names[k], i,
                    poles[j]);
  }
  rows_free(&full);
  rows_free(&part);
}

/* 4. qp_harmonics_ring_at reuses a ring's Legendre functions: bitwise qp_harmonics_at's values
 * over every pixel of a map in RING order (rings of one theta), and again after a jump back to
 * an earlier ring. */
static void check_ring_reuse(void) {
  const int nside = 8, lmax = 23, ell_min = 2;
  basis_rows b = {0};
  rows_init(&b, ell_min, lmax);
  double *ring_out[KINDS];
  for (int k = 0; k < KINDS; ++k) ring_out[k] = malloc((size_t)b.n * sizeof(double));
  qp_harmonics_ring ring;
  TEST_ASSERT(qp_harmonics_ring_init(&ring, lmax, 1), "ring scratch for lmax %d", lmax);
  long differ = 0, evaluated = 0;
  double worst = 0.0; /* NaN-aware: memcmp alone passes a NaN both sides produce */
  for (long k = 0; k <= 12L * nside * nside; ++k) {
    const long pix = k < 12L * nside * nside ? k : 5; /* the last: back to the first ring */
    double theta, phi;
    pix2ang_ring64(nside, pix, &theta, &phi);
    rows_eval(&b, theta, phi);
    qp_harmonics_ring_at(&ring, ell_min, theta, phi, ring_out[0], ring_out[1], ring_out[2],
                         ring_out[3], ring_out[4]);
    for (int x = 0; x < KINDS; ++x) {
      differ += memcmp(ring_out[x], b.out[x], (size_t)b.n * sizeof(double)) != 0;
      worst = qp_test_worst(worst, qp_test_max_diff(ring_out[x], b.out[x], (size_t)b.n, 1.0));
    }
    ++evaluated;
  }
  TEST_ASSERT(differ == 0 && qp_test_within(worst, 0.0),
              "ring reuse: %ld of %ld rows differ from qp_harmonics_at's (largest %g)", differ,
              evaluated * KINDS, worst);
  printf("ring reuse: nside %d lmax %d, %ld pixels bitwise as qp_harmonics_at\n", nside, lmax,
         evaluated);
  qp_harmonics_ring_free(&ring);
  for (int k = 0; k < KINDS; ++k) free(ring_out[k]);
  rows_free(&b);
}

/* 5. Each value's recipe (qp_basis_recipe_of, qp_basis_value: basis_setup's V build, a column
 * at a time) applied to a ring's factors is qp_harmonics_at's value to the bit, for every
 * output and (l, m) at every pixel of an nside-8 map; a T-only ring (no spin-2 factors) gives
 * the T values alike. */
static void check_recipes(void) {
  const int nside = 8, lmax = 23, ell_min = 2;
  basis_rows b = {0};
  rows_init(&b, ell_min, lmax);
  qp_harmonics_ring ring, ring_t;
  TEST_ASSERT(qp_harmonics_ring_init(&ring, lmax, 1) && qp_harmonics_ring_init(&ring_t, lmax, 0),
              "ring factors for lmax %d", lmax);
  long differ = 0, values = 0;
  double worst = 0.0; /* NaN-aware: memcmp alone passes a NaN both sides produce */
  for (long pix = 0; pix < 12L * nside * nside; ++pix) {
    double theta, phi;
    pix2ang_ring64(nside, pix, &theta, &phi);
    rows_eval(&b, theta, phi);
    qp_harmonics_ring_theta(&ring, theta);
    qp_harmonics_ring_theta(&ring_t, theta);
    for (int l = ell_min; l <= lmax; ++l)
      for (int m = -l; m <= l; ++m) {
        const int am = m < 0 ? -m : m;
        const double cm = cos(am * phi), sm = sin(am * phi);
        const int i = qp_harmonic_index(l, m, ell_min);
        for (int x = 0; x < KINDS; ++x) {
          const qp_basis_recipe c = qp_basis_recipe_of(lmax, (qp_basis_output)x, l, m);
          const double v = qp_basis_value(&ring, &c, cm, sm);
          differ += memcmp(&v, &b.out[x][i], sizeof v) != 0;
          worst = qp_test_worst(worst, qp_test_rel_diff(v, b.out[x][i]));
          if (x == QP_BASIS_T) {
            const double vt = qp_basis_value(&ring_t, &c, cm, sm);
            differ += memcmp(&vt, &b.out[x][i], sizeof vt) != 0;
            worst = qp_test_worst(worst, qp_test_rel_diff(vt, b.out[x][i]));
            ++values;
          }
          ++values;
        }
      }
  }
  TEST_ASSERT(differ == 0 && qp_test_within(worst, 0.0),
              "recipes: %ld of %ld values differ from qp_harmonics_at's (largest %g)", differ,
              values, worst);
  printf("recipes: nside %d lmax %d, %ld values bitwise as qp_harmonics_at\n", nside, lmax,
         values);
  qp_harmonics_ring_free(&ring);
  qp_harmonics_ring_free(&ring_t);
  rows_free(&b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_harmonics healpy_harmonics_nside4.txt\n");
    return 2;
  }
  check_healpy(argv[1]);
  check_addition();
  check_offsets();
  check_ring_reuse();
  check_recipes();
  return TEST_RETURN();
}
