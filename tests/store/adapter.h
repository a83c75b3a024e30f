/*
 * adapter.h - the adapter-specific scenarios of the store conformance suite
 * (store.md §5) that every adapter runs the same way over its factory: each
 * adapter's test program (test_store_sqlite.c, test_store_pg.c) calls them
 * with its own store_factory.
 *
 *   Q01 reopen keeps everything: runs, events, invocations, attempts,
 *       quarantine, blobs, the secret and receipts survive closing every
 *       instance; fences continue (never reused);
 *   Q03 a child process (store_crash_child) aborts at every store failpoint
 *       (store.<op>.before-commit / after-commit); after reopening, the
 *       mutation is wholly absent (before) or present (after) - receipt
 *       included - and retrying the identical request converges to one
 *       applied mutation.
 *
 * What it must never do: look at an adapter's tables (public API only).
 */
#ifndef SPORE_TESTS_STORE_ADAPTER_H
#define SPORE_TESTS_STORE_ADAPTER_H

#include "suite.h"

void adapter_q01_reopen(const store_factory *f);
/* `child` is the path of store_crash_child; it gets the location as argv[1]. */
void adapter_q03_crash(const store_factory *f, const char *child);

#endif
