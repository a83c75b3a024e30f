/*
 * test_engine.c - H2 (engine.md §7, §12): a commit lost to a competing
 * coordinator; the loser dispatches nothing from its decision.
 *
 * Two engines, each with its own store connection on one SQLite file (as two
 * worker processes would have), tick concurrently. To make the race certain
 * rather than likely, a third raw SQLite connection holds the write lock
 * while both engines tick: reads go on (WAL), so each engine loads the turn
 * and computes its decision, then blocks in commit_turn's BEGIN IMMEDIATE.
 * When the lock is released one commit applies and the other is lost.
 *
 * Two ways to lose:
 * - duplicate: both engines computed the same decision for the same event;
 *   the second commit collapses into the first one's receipt. Checked at every
 *   turn of a two-step run: per turn exactly one engine counts `applied` and
 *   the other `duplicate`; each scheduled invocation is claimed once, runs
 *   once, has one attempt; events and revisions stay gapless.
 * - stale: the competitor (an engine with a smaller state budget, i.e.
 *   version skew) quarantines the run instead; the loser's commit is refused
 *   (`stale`) and the invocation its decision scheduled never exists: nothing
 *   is claimed or run. After `release` the run completes normally.
 *
 * usage: test_engine   (creates and removes its own temporary directory)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h"
#include "runners/native.h"
#include "store/store.h"

/* Two native steps, then complete: three events (start, two results). */
static const char WORKFLOW[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"h2\",\"start\":\"s1\","
    "\"actions\":{\"count\":{\"kind\":\"native\",\"function\":\"count\",\"effect\":\"idempotent\","
    "\"retry\":{\"maxAttempts\":3}}},"
    "\"nodes\":{"
    "\"s1\":{\"kind\":\"activity\",\"action\":\"count\",\"outcomes\":{\"ok\":\"s2\"}},"
    "\"s2\":{\"kind\":\"activity\",\"action\":\"count\",\"outcomes\":{\"ok\":\"done\"}},"
    "\"done\":{\"kind\":\"complete\",\"output\":{\"$get\":[\"nodes\",\"s2\",\"output\"]}}}}";

#define LOCK_HOLD_MS 600 /* long enough for both engines to reach commit_turn */

static atomic_int CALLS;

static int fn_count(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    int n = atomic_fetch_add(&CALLS, 1) + 1;
    char out[256];
    snprintf(out, sizeof out, "{\"node\":\"%s\",\"attempt\":%u,\"call\":%d}",
             sp_native_node_id(call), sp_native_attempt(call), n);
    return sp_native_succeed(call, NULL, out, strlen(out));
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- a raw connection holding the database's write lock ---- */

static sqlite3 *hold_write_lock(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        check_fail(__FILE__, __LINE__, "cannot take the write lock of %s: %s", path,
                   db ? sqlite3_errmsg(db) : "?");
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static void release_write_lock(sqlite3 *db)
{
    if (!db)
        return;
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
}

/* ---- one tick on its own thread ---- */

typedef struct ticker {
    sp_engine *engine;
    sp_tick_stats stats;
    int rc;
    sp_error err;
    pthread_t thread;
} ticker;

static void *tick_main(void *arg)
{
    ticker *t = arg;
    t->rc = sp_engine_tick(t->engine, &t->stats, &t->err);
    return NULL;
}

static void tick_start(ticker *t, sp_engine *e)
{
    memset(t, 0, sizeof *t);
    t->engine = e;
    if (pthread_create(&t->thread, NULL, tick_main, t) != 0)
        check_fail(__FILE__, __LINE__, "pthread_create");
}

static void tick_join(ticker *t)
{
    pthread_join(t->thread, NULL);
    CHECK_INT(t->rc, 0);
    if (t->rc)
        fprintf(stderr, "  tick: %s: %s\n", t->err.code, t->err.message);
    sp_error_clear(&t->err);
}

/* ---- reading the store ---- */

static bool get_run(sp_store *s, const sp_run_key *key, sp_run_view *v)
{
    sp_error err = {0};
    bool found = false;
    if (sp_store_get_run(s, key, v, &found, &err) != SP_STORE_OK || !found) {
        check_fail(__FILE__, __LINE__, "get_run %s: %s %s", key->run_id, err.code, err.message);
        sp_error_clear(&err);
        return false;
    }
    return true;
}

/* Wait until the run has a pending event (an attempt reported) or is parked. */
static bool wait_pending(sp_store *s, const sp_run_key *key, unsigned timeout_ms)
{
    for (unsigned waited = 0; waited <= timeout_ms; waited += 10) {
        sp_run_view v;
        if (!get_run(s, key, &v))
            return false;
        bool pending = v.next_sequence > v.applied_sequence + 1;
        sp_run_view_free(&v);
        if (pending)
            return true;
        sleep_ms(10);
    }
    return false;
}

/* Wait until the native function has been called n times in all. */
static bool wait_calls(int n, unsigned timeout_ms)
{
    for (unsigned waited = 0; waited <= timeout_ms; waited += 10) {
        if (atomic_load(&CALLS) >= n) {
            sleep_ms(50); /* the pool thread hands the output over */
            return true;
        }
        sleep_ms(10);
    }
    return false;
}

static void list_invocations(sp_store *s, const sp_run_key *key, sp_invocation_list *out)
{
    sp_error err = {0};
    memset(out, 0, sizeof *out);
    if (sp_store_list_invocations(s, key, out, &err) != SP_STORE_OK) {
        check_fail(__FILE__, __LINE__, "list_invocations: %s", err.code);
        sp_error_clear(&err);
    }
}

/* Events gapless 1..n, every one consumed by revision = its sequence. */
static void check_events_consumed(sp_store *s, const sp_run_key *key, size_t want)
{
    sp_event_list l = {0};
    sp_error err = {0};
    if (sp_store_list_events(s, key, 0, 0, &l, &err) != SP_STORE_OK) {
        check_fail(__FILE__, __LINE__, "list_events: %s", err.code);
        sp_error_clear(&err);
        return;
    }
    CHECK_INT(l.n, want);
    for (size_t i = 0; i < l.n; i++) {
        CHECK_INT(l.events[i].sequence, i + 1);
        CHECK(l.events[i].consumed);
        CHECK_INT(l.events[i].consumed_revision, i + 1);
    }
    sp_event_list_free(&l);
}

/* ---- fixture ---- */

typedef struct fixture {
    char dir[64], db[128];
    sp_native_registry *natives;
    sp_store *store_a, *store_b;
    sp_engine *a, *b;
} fixture;

static sp_engine *engine(fixture *f, sp_store *s, const char *worker, uint32_t state_bytes)
{
    sp_engine_config cfg = sp_engine_defaults();
    cfg.worker_id = worker;
    cfg.natives = f->natives;
    cfg.poll_ms = 10;
    /* One turn per run per tick, so that a tick's counters describe exactly
     * the one contested turn (a fast native step may otherwise report before
     * the slower engine's tick is over, and its next turn would count too). */
    cfg.turns_per_run = 1;
    if (state_bytes)
        cfg.limits.max_state_bytes = state_bytes;
    sp_error err = {0};
    sp_engine *e = sp_engine_new(s, &cfg, &err);
    if (!e) {
        check_fail(__FILE__, __LINE__, "sp_engine_new: %s: %s", err.code, err.message);
        sp_error_clear(&err);
    }
    return e;
}

/* Engine b gets `b_state_bytes` (0 = the default budget). */
static bool fixture_open(fixture *f, uint32_t b_state_bytes)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/spore-test-engine-XXXXXX");
    if (!mkdtemp(f->dir)) {
        check_fail(__FILE__, __LINE__, "mkdtemp");
        return false;
    }
    snprintf(f->db, sizeof f->db, "%s/spore.db", f->dir);
    sp_error err = {0};
    f->natives = sp_native_registry_new();
    if (!f->natives || sp_native_register(f->natives, "count", fn_count, NULL, &err)) {
        check_fail(__FILE__, __LINE__, "native registry: %s", err.code);
        return false;
    }
    f->store_a = sp_store_open(f->db, NULL, &err);
    f->store_b = f->store_a ? sp_store_open(f->db, NULL, &err) : NULL;
    if (!f->store_b) {
        check_fail(__FILE__, __LINE__, "sp_store_open: %s: %s", err.code, err.message);
        sp_error_clear(&err);
        return false;
    }
    f->a = engine(f, f->store_a, "engine-a", 0);
    f->b = engine(f, f->store_b, "engine-b", b_state_bytes);
    return f->a && f->b;
}

static void fixture_close(fixture *f)
{
    sp_engine_free(f->a);
    sp_engine_free(f->b);
    sp_store_close(f->store_a);
    sp_store_close(f->store_b);
    sp_native_registry_free(f->natives);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_engine: could not remove %s\n", f->dir);
}

static bool start_run(fixture *f, const char *start_key, sp_run_key *key)
{
    json_t *doc = json_loads(WORKFLOW, 0, NULL);
    sp_start_result r;
    sp_error err = {0};
    int rc = doc ? sp_engine_start(f->a, doc, NULL, start_key, &r, &err) : -1;
    json_decref(doc);
    if (rc) {
        check_fail(__FILE__, __LINE__, "sp_engine_start: %s: %s", err.code, err.message);
        sp_error_clear(&err);
        return false;
    }
    CHECK(r.created);
    *key = r.key;
    return true;
}

/* Both engines tick while the write lock is held; then it is released. */
static void race(fixture *f, ticker *ta, ticker *tb)
{
    sqlite3 *lock = hold_write_lock(f->db);
    tick_start(ta, f->a);
    tick_start(tb, f->b);
    sleep_ms(LOCK_HOLD_MS);
    release_write_lock(lock);
    tick_join(ta);
    tick_join(tb);
}

/* ---- H2, duplicate: identical decisions collapse, the loser adds nothing ---- */

static void test_lost_commit_duplicate(void)
{
    fixture f;
    atomic_store(&CALLS, 0);
    if (!fixture_open(&f, 0)) {
        fixture_close(&f);
        return;
    }
    sp_run_key key;
    if (!start_run(&f, "h2-duplicate", &key)) {
        fixture_close(&f);
        return;
    }
    /* Turn 1 consumes run.started and schedules s1; turn 2 consumes s1's
     * result and schedules s2; turn 3 consumes s2's result and completes.
     * A pass is one batch: the engine whose step ran reports its result and
     * commits the turn on it in the same transaction, so on turns 2 and 3
     * the other engine - blocked on the write lock - finds nothing left to
     * decide and adds nothing, not even a duplicate commit. */
    for (int turn = 1; turn <= 3; turn++) {
        if (turn == 1)
            CHECK(wait_pending(f.store_a, &key, 10000));
        else
            CHECK(wait_calls(turn - 1, 10000)); /* the step ran; its report waits for a pass */
        ticker ta, tb;
        race(&f, &ta, &tb);
        const sp_tick_stats *a = &ta.stats, *b = &tb.stats;
        CHECK_INT(a->applied + b->applied, 1);     /* one commit won ... */
        /* ... the other lost to it: on run.started it had read the turn
         * before the lock (a duplicate); on a step's result it finds nothing */
        CHECK_INT(a->duplicate + b->duplicate, turn == 1 ? 1 : 0);
        CHECK_INT(a->diverged + b->diverged, 0);
        CHECK_INT(a->quarantined + b->quarantined, 0);
        /* Only committed work, read back from the store, is dispatched:
         * the one invocation the turn scheduled is claimed exactly once. */
        CHECK_INT(a->claimed + b->claimed, turn < 3 ? 1 : 0);
        if (a->applied + b->applied != 1 || a->duplicate + b->duplicate != 1)
            fprintf(stderr, "  turn %d: a applied %u duplicate %u, b applied %u duplicate %u\n",
                    turn, a->applied, a->duplicate, b->applied, b->duplicate);
        sp_invocation_list inv;
        list_invocations(f.store_a, &key, &inv);
        CHECK_INT(inv.n, turn < 3 ? (size_t)turn : 2u); /* each invocation exists once */
        for (size_t i = 0; i < inv.n; i++)
            CHECK_INT(inv.items[i].attempt_number, 1);
        sp_invocation_list_free(&inv);
    }
    sp_run_view v;
    if (get_run(f.store_b, &key, &v)) {
        CHECK_STR(v.status, "completed");
        CHECK_INT(v.revision, 3);
        CHECK(!v.quarantined);
        sp_run_view_free(&v);
    }
    CHECK_INT(atomic_load(&CALLS), 2); /* each step ran exactly once */
    sp_invocation_list inv;
    list_invocations(f.store_b, &key, &inv);
    CHECK_INT(inv.n, 2);
    for (size_t i = 0; i < inv.n; i++) {
        CHECK_STR(inv.items[i].status, "settled");
        CHECK_INT(inv.items[i].attempt_number, 1);
        CHECK(inv.items[i].has_attempt);
        CHECK_STR(inv.items[i].attempt_status, "finished");
    }
    sp_invocation_list_free(&inv);
    check_events_consumed(f.store_a, &key, 3);
    fixture_close(&f);
}

/* ---- H2, stale: the competitor quarantined first; the loser's decision
 * (which scheduled s1) is dropped and nothing of it is ever dispatched ---- */

static void test_lost_commit_stale(void)
{
    bool seen_stale = false;
    /* Which of the two blocked writers gets the lock first is up to SQLite's
     * busy handler: both wait for it (race()), so either wins about half the
     * time. (When b only began its tick after the release, a - retrying
     * within a millisecond - won all 40 rounds of a sanitizer run.) Both
     * orders are checked; repeat until the stale one has been seen (up to
     * 40 rounds; a round takes well under a second). */
    for (int round = 0; round < 40 && !seen_stale; round++) {
        fixture f;
        atomic_store(&CALLS, 0);
        if (!fixture_open(&f, 64)) { /* engine b: a 64-byte state budget */
            fixture_close(&f);
            return;
        }
        sp_run_key key;
        char start_key[32];
        snprintf(start_key, sizeof start_key, "h2-stale-%d", round);
        if (!start_run(&f, start_key, &key)) {
            fixture_close(&f);
            return;
        }
        /* a reduces run.started and waits for the write lock with its
         * decision; b's kernel fails (budget) and waits with its quarantine */
        ticker ta, tb;
        race(&f, &ta, &tb);
        sp_tick_stats sb = tb.stats;
        sp_error err = {0};
        CHECK_INT(ta.stats.diverged + sb.diverged, 0);
        sp_run_view v;
        if (!get_run(f.store_a, &key, &v)) {
            fixture_close(&f);
            return;
        }
        sp_invocation_list inv;
        list_invocations(f.store_a, &key, &inv);
        if (ta.stats.applied == 0) {
            /* b won: a's commit was refused (stale), its decision dropped. */
            seen_stale = true;
            printf("stale: the competitor's quarantine won in round %d\n", round + 1);
            CHECK_INT(sb.quarantined, 1);
            CHECK(v.quarantined);
            CHECK_STR(v.quarantine_code, "budget.state-bytes");
            CHECK_INT(ta.stats.duplicate, 0);
            CHECK_INT(ta.stats.claimed, 0);
            CHECK_INT(v.revision, 0);
            CHECK_INT(inv.n, 0); /* the invocation a's decision scheduled never existed */
            CHECK_INT(atomic_load(&CALLS), 0);
        } else {
            /* a won: b found the start consumed (or lost its quarantine to
             * the revision check); a's committed work was claimed once. b
             * may then have quarantined the run on s1's result (its budget
             * is too small for any turn), which is not this test's concern. */
            CHECK_INT(ta.stats.applied, 1);
            CHECK(v.revision >= 1);
            CHECK(inv.n >= 1);
            CHECK_INT(ta.stats.claimed + sb.claimed, 1);
            for (size_t i = 0; i < inv.n; i++)
                CHECK_INT(inv.items[i].attempt_number, 1);
        }
        sp_invocation_list_free(&inv);
        sp_run_view_free(&v);
        if (seen_stale) {
            /* Lift the quarantine; engine a completes the run from the
             * pending run.started, as if the lost decision never existed. */
            sp_disposition d;
            CHECK_INT(sp_engine_release(f.a, &key, &d, &err), 0);
            sp_error_clear(&err);
            sp_park park = SP_PARK_FAILED;
            CHECK_INT(sp_engine_run_until_parked(f.a, &key, &park, NULL, NULL, &err), 0);
            sp_error_clear(&err);
            CHECK_INT(park, SP_PARK_COMPLETED);
            CHECK_INT(atomic_load(&CALLS), 2);
            list_invocations(f.store_a, &key, &inv);
            CHECK_INT(inv.n, 2);
            for (size_t i = 0; i < inv.n; i++)
                CHECK_INT(inv.items[i].attempt_number, 1);
            sp_invocation_list_free(&inv);
            check_events_consumed(f.store_a, &key, 3);
        }
        fixture_close(&f);
    }
    CHECK(seen_stale);
}

int main(void)
{
    test_lost_commit_duplicate();
    test_lost_commit_stale();
    return check_done("test_engine");
}
