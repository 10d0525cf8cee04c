/* page_commit.h: how the tracked allocator (alloc.c) maps and commits a host block's pages.
 * Private to budget/. */
#ifndef QP_PAGE_COMMIT_H
#define QP_PAGE_COMMIT_H

#include <stddef.h>

/** A fresh anonymous mapping of `mapped` bytes (MAP_FAILED on failure); from 4 MiB up its start
 *  is on a huge-page boundary, so that the whole block can be huge pages. */
void *qp_page_map(size_t mapped);
/** Commits every page of [base, base + bytes) now (huge pages advised, MADV_POPULATE_WRITE or
 *  zeros, by up to 8 threads for a large block), so that RSS equals the budget from the
 *  allocation on. */
void qp_page_commit(void *base, size_t bytes);

#endif
