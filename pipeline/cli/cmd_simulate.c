/* cmd_simulate.c: `qmlpipe simulate`: Gaussian maps, masks, and a whole small example. */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "budget.h"
#include "checked_size.h"
#include "cmd_args.h"
#include "commands.h"
#include "fits_map.h"
#include "simulate.h"
#include "simulate_outputs.h"

static void qp_simulate_usage(FILE *out) {
  fprintf(
      out,
      "usage: qmlpipe simulate --cls FILE --nside N [OPTIONS]\n"
      "  Writes Gaussian maps drawn from the C_ell file plus white noise, in healpy's FITS\n"
      "  layout and convention (RING, float64), and optionally a mask. Fields T: one column\n"
      "  TEMPERATURE drawn from TT. Fields QU or TQU: three columns TEMPERATURE,\n"
      "  Q_POLARISATION, U_POLARISATION (I, Q, U, as healpy writes; the T column is written\n"
      "  for QU too) drawn with the TT EE BB TE [TB EB] correlations.\n"
      "  --cls FILE             fiducial spectrum (columns ell TT EE BB TE [TB EB])\n"
      "  --nside N              HEALPix resolution\n"
      "  --lmax L               last multipole drawn (default 3 nside - 1, at most the file's)\n"
      "  --ell-min L            first multipole drawn (default 2)\n"
      "  --fields T|QU|TQU      fields simulated (default T)\n"
      "  --noise-variance V     white noise variance per pixel in T, >= 0 (default 0)\n"
      "  --noise-variance-pol V white noise variance per pixel in Q and U (default: the T one)\n"
      "  --beam-fwhm A          Gaussian beam FWHM in arcmin, 0 to 10800 (default 0)\n"
      "  --pixel-window         the signal carries the HEALPix pixel window of nside, as\n"
      "                         synfast(pixwin=True): T times w_l^T, E and B times w_l^P, from\n"
      "                         HEALPix's table (Debian: healpy-data)\n"
      "  --pixel-window-file F  the same from the table F (implies --pixel-window)\n"
      "  --n-maps K             number of maps (default 1)\n"
      "  --seed S               random seed, a whole number >= 0 (default 1)\n"
      "  --out PREFIX           maps are PREFIX_0000.fits, ... (default sim)\n"
      "  --mask FILE            also write a mask: 1 where |b| > --galactic-cut\n"
      "  --galactic-cut DEG     Galactic latitude cut of the mask, 0 to 90 (default 0: full\n"
      "                         sky)\n"
      "  --example DIR          write a complete small temperature example into DIR (maps,\n"
      "                         mask, C_ell, config.yaml) for `qmlpipe run DIR/config.yaml`;\n"
      "                         with --pixel-window its config has pixel_window: true\n"
      "  Pairs, for cross-spectra (config keys maps2 and noise2):\n"
      "  --pairs                also write a second map per map, PREFIX2_0000.fits, ..., with\n"
      "                         the SAME signal and an INDEPENDENT noise realisation (the\n"
      "                         first set is the same maps as without --pairs); prints the\n"
      "                         config keys maps, maps2, noise and noise2 of a cross run\n"
      "  --out2 PREFIX2         the second set's prefix (default: PREFIX followed by 2)\n"
      "  --noise2-variance V    the second set's noise variance per pixel in T, >= 0\n"
      "                         (default: the first set's, --noise-variance)\n"
      "  --noise2-variance-pol V  the second set's in Q and U (default: --noise2-variance\n"
      "                         when given, else the first set's Q and U variance)\n"
      "  N, L, K and S are whole numbers in digits; a value out of its range is refused\n"
      "  (exit 2).\n");
}

/* --fields, in qp_fields order. */
static const char *const qp_sim_field_names[] = {"T", "QU", "TQU"};
/* The widest --beam-fwhm, in arcmin: 180 degrees. */
#define QP_SIM_BEAM_MAX 10800.0

typedef struct qp_sim_cli {
  const char *cls_path, *prefix, *mask_path, *example_dir;
  int pixel_window;              /* --pixel-window or --pixel-window-file */
  const char *pixel_window_file; /* NULL: HEALPix's table of nside */
  double galactic_cut;
  qp_sim_options sim;
  qp_sim_pol pol;
  /* --pairs: the second set's prefix (NULL: PREFIX + "2", in prefix2_buf) and noise (< 0:
   * not given, the defaults of the usage). */
  int pairs;
  const char *prefix2;
  char prefix2_buf[4200];
  qp_sim_pair pair;
} qp_sim_cli;

/* The options, in getopt_long's table. */
enum {
  QP_SIM_CLS = QP_CMD_OPTION_FIRST,
  QP_SIM_NSIDE,
  QP_SIM_LMAX,
  QP_SIM_ELL_MIN,
  QP_SIM_FIELDS,
  QP_SIM_NOISE,
  QP_SIM_NOISE_POL,
  QP_SIM_PAIRS,
  QP_SIM_OUT2,
  QP_SIM_NOISE2,
  QP_SIM_NOISE2_POL,
  QP_SIM_BEAM,
  QP_SIM_N_MAPS,
  QP_SIM_SEED,
  QP_SIM_OUT,
  QP_SIM_MASK,
  QP_SIM_CUT,
  QP_SIM_EXAMPLE,
  QP_SIM_PIXWIN,
  QP_SIM_PIXWIN_FILE
};

/* One option into `cli`; 0 (with a message) when its value is refused. Every number goes
 * through the strict parsers (cmd_args.h), with its range. */
static int qp_simulate_option(int c, const char *v, qp_sim_cli *cli) {
  long long n = 0;
  switch (c) {
  case QP_SIM_CLS: cli->cls_path = v; return 1;
  case QP_SIM_OUT: cli->prefix = v; return 1;
  case QP_SIM_MASK: cli->mask_path = v; return 1;
  case QP_SIM_EXAMPLE: cli->example_dir = v; return 1;
  case QP_SIM_PIXWIN: cli->pixel_window = 1; return 1;
  case QP_SIM_PIXWIN_FILE: cli->pixel_window = 1, cli->pixel_window_file = v; return 1;
  case QP_SIM_FIELDS:
    for (int f = 0; f < 3; ++f)
      if (strcmp(v, qp_sim_field_names[f]) == 0) {
        cli->pol.fields = (qp_fields)f;
        return 1;
      }
    fprintf(stderr, "qmlpipe simulate: --fields expects T, QU or TQU, got '%s'\n", v);
    return 0;
  case QP_SIM_NSIDE:
    if (!qp_cmd_parse_whole("--nside", v, 1, QP_NSIDE_MAX, &n)) return 0;
    cli->sim.nside = (int64_t)n;
    return 1;
  case QP_SIM_LMAX: return qp_cmd_parse_count("--lmax", v, 0, QP_LMAX_MAX, &cli->sim.lmax);
  case QP_SIM_ELL_MIN: return qp_cmd_parse_count("--ell-min", v, 0, QP_LMAX_MAX, &cli->sim.ell_min);
  case QP_SIM_N_MAPS: return qp_cmd_parse_count("--n-maps", v, 1, INT_MAX, &cli->sim.n_maps);
  case QP_SIM_SEED:
    if (!qp_cmd_parse_whole("--seed", v, 0, LLONG_MAX, &n)) return 0;
    cli->sim.seed = (uint64_t)n;
    return 1;
  case QP_SIM_NOISE:
    return qp_cmd_parse_real("--noise-variance", v, 0, DBL_MAX, &cli->sim.noise_variance);
  case QP_SIM_NOISE_POL:
    return qp_cmd_parse_real("--noise-variance-pol", v, 0, DBL_MAX, &cli->pol.noise_variance_pol);
  case QP_SIM_PAIRS: cli->pairs = 1; return 1;
  case QP_SIM_OUT2: cli->prefix2 = v; return 1;
  case QP_SIM_NOISE2:
    return qp_cmd_parse_real("--noise2-variance", v, 0, DBL_MAX, &cli->pair.noise_variance);
  case QP_SIM_NOISE2_POL:
    return qp_cmd_parse_real("--noise2-variance-pol", v, 0, DBL_MAX, &cli->pair.noise_variance_pol);
  case QP_SIM_BEAM:
    return qp_cmd_parse_real("--beam-fwhm", v, 0, QP_SIM_BEAM_MAX, &cli->sim.beam_fwhm_arcmin);
  case QP_SIM_CUT: return qp_cmd_parse_real("--galactic-cut", v, 0, 90, &cli->galactic_cut);
  default: return 0; /* '?': qp_cmd_getopt said why */
  }
}

/* Writes the n_maps maps of `maps` (qp_simulate_sky's layout) as PREFIX_0000.fits, ... */
static qp_err qp_write_set(const qp_sim_cli *cli, const double *maps, const char *prefix) {
  const int64_t n_sky = 12 * cli->sim.nside * cli->sim.nside;
  const int n_col = qp_simulate_columns(cli->pol.fields);
  for (int k = 0; k < cli->sim.n_maps; ++k) {
    char path[4200];
    QP_CHECK(qp_simulate_map_path(prefix, k, path, sizeof path), QP_ERR_INPUT,
             "the map prefix '%s' is too long", prefix);
    /* healpy's column names for one and for three maps. */
    const char *names[] = {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
    const double *columns[3];
    for (int c = 0; c < n_col; ++c)
      columns[c] = maps + ((int64_t)k * n_col + c) * n_sky;
    QP_CALL(qp_fits_map_write(path, cli->sim.nside, n_col, names, columns));
  }
  return QP_OK;
}

static qp_err qp_write_maps(const qp_sim_cli *cli, const qp_cls *cls, const char *prefix) {
  const int64_t n_sky = 12 * cli->sim.nside * cli->sim.nside; /* nside <= 2^29: parsed */
  const int n_col = qp_simulate_columns(cli->pol.fields);
  int64_t count = 0;
  QP_CHECK(qp_i64_mul(n_sky, n_col, &count) && qp_i64_mul(count, cli->sim.n_maps, &count),
           QP_ERR_INPUT,
           "simulate: %d map(s) of %d column(s) at nside %lld are more than 2^63 values",
           cli->sim.n_maps, n_col, (long long)cli->sim.nside);
  double *maps = NULL, *maps2 = NULL;
  QP_CALL(QP_ALLOC_DOUBLES("sim_maps", QP_TERM_TRANSIENT, count, &maps));
  qp_err err = QP_OK;
  if (cli->pairs) {
    QP_CALL_GOTO(QP_ALLOC_DOUBLES("sim_maps2", QP_TERM_TRANSIENT, count, &maps2), done);
    QP_CALL_GOTO(qp_simulate_pairs(cls, &cli->sim, &cli->pol, &cli->pair, maps, maps2), done);
  } else {
    QP_CALL_GOTO(qp_simulate_sky(cls, &cli->sim, &cli->pol, maps), done);
  }
  QP_CALL_GOTO(qp_write_set(cli, maps, prefix), done);
  if (cli->pairs) QP_CALL_GOTO(qp_write_set(cli, maps2, cli->prefix2), done);
done:
  qp_budget_free(maps2);
  qp_budget_free(maps);
  return err;
}

/* A noise as the config's `noise` key writes it: {variance: V} when T alone or both equal. */
static void qp_print_noise(const char *key, const qp_sim_cli *cli, double var_t, double var_p) {
  if (cli->pol.fields == QP_FIELDS_T || var_t == var_p)
    printf("%s: {variance: %.17g}\n", key, var_t);
  else
    printf("%s: {variance_t: %.17g, variance_p: %.17g}\n", key, var_t, var_p);
}

/* After --pairs: the config keys of the cross run, paths as given (relative to the current
 * directory: the config's paths are relative to its own directory). */
static void qp_print_pairs(const qp_sim_cli *cli) {
  char path[4200];
  for (int set = 0; set < 2; ++set) {
    printf("%s: [", set ? "maps2" : "maps");
    for (int k = 0; k < cli->sim.n_maps; ++k)
      if (qp_simulate_map_path(set ? cli->prefix2 : cli->prefix, k, path, sizeof path))
        printf("%s%s", k ? ", " : "", path);
    printf("]\n");
  }
  const double var_p =
      cli->pol.noise_variance_pol >= 0 ? cli->pol.noise_variance_pol : cli->sim.noise_variance;
  qp_print_noise("noise", cli, cli->sim.noise_variance, var_p);
  qp_print_noise("noise2", cli, cli->pair.noise_variance,
                 cli->pair.noise_variance_pol >= 0 ? cli->pair.noise_variance_pol
                                                   : cli->pair.noise_variance);
}

/* --pairs and its options, after the line is parsed: 2 (with a message) for an option of the
 * pairs without --pairs, or --pairs with --example; else the second set's defaults filled in. */
static int qp_pairs_resolve(qp_sim_cli *cli) {
  const char *without = cli->prefix2                        ? "--out2"
                        : cli->pair.noise_variance >= 0     ? "--noise2-variance"
                        : cli->pair.noise_variance_pol >= 0 ? "--noise2-variance-pol"
                                                            : NULL;
  if (!cli->pairs && without) {
    fprintf(stderr, "qmlpipe simulate: %s needs --pairs (it sets the second map of each pair)\n",
            without);
    return 2;
  }
  if (!cli->pairs) return 0;
  if (cli->example_dir) {
    fprintf(stderr, "qmlpipe simulate: --pairs is not available with --example (one map set): "
                    "give --out PREFIX instead\n");
    return 2;
  }
  if (!cli->prefix2) {
    const int n = snprintf(cli->prefix2_buf, sizeof cli->prefix2_buf, "%s2", cli->prefix);
    if (n < 0 || (size_t)n >= sizeof cli->prefix2_buf) {
      fprintf(stderr, "qmlpipe simulate: --out: the prefix '%s' is too long\n", cli->prefix);
      return 2;
    }
    cli->prefix2 = cli->prefix2_buf;
  }
  if (strcmp(cli->prefix2, cli->prefix) == 0) {
    fprintf(stderr,
            "qmlpipe simulate: --out2 '%s' is also --out: the second set would replace "
            "the first; give another prefix\n",
            cli->prefix2);
    return 2;
  }
  /* Not given: the first set's levels; --noise2-variance alone sets Q and U too, as
   * --noise-variance does for the first set. */
  if (cli->pair.noise_variance < 0) {
    cli->pair.noise_variance = cli->sim.noise_variance;
    if (cli->pair.noise_variance_pol < 0)
      cli->pair.noise_variance_pol = cli->pol.noise_variance_pol;
  }
  return 0;
}

static qp_err qp_write_mask(int64_t nside, double cut, const char *path) {
  const int64_t n_sky = 12 * nside * nside;
  double *mask = NULL;
  QP_CALL(QP_ALLOC_DOUBLES("sim_mask", QP_TERM_TRANSIENT, n_sky, &mask));
  qp_simulate_galactic_mask(nside, cut, mask);
  const char *names[] = {"MASK"};
  const double *columns[] = {mask};
  qp_err err = qp_fits_map_write(path, nside, 1, names, columns);
  qp_budget_free(mask);
  QP_CALL(err);
  return QP_OK;
}

/* The built-in example: nside 16, |b| > 20 deg, ell 2..23 in bins of 2, two maps. */
static qp_err qp_write_example(qp_sim_cli *cli, qp_cls *cls) {
  const char *dir = cli->example_dir;
  char path[4200], prefix[4200];
  snprintf(path, sizeof path, "%s/cls.txt", dir);
  QP_CALL(qp_cls_write(path, cls));
  snprintf(path, sizeof path, "%s/mask.fits", dir);
  QP_CALL(qp_write_mask(cli->sim.nside, cli->galactic_cut, path));
  snprintf(prefix, sizeof prefix, "%s/map", dir);
  QP_CALL(qp_write_maps(cli, cls, prefix));
  snprintf(path, sizeof path, "%s/config.yaml", dir);
  qp_atomic_file tmp;
  FILE *f = NULL;
  QP_CALL(qp_atomic_begin(path, &tmp));
  qp_err err = qp_atomic_fopen(&tmp, 0666, &f);
  if (err != QP_OK) {
    qp_atomic_abort(&tmp);
    QP_CALL(err);
  }
  /* The path goes into a comment line: a control character in DIR (a newline) would end the
   * comment and inject a key of its own (issue 38), so each is written as '?'. */
  char shown[sizeof path];
  snprintf(shown, sizeof shown, "%s", path);
  for (char *c = shown; *c; ++c)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  fprintf(f,
          QP_EXAMPLE_MARK "; paths are relative to\n"
          "# this file. Run it with: qmlpipe run %s\n",
          shown);
  fprintf(f, "maps: [");
  for (int k = 0; k < cli->sim.n_maps; ++k)
    fprintf(f, "%smap_%04d.fits", k ? ", " : "", k);
  fprintf(f,
          "]\nmask: mask.fits\nfields: T\ncls: cls.txt\nnoise: {variance: %.17g}\n"
          "spectra: [TT]\nell_min: %d\nlmax: %d\nlmax_signal: %d\nbin_width: 2\n"
          "beam_fwhm_arcmin: 0\npath: pixel_direct\nbackend: cpu\noutput: results.h5\n"
          "memory: {host_limit: 8GiB}\n%s",
          cli->sim.noise_variance, cli->sim.ell_min, cli->sim.lmax, cli->sim.lmax,
          cli->pixel_window ? "pixel_window: true\n" : "");
  QP_CALL(qp_atomic_fcommit(&tmp, f, 1));
  printf("qmlpipe simulate: example written to %s (run: qmlpipe run %s)\n", dir, path);
  return QP_OK;
}

int qp_cmd_simulate(int argc, char **argv) {
  static const struct option options[] = {
      {"help", no_argument, NULL, 'h'},
      {"cls", required_argument, NULL, QP_SIM_CLS},
      {"nside", required_argument, NULL, QP_SIM_NSIDE},
      {"lmax", required_argument, NULL, QP_SIM_LMAX},
      {"ell-min", required_argument, NULL, QP_SIM_ELL_MIN},
      {"fields", required_argument, NULL, QP_SIM_FIELDS},
      {"noise-variance", required_argument, NULL, QP_SIM_NOISE},
      {"noise-variance-pol", required_argument, NULL, QP_SIM_NOISE_POL},
      {"pairs", no_argument, NULL, QP_SIM_PAIRS},
      {"out2", required_argument, NULL, QP_SIM_OUT2},
      {"noise2-variance", required_argument, NULL, QP_SIM_NOISE2},
      {"noise2-variance-pol", required_argument, NULL, QP_SIM_NOISE2_POL},
      {"beam-fwhm", required_argument, NULL, QP_SIM_BEAM},
      {"n-maps", required_argument, NULL, QP_SIM_N_MAPS},
      {"seed", required_argument, NULL, QP_SIM_SEED},
      {"out", required_argument, NULL, QP_SIM_OUT},
      {"mask", required_argument, NULL, QP_SIM_MASK},
      {"galactic-cut", required_argument, NULL, QP_SIM_CUT},
      {"example", required_argument, NULL, QP_SIM_EXAMPLE},
      {"pixel-window", no_argument, NULL, QP_SIM_PIXWIN},
      {"pixel-window-file", required_argument, NULL, QP_SIM_PIXWIN_FILE},
      {NULL, 0, NULL, 0}};
  qp_sim_cli cli = {.prefix = "sim",
                    .sim = {.nside = 0, .ell_min = 2, .lmax = -1, .n_maps = 1, .seed = 1},
                    .pol = {.fields = QP_FIELDS_T, .noise_variance_pol = -1.0},
                    .pair = {.noise_variance = -1.0, .noise_variance_pol = -1.0}};
  qp_cmd_getopt_begin();
  for (int c; (c = qp_cmd_getopt("simulate", argc, argv, options, NULL)) != -1;) {
    if (c == 'h') {
      qp_simulate_usage(stdout);
      return 0;
    }
    if (c == '?') qp_simulate_usage(stderr);
    if (!qp_simulate_option(c, optarg, &cli)) return 2;
  }
  if (optind < argc) {
    fprintf(stderr, "qmlpipe simulate: unexpected argument '%s'\n", argv[optind]);
    qp_simulate_usage(stderr);
    return 2;
  }
  if (qp_pairs_resolve(&cli) != 0) {
    qp_simulate_usage(stderr);
    return 2;
  }
  if (cli.example_dir && cli.pixel_window_file) {
    /* The example's config names HEALPix's table by default: a path of the user's is not
     * written into it (issue 38: no user text in the YAML). */
    fprintf(stderr, "qmlpipe simulate: --example takes --pixel-window (HEALPix's table), not "
                    "--pixel-window-file\n");
    return 2;
  }
  if (cli.example_dir) {
    cli.pol.fields = QP_FIELDS_T; /* the example is a temperature run */
    if (!cli.sim.nside) cli.sim.nside = 16;
    if (cli.sim.lmax < 0) cli.sim.lmax = 23;
    if (!cli.sim.noise_variance) cli.sim.noise_variance = 100.0;
    if (!cli.galactic_cut) cli.galactic_cut = 20.0;
    if (cli.sim.n_maps == 1) cli.sim.n_maps = 2;
  }
  if (!cli.cls_path || cli.sim.nside < 1) {
    fprintf(stderr, "qmlpipe simulate: --cls and --nside are required\n");
    qp_simulate_usage(stderr);
    return 2;
  }
  if (cli.sim.lmax < 0) cli.sim.lmax = (int)(3 * cli.sim.nside - 1);
  /* Every file to write, checked before anything is read or drawn (simulate_outputs.h): not
   * a device or a FIFO, not the --cls, not another run's files under --example. */
  qp_err err = cli.example_dir
                   ? qp_simulate_check_example(cli.example_dir, cli.sim.n_maps, cli.cls_path)
                   : qp_simulate_check_outputs(cli.prefix, cli.sim.n_maps, cli.mask_path,
                                               cli.cls_path);
  if (err == QP_OK && cli.pairs)
    err = qp_simulate_check_pairs(cli.prefix2, cli.sim.n_maps, cli.mask_path, cli.cls_path);
  qp_cls cls;
  if (err == QP_OK) err = qp_cls_read(cli.cls_path, &cls);
  if (err == QP_OK && cli.sim.lmax > cls.lmax) cli.sim.lmax = cls.lmax;
  qp_pixel_window window = {0};
  if (err == QP_OK && cli.pixel_window) {
    err = qp_pixel_window_read(cli.pixel_window_file, cli.sim.nside, cli.sim.lmax, &window);
    if (err != QP_OK) qp_cls_free(&cls);
    cli.sim.pixel_window = &window;
  }
  if (err == QP_OK) {
    if (cli.example_dir) {
      err = qp_write_example(&cli, &cls);
    } else {
      err = qp_write_maps(&cli, &cls, cli.prefix);
      if (err == QP_OK && cli.mask_path)
        err = qp_write_mask(cli.sim.nside, cli.galactic_cut, cli.mask_path);
      if (err == QP_OK)
        printf("qmlpipe simulate: %d %s map(s) %s_0000.fits.. (nside %lld, ell %d..%d)\n",
               cli.sim.n_maps, qp_sim_field_names[cli.pol.fields], cli.prefix,
               (long long)cli.sim.nside, cli.sim.ell_min, cli.sim.lmax);
      if (err == QP_OK && cli.pairs) {
        printf("qmlpipe simulate: their pairs %s_0000.fits.. (the same signal, independent "
               "noise); the config keys of a cross run (paths as written here):\n",
               cli.prefix2);
        qp_print_pairs(&cli);
      }
    }
    qp_cls_free(&cls);
  }
  qp_pixel_window_free(&window);
  if (err != QP_OK) {
    qp_error_print(stderr, 0);
    return qp_err_exit_status(err);
  }
  return 0;
}
