/* validate_placement.h: private to validate/ (validate_sacct.c): a results file's per-rank and
 * per-node predictions in the terms of Slurm's accounting, the nodes being the hosts the ranks
 * recorded (/budget/ranks/host), and the gather type the run recorded. */
#ifndef QP_VALIDATE_PLACEMENT_H
#define QP_VALIDATE_PLACEMENT_H

#include <stdint.h>

#include "qp_error.h"
#include "report_ranks.h"
#include "validate_set.h"

/* One node of the job: the ranks that recorded its host. */
typedef struct qp_sacct_node {
  char host[QP_RANK_HOST_MAX];
  int ranks, first_rank;
  int64_t predicted; /* its ranks' peaks summed per stage, shared pages once; the largest stage */
  /* the largest of its ranks' own measured peaks (VmHWM, in MaxRSS's terms: less the shared
   * pages for jobacct_gather/cgroup), and that rank; -1 unknown */
  int64_t measured;
  int measured_rank;
} qp_sacct_node;

/* A results file's predictions in sacct's terms (qp_sacct_predict). */
typedef struct qp_sacct_prediction {
  int64_t rank, node; /* largest rank's and node's predicted peak, bytes */
  int64_t shared;     /* the shared baseline pages taken off the rank's figure */
  int shared_known;   /* the file records them (baseline_rss_shared_bytes) */
  int n_ranks, per_node;
  int by_host;          /* 1: nodes by /budget/ranks/host; 0: blocks of per_node (older files) */
  int n_nodes, node_at; /* the nodes, and the index of the largest */
  qp_sacct_node *nodes; /* malloc'd (qp_sacct_prediction_free) */
} qp_sacct_prediction;

/** The predictions of results file `path` (`set`: what validate read of it). `gather_anon`:
 *  MaxRSS counts anonymous memory only (jobacct_gather/cgroup). */
qp_err qp_sacct_predict(const char *path, const qp_val_set *set, int gather_anon,
                        qp_sacct_prediction *out);
void qp_sacct_prediction_free(qp_sacct_prediction *p);

enum { QP_GATHER_TEXT_MAX = 96, QP_GATHER_SOURCE_MAX = 640 };
/** The JobAcctGatherType the run recorded (/budget slurm_jobacct_gather, and where it read it:
 *  slurm_jobacct_gather_source); *found = 0 when the file has none (a run outside Slurm, or
 *  an older qmlpipe). */
qp_err qp_sacct_recorded_gather(const char *path, char type[QP_GATHER_TEXT_MAX],
                                char source[QP_GATHER_SOURCE_MAX], int *found);

#endif
