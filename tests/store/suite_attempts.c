/*
 * suite_attempts.c - the attempt scenarios of the store suite: S04 result
 * after expiry, S05 heartbeats around the lease end, S09 future notBeforeMs,
 * S10 fences, S12 finish vs expire, X02 holder handles and deadlines.
 */
#include "suite_util.h"

static char *expired_body(const sp_attempt_ref *ref)
{
    char *s = malloc(512);
    snprintf(s, 512,
             "{\"attempt\":%s,\"attemptId\":\"%s\",\"error\":null,\"invocationId\":\"%s\","
             "\"outcome\":null,\"output\":null,\"retryable\":true,\"status\":\"expired\"}",
             strrchr(ref->attempt_id, '.') ? strrchr(ref->attempt_id, '.') + 1 : "0",
             ref->attempt_id, ref->invocation_id);
    return s;
}

static void check_invocation(store_env *e, const sp_run_key *k, const char *status,
                             unsigned attempt, const char *attempt_status)
{
    sp_invocation_list l;
    sp_error err = {0};
    EXPECT_OK(sp_store_list_invocations(e->a, k, &l, &err), &err);
    CHECK_INT(l.n, 1);
    if (l.n == 1) {
        CHECK_STR(l.items[0].status, status);
        CHECK_INT(l.items[0].attempt_number, attempt);
        CHECK_STR(l.items[0].attempt_status, attempt_status);
    }
    sp_invocation_list_free(&l);
}

/* ---- S04 ---- */

static void s04_late_evidence(store_env *e, const sp_run_key *k, const sp_claim *c)
{
    sp_error err = {0};
    char *before = fx_state(e->a, k);
    fx_body b = fx_result(&c->attempt, "success");
    sp_late_evidence_req lr = {c->attempt, "late/s04/1", "result-after-lease", fx_evidence(&b)};
    sp_late_evidence_res r1, r2, r3;
    EXPECT_OK(sp_store_record_late_evidence(e->a, &lr, &r1, &err), &err);
    CHECK(r1.disposition == SP_APPLIED && r1.audit_id > 0);
    lr.request_id = "late/s04/2";
    EXPECT_OK(sp_store_record_late_evidence(e->b, &lr, &r2, &err), &err);
    CHECK(r2.disposition == SP_APPLIED && r2.audit_id > r1.audit_id);
    lr.request_id = "late/s04/1";
    EXPECT_OK(sp_store_record_late_evidence(e->b, &lr, &r3, &err), &err);
    CHECK(r3.disposition == SP_DUPLICATE && r3.audit_id == r1.audit_id);
    sp_late_evidence_req missing = lr;
    snprintf(missing.attempt.attempt_id, sizeof missing.attempt.attempt_id, "%s.9",
             c->attempt.invocation_id);
    missing.request_id = "late/s04/3";
    EXPECT(sp_store_record_late_evidence(e->a, &missing, &r3, &err), &err, SP_STORE_NOT_FOUND,
           "attempt.not-found");
    char *after = fx_state(e->a, k);
    CHECK_STR(after, before); /* late evidence changes no run, event or attempt */
    free(before);
    free(after);
    fx_body_free(&b);
}

void store_s04_result_after_expiry(store_env *e)
{
    sp_run_key k = fx_key("run_s04");
    sp_claim c;
    sp_error err = {0};
    drive_to_claim(e, &k, "w1", 100, &c);
    CHECK_INT(c.lease_until_ms, 1100);
    manual_clock_set(&e->clock, 1100);
    sp_finish_res x, f;
    EXPECT_OK(fx_expire(e->a, &c.attempt, SP_EXPIRE_LEASE, &x, &err), &err);
    CHECK(x.disposition == SP_APPLIED && x.result_sequence == 2);
    EXPECT(fx_finish(e->b, &c.attempt, "success", &f, &err), &err, SP_STORE_STALE, "lease.lost");
    sp_event_list l;
    EXPECT_OK(sp_store_list_events(e->a, &k, 1, 10, &l, &err), &err);
    CHECK_INT(l.n, 1); /* the inbox holds only the expired result */
    char *want = expired_body(&c.attempt), id[SP_ID_LEN + 32];
    snprintf(id, sizeof id, "att:%s", c.attempt.attempt_id);
    if (l.n == 1) {
        CHECK_STR(l.events[0].event_id, id);
        CHECK_STR(l.events[0].kind, "activity.result");
        CHECK_STR(l.events[0].body, want); /* byte-identical canonical expired body */
        CHECK_INT(l.events[0].accepted_at_ms, 1100);
    }
    sp_event_list_free(&l);
    free(want);
    check_invocation(e, &k, "settled", 1, "expired");
    s04_late_evidence(e, &k, &c);
    /* the kernel sees the expiry: an idempotent action is retried after the backoff */
    CHECK_INT(fx_settle(e->a, &k), 1);
    check_invocation(e, &k, "pending", 2, "expired");
    EXPECT_OK(sp_store_list_events(e->a, &k, 1, 10, &l, &err), &err);
    CHECK(l.n == 1 && l.events[0].consumed && l.events[0].consumed_revision == 2);
    CHECK_STR(l.n == 1 ? l.events[0].diagnostics : NULL,
              "[{\"code\":\"activity.retry-scheduled\",\"details\":{\"attempt\":2},"
              "\"nodeId\":\"work\"}]");
    sp_event_list_free(&l);
    sp_claim_free(&c);
}

/* ---- S05 ---- */

static sp_store_rc beat(store_env *e, const sp_claim *c, const char *id, uint64_t extend,
                        sp_heartbeat_res *r, sp_error *err)
{
    sp_heartbeat_req req = {c->attempt, id, extend};
    return sp_store_heartbeat(e->a, &req, r, err);
}

static void s05_deadline_cap(store_env *e)
{
    sp_run_key k = fx_key("run_s05_cap");
    sp_error err = {0};
    sp_create_run_res cr;
    EXPECT_OK(fx_create(e->a, &k, "s05-cap", &cr, &err), &err);
    CHECK_INT(fx_settle(e->a, &k), 1);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &k, inv));
    sp_claim_req req = {k, "claim/s05/cap", inv, "w1", 1000, NULL, 1500, {"h", 1, 1}, 0, false};
    sp_claim c;
    EXPECT_OK(sp_store_claim_attempt(e->a, &req, &c, &err), &err);
    CHECK(c.lease_until_ms == 1500 && c.deadline_ms == 1500);
    manual_clock_set(&e->clock, 1200);
    sp_heartbeat_res r;
    EXPECT_OK(beat(e, &c, "hb/cap/1", 1000, &r, &err), &err);
    CHECK_INT(r.lease_until_ms, 1500); /* capped at the deadline */
    sp_claim_free(&c);
}

void store_s05_heartbeat_deadline(store_env *e)
{
    sp_run_key k = fx_key("run_s05");
    sp_claim c;
    sp_error err = {0};
    sp_heartbeat_res r;
    drive_to_claim(e, &k, "w1", 100, &c); /* lease until 1100 */
    manual_clock_set(&e->clock, 1099);
    EXPECT_OK(beat(e, &c, "hb/1", 100, &r, &err), &err);
    CHECK(r.disposition == SP_APPLIED && r.lease_until_ms == 1199);
    manual_clock_set(&e->clock, 1199); /* exactly at the lease end: lost */
    EXPECT(beat(e, &c, "hb/2", 100, &r, &err), &err, SP_STORE_STALE, "lease.lost");
    manual_clock_set(&e->clock, 1300);
    EXPECT(beat(e, &c, "hb/3", 100, &r, &err), &err, SP_STORE_STALE, "lease.lost");
    EXPECT_OK(beat(e, &c, "hb/1", 100, &r, &err), &err); /* the receipt, extending nothing */
    CHECK(r.disposition == SP_DUPLICATE && r.lease_until_ms == 1199);
    sp_invocation_list l;
    EXPECT_OK(sp_store_list_invocations(e->a, &k, &l, &err), &err);
    CHECK(l.n == 1 && l.items[0].lease_until_ms == 1199);
    sp_invocation_list_free(&l);
    sp_finish_res x;
    EXPECT_OK(fx_expire(e->b, &c.attempt, SP_EXPIRE_LEASE, &x, &err), &err);
    manual_clock_set(&e->clock, 1000); /* even with the clock back, no resurrection */
    EXPECT(beat(e, &c, "hb/4", 100000, &r, &err), &err, SP_STORE_STALE, "lease.lost");
    check_invocation(e, &k, "settled", 1, "expired");
    sp_claim_free(&c);
    s05_deadline_cap(e);
}

/* ---- S09 ---- */

void store_s09_not_before(store_env *e)
{
    sp_run_key k = fx_key("run_s09");
    sp_claim c, c2;
    sp_error err = {0};
    drive_to_claim(e, &k, "w1", 10000, &c);
    manual_clock_set(&e->clock, 2000);
    sp_finish_res f;
    EXPECT_OK(fx_finish(e->a, &c.attempt, "failure", &f, &err), &err);
    CHECK_INT(fx_settle(e->a, &k), 1); /* retry attempt 2, notBeforeMs 2000 + 500 */
    check_invocation(e, &k, "pending", 2, "finished");
    const char *inv = c.attempt.invocation_id;
    CHECK(!due_has(e, inv));
    EXPECT(fx_claim(e->a, &k, inv, "w2", 1000, "2", &c2, &err), &err, SP_STORE_CONFLICT,
           "invocation.not-due");
    manual_clock_set(&e->clock, 2499);
    CHECK(!due_has(e, inv));
    EXPECT(fx_claim(e->b, &k, inv, "w2", 1000, "3", &c2, &err), &err, SP_STORE_CONFLICT,
           "invocation.not-due");
    manual_clock_set(&e->clock, 2500);
    CHECK(due_has(e, inv));
    EXPECT_OK(fx_claim(e->b, &k, inv, "w2", 1000, "4", &c2, &err), &err);
    CHECK(c2.attempt_number == 2 && c2.attempt.fence == 2 && c2.lease_until_ms == 3500);
    char want[SP_ID_LEN + 16];
    snprintf(want, sizeof want, "%s.2", inv);
    CHECK_STR(c2.attempt.attempt_id, want);
    CHECK_STR(c2.effect_key, c.effect_key); /* retries keep the effect key and input */
    CHECK_STR(c2.input, c.input);
    CHECK_STR(c2.input, "{\"job\":\"run_s09\"}");
    CHECK(!due_has(e, inv));
    sp_claim_free(&c);
    sp_claim_free(&c2);
}

/* ---- S10 ---- */

static void s10_stale_refs(store_env *e, const sp_claim *old, const sp_claim *cur)
{
    sp_error err = {0};
    sp_heartbeat_res h;
    sp_finish_res f;
    sp_heartbeat_req hb = {old->attempt, "hb/s10/old", 1000};
    EXPECT(sp_store_heartbeat(e->a, &hb, &h, &err), &err, SP_STORE_STALE, "lease.lost");
    EXPECT(fx_finish(e->a, &old->attempt, "success", &f, &err), &err, SP_STORE_STALE, "lease.lost");
    sp_attempt_ref forged = cur->attempt;
    forged.fence = old->attempt.fence; /* the current attempt with the old fence */
    hb = (sp_heartbeat_req){forged, "hb/s10/forged-fence", 1000};
    EXPECT(sp_store_heartbeat(e->b, &hb, &h, &err), &err, SP_STORE_STALE, "lease.lost");
    EXPECT(fx_finish(e->b, &forged, "success", &f, &err), &err, SP_STORE_STALE, "lease.lost");
    EXPECT(fx_expire(e->b, &forged, SP_EXPIRE_ABANDONED, &f, &err), &err, SP_STORE_NOT_FOUND,
           "attempt.not-found");
    forged = cur->attempt;
    snprintf(forged.owner, sizeof forged.owner, "%s", old->attempt.owner);
    hb = (sp_heartbeat_req){forged, "hb/s10/forged-owner", 1000};
    EXPECT(sp_store_heartbeat(e->b, &hb, &h, &err), &err, SP_STORE_STALE, "lease.lost");
}

void store_s10_fences(store_env *e)
{
    sp_run_key k = fx_key("run_s10");
    sp_claim c1, c2;
    sp_error err = {0};
    drive_to_claim(e, &k, "w1", 100, &c1);
    CHECK_INT(c1.attempt.fence, 1);
    manual_clock_set(&e->clock, 1100);
    sp_finish_res f;
    EXPECT_OK(fx_expire(e->a, &c1.attempt, SP_EXPIRE_LEASE, &f, &err), &err);
    CHECK_INT(fx_settle(e->a, &k), 1);
    manual_clock_set(&e->clock, 1600);
    EXPECT_OK(fx_claim(e->b, &k, c1.attempt.invocation_id, "w2", 1000, "2", &c2, &err), &err);
    CHECK(c2.attempt.fence > c1.attempt.fence);
    s10_stale_refs(e, &c1, &c2);
    sp_heartbeat_req hb = {c2.attempt, "hb/s10/current", 1000};
    sp_heartbeat_res h;
    EXPECT_OK(sp_store_heartbeat(e->a, &hb, &h, &err), &err);
    CHECK_INT(h.lease_until_ms, 2600);
    EXPECT_OK(fx_finish(e->a, &c2.attempt, "success", &f, &err), &err);
    CHECK_INT(f.disposition, SP_APPLIED);
    check_invocation(e, &k, "settled", 2, "finished");
    sp_claim_free(&c1);
    sp_claim_free(&c2);
}

/* ---- S12 ---- */

static sp_store_rc race_finish(sp_store *s, void *arg, sp_disposition *d, uint64_t *value,
                               sp_error *err)
{
    sp_finish_res r;
    sp_store_rc rc = fx_finish(s, arg, "success", &r, err);
    *d = r.disposition;
    *value = r.result_sequence;
    return rc;
}

static sp_store_rc race_expire(sp_store *s, void *arg, sp_disposition *d, uint64_t *value,
                               sp_error *err)
{
    sp_finish_res r;
    sp_store_rc rc = fx_expire(s, arg, SP_EXPIRE_ABANDONED, &r, err);
    *d = r.disposition;
    *value = r.result_sequence;
    return rc;
}

static void s12_one(store_env *e, int i, int *finish_won)
{
    char run[64], id[SP_ID_LEN + 32];
    snprintf(run, sizeof run, "run_s12_%d", i);
    sp_run_key k = fx_key(run);
    sp_claim c;
    drive_to_claim(e, &k, "w1", 100000, &c);
    race_fn fns[2] = {i % 2 ? race_finish : race_expire, i % 2 ? race_expire : race_finish};
    void *args[2] = {&c.attempt, &c.attempt};
    race_result r[2];
    race(e, 2, fns, args, r);
    CHECK_INT(race_count(r, 2, SP_STORE_OK, SP_APPLIED), 1);
    CHECK_INT(race_count(r, 2, SP_STORE_STALE, SP_APPLIED), 1);
    for (int j = 0; j < 2; j++)
        if (r[j].rc == SP_STORE_STALE)
            CHECK_STR(r[j].code, "lease.lost");
        else
            *finish_won += fns[j] == race_finish;
    snprintf(id, sizeof id, "att:%s", c.attempt.attempt_id);
    CHECK_INT(fx_event_count(e->a, &k, id), 1);
    CHECK_INT(fx_event_count(e->a, &k, NULL), 2);
    sp_claim_free(&c);
}

void store_s12_finish_expire_race(store_env *e)
{
    int finish_won = 0;
    for (int i = 0; i < 16; i++)
        s12_one(e, i, &finish_won);
    /* time decides when the clock sits exactly on the lease end */
    sp_run_key k = fx_key("run_s12_time");
    sp_claim c;
    sp_error err = {0};
    drive_to_claim(e, &k, "w1", 100, &c);
    manual_clock_set(&e->clock, 1100);
    sp_finish_res f;
    EXPECT(fx_finish(e->a, &c.attempt, "success", &f, &err), &err, SP_STORE_STALE, "lease.lost");
    EXPECT_OK(fx_expire(e->b, &c.attempt, SP_EXPIRE_LEASE, &f, &err), &err);
    EXPECT(fx_expire(e->a, &c.attempt, SP_EXPIRE_OWNER_DEAD, &f, &err), &err, SP_STORE_CONFLICT,
           "request.digest-mismatch"); /* same request ID, another reason */
    sp_claim_free(&c);
    printf("  S12: finish won %d of 16 races\n", finish_won);
}

/* ---- X02 ---- */

static void x02_expire_reasons(store_env *e)
{
    sp_error err = {0};
    sp_finish_res f;
    static const sp_expire_reason reasons[] = {SP_EXPIRE_PROBE_DEAD, SP_EXPIRE_OWNER_DEAD,
                                               SP_EXPIRE_ABANDONED};
    for (int i = 0; i < 3; i++) {
        char run[32];
        snprintf(run, sizeof run, "run_x02_%d", i);
        sp_run_key k = fx_key(run);
        sp_claim c;
        drive_to_claim(e, &k, "w1", 100000, &c);
        EXPECT(fx_expire(e->a, &c.attempt, SP_EXPIRE_LEASE, &f, &err), &err, SP_STORE_CONFLICT,
               "lease.not-due");
        sp_expire_req req = {c.attempt, "expire/other", SP_EXPIRE_DEADLINE};
        EXPECT(sp_store_expire_attempt(e->a, &req, &f, &err), &err, SP_STORE_CONFLICT,
               "deadline.not-due"); /* no deadline at all */
        req = (sp_expire_req){c.attempt, "expire/reason", reasons[i]};
        EXPECT_OK(sp_store_expire_attempt(e->a, &req, &f, &err), &err); /* before the lease end */
        check_invocation(e, &k, "settled", 1, "expired");
        sp_claim_free(&c);
    }
}

static void x02_holder_bounds(store_env *e, const sp_claim *c)
{
    sp_error err = {0};
    sp_heartbeat_res h;
    char *big = malloc(SP_STORE_HOLDER_MAX + 2);
    memset(big, 'a', SP_STORE_HOLDER_MAX + 1);
    big[0] = big[SP_STORE_HOLDER_MAX - 1] = '"';
    big[SP_STORE_HOLDER_MAX] = '\0'; /* exactly 4 KiB: accepted */
    sp_hold_req req = {c->attempt, "hold/x02/max", big, 9000, 0, 0, 0};
    EXPECT_OK(sp_store_hold_attempt(e->a, &req, &h, &err), &err);
    big[SP_STORE_HOLDER_MAX - 1] = 'a';
    big[SP_STORE_HOLDER_MAX] = '"';
    big[SP_STORE_HOLDER_MAX + 1] = '\0';
    req.request_id = "hold/x02/big";
    req.holder = big;
    EXPECT(sp_store_hold_attempt(e->a, &req, &h, &err), &err, SP_STORE_QUOTA, "holder.too-large");
    req.request_id = "hold/x02/bad";
    req.holder = "{ \"pid\": 1 }";
    EXPECT(sp_store_hold_attempt(e->a, &req, &h, &err), &err, SP_STORE_CONFLICT, "holder.invalid");
    free(big);
}

void store_x02_holds_and_deadlines(store_env *e)
{
    sp_run_key k = fx_key("run_x02");
    sp_error err = {0};
    sp_create_run_res cr;
    EXPECT_OK(fx_create(e->a, &k, "x02", &cr, &err), &err);
    CHECK_INT(fx_settle(e->a, &k), 1);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &k, inv));
    sp_claim_req creq = {k,   "claim/x02",           inv,  "step-token-1",
                         100, "{\"actor\":\"ana\"}", 5000, {"", 0, 0}, 0, false};
    sp_claim c;
    EXPECT_OK(sp_store_claim_attempt(e->a, &creq, &c, &err), &err);
    CHECK(c.lease_until_ms == 1100 && c.deadline_ms == 5000);
    sp_heartbeat_res h;
    sp_hold_req hold = {c.attempt, "hold/x02/1", "{\"pid\":7}", 9000, 0, 0, 0};
    EXPECT_OK(sp_store_hold_attempt(e->a, &hold, &h, &err), &err);
    CHECK_INT(h.lease_until_ms, 5000); /* min(requested, the kept deadline) */
    hold = (sp_hold_req){c.attempt, "hold/x02/2", "{\"pid\":8}", 9000, 4000, 0, 0};
    EXPECT_OK(sp_store_hold_attempt(e->a, &hold, &h, &err), &err);
    CHECK_INT(h.lease_until_ms, 4000);
    sp_invocation_list l;
    EXPECT_OK(sp_store_list_invocations(e->a, &k, &l, &err), &err);
    CHECK(l.n == 1 && l.items[0].deadline_ms == 4000 && l.items[0].lease_until_ms == 4000 &&
          l.items[0].holder && strcmp(l.items[0].holder, "{\"pid\":8}") == 0 &&
          strcmp(l.items[0].owner, "step-token-1") == 0);
    sp_invocation_list_free(&l);
    manual_clock_set(&e->clock, 2000);
    sp_heartbeat_req hb = {c.attempt, "renew/x02/1", 10000};
    EXPECT_OK(sp_store_heartbeat(e->a, &hb, &h, &err), &err);
    CHECK_INT(h.lease_until_ms, 4000); /* renew is capped at the deadline */
    x02_holder_bounds(e, &c);
    manual_clock_set(&e->clock, 3999);
    sp_expire_req x = {c.attempt, "expire/x02", SP_EXPIRE_DEADLINE};
    sp_finish_res f;
    EXPECT(sp_store_expire_attempt(e->a, &x, &f, &err), &err, SP_STORE_CONFLICT,
           "deadline.not-due");
    manual_clock_set(&e->clock, 4000);
    EXPECT_OK(sp_store_expire_attempt(e->a, &x, &f, &err), &err);
    CHECK_INT(f.result_sequence, 2);
    sp_claim_free(&c);
    x02_expire_reasons(e);
}
