/* gather_type.c: JobAcctGatherType from the job's slurm.conf (gather_type.h). */
#include "gather_type.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "input_file.h"
#include "qp_error.h"

/* A slurm.conf is a few KiB; anything far larger is not one. */
#define QP_SLURM_CONF_MAX_BYTES ((int64_t)16 << 20)

/* "JobAcctGatherType=jobacct_gather/linux  # comment" (keys are case-insensitive, blanks
 * allowed around '='): the value into `type`, 1; else 0. */
static int qp_gather_line(char *line, char *type, size_t size) {
  char *hash = strchr(line, '#');
  if (hash) *hash = '\0';
  while (isspace((unsigned char)*line))
    ++line;
  static const char key[] = "JobAcctGatherType";
  if (strncasecmp(line, key, sizeof key - 1) != 0) return 0;
  char *v = line + sizeof key - 1;
  while (*v == ' ' || *v == '\t')
    ++v;
  if (*v++ != '=') return 0;
  while (*v == ' ' || *v == '\t')
    ++v;
  size_t n = strcspn(v, " \t\r\n");
  if (n == 0) return 0;
  snprintf(type, size, "%.*s", (int)n, v);
  return 1;
}

int qp_slurm_gather_find(qp_slurm_gather *g) {
  g->type[0] = g->source[0] = '\0';
  const char *job = getenv("SLURM_JOB_ID");
  if (!job || !job[0]) return 0;
  const char *env = getenv("SLURM_CONF");
  const char *path = env && env[0] ? env : "/etc/slurm/slurm.conf";
  FILE *in = NULL;
  /* A regular file only, opened without blocking (input_file.h): a FIFO would hold the run. */
  if (qp_input_fopen("slurm.conf", path, QP_SLURM_CONF_MAX_BYTES, &in) != QP_OK) {
    qp_error_clear();
    return 0;
  }
  char line[1024];
  while (fgets(line, sizeof line, in))
    if (qp_gather_line(line, g->type, sizeof g->type))
      snprintf(g->source, sizeof g->source, "JobAcctGatherType in %.560s%s", path,
               env && env[0] ? " (SLURM_CONF)" : "");
  fclose(in);
  return g->type[0] != '\0';
}
