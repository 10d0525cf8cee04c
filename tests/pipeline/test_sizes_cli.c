/* test_sizes_cli: sizes too large for 64 bits, through `qmlpipe plan` and `qmlpipe budget`
 * (argv[1]) on `dimensions:` configs. n_pix 1518500250 makes an n_pix^2 matrix of doubles
 * 1.8447e19 bytes, 2^64 + 3.3e9: computed in size_t it wrapped to 277 MiB, and the plan said
 * "fits" a 100 GiB limit. Every such size must be refused with a message naming the term or
 * quantity and the dimensions (exit 6), or, when it is a real size beyond the limit, refused
 * against the limit (exit 4); never a wrapped number, never "fits".
 *
 * And every command's option values (section 9): taken whole or refused with exit 2, naming
 * the option and the value.
 *
 * Files go to a private directory (sizes_cli.d), removed when every check passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "test_util.h"

#define WORK_DIR "sizes_cli.d"

static char qmlpipe[4096];

/* Runs qmlpipe with `args` (NULL-terminated); expects `status`, every word of `words` on
 * stdout or stderr and no word of `absent` on either. */
static void expect(const char *tag, const char *const *args, int status, const char *const *words,
                   const char *const *absent) {
  qp_cli_result r;
  qp_cli_run(qmlpipe, tag, args, &r);
  const int before = qp_test_failures;
  TEST_ASSERT(r.exited && r.status == status, "%s: exit status %d (signal %d), expected %d", tag,
              r.status, r.signal, status);
  for (int i = 0; words && words[i]; ++i)
    TEST_ASSERT(strstr(r.out, words[i]) != NULL || strstr(r.err, words[i]) != NULL,
                "%s: the output lacks '%s'", tag, words[i]);
  for (int i = 0; absent && absent[i]; ++i)
    TEST_ASSERT(strstr(r.out, absent[i]) == NULL && strstr(r.err, absent[i]) == NULL,
                "%s: the output says '%s'", tag, absent[i]);
  if (qp_test_failures != before)
    fprintf(stderr, "  --- stdout ---\n%s  --- stderr ---\n%s  ---\n", r.out, r.err);
  else
    printf("%s: ok: %s", tag, status ? r.err : "(exit 0)\n");
  qp_cli_free(&r);
}

int main(int argc, char **argv) {
  int setup = qp_cli_setup(argc, argv, "test_sizes_cli", WORK_DIR, qmlpipe);
  if (setup != 0) return setup;
  const int input = qp_err_exit_status(QP_ERR_INPUT), budget = qp_err_exit_status(QP_ERR_BUDGET);
  const char *never[] = {": fits", NULL};

  /* 1. The case, pixel-direct: C alone is n_pix^2 x 8 = 1.8e19 bytes. */
  qp_test_write_text("huge_pixel.yaml",
                     "noise: {variance: 1.0}\nlmax: 128\npath: pixel_direct\n"
                     "dimensions: {n_pix: 1518500250, lmax_signal: 128, lmax: 128, n_bins: 10}\n"
                     "memory: {host_limit: 100GiB}\n");
  const char *huge_words[] = {"'C'", "n_pix^2 x 8", "n_pix=1518500250", "2^56", NULL};
  const char *plan_pixel[] = {"plan", "huge_pixel.yaml", NULL};
  expect("plan_huge_pixel", plan_pixel, input, huge_words, never);
  const char *budget_pixel[] = {"budget", "huge_pixel.yaml", NULL};
  expect("budget_huge_pixel", budget_pixel, input, huge_words, never);
  /* Sized for 4 ranks: each rank's share of C fits 64 bits, the products' did not. */
  const char *ranks_pixel[] = {"plan", "huge_pixel.yaml", "--ranks", "4", "--ranks-per-node", "4",
                               NULL};
  expect("plan_huge_pixel_ranks", ranks_pixel, input, huge_words, never);

  /* 2. The same with path auto: the n_pix^2 routes cannot be sized; SMW can (V is
   *    n_pix n_modes x 8 = 188 TiB), and is refused against the limit. */
  qp_test_write_text("huge_auto.yaml",
                     "noise: {variance: 1.0}\nlmax: 128\n"
                     "dimensions: {n_pix: 1518500250, lmax_signal: 128, lmax: 128, n_bins: 10}\n"
                     "memory: {host_limit: 100GiB}\n");
  const char *auto_words[] = {"exceeds memory.host_limit", "'V'", NULL};
  const char *plan_auto[] = {"plan", "huge_auto.yaml", NULL};
  expect("plan_huge_auto", plan_auto, budget, auto_words, never);
  const char *budget_auto[] = {"budget", "huge_auto.yaml", NULL};
  expect("budget_huge_auto", budget_auto, budget, auto_words, never);
  const char *reason[] = {"pixel_direct: cannot be sized", "'C'", NULL};
  expect("budget_huge_auto_reason", budget_auto, budget, reason, never);

  /* 3. 2e9 maps of n_pix 2e9, through the harmonic route: n_pix n_maps x 8 = 3.2e19 bytes
   *    of maps, which no rank holds: they are read a batch at a time (the default batch, 7
   *    here); SMW is sized, and refused against the limit. */
  qp_test_write_text("huge_maps.yaml",
                     "noise: {variance: 1.0}\nlmax: 10\npath: harmonic\n"
                     "dimensions: {n_pix: 2000000000, lmax: 10, n_bins: 2, n_maps: 2000000000}\n"
                     "memory: {host_limit: 100GiB}\n");
  const char *maps_words[] = {"maps read in batches of 7 of 2000000000",
                              "exceeds memory.host_limit", "'V'", NULL};
  const char *plan_maps[] = {"plan", "huge_maps.yaml", NULL};
  expect("plan_huge_maps", plan_maps, budget, maps_words, never);

  /* 4. Dimensions whose counts overflowed before any byte was counted. */
  qp_test_write_text("huge_nside.yaml",
                     "noise: {variance: 1.0}\nlmax: 128\n"
                     "dimensions: {n_pix: 1000, lmax: 128, n_bins: 10, nside: 1000000000}\n");
  const char *nside_words[] = {"huge_nside.yaml", "dimensions.nside", "1000000000", NULL};
  const char *nside_absent[] = {"-64467", NULL};
  const char *plan_nside[] = {"plan", "huge_nside.yaml", NULL};
  expect("plan_huge_nside", plan_nside, input, nside_words, nside_absent);
  qp_test_write_text("huge_lmax.yaml", "noise: {variance: 1.0}\nlmax: 2000000000\n"
                                       "dimensions: {n_pix: 1000, lmax: 2000000000, n_bins: 10}\n");
  const char *lmax_words[] = {"huge_lmax.yaml", "lmax", "2000000000", NULL};
  const char *lmax_absent[] = {"-1946474499", NULL};
  const char *plan_lmax[] = {"plan", "huge_lmax.yaml", NULL};
  expect("plan_huge_lmax", plan_lmax, input, lmax_words, lmax_absent);
  qp_test_write_text("huge_bins.yaml",
                     "noise: {variance: 1.0}\nfields: TQU\nspectra: [TT, EE, BB, TE, TB, EB]\n"
                     "lmax: 100\ndimensions: {n_pix: 999, lmax: 100, n_bins: 2000000000}\n");
  const char *bins_words[] = {"huge_bins.yaml", "dimensions.n_bins", "2000000000", NULL};
  const char *bins_absent[] = {"-884901888", NULL};
  const char *plan_bins[] = {"plan", "huge_bins.yaml", NULL};
  expect("plan_huge_bins", plan_bins, input, bins_words, bins_absent);

  /* 5. Byte sizes in the config and on the command line beyond 64 bits. */
  qp_test_write_text("huge_limit.yaml", "noise: {variance: 1.0}\nlmax: 10\n"
                                        "dimensions: {n_pix: 2000, lmax: 10, n_bins: 2}\n"
                                        "memory: {host_limit: 99999999999TiB}\n");
  const char *limit_words[] = {"huge_limit.yaml", "line 4", "memory.host_limit", "99999999999TiB",
                               NULL};
  const char *plan_limit[] = {"plan", "huge_limit.yaml", NULL};
  expect("plan_huge_limit", plan_limit, input, limit_words, never);
  qp_test_write_text("small.yaml", "noise: {variance: 1.0}\nlmax: 10\n"
                                   "dimensions: {n_pix: 2000, lmax: 10, n_bins: 2}\n");
  const char *mem_words[] = {"--mem-per-node", "99999999999TiB", NULL};
  const char *plan_mem[] = {"plan",           "small.yaml",     "--ranks", "2",
                            "--mem-per-node", "99999999999TiB", NULL};
  expect("plan_huge_mem_per_node", plan_mem, 2, mem_words, never);

  /* 6. Sizing options that wrapped in int: 4294967300 ranks were planned as 4, a 65536 x 65536
   *    grid as no grid at all. */
  const char *ranks_words[] = {"--ranks", "4294967300", NULL};
  const char *plan_ranks[] = {"plan", "small.yaml", "--ranks", "4294967300", NULL};
  expect("plan_ranks_wrap", plan_ranks, 2, ranks_words, NULL);
  const char *budget_ranks[] = {"budget", "small.yaml", "--ranks", "4294967300", NULL};
  expect("budget_ranks_wrap", budget_ranks, 2, ranks_words, NULL);
  const char *grid_words[] = {"--grid", "65536x65536", NULL};
  const char *plan_grid[] = {"plan", "small.yaml", "--grid", "65536x65536", NULL};
  expect("plan_grid_wrap", plan_grid, 2, grid_words, NULL);
  const char *per_node_words[] = {"--ranks-per-node", "4294967297", NULL};
  const char *plan_per_node[] = {"plan",       "small.yaml", "--ranks", "4", "--ranks-per-node",
                                 "4294967297", NULL};
  expect("plan_per_node_wrap", plan_per_node, 2, per_node_words, NULL);

  /* 7. Per-node sums: 4 ranks of a node hold 4 times a rank's peak, in exact bytes. */
  const char *node_words[] = {"largest node (4 ranks per node)", "the largest node needs", NULL};
  qp_test_write_text("node.yaml", "noise: {variance: 1.0}\nlmax: 10\npath: pixel_direct\n"
                                  "dimensions: {n_pix: 40000, lmax: 10, n_bins: 2}\n");
  const char *plan_node[] = {"plan", "node.yaml",      "--ranks", "4", "--ranks-per-node",
                             "4",    "--mem-per-node", "20GiB",   NULL};
  expect("plan_node_sum", plan_node, budget, node_words, NULL);

  /* 8. simulate: --nside beyond HEALPix's 2^29 (12 nside^2 overflowed int64), and maps of
   *    2^29 whose values overflow int64 together. */
  const char *sim_nside_words[] = {"--nside", "1e+12", NULL};
  const char *sim_nside[] = {"simulate", "--cls", "tiny_cls.txt", "--nside", "1e12", NULL};
  expect("simulate_huge_nside", sim_nside, 2, sim_nside_words, NULL);
  qp_test_write_text("tiny_cls.txt", "0 0 0 0 0\n1 0 0 0 0\n2 1 1 1 0\n");
  const char *sim_maps_words[] = {"100 map(s)", "nside 536870912", "2^63", NULL};
  const char *sim_maps[] = {"simulate", "--cls", "tiny_cls.txt", "--nside", "536870912",
                            "--n-maps", "100",   "--out",        "tiny",    NULL};
  expect("simulate_huge_maps", sim_maps, input, sim_maps_words, NULL);

  /* 9. Every option value is taken whole or refused (exit 2, the option and the value named):
   *    getopt_long and the strict parsers of cli/cmd_args.h, in every command. A value that
   *    was read in part ("abc" as 0 ranks, "12abc" as 12) or unchecked (a negative seed). */
  static const struct {
    const char *tag;
    const char *args[8];
    const char *words[3];
  } refused[] = {
      {"plan_ranks_abc", {"plan", "small.yaml", "--ranks", "abc"}, {"--ranks", "'abc'"}},
      {"plan_ranks_real", {"plan", "small.yaml", "--ranks", "3.5"}, {"--ranks", "'3.5'"}},
      {"plan_ranks_1e3", {"plan", "small.yaml", "--ranks", "1e3"}, {"--ranks", "(1000)"}},
      {"plan_ranks_equals", {"plan", "small.yaml", "--ranks=12abc"}, {"--ranks", "'12abc'"}},
      {"plan_grid_3d", {"plan", "small.yaml", "--grid", "2x2x2"}, {"--grid", "'2x2x2'"}},
      {"plan_grid_zero", {"plan", "small.yaml", "--grid", "0x4"}, {"--grid rows", "'0'"}},
      {"plan_block_negative",
       {"plan", "small.yaml", "--ranks", "4", "--block", "-1"},
       {"--block", "'-1'"}},
      {"plan_mem_unit",
       {"plan", "small.yaml", "--ranks", "2", "--mem-per-node", "12XB"},
       {"--mem-per-node", "'12XB'"}},
      {"plan_nodes_junk",
       {"plan", "small.yaml", "--ranks", "2", "--nodes", "1x"},
       {"--nodes", "'1x'"}},
      {"plan_missing_value", {"plan", "small.yaml", "--ranks"}, {"--ranks needs a value"}},
      {"plan_unknown",
       {"plan", "small.yaml", "--rank-count", "2"},
       {"unknown option '--rank-count'"}},
      {"plan_flag_value", {"plan", "small.yaml", "--json=yes"}, {"'--json=yes' takes no value"}},
      {"budget_ranks_junk", {"budget", "small.yaml", "--ranks", "12abc"}, {"--ranks", "'12abc'"}},
      {"run_grid_3d", {"run", "small.yaml", "--grid", "2x2x2"}, {"--grid", "'2x2x2'"}},
      {"run_grid_zero", {"run", "small.yaml", "--grid", "0x4"}, {"--grid rows", "'0'"}},
      {"run_block_negative", {"run", "small.yaml", "--block", "-1"}, {"--block", "'-1'"}},
      {"run_block_real", {"run", "small.yaml", "--block", "3.5"}, {"--block", "'3.5'"}},
      {"run_checkpoint_missing",
       {"run", "small.yaml", "--checkpoint"},
       {"--checkpoint needs a directory"}},
      {"simulate_nside_real",
       {"simulate", "--cls", "tiny_cls.txt", "--nside", "16.0"},
       {"--nside", "'16.0'"}},
      {"simulate_seed_negative",
       {"simulate", "--cls", "tiny_cls.txt", "--nside", "4", "--seed", "-1"},
       {"--seed", "'-1'"}},
      {"simulate_noise_negative",
       {"simulate", "--cls", "tiny_cls.txt", "--nside", "4", "--noise-variance", "-1"},
       {"--noise-variance", "'-1'"}},
      {"simulate_cut_range",
       {"simulate", "--cls", "tiny_cls.txt", "--nside", "4", "--galactic-cut", "91"},
       {"--galactic-cut", "'91'"}},
      {"simulate_beam_nan",
       {"simulate", "--cls", "tiny_cls.txt", "--nside", "4", "--beam-fwhm", "nan"},
       {"--beam-fwhm", "'nan'"}},
      {"validate_tolerance_negative",
       {"validate", "--tolerance", "-1", "no.h5"},
       {"--tolerance", "'-1'"}},
      {"validate_min_bytes_unit",
       {"validate", "--min-bytes", "12XB", "no.h5"},
       {"--min-bytes", "'12XB'"}},
      {"calibrate_size_junk", {"calibrate", "--size", "12abc"}, {"--size", "'12abc'"}},
      {"report_ranks_value", {"report", "--ranks=2", "no.h5"}, {"'--ranks=2' takes no value"}},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i)
    expect(refused[i].tag, refused[i].args, 2, refused[i].words, never);
  /* Options after the config, as the README writes them, also under POSIXLY_CORRECT (where
   * getopt_long would stop at the config and take '--ranks' for a second config). */
  setenv("POSIXLY_CORRECT", "1", 1);
  const char *posix_args[] = {"plan", "small.yaml", "--ranks", "abc", NULL};
  const char *posix_words[] = {"--ranks", "'abc'", NULL};
  expect("plan_posixly_correct", posix_args, 2, posix_words, never);
  const char *posix_ok[] = {"plan", "small.yaml", "--ranks", "4", "--grid", "2x2", NULL};
  const char *grid_2x2[] = {"grid 2 x 2", NULL};
  expect("plan_posixly_correct_ok", posix_ok, 0, grid_2x2, NULL);
  unsetenv("POSIXLY_CORRECT");

  if (qp_test_failures == 0) qp_cli_remove_files(".");
  return TEST_RETURN();
}
