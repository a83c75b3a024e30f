/*
 * suite.h - the store conformance suite (store.md §5), written once against
 * the public sp_store_* API and a factory, so every adapter runs it
 * unchanged: S01-S14, plus X01-X05 for the additions (scans and cursors,
 * holds and deadlines, blobs and the secret, request validation, views).
 *
 * What it is for: an adapter's test program provides a store_factory and
 * calls store_suite_run() (one instance per test) and store_suite_cross()
 * (S01/S03 across two instances on one location: Q02 for SQLite).
 *
 * What it must never do: look at an adapter's tables, or depend on the
 * system clock: every test runs on a manual clock.
 */
#ifndef SPORE_TESTS_STORE_SUITE_H
#define SPORE_TESTS_STORE_SUITE_H

#include <stdbool.h>
#include <stddef.h>

#include "fixture.h"

#define STORE_LOCATION_MAX 1024

typedef struct store_factory {
    const char *name;
    void *ctx;
    /* Prepare a fresh, empty location and write it to `location`. */
    bool (*fresh)(void *ctx, char location[STORE_LOCATION_MAX]);
    /* Open an instance on a location: the first one, a reopen after close,
     * or a second instance while the first stays open. */
    sp_store *(*open)(void *ctx, const char *location, const sp_clock *clock, sp_error *err);
    /* Remove what fresh() prepared (instances are closed by then). */
    void (*destroy)(void *ctx, const char *location);
} store_factory;

/* One test's world: a fresh location, a manual clock (starting at 1000), and
 * two handles `a` and `b` - the same instance, or two instances. */
typedef struct store_env {
    const store_factory *f;
    char location[STORE_LOCATION_MAX];
    manual_clock clock;
    sp_store *a, *b;
} store_env;

bool store_env_open(store_env *e, const store_factory *f, bool two_instances);
/* Close every instance and open `a` (and `b`) again on the same location. */
bool store_env_reopen(store_env *e);
void store_env_close(store_env *e);

typedef void (*store_test_fn)(store_env *e);

typedef struct store_test {
    const char *name;
    store_test_fn fn;
} store_test;

/* The suite's tests, NULL-terminated. */
extern const store_test STORE_SUITE[];

/* Run every test of the suite on one instance per test. */
void store_suite_run(const store_factory *f);

/* S01 and S03 with two instances on one location. */
void store_suite_cross(const store_factory *f);

/* The individual scenarios (also used by the adapters' own tests). */
/* Runs b01_pred_<tag>_<i> (i < n <= 8), each with an attempt that `p`
 * claimed in one committed batch: what leaves a prediction of its settle's
 * reads on PostgreSQL (src/store/predict.c). */
void store_predicted_claims(sp_store *p, const char *tag, sp_claim *c, size_t n);

void store_s01_competing_commits(store_env *e);
void store_s02_replay_after_progress(store_env *e);
void store_s03_digest_mismatch_and_concurrency(store_env *e);

#endif
