/* test_bytes_text.c: byte counts in messages keep three significant figures (bytes_text.h):
 * GiB from 0.1 GiB, MiB from 0.1 MiB, bytes below; never "0.000 GiB" for a small limit. */
#include <math.h>

#include "bytes_text.h"
#include "test_util.h"

static void expect(double bytes, const char *want) {
  const qp_bytes_text t = qp_bytes_readable(bytes);
  TEST_ASSERT(strcmp(t.text, want) == 0, "%.17g bytes: '%s', expected '%s'", bytes, t.text, want);
}

int main(void) {
  const double gib = 1073741824.0, mib = 1048576.0;
  expect(1.25 * gib, "1.250 GiB");
  expect(180.0 * gib, "180.000 GiB");
  expect(0.5 * gib, "0.500 GiB");
  expect(0.1 * gib, "0.100 GiB");
  expect(0.1 * gib - 1.0, "102.40 MiB"); /* just below the switch: MiB */
  expect(5.0 * mib, "5.00 MiB");
  expect(500000.0, "0.48 MiB"); /* a memory.device_limit that read "0.000 GiB" */
  expect(0.1 * mib, "0.10 MiB");
  expect(0.1 * mib - 1.0, "104857 bytes");
  expect(812.0, "812 bytes");
  expect(0.0, "0 bytes");
  expect(-5.0 * mib, "-5.00 MiB");
  expect(NAN, "nan bytes"); /* never a number that looks measured */
  return qp_test_failures ? 1 : 0;
}
