/* test_plan_gpus: `qmlpipe plan --gpus N` and a config with backend: cuda (one GPU per rank:
 * on several ranks cuda-dist, planned with each rank's device peak, SMW included: its LU is
 * the tiled one), backend: hostdev on several ranks (planned: each rank's device peak
 * printed), one GPU per rank in the job: `#SBATCH --gpus-per-node`, the ranks per node it
 * implies, the text and JSON
 * figures, a job without GPUs left without the line, and the refusals of --gpus that cannot
 * give one rank per GPU. Plans only (no data, no GPU, no Slurm): a `dimensions:` config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli_run.h"
#include "test_util.h"

static const char *qmlpipe;
static char text[1 << 16];

/* Runs qmlpipe with `args`, stdout and stderr into `text`; returns the exit status. */
static int run(const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s > plan_gpus_out.txt 2>&1", qmlpipe, args);
  int status = system(cmd);
  char *out = qp_cli_slurp("plan_gpus_out.txt");
  snprintf(text, sizeof text, "%s", out);
  free(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* 1 when `path` holds `needle`. */
static int file_has(const char *path, const char *needle) {
  char *all = qp_cli_slurp(path);
  const int found = strstr(all, needle) != NULL;
  free(all);
  return found;
}

static void write_config(const char *path, const char *backend) {
  FILE *f = fopen(path, "w");
  fprintf(f,
          "fields: T\nspectra: [TT]\nnoise: {variance: 1.0}\nlmax: 16\nbackend: %s\n"
          "dimensions: {n_pix: 600, n_modes: 289, lmax_signal: 16, lmax: 16, n_bins: 15}\n",
          backend);
  fclose(f);
}

/* `plan ARGS --sbatch SCRIPT --force` must pass and SCRIPT hold each of `lines` (NULL-ended). */
static void expect_script(const char *args, const char *script, const char *const *lines) {
  char full[512];
  snprintf(full, sizeof full, "plan %s --sbatch %s --force", args, script);
  TEST_ASSERT(run(full) == 0, "%s failed:\n%s", full, text);
  for (const char *const *l = lines; *l; ++l)
    TEST_ASSERT(file_has(script, *l), "%s: the script lacks '%s'", full, *l);
}

int main(int argc, char **argv) {
  TEST_ASSERT(argc == 2, "usage: test_plan_gpus QMLPIPE");
  if (argc != 2) return 1;
  qmlpipe = argv[1];
  write_config("gpus_cuda.yaml", "cuda");
  write_config("gpus_cpu.yaml", "cpu");

  /* backend cuda, one process: one GPU. */
  const char *one[] = {"#SBATCH --gpus-per-node=1\n", "#SBATCH --ntasks=1\n", NULL};
  expect_script("gpus_cuda.yaml", "gpus_one.sh", one);
  TEST_ASSERT(strstr(text, "--gpus-per-node=1") != NULL, "plan's text lacks the GPUs:\n%s", text);

  /* backend cuda with ranks: cuda-dist, each rank's part on its GPU, planned with the device
   * peaks (the tiled blocks among them); SMW weighed by `auto` and planned when asked for. */
  TEST_ASSERT(run("plan gpus_cuda.yaml --ranks 4 --ranks-per-node 2") == 0 &&
                  strstr(text, "largest device peak of a rank") &&
                  strstr(text, "harmonic (smw) ") && !strstr(text, "skipped"),
              "backend cuda on 4 ranks not planned as cuda-dist:\n%s", text);
  write_config("gpus_cuda_smw.yaml", "cuda\npath: harmonic\nharmonic_method: smw");
  TEST_ASSERT(run("plan gpus_cuda_smw.yaml --ranks 2") == 0 &&
                  strstr(text, "largest device peak of a rank"),
              "SMW with backend cuda on 2 ranks not planned:\n%s", text);
  TEST_ASSERT(run("plan gpus_cuda_smw.yaml") == 0, "SMW with backend cuda on one GPU:\n%s", text);
  /* backend hostdev with ranks: block-cyclic over the ranks' devices, planned; each rank's
   * device peak (its part of C and the products) is below the one-rank plan's. */
  write_config("gpus_hostdev.yaml", "hostdev");
  TEST_ASSERT(run("plan gpus_hostdev.yaml") == 0, "hostdev, one rank:\n%s", text);
  TEST_ASSERT(run("plan gpus_hostdev.yaml --ranks 2") == 0 && strstr(text, "device peak") &&
                  strstr(text, "largest device peak of a rank"),
              "backend hostdev on 2 ranks not planned with its device peaks:\n%s", text);
  printf("%s", text);
  const char *two[] = {"#SBATCH --gpus-per-node=2\n", "#SBATCH --ntasks-per-node=2\n", NULL};
  expect_script("gpus_cuda.yaml --ranks 2 --gpus 2", "gpus_two.sh", two);

  /* --gpus N: N ranks per node, whatever the backend; --nodes agrees. */
  const char *four[] = {"#SBATCH --gpus-per-node=4\n", "#SBATCH --nodes=2\n",
                        "#SBATCH --ntasks=8\n", "#SBATCH --ntasks-per-node=4\n", NULL};
  expect_script("gpus_cpu.yaml --ranks 8 --gpus 4", "gpus_four.sh", four);
  expect_script("gpus_cpu.yaml --ranks 8 --gpus 4 --nodes 2", "gpus_four.sh", four);
  expect_script("gpus_cpu.yaml --ranks 8 --gpus 4 --ranks-per-node 4", "gpus_four.sh", four);

  /* A cpu job without --gpus asks for none. */
  const char *none[] = {"#SBATCH --ntasks=1\n", NULL};
  expect_script("gpus_cpu.yaml", "gpus_none.sh", none);
  TEST_ASSERT(!file_has("gpus_none.sh", "--gpus-per-node") && !file_has("gpus_none.sh", "# gpus:"),
              "a cpu job asks for GPUs");
  TEST_ASSERT(strstr(text, "--gpus-per-node") == NULL, "plan's text of a cpu job names GPUs:\n%s",
              text);

  /* JSON: the figure, 0 without GPUs. */
  TEST_ASSERT(run("plan gpus_cpu.yaml --ranks 8 --gpus 4 --json") == 0, "--json failed:\n%s", text);
  TEST_ASSERT(strstr(text, "\"gpus_per_node\": 4") != NULL, "JSON lacks gpus_per_node 4:\n%s",
              text);
  TEST_ASSERT(run("plan gpus_cpu.yaml --json") == 0 && strstr(text, "\"gpus_per_node\": 0"),
              "JSON of a cpu job: gpus_per_node is not 0:\n%s", text);

  /* Refusals (usage, exit 2), each saying why. */
  const char *refused[] = {"gpus_cpu.yaml --gpus 4",
                           "gpus_cpu.yaml --ranks 8 --gpus 4 --ranks-per-node 2",
                           "gpus_cpu.yaml --ranks 2 --gpus 4"};
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; ++k) {
    char args[256];
    snprintf(args, sizeof args, "plan %s", refused[k]);
    TEST_ASSERT(run(args) == 2 && strstr(text, "one rank per GPU"),
                "%s: not refused as usage with its reason:\n%s", args, text);
  }
  TEST_ASSERT(run("plan gpus_cpu.yaml --ranks 8 --gpus 4 --nodes 4") == 2 &&
                  strstr(text, "--nodes 4 does not match"),
              "--nodes against --gpus not refused:\n%s", text);
  TEST_ASSERT(run("plan gpus_cpu.yaml --gpus 0") == 2, "--gpus 0 accepted:\n%s", text);
  TEST_ASSERT(run("plan --help") == 0 && strstr(text, "--gpus N"), "--help lacks --gpus");

  if (qp_test_failures == 0) printf("test_plan_gpus: all checks passed\n");
  return TEST_RETURN();
}
