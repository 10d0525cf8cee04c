/* test_hooks_env.c: the test hooks that read the environment (base/test_hooks.h): a
 * QP_TEST_* setting's value, and the pause of QP_TEST_PAUSE. */
#include "test_support_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Only QP_TEST_* names: a hook asks for its own variable, nothing else of the environment. */
const char *qp_test_setting_env(const char *name) {
  return name && strncmp(name, "QP_TEST_", 8) == 0 ? getenv(name) : NULL;
}

/* QP_TEST_PAUSE=<where>: says so on stderr and sleeps 60 s, so that a test can send a signal
 * at a known point (a stage, or "before_rename" in qp_atomic_commit; base/interrupt.h). */
void qp_test_pause_env(const char *where) {
  const char *want = getenv("QP_TEST_PAUSE");
  if (!want || !where || strcmp(want, where) != 0) return;
  fprintf(stderr, "[qmlpipe] test hook QP_TEST_PAUSE: paused in %s\n", where);
  fflush(stderr);
  struct timespec left = {60, 0};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) continue;
}
