/* test_stage_model: the generic memory model of budget/model.h, for a made-up program of three
 * stages ("load", "solve", "store") linked against budget/ alone: carried, peak (over phases),
 * persistent (results freed in the last stage are kept), library terms (outside the tracked
 * peak), a term beyond QP_SIZE_TERM_MAX (counted 0 and recorded), a full model (flagged), the
 * stage names, and the printed table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

enum { LOAD, SOLVE, STORE };
static const char *const names[3] = {"load", "solve", "store"};
static const size_t MiB = (size_t)1 << 20;

static qp_model_bytes mib(size_t n) { return qp_model_vector_bytes((int64_t)(n * MiB), 1); }

int main(void) {
  static qp_model m;
  qp_model_init(&m, 3, names);
  TEST_ASSERT(m.n_stages == 3 && strcmp(qp_model_stage_name(&m, SOLVE), "solve") == 0,
              "stage names");
  TEST_ASSERT(strcmp(qp_model_stage_name(&m, 3), "?") == 0, "a stage outside the model");
  /* load: input 10 (to solve), scratch 4 (transient);
   * solve: phase 0 matrix 20 (to store), phase 1 factor 8 (transient, from phase 1),
   *        input freed after phase 0; library panels 3;
   * store: result 2 (persistent, freed in the last stage: a result, kept). */
  qp_model_add(&m, "input", QP_TERM_PERSISTENT, mib(10), LOAD, SOLVE, "10 MiB")->phase_free = 0;
  qp_model_add(&m, "scratch", QP_TERM_TRANSIENT, mib(4), LOAD, LOAD, "4 MiB");
  qp_model_add(&m, "matrix", QP_TERM_PERSISTENT, mib(20), SOLVE, STORE, "20 MiB");
  qp_model_add(&m, "factor", QP_TERM_TRANSIENT, mib(8), SOLVE, SOLVE, "8 MiB")->phase_alloc = 1;
  qp_model_add(&m, "panels", QP_TERM_LIBRARY, mib(3), SOLVE, SOLVE, "3 MiB");
  qp_model_add(&m, "result", QP_TERM_PERSISTENT, mib(2), STORE, STORE, "2 MiB");

  TEST_ASSERT(qp_model_stage_peak(&m, LOAD) == 14 * MiB, "load peak %zu", qp_model_stage_peak(&m, LOAD));
  TEST_ASSERT(qp_model_stage_persistent(&m, LOAD) == 10 * MiB, "load persistent");
  /* solve: phase 0 input + matrix = 30, phase 1 matrix + factor = 28: the peak is 30, not 38. */
  TEST_ASSERT(qp_model_stage_carried(&m, SOLVE) == 10 * MiB, "solve carried");
  TEST_ASSERT(qp_model_stage_peak(&m, SOLVE) == 30 * MiB, "solve peak %zu (phases)",
              qp_model_stage_peak(&m, SOLVE));
  TEST_ASSERT(qp_model_stage_library(&m, SOLVE) == 3 * MiB, "solve library");
  TEST_ASSERT(qp_model_stage_persistent(&m, SOLVE) == 20 * MiB, "solve persistent");
  TEST_ASSERT(qp_model_stage_peak(&m, STORE) == 22 * MiB, "store peak");
  TEST_ASSERT(qp_model_stage_persistent(&m, STORE) == 22 * MiB, "store keeps its results");
  TEST_ASSERT(qp_model_peak(&m) == 30 * MiB, "lifetime peak");
  TEST_ASSERT(qp_model_find(&m, "factor") && !qp_model_find(&m, "nothing"), "find");

  /* A term beyond 2^56 bytes: counted 0, named. */
  qp_model_bytes huge = qp_model_bytes_times((size_t)1 << 20, qp_model_vector_bytes((int64_t)1 << 40, 1));
  qp_model_add(&m, "huge", QP_TERM_TRANSIENT, huge, STORE, STORE, "2^60 bytes");
  TEST_ASSERT(strcmp(m.oversize_term, "huge") == 0 && qp_model_find(&m, "huge")->bytes == 0,
              "the oversize term is recorded and counted 0");
  TEST_ASSERT(qp_model_stage_peak(&m, STORE) == 22 * MiB, "an oversize term adds nothing");

  /* A full model drops further terms and says so. */
  while (m.n_terms < QP_TERMS_MAX) qp_model_add(&m, "filler", QP_TERM_VIRTUAL, mib(1), LOAD, LOAD, "");
  TEST_ASSERT(!m.too_many_terms, "not yet full");
  qp_model_add(&m, "one too many", QP_TERM_TRANSIENT, mib(1), LOAD, LOAD, "");
  TEST_ASSERT(m.too_many_terms && m.n_terms == QP_TERMS_MAX, "too many terms flagged");

  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  m.overhead_bytes = 5 * MiB;
  qp_model_print_stages(out, &m);
  fclose(out);
  TEST_ASSERT(text && strstr(text, "[load]") && strstr(text, "[solve]") && strstr(text, "[store]") &&
                  strstr(text, "+ library") && strstr(text, "factor"),
              "the printed table lacks a stage or term:\n%s", text ? text : "");
  TEST_ASSERT(text && strstr(text, "35.000 MiB"), "lifetime peak with overhead (35 MiB) not printed");
  free(text);
  return TEST_RETURN();
}
