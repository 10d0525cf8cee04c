/* test_job_limit: the sources of budget/job_limit.h read from a fake cgroup tree and a fake
 * environment: v1 walked up (the smallest ancestor decides), v1's "unlimited" value, v2's
 * "max", a hybrid mount's "unified" tree, missing and malformed files, a per-task cgroup not
 * divided, Slurm's variables (shared per node, per CPU, --mem=0, malformed -> QP_ERR_INPUT),
 * RLIMIT_AS less the unresident address space, the margin, memory.host_limit winning ties,
 * and QMLPIPE_IGNORE_JOB_LIMIT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job_limit.h"
#include "test_util.h"

#define ROOT "job_limit.d"
static const double mib = 1048576.0;

/* The fake environment: NAME=VALUE pairs, the last of a name counting. */
static const char *fake_env[16][2];
static const char *fake_getenv(const char *name) {
  const char *value = NULL;
  for (int i = 0; i < 16 && fake_env[i][0]; ++i)
    if (strcmp(fake_env[i][0], name) == 0) value = fake_env[i][1];
  return value;
}
static void env_set(int i, const char *name, const char *value) {
  fake_env[i][0] = name;
  fake_env[i][1] = value;
  fake_env[i + 1][0] = NULL;
}

static void write_file(const char *path, const char *text) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *s = dir + 1; *s; ++s)
    if (*s == '/') {
      *s = '\0';
      mkdir(dir, 0755);
      *s = '/';
    }
  FILE *f = fopen(path, "w");
  TEST_ASSERT(f, "cannot write %s", path);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static qp_job_env env_of(const char *proc) {
  return (qp_job_env){proc, ROOT "/sys", fake_getenv, 0, 0, 1, 0};
}

static int near(double a, double b) { return qp_test_within(fabs(a - b), 1.0); }

int main(void) {
  (void)system("rm -rf " ROOT);
  mkdir(ROOT, 0755);
  qp_job_limit l;
  env_set(0, "UNSET", "x");

  /* Nothing anywhere: no limit. */
  qp_job_env e = env_of(ROOT "/missing_cgroup");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(l.usable == 0 && l.limit == 0 && !l.from_job && strcmp(l.source, "none") == 0,
              "no source: usable %g, source '%s'", l.usable, l.source);
  TEST_OK(qp_job_limit_find(&e, 512 * mib, 1, &l));
  TEST_ASSERT(near(l.usable, 512 * mib) && !l.from_job &&
                  strcmp(l.source, "memory.host_limit") == 0,
              "host_limit only: usable %g, source '%s'", l.usable, l.source);

  /* v1: step_0 unlimited (the kernel's value), job_12 4 GiB, root unlimited; walked up. */
  write_file(ROOT "/proc_v1", "9:name=systemd:/\n4:memory:/slurm/uid_0/job_12/step_0\n0::/\n");
  write_file(ROOT "/sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
  write_file(ROOT "/sys/memory/slurm/uid_0/job_12/memory.limit_in_bytes", "4294967296\n");
  write_file(ROOT "/sys/memory/slurm/uid_0/job_12/step_0/memory.limit_in_bytes",
             "9223372036854771712\n");
  e = env_of(ROOT "/proc_v1");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(l.from_job && near(l.limit, 4096 * mib) && near(l.margin, 0.05 * 4096 * mib) &&
                  near(l.usable, 0.95 * 4096 * mib),
              "v1: limit %g margin %g usable %g", l.limit, l.margin, l.usable);
  TEST_ASSERT(strstr(l.source, "cgroup v1 memory.limit_in_bytes") && strstr(l.source, "job_12") &&
                  strstr(l.source, "walked up from") && !strstr(l.source, "shared"),
              "v1 source: '%s'", l.source);
  printf("v1: %s -> usable %.1f MiB\n", l.source, l.usable / mib);
  /* Two ranks on the node share the job cgroup; memory.host_limit smaller still wins. */
  TEST_OK(qp_job_limit_find(&e, 0, 2, &l));
  TEST_ASSERT(near(l.limit, 2048 * mib) && strstr(l.source, "shared by 2 ranks"),
              "v1 shared: limit %g source '%s'", l.limit, l.source);
  TEST_OK(qp_job_limit_find(&e, 1024 * mib, 2, &l));
  TEST_ASSERT(near(l.usable, 1024 * mib) && !l.from_job, "host_limit below the job: %g '%s'",
              l.usable, l.source);
  /* A per-task cgroup's limit is not divided. */
  write_file(ROOT "/proc_task", "4:memory:/slurm/job_3/step_0/task_1\n");
  write_file(ROOT "/sys/memory/slurm/job_3/step_0/task_1/memory.limit_in_bytes", "1073741824");
  e = env_of(ROOT "/proc_task");
  TEST_OK(qp_job_limit_find(&e, 0, 4, &l));
  TEST_ASSERT(near(l.limit, 1024 * mib) && !strstr(l.source, "shared"), "task_: %g '%s'", l.limit,
              l.source);
  /* Malformed content: skipped with a note; the walk goes on to the parent. */
  write_file(ROOT "/proc_bad", "4:cpu,memory:/a/b\n");
  write_file(ROOT "/sys/memory/a/b/memory.limit_in_bytes", "lots\n");
  write_file(ROOT "/sys/memory/a/memory.limit_in_bytes", "2147483648\n");
  e = env_of(ROOT "/proc_bad");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 2048 * mib) && strstr(l.notes, "lots"), "malformed v1: %g '%s'",
              l.limit, l.notes);

  /* v2: memory.max "max" at the leaf, a number above it; hybrid tree under "unified". */
  write_file(ROOT "/proc_v2", "0::/system.slice/slurmstepd.scope/job_7/step_1/user\n");
  write_file(ROOT "/sys/system.slice/slurmstepd.scope/job_7/step_1/user/memory.max", "max\n");
  write_file(ROOT "/sys/system.slice/slurmstepd.scope/job_7/memory.max", "805306368\n");
  e = env_of(ROOT "/proc_v2");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 768 * mib) && strstr(l.source, "cgroup v2 memory.max") &&
                  strstr(l.source, "job_7"),
              "v2: %g '%s'", l.limit, l.source);
  write_file(ROOT "/proc_hybrid", "0::/h\n");
  write_file(ROOT "/sys/unified/h/memory.max", "536870912\n");
  e = env_of(ROOT "/proc_hybrid");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 512 * mib) && strstr(l.source, "unified"), "hybrid v2: %g '%s'",
              l.limit, l.source);

  /* Slurm: per node over the node's tasks; per CPU x CPUs; the smallest wins. */
  e = env_of(ROOT "/missing_cgroup");
  env_set(0, "SLURM_MEM_PER_NODE", "4096");
  env_set(1, "SLURM_TASKS_PER_NODE", "2(x3),1");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 2048 * mib) && strstr(l.source, "SLURM_MEM_PER_NODE=4096") &&
                  strstr(l.source, "shared by 2 ranks") && strstr(l.source, "SLURM_TASKS_PER_NODE"),
              "per node: %g '%s'", l.limit, l.source);
  env_set(1, "SLURM_NTASKS_PER_NODE", "4");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 1024 * mib), "per node / 4: %g '%s'", l.limit, l.source);
  /* Under MPI the node's ranks are MPI's count (uneven placement: this node holds 1 of the
   * job's 1 + 3, whatever --ntasks-per-node and the first node's entry say). */
  e.node_ranks_exact = 1;
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 4096 * mib) && !strstr(l.source, "shared by"),
              "MPI's 1 rank on this node: %g '%s'", l.limit, l.source);
  TEST_OK(qp_job_limit_find(&e, 0, 3, &l));
  TEST_ASSERT(near(l.limit, 4096 * mib / 3) && strstr(l.source, "shared by 3 ranks") &&
                  strstr(l.source, "(MPI)"),
              "MPI's 3 ranks on this node: %g '%s'", l.limit, l.source);
  e.node_ranks_exact = 0;
  env_set(0, "SLURM_MEM_PER_CPU", "300");
  env_set(1, "SLURM_CPUS_PER_TASK", "2");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 600 * mib) && near(l.margin, 64 * mib) &&
                  strstr(l.source, "SLURM_MEM_PER_CPU=300") && strstr(l.source, "x 2 CPU"),
              "per cpu: %g margin %g '%s'", l.limit, l.margin, l.source);
  env_set(0, "SLURM_MEM_PER_NODE", "0"); /* --mem=0: the whole node, no limit */
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(l.usable == 0, "SLURM_MEM_PER_NODE=0 set a limit: %g '%s'", l.usable, l.source);
  const char *bad[][2] = {{"SLURM_MEM_PER_NODE", "4G"},       {"SLURM_MEM_PER_NODE", "-5"},
                          {"SLURM_MEM_PER_CPU", "12.5"},      {"SLURM_CPUS_PER_TASK", "two"},
                          {"SLURM_TASKS_PER_NODE", "(x2)"},   {"SLURM_NTASKS_PER_NODE", "4x"},
                          {"QMLPIPE_IGNORE_JOB_LIMIT", "yes"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    env_set(0, "SLURM_MEM_PER_CPU", "100");
    env_set(1, bad[i][0], bad[i][1]);
    EXPECT_ERROR(qp_job_limit_find(&e, 0, 1, &l), QP_ERR_INPUT, bad[i][0], bad[i][1]);
  }
  /* A limit below its own margin leaves 1 byte: the plan refuses, never "no limit". */
  env_set(0, "SLURM_MEM_PER_NODE", "10");
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(l.usable == 1.0 && l.from_job, "tiny limit: usable %g", l.usable);
  /* QMLPIPE_IGNORE_JOB_LIMIT=1: only memory.host_limit. */
  env_set(1, "QMLPIPE_IGNORE_JOB_LIMIT", "1");
  TEST_OK(qp_job_limit_find(&e, 256 * mib, 1, &l));
  TEST_ASSERT(near(l.usable, 256 * mib) && !l.from_job && strstr(l.notes, "IGNORE"),
              "ignore: %g '%s'", l.usable, l.notes);

  /* RLIMIT_AS less the unresident address space and 200 MiB per thread, then the margin. */
  env_set(0, "UNSET", "x");
  e.rlimit_as = 2048 * mib;
  e.unresident = 512 * mib;
  TEST_OK(qp_job_limit_find(&e, 0, 1, &l));
  TEST_ASSERT(near(l.limit, 1336 * mib) && near(l.usable, 0.95 * 1336 * mib) &&
                  strstr(l.source, "RLIMIT_AS"),
              "rlimit_as: %g '%s'", l.limit, l.source);
  /* The running process: whatever it finds, it finds without error. */
  TEST_OK(qp_job_limit_find(NULL, 0, 1, &l));
  printf("this process: usable %.1f MiB from %s%s%s\n", l.usable / mib, l.source,
         l.notes[0] ? "; " : "", l.notes);
  if (qp_test_failures == 0) (void)system("rm -rf " ROOT);
  return TEST_RETURN();
}
