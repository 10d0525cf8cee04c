/* validate_placement.c: a results file's predictions in the terms of Slurm's accounting, per
 * rank and per node, the nodes being the hosts the ranks recorded (validate_placement.h).
 *
 * A node is the ranks that recorded its host name (/budget/ranks/host): placement may be
 * uneven (1 + 3 ranks on two nodes), so consecutive blocks of ranks_per_node (rank 0's node
 * size in files before the host record) would put ranks of one node into another's sum and
 * judge a right model wrong (issue 41: +59.6%). Files without the record keep the blocks. */
#include "validate_placement.h"

#include <stdlib.h>
#include <string.h>

#include "h5_attr.h"
#include "h5_error.h"
#include "report_open.h"

enum { QP_SACCT_STAGES = 4, QP_PLACEMENT_WHERE_MAX = 4096 + 320 };

/* The predicted peaks (tracked bytes, library buffers included) and library buffers of the
 * four stages, as `qmlpipe validate` read them from the file (validate_read.c); 0 for a stage
 * the run does not have. */
static void qp_sacct_stage_peaks(const qp_val_set *set, const char *const order[4], int64_t peak[4],
                                 int64_t library[4]) {
  for (int k = 0; k < QP_SACCT_STAGES; ++k) {
    peak[k] = library[k] = 0;
    for (int i = 0; i < set->n_stages; ++i) {
      const qp_val_stage *s = &set->stages[i];
      if (s->file != 0 || strcmp(s->name, order[k]) != 0) continue;
      peak[k] = s->pred_peak;
      library[k] = s->library;
    }
  }
}

void qp_sacct_prediction_free(qp_sacct_prediction *p) {
  free(p->nodes);
  p->nodes = NULL;
  p->n_nodes = 0;
}

/* Each rank's node: by host (the index of the first rank with its host), else the block of
 * per_node ranks it falls in. node_of[r] is an index into out->nodes, which it fills (host,
 * ranks, first_rank). Linear in ranks x nodes: a job of many thousands of nodes is far off. */
static void qp_sacct_group(const char (*hosts)[QP_RANK_HOST_MAX], int64_t nr, int per_node,
                           int *node_of, qp_sacct_prediction *out) {
  out->n_nodes = 0;
  for (int64_t r = 0; r < nr; ++r) {
    int k = -1;
    if (hosts) {
      for (int i = 0; i < out->n_nodes && k < 0; ++i)
        if (strcmp(out->nodes[i].host, hosts[r]) == 0) k = i;
    } else if (r % per_node != 0) {
      k = out->n_nodes - 1;
    }
    if (k < 0) {
      k = out->n_nodes++;
      qp_sacct_node *n = &out->nodes[k];
      memset(n, 0, sizeof *n);
      n->first_rank = (int)r;
      n->measured = -1;
      n->measured_rank = -1;
      if (hosts)
        snprintf(n->host, sizeof n->host, "%s", hosts[r]);
      else
        snprintf(n->host, sizeof n->host, "ranks %lld-%lld", (long long)r,
                 (long long)(r + per_node - 1 < nr - 1 ? r + per_node - 1 : nr - 1));
    }
    ++out->nodes[k].ranks;
    node_of[r] = k;
  }
}

/* Per node: the ranks' peaks less their shared pages summed per stage, plus the largest
 * rank's shared pages once (the ranks of a node map the same library files and MPI segments);
 * per rank: the largest stage peak (less its shared pages for cgroup's anonymous count), and
 * what it measured itself (VmHWM above the baseline, plus the baseline). */
static void qp_sacct_sum(const double *pred, const double *rss, const double *base,
                         const double *shared, int64_t nr, const int *node_of, int64_t overhead,
                         const int64_t lib[4], int gather_anon, qp_sacct_prediction *out) {
  int64_t *sum = calloc((size_t)out->n_nodes * (QP_SACCT_STAGES + 1), sizeof *sum);
  if (!sum) return; /* the caller checked the larger buffers: never in practice */
  int64_t *node_shared = sum + (size_t)out->n_nodes * QP_SACCT_STAGES;
  out->rank = 0;
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t mine = shared && shared[r] > 0 ? (int64_t)shared[r] : 0;
    const int64_t off = gather_anon ? mine : 0;
    qp_sacct_node *n = &out->nodes[node_of[r]];
    if (mine > node_shared[node_of[r]]) node_shared[node_of[r]] = mine;
    int64_t measured = -1;
    for (int st = 0; st < QP_SACCT_STAGES; ++st) {
      const int64_t peak = (int64_t)pred[r * QP_SACCT_STAGES + st] + overhead + lib[st];
      if (peak - off > out->rank) {
        out->rank = peak - off;
        out->shared = off;
      }
      sum[(size_t)node_of[r] * QP_SACCT_STAGES + st] += peak - mine;
      const double m = rss ? rss[r * QP_SACCT_STAGES + st] : -1;
      if (m > 0 && base && base[r] > 0 && (int64_t)(m + base[r]) - off > measured)
        measured = (int64_t)(m + base[r]) - off;
    }
    if (measured > n->measured) {
      n->measured = measured;
      n->measured_rank = (int)r;
    }
  }
  out->node = 0;
  for (int k = 0; k < out->n_nodes; ++k) {
    qp_sacct_node *n = &out->nodes[k];
    n->predicted = 0;
    for (int st = 0; st < QP_SACCT_STAGES; ++st) {
      const int64_t v = sum[(size_t)k * QP_SACCT_STAGES + st] + node_shared[k];
      if (v > n->predicted) n->predicted = v;
    }
    if (n->predicted > out->node) {
      out->node = n->predicted;
      out->node_at = k;
    }
  }
  free(sum);
}

/* /budget/ranks of an open file: the nodes and the sums above. */
static qp_err qp_sacct_predict_ranks(hid_t ranks, const char *where, int64_t overhead,
                                     const int64_t lib[4], int gather_anon,
                                     qp_sacct_prediction *out) {
  qp_err err = QP_OK;
  int64_t nr = 0, rpn = 0;
  QP_CALL(qp_h5_attr_i64(ranks, where, "n_ranks", 1, &nr));
  QP_CALL(qp_h5_attr_i64(ranks, where, "ranks_per_node", 1, &rpn));
  QP_CHECK(nr > 0 && nr <= (1 << 24) && rpn > 0 && rpn <= (1 << 24), QP_ERR_INPUT,
           "%s: n_ranks %lld, ranks_per_node %lld", where, (long long)nr, (long long)rpn);
  const size_t count = (size_t)nr * QP_SACCT_STAGES;
  double *v = malloc(sizeof *v * (2 * count + 2 * (size_t)nr));
  char(*hosts)[QP_RANK_HOST_MAX] = malloc((size_t)nr * sizeof *hosts);
  int *node_of = malloc((size_t)nr * sizeof *node_of);
  out->nodes = malloc((size_t)nr * sizeof *out->nodes);
  QP_CHECK_GOTO(v && hosts && node_of && out->nodes, QP_ERR_NOMEM, done,
                "%s: no memory for %lld ranks", where, (long long)nr);
  double *rss = v + count, *shared = rss + count, *base = shared + nr;
  int have_shared = 0, have_rss = 0, have_base = 0;
  QP_CALL_GOTO(qp_rank_field_read(ranks, where, "predicted_peak_bytes", v, (long long)count,
                                  QP_ERR_INPUT, NULL),
               done);
  QP_CALL_GOTO(qp_rank_field_read(ranks, where, "baseline_rss_shared_bytes", shared, nr, QP_OK,
                                  &have_shared),
               done);
  QP_CALL_GOTO(
      qp_rank_field_read(ranks, where, "rss_peak_bytes", rss, (long long)count, QP_OK, &have_rss),
      done);
  QP_CALL_GOTO(qp_rank_field_read(ranks, where, "baseline_rss_bytes", base, nr, QP_OK, &have_base),
               done);
  QP_CALL_GOTO(qp_rank_hosts_read(ranks, where, nr, hosts, &out->by_host), done);
  out->shared_known = have_shared;
  out->n_ranks = (int)nr;
  out->per_node = (int)rpn;
  qp_sacct_group(out->by_host ? (const char(*)[QP_RANK_HOST_MAX])hosts : NULL, nr, (int)rpn,
                 node_of, out);
  qp_sacct_sum(v, have_rss ? rss : NULL, have_base ? base : NULL, have_shared ? shared : NULL, nr,
               node_of, overhead, lib, gather_anon, out);
done:
  free(v);
  free(hosts);
  free(node_of);
  return err;
}

qp_err qp_sacct_predict(const char *path, const qp_val_set *set, int gather_anon,
                        qp_sacct_prediction *out) {
  static const char *const order[4] = {"covariance_setup", "basis_setup", "fisher_run",
                                       "spectra_run"};
  qp_err err = QP_OK;
  hid_t h5 = -1, budget = -1, ranks = -1;
  int64_t overhead = 0, shared = -1;
  memset(out, 0, sizeof *out);
  QP_CALL(qp_report_open(path, &h5, &budget));
  char where[QP_PLACEMENT_WHERE_MAX];
  snprintf(where, sizeof where, "%s: /budget", path);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "overhead_predicted_bytes", 1, &overhead), done);
  QP_CALL_GOTO(qp_h5_attr_i64(budget, where, "baseline_rss_shared_bytes", 0, &shared), done);
  int64_t peak[4], lib[4], best = 0;
  qp_sacct_stage_peaks(set, order, peak, lib);
  for (int k = 0; k < QP_SACCT_STAGES; ++k)
    if (peak[k] + overhead > best) best = peak[k] + overhead;
  out->shared = gather_anon && shared > 0 ? shared : 0;
  out->shared_known = shared >= 0;
  out->rank = best - out->shared;
  out->node = best;
  out->n_ranks = out->per_node = 1;
  htri_t has = H5Lexists(budget, "ranks", H5P_DEFAULT);
  QP_H5_GOTO(has, done, "%s/ranks", where);
  if (!has) goto done; /* one process: the rank is the node */
  snprintf(where, sizeof where, "%s: /budget/ranks", path);
  QP_H5_GOTO(ranks = H5Gopen2(budget, "ranks", H5P_DEFAULT), done, "%s", where);
  err = qp_sacct_predict_ranks(ranks, where, overhead, lib, gather_anon, out);
done:
  if (err != QP_OK) qp_sacct_prediction_free(out);
  if (ranks >= 0) H5Gclose(ranks);
  if (budget >= 0) H5Gclose(budget);
  if (h5 >= 0) H5Fclose(h5);
  return err;
}

qp_err qp_sacct_recorded_gather(const char *path, char type[QP_GATHER_TEXT_MAX],
                                char source[QP_GATHER_SOURCE_MAX], int *found) {
  hid_t h5 = -1, budget = -1;
  *found = 0;
  type[0] = source[0] = '\0';
  QP_CALL(qp_report_open(path, &h5, &budget));
  char where[QP_PLACEMENT_WHERE_MAX];
  snprintf(where, sizeof where, "%s: /budget", path);
  qp_err err = qp_h5_attr_string(budget, where, "slurm_jobacct_gather", type, QP_GATHER_TEXT_MAX);
  if (err == QP_OK)
    err = qp_h5_attr_string(budget, where, "slurm_jobacct_gather_source", source,
                            QP_GATHER_SOURCE_MAX);
  *found = err == QP_OK && type[0];
  H5Gclose(budget);
  H5Fclose(h5);
  return err;
}
