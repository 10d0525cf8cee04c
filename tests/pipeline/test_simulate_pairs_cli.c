/* test_simulate_pairs_cli: `qmlpipe simulate --pairs`, the map pairs of cross-spectra
 * (argv[1]: qmlpipe, argv[2]: a C_ell file). Every check of maps reads the FITS files back.
 *  - exact: the first set is bit for bit the maps of the same command without --pairs; with
 *    --noise2-variance 0 (and -pol 0) the second set is bit for bit the noise-free sky of the
 *    same seed (what --noise-variance 0 writes), so both sets carry the same signal;
 *  - statistical (nside 64, 2 TQU maps: 98304 pixels a column): with n1 = map - sky and
 *    n2 = map2 - sky, the variances of n1, n2 and map - map2 are v1, v2 and v1 + v2 per column
 *    and the correlation of n1 and n2 is 0, each within 6 sigma of its sampling error (the
 *    seed is fixed: the figures are printed);
 *  - the defaults (the second set's noise is the first's, T and P) and the printed config keys;
 *  - usage errors (exit 2), outputs refused (exit 8), and qp_simulate_pairs's own refusals.
 * Everything happens in simulate_pairs_cli.d. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_run.h"
#include "cls_text.h"
#include "fits_map.h"
#include "simulate.h"
#include "test_util.h"

static char qmlpipe[4096], cls_path[4096];

enum { NSIDE = 64, N_MAPS = 2, N_COL = 3, N_SKY = 12 * NSIDE * NSIDE };
/* The sampling tolerance, in standard deviations: a correct simulation exceeds it with
 * probability ~1e-9 per check. */
#define N_SIGMA 6.0

/* Runs qmlpipe with args; expects `status` and every word (NULL-terminated) on stdout (status
 * 0) or stderr. */
static void expect(const char *tag, const char *const *args, int status, const char *const *words) {
  qp_cli_result r;
  qp_cli_run(qmlpipe, tag, args, &r);
  TEST_ASSERT(r.started && r.exited && r.status == status,
              "%s: exit status %d (signal %d), expected %d; stderr:\n%s", tag, r.status, r.signal,
              status, r.err ? r.err : "");
  const char *where = status == 0 ? r.out : r.err;
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(where && strstr(where, words[i]) != NULL, "%s: %s lacks '%s':\n%s", tag,
                status == 0 ? "stdout" : "stderr", words[i], where ? where : "");
  if (status != 0 && r.err) fprintf(stderr, "  %s: %s", tag, r.err);
  qp_cli_free(&r);
}

/* Maps PREFIX_0000.fits, PREFIX_0001.fits into maps[(k * N_COL + c) * N_SKY + i]. */
static double *read_set(const char *prefix) {
  double *maps = calloc((size_t)N_MAPS * N_COL * N_SKY, sizeof *maps);
  TEST_ASSERT(maps != NULL, "out of memory");
  for (int k = 0; maps && k < N_MAPS; ++k) {
    char path[256];
    snprintf(path, sizeof path, "%s_%04d.fits", prefix, k);
    qp_healpix_info info;
    TEST_OK(qp_fits_map_info(path, &info));
    TEST_ASSERT(info.nside == NSIDE && info.n_columns == N_COL, "%s: nside %lld, %d columns", path,
                (long long)info.nside, info.n_columns);
    if (info.nside != NSIDE || info.n_columns != N_COL) continue;
    for (int c = 0; c < N_COL; ++c)
      TEST_OK(qp_fits_map_read(path, &info, c, maps + ((size_t)k * N_COL + c) * N_SKY));
  }
  return maps;
}

/* Simulates the nside-64 TQU pair set PREFIX with seed 11, ell 2..10, and the extra options
 * (NULL-terminated). */
static void simulate(const char *prefix, const char *const *extra, const char *const *words) {
  const char *args[QP_CLI_ARGS_MAX + 1] = {"simulate", "--cls",  cls_path,   "--nside", "64",
                                           "--lmax",   "10",     "--fields", "TQU",     "--n-maps",
                                           "2",        "--seed", "11",       "--out"};
  int n = 14;
  args[n++] = prefix;
  for (int i = 0; extra[i] && n < QP_CLI_ARGS_MAX; ++i)
    args[n++] = extra[i];
  args[n] = NULL;
  expect(prefix, args, 0, words);
}

/* Sample moments of a column over the maps: the difference `a - b` (b may be NULL: a alone). */
typedef struct moments {
  double mean, var;
  long n;
} moments;

static moments column_moments(const double *a, const double *b, int c) {
  moments m = {0, 0, 0};
  for (int k = 0; k < N_MAPS; ++k)
    for (int i = 0; i < N_SKY; ++i) {
      const size_t at = ((size_t)k * N_COL + c) * N_SKY + i;
      const double x = a[at] - (b ? b[at] : 0.0);
      m.mean += x, m.var += x * x, ++m.n;
    }
  m.mean /= m.n;
  m.var = (m.var - m.n * m.mean * m.mean) / (m.n - 1);
  return m;
}

/* The noise of a set against `expected` per column (T, then Q and U): its variance within
 * N_SIGMA sqrt(2 / n) relative, its mean within N_SIGMA sqrt(v / n). */
static void check_noise(const char *what, const double *a, const double *b, double var_t,
                        double var_p) {
  for (int c = 0; c < N_COL; ++c) {
    const double v = c ? var_p : var_t;
    const moments m = column_moments(a, b, c);
    const double rel = fabs(m.var / v - 1.0), rel_tol = N_SIGMA * sqrt(2.0 / m.n);
    const double mean_sigmas = fabs(m.mean) / sqrt(v / m.n);
    printf("%-22s column %d: variance %.5f expected %.5f (%+.2f sigma), mean %+.2e (%.2f "
           "sigma)\n",
           what, c, m.var, v, (m.var / v - 1.0) / sqrt(2.0 / m.n), m.mean, mean_sigmas);
    TEST_WITHIN(rel, rel_tol, "%s column %d: variance %.6g, expected %.6g", what, c, m.var, v);
    TEST_WITHIN(mean_sigmas, N_SIGMA, "%s column %d: mean %.3g", what, c, m.mean);
  }
}

/* The correlation of the two sets' noise (n1 = a - sky, n2 = a2 - sky) per column: 0 within
 * N_SIGMA / sqrt(n). */
static void check_independent(const double *a, const double *a2, const double *sky) {
  for (int c = 0; c < N_COL; ++c) {
    double s12 = 0, s11 = 0, s22 = 0;
    long n = 0;
    for (int k = 0; k < N_MAPS; ++k)
      for (int i = 0; i < N_SKY; ++i, ++n) {
        const size_t at = ((size_t)k * N_COL + c) * N_SKY + i;
        const double n1 = a[at] - sky[at], n2 = a2[at] - sky[at];
        s12 += n1 * n2, s11 += n1 * n1, s22 += n2 * n2;
      }
    const double r = s12 / sqrt(s11 * s22);
    printf("noise correlation      column %d: %+.2e (%.2f sigma)\n", c, r, fabs(r) * sqrt(n));
    TEST_WITHIN(fabs(r) * sqrt((double)n), N_SIGMA, "column %d: the two noises correlate (r %.3g)",
                c, r);
  }
}

static void check_maps(void) {
  const size_t n = (size_t)N_MAPS * N_COL * N_SKY;
  /* a: the pairs; plain: the same without --pairs; sky: no noise; zero2: a's first set with a
   * noise-free second set. */
  simulate("a",
           (const char *const[]){"--noise-variance", "2", "--noise-variance-pol", "3", "--pairs",
                                 "--noise2-variance", "5", NULL},
           NULL);
  simulate("plain",
           (const char *const[]){"--noise-variance", "2", "--noise-variance-pol", "3", NULL}, NULL);
  simulate("sky", (const char *const[]){"--pairs", "--noise2-variance", "0", NULL}, NULL);
  simulate("zero2",
           (const char *const[]){"--noise-variance", "2", "--noise-variance-pol", "3", "--pairs",
                                 "--noise2-variance", "0", NULL},
           NULL);
  double *a = read_set("a"), *a2 = read_set("a2"), *plain = read_set("plain");
  double *sky = read_set("sky"), *sky2 = read_set("sky2"), *zero = read_set("zero2");
  double *zero2 = read_set("zero22");
  if (!a || !a2 || !plain || !sky || !sky2 || !zero || !zero2) return;

  /* Exact: the first set does not depend on --pairs; a noise-free second set is the sky. */
  TEST_WITHIN(qp_test_max_diff(a, plain, n, 1.0), 0.0, "--pairs changed the first set");
  TEST_WITHIN(qp_test_max_diff(zero, plain, n, 1.0), 0.0,
              "--noise2-variance changed the first set");
  TEST_WITHIN(qp_test_max_diff(zero2, sky, n, 1.0), 0.0,
              "the second set without noise is not the noise-free sky of the seed");
  TEST_WITHIN(qp_test_max_diff(sky2, sky, n, 1.0), 0.0, "two noise-free sets differ");
  TEST_ASSERT(qp_test_max_abs(sky, n) > 0, "the noise-free sky is zero");

  /* Statistical: the noises, their sum in the difference, their independence. Q and U of the
   * second set: --noise2-variance-pol not given, so --noise2-variance's 5. */
  check_noise("noise 1 (map - sky)", a, sky, 2.0, 3.0);
  check_noise("noise 2 (map2 - sky)", a2, sky, 5.0, 5.0);
  check_noise("map - map2", a, a2, 7.0, 8.0);
  check_independent(a, a2, sky);
  free(a), free(a2), free(plain), free(sky), free(sky2), free(zero), free(zero2);

  /* The defaults: the second set's noise is the first's (T and P); --noise2-variance-pol
   * alone keeps the first set's T. The config keys printed. */
  simulate(
      "d",
      (const char *const[]){"--noise-variance", "2", "--noise-variance-pol", "3", "--pairs", NULL},
      (const char *const[]){
          "maps: [d_0000.fits, d_0001.fits]", "maps2: [d2_0000.fits, d2_0001.fits]",
          "noise: {variance_t: 2, variance_p: 3}", "noise2: {variance_t: 2, variance_p: 3}", NULL});
  simulate("p",
           (const char *const[]){"--noise-variance", "2", "--pairs", "--noise2-variance-pol", "0.5",
                                 "--out2", "q", NULL},
           (const char *const[]){"maps2: [q_0000.fits, q_0001.fits]", "noise: {variance: 2}",
                                 "noise2: {variance_t: 2, variance_p: 0.5}", NULL});
  double *d = read_set("d2"), *q = read_set("q");
  sky = read_set("sky");
  if (d && q && sky) {
    check_noise("default noise 2", d, sky, 2.0, 3.0);
    check_noise("noise 2 (-pol alone)", q, sky, 2.0, 0.5);
  }
  free(d), free(q), free(sky);
}

static void check_refusals(void) {
  struct {
    const char *tag, *args[14], *word;
    int status;
  } cases[] = {
      {"out2_alone", {"--out2", "x"}, "--out2 needs --pairs", 2},
      {"noise2_alone", {"--noise2-variance", "1"}, "--noise2-variance needs --pairs", 2},
      {"noise2_pol_alone",
       {"--noise2-variance-pol", "1"},
       "--noise2-variance-pol needs --pairs",
       2},
      {"noise2_negative", {"--pairs", "--noise2-variance", "-1"}, "--noise2-variance", 2},
      {"noise2_pol_word", {"--pairs", "--noise2-variance-pol", "abc"}, "--noise2-variance-pol", 2},
      {"noise2_nan", {"--pairs", "--noise2-variance", "nan"}, "--noise2-variance", 2},
      {"pairs_value", {"--pairs=1"}, "--pairs", 2},
      {"pairs_example",
       {"--pairs", "--example", "ex"},
       "--pairs is not available with --example",
       2},
      {"out2_is_out", {"--pairs", "--out", "s", "--out2", "s"}, "--out2 's' is also --out", 2},
      {"out2_dir", {"--pairs", "--out", "s", "--out2", "dir"}, "--out2", 8},
      {"mask_is_map2",
       {"--pairs", "--out", "s", "--mask", "s2_0000.fits"},
       "is also map 0 of --out2",
       8},
  };
  TEST_ASSERT(mkdir("dir_0000.fits", 0755) == 0, "cannot make the directory dir_0000.fits");
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
    const char *args[20] = {"simulate", "--cls", cls_path, "--nside", "4"};
    int n = 5;
    for (int i = 0; cases[t].args[i]; ++i)
      args[n++] = cases[t].args[i];
    args[n] = NULL;
    expect(cases[t].tag, args, cases[t].status, (const char *const[]){cases[t].word, NULL});
  }
  /* Prefixes too long: --out for its default pair prefix PREFIX2 (usage, 2); --out2 for its
   * map names (6), before any file is written. */
  static char long_prefix[4300];
  memset(long_prefix, 'x', 4199);
  const char *long_out[] = {"simulate", "--cls", cls_path,    "--nside", "4",
                            "--pairs",  "--out", long_prefix, NULL};
  expect("out_long_for_pairs", long_out, 2, (const char *const[]){"is too long", NULL});
  long_prefix[4195] = '\0';
  const char *long_out2[] = {"simulate", "--cls", cls_path, "--nside",   "4", "--pairs",
                             "--out",    "s",     "--out2", long_prefix, NULL};
  expect("out2_long", long_out2, 6, (const char *const[]){"--out2: the prefix is too long", NULL});
  struct stat st;
  TEST_ASSERT(stat("s_0000.fits", &st) != 0 && stat("s2_0000.fits", &st) != 0,
              "a refused --pairs wrote maps");

  /* The library's own checks (the command line refuses these before). */
  qp_cls cls;
  TEST_OK(qp_cls_read(cls_path, &cls));
  const qp_sim_options o = {.nside = 2, .ell_min = 2, .lmax = 4, .n_maps = 1, .seed = 1};
  const qp_sim_pol pol = {.fields = QP_FIELDS_T, .noise_variance_pol = -1};
  double m1[48], m2[48];
  const qp_sim_pair bad[] = {{-1.0, -1.0}, {NAN, 0.0}, {1.0, INFINITY}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
    EXPECT_ERROR(qp_simulate_pairs(&cls, &o, &pol, &bad[i], m1, m2), QP_ERR_INPUT,
                 "second set's noise");
  EXPECT_ERROR(qp_simulate_pairs(&cls, &o, &pol, &bad[0], m1, NULL), QP_ERR_INTERNAL, "pairs");
  const qp_sim_pair none = {0.0, -1.0};
  TEST_OK(qp_simulate_pairs(&cls, &o, &pol, &none, m1, m2));
  TEST_WITHIN(qp_test_max_diff(m1, m2, 48, 1.0), 0.0, "noise-free pairs differ");
  qp_cls_free(&cls);
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup_with_file(argc, argv, "test_simulate_pairs_cli", "simulate_pairs_cli.d",
                                     qmlpipe, cls_path);
  if (setup != 0) return setup;
  if (system("rm -rf dir_0000.fits ex") != 0) return 1;
  check_maps();
  check_refusals();
  return TEST_RETURN();
}
