/*
 * suite_more.c - the run and inbox scenarios of the store suite: S06 event
 * ID conflicts, S07 concurrent appends, S08 an invalid second command, S11
 * quarantine, S13 create_run repeated, S14 reserved kinds and oversize
 * bodies, and X01 scans/cursors, X03 blobs/secret/packages, X04 request
 * validation and missing subjects.
 */
#include <jansson.h>
#include <sched.h>

#include "suite_util.h"

static sp_store_rc append(sp_store *s, const sp_run_key *k, const char *request_id,
                          const char *event_id, const char *kind, const fx_body *b,
                          sp_append_event_res *r, sp_error *err)
{
    sp_append_event_req req = {*k, request_id, event_id, kind, fx_evidence(b)};
    return sp_store_append_event(s, &req, r, err);
}

static void create(store_env *e, const char *run)
{
    sp_run_key k = fx_key(run);
    sp_create_run_res cr;
    sp_error err = {0};
    EXPECT_OK(fx_create(e->a, &k, run, &cr, &err), &err);
}

static bool has_receipt(sp_store *s, const sp_run_key *k, const char *request_id)
{
    sp_receipt r;
    bool found = false;
    sp_error err = {0};
    EXPECT_OK(sp_store_get_receipt(s, k, request_id, &r, &found, &err), &err);
    sp_receipt_free(&r);
    return found;
}

/* ---- S06 ---- */

void store_s06_event_id_conflict(store_env *e)
{
    sp_run_key k = fx_key("run_s06");
    sp_error err = {0};
    sp_append_event_res r1, r;
    create(e, "run_s06");
    EXPECT_OK(fx_signal(e->a, &k, "m1", "go", &r1, &err), &err);
    CHECK(r1.sequence == 2 && r1.accepted_at_ms == 1000);
    manual_clock_set(&e->clock, 2000);
    fx_body go = fx_body_of("{\"name\":\"go\"}"), other = fx_body_of("{\"name\":\"other\"}");
    EXPECT(append(e->b, &k, "signal/m1-b", "sig:m1", "signal.received", &other, &r, &err), &err,
           SP_STORE_CONFLICT, "event.id-conflict");
    EXPECT(append(e->b, &k, "signal/m1-c", "sig:m1", "invocation.resolved", &go, &r, &err), &err,
           SP_STORE_CONFLICT, "event.id-conflict");
    sp_event_list l;
    EXPECT_OK(sp_store_list_events(e->a, &k, 1, 10, &l, &err), &err);
    CHECK(l.n == 1 && strcmp(l.events[0].body, "{\"name\":\"go\"}") == 0 &&
          l.events[0].accepted_at_ms == 1000 && !l.events[0].consumed);
    sp_event_list_free(&l);
    /* the identical event under another request ID: its original answer, no receipt */
    EXPECT_OK(append(e->b, &k, "signal/m1-d", "sig:m1", "signal.received", &go, &r, &err), &err);
    CHECK(r.disposition == SP_DUPLICATE && r.sequence == 2 && r.accepted_at_ms == 1000);
    CHECK(!has_receipt(e->a, &k, "signal/m1-d"));
    CHECK(!has_receipt(e->a, &k, "signal/m1-b"));
    CHECK(has_receipt(e->a, &k, "signal/m1"));
    sp_run_view v;
    bool found;
    EXPECT_OK(sp_store_get_run(e->a, &k, &v, &found, &err), &err);
    CHECK_INT(v.next_sequence, 3);
    sp_run_view_free(&v);
    fx_body_free(&go);
    fx_body_free(&other);
}

/* ---- S07 ---- */

#define S07_WRITERS 4
#define S07_EACH 25

typedef struct s07_job {
    sp_store *s;
    const sp_run_key *k;
    int writer;
    int failures;
} s07_job;

static void *s07_writer(void *p)
{
    s07_job *j = p;
    for (int i = 0; i < S07_EACH; i++) {
        char message[32];
        snprintf(message, sizeof message, "w%d-%d", j->writer, i);
        sp_append_event_res r;
        sp_error err = {0};
        if (fx_signal(j->s, j->k, message, "noise", &r, &err) != SP_STORE_OK)
            j->failures++;
        sp_error_clear(&err);
    }
    return NULL;
}

typedef struct s07_clock {
    manual_clock *clock;
    _Atomic int stop;
} s07_clock;

static void *s07_jitter(void *p)
{
    s07_clock *c = p;
    uint32_t x = 12345;
    while (!atomic_load(&c->stop)) {
        x = x * 1103515245u + 12345u;
        manual_clock_set(c->clock, 1000 + (x >> 8) % 9000); /* steps back and forth */
        sched_yield();
    }
    return NULL;
}

static void s07_check(store_env *e, const sp_run_key *k, size_t want)
{
    sp_event_list l;
    sp_error err = {0};
    EXPECT_OK(sp_store_list_events(e->a, k, 0, SP_STORE_PAGE_MAX, &l, &err), &err);
    CHECK_INT(l.n, want);
    int gaps = 0, backwards = 0;
    for (size_t i = 0; i < l.n; i++) {
        gaps += l.events[i].sequence != i + 1;
        backwards += i && l.events[i].accepted_at_ms < l.events[i - 1].accepted_at_ms;
    }
    CHECK_INT(gaps, 0);
    CHECK_INT(backwards, 0);
    sp_event_list_free(&l);
}

void store_s07_concurrent_appends(store_env *e)
{
    sp_run_key k = fx_key("run_s07");
    create(e, "run_s07");
    s07_job jobs[S07_WRITERS];
    pthread_t threads[S07_WRITERS], jitter;
    s07_clock clock = {&e->clock, 0};
    pthread_create(&jitter, NULL, s07_jitter, &clock);
    for (int i = 0; i < S07_WRITERS; i++) {
        jobs[i] = (s07_job){i % 2 ? e->b : e->a, &k, i, 0};
        pthread_create(&threads[i], NULL, s07_writer, &jobs[i]);
    }
    for (int i = 0; i < S07_WRITERS; i++)
        pthread_join(threads[i], NULL);
    atomic_store(&clock.stop, 1);
    pthread_join(jitter, NULL);
    for (int i = 0; i < S07_WRITERS; i++)
        CHECK_INT(jobs[i].failures, 0);
    s07_check(e, &k, 1 + S07_WRITERS * S07_EACH);
    /* deterministic: the clock steps back, the accepted time does not */
    sp_append_event_res r;
    sp_error err = {0};
    manual_clock_set(&e->clock, 50000);
    EXPECT_OK(fx_signal(e->a, &k, "late-1", "noise", &r, &err), &err);
    CHECK_INT(r.accepted_at_ms, 50000);
    manual_clock_set(&e->clock, 10);
    EXPECT_OK(fx_signal(e->b, &k, "late-2", "noise", &r, &err), &err);
    CHECK_INT(r.accepted_at_ms, 50000);
    manual_clock_set(&e->clock, 60000);
    EXPECT_OK(fx_signal(e->a, &k, "late-3", "noise", &r, &err), &err);
    CHECK_INT(r.accepted_at_ms, 60000);
    s07_check(e, &k, 4 + S07_WRITERS * S07_EACH);
}

/* ---- S08 ---- */

static void s08_refused(store_env *e, const fx_decision *d, sp_command_rec second, sp_store_rc want,
                        const char *code)
{
    sp_command_rec cmds[2] = {d->commands[0], second};
    sp_commit_turn_req req = d->req;
    req.commands = cmds;
    req.ncommands = 2;
    char *before = fx_state(e->a, &d->turn.key);
    sp_commit_turn_res r;
    sp_error err = {0};
    EXPECT(sp_store_commit_turn(e->a, &req, &r, &err), &err, want, code);
    char *after = fx_state(e->a, &d->turn.key);
    CHECK_STR(after, before);
    CHECK(!has_receipt(e->a, &d->turn.key, d->request_id));
    free(before);
    free(after);
}

static sp_command_rec command(const char *id, const char *kind, const char *payload)
{
    return (sp_command_rec){id, "work/1", kind, payload, strlen(payload), NULL};
}

static void s08_first_commit(store_env *e, const fx_decision *d)
{
    char retry[256];
    const char *inv = d->turn.key.run_id[0] ? strstr(d->commands[0].payload, "inv_") : NULL;
    snprintf(retry, sizeof retry,
             "{\"attempt\":2,\"invocationId\":\"%.36s\",\"notBeforeMs\":\"0\"}", inv ? inv : "");
    s08_refused(e, d,
                command("cmd_s08_a", "activity.retry",
                        "{\"attempt\":2,\"invocationId\":\"inv_00000000000000000000000000000000\","
                        "\"notBeforeMs\":\"0\"}"),
                SP_STORE_CONFLICT, "invocation.retry-invalid");
    s08_refused(e, d, command("cmd_s08_b", "activity.retry", retry), SP_STORE_CONFLICT,
                "invocation.retry-invalid"); /* pending, not settled */
    s08_refused(e, d, command("cmd_s08_c", "activity.frobnicate", "{}"), SP_STORE_INCOMPATIBLE,
                "command.unknown-kind");
    s08_refused(e, d, command("cmd_s08_c2", "activity.cancel", "{}"), SP_STORE_CONFLICT,
                "command.invalid"); /* a 0.2 kind, with a bad payload */
    s08_refused(e, d, command("cmd_s08_d", "activity.schedule", d->commands[0].payload),
                SP_STORE_CONFLICT, "invocation.exists");
    s08_refused(e, d, command(d->commands[0].command_id, "activity.schedule", "{}"),
                SP_STORE_CONFLICT, "command.id-conflict");
    s08_refused(e, d, command("cmd_s08_e", "activity.schedule", "{}"), SP_STORE_CONFLICT,
                "command.invalid");
    sp_commit_turn_res r;
    sp_error err = {0};
    EXPECT_OK(sp_store_commit_turn(e->a, &d->req, &r, &err), &err); /* no receipt was left */
    CHECK(r.disposition == SP_APPLIED && r.revision == 1);
}

/* A refused first command, its payload's value given as the engine's kernel
 * gives it: its ID check then rides in the turn's lock exchange (ops_commit.c
 * turn_extra_read) and must refuse exactly as a check of its own does. */
static void s08_first_refused(store_env *e, const sp_commit_turn_req *base, sp_command_rec c,
                              const char *code)
{
    json_t *value = json_loadb(c.payload, c.payload_len, 0, NULL);
    CHECK(value != NULL);
    c.payload_value = value;
    sp_commit_turn_req req = *base;
    req.commands = &c;
    req.ncommands = 1;
    sp_commit_turn_res r;
    sp_error err = {0};
    EXPECT(sp_store_commit_turn(e->a, &req, &r, &err), &err, SP_STORE_CONFLICT, code);
    json_decref(value);
}

void store_s08_invalid_second_command(store_env *e)
{
    sp_run_key k = fx_key("run_s08");
    sp_error err = {0};
    create(e, "run_s08");
    fx_decision d;
    CHECK(fx_decide(e->a, &k, &d));
    CHECK_INT(d.req.ncommands, 1);
    char first_id[SP_STORE_ID_MAX + 1], first_payload[1024];
    snprintf(first_id, sizeof first_id, "%s", d.commands[0].command_id);
    snprintf(first_payload, sizeof first_payload, "%.*s", (int)d.commands[0].payload_len,
             d.commands[0].payload);
    s08_first_commit(e, &d);
    fx_decision_free(&d);
    /* a retry with the wrong attempt number */
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &k, inv));
    sp_claim c;
    EXPECT_OK(fx_claim(e->a, &k, inv, "w1", 10000, "1", &c, &err), &err);
    sp_finish_res f;
    EXPECT_OK(fx_finish(e->a, &c.attempt, "failure", &f, &err), &err);
    CHECK(fx_decide(e->a, &k, &d));
    CHECK(d.req.ncommands == 1 && strcmp(d.commands[0].kind, "activity.retry") == 0);
    char payload[256];
    snprintf(payload, sizeof payload,
             "{\"attempt\":3,\"invocationId\":\"%s\",\"notBeforeMs\":\"1500\"}", inv);
    sp_command_rec wrong = command(d.commands[0].command_id, "activity.retry", payload);
    sp_commit_turn_req req = d.req;
    req.commands = &wrong;
    sp_commit_turn_res r;
    EXPECT(sp_store_commit_turn(e->a, &req, &r, &err), &err, SP_STORE_CONFLICT,
           "invocation.retry-invalid");
    /* the same checks made with the lock: the wrong attempt number, an ID the
     * first turn took, a schedule of the invocation that exists */
    s08_first_refused(e, &d.req, wrong, "invocation.retry-invalid");
    s08_first_refused(e, &d.req, command(first_id, "activity.retry", d.commands[0].payload),
                      "command.id-conflict");
    s08_first_refused(e, &d.req, command("cmd_s08_g", "activity.schedule", first_payload),
                      "invocation.exists");
    EXPECT_OK(sp_store_commit_turn(e->a, &d.req, &r, &err), &err);
    fx_decision_free(&d);
    sp_claim_free(&c);
}

/* ---- S11 ---- */

static bool ready_has(store_env *e, const sp_run_key *k)
{
    sp_key_page p;
    sp_error err = {0};
    bool found = false;
    EXPECT_OK(sp_store_scan_ready(e->a, NULL, 0, &p, &err), &err);
    for (size_t i = 0; i < p.n; i++)
        found = found || strcmp(p.keys[i].run_id, k->run_id) == 0;
    sp_key_page_free(&p);
    return found;
}

static void s11_check_run(store_env *e, const sp_run_key *k, bool quarantined, const char *code,
                          uint64_t at)
{
    sp_run_view v;
    bool found;
    sp_error err = {0};
    EXPECT_OK(sp_store_get_run(e->a, k, &v, &found, &err), &err);
    CHECK_INT(v.quarantined, quarantined);
    CHECK_STR(v.quarantine_code ? v.quarantine_code : "-", code);
    CHECK_INT(v.quarantine_at_ms, at);
    sp_run_view_free(&v);
}

static void s11_refused(store_env *e, const sp_run_key *k, const fx_decision *d, const char *inv)
{
    sp_error err = {0};
    CHECK(!ready_has(e, k));
    sp_turn t;
    bool found = true;
    EXPECT_OK(sp_store_load_turn(e->a, k, &t, &found, &err), &err);
    CHECK(!found);
    sp_commit_turn_res r;
    EXPECT(sp_store_commit_turn(e->b, &d->req, &r, &err), &err, SP_STORE_STALE, "run.quarantined");
    sp_claim c;
    EXPECT(fx_claim(e->b, k, inv, "w1", 1000, "q", &c, &err), &err, SP_STORE_STALE,
           "run.quarantined");
    CHECK(!due_has(e, inv));
    sp_append_event_res a;
    EXPECT_OK(fx_signal(e->b, k, "m2", "noise", &a, &err), &err); /* events still accepted */
}

void store_s11_quarantine(store_env *e)
{
    sp_run_key k = fx_key("run_s11");
    sp_error err = {0};
    sp_append_event_res a;
    sp_flag_res f;
    create(e, "run_s11");
    CHECK_INT(fx_settle(e->a, &k), 1);
    EXPECT_OK(fx_signal(e->a, &k, "m1", "go", &a, &err), &err);
    char inv[SP_ID_LEN + 1] = "";
    CHECK(fx_invocation(e->a, &k, inv));
    fx_decision d;
    CHECK(fx_decide(e->a, &k, &d));
    CHECK(ready_has(e, &k) && due_has(e, inv));
    sp_quarantine_req q = {k, "quarantine/s11/0", 0, "kernel.failed", "{\"why\":\"test\"}"};
    EXPECT(sp_store_quarantine_run(e->a, &q, &f, &err), &err, SP_STORE_STALE, "revision.mismatch");
    manual_clock_set(&e->clock, 2000);
    q = (sp_quarantine_req){k, "quarantine/s11/1", 1, "kernel.failed", "{\"why\":\"test\"}"};
    EXPECT_OK(sp_store_quarantine_run(e->a, &q, &f, &err), &err);
    CHECK(f.disposition == SP_APPLIED && f.value);
    s11_check_run(e, &k, true, "kernel.failed", 2000);
    s11_refused(e, &k, &d, inv);
    manual_clock_set(&e->clock, 3000);
    q.request_id = "quarantine/s11/2"; /* the matching state again: nothing changes */
    EXPECT_OK(sp_store_quarantine_run(e->b, &q, &f, &err), &err);
    CHECK(f.disposition == SP_APPLIED && f.value);
    s11_check_run(e, &k, true, "kernel.failed", 2000);
    sp_release_req rel = {k, "release/1/2000"};
    EXPECT_OK(sp_store_release_run(e->a, &rel, &f, &err), &err);
    CHECK(f.disposition == SP_APPLIED && !f.value);
    s11_check_run(e, &k, false, "-", 0);
    rel.request_id = "release/again";
    EXPECT_OK(sp_store_release_run(e->b, &rel, &f, &err), &err); /* a no-op success */
    CHECK(f.disposition == SP_APPLIED && !f.value);
    CHECK(ready_has(e, &k) && due_has(e, inv));
    sp_commit_turn_res r;
    EXPECT_OK(sp_store_commit_turn(e->b, &d.req, &r, &err), &err);
    CHECK_INT(r.revision, 2);
    fx_decision_free(&d);
}

/* ---- S13 ---- */

static sp_store_rc s13_create(store_env *e, const char *run, const char *request_id,
                              const char *start_key, bool other_package, const char *input,
                              const char *digest_override, sp_create_run_res *r, sp_error *err)
{
    char json[256], other_digest[SP_DIGEST_TEXT_LEN + 1];
    snprintf(json, sizeof json,
             "{\"input\":{\"job\":\"%s\"},\"runId\":\"%s\",\"tenant\":\"default\"}", input, run);
    fx_body started = fx_body_of(json);
    size_t len;
    const char *package = other_package ? fx_other_package(&len, other_digest) : fx_package(&len);
    const char *digest = other_package ? other_digest : fx_package_digest();
    sp_create_run_req req = {
        fx_key(run), request_id, start_key, digest_override ? digest_override : digest,
        package,     len,        NULL,      fx_evidence(&started)};
    sp_store_rc rc = sp_store_create_run(e->a, &req, r, err);
    fx_body_free(&started);
    return rc;
}

static void s13_views(store_env *e, const sp_run_key *k)
{
    sp_error err = {0};
    sp_run_key found_key;
    bool found = false;
    EXPECT_OK(sp_store_find_run(e->b, "default", "s13", &found_key, &found, &err), &err);
    CHECK(found && strcmp(found_key.run_id, "run_s13") == 0);
    EXPECT_OK(sp_store_find_run(e->b, "default", "nope", &found_key, &found, &err), &err);
    CHECK(!found);
    char *bytes = NULL;
    size_t len = 0, want_len;
    const char *want = fx_package(&want_len);
    EXPECT_OK(sp_store_get_package(e->b, fx_package_digest(), &bytes, &len, &found, &err), &err);
    CHECK(found && len == want_len && memcmp(bytes, want, len) == 0);
    free(bytes);
    sp_run_view v;
    EXPECT_OK(sp_store_get_run(e->b, k, &v, &found, &err), &err);
    CHECK(found && strcmp(v.status, "created") == 0 && v.revision == 0 && v.applied_sequence == 0 &&
          v.next_sequence == 2 && !v.snapshot && strcmp(v.start_key, "s13") == 0 &&
          v.created_at_ms == 1000 && strcmp(v.package_digest, fx_package_digest()) == 0);
    sp_run_view_free(&v);
    CHECK_INT(fx_event_count(e->a, k, "start"), 1);
}

void store_s13_create_repeated(store_env *e)
{
    sp_run_key k = fx_key("run_s13");
    sp_error err = {0};
    sp_create_run_res r1, r;
    EXPECT_OK(fx_create(e->a, &k, "s13", &r1, &err), &err);
    CHECK(r1.disposition == SP_APPLIED && r1.started_sequence == 1);
    EXPECT_OK(fx_create(e->b, &k, "s13", &r, &err), &err);
    CHECK(r.disposition == SP_DUPLICATE && r.started_sequence == 1 &&
          strcmp(r.key.run_id, "run_s13") == 0);
    EXPECT_OK(s13_create(e, "run_s13", "start/s13/again", "s13", false, "run_s13", NULL, &r, &err),
              &err);
    CHECK(r.disposition == SP_DUPLICATE && !has_receipt(e->a, &k, "start/s13/again"));
    EXPECT(s13_create(e, "run_s13", "start/s13/pkg", "s13", true, "run_s13", NULL, &r, &err), &err,
           SP_STORE_CONFLICT, "run.exists");
    EXPECT(s13_create(e, "run_s13", "start/s13/in", "s13", false, "other", NULL, &r, &err), &err,
           SP_STORE_CONFLICT, "run.exists");
    EXPECT(s13_create(e, "run_s13", "start/s13", "s13", true, "run_s13", NULL, &r, &err), &err,
           SP_STORE_CONFLICT, "request.digest-mismatch");
    EXPECT(s13_create(e, "run_s13_b", "start/s13", "s13", false, "run_s13_b", NULL, &r, &err), &err,
           SP_STORE_CONFLICT, "run.start-key-mismatch");
    char other[SP_DIGEST_TEXT_LEN + 1];
    size_t len;
    fx_other_package(&len, other);
    EXPECT(s13_create(e, "run_s13_c", "start/s13c", "s13c", false, "x", other, &r, &err), &err,
           SP_STORE_CONFLICT, "package.digest-mismatch");
    s13_views(e, &k);
}

/* ---- S14 ---- */

static fx_body string_body(size_t total)
{
    char *text = malloc(total + 1);
    memset(text, 'a', total);
    text[0] = text[total - 1] = '"';
    text[total] = '\0';
    fx_body b = {text, total, {0}};
    sp_digest_one("body", text, total, b.digest);
    return b;
}

static void s14_snapshot(store_env *e, const sp_run_key *k)
{
    fx_decision d;
    CHECK(fx_decide(e->a, k, &d));
    fx_body big = string_body(SP_STORE_SNAPSHOT_MAX + 1);
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("state", big.text, big.len, digest);
    sp_commit_turn_req req = d.req;
    req.snapshot = big.text;
    req.snapshot_len = big.len;
    req.snapshot_digest = digest;
    sp_commit_turn_res r;
    sp_error err = {0};
    EXPECT(sp_store_commit_turn(e->a, &req, &r, &err), &err, SP_STORE_QUOTA, "snapshot.too-large");
    req.snapshot_digest = d.req.snapshot_digest;
    EXPECT(sp_store_commit_turn(e->a, &req, &r, &err), &err, SP_STORE_CONFLICT,
           "snapshot.digest-mismatch");
    fx_body_free(&big);
    fx_decision_free(&d);
}

void store_s14_reserved_and_oversize(store_env *e)
{
    sp_run_key k = fx_key("run_s14"), missing = fx_key("run_s14_missing");
    sp_error err = {0};
    sp_append_event_res r;
    create(e, "run_s14");
    fx_body go = fx_body_of("{\"name\":\"go\"}");
    EXPECT(append(e->a, &k, "r/1", "x:1", "run.started", &go, &r, &err), &err, SP_STORE_CONFLICT,
           "event.reserved-kind");
    EXPECT(append(e->a, &k, "r/2", "x:2", "activity.result", &go, &r, &err), &err,
           SP_STORE_CONFLICT, "event.reserved-kind");
    fx_body max = string_body(SP_STORE_EVENT_MAX), over = string_body(SP_STORE_EVENT_MAX + 1);
    EXPECT(append(e->a, &k, "r/3", "x:3", "signal.received", &over, &r, &err), &err, SP_STORE_QUOTA,
           "event.too-large");
    EXPECT_OK(append(e->a, &k, "r/4", "x:4", "signal.received", &max, &r, &err), &err);
    CHECK_INT(r.sequence, 2);
    EXPECT(append(e->a, &missing, "r/5", "x:5", "signal.received", &go, &r, &err), &err,
           SP_STORE_NOT_FOUND, "run.not-found");
    fx_body wrong = go;
    wrong.digest[10] = wrong.digest[10] == '0' ? '1' : '0';
    EXPECT(append(e->a, &k, "r/6", "x:6", "signal.received", &wrong, &r, &err), &err,
           SP_STORE_CONFLICT, "evidence.digest-mismatch");
    fx_body loose = {"{ \"name\": \"go\" }", 16, {0}};
    sp_digest_one("body", loose.text, loose.len, loose.digest);
    EXPECT(append(e->a, &k, "r/7", "x:7", "signal.received", &loose, &r, &err), &err,
           SP_STORE_CONFLICT, "evidence.not-canonical");
    CHECK_INT(fx_event_count(e->a, &k, NULL), 2);
    s14_snapshot(e, &k);
    fx_body_free(&go);
    fx_body_free(&max);
    fx_body_free(&over);
}

/* ---- X01 ---- */

static size_t page_all_ready(store_env *e, size_t limit, char names[][SP_STORE_ID_MAX + 1])
{
    char *cursor = NULL;
    size_t n = 0, pages = 0;
    sp_error err = {0};
    do {
        sp_key_page p;
        EXPECT_OK(sp_store_scan_ready(e->a, cursor, limit, &p, &err), &err);
        free(cursor);
        cursor = p.next_cursor ? strdup(p.next_cursor) : NULL;
        for (size_t i = 0; i < p.n && n < 16; i++)
            snprintf(names[n++], SP_STORE_ID_MAX + 1, "%s", p.keys[i].run_id);
        sp_key_page_free(&p);
    } while (cursor && ++pages < 16);
    free(cursor);
    return n;
}

static size_t page_all_runs(store_env *e, size_t limit)
{
    char *cursor = NULL;
    size_t n = 0, pages = 0;
    sp_error err = {0};
    do {
        sp_run_list l;
        EXPECT_OK(sp_store_list_runs(e->a, "default", cursor, limit, &l, &err), &err);
        free(cursor);
        cursor = l.next_cursor ? strdup(l.next_cursor) : NULL;
        n += l.n;
        sp_run_list_free(&l);
    } while (cursor && ++pages < 16);
    free(cursor);
    return n;
}

static size_t page_all_due(store_env *e, size_t limit, sp_due_item *out, size_t cap)
{
    char *cursor = NULL;
    size_t n = 0, pages = 0;
    sp_error err = {0};
    do {
        sp_due_page p;
        EXPECT_OK(sp_store_scan_due(e->a, cursor, limit, &p, &err), &err);
        free(cursor);
        cursor = p.next_cursor ? strdup(p.next_cursor) : NULL;
        for (size_t i = 0; i < p.n && n < cap; i++)
            out[n++] = p.items[i];
        sp_due_page_free(&p);
    } while (cursor && ++pages < 16);
    free(cursor);
    return n;
}

static void x01_bad_cursors(store_env *e)
{
    sp_error err = {0};
    sp_key_page kp;
    sp_due_page dp;
    sp_run_list rl;
    EXPECT(sp_store_scan_ready(e->a, "garbage", 2, &kp, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
    EXPECT(sp_store_scan_ready(e->a, "[1,2]", 2, &kp, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
    EXPECT(sp_store_scan_due(e->a, "[\"lease\"]", 2, &dp, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
    EXPECT(sp_store_scan_due(e->a, "[\"bogus\",\"1\",\"a\",\"b\",\"c\"]", 2, &dp, &err), &err,
           SP_STORE_CONFLICT, "cursor.invalid");
    EXPECT(sp_store_scan_due(e->a, "[\"lease\",\"01\",\"a\",\"b\",\"c\"]", 2, &dp, &err), &err,
           SP_STORE_CONFLICT, "cursor.invalid");
    EXPECT(sp_store_list_runs(e->a, "default", "[]", 2, &rl, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
}

/* scan_expiring: scan_due's lease and deadline items, paged the same way;
 * an outbox cursor is not one of its cursors. */
static void x01_expiring(store_env *e, const sp_due_item *all)
{
    sp_due_page p, q;
    sp_error err = {0};
    EXPECT_OK(sp_store_scan_expiring(e->a, NULL, 0, &p, &err), &err);
    CHECK(p.n == 2 && !p.next_cursor);
    for (size_t i = 0; i < p.n && i < 2; i++)
        CHECK(p.items[i].kind == SP_DUE_LEASE && strcmp(p.items[i].id, all[i].id) == 0);
    sp_due_page_free(&p);
    EXPECT_OK(sp_store_scan_expiring(e->a, NULL, 1, &p, &err), &err);
    CHECK(p.n == 1 && p.next_cursor);
    EXPECT_OK(sp_store_scan_expiring(e->a, p.next_cursor, 1, &q, &err), &err);
    CHECK(q.n == 1 && !q.next_cursor && strcmp(q.items[0].id, all[1].id) == 0);
    sp_due_page_free(&p);
    sp_due_page_free(&q);
    EXPECT_OK(sp_store_scan_due(e->a, NULL, 3, &p, &err), &err);
    CHECK(p.n == 3 && p.items[2].kind == SP_DUE_OUTBOX && p.next_cursor);
    EXPECT(sp_store_scan_expiring(e->a, p.next_cursor, 1, &q, &err), &err, SP_STORE_CONFLICT,
           "cursor.invalid");
    sp_due_page_free(&p);
}

static void x01_due(store_env *e, const char invs[5][SP_ID_LEN + 1])
{
    sp_due_item all[16], paged[16];
    size_t n = page_all_due(e, 0, all, 16);
    CHECK_INT(n, 5);
    CHECK(n == 5 && all[0].kind == SP_DUE_LEASE && all[1].kind == SP_DUE_LEASE &&
          all[2].kind == SP_DUE_OUTBOX && all[4].kind == SP_DUE_OUTBOX);
    CHECK(n == 5 && all[0].at_ms == 1100 && all[2].at_ms == 1000);
    CHECK(n == 5 && strcmp(all[0].id, all[1].id) < 0 && strcmp(all[2].id, all[3].id) < 0 &&
          strcmp(all[3].id, all[4].id) < 0);
    CHECK(n == 5 && strcmp(all[0].attempt.owner, "w") == 0 && all[0].attempt.fence == 1 &&
          strcmp(all[0].host.host_id, "host-test") == 0 && all[0].host.pid == 4242 &&
          all[0].host.pid_started == 77);
    CHECK(n == 5 && (strcmp(all[0].attempt.invocation_id, invs[0]) == 0 ||
                     strcmp(all[0].attempt.invocation_id, invs[3]) == 0));
    for (size_t limit = 1; limit <= 3; limit++) {
        size_t m = page_all_due(e, limit, paged, 16);
        CHECK_INT(m, 5);
        for (size_t i = 0; i < m && i < n; i++)
            CHECK_STR(paged[i].id, all[i].id);
    }
    x01_expiring(e, all);
}

static void x01_running(store_env *e)
{
    sp_due_page p;
    sp_error err = {0};
    EXPECT_OK(sp_store_scan_running(e->a, "host-test", NULL, 1, &p, &err), &err);
    CHECK(p.n == 1 && p.next_cursor && p.items[0].attempt.fence >= 1);
    char *cursor = p.next_cursor ? strdup(p.next_cursor) : NULL;
    sp_due_page_free(&p);
    EXPECT_OK(sp_store_scan_running(e->a, "host-test", cursor, 1, &p, &err), &err);
    CHECK(p.n == 1 && p.next_cursor == NULL);
    sp_due_page_free(&p);
    free(cursor);
    EXPECT_OK(sp_store_scan_running(e->a, "other-host", NULL, 0, &p, &err), &err);
    CHECK_INT(p.n, 0);
    sp_due_page_free(&p);
    EXPECT_OK(sp_store_scan_running(e->a, "", NULL, 0, &p, &err), &err);
    CHECK_INT(p.n, 0);
    sp_due_page_free(&p);
}

void store_x01_scans_and_cursors(store_env *e)
{
    char names[16][SP_STORE_ID_MAX + 1], invs[5][SP_ID_LEN + 1];
    const char *runs[5] = {"run_x01_c", "run_x01_a", "run_x01_e", "run_x01_b", "run_x01_d"};
    for (int i = 0; i < 5; i++)
        create(e, runs[i]);
    for (size_t limit = 1; limit <= 6; limit++) {
        CHECK_INT(page_all_ready(e, limit, names), 5);
        CHECK(strcmp(names[0], "run_x01_a") == 0 && strcmp(names[4], "run_x01_e") == 0);
        CHECK_INT(page_all_runs(e, limit), 5);
    }
    x01_bad_cursors(e);
    for (int i = 0; i < 5; i++) {
        sp_run_key k = fx_key(runs[i]);
        CHECK_INT(fx_settle(e->a, &k), 1);
        CHECK(fx_invocation(e->a, &k, invs[i]));
    }
    CHECK_INT(page_all_ready(e, 0, names), 0);
    sp_error err = {0};
    for (int i = 0; i < 5; i += 3) {
        sp_run_key k = fx_key(runs[i]);
        sp_claim c;
        EXPECT_OK(fx_claim(e->a, &k, invs[i], "w", 100, "x01", &c, &err), &err);
        sp_claim_free(&c);
    }
    manual_clock_set(&e->clock, 1200);
    x01_due(e, invs);
    x01_running(e);
    sp_quarantine_req q = {fx_key(runs[1]), "q/x01", 1, "test.q", NULL};
    sp_flag_res f;
    EXPECT_OK(sp_store_quarantine_run(e->a, &q, &f, &err), &err);
    CHECK(!due_has(e, invs[1]) && due_has(e, invs[2]));
    sp_run_list l;
    EXPECT_OK(sp_store_list_runs(e->a, "default", NULL, 0, &l, &err), &err);
    CHECK_INT(l.n, 5);
    for (size_t i = 0; i < l.n; i++)
        CHECK_INT(l.runs[i].quarantined, strcmp(l.runs[i].key.run_id, runs[1]) == 0);
    CHECK(l.n == 5 && strcmp(l.runs[0].status, "running") == 0 && l.runs[0].revision == 1 &&
          strcmp(l.runs[0].start_key, "run_x01_a") == 0 && !l.next_cursor);
    sp_run_list_free(&l);
}

/* ---- X03 ---- */

void store_x03_blobs_secret_packages(store_env *e)
{
    sp_error err = {0};
    static const char bytes[] = "\0asset\x01\xff bytes";
    char digest[SP_DIGEST_TEXT_LEN + 1], wrong[SP_DIGEST_TEXT_LEN + 1];
    sp_sha256_text(bytes, sizeof bytes, digest);
    sp_sha256_text(bytes, 3, wrong);
    EXPECT(sp_store_put_blob(e->a, wrong, bytes, sizeof bytes, &err), &err, SP_STORE_CONFLICT,
           "blob.digest-mismatch");
    EXPECT_OK(sp_store_put_blob(e->a, digest, bytes, sizeof bytes, &err), &err);
    EXPECT_OK(sp_store_put_blob(e->b, digest, bytes, sizeof bytes, &err), &err); /* idempotent */
    void *out = NULL;
    size_t len = 0;
    bool found = false;
    EXPECT_OK(sp_store_get_blob(e->b, digest, &out, &len, &found, &err), &err);
    CHECK(found && len == sizeof bytes && memcmp(out, bytes, len) == 0);
    free(out);
    EXPECT_OK(sp_store_get_blob(e->b, wrong, &out, &len, &found, &err), &err);
    CHECK(!found && out == NULL);
    char *pkg = NULL;
    EXPECT_OK(sp_store_get_package(e->a, wrong, &pkg, &len, &found, &err), &err);
    CHECK(!found && pkg == NULL);
    unsigned char s1[32], s2[32], zero[32] = {0};
    EXPECT_OK(sp_store_secret(e->a, s1, &err), &err);
    EXPECT_OK(sp_store_secret(e->b, s2, &err), &err);
    CHECK(memcmp(s1, s2, 32) == 0 && memcmp(s1, zero, 32) != 0);
    sp_store_capabilities caps;
    sp_store_capabilities_get(e->a, &caps);
    CHECK_STR(caps.protocol, "0.1");
    CHECK_STR(caps.transaction_scope, "database");
    CHECK(caps.atomic_run_mutation && caps.multiworker_claims && !caps.persistent_wakeup &&
          caps.max_record_bytes >= SP_STORE_SNAPSHOT_MAX && caps.adapter && *caps.adapter);
}

/* ---- X04 ---- */

static void x04_malformed(store_env *e, const sp_run_key *k)
{
    sp_error err = {0};
    sp_create_run_res cr;
    sp_append_event_res ar;
    sp_run_key bad = fx_key("run x04");
    EXPECT(fx_create(e->a, &bad, "x04-bad", &cr, &err), &err, SP_STORE_CONFLICT, "request.invalid");
    char long_id[SP_STORE_REQUEST_ID_MAX + 2];
    memset(long_id, 'r', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';
    fx_body go = fx_body_of("{\"name\":\"go\"}");
    EXPECT(append(e->a, k, long_id, "sig:x", "signal.received", &go, &ar, &err), &err,
           SP_STORE_CONFLICT, "request.invalid");
    EXPECT(append(e->a, k, "r/x", "", "signal.received", &go, &ar, &err), &err, SP_STORE_CONFLICT,
           "request.invalid");
    EXPECT(append(e->a, k, "r/x", "sig:\xff", "signal.received", &go, &ar, &err), &err,
           SP_STORE_CONFLICT, "request.invalid"); /* not UTF-8 */
    fx_body bad_digest = go;
    snprintf(bad_digest.digest, sizeof bad_digest.digest, "sha256:xyz");
    EXPECT(append(e->a, k, "r/x", "sig:x", "signal.received", &bad_digest, &ar, &err), &err,
           SP_STORE_CONFLICT, "request.invalid");
    fx_body_free(&go);
    sp_attempt_ref ref = {*k, "inv_x", "inv_y.1", "w", 1};
    sp_heartbeat_req hb = {ref, "hb/x04", 10};
    sp_heartbeat_res h;
    EXPECT(sp_store_heartbeat(e->a, &hb, &h, &err), &err, SP_STORE_CONFLICT, "request.invalid");
    hb = (sp_heartbeat_req){{*k, "inv_x", "inv_x.1", "w", 1}, "hb/x04", UINT64_MAX};
    EXPECT(sp_store_heartbeat(e->a, &hb, &h, &err), &err, SP_STORE_CONFLICT, "request.invalid");
    sp_expire_req x = {{*k, "inv_x", "inv_x.1", "w", 1}, "x/x04", (sp_expire_reason)99};
    sp_finish_res f;
    EXPECT(sp_store_expire_attempt(e->a, &x, &f, &err), &err, SP_STORE_CONFLICT, "request.invalid");
}

static void x04_missing(store_env *e, const sp_run_key *k)
{
    sp_error err = {0};
    sp_run_key gone = fx_key("run_x04_gone");
    fx_decision d;
    CHECK(fx_decide(e->a, k, &d));
    sp_commit_turn_req req = d.req;
    req.key = gone;
    sp_commit_turn_res r;
    EXPECT(sp_store_commit_turn(e->a, &req, &r, &err), &err, SP_STORE_NOT_FOUND, "run.not-found");
    fx_decision_free(&d);
    sp_claim c;
    EXPECT(fx_claim(e->a, k, "inv_00000000000000000000000000000000", "w", 10, "x", &c, &err), &err,
           SP_STORE_NOT_FOUND, "invocation.not-found");
    sp_attempt_ref ref = {*k, "inv_x", "inv_x.1", "w", 1};
    sp_heartbeat_req hb = {ref, "hb/x04/2", 10};
    sp_heartbeat_res h;
    EXPECT(sp_store_heartbeat(e->a, &hb, &h, &err), &err, SP_STORE_STALE, "lease.lost");
    sp_finish_res f;
    EXPECT(fx_expire(e->a, &ref, SP_EXPIRE_ABANDONED, &f, &err), &err, SP_STORE_NOT_FOUND,
           "attempt.not-found");
    sp_flag_res fl;
    sp_quarantine_req q = {gone, "q/x04", 0, "test.q", NULL};
    EXPECT(sp_store_quarantine_run(e->a, &q, &fl, &err), &err, SP_STORE_NOT_FOUND, "run.not-found");
    sp_release_req rel = {gone, "rel/x04"};
    EXPECT(sp_store_release_run(e->a, &rel, &fl, &err), &err, SP_STORE_NOT_FOUND, "run.not-found");
    sp_run_view v;
    bool found = true;
    EXPECT_OK(sp_store_get_run(e->a, &gone, &v, &found, &err), &err);
    CHECK(!found);
}

void store_x04_request_validation(store_env *e)
{
    sp_run_key k = fx_key("run_x04");
    create(e, "run_x04");
    char *before = fx_state(e->a, &k);
    x04_malformed(e, &k);
    x04_missing(e, &k);
    char *after = fx_state(e->a, &k);
    CHECK_STR(after, before);
    free(before);
    free(after);
}
