/* budget_check.h: the exactness check of the memory model against a run's stage records, for
 * the tests that run the stages (test_budget_exact, test_hostdev_stages). Header-only: its
 * checks count in the including test's failures (test_util.h). For every stage: the tracked
 * peak of each space equals the model's, every term the model predicts alive is tracked with
 * exactly its bytes and in its space (a term of 0 bytes, a matrix of which a rank holds no
 * entry, is not tracked), and every tracked term is predicted. */
#ifndef QP_TEST_BUDGET_CHECK_H
#define QP_TEST_BUDGET_CHECK_H

#include <string.h>

#include "memory_model.h"
#include "problem.h"
#include "test_util.h"

static const qp_stage_term *find_term(const qp_stage_record *r, const char *name) {
  for (int i = 0; i < r->n_terms; ++i)
    if (strcmp(r->terms[i].name, name) == 0) return &r->terms[i];
  return NULL;
}

static void qp_check_budget_exact(const qp_problem *p) {
  const qp_model *m = &p->plan->model;
  for (int s = 0; s < QP_STAGE_COUNT; ++s) {
    const char *name = qp_stage_name((qp_stage_id)s);
    const qp_stage_record *r = qp_stage_record_find(name);
    TEST_ASSERT(r != NULL, "no record of stage %s", name);
    if (!r) continue;
    size_t predicted = qp_model_stage_peak(m, (qp_stage_id)s);
    TEST_ASSERT(r->tracked_peak == predicted, "%s: tracked peak %zu B, predicted %zu B", name,
                r->tracked_peak, predicted);
    size_t device = qp_model_stage_peak_in(m, (qp_stage_id)s, QP_SPACE_DEVICE);
    TEST_ASSERT(r->device_tracked_peak == device, "%s: tracked device peak %zu B, predicted %zu B",
                name, r->device_tracked_peak, device);
    for (int i = 0; i < m->n_terms; ++i) {
      const qp_model_term *t = &m->terms[i];
      /* A rank that holds no entry of a matrix allocates nothing for it (alloc.c). */
      if (!qp_model_term_alive(t, (qp_stage_id)s) || t->bytes == 0) continue;
      /* A term that grows inside a stage (a backend's workspace, memory_model.c) has an entry
       * per size there: its tracked peak is the largest. */
      int smaller = 0;
      for (int k = 0; k < m->n_terms && !smaller; ++k)
        smaller = strcmp(m->terms[k].name, t->name) == 0 && m->terms[k].bytes > t->bytes &&
                  qp_model_term_alive(&m->terms[k], (qp_stage_id)s);
      if (smaller) continue;
      const qp_stage_term *st = find_term(r, t->name);
      TEST_ASSERT(st && st->peak == t->bytes && st->space == t->space,
                  "%s: term '%s' predicted %zu B (%s), tracked %zu B (%s)", name, t->name, t->bytes,
                  qp_space_name(t->space), st ? st->peak : 0, st ? qp_space_name(st->space) : "-");
    }
    for (int i = 0; i < r->n_terms; ++i) {
      const qp_stage_term *st = &r->terms[i];
      if (st->peak == 0) continue;
      /* A name may be declared once per stage (the host staging of a device run). */
      int predicted = 0;
      for (int k = 0; k < m->n_terms && !predicted; ++k)
        predicted = strcmp(m->terms[k].name, st->name) == 0 &&
                    qp_model_term_alive(&m->terms[k], (qp_stage_id)s);
      TEST_ASSERT(predicted, "%s: term '%s' (%zu B) is tracked but not predicted in this stage",
                  name, st->name, st->peak);
    }
  }
}

#endif
