/* test_map_reread_cli: the maps are read where they are used (pipeline/inputs_maps.c,
 * docs/memory-model.md "Maps in batches"), through `qmlpipe-test` (argv[1]):
 *  1. covariance_setup reads and checks every map and keeps none; a map cut to half its size
 *     right after that stage (the test hook QP_TEST_TRUNCATE_AFTER_STAGE, as another process
 *     would damage it while the run goes on) fails the stage that reads it again (spectra_run;
 *     SMW's basis_setup) with one clear error naming the file and that it changed since its
 *     check, on 1 and on 2 ranks (argv[3]: mpiexec, or none): exit 8 (I/O), no hang, no
 *     results file. Every route, and a map of maps2 (cross-spectra).
 *  2. `qmlpipe budget` of issue 42's 96-rank case (dimensions only) at 100 and at 10,000 maps:
 *     the same map batch, and every stage's peak the same but spectra_run's, which grows by
 *     the outputs alone (y and C_hat, n_maps n_params x 8 each).
 * Everything happens in map_reread_cli.d. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_run.h"
#include "test_util.h"

static char qmlpipe[4096];
static const char *mpiexec = NULL; /* NULL: no MPI */

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* qmlpipe with args on `ranks` processes (mpiexec when ranks > 1): the result, to be freed. */
static void run_on(const char *tag, int ranks, const char *const *args, qp_cli_result *r) {
  qp_cli_run_ranks(qmlpipe, mpiexec, ranks, tag, args, r);
}

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  TEST_ASSERT(in && out, "cannot copy '%s' to '%s'", from, to);
  if (in && out) {
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
      TEST_ASSERT(fwrite(buf, 1, got, out) == got, "cannot write '%s'", to);
  }
  if (in) fclose(in);
  if (out) fclose(out);
}

/* Case `name` of route `route` (config lines) on `ranks` ranks: its own copies of the maps
 * (and of maps2 when `cross`), the one named `victim` ("map_0001" or "map2_0000") cut after
 * covariance_setup; the stage that reads it again, `stage`, must refuse the run naming it. */
static void damaged_map(const char *name, const char *route, int cross, const char *victim,
                        const char *what, const char *stage, int ranks, const char *cls) {
  char path[256], from[256], config[256], text[4096], results[256], cut[512];
  const char *sets[2] = {"map", "map2"};
  for (int set = 0; set < 1 + cross; ++set)
    for (int k = 0; k < 3; ++k) {
      snprintf(from, sizeof from, "%s_%04d.fits", sets[set], k);
      snprintf(path, sizeof path, "%s_%s_%04d.fits", name, sets[set], k);
      copy_file(from, path);
    }
  snprintf(results, sizeof results, "%s.h5", name);
  int used = snprintf(text, sizeof text,
                      "maps: [%s_map_0000.fits, %s_map_0001.fits, %s_map_0002.fits]\n"
                      "mask: mask.fits\nfields: T\ncls: %s\nnoise: {variance: 20}\n"
                      "spectra: [TT]\nlmax: 16\nbin_width: 3\n%s\noutput: %s\n",
                      name, name, name, cls, route, results);
  if (cross)
    snprintf(text + used, sizeof text - (size_t)used,
             "maps2: [%s_map2_0000.fits, %s_map2_0001.fits, %s_map2_0002.fits]\n"
             "noise2: {variance: 30}\n",
             name, name, name);
  snprintf(config, sizeof config, "%s.yaml", name);
  FILE *f = fopen(config, "w");
  TEST_ASSERT(f && fputs(text, f) >= 0, "cannot write '%s'", config);
  if (f) fclose(f);
  char file[256], hook[600];
  snprintf(file, sizeof file, "%s_%s.fits", name, victim);
  TEST_ASSERT(realpath(file, cut) != NULL, "cannot resolve '%s'", file);
  snprintf(hook, sizeof hook, "covariance_setup:%s", cut);
  setenv("QP_TEST_TRUNCATE_AFTER_STAGE", hook, 1);
  const char *args[] = {"run", config, "--quiet", NULL};
  qp_cli_result r;
  run_on(name, ranks, args, &r);
  unsetenv("QP_TEST_TRUNCATE_AFTER_STAGE");
  char said[3][768];
  snprintf(said[0], sizeof said[0], "QP_TEST_TRUNCATE_AFTER_STAGE: '%s' cut to half its size", cut);
  snprintf(said[1], sizeof said[1], "%s '%s' was read and checked in covariance_setup", what, file);
  snprintf(said[2], sizeof said[2], "cannot be read again in %s", stage);
  const int status = r.exited ? r.status : 128 + r.signal;
  TEST_ASSERT(status == 8, "%s on %d rank(s): exit %d, expected 8 (I/O error)", name, ranks,
              status);
  for (int i = 0; i < 3; ++i)
    TEST_ASSERT(r.err && strstr(r.err, said[i]), "%s on %d rank(s): stderr lacks \"%s\":\n%s", name,
                ranks, said[i], r.err ? r.err : "");
  /* One error, agreed by every rank: none waited out the agreement's grace and aborted. */
  TEST_ASSERT(r.err && !strstr(r.err, "did not reach the agreement"),
              "%s on %d rank(s): a rank was left waiting:\n%s", name, ranks, r.err ? r.err : "");
  TEST_ASSERT(!exists(results), "%s on %d rank(s): a refused run wrote '%s'", name, ranks, results);
  printf("%s on %d rank(s): exit %d, the damaged map named in %s\n", name, ranks, status, stage);
  qp_cli_free(&r);
}

/* The bytes of each stage's tracked peak in `qmlpipe budget`'s table ("[stage]" then "peak"). */
static void budget_peaks(const char *text, long long peak[4]) {
  static const char *const stages[4] = {"[covariance_setup]", "[basis_setup]", "[fisher_run]",
                                        "[spectra_run]"};
  for (int s = 0; s < 4; ++s) {
    peak[s] = -1;
    const char *at = strstr(text, stages[s]);
    at = at ? strstr(at, "\n  peak ") : NULL;
    double mib = 0;
    if (at) (void)sscanf(at, "\n  peak %lf MiB %lld B", &mib, &peak[s]);
  }
}

/* Issue 42's case at n_maps 100 and 10000: the peaks as above. */
static void many_maps_budget(void) {
  long long peak[2][4];
  const int n_maps[2] = {100, 10000};
  long long batch[2];
  for (int k = 0; k < 2; ++k) {
    char name[64], text[512];
    snprintf(name, sizeof name, "issue42_%d.yaml", n_maps[k]);
    snprintf(text, sizeof text,
             "fields: TQU\nspectra: [TT, EE, BB, TE, TB, EB]\nnoise: {variance: 1.0}\n"
             "lmax: 191\nell_min: 2\nbin_width: 1\npath: auto\n"
             "dimensions: {n_pix: 87027, lmax_signal: 191, lmax: 191, nside: 64, n_maps: %d, "
             "n_bins: 190}\n",
             n_maps[k]);
    FILE *f = fopen(name, "w");
    TEST_ASSERT(f && fputs(text, f) >= 0, "cannot write '%s'", name);
    if (f) fclose(f);
    const char *args[] = {"budget", name, "--ranks", "96", "--ranks-per-node", "32", NULL};
    qp_cli_result r;
    qp_cli_run(qmlpipe, name, args, &r);
    TEST_ASSERT(r.exited && r.status == 0, "budget %s: exit %d", name, r.status);
    budget_peaks(r.out ? r.out : "", peak[k]);
    const char *at = r.out ? strstr(r.out, "maps in batches of ") : NULL;
    batch[k] = at ? strtoll(at + strlen("maps in batches of "), NULL, 10) : -1;
    qp_cli_free(&r);
  }
  TEST_ASSERT(batch[0] == batch[1] && batch[0] > 1,
              "the map batch at 100 maps (%lld) and at 10000 (%lld) differ", batch[0], batch[1]);
  for (int s = 0; s < 3; ++s)
    TEST_ASSERT(peak[0][s] > 0 && peak[0][s] == peak[1][s],
                "stage %d: peak %lld B at 100 maps, %lld B at 10000", s, peak[0][s], peak[1][s]);
  /* spectra_run: y and C_hat, 1140 parameters x 8 bytes a map each, and nothing else. */
  const long long outputs = 2LL * (10000 - 100) * 1140 * 8;
  TEST_ASSERT(
      peak[0][3] > 0 && peak[1][3] - peak[0][3] == outputs,
      "spectra_run: peak %lld B at 100 maps, %lld B at 10000: %lld B more, the outputs %lld",
      peak[0][3], peak[1][3], peak[1][3] - peak[0][3], outputs);
  printf("issue 42 on 96 ranks: maps in batches of %lld at 100 and 10000 maps; spectra_run %lld B "
         "and %lld B (the outputs' %lld B apart), the other stages alike\n",
         batch[0], peak[0][3], peak[1][3], outputs);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_map_reread_cli QMLPIPE CLS.txt MPIEXEC|none\n");
    return 2;
  }
  char cls[4096];
  if (!realpath(argv[2], cls)) {
    fprintf(stderr, "test_map_reread_cli: cannot resolve '%s'\n", argv[2]);
    return 1;
  }
  if (strcmp(argv[3], "none") != 0) mpiexec = argv[3];
  int setup = qp_cli_setup(argc, argv, "test_map_reread_cli", "map_reread_cli.d", qmlpipe);
  if (setup != 0) return setup;
  const char *sim[] = {"simulate", "--cls", cls,      "--nside",   "8",
                       "--n-maps", "3",     "--mask", "mask.fits", "--galactic-cut",
                       "20",       "--out", "map",    NULL};
  const char *sim2[] = {"simulate", "--cls",  cls, "--nside", "8",    "--n-maps",
                        "3",        "--seed", "9", "--out",   "map2", NULL};
  qp_cli_result r;
  qp_cli_run(qmlpipe, "simulate", sim, &r);
  TEST_ASSERT(r.exited && r.status == 0, "simulate failed");
  qp_cli_free(&r);
  qp_cli_run(qmlpipe, "simulate2", sim2, &r);
  TEST_ASSERT(r.exited && r.status == 0, "simulate of maps2 failed");
  qp_cli_free(&r);

  static const struct {
    const char *name, *route, *stage;
  } routes[] = {
      {"pd", "path: pixel_direct", "spectra_run"},
      {"proj", "path: harmonic\nharmonic_method: projected", "spectra_run"},
      {"smw", "path: harmonic\nharmonic_method: smw\nlmax_signal: 20", "basis_setup"},
  };
  for (int ranks = 1; ranks <= (mpiexec ? 2 : 1); ++ranks)
    for (size_t k = 0; k < sizeof routes / sizeof routes[0]; ++k) {
      char name[64];
      snprintf(name, sizeof name, "%s_n%d", routes[k].name, ranks);
      damaged_map(name, routes[k].route, 0, "map_0001", "map", routes[k].stage, ranks, cls);
    }
  /* A map of maps2 (column n_maps + k of the maps), on the projection's cross-spectra. */
  damaged_map("cross_n1", "path: harmonic\nharmonic_method: projected", 1, "map2_0000",
              "map (maps2)", "spectra_run", 1, cls);

  many_maps_budget();
  if (qp_test_failures == 0) qp_cli_remove_files(".");
  return TEST_RETURN();
}
