/*
 * suite_settle.c - S15, settle_attempt on every adapter (store.h,
 * docs/step-path.md): a finished attempt, the decision on its result and
 * the claims that decision asks for, as one request.
 *
 * Asserted through the views only: the result event is stored consumed by
 * the decision's revision; a replay answers the same value as a duplicate
 * and writes nothing; a wanted invocation that is due is claimed (attempt
 * running, fence taken, lease from the store's now) and one that is not due
 * stays pending; the decider is not asked when the lease is gone (nothing
 * written), when the run is quarantined or an older event is pending (the
 * result is stored pending); a decision that fails commit_turn's predicates
 * fails the whole request and finish_attempt still takes the result; a
 * decider that passes leaves the event to a later commit_turn; a decision
 * that schedules an invocation the run has already is refused by the
 * invocations' key (store.constraint), nothing written.
 *
 * What it must never do: look at an adapter's tables (views only).
 */
#include "suite_util.h"

static sp_store_rc settle(store_env *e, const sp_claim *c, const char *status, fx_decider *dc,
                          sp_settle_res *res, sp_error *err)
{
    return fx_settle_attempt(e->a, &c->attempt, status, dc, res, err);
}

static const sp_event *find_event(const sp_event_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->events[i].event_id, id) == 0)
            return &l->events[i];
    return NULL;
}

/* The result event att:<attemptId>: consumed by `revision` (0: pending). */
static void check_result_event(store_env *e, const sp_run_key *k, const sp_claim *c,
                               uint64_t revision)
{
    sp_event_list l;
    sp_error err = {0};
    EXPECT_OK(sp_store_list_events(e->a, k, 0, 0, &l, &err), &err);
    char id[SP_ID_LEN + 32];
    snprintf(id, sizeof id, "att:%s", c->attempt.attempt_id);
    const sp_event *ev = find_event(&l, id);
    CHECK(ev != NULL);
    if (ev) {
        CHECK(ev->consumed == (revision != 0));
        CHECK_INT(ev->consumed_revision, revision);
    }
    sp_event_list_free(&l);
}

static const sp_invocation_view *find_invocation(const sp_invocation_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].invocation_id, id) == 0)
            return &l->items[i];
    return NULL;
}

/* Success: the decision commits with the result consumed; a replay is a
 * duplicate with the same answer and no writes. */
static void s15_commit_and_replay(store_env *e)
{
    sp_run_key k = fx_key("run-s15a");
    sp_claim c;
    drive_to_claim(e, &k, "w-settle", 5000, &c);
    sp_error err = {0};
    fx_decider td = {0};
    sp_settle_res r;
    EXPECT_OK(settle(e, &c, "success", &td, &r, &err), &err);
    CHECK(td.decided && td.calls == 2); /* the snapshot, then the decision */
    CHECK(r.disposition == SP_APPLIED && r.turned);
    CHECK_INT(r.revision, 2);
    CHECK_STR(r.decision_digest, td.d.decision_digest);
    CHECK_INT(r.nclaims, 0);
    check_result_event(e, &k, &c, 2);
    sp_run_view v;
    bool found = false;
    EXPECT_OK(sp_store_get_run(e->a, &k, &v, &found, &err), &err);
    CHECK(found && v.revision == 2 && v.applied_sequence == r.result_sequence);
    CHECK_STR(v.snapshot_digest, td.d.req.snapshot_digest);
    CHECK_STR(v.status, "waiting");
    sp_run_view_free(&v);
    fx_decision none;
    CHECK(!fx_decide(e->a, &k, &none)); /* nothing left pending */
    char *before = fx_state(e->a, &k);
    fx_decider again = {0};
    sp_settle_res r2;
    EXPECT_OK(settle(e, &c, "success", &again, &r2, &err), &err);
    CHECK(r2.disposition == SP_DUPLICATE && r2.turned && again.calls == 0);
    CHECK_INT(r2.revision, 2);
    CHECK_INT(r2.result_sequence, r.result_sequence);
    char *after = fx_state(e->a, &k);
    CHECK_STR(after, before);
    /* the same request ID with another result is refused */
    EXPECT(settle(e, &c, "failure", NULL, &r2, &err), &err, SP_STORE_CONFLICT,
           "request.digest-mismatch");
    free(before);
    free(after);
    sp_settle_res_free(&r);
    sp_settle_res_free(&r2);
    fx_decider_free(&td);
    sp_claim_free(&c);
}

#define S15_INV "inv_5151515151515151515151515151515a"
#define S15_LATER "inv_5151515151515151515151515151515b"

static sp_command_rec schedule(const char *command_id, const char *inv, const char *not_before)
{
    static char payloads[2][512];
    char *p = payloads[strcmp(inv, S15_INV) == 0 ? 0 : 1];
    snprintf(p, 512,
             "{\"actionId\":\"work\",\"activationId\":\"extra/%s\",\"attempt\":1,"
             "\"effectKey\":\"ek-%s\",\"input\":{\"job\":\"x\"},\"invocationId\":\"%s\","
             "\"nodeId\":\"work\",\"notBeforeMs\":\"%s\"}",
             inv, inv, inv, not_before);
    return (sp_command_rec){command_id, "extra", "activity.schedule", p, strlen(p), NULL};
}

/* A wanted invocation that is due is claimed in the request; one not due
 * stays pending; an unwanted one stays pending. */
static void s15_claims(store_env *e)
{
    sp_run_key k = fx_key("run-s15b");
    sp_claim c;
    drive_to_claim(e, &k, "w-settle", 5000, &c);
    sp_error err = {0};
    sp_command_rec extra[] = {schedule("cmd_s15_a", S15_INV, "0"),
                              schedule("cmd_s15_b", S15_LATER, "999999")};
    const char *want[] = {S15_INV, S15_LATER};
    fx_decider td = {.extra = extra, .nextra = 2, .claim = want, .nclaim = 2};
    sp_settle_res r;
    EXPECT_OK(settle(e, &c, "success", &td, &r, &err), &err);
    CHECK(r.turned);
    CHECK_INT(r.nclaims, 1);
    if (r.nclaims == 1) {
        const sp_claim *n = &r.claims[0];
        CHECK_STR(n->attempt.invocation_id, S15_INV);
        CHECK_STR(n->attempt.owner, "w-settle");
        CHECK_INT(n->attempt_number, 1);
        CHECK(n->attempt.fence == c.attempt.fence + 1);
        CHECK_INT(n->lease_until_ms, 1000 + 3000);
        CHECK_STR(n->input, "{\"job\":\"x\"}");
        CHECK_STR(n->node_id, "work");
    }
    sp_invocation_list l;
    EXPECT_OK(sp_store_list_invocations(e->a, &k, &l, &err), &err);
    const sp_invocation_view *a = find_invocation(&l, S15_INV);
    const sp_invocation_view *b = find_invocation(&l, S15_LATER);
    CHECK(a && strcmp(a->status, "running") == 0 && a->has_attempt &&
          strcmp(a->attempt_status, "running") == 0);
    CHECK(b && strcmp(b->status, "pending") == 0 && !b->has_attempt);
    sp_invocation_list_free(&l);
    /* the claimed attempt is a real one: it heartbeats under its fence */
    if (r.nclaims == 1) {
        sp_heartbeat_req hb = {r.claims[0].attempt, "hb/s15", 1000};
        sp_heartbeat_res h;
        EXPECT_OK(sp_store_heartbeat(e->a, &hb, &h, &err), &err);
    }
    sp_settle_res_free(&r);
    fx_decider_free(&td);
    sp_claim_free(&c);
}

/* Where the decider is never asked: a lost lease (nothing written), a
 * quarantined run and an older pending event (the result pending). */
static void s15_no_turn(store_env *e)
{
    sp_error err = {0};
    sp_settle_res r;
    sp_run_key k1 = fx_key("run-s15c");
    sp_claim c1;
    drive_to_claim(e, &k1, "w-settle", 500, &c1);
    manual_clock_set(&e->clock, 1500); /* the lease ran out */
    char *before = fx_state(e->a, &k1);
    fx_decider td = {0};
    EXPECT(settle(e, &c1, "success", &td, &r, &err), &err, SP_STORE_STALE, "lease.lost");
    char *after = fx_state(e->a, &k1);
    CHECK_STR(after, before);
    CHECK_INT(td.calls, 0);
    free(before);
    free(after);
    manual_clock_set(&e->clock, 1000);

    sp_run_key k2 = fx_key("run-s15d");
    sp_claim c2;
    drive_to_claim(e, &k2, "w-settle", 5000, &c2);
    sp_append_event_res a;
    EXPECT_OK(fx_signal(e->a, &k2, "early", "go", &a, &err), &err);
    EXPECT_OK(settle(e, &c2, "success", &td, &r, &err), &err);
    CHECK(!r.turned && td.calls == 0 && r.result_sequence == a.sequence + 1);
    check_result_event(e, &k2, &c2, 0);
    sp_settle_res_free(&r);

    sp_run_key k3 = fx_key("run-s15e");
    sp_claim c3;
    drive_to_claim(e, &k3, "w-settle", 5000, &c3);
    sp_quarantine_req q = {k3, "quarantine/s15", 1, "test.hold", NULL};
    sp_flag_res fr;
    EXPECT_OK(sp_store_quarantine_run(e->a, &q, &fr, &err), &err);
    EXPECT_OK(settle(e, &c3, "success", &td, &r, &err), &err);
    CHECK(!r.turned && td.calls == 0);
    check_result_event(e, &k3, &c3, 0);
    sp_settle_res_free(&r);
    sp_claim_free(&c1);
    sp_claim_free(&c2);
    sp_claim_free(&c3);
}

/* The settle of `c` with decider `dc` is refused whole (conflict/`code`):
 * the run's state unchanged; finish_attempt then takes the result and
 * commit_turn decides on it. Frees dc. */
static void refused_whole(store_env *e, const sp_run_key *k, const sp_claim *c, fx_decider *dc,
                          const char *code)
{
    sp_error err = {0};
    sp_settle_res r;
    char *before = fx_state(e->a, k);
    EXPECT(settle(e, c, "success", dc, &r, &err), &err, SP_STORE_CONFLICT, code);
    char *after = fx_state(e->a, k);
    CHECK_STR(after, before);
    free(before);
    free(after);
    sp_finish_res f;
    EXPECT_OK(fx_finish(e->a, &c->attempt, "success", &f, &err), &err);
    CHECK_INT(fx_settle(e->a, k), 1);
    fx_decider_free(dc);
}

/* A decision that fails commit_turn's predicates fails the request whole;
 * finish_attempt still takes the result. A decider that passes leaves the
 * event pending for commit_turn. */
static void s15_refused_and_passed(store_env *e)
{
    sp_error err = {0};
    sp_settle_res r;
    sp_run_key k = fx_key("run-s15f");
    sp_claim c;
    drive_to_claim(e, &k, "w-settle", 5000, &c);
    fx_decider bad = {.bad_digest = true};
    refused_whole(e, &k, &c, &bad, "snapshot.digest-mismatch");

    sp_run_key k2 = fx_key("run-s15g");
    sp_claim c2;
    drive_to_claim(e, &k2, "w-settle", 5000, &c2);
    fx_decider pass = {.pass = true};
    EXPECT_OK(settle(e, &c2, "success", &pass, &r, &err), &err);
    CHECK(!r.turned && pass.calls == 1);
    check_result_event(e, &k2, &c2, 0);
    CHECK_INT(fx_settle(e->a, &k2), 1);
    check_result_event(e, &k2, &c2, 2);
    sp_settle_res_free(&r);
    sp_claim_free(&c);
    sp_claim_free(&c2);
}

/* settle_attempt does not look its own schedule commands up first
 * (ops_commit.c, check_command_ids): a decision that schedules an
 * invocation the run has already, under a new command ID, is refused by the
 * invocations' key - conflict/store.constraint, nothing written - and
 * finish_attempt still takes the result, for commit_turn to decide. */
static void s15_repeat_refused_by_keys(store_env *e)
{
    sp_run_key k = fx_key("run-s15h");
    sp_claim c;
    drive_to_claim(e, &k, "w-settle", 5000, &c);
    sp_command_rec extra[] = {schedule("cmd_s15_h", c.attempt.invocation_id, "0")};
    fx_decider again = {.extra = extra, .nextra = 1};
    refused_whole(e, &k, &c, &again, "store.constraint");
    sp_claim_free(&c);
}

void store_s15_settle(store_env *e)
{
    s15_commit_and_replay(e);
    s15_claims(e);
    s15_no_turn(e);
    s15_refused_and_passed(e);
    s15_repeat_refused_by_keys(e);
}
