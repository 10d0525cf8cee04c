/* job_limit.c: the smallest memory limit enforced on this process (job_limit.h). */
#include "job_limit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bytes_text.h"

/* A cgroup v1 limit at or above this is "unlimited" (the kernel writes PAGE_COUNTER_MAX pages,
 * 9223372036854771712 on 4 KiB pages; 2^62 leaves room for other page sizes). */
#define QP_CGROUP_V1_UNLIMITED 4611686018427387904.0

double qp_job_limit_margin(double bytes) {
  double m = QP_JOB_LIMIT_MARGIN_FRACTION * bytes;
  if (m < QP_JOB_LIMIT_MARGIN_MIN_BYTES) m = QP_JOB_LIMIT_MARGIN_MIN_BYTES;
  return m < bytes ? m : bytes;
}

/* Appends to a bounded text (cut silently at its size). */
static void qp_append(char *buf, size_t size, const char *fmt, ...) QP_PRINTF(3, 4);
static void qp_append(char *buf, size_t size, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, size - used, fmt, ap);
  va_end(ap);
}

/* A whole number of decimal digits (surrounding blanks allowed); 0 when `text` is not one. */
static int qp_parse_whole(const char *text, unsigned long long *v) {
  while (*text == ' ' || *text == '\t')
    ++text;
  if (*text < '0' || *text > '9') return 0;
  errno = 0;
  char *end = NULL;
  *v = strtoull(text, &end, 10);
  if (errno == ERANGE) return 0;
  while (*end == ' ' || *end == '\t' || *end == '\n')
    ++end;
  return *end == '\0';
}

/* One candidate limit: its usable bytes after the margin decide. */
typedef struct qp_candidate {
  double limit, margin;
  char source[640];
} qp_candidate;

static void qp_consider(qp_job_limit *best, const qp_candidate *c) {
  /* A limit smaller than its margin leaves nothing: 1 byte, so that the plan refuses. */
  double usable = c->limit - c->margin;
  if (usable < 1.0) usable = 1.0;
  if (best->usable > 0 && usable >= best->usable) return;
  best->limit = c->limit;
  best->margin = c->margin;
  best->usable = usable;
  best->from_job = 1;
  snprintf(best->source, sizeof best->source, "%s", c->source);
}

/* Reads a cgroup limit file: 1 with *bytes (0: "max" or v1's unlimited), 0 when it cannot be
 * opened, -1 when it holds something else (noted). */
static int qp_cgroup_read(const char *file, double *bytes, qp_job_limit *out) {
  FILE *f = fopen(file, "r");
  if (!f) return 0;
  char line[128] = "";
  int got = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  line[strcspn(line, "\n")] = '\0';
  unsigned long long v = 0;
  if (got && strcmp(line, "max") == 0) {
    *bytes = 0;
    return 1;
  }
  if (!got || !qp_parse_whole(line, &v)) {
    qp_append(out->notes, sizeof out->notes, "%s%s holds '%.40s', not a limit: skipped",
              out->notes[0] ? "; " : "", file, line);
    return -1;
  }
  *bytes = (double)v >= QP_CGROUP_V1_UNLIMITED ? 0.0 : (double)v;
  return 1;
}

/* Walks `mount``path` and its parents up to `mount`, reading `file` in each; the smallest
 * limit found goes to *c (c->limit 0 when none), divided among the node's ranks unless the
 * limiting directory is a per-task one ("task_*"). */
static void qp_cgroup_walk(const char *mount, const char *path, const char *file, const char *label,
                           int node_ranks, qp_job_limit *out, qp_candidate *c) {
  char rel[512];
  snprintf(rel, sizeof rel, "%s", path);
  size_t len = strlen(rel);
  while (len > 0 && rel[len - 1] == '/')
    rel[--len] = '\0';
  double smallest = 0;
  char where[600] = "";
  for (;;) {
    char full[1200];
    snprintf(full, sizeof full, "%s%s/%s", mount, rel, file);
    double bytes = 0;
    if (qp_cgroup_read(full, &bytes, out) == 1 && bytes > 0 &&
        (smallest == 0 || bytes < smallest)) {
      smallest = bytes;
      snprintf(where, sizeof where, "%s%s", mount, rel);
    }
    char *slash = strrchr(rel, '/');
    if (!slash) break;
    *slash = '\0';
  }
  c->limit = 0;
  if (smallest <= 0) return;
  const char *last = strrchr(where, '/');
  last = last ? last + 1 : where;
  const int per_task = strncmp(last, "task_", 5) == 0;
  const int shared = !per_task && node_ranks > 1;
  c->limit = shared ? smallest / node_ranks : smallest;
  c->margin = qp_job_limit_margin(c->limit);
  snprintf(c->source, sizeof c->source, "cgroup %s %s %s of %s", label, file,
           qp_bytes_readable(smallest).text, where);
  if (strcmp(where + strlen(mount), path) != 0 && path[0] && strcmp(path, "/") != 0)
    qp_append(c->source, sizeof c->source, " (walked up from %s%s)", mount, path);
  if (shared)
    qp_append(c->source, sizeof c->source, ", shared by %d ranks on this node", node_ranks);
}

/* The cgroup limits: v1's memory controller and v2's unified hierarchy (at the root, or under
 * "unified" on a hybrid mount), each from this process's line of /proc/self/cgroup. */
static void qp_cgroup_limits(const qp_job_env *env, int node_ranks, qp_job_limit *out) {
  const char *proc = env->proc_self_cgroup ? env->proc_self_cgroup : "/proc/self/cgroup";
  const char *root = env->cgroup_root ? env->cgroup_root : "/sys/fs/cgroup";
  FILE *f = fopen(proc, "r");
  if (!f) return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *controllers = strchr(line, ':');
    char *path = controllers ? strchr(controllers + 1, ':') : NULL;
    if (!path) continue;
    *path++ = '\0';
    *controllers++ = '\0'; /* line: the hierarchy's number alone */
    qp_candidate c = {0};
    char mount[600];
    if (strcmp(line, "0") == 0 && controllers[0] == '\0') {
      snprintf(mount, sizeof mount, "%s", root);
      qp_cgroup_walk(mount, path, "memory.max", "v2", node_ranks, out, &c);
      if (c.limit > 0) qp_consider(out, &c);
      snprintf(mount, sizeof mount, "%s/unified", root);
      qp_cgroup_walk(mount, path, "memory.max", "v2", node_ranks, out, &c);
      if (c.limit > 0) qp_consider(out, &c);
    } else {
      /* "memory" as one of the comma-separated controllers */
      int memory = 0;
      for (const char *tok = controllers; tok && *tok;
           tok = strchr(tok, ',') ? strchr(tok, ',') + 1 : NULL)
        if (strncmp(tok, "memory", 6) == 0 && (tok[6] == ',' || tok[6] == '\0')) memory = 1;
      if (!memory) continue;
      snprintf(mount, sizeof mount, "%s/memory", root);
      qp_cgroup_walk(mount, path, "memory.limit_in_bytes", "v1", node_ranks, out, &c);
      if (c.limit > 0) qp_consider(out, &c);
    }
  }
  fclose(f);
}

/* A Slurm variable: 0 and *v = 0 when unset; QP_ERR_INPUT when set but not a whole number. */
static qp_err qp_slurm_whole(const qp_job_env *env, const char *name, const char *unit,
                             unsigned long long *v) {
  const char *text = env->get_env(name);
  *v = 0;
  if (!text || !text[0]) return QP_OK;
  QP_CHECK(qp_parse_whole(text, v), QP_ERR_INPUT,
           "%s='%.60s' is not a whole number of %s: cannot tell the job's memory limit (set "
           "QMLPIPE_IGNORE_JOB_LIMIT=1 to plan to memory.host_limit alone)",
           name, text, unit);
  return QP_OK;
}

/* The ranks on this node from Slurm (0 when it does not say). */
static qp_err qp_slurm_node_tasks(const qp_job_env *env, int *tasks, const char **from) {
  unsigned long long v = 0;
  *tasks = 0;
  QP_CALL(qp_slurm_whole(env, "SLURM_NTASKS_PER_NODE", "tasks", &v));
  if (v > 0) {
    *tasks = v > 1000000 ? 1000000 : (int)v;
    *from = "SLURM_NTASKS_PER_NODE";
    return QP_OK;
  }
  const char *text = env->get_env("SLURM_TASKS_PER_NODE");
  if (!text || !text[0]) return QP_OK;
  char *end = NULL;
  errno = 0;
  unsigned long long first = (text[0] >= '0' && text[0] <= '9') ? strtoull(text, &end, 10) : 0;
  QP_CHECK(end && errno == 0 && first > 0 && (*end == '\0' || *end == '(' || *end == ','),
           QP_ERR_INPUT,
           "SLURM_TASKS_PER_NODE='%.60s' is not Slurm's list of tasks per node (e.g. "
           "'2(x3),1'): cannot tell how many ranks share this node's memory (set "
           "QMLPIPE_IGNORE_JOB_LIMIT=1 to plan to memory.host_limit alone)",
           text);
  *tasks = first > 1000000 ? 1000000 : (int)first;
  *from = "SLURM_TASKS_PER_NODE";
  return QP_OK;
}

double qp_address_space_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0) return -1.0;
  return rl.rlim_cur == RLIM_INFINITY ? 0.0 : (double)rl.rlim_cur;
}

/* VmSize - VmRSS from /proc/self/status, bytes (0 when unreadable), and Threads (1). */
static double qp_unresident(int *threads) {
  FILE *f = fopen("/proc/self/status", "r");
  *threads = 1;
  if (!f) return 0;
  char line[256];
  long long size = -1, rss = -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmSize:", 7) == 0) sscanf(line + 7, "%lld", &size);
    if (strncmp(line, "VmRSS:", 6) == 0) sscanf(line + 6, "%lld", &rss);
    if (strncmp(line, "Threads:", 8) == 0 && sscanf(line + 8, "%d", threads) != 1) *threads = 1;
  }
  fclose(f);
  if (*threads < 1) *threads = 1;
  return size >= 0 && rss >= 0 && size > rss ? (double)(size - rss) * 1024.0 : 0.0;
}

static const char *qp_getenv(const char *name) { return getenv(name); }

qp_err qp_job_limit_find(const qp_job_env *env_in, double configured, int node_ranks,
                         qp_job_limit *out) {
  qp_job_env env = env_in ? *env_in : (qp_job_env){NULL, NULL, NULL, -1, -1, 0, 0};
  if (!env.get_env) env.get_env = qp_getenv;
  memset(out, 0, sizeof *out);
  if (configured > 0) {
    out->limit = out->usable = configured;
    snprintf(out->source, sizeof out->source, "memory.host_limit");
  } else {
    snprintf(out->source, sizeof out->source, "none");
  }
  const char *ignore = env.get_env("QMLPIPE_IGNORE_JOB_LIMIT");
  if (ignore && ignore[0]) {
    QP_CHECK(strcmp(ignore, "0") == 0 || strcmp(ignore, "1") == 0, QP_ERR_INPUT,
             "QMLPIPE_IGNORE_JOB_LIMIT='%.60s': expected 1 (plan to memory.host_limit alone) or "
             "0",
             ignore);
    if (strcmp(ignore, "1") == 0) {
      snprintf(out->notes, sizeof out->notes,
               "QMLPIPE_IGNORE_JOB_LIMIT=1: cgroup, Slurm and RLIMIT_AS limits not read");
      return QP_OK;
    }
  }

  /* The ranks sharing this node's memory. */
  int slurm_tasks = 0;
  const char *tasks_from = "";
  QP_CALL(qp_slurm_node_tasks(&env, &slurm_tasks, &tasks_from));
  int ranks = node_ranks > 0 ? node_ranks : 1;
  if (slurm_tasks > ranks && !(env.node_ranks_exact && node_ranks > 0)) ranks = slurm_tasks;

  qp_cgroup_limits(&env, ranks, out);

  unsigned long long mib = 0;
  QP_CALL(qp_slurm_whole(&env, "SLURM_MEM_PER_NODE", "MiB", &mib));
  if (mib > 0) {
    qp_candidate c = {0};
    c.limit = (double)mib * 1048576.0 / ranks;
    c.margin = qp_job_limit_margin(c.limit);
    snprintf(c.source, sizeof c.source, "SLURM_MEM_PER_NODE=%llu (MiB)", mib);
    if (ranks > 1)
      qp_append(c.source, sizeof c.source, " shared by %d ranks on this node (%s)", ranks,
                slurm_tasks == ranks ? tasks_from : "MPI");
    qp_consider(out, &c);
  }
  QP_CALL(qp_slurm_whole(&env, "SLURM_MEM_PER_CPU", "MiB", &mib));
  if (mib > 0) {
    unsigned long long cpus = 0;
    QP_CALL(qp_slurm_whole(&env, "SLURM_CPUS_PER_TASK", "CPUs", &cpus));
    if (cpus == 0) cpus = 1;
    qp_candidate c = {0};
    c.limit = (double)mib * 1048576.0 * (double)cpus;
    c.margin = qp_job_limit_margin(c.limit);
    snprintf(c.source, sizeof c.source, "SLURM_MEM_PER_CPU=%llu (MiB) x %llu CPU(s) per task%s",
             mib, cpus, env.get_env("SLURM_CPUS_PER_TASK") ? " (SLURM_CPUS_PER_TASK)" : "");
    qp_consider(out, &c);
  }

  double as = env.rlimit_as;
  if (as == -1) as = qp_address_space_limit(); /* unreadable (-1): as none */
  if (as > 0) {
    int now = 1;
    const double measured = qp_unresident(&now);
    const double unresident = env.unresident == -1 ? measured : env.unresident;
    const int threads = env.threads > 0 ? env.threads : now;
    const double reserve = unresident + threads * QP_JOB_LIMIT_AS_PER_THREAD_BYTES;
    qp_candidate c = {0};
    c.limit = as > reserve ? as - reserve : 1.0;
    c.margin = qp_job_limit_margin(c.limit);
    snprintf(c.source, sizeof c.source,
             "RLIMIT_AS %s less %s of address space mapped but not resident and "
             "%d thread(s) x %.0f MiB reserved",
             qp_bytes_readable(as).text, qp_bytes_readable(unresident).text, threads,
             QP_JOB_LIMIT_AS_PER_THREAD_BYTES / 1048576.0);
    qp_consider(out, &c);
  }
  return QP_OK;
}

void qp_stack_limit_raise(void) {
  struct rlimit stack;
  if (getrlimit(RLIMIT_STACK, &stack) != 0 || stack.rlim_cur == RLIM_INFINITY ||
      (double)stack.rlim_cur >= QP_STACK_WANTED_BYTES)
    return;
  rlim_t wanted = (rlim_t)QP_STACK_WANTED_BYTES;
  if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < wanted) wanted = stack.rlim_max;
  stack.rlim_cur = wanted;
  (void)setrlimit(RLIMIT_STACK, &stack);
}

qp_err qp_stack_limit_check(void) {
  struct rlimit stack;
  if (getrlimit(RLIMIT_STACK, &stack) != 0 || stack.rlim_cur == RLIM_INFINITY) return QP_OK;
  QP_CHECK((double)stack.rlim_cur >= QP_STACK_NEEDED_BYTES, QP_ERR_BUDGET,
           "the stack limit is %llu KiB (`ulimit -s`, its hard limit %s): the BLAS library's "
           "threaded LU (the SMW route) keeps up to ~4 MiB of job tables on the calling "
           "thread's stack and would crash; raise it to %d KiB or more (`ulimit -s 8192`), or "
           "choose harmonic_method: projected or path: pixel_direct",
           (unsigned long long)(stack.rlim_cur / 1024),
           stack.rlim_max == RLIM_INFINITY ? "unlimited" : "no higher",
           (int)(QP_STACK_NEEDED_BYTES / 1024));
  return QP_OK;
}
