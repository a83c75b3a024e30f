/*
 * suite.c - the store conformance suite's frame (environments, races, the
 * runner) and its first scenarios: S01 competing coordinators, S02 replay of
 * every mutation after the state moved on, S03 digest mismatch and identical
 * concurrent requests. The other scenarios live in suite_attempts.c
 * (S04, S05, S09, S10, S12, X02) and suite_more.c (S06-S08, S11, S13, S14,
 * X01, X03, X04).
 */
#include "suite_util.h"

/* ---- environments ---- */

bool store_env_open(store_env *e, const store_factory *f, bool two_instances)
{
    memset(e, 0, sizeof *e);
    e->f = f;
    manual_clock_set(&e->clock, 1000);
    if (!f->fresh(f->ctx, e->location))
        return false;
    sp_error err = {0};
    sp_clock clock = manual_clock_of(&e->clock);
    e->a = f->open(f->ctx, e->location, &clock, &err);
    e->b = e->a && two_instances ? f->open(f->ctx, e->location, &clock, &err) : e->a;
    if (!e->a || !e->b) {
        fprintf(stderr, "%s: cannot open %s: %s %s\n", f->name, e->location, err.code, err.message);
        sp_error_clear(&err);
        return false;
    }
    return true;
}

static void close_instances(store_env *e)
{
    if (e->b && e->b != e->a)
        sp_store_close(e->b);
    sp_store_close(e->a);
    e->a = e->b = NULL;
}

bool store_env_reopen(store_env *e)
{
    bool two = e->b != e->a;
    close_instances(e);
    sp_error err = {0};
    sp_clock clock = manual_clock_of(&e->clock);
    e->a = e->f->open(e->f->ctx, e->location, &clock, &err);
    e->b = e->a && two ? e->f->open(e->f->ctx, e->location, &clock, &err) : e->a;
    sp_error_clear(&err);
    return e->a && e->b;
}

void store_env_close(store_env *e)
{
    close_instances(e);
    e->f->destroy(e->f->ctx, e->location);
}

/* ---- assertions and drivers ---- */

void expect_rc(const char *file, int line, sp_store_rc rc, sp_error *err, sp_store_rc want,
               const char *code)
{
    check_count++;
    if (rc != want || (code && strcmp(err->code, code) != 0))
        check_fail(file, line, "got %s/%s (%s), want %s/%s", sp_store_rc_name(rc), err->code,
                   err->message, sp_store_rc_name(want), code ? code : "*");
    sp_error_clear(err);
}

void drive_to_claim(store_env *e, const sp_run_key *key, const char *worker, uint64_t lease_ms,
                    sp_claim *claim)
{
    sp_create_run_res cr;
    sp_error err = {0};
    EXPECT_OK(fx_create(e->a, key, key->run_id, &cr, &err), &err);
    CHECK_INT(fx_settle(e->a, key), 1);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, key, inv));
    EXPECT_OK(fx_claim(e->a, key, inv, worker, lease_ms, "1", claim, &err), &err);
}

bool due_has(store_env *e, const char *id)
{
    sp_due_page p;
    sp_error err = {0};
    bool found = false;
    EXPECT_OK(sp_store_scan_due(e->a, NULL, 0, &p, &err), &err);
    for (size_t i = 0; i < p.n; i++)
        found = found || strcmp(p.items[i].id, id) == 0;
    sp_due_page_free(&p);
    return found;
}

/* ---- races ---- */

typedef struct race_job {
    pthread_barrier_t *barrier;
    sp_store *s;
    race_fn fn;
    void *arg;
    race_result *out;
} race_job;

static void *race_thread(void *p)
{
    race_job *j = p;
    sp_error err = {0};
    pthread_barrier_wait(j->barrier);
    j->out->rc = j->fn(j->s, j->arg, &j->out->disposition, &j->out->value, &err);
    snprintf(j->out->code, sizeof j->out->code, "%s", err.code);
    sp_error_clear(&err);
    return NULL;
}

void race(store_env *e, size_t n, race_fn const *fns, void *const *args, race_result *out)
{
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)n);
    race_job *jobs = calloc(n, sizeof *jobs);
    pthread_t *threads = calloc(n, sizeof *threads);
    for (size_t i = 0; i < n; i++) {
        out[i] = (race_result){0};
        jobs[i] = (race_job){&barrier, i % 2 ? e->b : e->a, fns[i], args[i], &out[i]};
        pthread_create(&threads[i], NULL, race_thread, &jobs[i]);
    }
    for (size_t i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&barrier);
    free(jobs);
    free(threads);
}

size_t race_count(const race_result *r, size_t n, sp_store_rc rc, sp_disposition d)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += r[i].rc == rc && (rc != SP_STORE_OK || r[i].disposition == d);
    return count;
}

static sp_store_rc race_commit(sp_store *s, void *arg, sp_disposition *d, uint64_t *value,
                               sp_error *err)
{
    sp_commit_turn_res res;
    sp_store_rc rc = sp_store_commit_turn(s, arg, &res, err);
    *d = res.disposition;
    *value = res.revision;
    return rc;
}

/* ---- S01: two coordinators commit against one revision ---- */

static void s01_sequential(store_env *e)
{
    sp_run_key k = fx_key("run_s01");
    sp_create_run_res cr;
    sp_error err = {0};
    EXPECT_OK(fx_create(e->a, &k, "s01", &cr, &err), &err);
    fx_decision d1, d2;
    CHECK(fx_decide(e->a, &k, &d1));
    CHECK(fx_decide(e->b, &k, &d2));
    sp_commit_turn_res r1, r2;
    EXPECT_OK(sp_store_commit_turn(e->a, &d1.req, &r1, &err), &err);
    CHECK_INT(r1.disposition, SP_APPLIED);
    CHECK_INT(r1.revision, 1);
    CHECK_INT(r1.applied_sequence, 1);
    sp_run_view v;
    bool found = false;
    EXPECT_OK(sp_store_get_run(e->b, &k, &v, &found, &err), &err);
    CHECK(found && strcmp(v.status, "running") == 0 && v.revision == 1 &&
          v.applied_sequence == 1 && v.next_sequence == 2 && v.snapshot &&
          strcmp(v.snapshot_digest, d1.req.snapshot_digest) == 0);
    sp_run_view_free(&v);
    /* the same decision from the other coordinator collapses into the receipt */
    EXPECT_OK(sp_store_commit_turn(e->b, &d2.req, &r2, &err), &err);
    CHECK_INT(r2.disposition, SP_DUPLICATE);
    CHECK_INT(r2.revision, r1.revision);
    CHECK_INT(r2.applied_sequence, r1.applied_sequence);
    CHECK_STR(r2.decision_digest, r1.decision_digest);
    /* a different request against the old revision is stale */
    sp_commit_turn_req other = d2.req;
    other.request_id = "commit/1/start-from-b";
    EXPECT(sp_store_commit_turn(e->b, &other, &r2, &err), &err, SP_STORE_STALE,
           "revision.mismatch");
    /* a different decision under the same request ID never succeeds */
    other = d2.req;
    other.status = "waiting";
    EXPECT(sp_store_commit_turn(e->b, &other, &r2, &err), &err, SP_STORE_CONFLICT,
           "request.digest-mismatch");
    sp_invocation_list l;
    EXPECT_OK(sp_store_list_invocations(e->a, &k, &l, &err), &err);
    CHECK_INT(l.n, 1);
    CHECK_STR(l.n ? l.items[0].status : "", "pending");
    sp_invocation_list_free(&l);
    fx_decision_free(&d1);
    fx_decision_free(&d2);
}

/* The same race with threads: identical requests collapse, different ones go stale. */
static void s01_threads(store_env *e)
{
    sp_run_key k = fx_key("run_s01_race");
    sp_create_run_res cr;
    sp_error err = {0};
    EXPECT_OK(fx_create(e->a, &k, "s01-race", &cr, &err), &err);
    fx_decision d;
    CHECK(fx_decide(e->a, &k, &d));
    sp_commit_turn_req reqs[4] = {d.req, d.req, d.req, d.req};
    reqs[2].request_id = "commit/1/start-c";
    reqs[3].request_id = "commit/1/start-d";
    race_fn fns[4] = {race_commit, race_commit, race_commit, race_commit};
    void *args[4] = {&reqs[0], &reqs[1], &reqs[2], &reqs[3]};
    race_result r[4];
    race(e, 4, fns, args, r);
    size_t applied = race_count(r, 4, SP_STORE_OK, SP_APPLIED);
    size_t duplicate = race_count(r, 4, SP_STORE_OK, SP_DUPLICATE);
    size_t stale = race_count(r, 4, SP_STORE_STALE, SP_APPLIED);
    CHECK_INT(applied, 1);
    CHECK_INT(applied + duplicate + stale, 4);
    CHECK(stale >= 1); /* at least one of the two foreign request IDs lost */
    for (size_t i = 0; i < 4; i++)
        if (r[i].rc == SP_STORE_STALE)
            CHECK_STR(r[i].code, "revision.mismatch");
    sp_run_view v;
    bool found;
    EXPECT_OK(sp_store_get_run(e->a, &k, &v, &found, &err), &err);
    CHECK_INT(v.revision, 1);
    sp_run_view_free(&v);
    sp_invocation_list l;
    EXPECT_OK(sp_store_list_invocations(e->a, &k, &l, &err), &err);
    CHECK_INT(l.n, 1);
    sp_invocation_list_free(&l);
    fx_decision_free(&d);
}

void store_s01_competing_commits(store_env *e)
{
    s01_sequential(e);
    s01_threads(e);
}

/* ---- S02: every mutation replayed after the state moved on ---- */

typedef struct s02 {
    sp_run_key k, k2;
    fx_decision d[4]; /* three commits of k, one of k2 */
    sp_claim claim, claim2;
    fx_body late;
    sp_create_run_res create;
    sp_commit_turn_res commit[4];
    sp_heartbeat_res beat, hold;
    sp_finish_res finish, expire;
    sp_append_event_res signal;
    sp_flag_res quarantine, release;
    sp_late_evidence_res late_res;
} s02;

static sp_heartbeat_req s02_beat(const s02 *t)
{
    return (sp_heartbeat_req){t->claim.attempt, "heartbeat/s02/1", 10000};
}

static sp_hold_req s02_hold(const s02 *t)
{
    return (sp_hold_req){t->claim.attempt, "hold/s02/1", "{\"pid\":7}", 20000, 30000, 0, 0};
}

static sp_quarantine_req s02_quarantine(const s02 *t)
{
    return (sp_quarantine_req){t->k, "quarantine/s02/1", 2, "test.hold", "{}"};
}

static sp_late_evidence_req s02_late(const s02 *t)
{
    return (sp_late_evidence_req){t->claim.attempt, "late/s02/1", "result-after-lease",
                                  fx_evidence(&t->late)};
}

static void s02_commit(store_env *e, const sp_run_key *k, s02 *t, int i)
{
    sp_error err = {0};
    CHECK(fx_decide(e->a, k, &t->d[i]));
    EXPECT_OK(sp_store_commit_turn(e->a, &t->d[i].req, &t->commit[i], &err), &err);
    CHECK_INT(t->commit[i].disposition, SP_APPLIED);
}

static void s02_attempt(store_env *e, s02 *t)
{
    sp_error err = {0};
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &t->k, inv));
    EXPECT_OK(fx_claim(e->a, &t->k, inv, "w1", 10000, "1", &t->claim, &err), &err);
    manual_clock_set(&e->clock, 2000);
    sp_heartbeat_req beat = s02_beat(t);
    EXPECT_OK(sp_store_heartbeat(e->a, &beat, &t->beat, &err), &err);
    CHECK_INT(t->beat.lease_until_ms, 12000);
    sp_hold_req hold = s02_hold(t);
    EXPECT_OK(sp_store_hold_attempt(e->a, &hold, &t->hold, &err), &err);
    CHECK_INT(t->hold.lease_until_ms, 20000);
    manual_clock_set(&e->clock, 3000);
    EXPECT_OK(fx_finish(e->a, &t->claim.attempt, "success", &t->finish, &err), &err);
}

static void s02_first(store_env *e, s02 *t)
{
    sp_error err = {0};
    EXPECT_OK(fx_create(e->a, &t->k, "s02", &t->create, &err), &err);
    s02_commit(e, &t->k, t, 0);
    s02_attempt(e, t);
    s02_commit(e, &t->k, t, 1); /* -> waiting for "go" */
    EXPECT_OK(fx_signal(e->a, &t->k, "m1", "go", &t->signal, &err), &err);
    sp_quarantine_req q = s02_quarantine(t);
    EXPECT_OK(sp_store_quarantine_run(e->a, &q, &t->quarantine, &err), &err);
    sp_release_req rel = {t->k, "release/s02/1"};
    EXPECT_OK(sp_store_release_run(e->a, &rel, &t->release, &err), &err);
    t->late = fx_result(&t->claim.attempt, "unknown");
    sp_late_evidence_req late = s02_late(t);
    EXPECT_OK(sp_store_record_late_evidence(e->a, &late, &t->late_res, &err), &err);
    s02_commit(e, &t->k, t, 2); /* -> completed */
    sp_create_run_res cr;
    EXPECT_OK(fx_create(e->a, &t->k2, "s02-expire", &cr, &err), &err);
    s02_commit(e, &t->k2, t, 3);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &t->k2, inv));
    EXPECT_OK(fx_claim(e->a, &t->k2, inv, "w2", 100, "1", &t->claim2, &err), &err);
    manual_clock_set(&e->clock, 5000);
    EXPECT_OK(fx_expire(e->a, &t->claim2.attempt, SP_EXPIRE_LEASE, &t->expire, &err), &err);
}

static void s02_check_claim(const sp_claim *x, const sp_claim *y)
{
    CHECK_INT(y->disposition, SP_DUPLICATE);
    CHECK_STR(y->attempt.attempt_id, x->attempt.attempt_id);
    CHECK_STR(y->attempt.owner, x->attempt.owner);
    CHECK_INT(y->attempt.fence, x->attempt.fence);
    CHECK_INT(y->attempt_number, x->attempt_number);
    CHECK_INT(y->lease_until_ms, x->lease_until_ms);
    CHECK_INT(y->deadline_ms, x->deadline_ms);
    CHECK_STR(y->node_id, x->node_id);
    CHECK_STR(y->action_id, x->action_id);
    CHECK_STR(y->effect_key, x->effect_key);
    CHECK_STR(y->input_digest, x->input_digest);
    CHECK_STR(y->input, x->input);
}

static void s02_replay_runs(store_env *e, const s02 *t)
{
    sp_error err = {0};
    sp_create_run_res cr;
    EXPECT_OK(fx_create(e->b, &t->k, "s02", &cr, &err), &err);
    CHECK(cr.disposition == SP_DUPLICATE && cr.started_sequence == 1);
    CHECK_STR(cr.key.run_id, t->k.run_id);
    for (int i = 0; i < 4; i++) {
        sp_commit_turn_res r;
        EXPECT_OK(sp_store_commit_turn(e->b, &t->d[i].req, &r, &err), &err);
        CHECK_INT(r.disposition, SP_DUPLICATE);
        CHECK_INT(r.revision, t->commit[i].revision);
        CHECK_INT(r.applied_sequence, t->commit[i].applied_sequence);
        CHECK_STR(r.decision_digest, t->commit[i].decision_digest);
    }
    sp_append_event_res sig;
    EXPECT_OK(fx_signal(e->b, &t->k, "m1", "go", &sig, &err), &err);
    CHECK(sig.disposition == SP_DUPLICATE && sig.sequence == t->signal.sequence &&
          sig.accepted_at_ms == t->signal.accepted_at_ms);
    sp_quarantine_req q = s02_quarantine(t);
    sp_flag_res f;
    EXPECT_OK(sp_store_quarantine_run(e->b, &q, &f, &err), &err);
    CHECK(f.disposition == SP_DUPLICATE && f.value);
    sp_release_req rel = {t->k, "release/s02/1"};
    EXPECT_OK(sp_store_release_run(e->b, &rel, &f, &err), &err);
    CHECK(f.disposition == SP_DUPLICATE && !f.value);
}

static void s02_replay_attempts(store_env *e, const s02 *t)
{
    sp_error err = {0};
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->b, &t->k, inv));
    sp_claim c;
    EXPECT_OK(fx_claim(e->b, &t->k, inv, "w1", 10000, "1", &c, &err), &err);
    s02_check_claim(&t->claim, &c);
    sp_claim_free(&c);
    sp_heartbeat_res h;
    sp_heartbeat_req beat = s02_beat(t);
    EXPECT_OK(sp_store_heartbeat(e->b, &beat, &h, &err), &err);
    CHECK(h.disposition == SP_DUPLICATE && h.lease_until_ms == t->beat.lease_until_ms);
    sp_hold_req hold = s02_hold(t);
    EXPECT_OK(sp_store_hold_attempt(e->b, &hold, &h, &err), &err);
    CHECK(h.disposition == SP_DUPLICATE && h.lease_until_ms == t->hold.lease_until_ms);
    sp_finish_res fr;
    EXPECT_OK(fx_finish(e->b, &t->claim.attempt, "success", &fr, &err), &err);
    CHECK(fr.disposition == SP_DUPLICATE && fr.result_sequence == t->finish.result_sequence);
    EXPECT_OK(fx_expire(e->b, &t->claim2.attempt, SP_EXPIRE_LEASE, &fr, &err), &err);
    CHECK(fr.disposition == SP_DUPLICATE && fr.result_sequence == t->expire.result_sequence);
    sp_late_evidence_res lr;
    sp_late_evidence_req late = s02_late(t);
    EXPECT_OK(sp_store_record_late_evidence(e->b, &late, &lr, &err), &err);
    CHECK(lr.disposition == SP_DUPLICATE && lr.audit_id == t->late_res.audit_id);
}

static void s02_receipts(store_env *e, const s02 *t)
{
    static const char *const ops[][2] = {
        {"start/s02", "create_run"},      {"commit/1/start", "commit_turn"},
        {"heartbeat/s02/1", "heartbeat"}, {"hold/s02/1", "hold_attempt"},
        {"signal/m1", "append_event"},    {"quarantine/s02/1", "quarantine_run"},
        {"release/s02/1", "release_run"}, {"late/s02/1", "record_late_evidence"}};
    sp_error err = {0};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        sp_receipt r;
        bool found = false;
        EXPECT_OK(sp_store_get_receipt(e->b, &t->k, ops[i][0], &r, &found, &err), &err);
        CHECK(found);
        CHECK_STR(found ? r.operation : "", ops[i][1]);
        CHECK(found && strncmp(r.request_digest, "sha256:", 7) == 0);
        sp_receipt_free(&r);
    }
    sp_receipt r;
    bool found = false;
    EXPECT_OK(sp_store_get_receipt(e->b, &t->k, "start/s02", &r, &found, &err), &err);
    CHECK_STR(found ? r.value : "", "{\"key\":{\"runId\":\"run_s02\",\"tenant\":\"default\"},"
                                    "\"startedSequence\":\"1\"}");
    sp_receipt_free(&r);
}

void store_s02_replay_after_progress(store_env *e)
{
    s02 t = {.k = fx_key("run_s02"), .k2 = fx_key("run_s02_expire")};
    s02_first(e, &t);
    char *before = fx_state(e->a, &t.k), *before2 = fx_state(e->a, &t.k2);
    manual_clock_set(&e->clock, 99000);
    s02_replay_runs(e, &t);
    s02_replay_attempts(e, &t);
    s02_receipts(e, &t);
    char *after = fx_state(e->a, &t.k), *after2 = fx_state(e->a, &t.k2);
    CHECK_STR(after, before); /* no writes at all */
    CHECK_STR(after2, before2);
    CHECK(strstr(after, "status=completed") != NULL);
    free(after);
    free(after2);
    free(before);
    free(before2);
    for (int i = 0; i < 4; i++)
        fx_decision_free(&t.d[i]);
    sp_claim_free(&t.claim);
    sp_claim_free(&t.claim2);
    fx_body_free(&t.late);
}

/* ---- S03: request digest mismatch; identical concurrent requests ---- */

typedef struct s03_claim {
    sp_claim_req req;
} s03_claim;

static sp_store_rc race_append(sp_store *s, void *arg, sp_disposition *d, uint64_t *value,
                               sp_error *err)
{
    sp_append_event_res res;
    sp_store_rc rc = sp_store_append_event(s, arg, &res, err);
    *d = res.disposition;
    *value = res.sequence;
    return rc;
}

static sp_store_rc race_claim(sp_store *s, void *arg, sp_disposition *d, uint64_t *value,
                              sp_error *err)
{
    sp_claim res;
    sp_store_rc rc = sp_store_claim_attempt(s, arg, &res, err);
    *d = res.disposition;
    *value = res.attempt.fence;
    sp_claim_free(&res);
    return rc;
}

#define S03_THREADS 8

static void s03_race(store_env *e, race_fn fn, void *req, uint64_t want_value)
{
    race_fn fns[S03_THREADS];
    void *args[S03_THREADS];
    race_result r[S03_THREADS];
    for (size_t i = 0; i < S03_THREADS; i++)
        fns[i] = fn, args[i] = req;
    race(e, S03_THREADS, fns, args, r);
    CHECK_INT(race_count(r, S03_THREADS, SP_STORE_OK, SP_APPLIED), 1);
    CHECK_INT(race_count(r, S03_THREADS, SP_STORE_OK, SP_DUPLICATE), S03_THREADS - 1);
    for (size_t i = 0; i < S03_THREADS; i++)
        CHECK_INT(r[i].value, want_value);
}

static void s03_mismatch(store_env *e, const sp_run_key *k)
{
    sp_error err = {0};
    /* create_run: same request ID, another start key */
    fx_body started = fx_body_of("{\"input\":{\"job\":\"run_s03\"},\"runId\":\"run_s03\","
                                 "\"tenant\":\"default\"}");
    size_t len;
    const char *package = fx_package(&len);
    sp_create_run_req cr = {*k,      "start/s03", "s03-other", fx_package_digest(),
                            package, len,         NULL,        fx_evidence(&started)};
    sp_create_run_res res;
    EXPECT(sp_store_create_run(e->b, &cr, &res, &err), &err, SP_STORE_CONFLICT,
           "request.digest-mismatch");
    fx_body_free(&started);
    /* append_event: same request ID, another body - receipt first, before event.id-conflict */
    sp_append_event_res ar;
    EXPECT_OK(fx_signal(e->a, k, "m1", "go", &ar, &err), &err);
    fx_body other = fx_body_of("{\"name\":\"stop\"}");
    sp_append_event_req req = {*k, "signal/m1", "sig:m1", "signal.received", fx_evidence(&other)};
    EXPECT(sp_store_append_event(e->b, &req, &ar, &err), &err, SP_STORE_CONFLICT,
           "request.digest-mismatch");
    fx_body_free(&other);
}

void store_s03_digest_mismatch_and_concurrency(store_env *e)
{
    sp_run_key k = fx_key("run_s03");
    sp_create_run_res cr;
    sp_error err = {0};
    EXPECT_OK(fx_create(e->a, &k, "s03", &cr, &err), &err);
    fx_decision d;
    CHECK(fx_decide(e->a, &k, &d));
    s03_race(e, race_commit, &d.req, 1);
    fx_decision_free(&d);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &k, inv));
    sp_claim_req claim = {k, "claim/s03", inv, "w1", 1000, NULL, 0, {"host-test", 1, 2}, 0, false};
    s03_race(e, race_claim, &claim, 1);
    fx_body body = fx_body_of("{\"name\":\"go\"}");
    sp_append_event_req append = {k, "signal/m2", "sig:m2", "signal.received", fx_evidence(&body)};
    s03_race(e, race_append, &append, 2);
    fx_body_free(&body);
    CHECK_INT(fx_event_count(e->a, &k, "sig:m2"), 1);
    CHECK_INT(fx_event_count(e->a, &k, NULL), 2);
    sp_invocation_list l;
    EXPECT_OK(sp_store_list_invocations(e->a, &k, &l, &err), &err);
    CHECK(l.n == 1 && l.items[0].fence == 1 && strcmp(l.items[0].status, "running") == 0);
    sp_invocation_list_free(&l);
    s03_mismatch(e, &k);
}

/* ---- the runner ---- */

const store_test STORE_SUITE[] = {
    {"S01 competing coordinators", store_s01_competing_commits},
    {"S02 replay after progress", store_s02_replay_after_progress},
    {"S03 digest mismatch, identical concurrent requests",
     store_s03_digest_mismatch_and_concurrency},
    {"S04 result after expiry", store_s04_result_after_expiry},
    {"S05 heartbeat before/at/after the lease end", store_s05_heartbeat_deadline},
    {"S06 event ID conflict", store_s06_event_id_conflict},
    {"S07 concurrent appends, clock steps back", store_s07_concurrent_appends},
    {"S08 invalid second command", store_s08_invalid_second_command},
    {"S09 future notBeforeMs", store_s09_not_before},
    {"S10 fences", store_s10_fences},
    {"S11 quarantine", store_s11_quarantine},
    {"S12 finish vs expire race", store_s12_finish_expire_race},
    {"S13 create_run repeated", store_s13_create_repeated},
    {"S14 reserved kinds, oversize bodies", store_s14_reserved_and_oversize},
    {"S15 settle_attempt: result, decision and claims in one request", store_s15_settle},
    {"X01 scans and cursors", store_x01_scans_and_cursors},
    {"X02 holds and deadlines", store_x02_holds_and_deadlines},
    {"X03 blobs, secret, packages, capabilities", store_x03_blobs_secret_packages},
    {"X04 request validation and missing subjects", store_x04_request_validation},
    {"X05 held attempts: relative bounds, scan_held, takeover scope", store_x05_held_attempts},
    {"B01 batches: one commit, savepoints, abort, lazy write lock", store_b01_batches},
    {"T01 format 0.2 commands: timers, fire_timer, activity.cancel", store_t01_timers_and_cancel},
    {"L01 step logs: put, replace, refusals, order, filters, pages, batches", store_l01_logs},
    {NULL, NULL},
};

static void run_one(const store_factory *f, const store_test *t, bool two)
{
    store_env e;
    int before = check_failures;
    if (!store_env_open(&e, f, two)) {
        check_fail(__FILE__, __LINE__, "%s: %s: cannot open a store", f->name, t->name);
        return;
    }
    t->fn(&e);
    store_env_close(&e);
    printf("%s%s %s: %s\n", f->name, two ? " (two instances)" : "", t->name,
           check_failures == before ? "ok" : "FAILED");
}

void store_suite_run(const store_factory *f)
{
    for (const store_test *t = STORE_SUITE; t->name; t++)
        run_one(f, t, false);
}

void store_suite_cross(const store_factory *f)
{
    static const store_test cross[] = {
        {"S01 competing coordinators", store_s01_competing_commits},
        {"S02 replay after progress", store_s02_replay_after_progress},
        {"S03 digest mismatch, identical concurrent requests",
         store_s03_digest_mismatch_and_concurrency},
        {"S07 concurrent appends, clock steps back", store_s07_concurrent_appends},
        {"S12 finish vs expire race", store_s12_finish_expire_race},
    };
    for (size_t i = 0; i < sizeof cross / sizeof cross[0]; i++)
        run_one(f, &cross[i], true);
}
