/* cmd_validate.c: `qmlpipe validate [--tolerance F] [--min-bytes B] FILE.h5...`: the memory
 * model checked against what runs measured.
 *
 * For every results file and every stage group under its /budget (report_h5.h), two
 * comparisons, both above the run's baseline RSS (/budget baseline_rss_bytes, taken after the
 * BLAS warm-up, before the first stage):
 *
 *   peak:       predicted_peak_bytes       against rss_peak_bytes - baseline (VmHWM of the stage)
 *   persistent: predicted_persistent_bytes against rss_end_bytes  - baseline (VmRSS at its end)
 *
 * each as the relative error (measured - predicted) / measured (positive: the model predicted
 * too little). And per term of the stage's "terms" dataset, predicted_bytes against
 * tracked_peak_bytes, which must be equal (the allocator tracked exactly what the model says).
 *
 * A stage is judged when the model knows it and its predicted peak is at least --min-bytes;
 * its persistent comparison only when the predicted persistent bytes are too; its peak
 * comparison only when VmHWM was reset at its start (else the figure is the process's peak so
 * far, not the stage's). Below that size the few MiB that the C library, OpenBLAS and HDF5
 * map and unmap on their own dominate the difference. Term drift is judged in every stage the
 * model knows, whatever its size: it is an exact comparison. */
#include <hdf5.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "budget.h"
#include "cmd_args.h"
#include "commands.h"
#include "config.h"
#include "h5_attr.h"
#include "h5_error.h"
#include "qp_error.h"
#include "results_path.h"
#include "validate_figures.h"
#include "validate_sacct.h"
#include "validate_set.h"

static void qp_validate_usage(FILE *out) {
  fprintf(out,
          "usage: qmlpipe validate [--tolerance F] [--min-bytes B] RESULTS.h5|CONFIG.yaml...\n"
          "       qmlpipe validate RESULTS.h5 --sacct FILE [--cgroup-peak BYTES|FILE] [...]\n"
          "  Checks the memory model against what the runs measured. For every file and every\n"
          "  stage under /budget, above the run's baseline RSS (after warm-up):\n"
          "    peak        predicted_peak_bytes against VmHWM of the stage - baseline\n"
          "    persistent  predicted_persistent_bytes against VmRSS at its end - baseline\n"
          "  each as the relative error (measured - predicted) / measured, and per term whether\n"
          "  the tracked bytes equal the predicted ones (drift). Stages a run resumed from a\n"
          "  checkpoint (run --resume) are shown but not judged: they read the checkpoint.\n"
          "  Prints a table, the error distribution over the judged stages and which stage of\n"
          "  which file failed.\n"
          "  A CONFIG.yaml (.yaml or .yml) stands for the results file of its 'output'\n"
          "  (relative to the config's directory); other paths are results files.\n"
          "  --tolerance F   largest |relative error| accepted, a fraction from 0 to 1e6\n"
          "                  (default 0.02)\n"
          "  --min-bytes B   stages whose predicted peak is below B are shown but not judged\n"
          "                  (library noise dominates); persistent comparisons likewise when\n"
          "                  the predicted persistent bytes are below B (default 16MiB; units\n"
          "                  as memory.host_limit: KiB, MiB, GiB, kB, MB, GB or bytes)\n"
          "  --sacct FILE    also compare with Slurm's accounting of the job that wrote the\n"
          "                  (one) results file: FILE = sacct -j JOBID --parsable2 --noconvert\n"
          "                  -o JobID,JobName,State,ExitCode,MaxRSS,MaxRSSTask,MaxRSSNode,NTasks,\n"
          "                  NNodes,ReqMem (any column order; JobID, State, MaxRSS needed). The\n"
          "                  largest rank's predicted peak (stage peak + overhead) against the\n"
          "                  MaxRSS of the srun step (JOB.N, the largest); every line must be\n"
          "                  COMPLETED (docs/slurm.md)\n"
          "                  Nodes are the hosts the ranks recorded (/budget/ranks/host;\n"
          "                  older files: blocks of ranks_per_node, said in a note)\n"
          "  --sacct-gather cgroup|linux  overrides Slurm's JobAcctGatherType as the run\n"
          "                  recorded it (/budget slurm_jobacct_gather, from the job's\n"
          "                  slurm.conf; cgroup when not recorded): cgroup counts a task's\n"
          "                  anonymous memory in MaxRSS, so the rank's prediction drops its\n"
          "                  baseline's file-backed and shared pages; linux counts its RSS\n"
          "  --cgroup-peak BYTES|FILE  the job cgroup's peak (memory.peak, v1\n"
          "                  memory.max_usage_in_bytes), or a file of 'job step bytes' or\n"
          "                  'job step node bytes' lines: compared with the node's predicted\n"
          "                  peak (its ranks summed), each node with its own where lines name\n"
          "                  it, else the largest node with the largest peak\n"
          "  -h, --help      print this help\n"
          "  Exit status: 0 when every judged comparison is within the tolerance and no term\n"
          "  drifts; %d when any is not, or a job step ran OUT_OF_MEMORY; %d when a file cannot\n"
          "  be read; %d when the sacct output is malformed, lacks an srun step, or a step is\n"
          "  not COMPLETED (FAILED, CANCELLED, TIMEOUT, RUNNING: nothing to validate); %d when\n"
          "  sacct's MaxRSS of a multi-node step is below what a rank on another node than\n"
          "  MaxRSSNode measured itself under jobacct_gather/cgroup (Slurm counted the first\n"
          "  node only: the figure neither passes nor fails the model; docs/slurm.md); 2 on\n"
          "  bad usage.\n",
          qp_err_exit_status(QP_ERR_BUDGET), qp_err_exit_status(QP_ERR_IO),
          qp_err_exit_status(QP_ERR_INPUT), qp_err_exit_status(QP_ERR_UNSUPPORTED));
}

/* ---- the command ---- */

enum {
  QP_VAL_TOLERANCE = QP_CMD_OPTION_FIRST,
  QP_VAL_MIN_BYTES,
  QP_VAL_SACCT,
  QP_VAL_SACCT_GATHER,
  QP_VAL_CGROUP_PEAK
};
/* The largest --tolerance: a relative error of 10^6 accepts anything a run can measure. */
#define QP_VAL_TOLERANCE_MAX 1e6

/* What the command line asks of `validate`. */
typedef struct qp_validate_args {
  double tolerance, min_bytes;
  const char *sacct_path, *cgroup_arg;
  int gather; /* --sacct-gather: QP_SACCT_GATHER_*, -1 not given */
} qp_validate_args;

/* The options; 1 on a usage error (said on stderr), 0 to go on, -1 after --help. */
static int qp_validate_options(int argc, char **argv, qp_validate_args *a) {
  static const struct option options[] = {
      {"help", no_argument, NULL, 'h'},
      {"tolerance", required_argument, NULL, QP_VAL_TOLERANCE},
      {"min-bytes", required_argument, NULL, QP_VAL_MIN_BYTES},
      {"sacct", required_argument, NULL, QP_VAL_SACCT},
      {"sacct-gather", required_argument, NULL, QP_VAL_SACCT_GATHER},
      {"cgroup-peak", required_argument, NULL, QP_VAL_CGROUP_PEAK},
      {NULL, 0, NULL, 0}};
  int usage_error = 0;
  qp_cmd_getopt_begin();
  for (int c; !usage_error && (c = qp_cmd_getopt("validate", argc, argv, options, NULL)) != -1;) {
    switch (c) {
    case 'h': qp_validate_usage(stdout); return -1;
    case QP_VAL_TOLERANCE:
      usage_error =
          !qp_cmd_parse_real("--tolerance", optarg, 0, QP_VAL_TOLERANCE_MAX, &a->tolerance);
      break;
    case QP_VAL_MIN_BYTES:
      if (qp_parse_bytes(optarg, &a->min_bytes) != QP_OK) {
        fprintf(stderr, "qmlpipe validate: --min-bytes: %s\n", qp_error_message());
        qp_error_clear();
        usage_error = 1;
      }
      break;
    case QP_VAL_SACCT: a->sacct_path = optarg; break;
    case QP_VAL_CGROUP_PEAK: a->cgroup_arg = optarg; break;
    case QP_VAL_SACCT_GATHER:
      a->gather = strcmp(optarg, "linux") == 0    ? QP_SACCT_GATHER_LINUX
                  : strcmp(optarg, "cgroup") == 0 ? QP_SACCT_GATHER_CGROUP
                                                  : -1;
      if (a->gather < 0) {
        fprintf(stderr,
                "qmlpipe validate: --sacct-gather expects cgroup or linux (Slurm's "
                "JobAcctGatherType), got '%s'\n",
                optarg);
        usage_error = 1;
      }
      break;
    default: usage_error = 1; /* qp_cmd_getopt said why */
    }
  }
  return usage_error;
}

/* The results files (getopt_long put them last; "--" ends the options). A config stands for
 * its results file, resolved into resolved[]; one that cannot be resolved stops here (the
 * message names the config and the results file it names): its exit status, else 0, or 2 for
 * a usage error (said on stderr). */
static int qp_validate_files(int argc, char **argv, const qp_validate_args *a, qp_val_set *set,
                             char (*resolved)[QP_PATH_MAX]) {
  for (int i = optind; i < argc; ++i) {
    set->files[set->n_files].path = argv[i];
    if (qp_results_arg_is_config(argv[i])) {
      qp_err err = qp_results_path_resolve(argv[i], resolved[set->n_files]);
      if (err != QP_OK) {
        qp_error_print(stderr, 0);
        return qp_err_exit_status(err);
      }
      set->files[set->n_files].path = resolved[set->n_files];
    }
    ++set->n_files;
  }
  if (set->n_files == 0) {
    fprintf(stderr, "qmlpipe validate: no results file given\n");
    return 2;
  }
  if ((a->sacct_path || a->cgroup_arg) && set->n_files != 1) {
    fprintf(stderr,
            "qmlpipe validate: --sacct and --cgroup-peak need exactly one results file "
            "(the job's), got %d\n",
            set->n_files);
    return 2;
  }
  if (a->cgroup_arg && !a->sacct_path) {
    fprintf(stderr, "qmlpipe validate: --cgroup-peak needs --sacct\n");
    return 2;
  }
  return 0;
}

/* Every file is read, and an unreadable one reported, before the table is printed: the
 * first error (an I/O one preferred), QP_OK when all were read. */
static qp_err qp_validate_read_all(qp_val_set *set) {
  qp_h5_quiet q;
  qp_h5_quiet_begin(&q);
  qp_err io_err = QP_OK;
  for (int i = 0; i < set->n_files; ++i) {
    set->files[i].n_pix = -1;
    set->files[i].baseline = -1;
    const int n_stages = set->n_stages, n_drifts = set->n_drifts;
    qp_err err = qp_val_read_file(set, i);
    if (err != QP_OK) { /* none of its stages is shown */
      set->n_stages = n_stages;
      set->n_drifts = n_drifts;
      qp_error_print(stderr, 0);
      qp_error_clear();
      if (io_err == QP_OK || err == QP_ERR_IO) io_err = err;
    }
  }
  qp_h5_quiet_end(&q);
  return io_err;
}

/* The exit status from what failed: a file unread, the job's accounting, the comparisons. */
static int qp_validate_status(const qp_val_set *set, qp_err io_err, qp_err job_err, int n_failed,
                              int job_failed, double tolerance) {
  if (io_err != QP_OK) {
    int n_bad = 0;
    for (int i = 0; i < set->n_files; ++i)
      n_bad += !set->files[i].read_ok;
    fprintf(stderr, "qmlpipe validate: %d of %d file(s) could not be read (see above)\n", n_bad,
            set->n_files);
    return qp_err_exit_status(io_err);
  }
  if (job_err != QP_OK) return qp_err_exit_status(job_err);
  if (n_failed > 0 || job_failed > 0) {
    qp_error_set(QP_ERR_BUDGET, __FILE__, __LINE__, __func__,
                 "memory validation failed: %d stage(s) outside the tolerance %.4g%% or with "
                 "term drift, %d job comparison(s) failed (listed on stdout)",
                 n_failed, 100.0 * tolerance, job_failed);
    qp_error_print(stderr, 0);
    qp_error_clear();
    return qp_err_exit_status(QP_ERR_BUDGET);
  }
  return 0;
}

int qp_cmd_validate(int argc, char **argv) {
  qp_validate_args a = {.tolerance = 0.02, .min_bytes = 16.0 * 1048576.0, .gather = -1};
  qp_val_set set = {0};
  set.files = calloc((size_t)(argc > 1 ? argc : 1), sizeof *set.files);
  /* Results paths resolved from configs (qmlpipe validate CONFIG.yaml). */
  char(*resolved)[QP_PATH_MAX] = calloc((size_t)(argc > 1 ? argc : 1), sizeof *resolved);
  int status = 0;
  if (!set.files || !resolved) {
    fprintf(stderr, "qmlpipe validate: no memory\n");
    status = qp_err_exit_status(QP_ERR_NOMEM);
    goto done;
  }
  const int options = qp_validate_options(argc, argv, &a);
  if (options < 0) goto done; /* --help */
  status = options ? 2 : qp_validate_files(argc, argv, &a, &set, resolved);
  if (status == 2) qp_validate_usage(stderr);
  if (status) goto done;

  const qp_err io_err = qp_validate_read_all(&set);
  qp_val_short_names(&set);
  qp_val_judge(&set, a.tolerance, (int64_t)a.min_bytes);
  qp_val_print(stdout, &set, a.tolerance, (int64_t)a.min_bytes);
  const int n_failed = qp_val_print_failures(stdout, &set, a.tolerance);

  /* Slurm's accounting of the job: malformed, stepless or unfinished -> QP_ERR_INPUT. */
  qp_err job_err = QP_OK;
  int job_failed = 0;
  if (a.sacct_path && io_err == QP_OK) {
    const qp_sacct_request request = {set.files[0].path, a.sacct_path, a.cgroup_arg,
                                      a.gather,          a.tolerance,  &set};
    job_err = qp_validate_sacct(&request, stdout, &job_failed);
    if (job_err != QP_OK) {
      qp_error_print(stderr, 0);
      qp_error_clear();
    }
    fprintf(stdout, "%d job comparison(s) failed\n", job_failed);
  }
  fflush(stdout);
  status = qp_validate_status(&set, io_err, job_err, n_failed, job_failed, a.tolerance);
done:
  free(set.drifts);
  free(set.stages);
  free(set.files);
  free(resolved);
  return status;
}
