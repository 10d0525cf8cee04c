/* test_checkpoint_cli: `qmlpipe run --checkpoint DIR` and `--resume` (pipeline/checkpoint.h)
 * (argv[1]: qmlpipe, argv[2]: a C_ell file, argv[3]: mpiexec or "none").
 *  - every route (pixel_direct; harmonic SMW with the switch, whose N_eff is its own matrix,
 *    and with a dense N, whose N_eff is a view of N; harmonic projection) is stopped after each of
 * covariance_setup, basis_setup and fisher_run by the test hook QP_TEST_STOP_AFTER_STAGE (exit 143,
 * as if SIGTERM'd), then resumed: F, y, the noise bias, C_hat and the error bars are the same bytes
 * as an uninterrupted run's, the checkpoints are gone afterwards, `report` marks the resumed stages
 * and `validate` shows them unjudged (and passes);
 *  - refusals: --resume without a directory (2); an input changed since the checkpoint (6,
 *    naming the map); a truncated checkpoint (8, naming it); a checkpoint whose data was
 *    damaged (8: its hash); --resume on an empty directory runs from the first stage;
 *  - the config's `checkpoint:` (relative to the config) with --resume alone; only the newest
 *    stage's file kept; a directory that cannot be made (8); a checkpoint that cannot be
 *    written (a warning, the same results); an input that cannot be hashed (8); a run that
 *    left SMW inside covariance_setup, resumed (7);
 *  - the same on backend hostdev (device matrices streamed through host windows), with SMW's
 *    maps in batches and projection's W in blocks under memory.device_limit; a damaged
 *    device matrix (8) and a full disk in the middle of one (a warning, the same results);
 *  - with MPI, 2 ranks (1 x 2): stopped after basis_setup and fisher_run and resumed, the
 *    same bytes as an uninterrupted 2-rank run (pixel-direct; SMW on dist and hostdev-dist,
 *    where rank 1 holds none of the mode maps); resumed on 1 rank instead, refused (6).
 * Everything happens in checkpoint_cli.d. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "cli_run.h"
#include "fits_map.h"
#include "h5_matrix.h"
#include "test_h5.h"
#include "test_util.h"

static char qmlpipe[4096];
static const char *mpiexec = NULL; /* NULL: no MPI */

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* qmlpipe with args, on `ranks` processes (mpiexec when ranks > 1); the exit status. Every
 * word of `words` must be on stderr. */
static int run_words(const char *tag, int ranks, const char *const *args,
                     const char *const *words) {
  qp_cli_result r;
  qp_cli_run_ranks(qmlpipe, mpiexec, ranks, tag, args, &r);
  const int status = r.exited ? r.status : 128 + r.signal;
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(r.err && strstr(r.err, words[i]) != NULL, "%s: stderr lacks '%s':\n%s", tag,
                words[i], r.err ? r.err : "");
  qp_cli_free(&r);
  return status;
}

static int run(const char *tag, int ranks, const char *const *args) {
  return run_words(tag, ranks, args, NULL);
}

/* Every value of the results' datasets the same bytes in both files. */
static void expect_same_bytes(const char *tag, const char *a, const char *b) {
  static const char *const names[] = {"fisher", "spectra/yb", "spectra/noise_bias", "spectra/cl",
                                      "spectra/error"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    hsize_t na = 0, nb = 0;
    double *x = qp_test_h5_read_doubles(a, names[k], &na);
    double *y = qp_test_h5_read_doubles(b, names[k], &nb);
    TEST_ASSERT(x && y && na == nb && na > 0, "%s: %s cannot be compared", tag, names[k]);
    if (x && y && na == nb) {
      TEST_ASSERT(memcmp(x, y, (size_t)na * sizeof *x) == 0,
                  "%s: %s differs from the uninterrupted run's (max rel. diff %.3g)", tag, names[k],
                  qp_test_max_rel_diff(x, y, (size_t)na));
    }
    free(x);
    free(y);
  }
}

/* Stops `config` after `stage` with the test hook, then resumes it: results as `reference`. */
static void stop_and_resume(const char *name, const char *config, int ranks, const char *stage,
                            const char *reference) {
  char tag[256], out[256], file[512];
  snprintf(out, sizeof out, "%s-%s.h5", name, stage);
  snprintf(file, sizeof file, "ck-%s/stage-%s.rank0.h5", name, stage);
  snprintf(tag, sizeof tag, "%s_stop_%s", name, stage);
  char dir[128];
  snprintf(dir, sizeof dir, "ck-%s", name);
  const char *args[] = {"run", config, "--output", out, "--checkpoint", dir, NULL};
  /* The SIGTERM goes through the signal handler (base/interrupt.h), which says what can be
   * resumed: the checkpoint after this stage. */
  char hint[160];
  snprintf(hint, sizeof hint, "the checkpoint after %s is in", stage);
  const char *said[] = {hint, "--resume continues from there", NULL};
  setenv("QP_TEST_STOP_AFTER_STAGE", stage, 1);
  const int stopped = run_words(tag, ranks, args, ranks == 1 ? said : NULL);
  unsetenv("QP_TEST_STOP_AFTER_STAGE");
  if (ranks == 1)
    TEST_ASSERT(stopped == 143, "%s: exit %d, expected 143 (SIGTERM by the hook)", tag, stopped);
  else
    TEST_ASSERT(stopped != 0, "%s: the stopped run exited 0", tag);
  TEST_ASSERT(exists(file), "%s: no checkpoint '%s'", tag, file);
  TEST_ASSERT(!exists(out), "%s: the stopped run wrote results", tag);
  snprintf(tag, sizeof tag, "%s_resume_%s", name, stage);
  const char *resume[] = {"run", config, "--output", out, "--checkpoint", dir, "--resume", NULL};
  char after[128];
  snprintf(after, sizeof after, "continuing after %s", stage);
  const char *words[] = {after, NULL};
  const int status = run_words(tag, ranks, resume, words);
  TEST_ASSERT(status == 0, "%s: exit %d (stderr in %s.err)", tag, status, tag);
  expect_same_bytes(tag, reference, out);
  TEST_ASSERT(!exists(file), "%s: checkpoint '%s' left after the results", tag, file);
  /* (report and validate once per route) */
  if (ranks > 1 || strcmp(stage, "basis_setup") != 0) return;
  /* The report marks the resumed stages; validate shows them without judging them. */
  const char *report[] = {"report", out, NULL};
  snprintf(tag, sizeof tag, "%s_report_%s", name, stage);
  TEST_ASSERT(run(tag, 1, report) == 0, "%s: report failed", tag);
  snprintf(file, sizeof file, "%s.out", tag);
  char *text = qp_cli_slurp(file);
  TEST_ASSERT(strstr(text, "RESUMED from a checkpoint") != NULL, "%s: no resumed stage:\n%s", tag,
              text);
  free(text);
  /* The sanitizer build's shadow memory is in RSS (test_util.h): there no stage is judged
   * against RSS (the terms' drift still is). */
  const char *validate[] = {"validate", out, QP_TEST_SANITIZED ? "--min-bytes" : NULL, "1T", NULL};
  snprintf(tag, sizeof tag, "%s_validate_%s", name, stage);
  /* On hostdev too: the backend's own workspace, which the restored stages had grown, is
   * held again at the resume (checkpoint_read.c), so no term drifts; validate compares RSS
   * with both spaces there (the emulated device's pages are the process's). */
  TEST_ASSERT(run(tag, 1, validate) == 0, "%s: validate failed (see %s.out)", tag, tag);
  snprintf(file, sizeof file, "%s.out", tag);
  text = qp_cli_slurp(file);
  TEST_ASSERT(strstr(text, "resumed: not judged") != NULL, "%s: resumed stage judged:\n%s", tag,
              text);
  free(text);
}

/* A config for the simulated inputs up to `lmax`, named <name>.yaml, writing <name>.h5. */
static void write_config_lmax(const char *name, const char *cls, const char *noise, int lmax,
                              const char *route) {
  char path[256], text[8192];
  snprintf(path, sizeof path, "%s.yaml", name);
  snprintf(text, sizeof text,
           "maps: [map_0000.fits, map_0001.fits]\nmask: mask.fits\nfields: T\ncls: %s\n"
           "noise: %s\nspectra: [TT]\nlmax: %d\nbin_width: 3\n%s\noutput: %s.h5\n",
           cls, noise, lmax, route, name);
  qp_test_write_text(path, text);
}

static void write_config_noise(const char *name, const char *cls, const char *noise,
                               const char *route) {
  write_config_lmax(name, cls, noise, 16, route);
}

static void write_config(const char *name, const char *cls, const char *route) {
  write_config_noise(name, cls, "{variance: 20}", route);
}

/* Two runs in one checkpoint directory (issue 38): while this process holds the directory's
 * lock (as a running qmlpipe does), a run with --checkpoint there is refused, exit 8, naming
 * the directory and the holder's pid; nothing of it written. Unlocked, the same run succeeds. */
static void locked_directory(const char *cls) {
  write_config("ck_lock", cls, "path: pixel_direct");
  if (mkdir("ck-lock", 0777) != 0 && errno != EEXIST) TEST_ASSERT(0, "mkdir ck-lock");
  int fd = -1;
  TEST_OK(qp_checkpoint_lock("ck-lock", &fd));
  char pid[32];
  snprintf(pid, sizeof pid, "pid %ld host", (long)getpid());
  const char *args[] = {"run", "ck_lock.yaml", "--checkpoint", "ck-lock", "--quiet", NULL};
  const char *words[] = {"checkpoint directory 'ck-lock' is in use by another run", pid,
                         "give each run its own", NULL};
  const int status = run_words("ck_lock (held)", 1, args, words);
  TEST_ASSERT(status == 8, "a run in a locked checkpoint directory: exit %d, expected 8", status);
  TEST_ASSERT(!exists("ck_lock.h5"), "the refused run wrote its results file");
  qp_checkpoint_unlock(&fd);
  TEST_ASSERT(run("ck_lock (free)", 1, args) == 0, "the same run after the lock was dropped");
  TEST_ASSERT(exists("ck_lock.h5"), "no results file after the lock was dropped");
  /* A lock of this process is refused to itself too: flock is per open file. */
  int first = -1, second = -1;
  TEST_OK(qp_checkpoint_lock("ck-lock", &first));
  EXPECT_ERROR(qp_checkpoint_lock("ck-lock", &second), QP_ERR_IO, "in use by another run");
  TEST_ASSERT(second == -1, "a refused lock left a descriptor");
  qp_checkpoint_unlock(&first);
  qp_checkpoint_unlock(&first); /* twice: nothing */
}

/* An uninterrupted run of <name>.yaml on `ranks` into <name>.h5 whose plan says `plan_says`
 * (NULL: anything), then stopped after each stage of `stages` (NULL-terminated) and resumed:
 * the same bytes. */
static void resumed_like_uninterrupted(const char *name, int ranks, const char *plan_says,
                                       const char *const *stages) {
  char config[64], reference[64];
  snprintf(config, sizeof config, "%s.yaml", name);
  snprintf(reference, sizeof reference, "%s.h5", name);
  if (plan_says) {
    const char *plan[] = {"plan", config, NULL};
    char tag[96];
    snprintf(tag, sizeof tag, "%s_plan", name);
    TEST_ASSERT(run(tag, 1, plan) == 0, "%s: plan failed", name);
    snprintf(tag, sizeof tag, "%s_plan.out", name);
    char *text = qp_cli_slurp(tag);
    TEST_ASSERT(strstr(text, plan_says) != NULL, "%s: the plan does not say '%s':\n%s", name,
                plan_says, text);
    free(text);
  }
  const char *args[] = {"run", config, "--quiet", NULL};
  TEST_ASSERT(run(name, ranks, args) == 0, "%s: the uninterrupted run failed", name);
  for (int s = 0; stages[s]; ++s)
    stop_and_resume(name, config, ranks, stages[s], reference);
}

/* The n_pix attribute of a results file (-1 when unreadable). */
static int64_t results_n_pix(const char *path) {
  int64_t n = -1;
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return -1;
  hid_t attr = H5Aopen(file, "n_pix", H5P_DEFAULT);
  if (attr >= 0 && H5Aread(attr, H5T_NATIVE_INT64, &n) < 0) n = -1;
  if (attr >= 0) H5Aclose(attr);
  H5Fclose(file);
  return n;
}

/* var.fits: variance 1 at every pixel but one observed pixel of mask.fits, 1e-12 there: SMW's
 * N too ill-conditioned for the default accuracy, which only covariance_setup can see. */
static void write_odd_variance_map(void) {
  qp_healpix_info info;
  TEST_ASSERT(qp_fits_map_info("mask.fits", &info) == QP_OK, "cannot read mask.fits");
  double *sky = malloc((size_t)info.n_sky * sizeof *sky);
  TEST_ASSERT(sky && qp_fits_map_read("mask.fits", &info, 0, sky) == QP_OK, "mask.fits");
  if (!sky) return;
  int64_t odd = -1;
  for (int64_t i = 0; i < info.n_sky && odd < 0; ++i)
    if (sky[i] != 0.0) odd = i;
  for (int64_t i = 0; i < info.n_sky; ++i)
    sky[i] = i == odd ? 1e-12 : 1.0;
  const char *names[1] = {"T_VARIANCE"};
  const double *cols[1] = {sky};
  TEST_ASSERT(qp_fits_map_write("var.fits", info.nside, 1, names, cols) == QP_OK,
              "cannot write var.fits");
  free(sky);
}

/* noise.h5: a dense N = 20 (I + 0.2 T), T_ij = exp(-|i - j| / 3) off the diagonal. */
static void write_dense_noise(int64_t n) {
  double *m = malloc((size_t)(n * n) * sizeof *m);
  TEST_ASSERT(m != NULL, "no memory for a %lld x %lld noise", (long long)n, (long long)n);
  if (!m) return;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      m[i + j * n] = 20.0 * (i == j ? 1.0 : 0.2 * exp(-fabs((double)(i - j)) / 3.0));
  TEST_ASSERT(qp_h5_matrix_write("noise.h5", "/covariance", n, n, m) == QP_OK,
              "cannot write noise.h5");
  free(m);
}

static void flip_byte(const char *path, long offset) {
  FILE *f = fopen(path, "r+b");
  TEST_ASSERT(f != NULL, "cannot open '%s'", path);
  if (!f) return;
  fseek(f, offset, SEEK_SET);
  int c = fgetc(f);
  fseek(f, offset, SEEK_SET);
  fputc(c ^ 0x40, f);
  fclose(f);
}

/* Rewrites checkpoint `path`'s root attribute "format" to `text`, as another qmlpipe would have
 * written it (a variable-length UTF-8 string, as base/h5_attr.c writes it). */
static void set_checkpoint_format(const char *path, const char *text) {
  const hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  TEST_ASSERT(file >= 0, "cannot open checkpoint '%s'", path);
  if (file < 0) return;
  const hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  TEST_ASSERT(H5Adelete(file, "format") >= 0, "'%s': no attribute 'format'", path);
  const hid_t attr = H5Acreate2(file, "format", type, space, H5P_DEFAULT, H5P_DEFAULT);
  TEST_ASSERT(attr >= 0 && H5Awrite(attr, type, &text) >= 0, "'%s': format not rewritten", path);
  if (attr >= 0) H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* The cross-spectra keys of the SMW cross cases: maps crossed with themselves, another noise. */
#define SMW_CROSS "maps2: [map_0000.fits, map_0001.fits]\nnoise2: {variance: 30}"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: test_checkpoint_cli QMLPIPE CLS.txt MPIEXEC|none\n");
    return 2;
  }
  char cls[4096];
  if (!realpath(argv[2], cls)) {
    fprintf(stderr, "test_checkpoint_cli: cannot resolve '%s'\n", argv[2]);
    return 1;
  }
  if (strcmp(argv[3], "none") != 0) mpiexec = argv[3];
  int setup = qp_cli_setup(argc, argv, "test_checkpoint_cli", "checkpoint_cli.d", qmlpipe);
  if (setup != 0) return setup;
  if (system("rm -rf ck-* sub") != 0) return 1;
  {
    const char *args[] = {"simulate", "--cls", cls,      "--nside",   "8",
                          "--n-maps", "2",     "--mask", "mask.fits", "--galactic-cut",
                          "20",       "--out", "map",    NULL};
    TEST_ASSERT(run("simulate", 1, args) == 0, "simulate failed");
  }
  locked_directory(cls);
  static const char *const stages[] = {"covariance_setup", "basis_setup", "fisher_run", NULL};
  /* Every route on the cpu backend, and on hostdev (the device path emulated: the device
   * matrices written and read back through host windows, a panel at a time). */
  static const struct {
    const char *name, *route;
  } cases[] = {
      {"pd", "path: pixel_direct"},
      {"smw", "path: harmonic\nharmonic_method: smw\nlmax_signal: 20"},
      {"proj", "path: harmonic\nharmonic_method: projected"},
      {"hdpd", "path: pixel_direct\nbackend: hostdev"},
      {"hdsmw", "path: harmonic\nharmonic_method: smw\nlmax_signal: 20\nbackend: hostdev"},
      {"hdproj", "path: harmonic\nharmonic_method: projected\nbackend: hostdev"},
      /* cross-spectra (the maps crossed the other way round: any two sets serve here): C_B,
       * Y_B and W_B cross the stages (checkpoint_file.c's covariance_b, vt_b, kernel_b) */
      {"pdx", "path: pixel_direct\nmaps2: [map_0001.fits, map_0000.fits]\nnoise2: {variance: 30}"},
      {"projx", "path: harmonic\nharmonic_method: projected\nlmax_signal: 20\n"
                "maps2: [map_0001.fits, map_0000.fits]\nnoise2: {variance: 30}"},
      {"hdprojx", "path: harmonic\nharmonic_method: projected\nbackend: hostdev\n"
                  "maps2: [map_0001.fits, map_0000.fits]\nnoise2: {variance: 30}"},
      /* SMW cross-spectra: B's N_B,eff, Q, K_B, LU_B, pivots_B and mode maps (the switch);
       * N_B's variances kept to basis_setup (no switch); on the device path. */
      {"smwx", "path: harmonic\nharmonic_method: smw\nlmax_signal: 20\n" SMW_CROSS},
      {"smwxn", "path: harmonic\nharmonic_method: smw\n" SMW_CROSS},
      {"hdsmwx",
       "path: harmonic\nharmonic_method: smw\nlmax_signal: 20\nbackend: hostdev\n" SMW_CROSS},
  };
  /* Panels of 64 KiB (the test hook): the device matrices go through many of them. */
  setenv("QP_TEST_CHECKPOINT_PANEL_BYTES", "65536", 1);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    write_config(cases[c].name, cls, cases[c].route);
    resumed_like_uninterrupted(cases[c].name, 1, NULL, stages);
  }
  /* The device chunkings' host state: SMW's maps in batches keep every batch's V N^-1 x on
   * the host (mode_maps_host) from basis_setup to spectra_run; projection's W in blocks is a
   * host W (W_host) from basis_setup into fisher_run. The limits are this sky's (n_pix 480):
   * 3190000 B holds one map's per-map matrices, not two; at lmax 23 (572 modes) 6500 KiB
   * holds W in blocks, not whole. */
  write_config("hdbatch", cls,
               "path: harmonic\nharmonic_method: smw\nlmax_signal: 20\nbackend: hostdev\n"
               "memory: {device_limit: 3190000B}");
  resumed_like_uninterrupted("hdbatch", 1, "maps in batches of 1 of 2", stages + 1);
  write_config_lmax("hdwblocks", cls, "{variance: 20}", 23,
                    "path: harmonic\nharmonic_method: projected\nbackend: hostdev\n"
                    "memory: {device_limit: 6500KiB}");
  resumed_like_uninterrupted("hdwblocks", 1, "W in blocks of", stages + 1);
  /* A device run's checkpoint damaged in C's data: refused (8), naming the dataset, whose
   * hash is summed over the panels it is read back in. */
  {
    const char *stop[] = {"run",          "hdpd.yaml", "--output", "hdbad.h5",
                          "--checkpoint", "ck-hdbad",  NULL};
    setenv("QP_TEST_STOP_AFTER_STAGE", "basis_setup", 1);
    TEST_ASSERT(run("hdbad_stop", 1, stop) == 143, "hdbad_stop: not stopped");
    unsetenv("QP_TEST_STOP_AFTER_STAGE");
    const char *file = "ck-hdbad/stage-basis_setup.rank0.h5";
    flip_byte(file, file_size(file) / 2);
    const char *resume[] = {"run",          "hdpd.yaml", "--output", "hdbad.h5",
                            "--checkpoint", "ck-hdbad",  "--resume", NULL};
    const char *damaged[] = {"is damaged", "'covariance'", NULL};
    TEST_ASSERT(run_words("hdbad_damaged", 1, resume, damaged) == 8, "hdbad: not exit 8");
    TEST_ASSERT(!exists("hdbad.h5"), "a refused resume wrote results");
  }
  unsetenv("QP_TEST_CHECKPOINT_PANEL_BYTES");
  /* SMW with a dense N: N_eff is N itself (saved once, restored as a view of it). */
  {
    write_dense_noise(results_n_pix("pd.h5"));
    write_config_noise("smwd", cls, "{covariance: noise.h5}",
                       "path: harmonic\nharmonic_method: smw");
    const char *args[] = {"run", "smwd.yaml", "--quiet", NULL};
    TEST_ASSERT(run("smwd", 1, args) == 0, "smwd: the uninterrupted run failed");
    for (size_t s = 0; s < 3; ++s)
      stop_and_resume("smwd", "smwd.yaml", 1, stages[s], "smwd.h5");
  }

  /* Refusals. */
  {
    const char *args[] = {"run", "pd.yaml", "--resume", NULL};
    const char *words[] = {"--resume needs a checkpoint directory", NULL};
    TEST_ASSERT(run_words("resume_no_dir", 1, args, words) == 2, "--resume without a dir");
  }
  {
    /* --resume on an empty directory: from the first stage, the same results. */
    const char *args[] = {"run",          "pd.yaml",  "--output", "empty.h5",
                          "--checkpoint", "ck-empty", "--resume", NULL};
    const char *words[] = {"no checkpoint in 'ck-empty'", NULL};
    TEST_ASSERT(run_words("resume_empty", 1, args, words) == 0, "--resume on an empty dir");
    expect_same_bytes("resume_empty", "pd.h5", "empty.h5");
  }
  {
    /* A truncated checkpoint, then one with a flipped byte in its data. */
    const char *stop[] = {"run", "pd.yaml", "--output", "bad.h5", "--checkpoint", "ck-bad", NULL};
    setenv("QP_TEST_STOP_AFTER_STAGE", "basis_setup", 1);
    TEST_ASSERT(run("bad_stop", 1, stop) == 143, "bad_stop: not stopped by the hook");
    unsetenv("QP_TEST_STOP_AFTER_STAGE");
    const char *file = "ck-bad/stage-basis_setup.rank0.h5";
    const long size = file_size(file);
    TEST_ASSERT(size > 4096, "bad_stop: checkpoint '%s' has %ld bytes", file, size);
    TEST_ASSERT(system("cp ck-bad/stage-basis_setup.rank0.h5 saved.h5") == 0, "cp failed");
    TEST_ASSERT(truncate(file, size / 2) == 0, "cannot truncate '%s'", file);
    const char *resume[] = {"run",          "pd.yaml", "--output", "bad.h5",
                            "--checkpoint", "ck-bad",  "--resume", NULL};
    const char *truncated[] = {"checkpoint 'ck-bad/stage-basis_setup.rank0.h5' cannot be read",
                               "remove it", NULL};
    TEST_ASSERT(run_words("bad_truncated", 1, resume, truncated) == 8, "truncated: not exit 8");
    TEST_ASSERT(system("cp saved.h5 ck-bad/stage-basis_setup.rank0.h5") == 0, "cp failed");
    flip_byte(file, size / 2);
    const char *damaged[] = {"is damaged", "'covariance'", NULL};
    TEST_ASSERT(run_words("bad_damaged", 1, resume, damaged) == 8, "damaged: not exit 8");
    TEST_ASSERT(!exists("bad.h5"), "a refused resume wrote results");
    /* An input changed since: refused, naming it. */
    TEST_ASSERT(system("cp saved.h5 ck-bad/stage-basis_setup.rank0.h5") == 0, "cp failed");
    const char *again[] = {"simulate", "--cls",  cls, "--nside", "8",   "--n-maps",
                           "2",        "--seed", "8", "--out",   "map", NULL};
    TEST_ASSERT(run("simulate_again", 1, again) == 0, "simulate failed");
    const char *changed[] = {"map_0000.fits' changed since", "remove 'ck-bad'", NULL};
    TEST_ASSERT(run_words("bad_changed", 1, resume, changed) == 6, "changed input: not exit 6");
    TEST_ASSERT(!exists("bad.h5"), "a refused resume wrote results");
    again[8] = "1"; /* the seed of the first maps back */
    TEST_ASSERT(run("simulate_back", 1, again) == 0, "simulate failed");
  }

  /* A checkpoint of another qmlpipe format (another version of qmlpipe, whose stages held
   * other state): refused (6), naming both formats and the directory; a text that is no
   * qmlpipe format at all is not a checkpoint (8). Put back, the same checkpoint resumes to
   * the uninterrupted run's bytes. */
  {
    const char *stop[] = {"run", "pd.yaml", "--output", "old.h5", "--checkpoint", "ck-old", NULL};
    setenv("QP_TEST_STOP_AFTER_STAGE", "basis_setup", 1);
    TEST_ASSERT(run("old_stop", 1, stop) == 143, "old_stop: not stopped by the hook");
    unsetenv("QP_TEST_STOP_AFTER_STAGE");
    const char *file = "ck-old/stage-basis_setup.rank0.h5";
    const char *resume[] = {"run",          "pd.yaml", "--output", "old.h5",
                            "--checkpoint", "ck-old",  "--resume", NULL};
    set_checkpoint_format(file, "qmlpipe checkpoint 0");
    const char *older[] = {"written by another version of qmlpipe", "format 'qmlpipe checkpoint 0'",
                           "reads 'qmlpipe checkpoint 2'", "remove 'ck-old'", NULL};
    TEST_ASSERT(run_words("old_format", 1, resume, older) == 6, "format 0: not exit 6");
    TEST_ASSERT(!exists("old.h5"), "a refused resume wrote results");
    set_checkpoint_format(file, "some other format");
    const char *foreign[] = {"is not a qmlpipe checkpoint", "'some other format'", NULL};
    TEST_ASSERT(run_words("foreign_format", 1, resume, foreign) == 8, "foreign: not exit 8");
    /* Format 1 held the maps, which format 2 reads from their files again: refused alike. */
    set_checkpoint_format(file, "qmlpipe checkpoint 1");
    const char *one[] = {"format 'qmlpipe checkpoint 1'", "reads 'qmlpipe checkpoint 2'", NULL};
    TEST_ASSERT(run_words("format_one", 1, resume, one) == 6, "format 1: not exit 6");
    set_checkpoint_format(file, "qmlpipe checkpoint 2");
    TEST_ASSERT(run("old_put_back", 1, resume) == 0, "format put back: the resume failed");
    expect_same_bytes("old_put_back", "pd.h5", "old.h5");
  }

  /* A run whose variance map rules SMW out: the planner leaves SMW before the first stage
   * (the progress line says so), so a resume plans the same route and continues it. */
  {
    write_odd_variance_map();
    write_config_noise("reroute", cls, "{variance_map: var.fits}", "path: harmonic");
    const char *stop[] = {"run", "reroute.yaml", "--checkpoint", "ck-reroute", NULL};
    setenv("QP_TEST_STOP_AFTER_STAGE", "covariance_setup", 1);
    const char *changed[] = {"path changed to harmonic (projected)", NULL};
    TEST_ASSERT(run_words("reroute_stop", 1, stop, changed) == 143, "reroute_stop: not stopped");
    unsetenv("QP_TEST_STOP_AFTER_STAGE");
    const char *resume[] = {"run", "reroute.yaml", "--checkpoint", "ck-reroute", "--resume", NULL};
    TEST_ASSERT(run("reroute_resume", 1, resume) == 0, "rerouted: the resume failed");
  }
  /* The config's key, relative to the config's directory, with --resume alone. */
  {
    TEST_ASSERT(mkdir("sub", 0755) == 0, "cannot create sub/");
    char text[8192];
    snprintf(text, sizeof text,
             "maps: [../map_0000.fits, ../map_0001.fits]\nmask: ../mask.fits\nfields: T\n"
             "cls: %s\nnoise: {variance: 20}\nspectra: [TT]\nlmax: 16\nbin_width: 3\n"
             "path: pixel_direct\noutput: keyed.h5\ncheckpoint: ck\n",
             cls);
    qp_test_write_text("sub/keyed.yaml", text);
    const char *args[] = {"run", "sub/keyed.yaml", NULL};
    setenv("QP_TEST_STOP_AFTER_STAGE", "fisher_run", 1);
    TEST_ASSERT(run("keyed_stop", 1, args) == 143, "keyed_stop: not stopped by the hook");
    unsetenv("QP_TEST_STOP_AFTER_STAGE");
    TEST_ASSERT(exists("sub/ck/stage-fisher_run.rank0.h5"), "no sub/ck/stage-fisher_run.rank0.h5");
    TEST_ASSERT(!exists("sub/ck/stage-basis_setup.rank0.h5"),
                "the older checkpoint is still there beside the newer");
    const char *resume[] = {"run", "sub/keyed.yaml", "--resume", NULL};
    TEST_ASSERT(run("keyed_resume", 1, resume) == 0, "keyed_resume failed");
    expect_same_bytes("keyed_resume", "pd.h5", "sub/keyed.h5");
  }
  /* A directory that cannot be made: refused before the run (8). */
  {
    const char *args[] = {"run", "pd.yaml", "--checkpoint", "nodir/ck", NULL};
    const char *words[] = {"--checkpoint: cannot create the checkpoint directory 'nodir/ck'", NULL};
    TEST_ASSERT(run_words("dir_missing", 1, args, words) == 8, "dir_missing: not exit 8");
  }
  /* A checkpoint that cannot be written (a directory where its file goes): a warning, and
   * the run goes on to the same results. */
  {
    TEST_ASSERT(mkdir("ck-fail", 0755) == 0 &&
                    mkdir("ck-fail/stage-covariance_setup.rank0.h5", 0755) == 0,
                "cannot create ck-fail/");
    const char *args[] = {"run", "pd.yaml", "--output", "fail.h5", "--checkpoint", "ck-fail", NULL};
    const char *words[] = {"warning: no checkpoint after covariance_setup (the run goes on)",
                           "checkpoint after basis_setup", NULL};
    TEST_ASSERT(run_words("save_fails", 1, args, words) == 0, "save_fails: the run failed");
    expect_same_bytes("save_fails", "pd.h5", "fail.h5");
  }
  /* A checkpoint directory on a full disk (a 1 MiB tmpfs: the header probe fits, a stage's
   * 30 MiB do not): each write fails with a warning, the run ends with the same results and
   * exit 0, not with HDF5's exit-handler crash after a failed H5Fclose (exit 139; main ends
   * without the exit handlers then, base/h5_error.h). Needs root for the mount. */
  if (mkdir("ck-full", 0755) == 0 && mount("tmpfs", "ck-full", "tmpfs", 0, "size=1m") == 0) {
    const char *args[] = {"run", "pd.yaml", "--output", "full.h5", "--checkpoint", "ck-full", NULL};
    const char *words[] = {"warning: no checkpoint after covariance_setup (the run goes on)",
                           "No space left on device", NULL};
    TEST_ASSERT(run_words("disk_full", 1, args, words) == 0, "disk_full: the run failed");
    expect_same_bytes("disk_full", "pd.h5", "full.h5");
    char left[1024] = "";
    TEST_ASSERT(qp_test_find_temps("ck-full", left, sizeof left) == 0,
                "disk_full: temporaries left: %s", left);
    umount("ck-full");
  } else {
    printf("  cannot mount a tmpfs on ck-full (%s): the full-disk case skipped\n", strerror(errno));
  }
  /* The same on hostdev, the device matrices written a 64 KiB panel at a time: the disk
   * fills in the middle of a matrix, the panel's staging goes, and the run ends as above. */
  if (mkdir("ck-fullhd", 0755) == 0 && mount("tmpfs", "ck-fullhd", "tmpfs", 0, "size=1m") == 0) {
    setenv("QP_TEST_CHECKPOINT_PANEL_BYTES", "65536", 1);
    const char *args[] = {"run",          "hdpd.yaml", "--output", "fullhd.h5",
                          "--checkpoint", "ck-fullhd", NULL};
    const char *words[] = {"warning: no checkpoint after covariance_setup (the run goes on)",
                           "No space left on device", NULL};
    TEST_ASSERT(run_words("disk_full_hostdev", 1, args, words) == 0,
                "disk_full_hostdev: the run failed");
    unsetenv("QP_TEST_CHECKPOINT_PANEL_BYTES");
    expect_same_bytes("disk_full_hostdev", "hdpd.h5", "fullhd.h5");
    char left[1024] = "";
    TEST_ASSERT(qp_test_find_temps("ck-fullhd", left, sizeof left) == 0,
                "disk_full_hostdev: temporaries left: %s", left);
    umount("ck-fullhd");
  }
  /* An input that cannot be read to hash it: refused before any stage (8), naming it and its
   * key (run checks every input file before the plan, before the hashes: input_file.h). */
  {
    write_config("unread", cls, "path: pixel_direct");
    TEST_ASSERT(system("sed -i 's/map_0001.fits/missing.fits/' unread.yaml") == 0, "sed failed");
    const char *args[] = {"run", "unread.yaml", "--checkpoint", "ck-unread", NULL};
    const char *words[] = {"cannot open map file (maps[1]) 'missing.fits'", NULL};
    TEST_ASSERT(run_words("unreadable_input", 1, args, words) == 8, "unreadable input: not 8");
  }

  /* Two ranks: per-rank files, the same bytes as an uninterrupted 2-rank run. */
  if (mpiexec) {
    write_config("pd2r", cls, "path: pixel_direct\ngrid: {rows: 1, cols: 2, block: 8}");
    const char *args[] = {"run", "pd2r.yaml", "--output", "pd2.h5", "--quiet", NULL};
    TEST_ASSERT(run("pd2", 2, args) == 0, "pd2: the 2-rank run failed");
    stop_and_resume("pd2r", "pd2r.yaml", 2, "basis_setup", "pd2.h5");
    stop_and_resume("pd2r", "pd2r.yaml", 2, "fisher_run", "pd2.h5");
    /* The per-rank report: the resumed stages not compared, the others exact (exit 0). */
    const char *report[] = {"report", "pd2r-fisher_run.h5", "--ranks", NULL};
    TEST_ASSERT(run("pd2r_ranks", 1, report) == 0, "report --ranks of a resumed run failed");
    char *text = qp_cli_slurp("pd2r_ranks.out");
    TEST_ASSERT(strstr(text, "resumed (not compared)") && !strstr(text, "NO: tracked"),
                "report --ranks:\n%s", text);
    /* The resumed stages' errors say so, never +nan (issue 41); each rank's host is named. */
    TEST_ASSERT(strstr(text, " resumed | ") && !strstr(text, "nan") &&
                    strstr(text, "resumed from the checkpoint: not compared") &&
                    strstr(text, "placement: 1 node(s) by host name") && strstr(text, ", host "),
                "report --ranks of a resumed run:\n%s", text);
    free(text);
    /* SMW on the grid, whose mode maps (2 columns, block 8) rank 1 holds none of: saved on
     * every rank all the same (their shape), on dist and on hostdev-dist. */
    write_config("smw2r", cls,
                 "path: harmonic\nharmonic_method: smw\nlmax_signal: 20\n"
                 "grid: {rows: 1, cols: 2, block: 8}");
    resumed_like_uninterrupted("smw2r", 2, NULL, stages + 1);
    write_config("hdsmw2r", cls,
                 "path: harmonic\nharmonic_method: smw\nlmax_signal: 20\nbackend: hostdev\n"
                 "grid: {rows: 1, cols: 2, block: 8}");
    resumed_like_uninterrupted("hdsmw2r", 2, NULL, stages + 1);
    /* Resumed on 1 rank: refused, naming the ranks. */
    const char *stop[] = {"run", "pd2r.yaml", "--checkpoint", "ck-ranks", NULL};
    setenv("QP_TEST_STOP_AFTER_STAGE", "covariance_setup", 1);
    TEST_ASSERT(run("ranks_stop", 2, stop) != 0, "ranks_stop: not stopped");
    unsetenv("QP_TEST_STOP_AFTER_STAGE");
    TEST_ASSERT(exists("ck-ranks/stage-covariance_setup.rank1.h5"), "no file of rank 1");
    const char *one[] = {"run", "pd.yaml", "--checkpoint", "ck-ranks", "--resume", NULL};
    const char *words[] = {"written by 2 rank(s) on a 1 x 2 grid", NULL};
    TEST_ASSERT(run_words("ranks_one", 1, one, words) == 6, "1 rank on a 2-rank checkpoint");
  }
  return TEST_RETURN();
}
