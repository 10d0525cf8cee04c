/* test_budget_alloc.c: the tracked allocator, its stages and meters (budget/alloc.c,
 * budget/meter.c), and the memory model's term formulas (budget/model.c).
 *
 * Per-term accounting (current, peak, total, block counts), the rejected allocations (zero
 * bytes, long term names, overflowing arrays, the device space), stage records (bytes at
 * start, peak and end, per-term peaks, time, flops, nesting, the current stage's name, a pop
 * without a push), the dump of live blocks, RSS following allocation and free, and the model's
 * bytes per term and fisher_run peak. In the sanitizer build: the bytes around a tracked block
 * are poisoned for ASan while it lives, the block's own bytes are not. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "meter.h"
#include "memory_model.h"
#include "qp_config.h"
#include "terms.h"
#include "test_util.h"

#define MIB ((int64_t)1 << 20)

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
/* ASan sees an overrun of a tracked (mmap'ed) block: the byte before and the bytes after it
 * are poisoned, its first and last bytes are not; after the free none of it is poisoned. */
static void test_asan_poisoning(void) {
  const size_t sizes[] = {1, 8, 1000, 4096 - 64, 4096, (size_t)(3 * MIB) + 24};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    char *p = NULL;
    TEST_OK(qp_budget_alloc("asan_block", QP_TERM_TRANSIENT, QP_SPACE_HOST, sizes[i], (void **)&p));
    if (!p) continue;
    TEST_ASSERT(!__asan_address_is_poisoned(p) && !__asan_address_is_poisoned(p + sizes[i] - 1),
                "%zu bytes: the block itself is poisoned", sizes[i]);
    TEST_ASSERT(__asan_address_is_poisoned(p - 1) && __asan_address_is_poisoned(p + sizes[i]),
                "%zu bytes: the bytes around the block are not poisoned", sizes[i]);
    qp_budget_free(p);
    TEST_ASSERT(!__asan_address_is_poisoned(p - 1) && !__asan_address_is_poisoned(p + sizes[i]),
                "%zu bytes: poison left after the free", sizes[i]);
  }
}
#else
static void test_asan_poisoning(void) {}
#endif

/* The statistics of a host term by name, or NULL. */
static const qp_term_stats *find_term(const char *name) {
  for (int i = 0; i < qp_budget_term_count(); ++i) {
    const qp_term_stats *t = qp_budget_term(i);
    if (t && t->space == QP_SPACE_HOST && strcmp(t->name, name) == 0) return t;
  }
  return NULL;
}

/* A term of a stage record by name, or NULL. */
static const qp_stage_term *find_stage_term(const qp_stage_record *r, const char *name) {
  for (int i = 0; i < r->n_terms; ++i)
    if (strcmp(r->terms[i].name, name) == 0) return &r->terms[i];
  return NULL;
}

/* Two blocks of one term, one of another: current, peak, total and block counts; freeing
 * lowers current and keeps peak and total. */
static void test_term_accounting(void) {
  const size_t a1 = 10000, a2 = 30000, b1 = 5000;
  size_t host0 = qp_budget_current(QP_SPACE_HOST);
  void *pa1 = NULL, *pa2 = NULL, *pb1 = NULL;
  TEST_OK(qp_budget_alloc("acct_a", QP_TERM_PERSISTENT, QP_SPACE_HOST, a1, &pa1));
  TEST_OK(qp_budget_alloc("acct_a", QP_TERM_PERSISTENT, QP_SPACE_HOST, a2, &pa2));
  TEST_OK(qp_budget_alloc("acct_b", QP_TERM_TRANSIENT, QP_SPACE_HOST, b1, &pb1));
  TEST_ASSERT(pa1 && pa2 && pb1, "allocations returned NULL");
  TEST_ASSERT(((uintptr_t)pa1 % 64) == 0 && ((uintptr_t)pb1 % 64) == 0,
              "blocks not 64-byte aligned: %p %p", pa1, pb1);
  /* Zero-filled and writable over their whole length. */
  int zero = 1;
  for (size_t i = 0; i < a2; ++i)
    zero &= ((unsigned char *)pa2)[i] == 0;
  TEST_ASSERT(zero, "block of 'acct_a' not zero-filled");
  memset(pa2, 0xab, a2);

  const qp_term_stats *a = find_term("acct_a"), *b = find_term("acct_b");
  TEST_ASSERT(a && b, "terms acct_a / acct_b not listed");
  if (a && b) {
    TEST_ASSERT(a->current == a1 + a2, "acct_a current %zu, expected %zu", a->current, a1 + a2);
    TEST_ASSERT(a->peak == a1 + a2, "acct_a peak %zu, expected %zu", a->peak, a1 + a2);
    TEST_ASSERT(a->total == a1 + a2, "acct_a total %zu, expected %zu", a->total, a1 + a2);
    TEST_ASSERT(a->live_blocks == 2, "acct_a live_blocks %ld", a->live_blocks);
    TEST_ASSERT(a->total_blocks == 2, "acct_a total_blocks %ld", a->total_blocks);
    TEST_ASSERT(a->kind == QP_TERM_PERSISTENT, "acct_a kind %d", (int)a->kind);
    TEST_ASSERT(b->current == b1 && b->peak == b1 && b->total == b1,
                "acct_b current/peak/total %zu/%zu/%zu, expected %zu", b->current, b->peak,
                b->total, b1);
    TEST_ASSERT(b->live_blocks == 1 && b->total_blocks == 1, "acct_b blocks %ld/%ld",
                b->live_blocks, b->total_blocks);
    TEST_ASSERT(b->kind == QP_TERM_TRANSIENT, "acct_b kind %d", (int)b->kind);
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == host0 + a1 + a2 + b1,
              "host current %zu, expected %zu", qp_budget_current(QP_SPACE_HOST),
              host0 + a1 + a2 + b1);
  TEST_ASSERT(qp_budget_peak(QP_SPACE_HOST) >= host0 + a1 + a2 + b1, "host peak %zu too low",
              qp_budget_peak(QP_SPACE_HOST));

  qp_budget_free(pa2);
  a = find_term("acct_a");
  if (a) {
    TEST_ASSERT(a->current == a1, "acct_a current %zu after free, expected %zu", a->current, a1);
    TEST_ASSERT(a->peak == a1 + a2, "acct_a peak %zu after free, expected %zu", a->peak, a1 + a2);
    TEST_ASSERT(a->total == a1 + a2, "acct_a total %zu after free", a->total);
    TEST_ASSERT(a->live_blocks == 1 && a->total_blocks == 2, "acct_a blocks %ld/%ld after free",
                a->live_blocks, a->total_blocks);
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == host0 + a1 + b1,
              "host current %zu after free, expected %zu", qp_budget_current(QP_SPACE_HOST),
              host0 + a1 + b1);
  /* A new block after a free counts in total but does not raise the peak above the old one. */
  void *pa3 = NULL;
  TEST_OK(qp_budget_alloc("acct_a", QP_TERM_PERSISTENT, QP_SPACE_HOST, 1000, &pa3));
  a = find_term("acct_a");
  if (a) {
    TEST_ASSERT(a->current == a1 + 1000 && a->peak == a1 + a2 && a->total == a1 + a2 + 1000,
                "acct_a current/peak/total %zu/%zu/%zu after re-allocation", a->current, a->peak,
                a->total);
    TEST_ASSERT(a->live_blocks == 2 && a->total_blocks == 3, "acct_a blocks %ld/%ld",
                a->live_blocks, a->total_blocks);
  }
  qp_budget_free(pa1);
  qp_budget_free(pa3);
  qp_budget_free(pb1);
  qp_budget_free(NULL);
  a = find_term("acct_a");
  b = find_term("acct_b");
  if (a && b) {
    TEST_ASSERT(a->current == 0 && a->live_blocks == 0, "acct_a still %zu bytes in %ld blocks",
                a->current, a->live_blocks);
    TEST_ASSERT(b->current == 0 && b->live_blocks == 0 && b->peak == b1,
                "acct_b %zu bytes in %ld blocks, peak %zu", b->current, b->live_blocks, b->peak);
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == host0, "host current %zu, expected %zu",
              qp_budget_current(QP_SPACE_HOST), host0);
}

/* Zero bytes, long names, overflowing arrays, the device space. */
static void test_rejected_allocations(void) {
  int terms0 = qp_budget_term_count();
  size_t host0 = qp_budget_current(QP_SPACE_HOST), peak0 = qp_budget_peak(QP_SPACE_HOST);

  void *p = (void *)&p;
  TEST_OK(qp_budget_alloc("zero_bytes", QP_TERM_PERSISTENT, QP_SPACE_HOST, 0, &p));
  TEST_ASSERT(p == NULL, "zero-byte allocation gave %p, expected NULL", p);
  p = (void *)&p;
  TEST_OK(qp_budget_alloc_array("zero_bytes", QP_TERM_PERSISTENT, 0, sizeof(double), &p));
  TEST_ASSERT(p == NULL, "zero-element array gave %p, expected NULL", p);
  TEST_ASSERT(qp_budget_term_count() == terms0, "zero-byte allocation added a term (%d -> %d)",
              terms0, qp_budget_term_count());
  TEST_ASSERT(find_term("zero_bytes") == NULL, "zero-byte allocation listed its term");
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == host0 && qp_budget_peak(QP_SPACE_HOST) == peak0,
              "zero-byte allocation changed current/peak");

  /* 47 characters fit (QP_TERM_NAME_MAX counts the NUL); 48 do not. */
  char name[80];
  memset(name, 'n', sizeof name);
  name[QP_TERM_NAME_MAX - 1] = '\0';
  TEST_OK(qp_budget_alloc(name, QP_TERM_TRANSIENT, QP_SPACE_HOST, 64, &p));
  const qp_term_stats *t = find_term(name);
  TEST_ASSERT(t != NULL, "a term name of %d characters was not kept whole", QP_TERM_NAME_MAX - 1);
  qp_budget_free(p);
  int terms1 = qp_budget_term_count();
  name[QP_TERM_NAME_MAX - 1] = 'n';
  name[QP_TERM_NAME_MAX] = '\0';
  p = (void *)&p;
  TEST_FAILS(qp_budget_alloc(name, QP_TERM_TRANSIENT, QP_SPACE_HOST, 64, &p), QP_ERR_INPUT);
  TEST_ASSERT(p == NULL, "failed allocation left *out = %p", p);
  name[QP_TERM_NAME_MAX] = 'n';
  name[70] = '\0';
  TEST_FAILS(qp_budget_alloc(name, QP_TERM_TRANSIENT, QP_SPACE_HOST, 64, &p), QP_ERR_INPUT);
  TEST_FAILS(qp_budget_alloc("", QP_TERM_TRANSIENT, QP_SPACE_HOST, 64, &p), QP_ERR_INPUT);
  TEST_FAILS(qp_budget_alloc(NULL, QP_TERM_TRANSIENT, QP_SPACE_HOST, 64, &p), QP_ERR_INPUT);
  TEST_ASSERT(qp_budget_term_count() == terms1, "a rejected name added a term");

  /* count * size beyond SIZE_MAX: NOMEM naming the term, nothing allocated. */
  p = (void *)&p;
  qp_err err = qp_budget_alloc_array("overflow_term", QP_TERM_PERSISTENT,
                                     SIZE_MAX / sizeof(double) + 1, sizeof(double), &p);
  TEST_ASSERT(err == QP_ERR_NOMEM, "overflowing array returned %d (%s)", (int)err,
              qp_err_name(err));
  TEST_ASSERT(strstr(qp_error_message(), "overflow_term") != NULL,
              "overflow message does not name the term: %s", qp_error_message());
  TEST_ASSERT(p == NULL, "overflowing array left *out = %p", p);
  qp_error_clear();
  err = qp_budget_alloc_array("overflow_term2", QP_TERM_PERSISTENT, (size_t)1 << 40,
                              (size_t)1 << 40, &p);
  TEST_ASSERT(err == QP_ERR_NOMEM && strstr(qp_error_message(), "overflow_term2"),
              "2^40 x 2^40 returned %d: %s", (int)err, qp_error_message());
  qp_error_clear();
  /* A single size too large to map with its header: NOMEM naming the term. */
  err = qp_budget_alloc("huge_term", QP_TERM_PERSISTENT, QP_SPACE_HOST, SIZE_MAX - 10, &p);
  TEST_ASSERT(err == QP_ERR_NOMEM && strstr(qp_error_message(), "huge_term"),
              "SIZE_MAX - 10 bytes returned %d: %s", (int)err, qp_error_message());
  qp_error_clear();

  /* The device space needs a build with CUDA and a device (tests/gpu cover a device). */
  err = qp_budget_alloc("device_term", QP_TERM_PERSISTENT, QP_SPACE_DEVICE, 1024, &p);
  int device_terms = 0;
  if (QP_HAVE_CUDA && err == QP_OK) {
    TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 1024, "device current %zu, expected 1024",
                qp_budget_current(QP_SPACE_DEVICE));
    qp_budget_free(p);
    device_terms = 1;
  } else {
    TEST_ASSERT(err == QP_ERR_UNSUPPORTED, "device allocation returned %d (%s)", (int)err,
                qp_err_name(err));
    TEST_ASSERT(strstr(qp_error_message(), "device_term") != NULL,
                "device message does not name the term: %s", qp_error_message());
    qp_error_clear();
  }
  TEST_ASSERT(qp_budget_current(QP_SPACE_DEVICE) == 0, "device current %zu",
              qp_budget_current(QP_SPACE_DEVICE));

  TEST_ASSERT(qp_budget_term_count() == terms1 + device_terms,
              "rejected allocations added terms (%d -> %d)", terms1, qp_budget_term_count());
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == host0, "rejected allocations changed current");
}

/* One stage with a block carried in, a transient freed inside and a persistent kept. */
static void test_stage_record(void) {
  const size_t p_bytes = 4096, x_bytes = 300000, y_bytes = 70000;
  void *p = NULL, *x = NULL, *y = NULL;
  TEST_OK(qp_budget_alloc("stage_carried", QP_TERM_PERSISTENT, QP_SPACE_HOST, p_bytes, &p));
  size_t base = qp_budget_current(QP_SPACE_HOST);
  int records0 = qp_stage_record_count();

  TEST_ASSERT(strcmp(qp_stage_current(), "") == 0, "outside stages the current stage is '%s'",
              qp_stage_current());
  qp_stage_add_flops(1e9); /* outside any stage: counted nowhere */
  TEST_OK(qp_stage_push("a"));
  TEST_ASSERT(strcmp(qp_stage_current(), "a") == 0, "current stage '%s', expected 'a'",
              qp_stage_current());
  TEST_OK(qp_budget_alloc("stage_x", QP_TERM_TRANSIENT, QP_SPACE_HOST, x_bytes, &x));
  TEST_OK(qp_budget_alloc("stage_y", QP_TERM_PERSISTENT, QP_SPACE_HOST, y_bytes, &y));
  qp_stage_add_flops(1.5e6);
  qp_stage_add_flops(2.5e6);
  qp_budget_free(x);
  TEST_OK(qp_stage_pop());
  TEST_ASSERT(strcmp(qp_stage_current(), "") == 0, "after the pop the current stage is '%s'",
              qp_stage_current());

  TEST_ASSERT(qp_stage_record_count() == records0 + 1, "%d records, expected %d",
              qp_stage_record_count(), records0 + 1);
  const qp_stage_record *r = qp_stage_record_find("a");
  TEST_ASSERT(r != NULL, "no record of stage 'a'");
  TEST_ASSERT(r == qp_stage_record_get(qp_stage_record_count() - 1),
              "record_find and record_get disagree");
  TEST_ASSERT(qp_stage_record_find("no_such_stage") == NULL, "record of an unknown stage");
  if (r) {
    TEST_ASSERT(strcmp(r->name, "a") == 0, "record named '%s'", r->name);
    TEST_ASSERT(r->tracked_at_start == base, "tracked_at_start %zu, expected %zu",
                r->tracked_at_start, base);
    TEST_ASSERT(r->tracked_peak == base + x_bytes + y_bytes, "tracked_peak %zu, expected %zu",
                r->tracked_peak, base + x_bytes + y_bytes);
    TEST_ASSERT(r->tracked_at_end == base + y_bytes, "tracked_at_end %zu, expected %zu",
                r->tracked_at_end, base + y_bytes);
    TEST_ASSERT(r->device_tracked_peak == 0, "device peak %zu", r->device_tracked_peak);
    TEST_ASSERT(r->seconds > 0.0 && r->seconds < 60.0, "stage time %g s", r->seconds);
    TEST_ASSERT(r->flops == 4e6, "stage flops %g, expected 4e6", r->flops);
    const qp_stage_term *tx = find_stage_term(r, "stage_x"), *ty = find_stage_term(r, "stage_y"),
                        *tp = find_stage_term(r, "stage_carried");
    TEST_ASSERT(tx && ty && tp, "stage terms missing: x %p y %p carried %p", (const void *)tx,
                (const void *)ty, (const void *)tp);
    if (tx)
      TEST_ASSERT(tx->at_start == 0 && tx->peak == x_bytes && tx->at_end == 0 &&
                      tx->kind == QP_TERM_TRANSIENT,
                  "stage_x start/peak/end %zu/%zu/%zu kind %d", tx->at_start, tx->peak, tx->at_end,
                  (int)tx->kind);
    if (ty)
      TEST_ASSERT(ty->at_start == 0 && ty->peak == y_bytes && ty->at_end == y_bytes &&
                      ty->kind == QP_TERM_PERSISTENT,
                  "stage_y start/peak/end %zu/%zu/%zu kind %d", ty->at_start, ty->peak, ty->at_end,
                  (int)ty->kind);
    if (tp)
      TEST_ASSERT(tp->at_start == p_bytes && tp->peak == p_bytes && tp->at_end == p_bytes,
                  "stage_carried start/peak/end %zu/%zu/%zu", tp->at_start, tp->peak, tp->at_end);
  }
  qp_budget_free(y);
  qp_budget_free(p);
}

/* Nested stages: both see the inner allocation's peak and the flops; the current stage is the
 * innermost; a pop without a push fails. */
static void test_nested_stages(void) {
  const size_t z_bytes = 200000;
  size_t base = qp_budget_current(QP_SPACE_HOST);
  int records0 = qp_stage_record_count();
  void *z = NULL;
  TEST_OK(qp_stage_push("outer"));
  qp_stage_add_flops(10.0);
  TEST_OK(qp_stage_push("inner"));
  TEST_ASSERT(strcmp(qp_stage_current(), "inner") == 0, "current stage '%s', expected 'inner'",
              qp_stage_current());
  qp_stage_add_flops(5.0);
  TEST_OK(qp_budget_alloc("nested_z", QP_TERM_TRANSIENT, QP_SPACE_HOST, z_bytes, &z));
  TEST_OK(qp_stage_pop());
  TEST_ASSERT(strcmp(qp_stage_current(), "outer") == 0, "current stage '%s', expected 'outer'",
              qp_stage_current());
  qp_budget_free(z);
  TEST_OK(qp_stage_pop());
  TEST_ASSERT(strcmp(qp_stage_current(), "") == 0, "current stage '%s' after both pops",
              qp_stage_current());

  TEST_ASSERT(qp_stage_record_count() == records0 + 2, "%d records, expected %d",
              qp_stage_record_count(), records0 + 2);
  const qp_stage_record *inner = qp_stage_record_get(records0),
                        *outer = qp_stage_record_get(records0 + 1);
  TEST_ASSERT(inner && outer, "nested records missing");
  if (inner && outer) {
    TEST_ASSERT(strcmp(inner->name, "inner") == 0 && strcmp(outer->name, "outer") == 0,
                "records in pop order are '%s', '%s'", inner->name, outer->name);
    TEST_ASSERT(inner->tracked_peak == base + z_bytes, "inner peak %zu, expected %zu",
                inner->tracked_peak, base + z_bytes);
    TEST_ASSERT(outer->tracked_peak == base + z_bytes, "outer peak %zu, expected %zu",
                outer->tracked_peak, base + z_bytes);
    TEST_ASSERT(inner->tracked_at_end == base + z_bytes, "inner at_end %zu, expected %zu",
                inner->tracked_at_end, base + z_bytes);
    TEST_ASSERT(outer->tracked_at_end == base, "outer at_end %zu, expected %zu",
                outer->tracked_at_end, base);
    TEST_ASSERT(inner->flops == 5.0 && outer->flops == 15.0, "flops inner %g outer %g",
                inner->flops, outer->flops);
    TEST_ASSERT(outer->seconds >= inner->seconds, "outer %g s shorter than inner %g s",
                outer->seconds, inner->seconds);
    const qp_stage_term *ti = find_stage_term(inner, "nested_z"),
                        *to = find_stage_term(outer, "nested_z");
    TEST_ASSERT(ti && to, "nested_z missing from a record");
    if (ti && to) {
      TEST_ASSERT(ti->peak == z_bytes && ti->at_end == z_bytes, "inner nested_z peak/end %zu/%zu",
                  ti->peak, ti->at_end);
      TEST_ASSERT(to->peak == z_bytes && to->at_end == 0, "outer nested_z peak/end %zu/%zu",
                  to->peak, to->at_end);
    }
  }

  int records1 = qp_stage_record_count();
  TEST_FAILS(qp_stage_pop(), QP_ERR_INTERNAL);
  TEST_ASSERT(qp_stage_record_count() == records1, "a failed pop stored a record");
  /* A stage name must fit the record. */
  TEST_FAILS(qp_stage_push("a_stage_name_of_far_more_than_32_chars"), QP_ERR_INTERNAL);
  TEST_ASSERT(strcmp(qp_stage_current(), "") == 0, "a rejected push opened '%s'",
              qp_stage_current());
}

/* The dump lists each live block with its term and returns their number. */
static void test_dump_live(void) {
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "%zu bytes live before the dump test",
              qp_budget_current(QP_SPACE_HOST));
  void *a = NULL, *b = NULL;
  TEST_OK(qp_budget_alloc("dump_live_first", QP_TERM_PERSISTENT, QP_SPACE_HOST, 1234, &a));
  TEST_OK(qp_budget_alloc("dump_live_second", QP_TERM_TRANSIENT, QP_SPACE_HOST, 777, &b));
  FILE *f = tmpfile();
  TEST_ASSERT(f != NULL, "tmpfile failed");
  if (!f) return;
  int n = qp_budget_dump_live(f);
  TEST_ASSERT(n == 2, "dump_live returned %d, expected 2", n);
  rewind(f);
  char text[4096];
  size_t len = fread(text, 1, sizeof text - 1, f);
  text[len] = '\0';
  fclose(f);
  TEST_ASSERT(strstr(text, "dump_live_first") && strstr(text, "1234"),
              "dump lacks 'dump_live_first' 1234: %s", text);
  TEST_ASSERT(strstr(text, "dump_live_second") && strstr(text, "777"),
              "dump lacks 'dump_live_second' 777: %s", text);
  qp_budget_free(a);
  f = tmpfile();
  if (!f) return;
  n = qp_budget_dump_live(f);
  rewind(f);
  len = fread(text, 1, sizeof text - 1, f);
  text[len] = '\0';
  fclose(f);
  TEST_ASSERT(n == 1, "dump_live returned %d after a free, expected 1", n);
  TEST_ASSERT(!strstr(text, "dump_live_first") && strstr(text, "dump_live_second"),
              "dump after freeing the first block: %s", text);
  qp_budget_free(b);
  f = tmpfile();
  if (!f) return;
  n = qp_budget_dump_live(f);
  fclose(f);
  TEST_ASSERT(n == 0, "dump_live returned %d with nothing live", n);
}

/* RSS follows the budget: 64 MiB committed at allocation, returned at free; the high-water
 * mark resets to RSS and a stage sees the peak. */
static void test_rss_follows_allocation(void) {
  const size_t bytes = (size_t)64 << 20;
  qp_meter_sample before, during, after, reset;
  qp_meter_read(&before);
  TEST_ASSERT(before.rss > 0 && before.hwm >= before.rss, "meters: rss %lld hwm %lld",
              (long long)before.rss, (long long)before.hwm);

  TEST_OK(qp_stage_push("rss_stage"));
  void *p = NULL;
  TEST_OK(qp_budget_alloc("rss_block", QP_TERM_TRANSIENT, QP_SPACE_HOST, bytes, &p));
  qp_meter_read(&during);
  TEST_ASSERT(during.rss - before.rss >= 60 * MIB,
              "RSS rose by %.1f MiB for a 64 MiB block (pages not committed at allocation?)",
              (double)(during.rss - before.rss) / (double)MIB);
  qp_budget_free(p);
  TEST_OK(qp_stage_pop());
  qp_meter_read(&after);
  TEST_ASSERT(llabs((long long)(after.rss - before.rss)) <= 4 * MIB,
              "RSS %.1f MiB after free vs %.1f MiB before", (double)after.rss / (double)MIB,
              (double)before.rss / (double)MIB);
  TEST_ASSERT(after.hwm - before.rss >= 60 * MIB, "VmHWM %.1f MiB did not see the 64 MiB block",
              (double)after.hwm / (double)MIB);

  const qp_stage_record *r = qp_stage_record_find("rss_stage");
  TEST_ASSERT(r != NULL, "no record of rss_stage");
  if (r) {
    TEST_ASSERT(r->tracked_peak == bytes && r->tracked_at_end == 0,
                "rss_stage tracked peak/end %zu/%zu", r->tracked_peak, r->tracked_at_end);
    TEST_ASSERT(r->meter_start.hwm_reset == 1 && r->meter_end.hwm_reset == 1,
                "stage hwm_reset %d/%d", r->meter_start.hwm_reset, r->meter_end.hwm_reset);
    TEST_ASSERT(r->meter_end.hwm - r->meter_start.rss >= 60 * MIB,
                "stage hwm %.1f MiB vs rss at start %.1f MiB", (double)r->meter_end.hwm / MIB,
                (double)r->meter_start.rss / MIB);
  }

  int hwm_reset = -1, cg_reset = -1;
  qp_meter_reset_peaks(&hwm_reset, &cg_reset);
  TEST_ASSERT(hwm_reset == 1, "VmHWM reset failed (%d)", hwm_reset);
  TEST_ASSERT(cg_reset == 0, "cgroup peak reset reported %d, must never be reset", cg_reset);
  qp_meter_read(&reset);
  TEST_ASSERT(llabs((long long)(reset.hwm - reset.rss)) <= 4 * MIB,
              "after the reset VmHWM %.1f MiB vs RSS %.1f MiB", (double)reset.hwm / MIB,
              (double)reset.rss / MIB);
  int v = qp_meter_cgroup_version();
  TEST_ASSERT(v >= 0 && v <= 2, "cgroup version %d", v);
  if (v == 0)
    TEST_ASSERT(reset.cgroup_current == -1 && reset.cgroup_peak == -1,
                "no cgroup but figures %lld/%lld", (long long)reset.cgroup_current,
                (long long)reset.cgroup_peak);
  else
    TEST_ASSERT(reset.cgroup_current > 0, "cgroup v%d current %lld", v,
                (long long)reset.cgroup_current);
}

/* A large block is committed by several threads (alloc.c) on a mapping that starts on a
 * huge-page boundary (its 64-byte header first): every part zero, the last threads' parts
 * included. After the RSS test: under ASan, reading every page reads its shadow too (8 MiB
 * for 64 MiB, resident from then on), which would show in that test's RSS. */
static void test_large_block_zero_and_aligned(void) {
  const size_t bytes = (size_t)64 << 20;
  void *p = NULL;
  TEST_OK(qp_budget_alloc("zero_block", QP_TERM_TRANSIENT, QP_SPACE_HOST, bytes, &p));
  if (!p) return;
  TEST_ASSERT(((uintptr_t)p - 64) % (2 * MIB) == 0, "a 64 MiB block's mapping at %p is not "
              "2 MiB-aligned", (void *)((char *)p - 64));
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; i += 4096)
    nonzero += ((const unsigned char *)p)[i] != 0 || ((const unsigned char *)p)[bytes - 1 - i] != 0;
  TEST_ASSERT(nonzero == 0, "%zu pages of a fresh 64 MiB block are not zero", nonzero);
  qp_budget_free(p);
}

/* The model: each term's bytes follow its formula; the fisher_run peak is the carried bytes
 * plus the stage's own terms; nonsense dims fail. */
static void check_bytes(const qp_model *m, const char *name, size_t expected) {
  const qp_model_term *t = qp_model_find(m, name);
  TEST_ASSERT(t != NULL, "model lacks term '%s'", name);
  if (t)
    TEST_ASSERT(t->bytes == expected, "term '%s': %zu bytes, expected %zu", name, t->bytes,
                expected);
}

static void test_model(void) {
  /* n_positions < n_pix (e.g. T and Q/U at partly different positions) tells the terms that
   * follow the positions from those that follow the data vector. */
  const size_t pos = 200, n = 300, sky = 3072, maps = 3, np = 7, chunk = 2;
  for (int dense = 0; dense <= 1; ++dense) {
    qp_model_dims d = {.n_sky = (int64_t)sky,
                       .n_positions = (int64_t)pos,
                       .n_pix = (int64_t)n,
                       .n_maps = (int64_t)maps,
                       .n_params = (int64_t)np,
                       .fisher_chunk = (int64_t)np,
                       .spectra_chunk = (int64_t)chunk,
                       .noise_dense = dense};
    qp_model m;
    TEST_OK(qp_model_predict(&d, &m));
    check_bytes(&m, QP_TERM_SKY_BUFFER, sky * 8);
    check_bytes(&m, QP_TERM_OBSERVED_INDEX, pos * 8);
    check_bytes(&m, QP_TERM_PIXEL_VECTORS, 3 * pos * 8);
    check_bytes(&m, QP_TERM_MAP_BUFFER, n * 8); /* one map at a time: no term of n_maps */
    check_bytes(&m, QP_TERM_COVARIANCE, n * n * 8);
    check_bytes(&m, QP_TERM_PRODUCTS, (np + 1) * n * n * 8);
    check_bytes(&m, QP_TERM_GRAM, (np + 1) * (np + 2) * 8); /* Gram of chunk + noise, and a column of dots */
    check_bytes(&m, QP_TERM_FISHER, np * np * 8);
    check_bytes(&m, QP_TERM_NOISE_BIAS, np * 8);
    check_bytes(&m, QP_TERM_WEIGHTED_MAPS, n * maps * 8);
    check_bytes(&m, QP_TERM_BIN_MATRICES, chunk * n * n * 8);
    check_bytes(&m, QP_TERM_BIN_PRODUCT, n * maps * 8);
    check_bytes(&m, QP_TERM_FISHER_INVERSE, np * np * 8);
    check_bytes(&m, QP_TERM_RAW_SPECTRA, maps * np * 8);
    check_bytes(&m, QP_TERM_SPECTRA, maps * np * 8);
    check_bytes(&m, QP_TERM_ERRORS, np * 8);
    size_t noise = dense ? n * n * 8 : n * 8;
    if (dense) {
      check_bytes(&m, QP_TERM_NOISE, noise);
      TEST_ASSERT(qp_model_find(&m, QP_TERM_NOISE_VARIANCE) == NULL, "dense model has variances");
    } else {
      check_bytes(&m, QP_TERM_NOISE_VARIANCE, noise);
      TEST_ASSERT(qp_model_find(&m, QP_TERM_NOISE) == NULL, "diagonal model has a dense N");
    }
    /* (sky_buffer twice: covariance_setup's, and spectra_run's with the map buffer) */
    TEST_ASSERT(m.n_terms == 18, "%d model terms, expected 18", m.n_terms);
    for (int i = 0; i < m.n_terms; ++i)
      TEST_ASSERT(m.terms[i].space == QP_SPACE_HOST && m.terms[i].formula && m.terms[i].formula[0],
                  "term '%s': space %d, formula missing", m.terms[i].name, (int)m.terms[i].space);
    TEST_ASSERT(m.overhead_bytes == QP_MODEL_DEFAULT_OVERHEAD, "overhead %zu", m.overhead_bytes);

    /* Carried into fisher_run: everything of covariance_setup but the sky buffer (the maps are
     * checked there, not kept). */
    size_t carried = pos * 8 + 3 * pos * 8 + noise + n * n * 8;
    size_t got_carried = qp_model_stage_carried(&m, QP_STAGE_FISHER_RUN);
    TEST_ASSERT(got_carried == carried, "fisher_run carried %zu, expected %zu (dense %d)",
                got_carried, carried, dense);
    size_t fisher_peak =
        got_carried + (np + 1) * n * n * 8 + (np + 1) * (np + 2) * 8 + np * np * 8 + np * 8;
    TEST_ASSERT(qp_model_stage_peak(&m, QP_STAGE_FISHER_RUN) == fisher_peak,
                "fisher_run peak %zu, expected %zu (dense %d)",
                qp_model_stage_peak(&m, QP_STAGE_FISHER_RUN), fisher_peak, dense);
    size_t cov_peak = sky * 8 + pos * 8 + 3 * pos * 8 + noise + n * n * 8;
    TEST_ASSERT(qp_model_stage_peak(&m, QP_STAGE_COVARIANCE_SETUP) == cov_peak,
                "covariance_setup peak %zu, expected %zu",
                qp_model_stage_peak(&m, QP_STAGE_COVARIANCE_SETUP), cov_peak);
    TEST_ASSERT(qp_model_peak(&m) == fisher_peak, "model peak %zu, expected fisher_run's %zu",
                qp_model_peak(&m), fisher_peak);
  }

  qp_model_dims good = {.n_sky = 3072,
                        .n_positions = 100,
                        .n_pix = 100,
                        .n_maps = 1,
                        .n_params = 4,
                        .fisher_chunk = 4,
                        .spectra_chunk = 1,
                        .noise_dense = 0};
  qp_model m;
  qp_model_dims d = good;
  d.n_pix = 0;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.n_pix = -5;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.n_positions = 0;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.n_positions = d.n_pix + 1;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.n_params = 0;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.n_sky = -1; /* 0 is allowed: a `dimensions:` config without nside has no sky buffer */
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.spectra_chunk = 0;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.spectra_chunk = 5;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.fisher_chunk = 0;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.fisher_chunk = 2; /* chunked: 2 products, the noise and a streaming slot */
  TEST_OK(qp_model_predict(&d, &m));
  check_bytes(&m, QP_TERM_PRODUCTS, 4 * (size_t)(d.n_pix * d.n_pix) * 8);
  d = good;
  d.map_batch = -1;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.map_batch = 2; /* more maps on the device than there are */
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d = good;
  d.n_maps = 5;
  d.map_batch = 2; /* the per-map device matrices hold a batch of 2 maps; the host one map */
  d.device = 1;
  TEST_OK(qp_model_predict(&d, &m));
  check_bytes(&m, QP_TERM_WEIGHTED_MAPS, 2 * (size_t)d.n_pix * 8);
  check_bytes(&m, QP_TERM_BIN_PRODUCT, 2 * (size_t)d.n_pix * 8);
  check_bytes(&m, QP_TERM_MAP_BUFFER, (size_t)d.n_pix * 8);
  /* Projection with W in blocks: a block of W's columns on the device, all of W on the host,
   * Z in a device buffer of its own (W's is on the host); the block within 0..n_modes and
   * never on a grid. */
  d = good;
  d.path = QP_MODEL_HARMONIC_PROJECTED;
  d.n_modes = 150;
  d.n_fields = 1;
  d.n_lm = 169;
  d.fisher_block_slots = 1;
  d.device = 1;
  d.w_block = 151;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d.w_block = -1;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  d.w_block = 40;
  TEST_OK(qp_model_predict(&d, &m));
  check_bytes(&m, QP_TERM_KERNEL_BLOCK, 150 * 40 * 8);
  check_bytes(&m, QP_TERM_KERNEL_HOST, 150 * 150 * 8);
  check_bytes(&m, QP_TERM_WEIGHTED_MODES, 100 * 150 * 8);
  TEST_ASSERT(qp_model_find(&m, QP_TERM_KERNEL) == NULL &&
                  qp_model_find(&m, QP_TERM_FIELD_BLOCKS) == NULL,
              "W in blocks: no device W, no field blocks copied off the device");
  TEST_ASSERT(qp_model_find(&m, QP_TERM_KERNEL_HOST)->space == QP_SPACE_HOST &&
                  qp_model_find(&m, QP_TERM_KERNEL_BLOCK)->space == QP_SPACE_DEVICE,
              "W in blocks: W_host on the host, W_block on the device");
  d.w_block = 150; /* a block of all of W: W whole, as without a limit */
  TEST_OK(qp_model_predict(&d, &m));
  TEST_ASSERT(qp_model_find(&m, QP_TERM_KERNEL) && !qp_model_find(&m, QP_TERM_KERNEL_BLOCK),
              "w_block = n_modes: W whole");
  d.w_block = 40;
  d.grid_rows = d.grid_cols = 1;
  d.block = 64;
  TEST_FAILS(qp_model_predict(&d, &m), QP_ERR_INPUT);
  TEST_OK(qp_model_predict(&good, &m));
}

int main(void) {
  test_term_accounting();
  test_rejected_allocations();
  test_stage_record();
  test_nested_stages();
  test_dump_live();
  test_rss_follows_allocation();
  test_large_block_zero_and_aligned();
  test_model();
  test_asan_poisoning();
  TEST_ASSERT(qp_budget_current(QP_SPACE_HOST) == 0, "%zu bytes still live at the end",
              qp_budget_current(QP_SPACE_HOST));
  if (qp_test_failures == 0) printf("test_budget_alloc: all checks passed\n");
  return TEST_RETURN();
}
