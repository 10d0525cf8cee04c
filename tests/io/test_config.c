/* test_config.c: the YAML config reader (io/config.h): values, defaults, path resolution,
 * byte sizes, and that each kind of mistake is refused with a message naming file, key, line. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "test_util.h"

static char dir[64];        /* a fresh directory in the working directory */
static char yaml_path[128]; /* dir/run.yaml */

/* Loads `text` as dir/run.yaml, expecting failure with `code` and a message containing each
 * of the (up to two) fragments. */
static void expect_error(int line, const char *text, qp_err code, const char *frag1,
                         const char *frag2) {
  qp_config cfg;
  qp_test_write_text(yaml_path, text);
  qp_err err = qp_config_load(yaml_path, &cfg);
  const char *msg = qp_error_message();
  TEST_ASSERT(err == code, "case at line %d: got %s, expected %s (%s)", line, qp_err_name(err),
              qp_err_name(code), msg);
  TEST_ASSERT(strstr(msg, yaml_path) != NULL, "case at line %d: message lacks the file: %s", line,
              msg);
  TEST_ASSERT(!frag1 || strstr(msg, frag1), "case at line %d: message lacks '%s': %s", line, frag1,
              msg);
  TEST_ASSERT(!frag2 || strstr(msg, frag2), "case at line %d: message lacks '%s': %s", line, frag2,
              msg);
  TEST_ASSERT(cfg.maps == NULL && cfg.n_maps == 0 && cfg.maps2 == NULL && cfg.n_maps2 == 0,
              "case at line %d: maps not freed", line);
  fprintf(stderr, "  expected error: %s\n", msg);
  qp_error_clear();
  qp_config_free(&cfg);
}

/* The required keys, for configs that test something else. */
#define BASE "maps: m.fits\nmask: mask.fits\ncls: cls.txt\nnoise: {variance: 1.0}\n"

static void test_full(void) {
  char text[2048];
  snprintf(text, sizeof text,
           "# a full config\n"
           "maps:\n  - a.fits\n  - sub/b.fits\n  - /abs/c.fits\n"
           "mask: mask.fits\n"
           "fields: TQU\n"
           "cls: ../cls.txt\n"
           "noise:\n  covariance: noise.h5\n  dataset: /noise/cov\n"
           "spectra: [TE, TT, EB, EE]\n"
           "ell_min: 0\n"
           "lmax: 20\n"
           "lmax_signal: 30\n"
           "bins: bins.txt\n"
           "beam_fwhm_arcmin: 30.5\n"
           "pixel_window: true\n"
           "pixel_window_file: tables/pw.fits\n"
           "path: harmonic\n"
           "backend: cuda\n"
           "output: out/results.h5\n"
           "memory:\n  host_limit: 20GiB\n  device_limit: 2000000000\n  device_overhead: 512MiB\n");
  qp_test_write_text(yaml_path, text);
  qp_config cfg;
  TEST_OK(qp_config_load(yaml_path, &cfg));
  char want[256];
  TEST_ASSERT(strcmp(cfg.source, yaml_path) == 0, "source %s", cfg.source);
  TEST_ASSERT(cfg.n_maps == 3, "n_maps %d", cfg.n_maps);
  if (cfg.n_maps == 3) {
    snprintf(want, sizeof want, "%s/a.fits", dir);
    TEST_ASSERT(strcmp(cfg.maps[0], want) == 0, "maps[0] %s, want %s", cfg.maps[0], want);
    snprintf(want, sizeof want, "%s/sub/b.fits", dir);
    TEST_ASSERT(strcmp(cfg.maps[1], want) == 0, "maps[1] %s, want %s", cfg.maps[1], want);
    TEST_ASSERT(strcmp(cfg.maps[2], "/abs/c.fits") == 0, "maps[2] %s", cfg.maps[2]);
  }
  snprintf(want, sizeof want, "%s/mask.fits", dir);
  TEST_ASSERT(strcmp(cfg.mask, want) == 0, "mask %s", cfg.mask);
  snprintf(want, sizeof want, "%s/../cls.txt", dir);
  TEST_ASSERT(strcmp(cfg.cls, want) == 0, "cls %s", cfg.cls);
  TEST_ASSERT(cfg.fields == QP_FIELDS_TQU, "fields %d", (int)cfg.fields);
  TEST_ASSERT(cfg.noise_kind == QP_NOISE_COVARIANCE, "noise kind %d", (int)cfg.noise_kind);
  snprintf(want, sizeof want, "%s/noise.h5", dir);
  TEST_ASSERT(strcmp(cfg.noise_file, want) == 0, "noise file %s", cfg.noise_file);
  TEST_ASSERT(strcmp(cfg.noise_dataset, "/noise/cov") == 0, "dataset %s", cfg.noise_dataset);
  /* listed TE TT EB EE, stored in binding order TT EE TE EB */
  TEST_ASSERT(cfg.n_spectra == 4, "n_spectra %d", cfg.n_spectra);
  if (cfg.n_spectra == 4)
    TEST_ASSERT(cfg.spectra[0] == QP_TT && cfg.spectra[1] == QP_EE && cfg.spectra[2] == QP_TE &&
                    cfg.spectra[3] == QP_EB,
                "spectra %s %s %s %s", qp_spectrum_name(cfg.spectra[0]),
                qp_spectrum_name(cfg.spectra[1]), qp_spectrum_name(cfg.spectra[2]),
                qp_spectrum_name(cfg.spectra[3]));
  TEST_ASSERT(cfg.ell_min == 0 && cfg.lmax == 20 && cfg.lmax_signal == 30, "ells %d %d %d",
              cfg.ell_min, cfg.lmax, cfg.lmax_signal);
  snprintf(want, sizeof want, "%s/bins.txt", dir);
  TEST_ASSERT(strcmp(cfg.bins_file, want) == 0, "bins %s", cfg.bins_file);
  TEST_ASSERT(cfg.beam_fwhm_arcmin == 30.5, "beam %g", cfg.beam_fwhm_arcmin);
  TEST_ASSERT(cfg.pixel_window == 1, "pixel_window %d", cfg.pixel_window);
  snprintf(want, sizeof want, "%s/tables/pw.fits", dir); /* relative to the config, as inputs */
  TEST_ASSERT(strcmp(cfg.pixel_window_file, want) == 0, "pixel_window_file %s, want %s",
              cfg.pixel_window_file, want);
  TEST_ASSERT(cfg.path == QP_PATH_HARMONIC, "path %d", (int)cfg.path);
  TEST_ASSERT(strcmp(cfg.backend, "cuda") == 0, "backend %s", cfg.backend);
  snprintf(want, sizeof want, "%s/out/results.h5", dir);
  TEST_ASSERT(strcmp(cfg.output, want) == 0, "output %s", cfg.output);
  TEST_ASSERT(cfg.host_limit == 20.0 * 1024 * 1024 * 1024, "host_limit %.17g", cfg.host_limit);
  TEST_ASSERT(cfg.device_limit == 2e9, "device_limit %.17g", cfg.device_limit);
  TEST_ASSERT(cfg.device_overhead == 512.0 * 1048576.0, "device_overhead %.17g",
              cfg.device_overhead);
  qp_config_free(&cfg);
  qp_config_free(&cfg); /* safe twice */
  TEST_ASSERT(cfg.maps == NULL && cfg.n_maps == 0, "maps not reset by qp_config_free");
}

static void test_defaults(void) {
  qp_test_write_text(yaml_path, "maps: m.fits\nmask: /data/mask.fits\ncls: c.txt\n"
                                "noise:\n  variance: 2.5e-4\nlmax: 16\n");
  qp_config cfg;
  TEST_OK(qp_config_load(yaml_path, &cfg));
  char want[256];
  snprintf(want, sizeof want, "%s/m.fits", dir);
  TEST_ASSERT(cfg.n_maps == 1 && cfg.maps && strcmp(cfg.maps[0], want) == 0, "scalar maps: %d %s",
              cfg.n_maps, cfg.maps ? cfg.maps[0] : "(null)");
  TEST_ASSERT(strcmp(cfg.mask, "/data/mask.fits") == 0, "absolute mask changed: %s", cfg.mask);
  TEST_ASSERT(cfg.noise_kind == QP_NOISE_VARIANCE && cfg.noise_variance == 2.5e-4, "noise %d %g",
              (int)cfg.noise_kind, cfg.noise_variance);
  TEST_ASSERT(cfg.ell_min == 2, "ell_min %d", cfg.ell_min);
  TEST_ASSERT(cfg.lmax == 16 && cfg.lmax_signal == 16, "lmax %d lmax_signal %d", cfg.lmax,
              cfg.lmax_signal);
  TEST_ASSERT(cfg.bin_width == 1 && cfg.bins_file[0] == '\0', "bins %d '%s'", cfg.bin_width,
              cfg.bins_file);
  TEST_ASSERT(cfg.fields == QP_FIELDS_T, "fields %d", (int)cfg.fields);
  TEST_ASSERT(cfg.n_spectra == 1 && cfg.spectra[0] == QP_TT, "spectra %d", cfg.n_spectra);
  TEST_ASSERT(cfg.path == QP_PATH_AUTO, "path %d", (int)cfg.path);
  TEST_ASSERT(strcmp(cfg.backend, "cpu") == 0, "backend %s", cfg.backend);
  TEST_ASSERT(strcmp(cfg.output, "results.h5") == 0, "output %s", cfg.output);
  TEST_ASSERT(cfg.beam_fwhm_arcmin == 0 && cfg.pixel_window == 0 && !cfg.pixel_window_file[0],
              "beam %g window %d '%s'", cfg.beam_fwhm_arcmin, cfg.pixel_window,
              cfg.pixel_window_file);
  TEST_ASSERT(cfg.host_limit == 0 && cfg.device_limit == 0, "limits %g %g", cfg.host_limit,
              cfg.device_limit);
  TEST_ASSERT(cfg.device_overhead == -1, "device_overhead %g: not the backend's default",
              cfg.device_overhead);
  qp_config_free(&cfg);
  /* the test-only device emulation (tests/support/hostdev.h) is a backend name too */
  qp_test_write_text(yaml_path, BASE "lmax: 4\nbackend: hostdev\n");
  TEST_OK(qp_config_load(yaml_path, &cfg));
  TEST_ASSERT(strcmp(cfg.backend, "hostdev") == 0, "backend %s", cfg.backend);
  qp_config_free(&cfg);

  /* Without spectra:, QU gets EE BB; a covariance without dataset: gets /covariance. */
  qp_test_write_text(yaml_path, BASE "lmax: 8\nfields: QU\nbin_width: 3\n"
                                     "memory: {host_limit: 512 MB}\n");
  TEST_OK(qp_config_load(yaml_path, &cfg));
  TEST_ASSERT(cfg.n_spectra == 2 && cfg.spectra[0] == QP_EE && cfg.spectra[1] == QP_BB,
              "QU default spectra: %d", cfg.n_spectra);
  TEST_ASSERT(cfg.bin_width == 3, "bin_width %d", cfg.bin_width);
  TEST_ASSERT(cfg.host_limit == 512e6, "host_limit %.17g", cfg.host_limit);
  qp_config_free(&cfg);

  qp_test_write_text(yaml_path, "maps: [m.fits]\nmask: k.fits\ncls: c.txt\nlmax: 4\n"
                                "noise: {covariance: n.h5}\nspectra: TT\n");
  TEST_OK(qp_config_load(yaml_path, &cfg));
  TEST_ASSERT(cfg.noise_kind == QP_NOISE_COVARIANCE, "kind %d", (int)cfg.noise_kind);
  TEST_ASSERT(strcmp(cfg.noise_dataset, "/covariance") == 0, "dataset %s", cfg.noise_dataset);
  qp_config_free(&cfg);

  /* Defaults alone, and freeing them (twice), are safe. */
  qp_config_defaults(&cfg);
  TEST_ASSERT(cfg.maps == NULL && cfg.ell_min == 2 && cfg.bin_width == 1, "qp_config_defaults");
  qp_config_free(&cfg);
  qp_config_free(&cfg);
}

static void test_bytes(void) {
  static const struct {
    const char *text;
    double bytes;
  } good[] = {{"20GiB", 20.0 * 1073741824.0},
              {"512MB", 512e6},
              {"512 MB", 512e6},
              {"1.5e9", 1.5e9},
              {"1024", 1024},
              {"3KiB", 3072},
              {"2kB", 2000},
              {"1TiB", 1099511627776.0},
              {" 7 B ", 7},
              {"4G", 4.0 * 1073741824.0}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
    double b = -1;
    TEST_OK(qp_parse_bytes(good[i].text, &b));
    TEST_ASSERT(b == good[i].bytes, "'%s' -> %.17g, expected %.17g", good[i].text, b,
                good[i].bytes);
  }
  static const char *const bad[] = {"", "GiB", "12XB", "-1GB", "1e400", "nan", "5 GiB extra"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    double b = 0;
    TEST_FAILS(qp_parse_bytes(bad[i], &b), QP_ERR_INPUT);
  }
}

static void test_errors(void) {
  /* unknown keys: top level, inside noise, inside memory, with their 1-based line */
  expect_error(__LINE__, BASE "lmax: 4\nfoo: 1\n", QP_ERR_INPUT, "line 6: unknown key 'foo'",
               "known keys: maps");
  expect_error(__LINE__, BASE "lmax: 4\nnoise3: {variance: 1}\n", QP_ERR_INPUT,
               "unknown key 'noise3'", NULL);
  expect_error(__LINE__,
               "maps: m.fits\nmask: k.fits\ncls: c.txt\nlmax: 4\nnoise:\n  variance: 1\n"
               "  varience_map: v.fits\n",
               QP_ERR_INPUT, "line 7: unknown key 'varience_map' in noise", "variance_map");
  expect_error(__LINE__, BASE "lmax: 4\nmemory:\n  host_limit: 1GB\n  host: 2GB\n", QP_ERR_INPUT,
               "line 8: unknown key 'host' in memory", "device_limit");
  /* issue 38: a second YAML document, a limit of 0 bytes */
  expect_error(__LINE__, BASE "lmax: 4\n---\nlmax: 8\n", QP_ERR_INPUT,
               "line 7: a second YAML document", "one document");
  expect_error(__LINE__, BASE "lmax: 4\nmemory: {host_limit: 0}\n", QP_ERR_INPUT,
               "memory.host_limit is 0", "leave the key out");
  expect_error(__LINE__, BASE "lmax: 4\nmemory: {device_limit: 0GiB}\n", QP_ERR_INPUT,
               "memory.device_limit is 0", NULL);
  /* missing required keys */
  expect_error(__LINE__, "maps: m.fits\nmask: k.fits\ncls: c.txt\nnoise: {variance: 1}\n",
               QP_ERR_INPUT, "missing required key 'lmax'", NULL);
  expect_error(__LINE__, "maps: m.fits\nmask: k.fits\nlmax: 3\nnoise: {variance: 1}\n",
               QP_ERR_INPUT, "missing required key 'cls'", NULL);
  /* ranges */
  expect_error(__LINE__, BASE "lmax: 20\nlmax_signal: 10\n", QP_ERR_INPUT,
               "line 6: lmax_signal (10) must be >= lmax (20)", NULL);
  expect_error(__LINE__, BASE "lmax: 20\nell_min: -1\n", QP_ERR_INPUT, "ell_min (-1)", NULL);
  expect_error(__LINE__, BASE "lmax: 5\nell_min: 8\n", QP_ERR_INPUT,
               "lmax (5) must be >= ell_min (8)", NULL);
  expect_error(__LINE__, BASE "lmax: 5\nbeam_fwhm_arcmin: -3\n", QP_ERR_INPUT, "beam_fwhm_arcmin",
               "line 6");
  expect_error(__LINE__, BASE "lmax: 5\nbin_width: 0\n", QP_ERR_INPUT, "bin_width (0)", NULL);
  expect_error(__LINE__, BASE "lmax: 5\nbin_width: 2\nbins: b.txt\n", QP_ERR_INPUT,
               "either bin_width", NULL);
  expect_error(__LINE__, "maps: m.fits\nmask: k.fits\ncls: c.txt\nlmax: 4\nnoise: {variance: -1}\n",
               QP_ERR_INPUT, "noise.variance must be > 0", NULL);
  expect_error(__LINE__,
               "maps: m.fits\nmask: k.fits\ncls: c.txt\nlmax: 4\n"
               "noise: {variance: 1, covariance: n.h5}\n",
               QP_ERR_INPUT, "exactly one of", NULL);
  expect_error(__LINE__,
               "maps: m.fits\nmask: k.fits\ncls: c.txt\nlmax: 4\n"
               "noise: {variance: 1, dataset: /x}\n",
               QP_ERR_INPUT, "dataset only goes with", NULL);
  /* spectra */
  expect_error(__LINE__, BASE "lmax: 5\nspectra: [TT, XY]\n", QP_ERR_INPUT,
               "line 6: unknown spectrum 'XY'", NULL);
  expect_error(__LINE__, BASE "lmax: 5\nspectra: [tt]\n", QP_ERR_INPUT, "unknown spectrum 'tt'",
               NULL);
  expect_error(__LINE__, BASE "lmax: 5\nspectra: [EE, EE]\nfields: QU\n", QP_ERR_INPUT,
               "'EE' listed twice", NULL);
  expect_error(__LINE__, BASE "lmax: 5\nfields: T\nspectra: [TT, TE]\n", QP_ERR_INPUT,
               "spectrum TE", "fields T allows only TT");
  expect_error(__LINE__, BASE "lmax: 5\nfields: QU\nspectra: TT\n", QP_ERR_INPUT, "spectrum TT",
               "fields QU");
  /* types and choices */
  expect_error(__LINE__, BASE "lmax: abc\n", QP_ERR_INPUT, "line 5: key 'lmax' must be an integer",
               NULL);
  expect_error(__LINE__, BASE "lmax: 4.5\n", QP_ERR_INPUT, "must be an integer", NULL);
  expect_error(__LINE__, BASE "lmax: [4]\n", QP_ERR_INPUT, "'lmax' must be a single value", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nmask: other.fits\n", QP_ERR_INPUT, "'mask' given twice",
               NULL);
  expect_error(__LINE__, BASE "lmax: 4\npixel_window: maybe\n", QP_ERR_INPUT, "true or false",
               NULL);
  /* A table the run would not apply: refused, not ignored (pixel_window false or absent). */
  expect_error(__LINE__, BASE "lmax: 4\npixel_window_file: pw.fits\n", QP_ERR_INPUT,
               "line 6: pixel_window_file names a table, but pixel_window is false",
               "set pixel_window: true");
  expect_error(__LINE__, BASE "lmax: 4\npixel_window: false\npixel_window_file: pw.fits\n",
               QP_ERR_INPUT, "line 7: pixel_window_file", "pixel_window is false");
  expect_error(__LINE__, BASE "lmax: 4\npixel_window: true\npixel_window_file: [a, b]\n",
               QP_ERR_INPUT, "'pixel_window_file' must be a single value", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nbackend: gpu\n", QP_ERR_INPUT, "backend",
               "cpu, cuda, dist, hostdev");
  expect_error(__LINE__, BASE "lmax: 4\npath: fast\n", QP_ERR_INPUT, "auto, pixel_direct", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nfields: IQU\n", QP_ERR_INPUT, "fields", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nmemory: {host_limit: 20 parsecs}\n", QP_ERR_INPUT,
               "memory.host_limit", "unknown unit");
  expect_error(__LINE__, BASE "lmax: 4\nmemory: 20GiB\n", QP_ERR_INPUT,
               "'memory' must be a mapping", NULL);
  expect_error(__LINE__,
               "maps: {a: b}\nmask: k.fits\ncls: c.txt\nlmax: 4\n"
               "noise: {variance: 1}\n",
               QP_ERR_INPUT, "'maps' must be a path or a list", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nnoise: 1.0\n", QP_ERR_INPUT, "given twice", NULL);
  expect_error(__LINE__, "maps: m.fits\nmask: k.fits\ncls: c.txt\nlmax: 4\nnoise: 1.0\n",
               QP_ERR_INPUT, "'noise' must be a mapping", NULL);
  expect_error(__LINE__, BASE "lmax: 4\noutput:\n", QP_ERR_INPUT, "'output' has no value", NULL);
  /* not YAML, not a mapping, empty */
  expect_error(__LINE__, "maps: [a.fits\nmask: k\n", QP_ERR_INPUT, "YAML error", NULL);
  expect_error(__LINE__, "- a\n- b\n", QP_ERR_INPUT, "top level must be a mapping", NULL);
  expect_error(__LINE__, "# nothing\n", QP_ERR_INPUT, "empty", NULL);

  /* a missing file is an I/O error naming the path and the system's reason */
  qp_config cfg;
  char missing[160];
  snprintf(missing, sizeof missing, "%s/no_such.yaml", dir);
  qp_err err = qp_config_load(missing, &cfg);
  TEST_ASSERT(err == QP_ERR_IO, "missing file: %s", qp_err_name(err));
  TEST_ASSERT(strstr(qp_error_message(), missing) && strstr(qp_error_message(), "No such file"),
              "missing file message: %s", qp_error_message());
  fprintf(stderr, "  expected error: %s\n", qp_error_message());
  qp_error_clear();
  qp_config_free(&cfg);
}

static void test_names(void) {
  static const char *const names[] = {"TT", "EE", "BB", "TE", "TB", "EB"};
  for (int s = 0; s < 6; ++s)
    TEST_ASSERT(strcmp(qp_spectrum_name((qp_spectrum)s), names[s]) == 0, "name of %d: %s", s,
                qp_spectrum_name((qp_spectrum)s));
}

/* Cross-spectra: maps2 and noise2 read, and every check of the pair (config_check.c). */
static void test_cross(void) {
  qp_config cfg;
  qp_test_write_text(yaml_path, BASE "lmax: 4\nfields: TQU\nmaps2: [m2.fits]\n"
                                     "noise2: {variance_t: 2.0, variance_p: 3.0}\n");
  TEST_OK(qp_config_load(yaml_path, &cfg));
  TEST_ASSERT(cfg.n_maps2 == 1 && strstr(cfg.maps2[0], "m2.fits") &&
                  cfg.noise2_kind == QP_NOISE_VARIANCE && cfg.noise2_variance == 2.0 &&
                  cfg.noise2_variance_pol == 3.0 && strcmp(cfg.noise2_dataset, "/covariance") == 0,
              "maps2/noise2 read as %d map(s), kind %d, %g, %g", cfg.n_maps2, (int)cfg.noise2_kind,
              cfg.noise2_variance, cfg.noise2_variance_pol);
  qp_config_free(&cfg);
  /* Dense noise covariances in a cross run (test_cross_reference runs them). */
  qp_test_write_text(yaml_path, BASE "lmax: 4\nmaps2: [m2.fits]\n"
                                     "noise2: {covariance: n2.h5, dataset: /n}\n");
  TEST_OK(qp_config_load(yaml_path, &cfg));
  TEST_ASSERT(cfg.noise2_kind == QP_NOISE_COVARIANCE && strstr(cfg.noise2_file, "n2.h5") &&
                  strcmp(cfg.noise2_dataset, "/n") == 0,
              "noise2.covariance read as kind %d '%s' '%s'", (int)cfg.noise2_kind, cfg.noise2_file,
              cfg.noise2_dataset);
  qp_config_free(&cfg);
  qp_test_write_text(yaml_path, BASE "lmax: 4\nmaps2: m2.fits\nnoise2: {variance_map: v2.fits}\n");
  TEST_OK(qp_config_load(yaml_path, &cfg));
  TEST_ASSERT(cfg.noise2_kind == QP_NOISE_VARIANCE_MAP && strstr(cfg.noise2_file, "v2.fits"),
              "noise2.variance_map read as kind %d '%s'", (int)cfg.noise2_kind, cfg.noise2_file);
  qp_config_free(&cfg);
  expect_error(__LINE__, BASE "lmax: 4\nmaps2: [m2.fits]\n", QP_ERR_INPUT, "line 6",
               "maps2 (cross-spectra) needs noise2");
  expect_error(__LINE__, BASE "lmax: 4\nnoise2: {variance: 1}\n", QP_ERR_INPUT, "line 6",
               "there is no maps2");
  expect_error(__LINE__, BASE "lmax: 4\nmaps2: [a.fits, b.fits]\nnoise2: {variance: 1}\n",
               QP_ERR_INPUT, "maps2 has 2 map(s) and maps 1", "as long");
  expect_error(__LINE__, BASE "lmax: 4\nmaps2: [a.fits]\nnoise2: {variance: -1}\n", QP_ERR_INPUT,
               "noise2.variance must be > 0", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nmaps2: [a.fits]\nnoise2: {variance: 1, variance_map: v}\n",
               QP_ERR_INPUT, "'noise2' needs exactly one", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nmaps2: [a.fits]\nnoise2: {dataset: /n}\n", QP_ERR_INPUT,
               "'noise2' needs exactly one", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nmaps2: [a.fits]\nnoise2: {variance: 1, bogus: 2}\n",
               QP_ERR_INPUT, "unknown key 'bogus' in noise2", NULL);
  expect_error(__LINE__, BASE "lmax: 4\nfields: QU\nmaps2: [a.fits]\nnoise2: {variance_t: 1}\n",
               QP_ERR_INPUT, "noise2.variance_t", NULL);
  expect_error(__LINE__,
               "noise: {variance: 1}\nlmax: 4\ndimensions: {n_pix: 10, n_bins: 2}\n"
               "maps2: [a.fits]\nnoise2: {variance: 1}\n",
               QP_ERR_INPUT, "give maps and maps2, not dimensions", NULL);
}

int main(void) {
  snprintf(dir, sizeof dir, "test_config_%ld", (long)getpid());
  snprintf(yaml_path, sizeof yaml_path, "%s/run.yaml", dir);
  if (mkdir(dir, 0700) != 0) {
    perror(dir);
    return 2;
  }
  test_full();
  test_defaults();
  test_bytes();
  test_errors();
  test_cross();
  test_names();
  unlink(yaml_path);
  rmdir(dir);
  return TEST_RETURN();
}
