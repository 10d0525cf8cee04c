/* model.c: a program's predicted memory per stage and term (model.h). */
#include "model.h"

#include <string.h>

/* The rule of checked_size.h: every term (and the overhead) at most QP_SIZE_TERM_MAX, so that
 * the sums below (carried, peak, persistent, lifetime peak plus overhead) cannot wrap. */
_Static_assert(QP_TERMS_MAX + 1 <= ((size_t)1 << 63) / QP_SIZE_TERM_MAX,
               "QP_TERMS_MAX terms and the overhead of QP_SIZE_TERM_MAX each must sum below 2^63");

void qp_model_init(qp_model *m, int n_stages, const char *const *names) {
  memset(m, 0, sizeof *m);
  m->n_stages = n_stages < 0 ? 0 : n_stages > QP_MODEL_STAGES_MAX ? QP_MODEL_STAGES_MAX : n_stages;
  for (int s = 0; s < m->n_stages; ++s) m->stage_names[s] = names[s];
}

const char *qp_model_stage_name(const qp_model *m, int stage) {
  return stage >= 0 && stage < m->n_stages && m->stage_names[stage] ? m->stage_names[stage] : "?";
}

qp_model_bytes qp_model_vector_bytes(int64_t count, size_t elem) {
  qp_model_bytes b;
  qp_size_bytes(count, elem, &b.whole);
  b.here = b.whole;
  b.approx = (double)count * (double)elem;
  return b;
}

qp_model_bytes qp_model_bytes_times(size_t k, qp_model_bytes b) {
  qp_size_mul(k, b.here, &b.here);
  qp_size_mul(k, b.whole, &b.whole);
  b.approx *= (double)k;
  return b;
}

int qp_model_size_ok(qp_model *m, const char *name, qp_model_bytes b, const char *formula) {
  if (b.whole <= QP_SIZE_TERM_MAX) return 1;
  if (!m->oversize_term[0]) {
    snprintf(m->oversize_term, sizeof m->oversize_term, "%s", name);
    m->oversize_formula = formula;
    m->oversize_bytes = b.approx;
  }
  return 0;
}

qp_model_term *qp_model_add(qp_model *m, const char *name, qp_term_kind kind, qp_model_bytes bytes,
                            int from, int to, const char *formula) {
  static _Thread_local qp_model_term overflow;
  if (m->n_terms >= QP_TERMS_MAX) {
    m->too_many_terms = 1;
    return &overflow;
  }
  qp_model_term *t = &m->terms[m->n_terms++];
  memset(t, 0, sizeof *t);
  strncpy(t->name, name, sizeof t->name - 1);
  t->kind = kind;
  t->space = QP_SPACE_HOST;
  /* An oversize term counts 0 until the program refuses the model, so that no sum of this
   * model can wrap even before that. */
  t->bytes = qp_model_size_ok(m, name, bytes, formula) ? bytes.here : 0;
  t->stage_alloc = from;
  t->stage_free = to;
  t->phase_alloc = 0;
  t->phase_free = QP_PHASE_END;
  t->formula = formula;
  return t;
}

/* Alive in phase `phase` of `stage`. */
static int qp_term_alive_in(const qp_model_term *t, int stage, int phase) {
  if (!qp_model_term_alive(t, stage)) return 0;
  if (t->stage_alloc == stage && phase < t->phase_alloc) return 0;
  if (t->stage_free == stage && phase > t->phase_free) return 0;
  return 1;
}

int qp_model_term_alive(const qp_model_term *t, int stage) {
  return t->kind != QP_TERM_VIRTUAL && t->kind != QP_TERM_LIBRARY && t->stage_alloc <= stage &&
         stage <= t->stage_free;
}

/* The sums below add at most QP_TERMS_MAX terms of at most QP_SIZE_TERM_MAX bytes each
 * (qp_model_predict refuses a model with a larger one): they cannot wrap (checked_size.h). */

size_t qp_model_stage_library(const qp_model *m, int stage) {
  size_t sum = 0;
  for (int i = 0; i < m->n_terms; ++i)
    if (m->terms[i].kind == QP_TERM_LIBRARY && m->terms[i].stage_alloc == stage)
      sum += m->terms[i].bytes;
  return sum;
}

size_t qp_model_stage_carried_in(const qp_model *m, int stage, qp_space space) {
  size_t sum = 0;
  for (int i = 0; i < m->n_terms; ++i)
    if (m->terms[i].space == space && m->terms[i].stage_alloc < stage &&
        qp_model_term_alive(&m->terms[i], stage))
      sum += m->terms[i].bytes;
  return sum;
}

/* The stage's peak over its phases of the terms in `space`, or in either space (all). */
static size_t qp_model_stage_peak_of(const qp_model *m, int stage, qp_space space, int all) {
  int phases = 1;
  for (int i = 0; i < m->n_terms; ++i) {
    const qp_model_term *t = &m->terms[i];
    if (t->stage_alloc == stage && t->phase_alloc + 1 > phases) phases = t->phase_alloc + 1;
    if (t->stage_free == stage && t->phase_free < QP_PHASE_END && t->phase_free + 2 > phases)
      phases = t->phase_free + 2;
  }
  size_t peak = 0;
  for (int ph = 0; ph < phases; ++ph) {
    size_t sum = 0;
    for (int i = 0; i < m->n_terms; ++i)
      if ((all || m->terms[i].space == space) && qp_term_alive_in(&m->terms[i], stage, ph))
        sum += m->terms[i].bytes;
    if (sum > peak) peak = sum;
  }
  return peak;
}

size_t qp_model_stage_peak_in(const qp_model *m, int stage, qp_space space) {
  return qp_model_stage_peak_of(m, stage, space, 0);
}

size_t qp_model_stage_peak_both(const qp_model *m, int stage) {
  return qp_model_stage_peak_of(m, stage, QP_SPACE_HOST, 1);
}

/* Alive in `stage` and kept past it; terms freed in the last stage are results kept to the
 * end of the run. */
static int qp_model_kept_after(const qp_model *m, const qp_model_term *t, int stage) {
  const int kept = t->stage_free > stage ||
                   (t->stage_free == m->n_stages - 1 && t->kind == QP_TERM_PERSISTENT);
  return qp_model_term_alive(t, stage) && kept;
}

size_t qp_model_stage_persistent_in(const qp_model *m, int stage, qp_space space) {
  size_t sum = 0;
  for (int i = 0; i < m->n_terms; ++i)
    if (m->terms[i].space == space && qp_model_kept_after(m, &m->terms[i], stage))
      sum += m->terms[i].bytes;
  return sum;
}

size_t qp_model_stage_persistent_if(const qp_model *m, int stage,
                                    int (*which)(const qp_model_term *term)) {
  size_t sum = 0;
  for (int i = 0; i < m->n_terms; ++i)
    if (which(&m->terms[i]) && qp_model_kept_after(m, &m->terms[i], stage))
      sum += m->terms[i].bytes;
  return sum;
}

size_t qp_model_peak_in(const qp_model *m, qp_space space) {
  size_t peak = 0;
  for (int s = 0; s < m->n_stages; ++s) {
    size_t p = qp_model_stage_peak_in(m, s, space);
    if (p > peak) peak = p;
  }
  return peak;
}

size_t qp_model_stage_carried(const qp_model *m, int stage) {
  return qp_model_stage_carried_in(m, stage, QP_SPACE_HOST);
}
size_t qp_model_stage_peak(const qp_model *m, int stage) {
  return qp_model_stage_peak_in(m, stage, QP_SPACE_HOST);
}
size_t qp_model_stage_persistent(const qp_model *m, int stage) {
  return qp_model_stage_persistent_in(m, stage, QP_SPACE_HOST);
}
size_t qp_model_peak(const qp_model *m) { return qp_model_peak_in(m, QP_SPACE_HOST); }

int qp_model_has_device(const qp_model *m) {
  for (int i = 0; i < m->n_terms; ++i)
    if (m->terms[i].space == QP_SPACE_DEVICE) return 1;
  return 0;
}

const qp_model_term *qp_model_find(const qp_model *m, const char *name) {
  for (int i = 0; i < m->n_terms; ++i)
    if (strcmp(m->terms[i].name, name) == 0) return &m->terms[i];
  return NULL;
}

static void qp_print_bytes(FILE *out, size_t bytes) {
  fprintf(out, "%12.3f MiB %16zu B", (double)bytes / 1048576.0, bytes);
}

void qp_model_print_stages(FILE *out, const qp_model *m) {
  for (int stage = 0; stage < m->n_stages; ++stage) {
    fprintf(out, "[%s]\n  carried in  ", qp_model_stage_name(m, stage));
    qp_print_bytes(out, qp_model_stage_carried(m, stage));
    fprintf(out, "\n  peak        ");
    qp_print_bytes(out, qp_model_stage_peak(m, stage));
    if (qp_model_stage_library(m, stage)) {
      fprintf(out, "\n  + library   ");
      qp_print_bytes(out, qp_model_stage_library(m, stage));
    }
    fprintf(out, "\n  kept after  ");
    qp_print_bytes(out, qp_model_stage_persistent(m, stage));
    if (qp_model_has_device(m)) {
      fprintf(out, "\n  device peak ");
      qp_print_bytes(out, qp_model_stage_peak_in(m, stage, QP_SPACE_DEVICE));
    }
    fprintf(out, "\n");
    for (int i = 0; i < m->n_terms; ++i) {
      const qp_model_term *t = &m->terms[i];
      const int library = t->kind == QP_TERM_LIBRARY && t->stage_alloc == stage;
      if (!qp_model_term_alive(t, stage) && !library) continue;
      const char *role = t->stage_alloc < stage ? "carried" : qp_term_kind_name(t->kind);
      fprintf(out, "    %-16s %-10s%s ", t->name, role,
              t->space == QP_SPACE_DEVICE ? " [device]" : "");
      qp_print_bytes(out, t->bytes);
      fprintf(out, "  %s\n", t->formula);
    }
    fprintf(out, "\n");
  }
  fprintf(out, "overhead (program, libraries, BLAS buffers, HDF5; calibrated constant) ");
  qp_print_bytes(out, m->overhead_bytes);
  static const char *const part_names[3] = {"program and libraries", "BLAS buffers",
                                            "HDF5 library"};
  for (int i = 0; i < 3; ++i)
    if (m->overhead_parts[i]) {
      fprintf(out, "\n    overhead: %-24s ", part_names[i]);
      qp_print_bytes(out, m->overhead_parts[i]);
    }
  fprintf(out, "\nlifetime peak: tracked ");
  qp_print_bytes(out, qp_model_peak(m));
  fprintf(out, "\n               with overhead ");
  qp_print_bytes(out, qp_model_peak(m) + m->overhead_bytes);
  if (qp_model_has_device(m)) {
    fprintf(out, "\ndevice peak:   tracked ");
    qp_print_bytes(out, qp_model_peak_in(m, QP_SPACE_DEVICE));
  }
  fprintf(out, "\n");
}
