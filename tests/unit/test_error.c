/* test_error: the error record of qp_error.h. A new error may be formatted from the current
 * one's message (qp_error_set(code, ..., "context (%s)", qp_error_message())), as the pipeline
 * does to put its context around a LAPACK detail: the result must hold both, however long,
 * cut at the record's size, never garbled by the record being read while it is written. */
#include <string.h>

#include "qp_error.h"
#include "test_util.h"

static qp_err inner(void) {
  QP_FAIL(QP_ERR_NOT_POSDEF, "matrix 'fisher' (3 x 3): leading minor of order %d", 2);
}

static qp_err wrapped(void) {
  qp_err err = inner();
  QP_CHECK(err != QP_ERR_NOT_POSDEF, QP_ERR_NOT_POSDEF, "the Fisher matrix is singular (%s)",
           qp_error_message());
  return err;
}

/* The current message twice, before and after text of its own. */
static qp_err wrapped_twice(void) {
  qp_err err = inner();
  const char *m = qp_error_message();
  return qp_error_set(err, __FILE__, __LINE__, __func__, "[%s] and again [%s]", m, m);
}

int main(void) {
  EXPECT_ERROR(wrapped(), QP_ERR_NOT_POSDEF,
               "the Fisher matrix is singular (matrix 'fisher' (3 x 3): leading minor of order "
               "2)");
  EXPECT_ERROR(wrapped_twice(), QP_ERR_NOT_POSDEF,
               "[matrix 'fisher' (3 x 3): leading minor of order 2] and again [matrix 'fisher' "
               "(3 x 3): leading minor of order 2]");

  /* A message at the record's size (1023 characters), wrapped: the context first, then as
   * much of the old message as fits, NUL-terminated. */
  char long_text[2048];
  memset(long_text, 'x', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__, "%s", long_text);
  const size_t full = strlen(qp_error_message());
  TEST_ASSERT(full == 1023, "a long message is kept to 1023 characters, got %zu", full);
  qp_error_set(QP_ERR_INPUT, __FILE__, __LINE__, __func__, "context: %s", qp_error_message());
  const char *m = qp_error_message();
  TEST_ASSERT(strncmp(m, "context: xxxx", 13) == 0, "the context is not first: '%.40s'", m);
  TEST_ASSERT(strlen(m) == 1023 && strspn(m + 9, "x") == 1014,
              "the wrapped long message is not the context and 1014 x's (length %zu)", strlen(m));
  qp_error_clear();

  /* The code and the traceback start afresh with the new error. */
  TEST_ASSERT(qp_error_code() == QP_OK && qp_error_message()[0] == '\0', "clear left an error");
  return TEST_RETURN();
}
