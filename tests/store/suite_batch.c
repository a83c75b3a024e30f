/*
 * suite_batch.c - B01, the store's batches (store.h "group commit"), on
 * every adapter: the requests of a batch are one durable commit; a request
 * that fails inside it leaves nothing and the others stay; nothing is
 * visible to another instance before the commit; an aborted batch leaves
 * nothing; a batch that only reads takes no write lock and costs no
 * commit; requests whose runs the batch locked ahead take the reads made
 * for them, and read again after another request on their run or a
 * rollback of the batch's transaction; a request that fails after it wrote
 * is undone alone, or (without a savepoint) fails the batch, which made
 * again commits the others; settles run on the reads their claims'
 * batch predicted (PostgreSQL), and a prediction the database no longer
 * holds fails the batch with store.prediction-missed, never with an
 * answer computed from it; a second batch on one thread and a commit
 * without one are refused with their codes.
 *
 * What it must never do: look at an adapter's tables (the other instance's
 * views and the store's own counters tell).
 */
#include "suite_util.h"

static bool visible(sp_store *s, const char *run_id)
{
    sp_run_key k = fx_key(run_id);
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    if (sp_store_get_run(s, &k, &v, &found, &err) != SP_STORE_OK) {
        sp_error_clear(&err);
        return false;
    }
    if (found)
        sp_run_view_free(&v);
    return found;
}

static uint64_t commits(sp_store *s)
{
    sp_store_counters c;
    sp_store_counters_get(s, &c);
    return c.commits;
}

/* Three requests, the middle one refused: one commit, two runs. */
static void b01_isolation(store_env *e, sp_store *other)
{
    sp_error err = {0};
    sp_create_run_res r;
    sp_run_key a = fx_key("b01_a"), bad = fx_key("b01_bad"), c = fx_key("b01_c");
    uint64_t before = commits(e->a);
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    CHECK(sp_store_in_batch(e->a) && !sp_store_batch_writes(e->a));
    EXPECT_OK(fx_create(e->a, &a, "b01", &r, &err), &err);
    /* the same request ID for another run: refused, inside the batch */
    EXPECT(fx_create(e->a, &bad, "b01", &r, &err), &err, SP_STORE_CONFLICT, NULL);
    EXPECT_OK(fx_create(e->a, &c, "b01c", &r, &err), &err);
    CHECK(sp_store_batch_writes(e->a));
    CHECK(visible(e->a, "b01_a"));   /* the batch sees its own writes ... */
    CHECK(!visible(other, "b01_a")); /* ... nobody else does yet */
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    CHECK(!sp_store_in_batch(e->a));
    CHECK_INT(commits(e->a) - before, 1);
    CHECK(visible(other, "b01_a") && visible(other, "b01_c") && !visible(other, "b01_bad"));
}

static void b01_abort(store_env *e, sp_store *other)
{
    sp_error err = {0};
    sp_create_run_res r;
    sp_run_key k = fx_key("b01_gone");
    uint64_t before = commits(e->a);
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    EXPECT_OK(fx_create(e->a, &k, "b01gone", &r, &err), &err);
    sp_store_batch_abort(e->a);
    CHECK(!sp_store_in_batch(e->a));
    CHECK_INT(commits(e->a) - before, 0);
    CHECK(!visible(e->a, "b01_gone") && !visible(other, "b01_gone"));
}

/* The batch's first request fails (on SQLite it runs without a savepoint
 * and its failure rolls the batch's transaction back): it leaves nothing,
 * and the next request begins the transaction again and commits. */
static void b01_first_fails(store_env *e, sp_store *other)
{
    sp_error err = {0};
    sp_create_run_res r;
    sp_run_key bad = fx_key("b01_first_bad"), d = fx_key("b01_d"), f = fx_key("b01_f");
    uint64_t before = commits(e->a);
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    EXPECT(fx_create(e->a, &bad, "b01", &r, &err), &err, SP_STORE_CONFLICT, NULL);
    CHECK(!sp_store_batch_writes(e->a));
    EXPECT_OK(fx_create(e->a, &d, "b01d", &r, &err), &err);
    EXPECT(fx_create(e->a, &bad, "b01", &r, &err), &err, SP_STORE_CONFLICT, NULL);
    EXPECT_OK(fx_create(e->a, &f, "b01f", &r, &err), &err);
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    CHECK_INT(commits(e->a) - before, 1);
    CHECK(visible(other, "b01_d") && visible(other, "b01_f") && !visible(other, "b01_first_bad"));
}

/* A batch that has only read: another instance writes meanwhile, at once. */
static void b01_reads_only(store_env *e, sp_store *other)
{
    sp_error err = {0};
    sp_create_run_res r;
    sp_run_key k = fx_key("b01_other");
    uint64_t before = commits(e->a);
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    CHECK(visible(e->a, "b01_a"));
    EXPECT_OK(fx_create(other, &k, "b01other", &r, &err), &err); /* no lock held by a */
    CHECK(!sp_store_batch_writes(e->a));
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    CHECK_INT(commits(e->a) - before, 0);
    CHECK(visible(e->a, "b01_other"));
}

static uint64_t round_trips(sp_store *s)
{
    sp_store_counters c;
    sp_store_counters_get(s, &c);
    return c.round_trips;
}

/* Runs b01_ahead_<tag>_<i>, each with a claimed attempt. */
static void ahead_claims(store_env *e, const char *tag, sp_claim *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char id[64];
        snprintf(id, sizeof id, "b01_ahead_%s_%zu", tag, i);
        sp_run_key k = fx_key(id);
        drive_to_claim(e, &k, "w-ahead", 5000, &c[i]);
    }
}

/* The settle of claim c (no decider): its result event's sequence (0 when
 * refused). */
static uint64_t ahead_settle(store_env *e, const sp_attempt_ref *ref, sp_store_rc want)
{
    sp_error err = {0};
    sp_settle_res r;
    sp_store_rc rc = fx_settle_attempt(e->a, ref, "success", NULL, &r, &err);
    if (want == SP_STORE_OK)
        EXPECT_OK(rc, &err);
    else
        EXPECT(rc, &err, want, NULL);
    uint64_t sequence = rc == SP_STORE_OK ? r.result_sequence : 0;
    if (rc == SP_STORE_OK)
        sp_settle_res_free(&r);
    return sequence;
}

/* Lock the runs of the settles of c[0..n) ahead, in the open batch. */
static void ahead_lock(store_env *e, const sp_claim *c, size_t n)
{
    sp_lock_ahead reqs[4];
    char ids[4][SP_STORE_REQUEST_ID_MAX];
    for (size_t i = 0; i < n && i < 4; i++) {
        snprintf(ids[i], sizeof ids[i], "settle/%s", c[i].attempt.attempt_id); /* fx's IDs */
        reqs[i] = (sp_lock_ahead){&c[i].attempt, ids[i]};
    }
    sp_error err = {0};
    EXPECT_OK(sp_store_batch_lock_ahead(e->a, reqs, n < 4 ? n : 4, &err), &err);
}

/* sp_store_batch_lock_ahead: three settles take the reads made for them
 * (PostgreSQL: one exchange for all three, none of their own); a request on
 * a run before its settle makes that settle read again (it sees the
 * request's event); a first request that rolls the batch's transaction
 * back releases the runs, another instance writes to one, and its settle
 * reads again and sees that write. Without a batch: store.batch-closed. */
static void b01_lock_ahead(store_env *e, sp_store *other)
{
    sp_error err = {0};
    sp_claim c[7];
    ahead_claims(e, "warm", c, 1);
    ahead_settle(e, &c[0].attempt, SP_STORE_OK); /* its statements prepared */
    sp_claim_free(&c[0]);
    ahead_claims(e, "x", c, 7);
    EXPECT(sp_store_batch_lock_ahead(e->a, NULL, 0, &err), &err, SP_STORE_CONFLICT,
           "store.batch-closed");
    /* taken */
    bool counts = round_trips(e->a) > 0; /* a driver that counts them (PostgreSQL) */
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    uint64_t before = round_trips(e->a);
    ahead_lock(e, c, 3);
    for (int i = 0; i < 3; i++)
        CHECK_INT(ahead_settle(e, &c[i].attempt, SP_STORE_OK), 2); /* after run.started */
    if (counts)
        CHECK_INT(round_trips(e->a) - before, 1);
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    /* a request on the run first */
    sp_append_event_res a;
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    ahead_lock(e, c + 3, 2);
    EXPECT_OK(fx_signal(e->a, &c[3].attempt.key, "m-ahead", "go", &a, &err), &err);
    CHECK_INT(ahead_settle(e, &c[3].attempt, SP_STORE_OK), a.sequence + 1);
    CHECK_INT(ahead_settle(e, &c[4].attempt, SP_STORE_OK), 2);
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    /* the first request rolls the transaction back: the runs are released */
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    ahead_lock(e, c + 5, 2);
    sp_attempt_ref stale = c[5].attempt;
    stale.fence++;
    ahead_settle(e, &stale, SP_STORE_STALE);
    EXPECT_OK(fx_signal(other, &c[6].attempt.key, "m-other", "go", &a, &err), &err);
    CHECK_INT(ahead_settle(e, &c[6].attempt, SP_STORE_OK), a.sequence + 1);
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    for (int i = 0; i < 7; i++)
        sp_claim_free(&c[i]);
}

static size_t result_events(store_env *e, const sp_claim *c)
{
    char id[SP_ID_LEN + 24];
    snprintf(id, sizeof id, "att:%s", c->attempt.attempt_id);
    return fx_event_count(e->a, &c->attempt.key, id);
}

/* More settles than a batch locks ahead (SP_LOCK_AHEAD_MAX), with more
 * writes than a PostgreSQL connection keeps unanswered (postgres.h: 256):
 * the first 64 take the reads made ahead in one exchange, their writes are
 * answered on the way when the pipeline is full (one exchange), the last
 * one reads on its own (one more); one commit, every result stored. */
static void b01_lock_ahead_bounds(store_env *e)
{
    enum { N = SP_LOCK_AHEAD_MAX + 1 };
    sp_error err = {0};
    sp_claim *c = calloc(N, sizeof *c);
    sp_lock_ahead *reqs = calloc(N, sizeof *reqs);
    char(*ids)[SP_STORE_REQUEST_ID_MAX] = calloc(N, sizeof *ids);
    if (!c || !reqs || !ids) {
        check_fail(__FILE__, __LINE__, "out of memory");
        free(c), free(reqs), free(ids);
        return;
    }
    ahead_claims(e, "bounds", c, N);
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    uint64_t trips = round_trips(e->a), committed = commits(e->a);
    for (size_t i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "settle/%s", c[i].attempt.attempt_id);
        reqs[i] = (sp_lock_ahead){&c[i].attempt, ids[i]};
    }
    EXPECT_OK(sp_store_batch_lock_ahead(e->a, reqs, N, &err), &err);
    for (size_t i = 0; i < N; i++)
        CHECK_INT(ahead_settle(e, &c[i].attempt, SP_STORE_OK), 2);
    if (trips > 0) /* a driver that counts them (PostgreSQL) */
        CHECK_INT(round_trips(e->a) - trips, 3);
    EXPECT_OK(sp_store_batch_commit(e->a, &err), &err);
    CHECK_INT(commits(e->a) - committed, 1);
    for (size_t i = 0; i < N; i++) {
        CHECK_INT(result_events(e, &c[i]), 1);
        sp_claim_free(&c[i]);
    }
    free(c), free(reqs), free(ids);
}

/* Three settles, the second one refused after it wrote (its decision fails
 * commit_turn's predicates). It answers its own error in any case. A
 * request after the batch's first has no savepoint of its own (on both
 * stores: tx.c), so the batch fails: the third request and the commit
 * answer store.busy and nothing is stored; made again, each request in its
 * savepoint (every batch for a while after such a failure), the refused one
 * fails alone and the other two commit. */
static void b01_fails_after_writing(store_env *e)
{
    sp_error err = {0};
    sp_claim c[3];
    ahead_claims(e, "undone", c, 3);
    for (int pass = 0; pass < 2; pass++) {
        bool fails = pass == 0;
        fx_decider bad = {.bad_digest = true};
        sp_settle_res r;
        EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
        CHECK_INT(ahead_settle(e, &c[0].attempt, SP_STORE_OK), 2);
        EXPECT(fx_settle_attempt(e->a, &c[1].attempt, "success", &bad, &r, &err), &err,
               SP_STORE_CONFLICT, "snapshot.digest-mismatch");
        ahead_settle(e, &c[2].attempt, fails ? SP_STORE_UNAVAILABLE : SP_STORE_OK);
        sp_store_rc rc = sp_store_batch_commit(e->a, &err);
        if (fails) {
            CHECK(rc != SP_STORE_OK && sp_store_rc_transient(rc));
            sp_error_clear(&err);
        } else {
            EXPECT_OK(rc, &err);
        }
        CHECK(!sp_store_in_batch(e->a));
        for (int i = 0; i < 3; i++)
            CHECK_INT(result_events(e, &c[i]), !fails && i != 1);
        fx_decider_free(&bad);
    }
    for (int i = 0; i < 3; i++)
        sp_claim_free(&c[i]);
}

static sp_store_counters counters(sp_store *s)
{
    sp_store_counters c;
    sp_store_counters_get(s, &c);
    return c;
}

void store_predicted_claims(sp_store *p, const char *tag, sp_claim *c, size_t n)
{
    sp_error err = {0};
    char inv[8][SP_ID_LEN + 1];
    sp_run_key keys[8];
    for (size_t i = 0; i < n && i < 8; i++) {
        char id[64];
        snprintf(id, sizeof id, "b01_pred_%s_%zu", tag, i);
        keys[i] = fx_key(id);
        sp_create_run_res r;
        EXPECT_OK(fx_create(p, &keys[i], id, &r, &err), &err);
        CHECK_INT(fx_settle(p, &keys[i]), 1);
        CHECK(fx_invocation(p, &keys[i], inv[i]));
    }
    EXPECT_OK(sp_store_batch_begin(p, &err), &err);
    for (size_t i = 0; i < n && i < 8; i++)
        EXPECT_OK(fx_claim(p, &keys[i], inv[i], "w-pred", 60000, "1", &c[i], &err), &err);
    EXPECT_OK(sp_store_batch_commit(p, &err), &err);
}

/* The settle of `c` on `p` (no decider); its result's sequence, 0 when it
 * did not answer OK (*rc: its answer). */
static uint64_t predicted_settle(sp_store *p, const sp_claim *c, fx_decider *dc, sp_store_rc *rc,
                                 sp_error *err)
{
    sp_settle_res r;
    *rc = fx_settle_attempt(p, &c->attempt, "success", dc, &r, err);
    uint64_t sequence = *rc == SP_STORE_OK ? r.result_sequence : 0;
    if (*rc == SP_STORE_OK)
        sp_settle_res_free(&r);
    return sequence;
}

/* A settle runs on the reads its claim's batch predicted (predict.c) where
 * a statement can check them: on PostgreSQL, with the database's clock
 * (`p`, no injected clock). After one that prepares the statements, two
 * settles of one batch, the second without a savepoint, take no exchange
 * but the COMMIT. When another instance moved the second's run (a signal),
 * its guard fails: it answered OK, but the commit answers
 * store.prediction-missed and nothing of the batch is stored; made again,
 * they read, and the result follows the signal. A predicted settle whose
 * decision the store refuses answers the miss, not the refusal (computed
 * from rows the database may not hold); the batch's next settle still runs
 * on its own prediction and commits; made again, the refused one answers
 * the refusal. SQLite predicts nothing. */
static void b01_predicted(store_env *e, sp_store *other)
{
    sp_error err = {0};
    sp_store *p = e->f->open(e->f->ctx, e->location, NULL, &err);
    if (!p) {
        check_fail(__FILE__, __LINE__, "an instance on the database's clock: %s", err.code);
        sp_error_clear(&err);
        return;
    }
    bool checkable = round_trips(p) > 0; /* PostgreSQL */
    sp_claim c[7];
    store_predicted_claims(p, "x", c, 7);
    sp_store_rc rc;
    EXPECT_OK(sp_store_batch_begin(p, &err), &err); /* its statements prepared */
    CHECK_INT(predicted_settle(p, &c[0], NULL, &rc, &err), 2);
    EXPECT_OK(sp_store_batch_commit(p, &err), &err);
    /* two on predictions: one exchange, the COMMIT's */
    sp_store_counters before = counters(p);
    EXPECT_OK(sp_store_batch_begin(p, &err), &err);
    CHECK_INT(predicted_settle(p, &c[1], NULL, &rc, &err), 2);
    CHECK_INT(predicted_settle(p, &c[2], NULL, &rc, &err), 2);
    EXPECT_OK(sp_store_batch_commit(p, &err), &err);
    sp_store_counters after = counters(p);
    CHECK_INT(after.predicted - before.predicted, checkable ? 2 : 0);
    CHECK_INT(after.missed - before.missed, 0);
    if (checkable)
        CHECK_INT(after.round_trips - before.round_trips, 1);
    /* the second's run moved: the batch misses; made again, they read */
    sp_append_event_res signal;
    EXPECT_OK(fx_signal(other, &c[4].attempt.key, "m-pred", "go", &signal, &err), &err);
    before = counters(p);
    for (int pass = 0; pass < 2; pass++) {
        bool misses = checkable && pass == 0;
        EXPECT_OK(sp_store_batch_begin(p, &err), &err);
        CHECK_INT(predicted_settle(p, &c[3], NULL, &rc, &err), 2);
        CHECK_INT(predicted_settle(p, &c[4], NULL, &rc, &err), misses ? 2 : signal.sequence + 1);
        rc = sp_store_batch_commit(p, &err);
        if (misses)
            EXPECT(rc, &err, SP_STORE_UNAVAILABLE, SP_STORE_PREDICTION_MISSED);
        else
            EXPECT_OK(rc, &err);
        for (int i = 3; i < 5; i++)
            CHECK_INT(result_events(e, &c[i]), !misses);
    }
    after = counters(p);
    CHECK_INT(after.predicted - before.predicted, checkable ? 2 : 0);
    CHECK_INT(after.missed - before.missed, checkable ? 1 : 0);
    /* a refused decision on predicted rows, behind another settle (no
     * savepoint of its own): the miss, for it and the batch (SQLite: the
     * refusal, and the batch fails with store.busy); made again (each
     * request in its savepoint), the refusal alone */
    for (int pass = 0; pass < 2; pass++) {
        bool misses = checkable && pass == 0;
        fx_decider bad = {.bad_digest = true};
        EXPECT_OK(sp_store_batch_begin(p, &err), &err);
        if (pass == 0)
            CHECK_INT(predicted_settle(p, &c[5], NULL, &rc, &err), 2);
        predicted_settle(p, &c[6], &bad, &rc, &err);
        if (misses)
            EXPECT(rc, &err, SP_STORE_UNAVAILABLE, SP_STORE_PREDICTION_MISSED);
        else
            EXPECT(rc, &err, SP_STORE_CONFLICT, "snapshot.digest-mismatch");
        if (pass == 1)
            CHECK_INT(predicted_settle(p, &c[5], NULL, &rc, &err), 2);
        rc = sp_store_batch_commit(p, &err);
        if (pass == 0)
            EXPECT(rc, &err, SP_STORE_UNAVAILABLE,
                   misses ? SP_STORE_PREDICTION_MISSED : "store.busy");
        else
            EXPECT_OK(rc, &err);
        CHECK_INT(result_events(e, &c[5]), pass == 1);
        fx_decider_free(&bad);
    }
    CHECK_INT(result_events(e, &c[5]), 1);
    CHECK_INT(result_events(e, &c[6]), 0);
    for (int i = 0; i < 7; i++)
        sp_claim_free(&c[i]);
    sp_store_close(p);
}

static void b01_misuse(store_env *e)
{
    sp_error err = {0};
    EXPECT(sp_store_batch_commit(e->a, &err), &err, SP_STORE_CONFLICT, "store.batch-closed");
    EXPECT_OK(sp_store_batch_begin(e->a, &err), &err);
    EXPECT(sp_store_batch_begin(e->a, &err), &err, SP_STORE_CONFLICT, "store.batch-open");
    sp_store_batch_abort(e->a);
    sp_store_batch_abort(e->a); /* without one: nothing */
    CHECK(!sp_store_in_batch(e->a));
}

void store_b01_batches(store_env *e)
{
    sp_error err = {0};
    sp_clock clock = manual_clock_of(&e->clock);
    sp_store *other = e->f->open(e->f->ctx, e->location, &clock, &err);
    if (!other) {
        check_fail(__FILE__, __LINE__, "a second instance: %s", err.code);
        sp_error_clear(&err);
        return;
    }
    b01_isolation(e, other);
    b01_abort(e, other);
    b01_first_fails(e, other);
    b01_reads_only(e, other);
    b01_lock_ahead(e, other);
    b01_lock_ahead_bounds(e);
    b01_predicted(e, other);
    b01_fails_after_writing(e); /* last: its batches answer each request alone after it */
    b01_misuse(e);
    sp_store_close(other);
}
