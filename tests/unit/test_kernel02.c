/*
 * test_kernel02.c - properties K11-K15 of semantics 0.2 (workflows-0.2.md
 * §7), over generated event sequences: a deterministic generator (xorshift,
 * fixed seeds) drives a few 0.2 workflows - parallel branches with a loop
 * limit, a signal deadline and a branch that can fail, re-entered in a loop;
 * a map with retries and a failed route; a map without one (stuck items)
 * beside a sleep in a parallel - by picking, from the last snapshot, a
 * result (success with a declared or undeclared outcome, failure, unknown,
 * expired, stale), a resolution of a stuck or unknown invocation, a timer
 * firing (live or already fired), a signal, or a cancel. Every decision is
 * checked:
 *
 *   K11 from a cancelled decision on, no activity.schedule / activity.retry;
 *   K12 a map never has more than maxConcurrency items in flight;
 *   K13 a join is entered at most once per parallel activation (visits of
 *       the join trail the parallel's by one exactly while its branches live);
 *   K14 a timer.fired that names no live timer changes nothing but the
 *       bookkeeping (timer.stale only), so a timer fires at most once;
 *   (K10 for 0.2: a limited outcome is never followed more than N in a row);
 *   K15 replaying the accepted events from sequence 1 - from bytes, and
 *       with the kept decoded state - gives every snapshot, command and
 *       diagnostic byte for byte.
 *
 * Plus validation orderings and state checks the traces do not pin.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "digest/digest.h"
#include "json/json.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

/* ---- JSON helpers ---- */

static json_t *J(const char *text)
{
    size_t n = strlen(text);
    char *s = malloc(n + 1);
    for (size_t i = 0; i <= n; i++)
        s[i] = text[i] == '\'' ? '"' : text[i];
    sp_error err = {0};
    json_t *v = sp_json_parse(s, n, &err);
    if (!v) {
        fprintf(stderr, "bad test JSON (%s): %s\n", err.message, s);
        abort();
    }
    free(s);
    return v;
}

static char *canon(const json_t *v, size_t *len)
{
    sp_error err = {0};
    char *s = sp_json_encode_alloc(v, len, &err);
    if (!s)
        abort();
    return s;
}

static json_t *parse(const char *bytes, size_t len)
{
    sp_error err = {0};
    json_t *v = sp_json_parse_canonical(bytes, len, &err);
    if (!v)
        abort();
    return v;
}

/* ---- the generator ---- */

static uint64_t rng;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static uint32_t pick(uint32_t n) { return n ? next_rand() % n : 0; }

typedef struct event {
    char id[96];
    uint64_t seq, at;
    const char *kind;
    char *payload;
    size_t len;
} event;

typedef struct record {
    int rc;
    char *bytes; /* snapshot + commands + diagnostics, or the failure code */
    size_t len;
} record;

static record record_of(int rc, const sp_kernel_decision *d, const sp_kernel_failure *f)
{
    record r = {rc, NULL, 0};
    if (rc != SP_KERNEL_DECISION) {
        r.bytes = strdup(f->code);
        r.len = strlen(r.bytes);
        return r;
    }
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_kernel_decision_digest(d, digest);
    r.len = d->snapshot_len + sizeof digest;
    r.bytes = malloc(r.len);
    memcpy(r.bytes, d->snapshot, d->snapshot_len);
    memcpy(r.bytes + d->snapshot_len, digest, sizeof digest);
    return r;
}

typedef struct run {
    const char *name;
    char *graph;
    size_t graph_len;
    char *snapshot;
    size_t snapshot_len;
    json_t *state; /* parsed last snapshot */
    event *events; /* accepted (a decision) */
    record *records;
    size_t nevents, cap;
    uint64_t seq, now;
    bool cancelled;
    json_t *fired; /* timer IDs seen fired or cancelled */
    size_t decisions;
} run;

static void run_init(run *r, const char *name, const char *workflow)
{
    memset(r, 0, sizeof *r);
    r->name = name;
    json_t *wf = J(workflow);
    r->graph = canon(wf, &r->graph_len);
    json_decref(wf);
    r->fired = json_array();
    r->now = 1000;
}

static void run_free(run *r)
{
    for (size_t i = 0; i < r->nevents; i++) {
        free(r->events[i].payload);
        free(r->records[i].bytes);
    }
    free(r->events);
    free(r->records);
    free(r->graph);
    free(r->snapshot);
    json_decref(r->state);
    json_decref(r->fired);
}

static sp_kernel_request request(const run *r, const event *e, const char *snapshot, size_t len)
{
    sp_kernel_request req = {
        .identity = {"pkg", "test", SP_SEMANTICS_VERSION_02, SP_CODEC_VERSION},
        .graph = r->graph,
        .graph_len = r->graph_len,
        .snapshot = snapshot,
        .snapshot_len = len,
        .event = {e->id, e->seq, e->at, e->kind, e->payload, e->len, NULL},
        .limits = SP_KERNEL_DEFAULT_LIMITS_02,
    };
    return req;
}

static bool has_command(const sp_kernel_decision *d, const char *kind)
{
    for (size_t i = 0; i < d->ncommands; i++)
        if (strcmp(d->commands[i].kind, kind) == 0)
            return true;
    return false;
}

/* ---- the properties checked on every decision ---- */

typedef struct spec {
    const char *map_prefix; /* "each/" */
    uint32_t max_concurrency;
    const char *parallel, *join; /* K13 */
} spec;

static void check_k12(const run *r, const spec *sp, const json_t *s)
{
    if (!sp->map_prefix)
        return;
    size_t in_flight = 0;
    const char *key;
    json_t *inv;
    json_object_foreach((json_t *)json_object_get(s, "invocations"), key, inv)
    {
        const char *a = json_string_value(json_object_get(inv, "activationId"));
        if (strncmp(a, sp->map_prefix, strlen(sp->map_prefix)) == 0 && strchr(a, '#'))
            in_flight++;
    }
    if (in_flight > sp->max_concurrency)
        check_fail(__FILE__, __LINE__, "%s: K12: %zu items in flight", r->name, in_flight);
    CHECK(in_flight <= sp->max_concurrency);
}

static void check_k13(const run *r, const spec *sp, const json_t *s)
{
    if (!sp->parallel)
        return;
    const json_t *visits = json_object_get(s, "visits");
    json_int_t p = json_integer_value(json_object_get(visits, sp->parallel));
    json_int_t j = json_integer_value(json_object_get(visits, sp->join));
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s/%lld:", sp->parallel, (long long)p);
    bool live = false;
    const char *key;
    json_t *b;
    json_object_foreach((json_t *)json_object_get(s, "branches"), key, b)
    {
        if (strncmp(key, prefix, strlen(prefix)) == 0)
            live = true;
    }
    bool terminal = !json_is_null(json_object_get(s, "result"));
    /* while the branches of activation p live, the join has p-1 entries;
     * otherwise p (or p-1 when the run ended before the join was entered) */
    bool ok = live ? j == p - 1 : (j == p || (terminal && j == p - 1));
    if (!ok)
        check_fail(__FILE__, __LINE__, "%s: K13: parallel visits %lld, join visits %lld, live %d",
                   r->name, (long long)p, (long long)j, live);
    CHECK(ok);
}

/* K14: a firing of no live timer is timer.stale and nothing else. */
static void check_k14(const run *r, const event *e, const json_t *before,
                      const sp_kernel_decision *d, const json_t *after)
{
    if (strcmp(e->kind, "timer.fired") != 0 || !before || !json_is_null(json_object_get(before, "result")))
        return;
    json_t *p = parse(e->payload, e->len);
    bool live = json_object_get(json_object_get(before, "timers"),
                                json_string_value(json_object_get(p, "timerId"))) != NULL;
    json_decref(p);
    if (live)
        return;
    bool ok = d->ncommands == 0 && d->ndiagnostics == 1 &&
              strcmp(d->diagnostics[0].code, "timer.stale") == 0;
    static const char *const same[] = {"nodes", "visits", "invocations", "timers", "waits",
                                       "branches", "maps", "status", "streaks", NULL};
    for (const char *const *m = same; *m; m++)
        ok = ok && json_equal(json_object_get(before, *m), json_object_get(after, *m));
    if (!ok)
        check_fail(__FILE__, __LINE__, "%s: K14: a stale firing changed the run", r->name);
    CHECK(ok);
}

/* What the generated runs went through (coverage of the generator). */
static const char *const seen_codes[] = {"activity.cancel", "timer.cancel", "timer.start",
                                         "timer.stale", "loop.exhausted", "invocation.stuck",
                                         "invocation.unknown", "result.stale", "activity.retry",
                                         "signal.outcome-unrouted", NULL};
static size_t seen[16], joins_entered, map_full;

static void count_seen(const sp_kernel_decision *d)
{
    for (size_t k = 0; seen_codes[k]; k++) {
        for (size_t i = 0; i < d->ncommands; i++)
            seen[k] += strcmp(d->commands[i].kind, seen_codes[k]) == 0;
        for (size_t i = 0; i < d->ndiagnostics; i++)
            seen[k] += strcmp(d->diagnostics[i].code, seen_codes[k]) == 0;
    }
}

/* Send one event; a decision is accepted (kept for K15) and checked. */
static void send(run *r, const spec *sp, const char *id, const char *kind, json_t *payload)
{
    event e = {{0}, r->seq + 1, r->now, kind, NULL, 0};
    snprintf(e.id, sizeof e.id, "%s", id);
    e.payload = canon(payload, &e.len);
    json_decref(payload);
    r->now += 1 + pick(5000);
    sp_kernel_request req = request(r, &e, r->snapshot, r->snapshot_len);
    sp_kernel_decision d;
    sp_kernel_failure f;
    int rc = sp_kernel_transition(&req, &d, &f);
    if (rc != SP_KERNEL_DECISION) {
        check_fail(__FILE__, __LINE__, "%s: %s failed %s/%s: %s", r->name, kind, f.kind, f.code,
                   f.details);
        CHECK(rc == SP_KERNEL_DECISION);
        free(e.payload);
        return;
    }
    json_t *after = parse(d.snapshot, d.snapshot_len);
    /* K11 */
    if (r->cancelled || strcmp(d.status, "cancelled") == 0) {
        bool scheduled = has_command(&d, "activity.schedule") || has_command(&d, "activity.retry");
        if (scheduled)
            check_fail(__FILE__, __LINE__, "%s: K11: a cancelled run scheduled work", r->name);
        CHECK(!scheduled);
        CHECK_STR(d.status, "cancelled");
    }
    if (strcmp(d.status, "cancelled") == 0)
        r->cancelled = true;
    check_k12(r, sp, after);
    check_k13(r, sp, after);
    count_seen(&d);
    if (sp->join && r->state &&
        !json_equal(json_object_get(json_object_get(r->state, "visits"), sp->join),
                    json_object_get(json_object_get(after, "visits"), sp->join)))
        joins_entered++;
    if (sp->map_prefix) {
        size_t n = 0;
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(after, "invocations"), key, v)
        {
            n += strchr(json_string_value(json_object_get(v, "activationId")), '#') != NULL;
        }
        map_full += n == sp->max_concurrency;
    }
    check_k14(r, &e, r->state, &d, after);
    for (size_t i = 0; i < d.ncommands; i++)
        if (strcmp(d.commands[i].kind, "timer.cancel") == 0) {
            json_t *p = parse(d.commands[i].payload, d.commands[i].payload_len);
            json_array_append(r->fired, json_object_get(p, "timerId"));
            json_decref(p);
        }
    if (r->nevents == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->events = realloc(r->events, r->cap * sizeof *r->events);
        r->records = realloc(r->records, r->cap * sizeof *r->records);
    }
    r->records[r->nevents] = record_of(rc, &d, &f);
    r->events[r->nevents++] = e;
    r->seq++;
    r->decisions++;
    free(r->snapshot);
    r->snapshot = d.snapshot;
    r->snapshot_len = d.snapshot_len;
    d.snapshot = NULL;
    json_decref(r->state);
    r->state = after;
    sp_kernel_decision_free(&d);
}

/* ---- picking the next event from the last snapshot ---- */

static const char *const outcomes[] = {"ok", "red", "more", "nit", "odd"};

static json_t *result_payload(const json_t *inv, uint32_t attempt)
{
    const char *id = json_string_value(json_object_get(inv, "invocationId"));
    char attempt_id[96];
    snprintf(attempt_id, sizeof attempt_id, "%s.%u", id, attempt);
    json_t *p = json_pack("{s:s,s:s,s:i}", "invocationId", id, "attemptId", attempt_id, "attempt",
                          (int)attempt);
    switch (pick(14)) {
    case 0: case 1: case 2: case 3: case 4: case 10: case 11: case 12: case 13:
        json_object_set_new(p, "status", json_string("success"));
        json_object_set_new(p, "outcome", json_string(outcomes[pick(5)]));
        json_object_set_new(p, "output", json_pack("{s:i}", "n", (int)pick(100)));
        break;
    case 5: case 6:
        json_object_set_new(p, "status", json_string("failure"));
        json_object_set_new(p, "retryable", json_boolean(pick(2)));
        break;
    case 7: json_object_set_new(p, "status", json_string("unknown")); break;
    case 8: json_object_set_new(p, "status", json_string("expired")); break;
    default:
        json_object_set_new(p, "status", json_string("success"));
        json_object_set_new(p, "outcome", json_string("ok"));
        break;
    }
    return p;
}

/* The n-th member of an object in canonical order (deterministic). */
static json_t *nth(const json_t *obj, size_t n, const char **key)
{
    bool oom = false;
    sp_json_member *m = sp_json_sorted_members(obj, &oom);
    json_t *v = m ? m[n].value : NULL;
    if (key)
        *key = m ? m[n].key : NULL;
    free(m);
    return v;
}

static void step(run *r, const spec *sp, size_t i)
{
    char id[96];
    const json_t *s = r->state;
    const json_t *invs = json_object_get(s, "invocations"), *timers = json_object_get(s, "timers");
    size_t ninv = json_object_size(invs), ntimers = json_object_size(timers);
    uint32_t choice = pick(100);
    if (choice < 3 || (ninv == 0 && ntimers == 0 && choice < 30)) {
        snprintf(id, sizeof id, "res:cancel%zu", i);
        send(r, sp, id, "run.cancel", json_pack("{s:s,s:s}", "reason", "test", "requestedBy", "k11"));
        return;
    }
    if (choice < 15) {
        snprintf(id, sizeof id, "sig:m%zu", i);
        send(r, sp, id, "signal.received",
             json_pack("{s:s,s:s}", "name", "go", "outcome", pick(3) ? "received" : "nope"));
        return;
    }
    if (choice < 25 && (ntimers || json_array_size(r->fired))) {
        const json_t *tid;
        if (ntimers && pick(3)) {
            tid = json_object_get(nth(timers, pick((uint32_t)ntimers), NULL), "timerId");
            json_array_append(r->fired, (json_t *)tid);
        } else if (json_array_size(r->fired)) {
            tid = json_array_get(r->fired, pick((uint32_t)json_array_size(r->fired)));
        } else {
            tid = json_object_get(nth(timers, 0, NULL), "timerId");
        }
        json_t *payload = json_pack("{s:O}", "timerId", tid);
        snprintf(id, sizeof id, "tmr:%s", json_string_value(tid));
        send(r, sp, id, "timer.fired", payload);
        return;
    }
    if (ninv == 0) {
        snprintf(id, sizeof id, "sig:m%zu", i);
        send(r, sp, id, "signal.received", json_pack("{s:s}", "name", "go"));
        return;
    }
    const json_t *inv = nth(invs, pick((uint32_t)ninv), NULL);
    uint32_t attempt = (uint32_t)json_integer_value(json_object_get(inv, "attempt"));
    const json_t *state = json_object_get(inv, "state");
    if (strcmp(json_string_value(state), "scheduled") == 0 && pick(8)) {
        snprintf(id, sizeof id, "att:%s.%u.%zu", json_string_value(json_object_get(inv, "invocationId")),
                 attempt, i);
        send(r, sp, id, "activity.result", result_payload(inv, pick(10) ? attempt : attempt + 1));
        return;
    }
    json_t *resolution;
    switch (pick(3)) {
    case 0: resolution = json_pack("{s:s}", "action", "retry"); break;
    case 1: resolution = json_pack("{s:s,s:s,s:i}", "action", "complete", "outcome", "ok", "output", 7); break;
    default:
        resolution = json_pack("{s:s,s:{s:s,s:s}}", "action", "fail", "error", "code",
                               "operator.failed", "message", "by hand");
    }
    snprintf(id, sizeof id, "res:r%zu", i);
    send(r, sp, id, "invocation.resolved",
         json_pack("{s:O,s:o}", "invocationId", json_object_get(inv, "invocationId"), "resolution",
                   resolution));
}

/* K15: the accepted events from sequence 1, replayed from bytes and with
 * the kept state, give the same records. */
static void check_k15(const run *r)
{
    char *bytes = NULL;
    size_t len = 0;
    sp_kernel_state *kept = NULL;
    for (size_t i = 0; i < r->nevents; i++) {
        sp_kernel_request req = request(r, &r->events[i], bytes, len);
        sp_kernel_decision d, dk;
        sp_kernel_failure f, fk;
        int rc = sp_kernel_transition(&req, &d, &f);
        record plain = record_of(rc, &d, &f);
        sp_kernel_request kreq = request(r, &r->events[i], NULL, 0);
        kreq.state = kept;
        kreq.want_state = true;
        if (!kept) {
            kreq.snapshot = bytes;
            kreq.snapshot_len = len;
        }
        int krc = sp_kernel_transition(&kreq, &dk, &fk);
        record with_state = record_of(krc, &dk, &fk);
        bool same = plain.len == r->records[i].len && memcmp(plain.bytes, r->records[i].bytes, plain.len) == 0 &&
                    with_state.len == plain.len && memcmp(with_state.bytes, plain.bytes, plain.len) == 0;
        if (!same)
            check_fail(__FILE__, __LINE__, "%s: K15: replay differs at event %zu", r->name, i);
        CHECK(same);
        free(plain.bytes);
        free(with_state.bytes);
        kept = NULL;
        if (krc == SP_KERNEL_DECISION) {
            kept = dk.state;
            dk.state = NULL;
            sp_kernel_decision_free(&dk);
        }
        if (rc != SP_KERNEL_DECISION)
            break;
        free(bytes);
        bytes = d.snapshot;
        len = d.snapshot_len;
        d.snapshot = NULL;
        sp_kernel_decision_free(&d);
    }
    sp_kernel_state_free(kept);
    free(bytes);
}

static const char WF_LOOP[] =
    "{'format':'spore.workflow/0.2','name':'l','start':'check','limits':{'maxVisitsPerNode':50,'maxActivations':200},"
    "'actions':{'check':{'effect':'read-only','outcomes':['ok','red','nit']},'a':{'effect':'pure','outcomes':['ok','more']}},"
    "'nodes':{"
    "'check':{'kind':'activity','action':'check','loopLimits':{'red':2,'nit':1},"
    "'outcomes':{'ok':'done','red':'fix','nit':'check','exhausted':'ask'}},"
    "'fix':{'kind':'activity','action':'a','outcomes':{'ok':'check','more':'check'}},"
    "'ask':{'kind':'await-signal','signal':'go','loopLimits':{'received':3},"
    "'outcomes':{'received':'check','nope':'done','exhausted':'done'}},"
    "'done':{'kind':'complete'}}}";

/* K10 (0.2): a limited outcome is never followed more than its limit in a row. */
static void check_k10(const run *r)
{
    const json_t *streak = json_object_get(json_object_get(r->state, "streaks"), "check");
    json_int_t n = json_integer_value(json_object_get(streak, "count"));
    const char *o = json_string_value(json_object_get(streak, "outcome"));
    bool ok = !streak || (strcmp(o, "red") == 0 ? n <= 2 : n <= 1);
    CHECK(ok);
}

static size_t total_events, total_runs, cancelled_runs, terminal_runs;

static void drive(const char *name, const char *workflow, const char *input, const spec *sp,
                  uint64_t seed, size_t max_events)
{
    run r;
    run_init(&r, name, workflow);
    rng = seed;
    json_t *in = J(input);
    send(&r, sp, "start", "run.started",
         json_pack("{s:s,s:s,s:o}", "tenant", "default", "runId", "run_p", "input", in));
    size_t after_terminal = 0;
    for (size_t i = 1; i < max_events && r.state && after_terminal < 3; i++) {
        step(&r, sp, i);
        check_k10(&r);
        if (!json_is_null(json_object_get(r.state, "result")))
            after_terminal++;
    }
    if (r.state && !json_is_null(json_object_get(r.state, "result")))
        terminal_runs++;
    cancelled_runs += r.cancelled;
    total_events += r.nevents;
    total_runs++;
    check_k15(&r);
    run_free(&r);
}

/* ---- the workflows ---- */

static const char WF_PARALLEL[] =
    "{'format':'spore.workflow/0.2','name':'p','start':'review','limits':{'maxVisitsPerNode':20,'maxActivations':400},"
    "'actions':{'a':{'effect':'idempotent','retry':{'maxAttempts':2},'outcomes':['ok','more']},"
    "'check':{'effect':'read-only','outcomes':['ok','red']},'u':{'effect':'unsafe'}},"
    "'nodes':{"
    "'review':{'kind':'parallel','branches':{'sec':'sec','style':'lint','wait':'hold'},'join':'gather'},"
    "'sec':{'kind':'activity','action':'u','outcomes':{'ok':'gather','failed':'oops'}},"
    "'oops':{'kind':'fail','error':{'code':'sec.failed','message':'m'}},"
    "'lint':{'kind':'activity','action':'check','loopLimits':{'red':2},"
    "'outcomes':{'ok':'gather','red':'fix','exhausted':'gather'}},"
    "'fix':{'kind':'activity','action':'a','outcomes':{'ok':'lint','more':'lint'}},"
    "'hold':{'kind':'await-signal','signal':'go','timeoutMs':'60000','outcomes':{'received':'gather','timeout':'gather'}},"
    "'gather':{'kind':'join','outcomes':{'ok':'again','failed':'again'}},"
    "'again':{'kind':'activity','action':'a','outcomes':{'ok':'done','more':'review'}},"
    "'done':{'kind':'complete','output':{'$get':['nodes','gather','output']}}}}";

static const char WF_MAP[] =
    "{'format':'spore.workflow/0.2','name':'m','start':'each',"
    "'actions':{'r':{'effect':'idempotent','outcomes':['ok','nit'],'retry':{'maxAttempts':2}}},"
    "'nodes':{"
    "'each':{'kind':'map','items':{'$get':['input','files']},'action':'r','maxConcurrency':3,"
    "'input':{'f':{'$get':['item']},'i':{'$get':['index']}},'outcomes':{'ok':'done','failed':'report'}},"
    "'report':{'kind':'complete','output':{'$get':['nodes','each','output']}},"
    "'done':{'kind':'complete','output':{'$get':['nodes','each','output']}}}}";

static const char WF_MAP_STUCK[] =
    "{'format':'spore.workflow/0.2','name':'ms','start':'both',"
    "'actions':{'r':{'effect':'unsafe','outcomes':['ok','nit']}},"
    "'nodes':{"
    "'both':{'kind':'parallel','branches':{'items':'each','nap':'nap'},'join':'gather'},"
    "'each':{'kind':'map','items':{'$get':['input','files']},'action':'r','maxConcurrency':2,"
    "'input':{'$get':['item']},'outcomes':{'ok':'gather'}},"
    "'nap':{'kind':'sleep','durationMs':'1000','outcomes':{'ok':'wake'}},"
    "'wake':{'kind':'await-signal','signal':'go','outcomes':{'received':'gather'}},"
    "'gather':{'kind':'join','outcomes':{'ok':'done'}},"
    "'done':{'kind':'complete'}}}";

static void test_properties(void)
{
    spec par = {NULL, 0, "review", "gather"};
    spec map = {"each/", 3, NULL, NULL};
    spec map2 = {"each/", 2, "both", "gather"};
    spec none = {0};
    const char *files = "{'files':['a','b','c','d','e','f','g','h','i','j']}";
    for (uint64_t seed = 1; seed <= 60; seed++) {
        drive("parallel", WF_PARALLEL, "null", &par, seed * 7919, 120);
        drive("map", WF_MAP, files, &map, seed * 104729, 80);
        drive("map-stuck", WF_MAP_STUCK, files, &map2, seed * 1299709, 80);
        drive("loop", WF_LOOP, "null", &none, seed * 15485863, 80);
    }
    /* the generator reaches the cases it is meant to (not a check of the
     * kernel: of this test) */
    CHECK(cancelled_runs > 0);
    CHECK(terminal_runs > cancelled_runs);
    CHECK(joins_entered > total_runs / 3);
    CHECK(map_full > 0);
    for (size_t k = 0; seen_codes[k]; k++) {
        if (!seen[k])
            check_fail(__FILE__, __LINE__, "the generator never produced %s", seen_codes[k]);
        CHECK(seen[k] > 0);
    }
    printf("K11-K15: %zu runs, %zu events (%zu cancelled, %zu terminal), %zu joins, %zu full maps\n",
           total_runs, total_events, cancelled_runs, terminal_runs, joins_entered, map_full);
    for (size_t k = 0; seen_codes[k]; k++)
        printf("  %s: %zu\n", seen_codes[k], seen[k]);
}

/* ---- targeted checks ---- */

static int transition_code(const char *workflow, const char *semantics, char *code, size_t n)
{
    json_t *wf = J(workflow);
    size_t glen;
    char *graph = canon(wf, &glen);
    json_decref(wf);
    const char *payload = "{\"input\":null,\"runId\":\"r\",\"tenant\":\"t\"}";
    sp_kernel_request req = {
        .identity = {"p", "k", semantics, SP_CODEC_VERSION},
        .graph = graph,
        .graph_len = glen,
        .event = {"start", 1, 1, "run.started", payload, strlen(payload), NULL},
        .limits = sp_kernel_default_limits(semantics),
    };
    sp_kernel_decision d;
    sp_kernel_failure f;
    int rc = sp_kernel_transition(&req, &d, &f);
    snprintf(code, n, "%s", rc == SP_KERNEL_DECISION ? "" : f.code);
    if (rc == SP_KERNEL_DECISION)
        sp_kernel_decision_free(&d);
    free(graph);
    return rc;
}

static void test_validation_order(void)
{
    char code[64];
    /* W07's unsupported effect comes before any 0.2 rule */
    transition_code("{'format':'spore.workflow/0.2','name':'x','start':'p',"
                    "'actions':{'a':{'effect':'reconcilable'}},"
                    "'nodes':{'p':{'kind':'parallel','branches':{},'join':'p'}}}",
                    "0.2", code, sizeof code);
    CHECK_STR(code, "workflow.unsupported-effect");
    /* the same package under 0.1: W01 first, as before */
    transition_code("{'format':'spore.workflow/0.2','name':'x','start':'p',"
                    "'actions':{'a':{'effect':'reconcilable'}},'nodes':{'p':{'kind':'complete'}}}",
                    "0.1", code, sizeof code);
    CHECK_STR(code, "workflow.invalid");
    /* W12 before W13's schema compile */
    transition_code("{'format':'spore.workflow/0.2','name':'x','start':'s','actions':{'a':{'effect':'pure'}},"
                    "'nodes':{'s':{'kind':'activity','action':'a','loopLimits':{'ok':1},"
                    "'outputSchemas':{'ok':{'type':'float'}},'outcomes':{'ok':'s'}}}}",
                    "0.2", code, sizeof code);
    CHECK_STR(code, "workflow.invalid");
    /* a 0.1 package keeps `exhausted` as an ordinary outcome */
    transition_code("{'format':'runspore.workflow/0.1','name':'x','start':'s',"
                    "'actions':{'a':{'effect':'pure','outcomes':['exhausted']}},"
                    "'nodes':{'s':{'kind':'activity','action':'a','outcomes':{'exhausted':'e'}},"
                    "'e':{'kind':'complete'}}}",
                    "0.1", code, sizeof code);
    CHECK_STR(code, "");
    /* a branch region reaching a complete node through a nested map's route */
    transition_code("{'format':'spore.workflow/0.2','name':'x','start':'p','actions':{'a':{'effect':'pure'}},"
                    "'nodes':{'p':{'kind':'parallel','branches':{'b':'m'},'join':'j'},"
                    "'m':{'kind':'map','items':[],'action':'a','outcomes':{'ok':'j','failed':'e'}},"
                    "'j':{'kind':'join','outcomes':{'ok':'e'}},'e':{'kind':'complete'}}}",
                    "0.2", code, sizeof code);
    CHECK_STR(code, "workflow.invalid");
    /* map roots only in a map's input */
    transition_code("{'format':'spore.workflow/0.2','name':'x','start':'s','actions':{'a':{'effect':'pure'}},"
                    "'nodes':{'s':{'kind':'activity','action':'a','input':{'$get':['item']},'outcomes':{'ok':'e'}},"
                    "'e':{'kind':'complete'}}}",
                    "0.2", code, sizeof code);
    CHECK_STR(code, "workflow.invalid");
    /* an unknown semantics */
    transition_code("{'format':'spore.workflow/0.2','name':'x','start':'e','nodes':{'e':{'kind':'complete'}}}",
                    "0.3", code, sizeof code);
    CHECK_STR(code, "version.semantics");
}

/* A snapshot that contradicts itself is state.invalid. */
static void test_state_checks(void)
{
    run r;
    spec none = {0};
    run_init(&r, "state", WF_MAP);
    send(&r, &none, "start", "run.started",
         json_pack("{s:s,s:s,s:o}", "tenant", "default", "runId", "run_s", "input",
                   J("{'files':['a','b','c','d']}")));
    static const char *const tamper[] = {"running", "maps", "invocations", "waitOrder", "status", NULL};
    for (const char *const *m = tamper; *m; m++) {
        json_t *s = json_deep_copy(r.state);
        if (strcmp(*m, "running") == 0)
            json_object_set_new(json_object_get(json_object_get(s, "maps"), "each/1"), "running",
                                json_integer(2));
        else if (strcmp(*m, "maps") == 0)
            json_object_set_new(s, "maps", json_object());
        else if (strcmp(*m, "invocations") == 0)
            json_object_del(json_object_get(s, "invocations"),
                            json_string_value(json_object_get(nth(json_object_get(s, "invocations"), 0, NULL), "invocationId")));
        else if (strcmp(*m, "waitOrder") == 0)
            json_array_append_new(json_object_get(s, "waitOrder"), json_string("x/1"));
        else
            json_object_set_new(s, "status", json_string("waiting"));
        size_t len;
        char *bytes = canon(s, &len);
        json_decref(s);
        event e = {"sig:x", 2, 5, "signal.received", "{\"name\":\"go\"}", 13};
        sp_kernel_request req = request(&r, &e, bytes, len);
        sp_kernel_decision d;
        sp_kernel_failure f;
        int rc = sp_kernel_transition(&req, &d, &f);
        CHECK_INT(rc, SP_KERNEL_FAILURE);
        if (rc == SP_KERNEL_FAILURE)
            CHECK_STR(f.code, "state.invalid");
        else
            sp_kernel_decision_free(&d);
        free(bytes);
    }
    /* the untampered snapshot passes */
    event e = {"sig:x", 2, 5, "signal.received", "{\"name\":\"go\"}", 13};
    sp_kernel_request req = request(&r, &e, r.snapshot, r.snapshot_len);
    sp_kernel_decision d;
    sp_kernel_failure f;
    CHECK_INT(sp_kernel_transition(&req, &d, &f), SP_KERNEL_DECISION);
    CHECK_STR(d.status, "running");
    sp_kernel_decision_free(&d);
    run_free(&r);
}

/* A map of 256 items with 4 KiB outputs fits the 0.2 state budget. */
static void test_budget(void)
{
    char big[4097];
    memset(big, 'x', 4096);
    big[4096] = '\0';
    json_t *files = json_array();
    for (int i = 0; i < 256; i++)
        json_array_append_new(files, json_integer(i));
    run r;
    spec sp = {"each/", 3, NULL, NULL};
    run_init(&r, "budget", WF_MAP);
    send(&r, &sp, "start", "run.started",
         json_pack("{s:s,s:s,s:{s:o}}", "tenant", "default", "runId", "run_b", "input", "files", files));
    for (int i = 0; i < 300 && json_is_null(json_object_get(r.state, "result")); i++) {
        const json_t *inv = nth(json_object_get(r.state, "invocations"), 0, NULL);
        char id[96];
        snprintf(id, sizeof id, "att:%d", i);
        json_t *p = result_payload(inv, 1);
        json_object_set_new(p, "status", json_string("success"));
        json_object_set_new(p, "outcome", json_string("ok"));
        json_object_set_new(p, "output", json_string(big));
        json_object_del(p, "retryable");
        send(&r, &sp, id, "activity.result", p);
    }
    CHECK_STR(json_string_value(json_object_get(r.state, "status")), "completed");
    CHECK(r.snapshot_len > 2 * 256 * 4096); /* the results, in the node and the result */
    CHECK(r.snapshot_len <= SP_KERNEL_DEFAULT_LIMITS_02.max_state_bytes);
    run_free(&r);
}

/* ---- hostile snapshots: never a crash, a decision only for a consistent state ---- */

static json_t *replacement(void)
{
    switch (pick(6)) {
    case 0: return json_null();
    case 1: return json_integer(4294967296LL);
    case 2: return json_integer(-1);
    case 3: return json_string("sp_x/1#99");
    case 4: return json_array();
    default: return json_object();
    }
}

/* Replace (or delete) one member somewhere in the container `v`. */
static void mutate(json_t *v, int depth)
{
    size_t n = json_is_object(v) ? json_object_size(v) : json_array_size(v);
    if (n == 0)
        return;
    size_t k = pick((uint32_t)n);
    char key[256] = "";
    json_t *child;
    if (json_is_object(v)) {
        const char *borrowed;
        nth(v, k, &borrowed);
        snprintf(key, sizeof key, "%s", borrowed);
        child = json_object_get(v, key);
    } else {
        child = json_array_get(v, k);
    }
    if (depth < 6 && (json_is_object(child) || json_is_array(child)) && pick(3)) {
        mutate(child, depth + 1);
        return;
    }
    if (!json_is_object(v))
        json_array_set_new(v, k, replacement());
    else if (pick(5) == 0)
        json_object_del(v, key);
    else
        json_object_set_new(v, key, replacement());
}

static void test_hostile_snapshots(void)
{
    static const char *const workflows[] = {WF_PARALLEL, WF_MAP, WF_MAP_STUCK};
    static const char *const inputs[] = {"null", "{'files':['a','b','c','d']}", "{'files':['a','b','c']}"};
    spec none = {0};
    size_t decisions = 0, failures = 0;
    for (size_t w = 0; w < 3; w++) {
        run r;
        run_init(&r, "hostile", workflows[w]);
        rng = 99 + w;
        send(&r, &none, "start", "run.started",
             json_pack("{s:s,s:s,s:o}", "tenant", "default", "runId", "run_h", "input", J(inputs[w])));
        for (size_t i = 1; i < 12 && json_is_null(json_object_get(r.state, "result")); i++) {
            for (int m = 0; m < 60; m++) {
                json_t *s = json_deep_copy(r.state);
                mutate(s, 0);
                size_t len;
                char *bytes = canon(s, &len);
                json_decref(s);
                const char *kinds[] = {"signal.received", "timer.fired", "run.cancel"};
                const char *payloads[] = {"{\"name\":\"go\"}", "{\"timerId\":\"tmr_x\"}",
                                          "{\"reason\":\"r\",\"requestedBy\":\"b\"}"};
                size_t k = pick(3);
                event e = {"h", r.seq + 1, 9, kinds[k], (char *)payloads[k], strlen(payloads[k])};
                sp_kernel_request req = request(&r, &e, bytes, len);
                sp_kernel_decision d;
                sp_kernel_failure f;
                int rc = sp_kernel_transition(&req, &d, &f);
                CHECK(rc == SP_KERNEL_DECISION || rc == SP_KERNEL_FAILURE);
                if (rc == SP_KERNEL_DECISION) {
                    decisions++;
                    /* what the kernel accepted and produced decodes again */
                    event e2 = {"h2", r.seq + 2, 10, "signal.received", "{\"name\":\"zz\"}", 13};
                    sp_kernel_request req2 = request(&r, &e2, d.snapshot, d.snapshot_len);
                    sp_kernel_decision d2;
                    sp_kernel_failure f2;
                    int rc2 = sp_kernel_transition(&req2, &d2, &f2);
                    CHECK_INT(rc2, SP_KERNEL_DECISION);
                    if (rc2 == SP_KERNEL_DECISION)
                        sp_kernel_decision_free(&d2);
                    sp_kernel_decision_free(&d);
                } else {
                    failures++;
                }
                free(bytes);
            }
            step(&r, &none, i);
        }
        run_free(&r);
    }
    CHECK(failures > 0);
    printf("hostile snapshots: %zu decisions, %zu failures\n", decisions, failures);
}

int main(void)
{
    test_validation_order();
    test_state_checks();
    test_budget();
    test_hostile_snapshots();
    test_properties();
    return check_done("test_kernel02");
}
