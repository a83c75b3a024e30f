/*
 * fixture.c - realistic store requests for the store tests (see fixture.h).
 */
#include "fixture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "json/json.h"

/* ---- clock ---- */

static uint64_t manual_now(void *ctx) { return atomic_load(&((manual_clock *)ctx)->now); }

sp_clock manual_clock_of(manual_clock *c) { return (sp_clock){manual_now, c}; }

void manual_clock_set(manual_clock *c, uint64_t ms) { atomic_store(&c->now, ms); }

/* ---- bodies ---- */

fx_body fx_body_of(const char *json)
{
    sp_error err = {0};
    json_t *v = sp_json_parse(json, strlen(json), &err);
    fx_body b = {0};
    if (!v || !(b.text = sp_json_encode_alloc(v, &b.len, &err))) {
        fprintf(stderr, "fixture: bad JSON %s: %s\n", json, err.message);
        abort();
    }
    json_decref(v);
    sp_digest_one("body", b.text, b.len, b.digest);
    return b;
}

void fx_body_free(fx_body *b)
{
    free(b->text);
    memset(b, 0, sizeof *b);
}

sp_evidence fx_evidence(const fx_body *b) { return (sp_evidence){b->text, b->len, b->digest}; }

/* ---- packages ---- */

static const char WORKFLOW[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"store-suite\",\"start\":\"work\","
    "\"actions\":{\"work\":{\"kind\":\"command\",\"argv\":[\"work\"],\"effect\":\"idempotent\","
    "\"retry\":{\"maxAttempts\":3,\"backoffMs\":\"500\",\"maxBackoffMs\":\"1500\"}}},"
    "\"nodes\":{\"work\":{\"kind\":\"activity\",\"action\":\"work\","
    "\"input\":{\"job\":{\"$get\":[\"input\",\"job\"]}},\"outcomes\":{\"ok\":\"wait\"}},"
    "\"wait\":{\"kind\":\"await-signal\",\"signal\":\"go\",\"outcomes\":{\"received\":\"done\"}},"
    "\"done\":{\"kind\":\"complete\",\"output\":{\"$get\":[\"nodes\",\"work\",\"output\"]}}}}";

static const char OTHER_WORKFLOW[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"store-other\",\"start\":\"done\","
    "\"actions\":{},\"nodes\":{\"done\":{\"kind\":\"complete\",\"output\":null}}}";

typedef struct fx_pkg {
    fx_body body;
    char digest[SP_DIGEST_TEXT_LEN + 1];
} fx_pkg;

static fx_pkg load_package(const char *json)
{
    fx_pkg p = {fx_body_of(json), {0}};
    sp_digest_one("package", p.body.text, p.body.len, p.digest);
    return p;
}

static fx_pkg MAIN, OTHER;
static pthread_once_t MAIN_ONCE = PTHREAD_ONCE_INIT, OTHER_ONCE = PTHREAD_ONCE_INIT;
static void load_main(void) { MAIN = load_package(WORKFLOW); }
static void load_other(void) { OTHER = load_package(OTHER_WORKFLOW); }

static fx_pkg *main_package(void)
{
    pthread_once(&MAIN_ONCE, load_main);
    return &MAIN;
}

const char *fx_package(size_t *len)
{
    *len = main_package()->body.len;
    return main_package()->body.text;
}

const char *fx_package_digest(void) { return main_package()->digest; }

const char *fx_other_package(size_t *len, char digest[SP_DIGEST_TEXT_LEN + 1])
{
    pthread_once(&OTHER_ONCE, load_other);
    *len = OTHER.body.len;
    memcpy(digest, OTHER.digest, sizeof OTHER.digest);
    return OTHER.body.text;
}

/* ---- runs ---- */

sp_run_key fx_key(const char *run_id)
{
    sp_run_key k = {0};
    snprintf(k.tenant, sizeof k.tenant, "default");
    snprintf(k.run_id, sizeof k.run_id, "%s", run_id);
    return k;
}

fx_body fx_started_body(const sp_run_key *key)
{
    char json[512];
    snprintf(json, sizeof json, "{\"tenant\":\"%s\",\"runId\":\"%s\",\"input\":{\"job\":\"%s\"}}",
             key->tenant, key->run_id, key->run_id);
    return fx_body_of(json);
}

sp_store_rc fx_create(sp_store *s, const sp_run_key *key, const char *start_key,
                      sp_create_run_res *res, sp_error *err)
{
    char request_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(request_id, sizeof request_id, "start/%s", start_key);
    fx_body started = fx_started_body(key);
    size_t len;
    const char *package = fx_package(&len);
    sp_create_run_req req = {*key,    request_id, start_key, fx_package_digest(),
                             package, len,        NULL,      fx_evidence(&started)};
    sp_store_rc rc = sp_store_create_run(s, &req, res, err);
    fx_body_free(&started);
    return rc;
}

/* ---- kernel decisions ---- */

static bool transition(fx_decision *out)
{
    size_t len;
    const char *package = fx_package(&len);
    const sp_turn *t = &out->turn;
    sp_kernel_request req = {
        .identity = {t->package_digest, "native:spore-kernel@test", SP_SEMANTICS_VERSION,
                     SP_CODEC_VERSION},
        .graph = package,
        .graph_len = len,
        .snapshot = t->snapshot,
        .snapshot_len = t->snapshot_len,
        .event = {t->event.event_id, t->event.sequence, t->event.accepted_at_ms, t->event.kind,
                  t->event.body, t->event.body_len, NULL},
        .limits = SP_KERNEL_DEFAULT_LIMITS,
    };
    sp_kernel_failure fail;
    if (sp_kernel_transition(&req, &out->d, &fail) != SP_KERNEL_DECISION) {
        fprintf(stderr, "fixture: kernel failed: %s %s\n", fail.code, fail.details);
        return false;
    }
    return true;
}

static bool build_request(fx_decision *out)
{
    const sp_kernel_decision *d = &out->d;
    out->commands = calloc(d->ncommands + 1, sizeof *out->commands);
    out->diagnostics = calloc(d->ndiagnostics + 1, sizeof *out->diagnostics);
    if (!out->commands || !out->diagnostics)
        return false;
    for (size_t i = 0; i < d->ncommands; i++)
        out->commands[i] = (sp_command_rec){d->commands[i].command_id, d->commands[i].activation_id,
                                            d->commands[i].kind, d->commands[i].payload,
                                            d->commands[i].payload_len, NULL};
    for (size_t i = 0; i < d->ndiagnostics; i++)
        out->diagnostics[i] =
            (sp_diagnostic_rec){d->diagnostics[i].code, d->diagnostics[i].node_id,
                                d->diagnostics[i].details, d->diagnostics[i].details_len};
    sp_kernel_decision_digest(d, out->decision_digest);
    snprintf(out->request_id, sizeof out->request_id, "commit/%llu/%s",
             (unsigned long long)(out->turn.revision + 1), out->turn.event.event_id);
    out->req = (sp_commit_turn_req){out->turn.key,
                                    out->request_id,
                                    out->turn.revision,
                                    out->turn.event.event_id,
                                    out->turn.event.sequence,
                                    out->decision_digest,
                                    d->snapshot,
                                    d->snapshot_len,
                                    d->snapshot_digest,
                                    d->status,
                                    out->commands,
                                    d->ncommands,
                                    out->diagnostics,
                                    d->ndiagnostics,
                                    false, false};
    return true;
}

bool fx_decide_turn(fx_decision *out)
{
    if (!transition(out) || !build_request(out)) {
        fx_decision_free(out);
        return false;
    }
    return true;
}

bool fx_decide(sp_store *s, const sp_run_key *key, fx_decision *out)
{
    memset(out, 0, sizeof *out);
    sp_error err = {0};
    bool found = false;
    if (sp_store_load_turn(s, key, &out->turn, &found, &err) != SP_STORE_OK || !found) {
        sp_error_clear(&err);
        return false;
    }
    return fx_decide_turn(out);
}

void fx_decision_free(fx_decision *d)
{
    sp_turn_free(&d->turn);
    sp_kernel_decision_free(&d->d);
    free(d->commands);
    free(d->diagnostics);
    memset(d, 0, sizeof *d);
}

sp_store_rc fx_step(sp_store *s, const sp_run_key *key, sp_commit_turn_res *res, sp_error *err)
{
    fx_decision d;
    if (!fx_decide(s, key, &d))
        return SP_STORE_NOT_FOUND;
    sp_store_rc rc = sp_store_commit_turn(s, &d.req, res, err);
    fx_decision_free(&d);
    return rc;
}

int fx_settle(sp_store *s, const sp_run_key *key)
{
    int commits = 0;
    for (;;) {
        sp_commit_turn_res res;
        sp_error err = {0};
        sp_store_rc rc = fx_step(s, key, &res, &err);
        sp_error_clear(&err);
        if (rc == SP_STORE_NOT_FOUND)
            return commits;
        if (rc != SP_STORE_OK)
            return -1;
        commits++;
    }
}

bool fx_invocation(sp_store *s, const sp_run_key *key, char id[SP_ID_LEN + 1])
{
    sp_invocation_list l;
    sp_error err = {0};
    bool ok = sp_store_list_invocations(s, key, &l, &err) == SP_STORE_OK && l.n > 0;
    if (ok)
        memcpy(id, l.items[l.n - 1].invocation_id, SP_ID_LEN + 1);
    if (ok)
        sp_invocation_list_free(&l);
    sp_error_clear(&err);
    return ok;
}

/* ---- attempts ---- */

sp_store_rc fx_claim(sp_store *s, const sp_run_key *key, const char *invocation_id,
                     const char *worker, uint64_t lease_ms, const char *tag, sp_claim *out,
                     sp_error *err)
{
    char request_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(request_id, sizeof request_id, "claim/%s/%s/%s", invocation_id, worker, tag);
    sp_claim_req req = {*key, request_id, invocation_id,          worker, lease_ms,
                        NULL, 0,          {"host-test", 4242, 77}, 0, false};
    return sp_store_claim_attempt(s, &req, out, err);
}

fx_body fx_result(const sp_attempt_ref *ref, const char *status)
{
    char json[512];
    const char *dot = strrchr(ref->attempt_id, '.');
    unsigned n = dot ? (unsigned)strtoul(dot + 1, NULL, 10) : 0;
    const char *rest = strcmp(status, "success") == 0
                           ? "\"outcome\":\"ok\",\"output\":{\"n\":1}"
                           : "\"error\":{\"code\":\"test.failed\",\"message\":\"failed\"}";
    snprintf(json, sizeof json,
             "{\"invocationId\":\"%s\",\"attemptId\":\"%s\",\"attempt\":%u,\"status\":\"%s\",%s}",
             ref->invocation_id, ref->attempt_id, n, status, rest);
    return fx_body_of(json);
}

sp_store_rc fx_finish(sp_store *s, const sp_attempt_ref *ref, const char *status,
                      sp_finish_res *res, sp_error *err)
{
    char request_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(request_id, sizeof request_id, "finish/%s", ref->attempt_id);
    fx_body body = fx_result(ref, status);
    sp_finish_req req = {*ref, request_id, fx_evidence(&body)};
    sp_store_rc rc = sp_store_finish_attempt(s, &req, res, err);
    fx_body_free(&body);
    return rc;
}

/* ---- settle_attempt with the fixture's kernel deciding ---- */

static char *dup_n(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = 0;
    }
    return c;
}

/* A copy of the store's turn that fx_decision_free may free. */
static void own_turn(const sp_turn *t, sp_turn *out)
{
    *out = *t;
    out->snapshot = dup_n(t->snapshot, t->snapshot_len);
    out->event.event_id = strdup(t->event.event_id);
    out->event.kind = strdup(t->event.kind);
    out->event.body = dup_n(t->event.body, t->event.body_len);
    out->event.diagnostics = NULL;
}

static const char ZERO_DIGEST[] =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

static void decision_out(fx_decider *dc, sp_decision *d)
{
    const sp_commit_turn_req *r = &dc->d.req;
    size_t n = 0;
    for (size_t i = 0; i < r->ncommands && n < 8; i++)
        dc->cmds[n++] = r->commands[i];
    for (size_t i = 0; i < dc->nextra && n < 8; i++)
        dc->cmds[n++] = dc->extra[i];
    *d = (sp_decision){r->decision_digest, r->snapshot,     r->snapshot_len,
                       dc->bad_digest ? ZERO_DIGEST : r->snapshot_digest,
                       r->status,         dc->cmds,        n,
                       r->diagnostics,    r->ndiagnostics, dc->claim,
                       dc->nclaim,        false};
}

static sp_decide_rc fx_decide_settle(void *ctx, const sp_turn *t, sp_decision *d)
{
    fx_decider *dc = ctx;
    dc->calls++;
    if (dc->pass)
        return SP_DECIDE_PASS;
    if (!t->snapshot)
        return SP_DECIDE_NEED_SNAPSHOT;
    fx_decision_free(&dc->d);
    own_turn(t, &dc->d.turn);
    if (!fx_decide_turn(&dc->d))
        return SP_DECIDE_PASS;
    dc->decided = true;
    decision_out(dc, d);
    return SP_DECIDE_COMMIT;
}

void fx_decider_free(fx_decider *dc) { fx_decision_free(&dc->d); }

sp_store_rc fx_settle_attempt(sp_store *s, const sp_attempt_ref *ref, const char *status,
                              fx_decider *dc, sp_settle_res *res, sp_error *err)
{
    fx_body b = fx_result(ref, status);
    char id[SP_STORE_REQUEST_ID_MAX];
    snprintf(id, sizeof id, "settle/%s", ref->attempt_id);
    sp_decider decider = {fx_decide_settle, dc};
    sp_settle_req req = {.attempt = *ref,
                         .request_id = id,
                         .result = fx_evidence(&b),
                         .decider = dc ? &decider : NULL,
                         .worker = "w-settle",
                         .lease_duration_ms = 3000};
    snprintf(req.host.host_id, sizeof req.host.host_id, "host-fx");
    sp_store_rc rc = sp_store_settle_attempt(s, &req, res, err);
    fx_body_free(&b);
    return rc;
}

sp_store_rc fx_expire(sp_store *s, const sp_attempt_ref *ref, sp_expire_reason reason,
                      sp_finish_res *res, sp_error *err)
{
    char request_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(request_id, sizeof request_id, "expire/%s", ref->attempt_id);
    sp_expire_req req = {*ref, request_id, reason};
    return sp_store_expire_attempt(s, &req, res, err);
}

sp_store_rc fx_signal(sp_store *s, const sp_run_key *key, const char *message, const char *name,
                      sp_append_event_res *res, sp_error *err)
{
    char json[256], event_id[128], request_id[128];
    snprintf(json, sizeof json, "{\"name\":\"%s\"}", name);
    snprintf(event_id, sizeof event_id, "sig:%s", message);
    snprintf(request_id, sizeof request_id, "signal/%s", message);
    fx_body body = fx_body_of(json);
    sp_append_event_req req = {*key, request_id, event_id, "signal.received", fx_evidence(&body)};
    sp_store_rc rc = sp_store_append_event(s, &req, res, err);
    fx_body_free(&body);
    return rc;
}

/* ---- observing state ---- */

static void state_run(sp_store *s, const sp_run_key *key, sp_buf *b)
{
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    if (sp_store_get_run(s, key, &v, &found, &err) != SP_STORE_OK || !found) {
        sp_buf_printf(b, "run: none (%s)\n", err.code);
        sp_error_clear(&err);
        return;
    }
    sp_buf_printf(b,
                  "run %s status=%s rev=%llu applied=%llu next=%llu q=%d %s %s %llu %llu %llu %s\n",
                  v.start_key, v.status, (unsigned long long)v.revision,
                  (unsigned long long)v.applied_sequence, (unsigned long long)v.next_sequence,
                  v.quarantined, v.quarantine_code ? v.quarantine_code : "-",
                  v.quarantine_details ? v.quarantine_details : "-",
                  (unsigned long long)v.quarantine_at_ms, (unsigned long long)v.created_at_ms,
                  (unsigned long long)v.updated_at_ms, v.snapshot_digest);
    sp_run_view_free(&v);
}

static void state_events(sp_store *s, const sp_run_key *key, sp_buf *b)
{
    sp_event_list l;
    sp_error err = {0};
    if (sp_store_list_events(s, key, 0, SP_STORE_PAGE_MAX, &l, &err) != SP_STORE_OK) {
        sp_buf_printf(b, "events: error %s\n", err.code);
        sp_error_clear(&err);
        return;
    }
    for (size_t i = 0; i < l.n; i++)
        sp_buf_printf(b, "event %llu %s %s %llu %d %llu %s %s\n",
                      (unsigned long long)l.events[i].sequence, l.events[i].event_id,
                      l.events[i].kind, (unsigned long long)l.events[i].accepted_at_ms,
                      l.events[i].consumed, (unsigned long long)l.events[i].consumed_revision,
                      l.events[i].body, l.events[i].diagnostics ? l.events[i].diagnostics : "-");
    sp_event_list_free(&l);
}

static void state_invocations(sp_store *s, const sp_run_key *key, sp_buf *b)
{
    sp_invocation_list l;
    sp_error err = {0};
    if (sp_store_list_invocations(s, key, &l, &err) != SP_STORE_OK) {
        sp_buf_printf(b, "invocations: error %s\n", err.code);
        sp_error_clear(&err);
        return;
    }
    for (size_t i = 0; i < l.n; i++) {
        const sp_invocation_view *v = &l.items[i];
        sp_buf_printf(b, "inv %s %s %u %llu %s %s %s %llu %llu %llu %s\n", v->invocation_id,
                      v->status, v->attempt_number, (unsigned long long)v->not_before_ms,
                      v->attempt_id, v->attempt_status, v->owner ? v->owner : "-",
                      (unsigned long long)v->fence, (unsigned long long)v->lease_until_ms,
                      (unsigned long long)v->deadline_ms, v->holder ? v->holder : "-");
    }
    sp_invocation_list_free(&l);
}

char *fx_state(sp_store *s, const sp_run_key *key)
{
    sp_buf b = SP_BUF_INIT;
    state_run(s, key, &b);
    state_events(s, key, &b);
    state_invocations(s, key, &b);
    return sp_buf_take(&b, NULL);
}

size_t fx_event_count(sp_store *s, const sp_run_key *key, const char *event_id)
{
    sp_event_list l;
    sp_error err = {0};
    size_t n = 0;
    if (sp_store_list_events(s, key, 0, SP_STORE_PAGE_MAX, &l, &err) != SP_STORE_OK) {
        sp_error_clear(&err);
        return 0;
    }
    for (size_t i = 0; i < l.n; i++)
        n += !event_id || strcmp(l.events[i].event_id, event_id) == 0;
    sp_event_list_free(&l);
    return n;
}
