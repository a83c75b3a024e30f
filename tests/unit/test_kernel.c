/*
 * test_kernel.c - unit tests of the pure kernel through sp_kernel_transition
 * (kernel.md §1-3, §7), with workflows and events built here as canonical
 * bytes. Covers the properties K1-K9 of §7.13, the mapping cost worked
 * example, delay_after, W-rule orderings the golden traces do not pin, the
 * fixed kernel messages and sp_kernel_describe().
 *
 * JSON in this file is written with single quotes for readability; J()
 * turns them into double quotes (no test string contains an apostrophe).
 * Everything allocated is released at the end so the suite runs clean under
 * AddressSanitizer.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "digest/digest.h"
#include "json/json.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

/* ------------------------------------------------------------------ */
/* garbage list: everything a test allocates through the helpers       */

typedef struct garbage {
    void **ptrs;
    json_t **values;
    size_t nptrs, nvalues, cap_ptrs, cap_values;
} garbage;

static garbage G;

static void *keep(void *p)
{
    if (G.nptrs == G.cap_ptrs) {
        G.cap_ptrs = G.cap_ptrs ? 2 * G.cap_ptrs : 64;
        G.ptrs = realloc(G.ptrs, G.cap_ptrs * sizeof *G.ptrs);
        if (!G.ptrs)
            abort();
    }
    G.ptrs[G.nptrs++] = p;
    return p;
}

static json_t *keepj(json_t *v)
{
    if (G.nvalues == G.cap_values) {
        G.cap_values = G.cap_values ? 2 * G.cap_values : 64;
        G.values = realloc(G.values, G.cap_values * sizeof *G.values);
        if (!G.values)
            abort();
    }
    G.values[G.nvalues++] = v;
    return v;
}

static void garbage_free(void)
{
    for (size_t i = 0; i < G.nptrs; i++)
        free(G.ptrs[i]);
    for (size_t i = 0; i < G.nvalues; i++)
        json_decref(G.values[i]);
    free(G.ptrs);
    free(G.values);
    memset(&G, 0, sizeof G);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, f);
    if (vasprintf(&s, f, ap) < 0)
        abort();
    va_end(ap);
    return keep(s);
}

/* ------------------------------------------------------------------ */
/* JSON helpers                                                        */

/* Parse test JSON (single quotes allowed for double quotes). Kept. */
static json_t *J(const char *text)
{
    size_t n = strlen(text);
    char *s = malloc(n + 1);
    if (!s)
        abort();
    for (size_t i = 0; i <= n; i++)
        s[i] = text[i] == '\'' ? '"' : text[i];
    sp_error err = {0};
    json_t *v = sp_json_parse(s, n, &err);
    if (!v) {
        fprintf(stderr, "bad test JSON (%s: %s): %s\n", err.code, err.message, s);
        abort();
    }
    free(s);
    return keepj(v);
}

/* Canonical bytes of a value (kept). */
static char *enc(const json_t *v, size_t *len)
{
    sp_error err = {0};
    size_t n;
    char *s = sp_json_encode_alloc(v, &n, &err);
    if (!s) {
        fprintf(stderr, "encode failed: %s\n", err.message);
        abort();
    }
    if (len)
        *len = n;
    return keep(s);
}

/* Canonical bytes of test JSON text (kept). */
static char *C(const char *text) { return enc(J(text), NULL); }

/* Parse canonical bytes that the kernel emitted (kept). */
static json_t *P(const char *bytes, size_t len)
{
    sp_error err = {0};
    json_t *v = sp_json_parse_canonical(bytes, len, &err);
    if (!v) {
        fprintf(stderr, "kernel emitted non-canonical bytes (%s): %.*s\n", err.message, (int)len,
                bytes);
        abort();
    }
    return keepj(v);
}

/* A member by dotted path ("invocation.attempt", "signals.0.name"). */
static json_t *at(const json_t *root, const char *path)
{
    char *copy = strdup(path);
    json_t *v = (json_t *)root;
    for (char *save = NULL, *seg = strtok_r(copy, ".", &save); seg && v;
         seg = strtok_r(NULL, ".", &save)) {
        if (json_is_array(v)) {
            char *end;
            long i = strtol(seg, &end, 10);
            v = *end ? NULL : json_array_get(v, (size_t)i);
        } else {
            v = json_object_get(v, seg);
        }
    }
    free(copy);
    return v;
}

static const char *str_at(const json_t *root, const char *path)
{
    const char *s = json_string_value(at(root, path));
    return s ? s : "(absent)";
}

static long long int_at(const json_t *root, const char *path)
{
    const json_t *v = at(root, path);
    return json_is_integer(v) ? (long long)json_integer_value(v) : -999999;
}

/* Canonical bytes of a member (or "(absent)"). */
static const char *enc_at(const json_t *root, const char *path)
{
    const json_t *v = at(root, path);
    return v ? enc(v, NULL) : "(absent)";
}

#define CHECK_JSON(value, text) CHECK_STR(enc((value), NULL), C(text))
#define CHECK_AT(root, path, text) CHECK_STR(enc_at((root), (path)), C(text))

/* ------------------------------------------------------------------ */
/* a run driven through the kernel                                     */

typedef struct logged {
    char *event_id, *kind, *payload;
    size_t payload_len;
    uint64_t sequence, at;
} logged;

typedef struct run {
    char *graph;
    size_t graph_len;
    char *snap; /* threaded snapshot (owned), NULL before run.started */
    size_t snap_len;
    json_t *state; /* parsed `snap` (owned) */
    uint64_t seq;  /* last accepted sequence */
    sp_kernel_limits limits;
    const char *semantics, *codec; /* NULL = current */
    const char *override_snap;     /* sent once instead of `snap` when set */
    size_t override_len;
    bool override_absent;          /* send no snapshot once */
    int rc;
    sp_kernel_decision d; /* the last decision (valid when rc == SP_KERNEL_DECISION) */
    sp_kernel_failure f;
    logged *log; /* accepted events, for K1 */
    size_t nlog;
} run;

static void run_init_bytes(run *r, const char *graph, size_t len)
{
    memset(r, 0, sizeof *r);
    r->graph = graph ? strndup(graph, len) : NULL;
    r->graph_len = len;
    r->limits = SP_KERNEL_DEFAULT_LIMITS;
}

static void run_init(run *r, const char *workflow_text)
{
    size_t len;
    char *bytes = enc(J(workflow_text), &len);
    run_init_bytes(r, bytes, len);
}

/* A second run at the same point (graph, snapshot, sequence, limits). */
static void run_clone(run *q, const run *r)
{
    run_init_bytes(q, r->graph, r->graph_len);
    q->limits = r->limits;
    q->seq = r->seq;
    q->snap = r->snap ? strndup(r->snap, r->snap_len) : NULL;
    q->snap_len = r->snap_len;
    q->state = r->state ? json_deep_copy(r->state) : NULL;
}

static void run_free(run *r)
{
    sp_kernel_decision_free(&r->d);
    for (size_t i = 0; i < r->nlog; i++) {
        free(r->log[i].event_id);
        free(r->log[i].kind);
        free(r->log[i].payload);
    }
    free(r->log);
    free(r->graph);
    free(r->snap);
    json_decref(r->state);
    memset(r, 0, sizeof *r);
}

/* Send an event with explicit sequence and exact payload bytes. */
static int send_raw(run *r, const char *event_id, uint64_t seq, const char *kind,
                    const char *payload, size_t payload_len, uint64_t at_ms)
{
    sp_kernel_decision_free(&r->d);
    const char *snapshot = r->override_snap ? r->override_snap : r->snap;
    size_t snapshot_len = r->override_snap ? r->override_len : r->snap_len;
    if (r->override_absent)
        snapshot = NULL, snapshot_len = 0;
    r->override_snap = NULL;
    r->override_absent = false;
    sp_kernel_request req = {
        .identity = {"sha256:test", "test:kernel", r->semantics ? r->semantics : "0.1",
                     r->codec ? r->codec : "jcs-int53/1"},
        .graph = r->graph,
        .graph_len = r->graph_len,
        .snapshot = snapshot,
        .snapshot_len = snapshot_len,
        .event = {event_id, seq, at_ms, kind, payload, payload_len, NULL},
        .limits = r->limits,
    };
    r->rc = sp_kernel_transition(&req, &r->d, &r->f);
    if (r->rc != SP_KERNEL_DECISION)
        return r->rc;
    free(r->snap);
    r->snap = strndup(r->d.snapshot, r->d.snapshot_len);
    r->snap_len = r->d.snapshot_len;
    json_decref(r->state);
    sp_error err = {0};
    r->state = sp_json_parse_canonical(r->snap, r->snap_len, &err);
    if (!r->state)
        abort();
    r->seq = seq;
    r->log = realloc(r->log, (r->nlog + 1) * sizeof *r->log);
    r->log[r->nlog++] = (logged){strdup(event_id), strdup(kind), strndup(payload, payload_len),
                                 payload_len, seq, at_ms};
    return r->rc;
}

/* Send the next event (sequence = last + 1) with a test-JSON payload. */
static int ev_send(run *r, const char *kind, const char *payload_text, uint64_t at_ms)
{
    size_t len;
    char *payload = enc(J(payload_text), &len);
    uint64_t seq = r->seq + 1;
    const char *id = strcmp(kind, "run.started") == 0 ? "start" : fmt("ev-%llu", (unsigned long long)seq);
    return send_raw(r, id, seq, kind, payload, len, at_ms);
}

static int start(run *r, const char *input_text, uint64_t at_ms)
{
    return ev_send(r, "run.started",
                fmt("{'tenant':'default','runId':'run_test','input':%s}", input_text), at_ms);
}

static const char *inv_id(run *r) { return str_at(r->state, "invocation.invocationId"); }

/* activity.result for the current invocation. `extra` adds members. */
static int result(run *r, unsigned attempt, const char *status, const char *extra, uint64_t at)
{
    const char *inv = inv_id(r);
    return ev_send(r, "activity.result",
                fmt("{'invocationId':'%s','attemptId':'%s.%u','attempt':%u,'status':'%s'%s%s}",
                    inv, inv, attempt, attempt, status, extra && *extra ? "," : "",
                    extra ? extra : ""),
                at);
}

static int signal_(run *r, const char *body, uint64_t at) { return ev_send(r, "signal.received", body, at); }

static int resolve(run *r, const char *invocation, const char *resolution, uint64_t at)
{
    return ev_send(r, "invocation.resolved",
                fmt("{'invocationId':'%s','resolution':%s}", invocation, resolution), at);
}

static const char *status(run *r) { return str_at(r->state, "status"); }

/* The payload of command i of the last decision, parsed. */
static json_t *cmd(run *r, size_t i)
{
    if (r->rc != SP_KERNEL_DECISION || i >= r->d.ncommands)
        return keepj(json_null());
    return P(r->d.commands[i].payload, r->d.commands[i].payload_len);
}

static json_t *diag_details(run *r, size_t i)
{
    if (r->rc != SP_KERNEL_DECISION || i >= r->d.ndiagnostics)
        return keepj(json_null());
    return P(r->d.diagnostics[i].details, r->d.diagnostics[i].details_len);
}

static const char *diag_code(run *r, size_t i)
{
    return r->rc == SP_KERNEL_DECISION && i < r->d.ndiagnostics ? r->d.diagnostics[i].code
                                                                 : "(none)";
}

static const char *diag_node(run *r, size_t i)
{
    if (r->rc != SP_KERNEL_DECISION || i >= r->d.ndiagnostics)
        return "(none)";
    return r->d.diagnostics[i].node_id ? r->d.diagnostics[i].node_id : "(null)";
}

/* Everything a decision says, as one string (for byte-for-byte compares). */
static char *decision_text(const sp_kernel_decision *d)
{
    char *s = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&s, &n);
    fprintf(fp, "snapshot %s\ndigest %s\n", d->snapshot, d->snapshot_digest);
    for (size_t i = 0; i < d->ncommands; i++)
        fprintf(fp, "command %s %s %s %s\n", d->commands[i].command_id,
                d->commands[i].activation_id, d->commands[i].kind, d->commands[i].payload);
    for (size_t i = 0; i < d->ndiagnostics; i++)
        fprintf(fp, "diagnostic %s %s %s\n", d->diagnostics[i].code,
                d->diagnostics[i].node_id ? d->diagnostics[i].node_id : "-",
                d->diagnostics[i].details);
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_kernel_decision_digest(d, digest);
    fprintf(fp, "decision %s\n", digest);
    fclose(fp);
    return keep(s);
}

/* The state without the bookkeeping members (what a no-op event keeps). */
static char *without_bookkeeping(const json_t *state)
{
    json_t *copy = keepj(json_deep_copy(state));
    json_object_del(copy, "lastSequence");
    json_object_del(copy, "lastAcceptedAtMs");
    return enc(copy, NULL);
}

#define CHECK_DECISION(r)                                                                  \
    do {                                                                                   \
        check_count++;                                                                     \
        if ((r)->rc != SP_KERNEL_DECISION)                                                 \
            check_fail(__FILE__, __LINE__, "expected a decision, got failure %s/%s (%s)",   \
                       (r)->f.kind ? (r)->f.kind : "?", (r)->f.code, (r)->f.details);       \
    } while (0)

#define CHECK_FAILURE(r, kind_, code_)                                                     \
    do {                                                                                   \
        check_count++;                                                                     \
        if ((r)->rc != SP_KERNEL_FAILURE || !(r)->f.kind || strcmp((r)->f.kind, kind_) ||   \
            strcmp((r)->f.code, code_))                                                    \
            check_fail(__FILE__, __LINE__, "expected failure %s/%s, got rc %d %s/%s",       \
                       kind_, code_, (r)->rc, (r)->f.kind ? (r)->f.kind : "-", (r)->f.code); \
    } while (0)

/* A failed transition commits nothing: no snapshot, commands or diagnostics
 * are handed out. */
#define CHECK_NOTHING_OUT(r)                                                               \
    do {                                                                                   \
        CHECK((r)->d.snapshot == NULL);                                                    \
        CHECK_INT((r)->d.ncommands, 0);                                                    \
        CHECK_INT((r)->d.ndiagnostics, 0);                                                 \
    } while (0)

/* ------------------------------------------------------------------ */
/* workflows                                                           */

/* fetch (idempotent, 3 attempts) -> wait for `go` -> deploy (unsafe) -> done */
static const char WF_PIPELINE[] =
    "{'format':'runspore.workflow/0.1','name':'pipeline','start':'a',"
    " 'actions':{"
    "   'fetch':{'kind':'command','argv':['x'],'effect':'idempotent',"
    "            'retry':{'maxAttempts':3,'backoffMs':'100'}},"
    "   'deploy':{'kind':'command','argv':['y'],'effect':'unsafe','outcomes':['ok','rolled-back'],"
    "             'retry':{'maxAttempts':3}}},"
    " 'nodes':{"
    "   'a':{'kind':'activity','action':'fetch','input':{'u':{'$get':['input','u']}},"
    "        'outcomes':{'ok':'gate'}},"
    "   'gate':{'kind':'await-signal','signal':'go','outcomes':{'received':'b','stop':'halt'}},"
    "   'b':{'kind':'activity','action':'deploy','input':{'from':{'$get':['nodes','a','output']}},"
    "        'outcomes':{'ok':'done','rolled-back':'halt'}},"
    "   'done':{'kind':'complete','output':{'a':{'$get':['nodes','a','output']},"
    "           'b':{'$get':['nodes','b','output']},'gate':{'$get':['nodes','gate','outcome']}}},"
    "   'halt':{'kind':'fail','error':{'code':'deploy.halted','message':'halted',"
    "           'details':{'why':'test'}}}}}";

/* one activity (action options filled in), then an await node, then done */
static const char *wf_activity_then_wait(const char *action)
{
    return fmt("{'format':'runspore.workflow/0.1','name':'t','start':'a',"
               " 'actions':{'act':%s},"
               " 'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'w'}},"
               "   'w':{'kind':'await-signal','signal':'go','outcomes':{'received':'done'}},"
               "   'done':{'kind':'complete'}}}",
               action);
}

/* one activity (action options filled in) that completes with its output */
static const char *wf_one_activity(const char *action)
{
    return fmt("{'format':'runspore.workflow/0.1','name':'t','start':'a',"
               " 'actions':{'act':%s},"
               " 'nodes':{'a':{'kind':'activity','action':'act','input':{'$get':['input']},"
               "               'outcomes':{'ok':'done'}},"
               "   'done':{'kind':'complete','output':{'$get':['nodes','a','output']}}}}",
               action);
}

/* ------------------------------------------------------------------ */
/* describe, limits, identities                                        */

static void test_describe(void)
{
    const sp_kernel_descriptor *d = sp_kernel_describe();
    CHECK(d != NULL);
    CHECK_STR(d->abi_version, "runspore:machine@0.1.0");
    CHECK_STR(d->semantics_version, "0.1");
    CHECK_STR(d->graph_format_version, "runspore.workflow/0.1");
    CHECK_STR(d->codec_version, "jcs-int53/1");
    CHECK(sp_kernel_describe() == d); /* one static descriptor */

    sp_kernel_limits l = SP_KERNEL_DEFAULT_LIMITS;
    CHECK_INT(l.microsteps, 1000);
    CHECK_INT(l.expression_operations, 10000);
    CHECK_INT(l.max_state_bytes, 262144);
    CHECK_INT(l.max_command_count, 128);
}

/* The first decision of a run, checked member by member against §7.4/7.6. */
static void test_schedule_shape(void)
{
    run r;
    run_init(&r, WF_PIPELINE);
    start(&r, "{'u':'https://example.test/'}", 1000);
    CHECK_DECISION(&r);
    char inv[SP_ID_LEN + 1], cmd_id[SP_ID_LEN + 1];
    sp_invocation_id("default", "run_test", "a/1", inv);
    sp_command_id("default", "run_test", "a/1", 1, cmd_id);
    char input_digest[SP_DIGEST_TEXT_LEN + 1];
    const char *input = C("{'u':'https://example.test/'}");
    sp_digest_one("body", input, strlen(input), input_digest);

    CHECK_STR(r.snap,
              C(fmt("{'format':'runspore.state/0.1','semantics':'0.1','tenant':'default',"
                    "'runId':'run_test','status':'running','input':{'u':'https://example.test/'},"
                    "'nodes':{},'visits':{'a':1},'activations':1,"
                    "'position':{'nodeId':'a','activationId':'a/1','visit':1},"
                    "'invocation':{'invocationId':'%s','activationId':'a/1','nodeId':'a',"
                    "'actionId':'fetch','attempt':1,'state':'scheduled','inputDigest':'%s'},"
                    "'signals':[],'result':null,'lastSequence':'1','lastAcceptedAtMs':'1000'}",
                    inv, input_digest)));
    char state_digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("state", r.d.snapshot, r.d.snapshot_len, state_digest);
    CHECK_STR(r.d.snapshot_digest, state_digest);
    CHECK_STR(r.d.status, "running");
    CHECK_INT(r.d.ncommands, 1);
    CHECK_INT(r.d.ndiagnostics, 0);
    CHECK_STR(r.d.commands[0].command_id, cmd_id);
    CHECK_STR(r.d.commands[0].activation_id, "a/1");
    CHECK_STR(r.d.commands[0].kind, "activity.schedule");
    CHECK_STR(r.d.commands[0].payload,
              C(fmt("{'actionId':'fetch','activationId':'a/1','attempt':1,'effectKey':'%s',"
                    "'input':{'u':'https://example.test/'},'invocationId':'%s','nodeId':'a',"
                    "'notBeforeMs':'1000'}",
                    inv, inv)));
    CHECK_INT(r.d.commands[0].payload_len, strlen(r.d.commands[0].payload));
    run_free(&r);
}

/* digest::decision framing (§7.3), recomputed independently. */
static void test_decision_digest(void)
{
    run r;
    run_init(&r, wf_activity_then_wait("{'kind':'command','argv':['x'],'effect':'idempotent',"
                                       "'retry':{'maxAttempts':2}}"));
    start(&r, "null", 5);
    result(&r, 1, "failure", "", 6); /* one command + one diagnostic with a node */
    CHECK_DECISION(&r);
    CHECK_INT(r.d.ncommands, 1);
    CHECK_INT(r.d.ndiagnostics, 1);

    sp_hasher h;
    unsigned char be[8] = {0};
    sp_hasher_begin(&h, "decision");
    sp_hasher_part(&h, r.d.snapshot_digest, strlen(r.d.snapshot_digest));
    be[7] = 1;
    sp_hasher_part(&h, be, 8);
    sp_hasher_part(&h, r.d.commands[0].command_id, strlen(r.d.commands[0].command_id));
    sp_hasher_part(&h, r.d.commands[0].activation_id, strlen(r.d.commands[0].activation_id));
    sp_hasher_part(&h, r.d.commands[0].kind, strlen(r.d.commands[0].kind));
    sp_hasher_part(&h, r.d.commands[0].payload, r.d.commands[0].payload_len);
    sp_hasher_part(&h, be, 8);
    sp_hasher_part(&h, "activity.retry-scheduled", 24);
    sp_hasher_part(&h, "a", 1);
    unsigned char one = 1, zero = 0;
    sp_hasher_part(&h, &one, 1);
    sp_hasher_part(&h, r.d.diagnostics[0].details, r.d.diagnostics[0].details_len);
    char want[SP_DIGEST_TEXT_LEN + 1], got[SP_DIGEST_TEXT_LEN + 1];
    sp_hasher_end_text(&h, want);
    sp_kernel_decision_digest(&r.d, got);
    CHECK_STR(got, want);

    /* a diagnostic without a node: empty text then a 0 byte */
    result(&r, 1, "success", "", 7); /* stale: attempt 1 is superseded */
    CHECK_DECISION(&r);
    CHECK_STR(diag_code(&r, 0), "result.stale");
    CHECK_STR(diag_node(&r, 0), "a");
    ev_send(&r, "activity.result",
         "{'invocationId':'inv_other','attemptId':'inv_other.1','attempt':1,'status':'success'}", 8);
    CHECK_STR(diag_node(&r, 0), "(null)");
    sp_hasher_begin(&h, "decision");
    sp_hasher_part(&h, r.d.snapshot_digest, strlen(r.d.snapshot_digest));
    memset(be, 0, 8);
    sp_hasher_part(&h, be, 8);
    be[7] = 1;
    sp_hasher_part(&h, be, 8);
    sp_hasher_part(&h, "result.stale", 12);
    sp_hasher_part(&h, "", 0);
    sp_hasher_part(&h, &zero, 1);
    sp_hasher_part(&h, r.d.diagnostics[0].details, r.d.diagnostics[0].details_len);
    sp_hasher_end_text(&h, want);
    sp_kernel_decision_digest(&r.d, got);
    CHECK_STR(got, want);
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K1: replay from sequence 1 reproduces every byte                    */

static void test_k1_replay(void)
{
    run r;
    run_init(&r, WF_PIPELINE);
    char *texts[16];
    size_t n = 0;

    start(&r, "{'u':'https://example.test/'}", 1000);
    texts[n++] = decision_text(&r.d);
    const char *inv_a = keep(strdup(inv_id(&r)));
    result(&r, 1, "failure", "'error':{'code':'net.down','message':'no route'}", 1100);
    CHECK_STR(r.d.commands[0].kind, "activity.retry");
    texts[n++] = decision_text(&r.d);
    signal_(&r, "{'name':'go'}", 1150); /* buffered while running */
    texts[n++] = decision_text(&r.d);
    signal_(&r, "{'name':'noise','data':[1]}", 900); /* earlier time: logical now stays */
    CHECK_STR(str_at(r.state, "lastAcceptedAtMs"), "1150");
    texts[n++] = decision_text(&r.d);
    result(&r, 2, "success", "'output':{'v':1}", 1300);
    CHECK_DECISION(&r);
    /* a recorded, gate entered, the buffered go consumed, b scheduled: one transition */
    CHECK_AT(r.state, "nodes.a", "{'visit':1,'outcome':'ok','output':{'v':1}}");
    CHECK_AT(r.state, "nodes.gate", "{'visit':1,'outcome':'received','output':null}");
    CHECK_AT(r.state, "signals", "[{'eventId':'ev-4','sequence':'4','name':'noise','outcome':null,'data':[1]}]");
    CHECK_INT(r.d.ncommands, 1);
    CHECK_STR(r.d.commands[0].activation_id, "b/1");
    CHECK_AT(cmd(&r, 0), "input", "{'from':{'v':1}}");
    texts[n++] = decision_text(&r.d);
    const char *inv_b = keep(strdup(inv_id(&r)));
    CHECK(strcmp(inv_a, inv_b) != 0);
    result(&r, 1, "unknown", "", 1400);
    CHECK_STR(status(&r), "needs-intervention");
    texts[n++] = decision_text(&r.d);
    resolve(&r, inv_b, "{'action':'complete','outcome':'ok','output':{'deployed':true}}", 1500);
    CHECK_STR(status(&r), "completed");
    CHECK_AT(r.state, "result",
             "{'output':{'a':{'v':1},'b':{'deployed':true},'gate':'received'}}");
    texts[n++] = decision_text(&r.d);
    signal_(&r, "{'name':'go'}", 1600);
    CHECK_STR(diag_code(&r, 0), "event.ignored-terminal");
    texts[n++] = decision_text(&r.d);
    CHECK_INT(r.nlog, n);

    /* Replay the accepted events from sequence 1 into a fresh run. */
    run q;
    run_init_bytes(&q, r.graph, r.graph_len);
    for (size_t i = 0; i < r.nlog; i++) {
        const logged *e = &r.log[i];
        CHECK_INT(e->sequence, i + 1);
        send_raw(&q, e->event_id, e->sequence, e->kind, e->payload, e->payload_len, e->at);
        CHECK_DECISION(&q);
        if (q.rc == SP_KERNEL_DECISION)
            CHECK_STR(decision_text(&q.d), texts[i]);
    }
    CHECK_STR(q.snap, r.snap);

    /* The same request twice gives the same bytes (no hidden state), and a
     * pre-loaded graph (the host's cache) changes nothing. */
    bool oom = false;
    sp_kernel_failure lf;
    sp_workflow *wf = sp_workflow_load(r.graph, r.graph_len, &lf, &oom);
    CHECK(wf != NULL);
    run s;
    run_init_bytes(&s, r.graph, r.graph_len);
    for (size_t i = 0; i < r.nlog; i++) {
        const logged *e = &r.log[i];
        sp_kernel_request req = {
            .identity = {"x", "y", "0.1", "jcs-int53/1"},
            .graph = r.graph,
            .graph_len = r.graph_len,
            .loaded_graph = wf,
            .snapshot = s.snap,
            .snapshot_len = s.snap_len,
            .event = {e->event_id, e->sequence, e->at, e->kind, e->payload, e->payload_len, NULL},
            .limits = SP_KERNEL_DEFAULT_LIMITS,
        };
        sp_kernel_decision d1, d2;
        sp_kernel_failure f;
        CHECK_INT(sp_kernel_transition(&req, &d1, &f), SP_KERNEL_DECISION);
        CHECK_INT(sp_kernel_transition(&req, &d2, &f), SP_KERNEL_DECISION);
        CHECK_STR(decision_text(&d1), texts[i]);
        CHECK_STR(decision_text(&d2), texts[i]);
        free(s.snap);
        s.snap = strndup(d1.snapshot, d1.snapshot_len);
        s.snap_len = d1.snapshot_len;
        sp_kernel_decision_free(&d1);
        sp_kernel_decision_free(&d2);
    }
    sp_workflow_free(wf);
    run_free(&s);
    run_free(&q);
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K2: a result applies at most once                                   */

static void test_k2_at_most_once(void)
{
    run r;
    run_init(&r, wf_activity_then_wait("{'kind':'command','argv':['x'],'effect':'read-only',"
                                       "'retry':{'maxAttempts':3}}"));
    start(&r, "null", 10);
    const char *inv = keep(strdup(inv_id(&r)));
    result(&r, 1, "failure", "", 11); /* retry -> attempt 2 */
    CHECK_INT(int_at(r.state, "invocation.attempt"), 2);
    char *before = without_bookkeeping(r.state);

    /* a late repeat of the superseded attempt 1 */
    result(&r, 1, "success", "'output':'late'", 12);
    CHECK_DECISION(&r);
    CHECK_STR(diag_code(&r, 0), "result.stale");
    CHECK_STR(diag_node(&r, 0), "a"); /* the invocation ID is the current one */
    CHECK_JSON(diag_details(&r, 0), fmt("{'attempt':1,'invocationId':'%s'}", inv));
    CHECK_INT(r.d.ncommands, 0);
    CHECK_STR(without_bookkeeping(r.state), before);
    CHECK_STR(str_at(r.state, "lastSequence"), "3");
    CHECK_STR(str_at(r.state, "lastAcceptedAtMs"), "12");

    /* a result for attempt 3, not yet authorized */
    result(&r, 3, "success", "", 13);
    CHECK_STR(diag_code(&r, 0), "result.stale");
    CHECK_STR(diag_node(&r, 0), "a");
    CHECK_STR(without_bookkeeping(r.state), before);

    /* attempt 2 applies */
    result(&r, 2, "success", "'output':'first'", 14);
    CHECK_INT(r.d.ndiagnostics, 0);
    CHECK_STR(status(&r), "waiting");
    CHECK_AT(r.state, "nodes.a", "{'visit':1,'outcome':'ok','output':'first'}");
    before = without_bookkeeping(r.state);

    /* a duplicate of the applied success: no invocation any more -> nodeId null */
    ev_send(&r, "activity.result",
         fmt("{'invocationId':'%s','attemptId':'%s.2','attempt':2,'status':'success',"
             "'output':'second'}", inv, inv), 15);
    CHECK_DECISION(&r);
    CHECK_INT(r.d.ndiagnostics, 1);
    CHECK_STR(diag_code(&r, 0), "result.stale");
    CHECK_STR(diag_node(&r, 0), "(null)");
    CHECK_JSON(diag_details(&r, 0), fmt("{'attempt':2,'invocationId':'%s'}", inv));
    CHECK_STR(without_bookkeeping(r.state), before);
    CHECK_AT(r.state, "nodes.a.output", "'first'");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K3: a terminal state never changes status                           */

static void check_terminal_stays(run *r, const char *want_status)
{
    char *before = without_bookkeeping(r->state);
    static const char *const kinds[] = {"activity.result", "signal.received",
                                        "invocation.resolved", "activity.result"};
    const char *payloads[] = {
        "{'invocationId':'inv_x','attemptId':'inv_x.1','attempt':1,'status':'success'}",
        "{'name':'go','outcome':'approved','data':{'k':1}}",
        "{'invocationId':'inv_x','resolution':{'action':'retry'}}",
        "{'invocationId':'inv_x','attemptId':'inv_x.1','attempt':1,'status':'unknown'}",
    };
    for (size_t i = 0; i < 4; i++) {
        uint64_t seq = r->seq;
        ev_send(r, kinds[i], payloads[i], 1);
        CHECK_DECISION(r);
        CHECK_INT(r->d.ncommands, 0);
        CHECK_INT(r->d.ndiagnostics, 1);
        CHECK_STR(diag_code(r, 0), "event.ignored-terminal");
        CHECK_STR(diag_node(r, 0), "(null)");
        CHECK_JSON(diag_details(r, 0), fmt("{'kind':'%s'}", kinds[i]));
        CHECK_STR(status(r), want_status);
        CHECK_STR(r->d.status, want_status);
        CHECK_STR(without_bookkeeping(r->state), before);
        CHECK_INT(r->seq, seq + 1); /* bookkeeping still applies */
    }
    /* run.started never applies to an existing snapshot */
    send_raw(r, "start", r->seq + 1, "run.started",
             C("{'tenant':'default','runId':'run_test','input':null}"),
             strlen(C("{'tenant':'default','runId':'run_test','input':null}")), 1);
    CHECK_FAILURE(r, "invalid-input", "state.unexpected-start");
}

static void test_k3_terminal(void)
{
    run r;
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'done',"
                 "'nodes':{'done':{'kind':'complete','output':{'$get':['input']}}}}");
    start(&r, "{'x':[1,2]}", 50);
    CHECK_STR(status(&r), "completed");
    CHECK_AT(r.state, "result", "{'output':{'x':[1,2]}}");
    CHECK_AT(r.state, "position", "null");
    CHECK_AT(r.state, "invocation", "null");
    CHECK_INT(r.d.ncommands, 0);
    check_terminal_stays(&r, "completed");
    CHECK_STR(str_at(r.state, "lastAcceptedAtMs"), "50"); /* events at time 1: never decreases */
    run_free(&r);

    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'halt',"
                 "'nodes':{'halt':{'kind':'fail','error':{'code':'no.way','message':'stop'}}}}");
    start(&r, "null", 50);
    CHECK_STR(status(&r), "failed");
    /* the node's error, nodeId filled in, details defaulting to null: all four keys */
    CHECK_AT(r.state, "result",
             "{'error':{'code':'no.way','message':'stop','nodeId':'halt','details':null}}");
    check_terminal_stays(&r, "failed");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K4: distinct IDs per visit; retries keep the invocation ID          */

static void test_k4_identities(void)
{
    run r;
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'loop','start':'a',"
                 "'limits':{'maxVisitsPerNode':3},"
                 "'actions':{'step':{'kind':'command','argv':['s'],'effect':'idempotent',"
                 "  'outcomes':['ok','done'],'retry':{'maxAttempts':2,'backoffMs':'7'}}},"
                 "'nodes':{'a':{'kind':'activity','action':'step','input':{'$get':['run']},"
                 "  'outcomes':{'ok':'a','done':'end'}},'end':{'kind':'complete'}}}");
    const char *invs[4] = {0}, *cmds[4] = {0};
    start(&r, "null", 100);
    CHECK_DECISION(&r);
    CHECK_AT(cmd(&r, 0), "input", "{'id':'run_test','tenant':'default'}");
    for (unsigned visit = 1; visit <= 3; visit++) {
        char activation[16], inv[SP_ID_LEN + 1], cid[SP_ID_LEN + 1];
        snprintf(activation, sizeof activation, "a/%u", visit);
        sp_invocation_id("default", "run_test", activation, inv);
        sp_command_id("default", "run_test", activation, 1, cid);
        CHECK_STR(inv_id(&r), inv);
        CHECK_STR(str_at(r.state, "position.activationId"), activation);
        CHECK_INT(int_at(r.state, "position.visit"), visit);
        CHECK_INT(int_at(r.state, "visits.a"), visit);
        CHECK_INT(int_at(r.state, "activations"), visit);
        CHECK_STR(r.d.commands[0].kind, "activity.schedule");
        CHECK_STR(r.d.commands[0].command_id, cid);
        CHECK_STR(r.d.commands[0].activation_id, activation);
        CHECK_STR(str_at(cmd(&r, 0), "effectKey"), inv); /* effect key = invocation ID */
        invs[visit] = keep(strdup(inv));
        cmds[visit] = keep(strdup(cid));
        if (visit == 2) {
            /* a retry keeps invocation, input digest and effect key; new command ID */
            const char *digest = keep(strdup(str_at(r.state, "invocation.inputDigest")));
            result(&r, 1, "failure", "", 350);
            char retry_id[SP_ID_LEN + 1];
            sp_command_id("default", "run_test", activation, 2, retry_id);
            CHECK_INT(r.d.ncommands, 1);
            CHECK_STR(r.d.commands[0].kind, "activity.retry");
            CHECK_STR(r.d.commands[0].command_id, retry_id);
            CHECK(strcmp(retry_id, cid) != 0);
            CHECK_STR(r.d.commands[0].activation_id, activation);
            CHECK_JSON(cmd(&r, 0), fmt("{'attempt':2,'invocationId':'%s','notBeforeMs':'357'}", inv));
            CHECK_STR(diag_code(&r, 0), "activity.retry-scheduled");
            CHECK_STR(diag_node(&r, 0), "a");
            CHECK_JSON(diag_details(&r, 0), "{'attempt':2}");
            CHECK_STR(inv_id(&r), inv);
            CHECK_INT(int_at(r.state, "invocation.attempt"), 2);
            CHECK_STR(str_at(r.state, "invocation.inputDigest"), digest);
            CHECK_INT(int_at(r.state, "visits.a"), 2); /* a retry is not a visit */
            result(&r, 2, "success", "", 300);
        } else {
            result(&r, 1, "success", "", 300);
        }
        CHECK_DECISION(&r);
    }
    CHECK(strcmp(invs[1], invs[2]) && strcmp(invs[2], invs[3]) && strcmp(invs[1], invs[3]));
    CHECK(strcmp(cmds[1], cmds[2]) && strcmp(cmds[2], cmds[3]) && strcmp(cmds[1], cmds[3]));
    /* the fourth entry exceeds maxVisitsPerNode 3; counters unchanged */
    CHECK_STR(status(&r), "failed");
    CHECK_AT(r.state, "result",
             "{'error':{'code':'limit.visits-exceeded','message':'node visit limit exceeded',"
             "'nodeId':'a','details':null}}");
    CHECK_INT(int_at(r.state, "visits.a"), 3);
    CHECK_INT(int_at(r.state, "activations"), 3);
    CHECK_AT(r.state, "nodes.a", "{'visit':3,'outcome':'ok','output':null}");
    CHECK_INT(r.d.ncommands, 0);
    run_free(&r);

    /* the same activation in another run or tenant gets another invocation ID */
    char x[SP_ID_LEN + 1], y[SP_ID_LEN + 1], z[SP_ID_LEN + 1];
    sp_invocation_id("default", "run_test", "a/1", x);
    sp_invocation_id("default", "run_other", "a/1", y);
    sp_invocation_id("acme", "run_test", "a/1", z);
    CHECK(strcmp(x, y) != 0 && strcmp(x, z) != 0);
    CHECK(strncmp(x, "inv_", 4) == 0 && strlen(x) == 36);
}

/* ------------------------------------------------------------------ */
/* K5: signals accepted before their waiter: earliest first, once      */

static const char WF_TWO_WAITERS[] =
    "{'format':'runspore.workflow/0.1','name':'waiters','start':'a',"
    "'actions':{'work':{'kind':'command','argv':['w'],'effect':'read-only'}},"
    "'nodes':{'a':{'kind':'activity','action':'work','outcomes':{'ok':'w1'}},"
    "  'w1':{'kind':'await-signal','signal':'go','outcomes':{'received':'w2','yes':'w2'}},"
    "  'w2':{'kind':'await-signal','signal':'go','outcomes':{'received':'done'}},"
    "  'done':{'kind':'complete','output':[{'$get':['nodes','w1','output']},"
    "     {'$get':['nodes','w2','output']},{'$get':['nodes','w1','outcome']}]}}}";

static void buffer_signals_while_running(run *r)
{
    start(r, "null", 1);
    signal_(r, "{'name':'go','outcome':'nope','data':0}", 2); /* ev-2 */
    signal_(r, "{'name':'go','data':1}", 3);                  /* ev-3 */
    signal_(r, "{'name':'other','data':'x'}", 4);             /* ev-4 */
    signal_(r, "{'name':'go','outcome':'yes','data':2}", 5);  /* ev-5 */
    signal_(r, "{'name':'go','data':3}", 6);                  /* ev-6 */
    signal_(r, "{'name':'go','data':4}", 7);                  /* ev-7 */
    CHECK_DECISION(r);
    CHECK_STR(status(r), "running");
    CHECK_INT(json_array_size(at(r->state, "signals")), 6);
    CHECK_INT(r->d.ncommands, 0);
    CHECK_INT(r->d.ndiagnostics, 0);
    CHECK_AT(r->state, "signals.1", "{'eventId':'ev-3','sequence':'3','name':'go','outcome':null,'data':1}");
}

static void test_k5_signals(void)
{
    run r;
    run_init(&r, WF_TWO_WAITERS);
    buffer_signals_while_running(&r);
    result(&r, 1, "success", "", 8);
    CHECK_DECISION(&r);
    /* w1: ev-2 (outcome nope) is taken and dropped, then ev-3 routes; w2: ev-5
     * (outcome yes) is unrouted there, ev-6 routes to done. */
    CHECK_STR(status(&r), "completed");
    CHECK_AT(r.state, "result", "{'output':[1,3,'received']}");
    CHECK_INT(r.d.ndiagnostics, 2);
    CHECK_STR(diag_code(&r, 0), "signal.outcome-unrouted");
    CHECK_STR(diag_node(&r, 0), "w1");
    CHECK_JSON(diag_details(&r, 0), "{'eventId':'ev-2','outcome':'nope'}");
    CHECK_STR(diag_code(&r, 1), "signal.outcome-unrouted");
    CHECK_STR(diag_node(&r, 1), "w2");
    CHECK_JSON(diag_details(&r, 1), "{'eventId':'ev-5','outcome':'yes'}");
    /* the rest stays buffered, in acceptance order; nothing consumed twice */
    CHECK_AT(r.state, "signals",
             "[{'eventId':'ev-4','sequence':'4','name':'other','outcome':null,'data':'x'},"
             " {'eventId':'ev-7','sequence':'7','name':'go','outcome':null,'data':4}]");
    CHECK_AT(r.state, "nodes.w1", "{'visit':1,'outcome':'received','output':1}");
    CHECK_AT(r.state, "nodes.w2", "{'visit':1,'outcome':'received','output':3}");
    run_free(&r);

    /* The same with a microstep budget: enter w1, take ev-2, take ev-3, enter
     * w2, take ev-5, take ev-6, enter done = 7 microsteps (+1 per entry and
     * per signal taken, routed or not). */
    run_init(&r, WF_TWO_WAITERS);
    r.limits.microsteps = 7;
    buffer_signals_while_running(&r);
    result(&r, 1, "success", "", 8);
    CHECK_DECISION(&r);
    run_free(&r);
    run_init(&r, WF_TWO_WAITERS);
    r.limits.microsteps = 6;
    buffer_signals_while_running(&r);
    result(&r, 1, "success", "", 8);
    CHECK_FAILURE(&r, "resource-limit", "budget.microsteps");
    CHECK_NOTHING_OUT(&r);
    run_free(&r);

    /* Taken directly: a waiting node takes a matching signal without the buffer. */
    run_init(&r, WF_TWO_WAITERS);
    start(&r, "null", 1);
    result(&r, 1, "success", "", 2);
    CHECK_STR(status(&r), "waiting");
    CHECK_STR(str_at(r.state, "position.nodeId"), "w1");
    signal_(&r, "{'name':'go','outcome':'nope'}", 3); /* unrouted: dropped, still waiting */
    CHECK_STR(diag_code(&r, 0), "signal.outcome-unrouted");
    CHECK_STR(diag_node(&r, 0), "w1");
    CHECK_JSON(diag_details(&r, 0), "{'eventId':'ev-3','outcome':'nope'}");
    CHECK_STR(status(&r), "waiting");
    CHECK_AT(r.state, "signals", "[]");
    signal_(&r, "{'name':'other'}", 4); /* another name: buffered */
    CHECK_INT(json_array_size(at(r.state, "signals")), 1);
    CHECK_INT(r.d.ndiagnostics, 0);
    /* a name that equals `go` only up to a NUL byte is another name */
    signal_(&r, "{'name':'go\\u0000'}", 5);
    CHECK_STR(str_at(r.state, "position.nodeId"), "w1");
    CHECK_INT(json_array_size(at(r.state, "signals")), 2);
    signal_(&r, "{'name':'go','data':{'ok':true}}", 6);
    CHECK_STR(str_at(r.state, "position.nodeId"), "w2");
    CHECK_STR(str_at(r.state, "position.activationId"), "w2/1");
    CHECK_AT(r.state, "nodes.w1", "{'visit':1,'outcome':'received','output':{'ok':true}}");
    CHECK_INT(json_array_size(at(r.state, "signals")), 2);
    run_free(&r);
}

static void test_signal_buffer_bound(void)
{
    run r;
    run_init(&r, WF_TWO_WAITERS);
    start(&r, "null", 1);
    for (int i = 0; i < 64; i++)
        signal_(&r, fmt("{'name':'noise','data':%d}", i), 2);
    CHECK_DECISION(&r);
    CHECK_INT(json_array_size(at(r.state, "signals")), 64);
    char *before = without_bookkeeping(r.state);
    signal_(&r, "{'name':'noise','data':64}", 3);
    CHECK_DECISION(&r);
    CHECK_STR(diag_code(&r, 0), "signal.buffer-overflow");
    CHECK_STR(diag_node(&r, 0), "(null)");
    CHECK_JSON(diag_details(&r, 0), "{'eventId':'ev-66'}");
    CHECK_STR(without_bookkeeping(r.state), before);

    /* a snapshot holding 65 signals is inconsistent */
    json_t *bad = keepj(json_deep_copy(r.state));
    json_array_append(at(bad, "signals"), at(bad, "signals.0"));
    size_t len;
    r.override_snap = enc(bad, &len);
    r.override_len = len;
    signal_(&r, "{'name':'noise'}", 4);
    CHECK_FAILURE(&r, "invalid-input", "state.invalid");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K6: an unknown outcome on an unsafe action never produces a command */

static void test_k6_unsafe_unknown(void)
{
    run r;
    run_init(&r, wf_one_activity("{'kind':'command','argv':['deploy'],'effect':'unsafe',"
                                 "'retry':{'maxAttempts':3,'backoffMs':'10'}}"));
    start(&r, "null", 100);
    const char *inv = keep(strdup(inv_id(&r)));
    /* unknown with two attempts left: parked, no command */
    result(&r, 1, "unknown", "'error':{'code':'command.timeout','message':'t'}", 110);
    CHECK_DECISION(&r);
    CHECK_INT(r.d.ncommands, 0);
    CHECK_STR(status(&r), "needs-intervention");
    CHECK_STR(r.d.status, "needs-intervention");
    CHECK_STR(str_at(r.state, "invocation.state"), "unknown");
    CHECK_STR(diag_code(&r, 0), "invocation.unknown");
    CHECK_STR(diag_node(&r, 0), "a");
    CHECK_JSON(diag_details(&r, 0), fmt("{'attempt':1,'invocationId':'%s','status':'unknown'}", inv));
    /* the same result again: stale (not scheduled), still no command */
    result(&r, 1, "unknown", "", 111);
    CHECK_STR(diag_code(&r, 0), "result.stale");
    CHECK_STR(diag_node(&r, 0), "a");
    CHECK_INT(r.d.ncommands, 0);
    /* resolve retry: zero delay, the one way an unknown unsafe step runs again */
    resolve(&r, inv, "{'action':'retry'}", 120);
    CHECK_INT(r.d.ncommands, 1);
    CHECK_JSON(cmd(&r, 0), fmt("{'attempt':2,'invocationId':'%s','notBeforeMs':'120'}", inv));
    CHECK_STR(status(&r), "running");
    /* expired works the same */
    result(&r, 2, "expired", "", 130);
    CHECK_INT(r.d.ncommands, 0);
    CHECK_STR(status(&r), "needs-intervention");
    CHECK_JSON(diag_details(&r, 0), fmt("{'attempt':2,'invocationId':'%s','status':'expired'}", inv));
    resolve(&r, inv, "{'action':'retry'}", 140);
    result(&r, 3, "unknown", "", 150); /* the last attempt: still parked, not exhausted */
    CHECK_INT(r.d.ncommands, 0);
    CHECK_STR(status(&r), "needs-intervention");
    /* retry beyond maxAttempts */
    resolve(&r, inv, "{'action':'retry'}", 160);
    CHECK_INT(int_at(r.state, "invocation.attempt"), 4);
    CHECK_INT(r.d.ncommands, 1);
    result(&r, 4, "unknown", "", 170);
    /* resolutions that do not apply change nothing */
    char *before = without_bookkeeping(r.state);
    resolve(&r, "inv_nope", "{'action':'retry'}", 171);
    CHECK_STR(diag_code(&r, 0), "resolve.not-applicable");
    CHECK_STR(diag_node(&r, 0), "(null)");
    CHECK_JSON(diag_details(&r, 0), "{'invocationId':'inv_nope','reason':'invocation-mismatch'}");
    resolve(&r, inv, "{'action':'complete','outcome':'maybe'}", 172);
    CHECK_STR(diag_node(&r, 0), "a");
    CHECK_JSON(diag_details(&r, 0), fmt("{'invocationId':'%s','reason':'outcome-undeclared'}", inv));
    CHECK_STR(without_bookkeeping(r.state), before);
    CHECK_INT(r.d.ncommands, 0);
    /* resolve fail: the given error, nodeId filled in */
    resolve(&r, inv, "{'action':'fail','error':{'code':'operator.failed','message':'no'}}", 180);
    CHECK_STR(status(&r), "failed");
    CHECK_AT(r.state, "result",
             "{'error':{'code':'operator.failed','message':'no','nodeId':'a','details':null}}");
    run_free(&r);

    /* a resolution while the invocation is scheduled */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['deploy'],'effect':'unsafe'}"));
    start(&r, "null", 1);
    inv = keep(strdup(inv_id(&r)));
    resolve(&r, inv, "{'action':'complete','outcome':'ok'}", 2);
    CHECK_STR(diag_code(&r, 0), "resolve.not-applicable");
    CHECK_STR(diag_node(&r, 0), "a");
    CHECK_JSON(diag_details(&r, 0), fmt("{'invocationId':'%s','reason':'invocation-not-unknown'}", inv));
    CHECK_STR(status(&r), "running");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K7: exceeding a budget commits nothing                              */

static void test_k7_budgets(void)
{
    run r;
    /* command count 0: the schedule command is over budget */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'pure'}"));
    r.limits.max_command_count = 0;
    start(&r, "null", 1);
    CHECK_FAILURE(&r, "resource-limit", "budget.command-count");
    CHECK_NOTHING_OUT(&r);
    CHECK(r.snap == NULL);
    r.limits.max_command_count = 1;
    start(&r, "null", 1); /* the same event, same sequence, is accepted afterwards */
    CHECK_DECISION(&r);
    run_free(&r);

    /* state bytes: a signal carrying too much data */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'pure'}"));
    start(&r, "null", 1);
    r.limits.max_state_bytes = (uint32_t)r.snap_len + 100;
    char *snap_before = keep(strdup(r.snap));
    uint64_t seq = r.seq;
    char big[201];
    memset(big, 'x', 200);
    big[200] = '\0';
    signal_(&r, fmt("{'name':'big','data':'%s'}", big), 2);
    CHECK_FAILURE(&r, "resource-limit", "budget.state-bytes");
    CHECK_NOTHING_OUT(&r);
    CHECK_STR(r.snap, snap_before);
    CHECK_INT(r.seq, seq);
    signal_(&r, "{'name':'small'}", 2); /* reuses the sequence */
    CHECK_DECISION(&r);
    CHECK_INT(r.seq, seq + 1);
    CHECK_INT(json_array_size(at(r.state, "signals")), 1);
    CHECK_STR(str_at(r.state, "signals.0.name"), "small");
    /* exactly at the limit is accepted, one byte less is not */
    run q;
    run_clone(&q, &r);
    q.limits.max_state_bytes = UINT32_MAX;
    signal_(&q, "{'name':'x'}", 2);
    CHECK_DECISION(&q);
    r.limits.max_state_bytes = (uint32_t)q.snap_len - 1;
    signal_(&r, "{'name':'x'}", 2);
    CHECK_FAILURE(&r, "resource-limit", "budget.state-bytes");
    r.limits.max_state_bytes = (uint32_t)q.snap_len;
    signal_(&r, "{'name':'x'}", 2);
    CHECK_DECISION(&r);
    CHECK_STR(r.snap, q.snap);
    run_free(&q);
    run_free(&r);

    /* value depth: the emitted command payload would nest 33 levels although
     * every input is within 32; encoded at emission, it fails there */
    char deep[128] = "", tail[128] = "";
    for (int i = 0; i < 31; i++) {
        strcat(deep, "[");
        strcat(tail, "]");
    }
    const char *input31 = fmt("%s%s", deep, tail); /* 31 levels */
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'actions':{'act':{'kind':'command','argv':['x'],'effect':'pure'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','input':{'x':{'$get':['input']}},"
                 "  'outcomes':{'ok':'done'}},'done':{'kind':'complete'}}}");
    start(&r, input31, 1); /* payload {input: 31} is 32 levels: canonical */
    CHECK_FAILURE(&r, "resource-limit", "budget.value-depth");
    CHECK_NOTHING_OUT(&r);
    r.limits.max_command_count = 0; /* detected at emission, before the command count */
    start(&r, input31, 1);
    CHECK_FAILURE(&r, "resource-limit", "budget.value-depth");
    run_free(&r);
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'actions':{'act':{'kind':'command','argv':['x'],'effect':'pure'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','input':{'$get':['input']},"
                 "  'outcomes':{'ok':'done'}},'done':{'kind':'complete'}}}");
    start(&r, input31, 1); /* the payload nests exactly 32: accepted */
    CHECK_DECISION(&r);
    run_free(&r);

    /* counter range: notBeforeMs would pass 2^63-1 */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'idempotent',"
                                 "'retry':{'maxAttempts':3,'backoffMs':'1'}}"));
    start(&r, "null", 9223372036854775807ULL);
    CHECK_DECISION(&r);
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "9223372036854775807");
    result(&r, 1, "failure", "", 1);
    CHECK_FAILURE(&r, "resource-limit", "budget.counter-range");
    CHECK_NOTHING_OUT(&r);
    result(&r, 1, "success", "'output':1", 1);
    CHECK_DECISION(&r);
    CHECK_STR(status(&r), "completed");
    run_free(&r);

    /* counter range: the attempt counter would pass u32 (resolve retry on a
     * snapshot whose invocation is at attempt 4294967295) */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'unsafe'}"));
    start(&r, "null", 1);
    const char *inv = keep(strdup(inv_id(&r)));
    result(&r, 1, "unknown", "", 2);
    json_t *s = keepj(json_deep_copy(r.state));
    json_object_set_new(at(s, "invocation"), "attempt", json_integer(4294967295LL));
    size_t len;
    const char *crafted = enc(s, &len);
    r.override_snap = crafted;
    r.override_len = len;
    resolve(&r, inv, "{'action':'retry'}", 3);
    CHECK_FAILURE(&r, "resource-limit", "budget.counter-range");
    r.override_snap = crafted;
    r.override_len = len;
    resolve(&r, inv, "{'action':'complete','outcome':'ok'}", 3);
    CHECK_DECISION(&r); /* the crafted snapshot itself is consistent */
    CHECK_STR(status(&r), "completed");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K8: supplementary-plane keys keep JCS order and digest              */

static void test_k8_supplementary(void)
{
    /* U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FB33 although its
     * UTF-8 bytes (F0 ...) sort after (EF ...). */
    const char *expected_input = "{\"a\":1,\"\xF0\x9F\x98\x80\":2,\"\xEF\xAC\xB3\":3}";
    run r;
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'actions':{'act':{'kind':'command','argv':['x'],'effect':'pure'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','input':{'$get':['input']},"
                 "  'outcomes':{'ok':'done'}},"
                 "  'done':{'kind':'complete','output':{'\\ufb33':{'$get':['input','\\ufb33']},"
                 "     '\\ud83d\\ude00':{'$get':['input','\\ud83d\\ude00']},"
                 "     'z':{'$get':['nodes','a','output']}}}}}");
    start(&r, "{'\\ufb33':3,'a':1,'\\ud83d\\ude00':2}", 1);
    CHECK_DECISION(&r);
    CHECK(strstr(r.snap, expected_input) != NULL);
    CHECK(strstr(r.d.commands[0].payload, expected_input) != NULL);
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("state", r.snap, r.snap_len, digest);
    CHECK_STR(r.d.snapshot_digest, digest);
    sp_digest_one("body", expected_input, strlen(expected_input), digest);
    CHECK_STR(str_at(r.state, "invocation.inputDigest"), digest);
    result(&r, 1, "success", "'output':{'\\ud83d\\ude00':'x','\\ufb33':'y'}", 2);
    CHECK_STR(status(&r), "completed");
    /* 'z' (0x7A) < U+1F600 (D83D) < U+FB33 */
    CHECK(strstr(r.snap, "\"result\":{\"output\":{\"z\":{\"\xF0\x9F\x98\x80\":\"x\","
                         "\"\xEF\xAC\xB3\":\"y\"},\"\xF0\x9F\x98\x80\":2,\"\xEF\xAC\xB3\":3}}") != NULL);
    run_free(&r);

    /* the first missing path in canonical (UTF-16) key order is reported */
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'done',"
                 "'nodes':{'done':{'kind':'complete','output':{'\\ufb33':{'$get':['input','p']},"
                 "   '\\ud83d\\ude00':{'$get':['input','q']}}}}}");
    start(&r, "{}", 1);
    CHECK_STR(status(&r), "failed");
    CHECK_AT(r.state, "result.error.details", "{'path':['input','q']}");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* K9: output does not depend on insertion order                       */

/* A deep copy with every object's members inserted in reverse order. */
static json_t *reversed(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(a, reversed(json_array_get(v, i)));
        return a;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    size_t n = json_object_size(v), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)v, key, member) keys[i++] = key;
    json_t *o = json_object();
    while (i-- > 0)
        json_object_set_new(o, keys[i], reversed(json_object_get(v, keys[i])));
    free(keys);
    return o;
}

static const char *first_key(const json_t *obj)
{
    void *it = json_object_iter((json_t *)obj);
    return it ? json_object_iter_key(it) : "";
}

static void test_k9_insertion_order(void)
{
    json_t *wf = J(WF_PIPELINE);
    json_t *wf_rev = keepj(reversed(wf));
    CHECK(strcmp(first_key(wf), first_key(wf_rev)) != 0); /* really inserted otherwise */
    size_t l1, l2;
    const char *b1 = enc(wf, &l1), *b2 = enc(wf_rev, &l2);
    CHECK_STR(b1, b2);
    /* the same document written with other whitespace and member order */
    CHECK_STR(C("{ 'b' : [ 1, { 'y':null, 'x':true } ], 'a' : 'A' }"),
              C("{'a':'A','b':[1,{'x':true,'y':null}]}"));

    json_t *payload = J("{'tenant':'default','runId':'run_test','input':{'u':'x','k':{'b':1,'a':2}}}");
    json_t *payload_rev = keepj(reversed(payload));
    size_t pl1, pl2;
    const char *p1 = enc(payload, &pl1), *p2 = enc(payload_rev, &pl2);
    CHECK_STR(p1, p2);

    run r1, r2;
    run_init_bytes(&r1, b1, l1);
    run_init_bytes(&r2, b2, l2);
    send_raw(&r1, "start", 1, "run.started", p1, pl1, 10);
    send_raw(&r2, "start", 1, "run.started", p2, pl2, 10);
    CHECK_DECISION(&r1);
    CHECK_DECISION(&r2);
    CHECK_STR(decision_text(&r1.d), decision_text(&r2.d));
    json_t *res = J(fmt("{'invocationId':'%s','attemptId':'%s.1','attempt':1,'status':'success',"
                        "'output':{'z':1,'m':{'q':[{'d':1,'c':2}],'p':0},'a':null}}",
                        inv_id(&r1), inv_id(&r1)));
    const char *q1 = enc(res, &pl1), *q2 = enc(keepj(reversed(res)), &pl2);
    CHECK_STR(q1, q2);
    send_raw(&r1, "ev-2", 2, "activity.result", q1, pl1, 20);
    send_raw(&r2, "ev-2", 2, "activity.result", q2, pl2, 20);
    CHECK_STR(decision_text(&r1.d), decision_text(&r2.d));

    /* non-canonical graph bytes are not re-encoded by the kernel: refused */
    const char *loose = "{ \"format\": \"runspore.workflow/0.1\", \"name\": \"t\", \"start\": \"d\","
                        " \"nodes\": {\"d\": {\"kind\": \"complete\"}}}";
    run r3;
    run_init_bytes(&r3, loose, strlen(loose));
    start(&r3, "null", 1);
    CHECK_FAILURE(&r3, "invalid-input", "workflow.invalid");
    run_free(&r3);
    run_free(&r1);
    run_free(&r2);
}

/* ------------------------------------------------------------------ */
/* mappings: cost and evaluation                                       */

static const char *wf_complete_with(const char *output)
{
    return fmt("{'format':'runspore.workflow/0.1','name':'t','start':'done',"
               "'nodes':{'done':{'kind':'complete','output':%s}}}",
               output);
}

static void test_mapping_cost(void)
{
    /* kernel.md §3: {a:1, b:[true, $get input.x], c:$literal{...}} costs 8 */
    const char *example = "{'a':1,'b':[true,{'$get':['input','x']}],"
                          "'c':{'$literal':{'$get':['input','y'],'deep':[1,2,3]}}}";
    run r;
    run_init(&r, wf_complete_with(example));
    r.limits.expression_operations = 8;
    start(&r, "{'x':5}", 1);
    CHECK_DECISION(&r);
    CHECK_AT(r.state, "result.output",
             "{'a':1,'b':[true,5],'c':{'$get':['input','y'],'deep':[1,2,3]}}");
    run_free(&r);
    run_init(&r, wf_complete_with(example));
    r.limits.expression_operations = 7;
    start(&r, "{'x':5}", 1);
    CHECK_FAILURE(&r, "resource-limit", "budget.expression-operations");
    CHECK_NOTHING_OUT(&r);
    run_free(&r);

    /* a $get is charged in full even when it fails at its first step: 1 + 4 */
    const char *failing = "{'$get':['input','a','b','c']}";
    run_init(&r, wf_complete_with(failing));
    r.limits.expression_operations = 5;
    start(&r, "{}", 1);
    CHECK_DECISION(&r);
    CHECK_STR(status(&r), "failed");
    CHECK_AT(r.state, "result",
             "{'error':{'code':'mapping.missing-path','message':'mapping path does not resolve',"
             "'nodeId':'done','details':{'path':['input','a','b','c']}}}");
    run_free(&r);
    run_init(&r, wf_complete_with(failing));
    r.limits.expression_operations = 4;
    start(&r, "{}", 1);
    CHECK_FAILURE(&r, "resource-limit", "budget.expression-operations");
    run_free(&r);

    /* an absent mapping is null and costs 1 */
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'done',"
                 "'nodes':{'done':{'kind':'complete'}}}");
    r.limits.expression_operations = 1;
    start(&r, "7", 1);
    CHECK_DECISION(&r);
    CHECK_AT(r.state, "result", "{'output':null}");
    r.limits.expression_operations = 0;
    r.override_absent = true;
    send_raw(&r, "start", 1, "run.started",
             C("{'tenant':'default','runId':'run_test','input':7}"),
             strlen(C("{'tenant':'default','runId':'run_test','input':7}")), 1);
    CHECK_FAILURE(&r, "resource-limit", "budget.expression-operations");
    run_free(&r);

    /* the budget is per transition, not per run: the signal's transition
     * evaluates only the complete node's output (1 + 3 = 4) although the run
     * has spent 1 before */
    const char *two = "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                      "'actions':{'act':{'kind':'command','argv':['x'],'effect':'pure'}},"
                      "'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'w'}},"
                      "  'w':{'kind':'await-signal','signal':'go','outcomes':{'received':'done'}},"
                      "  'done':{'kind':'complete','output':{'$get':['nodes','w','output']}}}}";
    run_init(&r, two);
    r.limits.expression_operations = 4;
    start(&r, "null", 1);
    result(&r, 1, "success", "", 2);
    signal_(&r, "{'name':'go','data':'d'}", 3);
    CHECK_DECISION(&r);
    CHECK_AT(r.state, "result.output", "'d'");
    run_free(&r);
    run_init(&r, two);
    r.limits.expression_operations = 3;
    start(&r, "null", 1);
    result(&r, 1, "success", "", 2);
    signal_(&r, "{'name':'go','data':'d'}", 3);
    CHECK_FAILURE(&r, "resource-limit", "budget.expression-operations");
    run_free(&r);
}

static void test_mapping_eval(void)
{
    run r;
    run_init(&r, wf_complete_with("{'whole':{'$get':['input']},'idx':{'$get':['input','list',1]},"
                                  "'run':{'$get':['run']},'id':{'$get':['run','id']},"
                                  "'tenant':{'$get':['run','tenant']},'lit':{'$literal':{'$x':1}},"
                                  "'arr':[{'$literal':null},{'$get':['input','n']}],"
                                  "'plain':{'k':{'v':'s'}}}"));
    start(&r, "{'list':['a','b'],'n':null}", 1);
    CHECK_DECISION(&r);
    CHECK_AT(r.state, "result.output",
             "{'whole':{'list':['a','b'],'n':null},'idx':'b',"
             "'run':{'id':'run_test','tenant':'default'},'id':'run_test','tenant':'default',"
             "'lit':{'$x':1},'arr':[null,null],'plain':{'k':{'v':'s'}}}");
    run_free(&r);

    /* an index past the end, a member of an array, an index into an object */
    const char *missing[] = {"{'$get':['input','list',2]}", "{'$get':['input','list','0']}",
                             "{'$get':['input','n','x']}", "{'$get':['input',0]}",
                             "{'$get':['nodes','nowhere']}"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        run_init(&r, wf_complete_with(missing[i]));
        start(&r, "{'list':['a','b'],'n':null}", 1);
        CHECK_DECISION(&r);
        CHECK_STR(str_at(r.state, "result.error.code"), "mapping.missing-path");
        CHECK_STR(enc_at(r.state, "result.error.details.path"), enc(at(J(missing[i]), "$get"), NULL));
        run_free(&r);
    }

    /* nodes.<id>.visit / outcome / output after a node ran */
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'actions':{'act':{'kind':'command','argv':['x'],'effect':'pure','outcomes':['ok','meh']}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'done','meh':'done'}},"
                 "  'done':{'kind':'complete','output':[{'$get':['nodes','a','visit']},"
                 "     {'$get':['nodes','a','outcome']},{'$get':['nodes','a','output','k',0]},"
                 "     {'$get':['nodes','a']}]}}}");
    start(&r, "null", 1);
    result(&r, 1, "success", "'outcome':'meh','output':{'k':[true]}", 2);
    CHECK_AT(r.state, "result.output",
             "[1,'meh',true,{'visit':1,'outcome':'meh','output':{'k':[true]}}]");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* delay_after (§7.10)                                                 */

static void test_delay_after(void)
{
    /* backoff 500, cap 1500: 500, 1000, 1500, 1500, added to logical now */
    run r;
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'idempotent',"
                                 "'retry':{'maxAttempts':6,'backoffMs':'500','maxBackoffMs':'1500'}}"));
    start(&r, "null", 1000);
    result(&r, 1, "failure", "", 2000);
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "2500");
    result(&r, 2, "failure", "", 3000);
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "4000");
    result(&r, 3, "expired", "", 5000);
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "6500");
    result(&r, 4, "unknown", "", 7000);
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "8500");
    result(&r, 5, "failure", "", 6000); /* accepted earlier: now stays 7000 */
    CHECK_STR(str_at(r.state, "lastAcceptedAtMs"), "7000");
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "8500");
    result(&r, 6, "failure", "'retryable':true", 9000); /* the last attempt */
    CHECK_INT(r.d.ncommands, 0);
    CHECK_STR(status(&r), "failed");
    CHECK_AT(r.state, "result.error",
             "{'code':'activity.failed','message':'activity failed','nodeId':'a','details':null}");
    run_free(&r);

    /* the exponent stops at 32: attempts 33..99 all wait backoff * 2^32 */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'read-only',"
                                 "'retry':{'maxAttempts':100,'backoffMs':'1000',"
                                 "'maxBackoffMs':'9223372036854775807'}}"));
    start(&r, "null", 0);
    for (unsigned n = 1; n <= 99; n++) {
        result(&r, n, "failure", "", 0);
        CHECK_DECISION(&r);
        unsigned shift = n - 1 < 32 ? n - 1 : 32;
        char want[32];
        snprintf(want, sizeof want, "%llu", 1000ULL << shift);
        CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), want);
    }
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "4294967296000");
    result(&r, 100, "failure", "", 0);
    CHECK_STR(status(&r), "failed");
    run_free(&r);

    /* saturating multiplication: a huge backoff never wraps, the cap holds */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'read-only',"
                                 "'retry':{'maxAttempts':40,'backoffMs':'9223372036854775807',"
                                 "'maxBackoffMs':'9223372036854775807'}}"));
    start(&r, "null", 0);
    for (unsigned n = 1; n <= 39; n++) {
        result(&r, n, "failure", "", 0);
        CHECK_DECISION(&r);
        CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "9223372036854775807");
    }
    run_free(&r);
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'read-only',"
                                 "'retry':{'maxAttempts':40,'backoffMs':'1099511627776',"
                                 "'maxBackoffMs':'5000000000000000000'}}"));
    start(&r, "null", 0);
    for (unsigned n = 1; n <= 39; n++)
        result(&r, n, "failure", "", 0);
    /* 2^40 * 2^32 = 2^72 saturates, then the cap */
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "5000000000000000000");
    run_free(&r);

    /* defaults: cap 60000 (backoff 1000: 1000, 2000, ..., 32000, 60000) */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'read-only',"
                                 "'retry':{'maxAttempts':9,'backoffMs':'1000'}}"));
    start(&r, "null", 0);
    static const char *const want[] = {"1000", "2000", "4000", "8000", "16000", "32000",
                                       "60000", "60000"};
    for (unsigned n = 1; n <= 8; n++) {
        result(&r, n, "failure", "", 0);
        CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), want[n - 1]);
    }
    run_free(&r);
    /* no backoff: the retry is due at once */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'read-only',"
                                 "'retry':{'maxAttempts':2}}"));
    start(&r, "null", 77);
    result(&r, 1, "unknown", "", 88);
    CHECK_STR(str_at(cmd(&r, 0), "notBeforeMs"), "88");
    result(&r, 2, "unknown", "", 99); /* exhausted: repeatable effect, no route */
    CHECK_AT(r.state, "result.error",
             "{'code':'activity.attempts-exhausted','message':'activity attempts exhausted',"
             "'nodeId':'a','details':{'lastStatus':'unknown'}}");
    run_free(&r);
    /* default policy: one attempt */
    run_init(&r, wf_one_activity("{'kind':'command','argv':['x'],'effect':'read-only'}"));
    start(&r, "null", 1);
    result(&r, 1, "expired", "", 2);
    CHECK_AT(r.state, "result.error.details", "{'lastStatus':'expired'}");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* validation rules: orderings and shapes                              */

/* The failure of loading `text` (via the transition), or "" when valid. */
static const char *wf_code(const char *text, const char **kind)
{
    run r;
    run_init(&r, text);
    start(&r, "null", 1);
    const char *code = r.rc == SP_KERNEL_DECISION ? "" : fmt("%s", r.f.code);
    if (kind)
        *kind = r.rc == SP_KERNEL_DECISION ? "" : r.f.kind;
    /* the loader alone agrees */
    sp_kernel_failure f = {0};
    bool oom = false;
    sp_workflow *wf = sp_workflow_load(r.graph, r.graph_len, &f, &oom);
    CHECK(!oom);
    CHECK_STR(wf ? "" : f.code, code);
    sp_workflow_free(wf);
    run_free(&r);
    return code;
}

static const char *wf_with(const char *start_node, const char *actions, const char *nodes)
{
    return fmt("{'format':'runspore.workflow/0.1','name':'t','start':'%s','actions':%s,"
               "'nodes':%s}",
               start_node, actions, nodes);
}

#define NODES_OK "{'a':{'kind':'activity','action':'a','outcomes':{'ok':'done'}},'done':{'kind':'complete'}}"

static void test_w07_order(void)
{
    const char *kind;
    /* actions are visited in ascending byte order; the first violation wins */
    CHECK_STR(wf_code(wf_with("a",
                              "{'a':{'effect':'reconcilable'},'b':{'effect':'pure','outcomes':['Bad']}}",
                              NODES_OK),
                      &kind),
              "workflow.unsupported-effect");
    CHECK_STR(kind, "incompatible-version");
    CHECK_STR(wf_code(wf_with("a",
                              "{'a':{'effect':'pure','outcomes':['Bad']},'b':{'effect':'reconcilable'}}",
                              NODES_OK),
                      &kind),
              "workflow.invalid");
    CHECK_STR(kind, "invalid-input");
    /* byte order, not case-insensitive: 'Z' (0x5A) comes before 'a' (0x61) */
    CHECK_STR(wf_code(wf_with("a",
                              "{'Z':{'effect':'reconcilable'},'a':{'effect':'pure','outcomes':['ok','ok']}}",
                              NODES_OK),
                      NULL),
              "workflow.unsupported-effect");
    CHECK_STR(wf_code(wf_with("a",
                              "{'a':{'effect':'pure','outcomes':['failed']},'b':{'effect':'reconcilable'}}",
                              NODES_OK),
                      NULL),
              "workflow.invalid");
    /* within one action: parse -> effect -> outcomes ... -> maxAttempts */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','outcomes':[]}}", NODES_OK), NULL),
              "workflow.unsupported-effect");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','outcomes':['Bad','failed']}}", NODES_OK), NULL),
              "workflow.unsupported-effect");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'maxAttempts':0}}}", NODES_OK), NULL),
              "workflow.unsupported-effect");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'maxAttempts':101}}}", NODES_OK), NULL),
              "workflow.unsupported-effect");
    /* a policy that does not parse is invalid before the effect is judged */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'tries':2}}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'backoffMs':500}}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','outcomes':'ok'}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','outcomes':[1]}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'maxAttempts':-1}}}", NODES_OK), NULL),
              "workflow.invalid"); /* not a u32: does not parse */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'maxAttempts':4294967296}}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'backoffMs':'01'}}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable','retry':{'maxBackoffMs':'9223372036854775808'}}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure','retry':{'maxBackoffMs':'9223372036854775807','backoffMs':'0'}}}", NODES_OK), NULL),
              "");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'magic'}}", NODES_OK), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'outcomes':['ok']}}", NODES_OK), NULL), "workflow.invalid");
    /* earlier rules win over W07 */
    CHECK_STR(wf_code(wf_with("nowhere", "{'a':{'effect':'reconcilable'}}", NODES_OK), NULL),
              "workflow.invalid"); /* W05 */
    CHECK_STR(wf_code(fmt("{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                          "'limits':{'maxActivations':0},'actions':{'a':{'effect':'reconcilable'}},"
                          "'nodes':" NODES_OK "}"),
                      NULL),
              "workflow.invalid"); /* W06 */
    CHECK_STR(wf_code(wf_with("a", "{'a.b':{'effect':'reconcilable'}}", NODES_OK), NULL),
              "workflow.invalid"); /* W04 */
    /* later rules lose to W07 */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'reconcilable'}}",
                              "{'a':{'kind':'activity','action':'a','outcomes':{'ok':'gone'}},"
                              " 'done':{'kind':'complete','output':{'$bad':1}}}"),
                      NULL),
              "workflow.unsupported-effect");
    /* the kernel ignores engine fields */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure','argv':5,'kind':'whatever'}}", NODES_OK), NULL), "");
    /* maxAttempts bounds */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure','retry':{'maxAttempts':100}}}", NODES_OK), NULL), "");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure','retry':{'maxAttempts':101}}}", NODES_OK), NULL),
              "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure','retry':{'maxAttempts':0}}}", NODES_OK), NULL),
              "workflow.invalid");
}

static void test_w10_paths(void)
{
    static const struct {
        const char *mapping;
        bool ok;
    } cases[] = {
        {"{'$get':['nodes']}", false},
        {"{'$get':['run']}", true},
        {"{'$get':['run','id']}", true},
        {"{'$get':['run','tenant']}", true},
        {"{'$get':['run','id','x']}", false},
        {"{'$get':['run','name']}", false},
        {"{'$get':['run',0]}", false},
        {"{'$get':['input']}", true},
        {"{'$get':['input','a',0,'b',12]}", true},
        {"{'$get':['input',-1]}", false},
        {"{'$get':['input','a',-2]}", false},
        {"{'$get':['input',true]}", false},
        {"{'$get':['input',null]}", false},
        {"{'$get':['input',['a']]}", false},
        {"{'$get':['inputs']}", false},
        {"{'$get':[]}", false},
        {"{'$get':'input'}", false},
        {"{'$get':null}", false},
        {"{'$get':[0]}", false},
        {"{'$get':['nodes','n']}", true},
        {"{'$get':['nodes',0]}", false},
        {"{'$get':['nodes','n','visit']}", true},
        {"{'$get':['nodes','n','outcome']}", true},
        {"{'$get':['nodes','n','output']}", true},
        {"{'$get':['nodes','n','output','x',3]}", true},
        {"{'$get':['nodes','n','visit','x']}", false},
        {"{'$get':['nodes','n','outcome',0]}", false},
        {"{'$get':['nodes','n','input']}", false},
        {"{'$get':['nodes','n',0]}", false},
        {"{'$literal':1}", true},
        {"{'$literal':{'$get':'anything','$x':[]}}", true},
        {"{'$literal':1,'x':2}", false},
        {"{'$get':['input'],'x':1}", false},
        {"{'$get':['input'],'$literal':1}", false},
        {"{'$x':1}", false},
        {"{'$':1}", false},
        {"{'a':{'$getx':['input']}}", false},
        {"[1,{'$bad':true}]", false},
        {"{'a':[{'b':{'$get':['nodes']}}]}", false},
        {"{'a$':1,'':2,'b':{'c$d':[]}}", true},
        {"null", true},
        {"'$get'", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *want = cases[i].ok ? "" : "workflow.invalid";
        /* on a complete node's output ... */
        const char *got = wf_code(wf_complete_with(cases[i].mapping), NULL);
        if (strcmp(got, want) != 0)
            check_fail(__FILE__, __LINE__, "output mapping %s: got \"%s\", want \"%s\"",
                       cases[i].mapping, got, want);
        check_count++;
        /* ... and on an activity's input */
        got = wf_code(wf_with("a", "{'a':{'effect':'pure'}}",
                              fmt("{'a':{'kind':'activity','action':'a','input':%s,"
                                  "'outcomes':{'ok':'done'}},'done':{'kind':'complete'}}",
                                  cases[i].mapping)),
                      NULL);
        if (strcmp(got, want) != 0)
            check_fail(__FILE__, __LINE__, "input mapping %s: got \"%s\", want \"%s\"",
                       cases[i].mapping, got, want);
        check_count++;
    }
}

static void test_other_rules(void)
{
    /* top level, limits and nodes reject unknown members */
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d','description':'x',"
                      "'nodes':{'d':{'kind':'complete'}}}", NULL), "workflow.invalid");
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d',"
                      "'limits':{'maxVisits':3},'nodes':{'d':{'kind':'complete'}}}", NULL),
              "workflow.invalid");
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d',"
                      "'nodes':{'d':{'kind':'complete','input':null}}}", NULL), "workflow.invalid");
    /* actions default to {} */
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d',"
                      "'nodes':{'d':{'kind':'complete'}}}", NULL), "");
    /* W01: the 0.2 format is not accepted by this kernel */
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.2','name':'t','start':'d',"
                      "'nodes':{'d':{'kind':'complete'}}}", NULL), "workflow.invalid");
    /* W02/W03: pattern lengths */
    char name128[129], id64[65];
    memset(name128, 'n', 128);
    name128[128] = '\0';
    memset(id64, 'i', 64);
    id64[64] = '\0';
    CHECK_STR(wf_code(fmt("{'format':'runspore.workflow/0.1','name':'%s','start':'d',"
                          "'nodes':{'d':{'kind':'complete'}}}", name128), NULL), "");
    CHECK_STR(wf_code(fmt("{'format':'runspore.workflow/0.1','name':'%sn','start':'d',"
                          "'nodes':{'d':{'kind':'complete'}}}", name128), NULL), "workflow.invalid");
    CHECK_STR(wf_code(fmt("{'format':'runspore.workflow/0.1','name':'t','start':'%s',"
                          "'nodes':{'%s':{'kind':'complete'}}}", id64, id64), NULL), "");
    CHECK_STR(wf_code(fmt("{'format':'runspore.workflow/0.1','name':'t','start':'%si',"
                          "'nodes':{'%si':{'kind':'complete'}}}", id64, id64), NULL), "workflow.invalid");
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d','nodes':{}}", NULL),
              "workflow.invalid");
    /* W06 bounds */
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d',"
                      "'limits':{'maxVisitsPerNode':1000,'maxActivations':10000},"
                      "'nodes':{'d':{'kind':'complete'}}}", NULL), "");
    CHECK_STR(wf_code("{'format':'runspore.workflow/0.1','name':'t','start':'d',"
                      "'limits':{'maxActivations':10001},'nodes':{'d':{'kind':'complete'}}}", NULL),
              "workflow.invalid");
    /* W08: failed may be routed in addition; extra keys and missing targets not */
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure'}}",
                              "{'a':{'kind':'activity','action':'a','outcomes':{'ok':'done','failed':'done'}},"
                              "'done':{'kind':'complete'}}"), NULL), "");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure'}}",
                              "{'a':{'kind':'activity','action':'a','outcomes':{'ok':'done','other':'done'}},"
                              "'done':{'kind':'complete'}}"), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure'}}",
                              "{'a':{'kind':'activity','action':'b','outcomes':{'ok':'done'}},"
                              "'done':{'kind':'complete'}}"), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("a", "{'a':{'effect':'pure'}}",
                              "{'a':{'kind':'activity','action':'a','outcomes':{'ok':'gone'}},"
                              "'done':{'kind':'complete'}}"), NULL), "workflow.invalid");
    /* W09 */
    const char *await = "{'w':{'kind':'await-signal','signal':'%s','outcomes':%s},'done':{'kind':'complete'}}";
    CHECK_STR(wf_code(wf_with("w", "{}", fmt(await, "deploy.approval_1-x", "{'ok':'done'}")), NULL), "");
    CHECK_STR(wf_code(wf_with("w", "{}", fmt(await, "two words", "{'ok':'done'}")), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("w", "{}", fmt(await, "go", "{}")), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("w", "{}", fmt(await, "go", "{'OK':'done'}")), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("w", "{}", fmt(await, "go", "{'ok':'gone'}")), NULL), "workflow.invalid");
    /* W11 */
    const char *fail = "{'f':{'kind':'fail','error':%s}}";
    CHECK_STR(wf_code(wf_with("f", "{}", fmt(fail, "{'code':'a.b-c','message':'m','nodeId':null,'details':[1]}")), NULL), "");
    CHECK_STR(wf_code(wf_with("f", "{}", fmt(fail, "{'code':'a.b','message':'m','nodeId':'f'}")), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("f", "{}", fmt(fail, "{'code':'A.b','message':'m'}")), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("f", "{}", fmt(fail, "{'code':'a'}")), NULL), "workflow.invalid");
    CHECK_STR(wf_code(wf_with("f", "{}", fmt(fail, "{'code':'a','message':'m','extra':1}")), NULL), "workflow.invalid");
}

/* Request checks 1-3 come before anything that reads the event or state. */
static void test_request_check_order(void)
{
    run r;
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'bad name','start':'d',"
                 "'nodes':{'d':{'kind':'complete'}}}");
    r.semantics = "0.2";
    r.codec = "jcs/2";
    ev_send(&r, "no.such.kind", "{}", 1);
    CHECK_FAILURE(&r, "incompatible-version", "version.semantics");
    r.semantics = NULL;
    ev_send(&r, "no.such.kind", "{}", 1);
    CHECK_FAILURE(&r, "incompatible-version", "version.codec");
    r.codec = NULL;
    ev_send(&r, "no.such.kind", "{}", 1);
    CHECK_FAILURE(&r, "invalid-input", "workflow.invalid");
    run_free(&r);

    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'d',"
                 "'nodes':{'d':{'kind':'complete'}}}");
    ev_send(&r, "no.such.kind", "{}", 1);
    CHECK_FAILURE(&r, "invalid-input", "event.unknown-kind");
    ev_send(&r, "signal.received", "{'name':'x'}", 1);
    CHECK_FAILURE(&r, "invalid-input", "state.missing");
    ev_send(&r, "signal.received", "{'name':'x','extra':1}", 1); /* check 4 before check 5 */
    CHECK_FAILURE(&r, "invalid-input", "event.invalid");
    /* run.started: sequence (check 6) before tenant/runId (check 7) */
    send_raw(&r, "start", 2, "run.started", C("{'tenant':'a b','runId':'r','input':null}"),
             strlen(C("{'tenant':'a b','runId':'r','input':null}")), 1);
    CHECK_FAILURE(&r, "invalid-input", "event.out-of-order");
    send_raw(&r, "start", 1, "run.started", C("{'tenant':'a b','runId':'r','input':null}"),
             strlen(C("{'tenant':'a b','runId':'r','input':null}")), 1);
    CHECK_FAILURE(&r, "invalid-input", "event.invalid");
    start(&r, "null", 1);
    CHECK_DECISION(&r);
    /* envelope times above 2^63-1 */
    send_raw(&r, "ev", 2, "signal.received", C("{'name':'x'}"), strlen(C("{'name':'x'}")),
             9223372036854775808ULL);
    CHECK_FAILURE(&r, "invalid-input", "event.invalid");
    run_free(&r);
}

/* ------------------------------------------------------------------ */
/* fixed messages, ErrorInfo, NUL-bearing strings                      */

static void test_fixed_messages(void)
{
    run r;
    /* node visit limit exceeded: covered in K4; run activation limit exceeded */
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a','limits':{'maxActivations':2},"
                 "'actions':{'act':{'effect':'pure'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'a'}}}}");
    start(&r, "null", 1);
    result(&r, 1, "success", "", 2);
    result(&r, 1, "success", "", 3);
    CHECK_AT(r.state, "result",
             "{'error':{'code':'limit.activations-exceeded','message':'run activation limit exceeded',"
             "'nodeId':'a','details':null}}");
    CHECK_INT(int_at(r.state, "activations"), 2);
    CHECK_INT(int_at(r.state, "visits.a"), 2);
    run_free(&r);

    /* activity reported an undeclared outcome; also an outcome that equals a
     * declared one only up to a NUL byte */
    const char *outcomes[] = {"'nope'", "'ok\\u0000'"};
    const char *details[] = {"{'outcome':'nope'}", "{'outcome':'ok\\u0000'}"};
    for (int i = 0; i < 2; i++) {
        run_init(&r, wf_one_activity("{'effect':'pure','retry':{'maxAttempts':3}}"));
        start(&r, "null", 1);
        result(&r, 1, "success", fmt("'outcome':%s", outcomes[i]), 2);
        CHECK_INT(r.d.ncommands, 0); /* not retried */
        CHECK_AT(r.state, "result",
                 fmt("{'error':{'code':'activity.undeclared-outcome',"
                     "'message':'activity reported an undeclared outcome','nodeId':'a','details':%s}}",
                     details[i]));
        run_free(&r);
    }

    /* activity failed (no error reported, not retryable) vs the reported error,
     * normalized to four keys with the node's ID */
    run_init(&r, wf_one_activity("{'effect':'pure','retry':{'maxAttempts':3}}"));
    start(&r, "null", 1);
    result(&r, 1, "failure", "'retryable':false", 2);
    CHECK_AT(r.state, "result",
             "{'error':{'code':'activity.failed','message':'activity failed','nodeId':'a','details':null}}");
    run_free(&r);
    run_init(&r, wf_one_activity("{'effect':'pure'}"));
    start(&r, "null", 1);
    result(&r, 1, "failure", "'error':{'code':'x.y','message':'m','nodeId':'elsewhere'}", 2);
    CHECK_AT(r.state, "result",
             "{'error':{'code':'x.y','message':'m','nodeId':'a','details':null}}");

    /* an ErrorInfo in a snapshot must carry all four keys */
    json_t *s = keepj(json_deep_copy(r.state));
    json_object_del(at(s, "result.error"), "details");
    size_t len;
    r.override_snap = enc(s, &len);
    r.override_len = len;
    signal_(&r, "{'name':'x'}", 3);
    CHECK_FAILURE(&r, "invalid-input", "state.invalid");
    signal_(&r, "{'name':'x'}", 3); /* the real snapshot is fine */
    CHECK_DECISION(&r);
    run_free(&r);

    /* the failed route records the error as the node's output */
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'actions':{'act':{'effect':'read-only'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'done','failed':'done'}},"
                 "  'done':{'kind':'complete','output':{'$get':['nodes','a']}}}}");
    start(&r, "null", 1);
    result(&r, 1, "expired", "", 2);
    CHECK_AT(r.state, "result.output",
             "{'visit':1,'outcome':'failed','output':{'error':{'code':'activity.attempts-exhausted',"
             "'message':'activity attempts exhausted','nodeId':'a','details':{'lastStatus':'expired'}}}}");
    run_free(&r);
}

/* The workflow limits' defaults: 16 visits per node, 256 activations. */
static void test_default_limits(void)
{
    run r;
    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'actions':{'act':{'effect':'pure'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'a'}}}}");
    start(&r, "null", 1);
    for (int i = 0; i < 16; i++)
        result(&r, 1, "success", "", 2);
    CHECK_STR(status(&r), "failed");
    CHECK_STR(str_at(r.state, "result.error.code"), "limit.visits-exceeded");
    CHECK_INT(int_at(r.state, "visits.a"), 16);
    run_free(&r);

    run_init(&r, "{'format':'runspore.workflow/0.1','name':'t','start':'a',"
                 "'limits':{'maxVisitsPerNode':1000},'actions':{'act':{'effect':'pure'}},"
                 "'nodes':{'a':{'kind':'activity','action':'act','outcomes':{'ok':'b'}},"
                 "  'b':{'kind':'activity','action':'act','outcomes':{'ok':'a'}}}}");
    start(&r, "null", 1);
    int accepted = 0;
    while (strcmp(status(&r), "running") == 0 && accepted < 300) {
        result(&r, 1, "success", "", 2);
        accepted++;
    }
    CHECK_INT(accepted, 256);
    CHECK_STR(str_at(r.state, "result.error.code"), "limit.activations-exceeded");
    CHECK_INT(int_at(r.state, "activations"), 256);
    CHECK_INT(int_at(r.state, "visits.a"), 128);
    run_free(&r);
}

int main(void)
{
    test_describe();
    test_schedule_shape();
    test_decision_digest();
    test_k1_replay();
    test_k2_at_most_once();
    test_k3_terminal();
    test_k4_identities();
    test_k5_signals();
    test_signal_buffer_bound();
    test_k6_unsafe_unknown();
    test_k7_budgets();
    test_k8_supplementary();
    test_k9_insertion_order();
    test_mapping_cost();
    test_mapping_eval();
    test_delay_after();
    test_w07_order();
    test_w10_paths();
    test_other_rules();
    test_request_check_order();
    test_fixed_messages();
    test_default_limits();
    garbage_free();
    return check_done("test_kernel");
}
