/*
 * test_kernel_state.c - the decoded run state a host keeps between
 * transitions (kernel.h sp_kernel_state, step-path.md §5): every result byte
 * (snapshot, digest, status, commands, diagnostics, failure) is the same
 * with and without it, and the ownership rules of kernel.h hold (run it
 * under AddressSanitizer: a leak or a double free of a state fails it).
 *
 * usage: test_kernel_state                      synthetic runs + API cases
 *        test_kernel_state --traces <file|dir>...  every golden trace replayed
 *                                                  twice, results compared
 *
 * Synthetic runs: a 250-node chain (activities, awaits with signals taken
 * directly and buffered, retries, expiry, stale results, an unsafe unknown
 * resolved by hand, an out-of-order event the kernel refuses, events after
 * the end) and a one-node self-loop up to its visit limit, each driven by
 * two hosts in lockstep: one passes the snapshot bytes only, the other keeps
 * the decoded state keyed by its digest, as the engine does, and hands the
 * kernel each event's payload already parsed (sp_kernel_event.payload_value,
 * as the store does with a result it verified). Every command's value
 * (sp_kernel_command.payload_value) must encode to its payload bytes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "check.h"
#include "digest/digest.h"
#include "json/json.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"
#include "trace/trace.h"

/* ------------------------------------------------------------------ */
/* one transition's result as bytes, every member the kernel returns   */

static void field(sp_buf *b, const char *name, const char *data, size_t len)
{
    sp_buf_printf(b, "%s %zu:", name, len);
    if (data)
        sp_buf_append(b, data, len);
    sp_buf_append_char(b, '\n');
}

static void text_field(sp_buf *b, const char *name, const char *s)
{
    if (s)
        field(b, name, s, strlen(s));
    else
        sp_buf_printf(b, "%s none\n", name);
}

static char *record(int rc, const sp_kernel_decision *d, const sp_kernel_failure *f, size_t *len)
{
    sp_buf b = SP_BUF_INIT;
    sp_buf_printf(&b, "rc %d\n", rc);
    if (rc == SP_KERNEL_DECISION) {
        char digest[SP_DIGEST_TEXT_LEN + 1];
        sp_kernel_decision_digest(d, digest);
        field(&b, "snapshot", d->snapshot, d->snapshot_len);
        text_field(&b, "snapshotDigest", d->snapshot_digest);
        text_field(&b, "status", d->status);
        text_field(&b, "decisionDigest", digest);
        sp_buf_printf(&b, "commands %zu\n", d->ncommands);
        for (size_t i = 0; i < d->ncommands; i++) {
            text_field(&b, "commandId", d->commands[i].command_id);
            text_field(&b, "activationId", d->commands[i].activation_id);
            text_field(&b, "kind", d->commands[i].kind);
            field(&b, "payload", d->commands[i].payload, d->commands[i].payload_len);
        }
        sp_buf_printf(&b, "diagnostics %zu\n", d->ndiagnostics);
        for (size_t i = 0; i < d->ndiagnostics; i++) {
            text_field(&b, "code", d->diagnostics[i].code);
            text_field(&b, "nodeId", d->diagnostics[i].node_id);
            field(&b, "details", d->diagnostics[i].details, d->diagnostics[i].details_len);
        }
    } else if (rc == SP_KERNEL_FAILURE) {
        text_field(&b, "kind", f->kind);
        text_field(&b, "code", f->code);
        text_field(&b, "details", f->details);
    }
    if (!sp_buf_ok(&b))
        abort();
    return sp_buf_take(&b, len);
}

typedef struct records {
    char **data;
    size_t *len;
    size_t n, cap;
    bool keep;        /* the replay kept the state: every decision must carry one */
    size_t decisions; /* decisions seen */
    size_t bad_state; /* decisions whose state was missing, unexpected or of another digest */
} records;

static void records_add(records *r, char *data, size_t len)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->data = realloc(r->data, r->cap * sizeof *r->data);
        r->len = realloc(r->len, r->cap * sizeof *r->len);
        if (!r->data || !r->len)
            abort();
    }
    r->data[r->n] = data;
    r->len[r->n] = len;
    r->n++;
}

static void records_free(records *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->data[i]);
    free(r->data);
    free(r->len);
    memset(r, 0, sizeof *r);
}

/* The state a decision hands out: present exactly when asked for, and
 * keyed by the decision's snapshot digest. */
static bool state_as_asked(bool keep, int rc, const sp_kernel_decision *d)
{
    if (rc != SP_KERNEL_DECISION)
        return true;
    if (!keep)
        return d->state == NULL;
    return d->state && strcmp(sp_kernel_state_digest(d->state), d->snapshot_digest) == 0;
}

static void on_step(void *ctx, size_t step, int rc, const sp_kernel_decision *d,
                    const sp_kernel_failure *f)
{
    records *r = ctx;
    (void)step;
    size_t len;
    char *data = record(rc, d, f, &len);
    records_add(r, data, len);
    if (rc == SP_KERNEL_DECISION)
        r->decisions++;
    if (!state_as_asked(r->keep, rc, d))
        r->bad_state++;
}

/* Same results, step by step; names the first difference. */
static void compare_records(const char *what, const records *plain, const records *kept)
{
    CHECK_INT(kept->n, plain->n);
    for (size_t i = 0; i < plain->n && i < kept->n; i++) {
        bool same = plain->len[i] == kept->len[i] &&
                    memcmp(plain->data[i], kept->data[i], plain->len[i]) == 0;
        check_count++;
        if (!same) {
            check_fail(__FILE__, __LINE__, "%s: step %zu differs with the kept state\n"
                       "plain:\n%.*s\nkept:\n%.*s", what, i, (int)plain->len[i], plain->data[i],
                       (int)kept->len[i], kept->data[i]);
            return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* golden traces, replayed from bytes and with the kept state          */

static size_t traces_done, trace_steps, trace_decisions;

static void replay_trace(const char *path)
{
    sp_error err = {0};
    sp_trace *t = sp_trace_load(path, &err);
    if (!t) {
        check_fail(__FILE__, __LINE__, "%s: %s: %s", path, err.code, err.message);
        sp_error_clear(&err);
        return;
    }
    records plain = {0}, kept = {.keep = true};
    sp_trace_options po = {.keep_state = false, .on_step = on_step, .ctx = &plain};
    sp_trace_options ko = {.keep_state = true, .on_step = on_step, .ctx = &kept};
    sp_trace_mismatch m;
    bool ok = sp_trace_replay_with(t, &po, &m, NULL);
    if (!ok)
        check_fail(__FILE__, __LINE__, "%s (plain): step %zu: %s", path, m.step, m.member);
    sp_trace_mismatch_clear(&m);
    check_count++;
    ok = sp_trace_replay_with(t, &ko, &m, NULL);
    if (!ok)
        check_fail(__FILE__, __LINE__,
                   "%s (kept state): step %zu: %s\n  expected: %s\n  actual: %s", path, m.step,
                   m.member, m.expected ? m.expected : "", m.actual ? m.actual : "");
    sp_trace_mismatch_clear(&m);
    check_count++;
    CHECK_INT(plain.n, sp_trace_step_count(t));
    CHECK_INT(plain.bad_state, 0);
    CHECK_INT(kept.bad_state, 0);
    compare_records(sp_trace_name(t), &plain, &kept);
    traces_done++;
    trace_steps += plain.n;
    trace_decisions += kept.decisions;
    records_free(&plain);
    records_free(&kept);
    sp_trace_free(t);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        replay_trace(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d) {
        check_fail(__FILE__, __LINE__, "cannot open %s", path);
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
            names = realloc(names, (n + 1) * sizeof *names);
            if (!names || asprintf(&names[n], "%s/%s", path, e->d_name) < 0)
                abort();
            n++;
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        replay_trace(names[i]);
        free(names[i]);
    }
    free(names);
}

/* ------------------------------------------------------------------ */
/* workflows built here                                                */

static char *canonical(json_t *v, size_t *len)
{
    sp_error err = {0};
    char *s = sp_json_encode_alloc(v, len, &err);
    json_decref(v);
    if (!s) {
        fprintf(stderr, "encode: %s\n", err.message);
        abort();
    }
    return s;
}

#define CHAIN_NODES 250

static bool chain_await(int k) { return k % 25 == 12; }
static bool chain_risky(int k) { return k % 50 == 30; }

/* n000 .. n248 then `done` (250 nodes): activities of the idempotent action
 * `step` (3 attempts) or, every 50th, the unsafe `risky`; every 25th an
 * await of signal `go`. Each input reads the previous node. */
static char *chain_workflow(const char *name, size_t *len)
{
    json_t *nodes = json_object();
    int last = CHAIN_NODES - 2;
    for (int k = 0; k <= last; k++) {
        char id[16], next[16], prev[16];
        snprintf(id, sizeof id, "n%03d", k);
        snprintf(prev, sizeof prev, "n%03d", k - 1);
        if (k < last)
            snprintf(next, sizeof next, "n%03d", k + 1);
        else
            snprintf(next, sizeof next, "done");
        json_t *node;
        if (chain_await(k)) {
            node = json_pack("{s:s,s:s,s:{s:s}}", "kind", "await-signal", "signal", "go",
                             "outcomes", "received", next);
        } else {
            json_t *input = k == 0 ? json_pack("{s:[s]}", "$get", "input")
                                   : json_pack("{s:i,s:{s:[s,s,s]}}", "k", k, "prev", "$get",
                                               "nodes", prev, "visit");
            node = json_pack("{s:s,s:s,s:o,s:{s:s}}", "kind", "activity", "action",
                             chain_risky(k) ? "risky" : "step", "input", input, "outcomes", "ok",
                             next);
        }
        json_object_set_new(nodes, id, node);
    }
    char lastid[16];
    snprintf(lastid, sizeof lastid, "n%03d", last);
    json_object_set_new(nodes, "done",
                        json_pack("{s:s,s:{s:{s:[s,s,s]},s:{s:[s]}}}", "kind", "complete",
                                  "output", "last", "$get", "nodes", lastid, "output", "input",
                                  "$get", "input"));
    json_t *wf = json_pack(
        "{s:s,s:s,s:s,s:{s:i,s:i},s:{s:{s:s,s:{s:i,s:s}},s:{s:s}},s:o}", "format",
        "runspore.workflow/0.1", "name", name, "start", "n000", "limits", "maxVisitsPerNode", 16,
        "maxActivations", 10000, "actions", "step", "effect", "idempotent", "retry",
        "maxAttempts", 3, "backoffMs", "5", "risky", "effect", "unsafe", "nodes", nodes);
    return canonical(wf, len);
}

/* One activity `a` whose `ok` routes back to itself, up to `visits`. */
static char *loop_workflow(int visits, size_t *len)
{
    json_t *wf = json_pack("{s:s,s:s,s:s,s:{s:i,s:i},s:{s:{s:s}},s:{s:{s:s,s:s,s:o,s:{s:s}}}}",
                           "format", "runspore.workflow/0.1", "name", "self-loop", "start", "a",
                           "limits", "maxVisitsPerNode", visits, "maxActivations", 10000,
                           "actions", "step", "effect", "idempotent", "nodes", "a", "kind",
                           "activity", "action", "step", "input",
                           json_pack("{s:[s]}", "$get", "input"), "outcomes",
                           "ok", "a");
    return canonical(wf, len);
}

/* ------------------------------------------------------------------ */
/* a host: keeps the committed snapshot, and the decoded state or not  */

typedef struct host {
    const char *graph;
    size_t graph_len;
    const sp_workflow *wf;
    bool keep;
    char *snap; /* committed snapshot bytes (NULL before the first decision) */
    size_t snap_len;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_kernel_state *kept;
    size_t used; /* transitions that took the kept state */
} host;

/* One turn as the engine does it: the kept state only under the committed
 * snapshot's digest, the snapshot bytes always passed, the decision's state
 * kept when it is committed. */
static int host_turn(host *h, const sp_kernel_event *ev, sp_kernel_decision *d,
                     sp_kernel_failure *f)
{
    sp_kernel_state *given = NULL;
    if (h->kept && h->snap && strcmp(sp_kernel_state_digest(h->kept), h->digest) == 0)
        given = h->kept, h->used++;
    else
        sp_kernel_state_free(h->kept);
    h->kept = NULL;
    sp_kernel_request req = {
        .identity = {"sha256:test", "test:kernel", SP_SEMANTICS_VERSION, SP_CODEC_VERSION},
        .graph = h->graph,
        .graph_len = h->graph_len,
        .loaded_graph = h->wf,
        .snapshot = h->snap,
        .snapshot_len = h->snap_len,
        .state = given,
        .want_state = h->keep,
        .event = *ev,
        .limits = SP_KERNEL_DEFAULT_LIMITS,
    };
    int rc = sp_kernel_transition(&req, d, f);
    if (rc == SP_KERNEL_DECISION) {
        free(h->snap);
        h->snap = strndup(d->snapshot, d->snapshot_len);
        h->snap_len = d->snapshot_len;
        memcpy(h->digest, d->snapshot_digest, sizeof h->digest);
        h->kept = d->state;
        d->state = NULL;
    }
    return rc;
}

static void host_free(host *h)
{
    sp_kernel_state_free(h->kept);
    free(h->snap);
}

/* What the driver knows of the run, from the plain host's decisions. */
typedef struct run_view {
    char inv[SP_ID_LEN + 1];
    uint32_t attempt;
    int node; /* k of n<k>, -1 for other node IDs */
    char status[24];
    uint64_t seq, at;
    size_t events;
    int unknown_done, stale_done, early_done, shuffled; /* once-per-node markers (node k + 1) */
} run_view;

static void view_update(run_view *v, const sp_kernel_decision *d)
{
    snprintf(v->status, sizeof v->status, "%s", d->status);
    for (size_t i = 0; i < d->ncommands; i++) {
        sp_error err = {0};
        json_t *p = sp_json_parse(d->commands[i].payload, d->commands[i].payload_len, &err);
        if (!p)
            abort();
        const char *inv = json_string_value(json_object_get(p, "invocationId"));
        snprintf(v->inv, sizeof v->inv, "%s", inv);
        v->attempt = (uint32_t)json_integer_value(json_object_get(p, "attempt"));
        const char *node = json_string_value(json_object_get(p, "nodeId"));
        if (node)
            v->node = node[0] == 'n' ? atoi(node + 1) : -1;
        json_decref(p);
    }
}

/* The next event of the script, chosen from what the run is doing. */
static json_t *next_event(run_view *v, const char **kind)
{
    int k = v->node;
    if (strcmp(v->status, "waiting") == 0) {
        *kind = "signal.received";
        return json_pack("{s:s,s:{s:i}}", "name", "go", "data", "events", (int)v->events);
    }
    if (strcmp(v->status, "needs-intervention") == 0) {
        *kind = "invocation.resolved";
        return json_pack("{s:s,s:{s:s,s:s,s:{s:i,s:s}}}", "invocationId", v->inv, "resolution",
                         "action", "complete", "outcome", "ok", "output", "n", k, "by", "hand");
    }
    if (strcmp(v->status, "running") != 0) { /* terminal: ignored-terminal */
        *kind = "signal.received";
        return json_pack("{s:s}", "name", "late");
    }
    char attempt_id[SP_ID_LEN + 16];
    snprintf(attempt_id, sizeof attempt_id, "%s.%u", v->inv, v->attempt);
    *kind = "activity.result";
    if (k >= 0 && chain_risky(k) && v->unknown_done != k + 1) {
        v->unknown_done = k + 1;
        return json_pack("{s:s,s:s,s:i,s:s}", "invocationId", v->inv, "attemptId", attempt_id,
                         "attempt", (int)v->attempt, "status", "unknown");
    }
    if (k >= 0 && k % 7 == 3 && v->attempt == 1)
        return json_pack("{s:s,s:s,s:i,s:s,s:{s:s,s:s,s:{s:i}},s:b}", "invocationId", v->inv,
                         "attemptId", attempt_id, "attempt", 1, "status", "failure", "error",
                         "code", "step.flaky", "message", "try again", "details", "k", k,
                         "retryable", 1);
    if (k >= 0 && k % 11 == 5 && v->attempt == 1)
        return json_pack("{s:s,s:s,s:i,s:s}", "invocationId", v->inv, "attemptId", attempt_id,
                         "attempt", 1, "status", "expired");
    if (k >= 0 && k % 13 == 6 && v->stale_done != k + 1) {
        v->stale_done = k + 1;
        return json_pack("{s:s,s:s,s:i,s:s,s:s}", "invocationId", v->inv, "attemptId",
                         attempt_id, "attempt", (int)v->attempt + 7, "status", "success",
                         "outcome", "ok");
    }
    if (k >= 0 && chain_await(k + 1) && (k + 1) / 25 % 2 == 0 && v->early_done != k + 1) {
        v->early_done = k + 1; /* buffered, consumed when the await is entered */
        *kind = "signal.received";
        return json_pack("{s:s,s:s,s:{s:i}}", "name", "go", "outcome", "received", "data",
                         "early", k);
    }
    return json_pack("{s:s,s:s,s:i,s:s,s:s,s:{s:i,s:s,s:[i,i]}}", "invocationId", v->inv,
                     "attemptId", attempt_id, "attempt", (int)v->attempt, "status", "success",
                     "outcome", "ok", "output", "n", k, "text", "the output of one step",
                     "pair", k, (int)v->attempt);
}

/* Each command's value is what its payload bytes encode (kernel.h). */
static void check_command_values(const sp_kernel_decision *d)
{
    for (size_t i = 0; i < d->ncommands; i++) {
        const sp_kernel_command *c = &d->commands[i];
        CHECK(c->payload_value != NULL);
        if (!c->payload_value)
            continue;
        size_t len = 0;
        sp_error err = {0};
        char *bytes = sp_json_encode_alloc(c->payload_value, &len, &err);
        CHECK(bytes && len == c->payload_len && memcmp(bytes, c->payload, len) == 0);
        free(bytes);
        sp_error_clear(&err);
    }
}

/* Drive one run through two hosts in lockstep until it ended and one more
 * event was ignored; every result compared. Returns the number of turns. */
static size_t drive(const char *what, const char *graph, size_t graph_len, size_t max_turns,
                    const char *want_status, size_t *used)
{
    sp_kernel_failure lf = {0};
    bool oom = false;
    sp_workflow *wf = sp_workflow_load(graph, graph_len, &lf, &oom);
    if (!wf) {
        check_fail(__FILE__, __LINE__, "%s: workflow: %s %s", what, lf.code, lf.details);
        return 0;
    }
    host plain = {.graph = graph, .graph_len = graph_len, .wf = wf, .keep = false};
    host kept = {.graph = graph, .graph_len = graph_len, .wf = wf, .keep = true};
    records rp = {0}, rk = {.keep = true};
    run_view v = {.node = -1, .status = "", .seq = 0, .at = 1000};
    size_t turns = 0;
    bool ended = false;
    while (turns < max_turns) {
        const char *kind = "run.started";
        json_t *payload = turns == 0 ? json_pack("{s:s,s:s,s:{s:s}}", "tenant", "t1", "runId",
                                                 "r1", "input", "url", "https://example.test")
                                     : next_event(&v, &kind);
        size_t plen;
        char *pbytes = canonical(payload, &plen);
        char event_id[32];
        snprintf(event_id, sizeof event_id, "ev%zu", v.events);
        /* once, an event out of order: refused, and the kept state with it */
        bool shuffle = turns == 100 && !v.shuffled;
        uint64_t seq = shuffle ? v.seq + 3 : v.seq + 1;
        v.shuffled |= shuffle;
        sp_kernel_event ev = {event_id, seq, v.at, kind, pbytes, plen, NULL};
        sp_kernel_decision dp, dk;
        sp_kernel_failure fp, fk;
        sp_kernel_event parsed = ev; /* the kept host's event comes parsed */
        sp_error perr = {0};
        json_t *value = sp_json_parse_canonical(pbytes, plen, &perr);
        CHECK(value != NULL);
        parsed.payload_value = value;
        int rcp = host_turn(&plain, &ev, &dp, &fp);
        int rck = host_turn(&kept, &parsed, &dk, &fk);
        json_decref(value);
        sp_error_clear(&perr);
        if (rck == SP_KERNEL_DECISION)
            check_command_values(&dk);
        size_t len;
        char *data = record(rcp, &dp, &fp, &len);
        records_add(&rp, data, len);
        data = record(rck, &dk, &fk, &len);
        records_add(&rk, data, len);
        CHECK_INT(rcp, shuffle ? SP_KERNEL_FAILURE : SP_KERNEL_DECISION);
        if (rcp == SP_KERNEL_DECISION) {
            view_update(&v, &dp);
            v.seq = seq;
        }
        v.events++;
        v.at += 10;
        turns++;
        free(pbytes);
        if (rcp == SP_KERNEL_DECISION)
            sp_kernel_decision_free(&dp);
        if (rck == SP_KERNEL_DECISION)
            sp_kernel_decision_free(&dk);
        if (ended)
            break;
        if (strcmp(v.status, "completed") == 0 || strcmp(v.status, "failed") == 0)
            ended = true; /* one more event: ignored-terminal */
    }
    CHECK(ended);
    CHECK_STR(v.status, want_status);
    compare_records(what, &rp, &rk);
    *used = kept.used;
    CHECK_INT(plain.used, 0);
    records_free(&rp);
    records_free(&rk);
    host_free(&plain);
    host_free(&kept);
    sp_workflow_free(wf);
    return turns;
}

static void test_chain(void)
{
    size_t len, used = 0;
    char *graph = chain_workflow("chain-250", &len);
    size_t turns = drive("chain-250", graph, len, 2000, "completed", &used);
    /* every turn took the kept state but the first (no state yet), the
     * refused one's successor (the refusal consumed it) */
    CHECK(turns > CHAIN_NODES);
    CHECK_INT(used, turns - 2);
    printf("chain: %zu turns, %zu with the kept state\n", turns, used);
    free(graph);
}

static void test_self_loop(void)
{
    size_t len, used = 0;
    char *graph = loop_workflow(150, &len);
    size_t turns = drive("self-loop", graph, len, 2000, "failed", &used);
    CHECK(turns > 150);
    CHECK_INT(used, turns - 2);
    free(graph);
}

/* ------------------------------------------------------------------ */
/* API cases                                                           */

typedef struct small {
    char *graph;
    size_t graph_len;
    char *start;
    size_t start_len;
    char *result;
    size_t result_len;
} small;

/* A started run of the chain workflow named `name`, and the first result. */
static void small_init(small *s, const char *name)
{
    s->graph = chain_workflow(name, &s->graph_len);
    s->start = canonical(json_pack("{s:s,s:s,s:n}", "tenant", "t1", "runId", "r1", "input"),
                         &s->start_len);
    char inv[SP_ID_LEN + 1];
    sp_invocation_id("t1", "r1", "n000/1", inv);
    char attempt_id[SP_ID_LEN + 8];
    snprintf(attempt_id, sizeof attempt_id, "%s.1", inv);
    s->result = canonical(json_pack("{s:s,s:s,s:i,s:s,s:s}", "invocationId", inv, "attemptId",
                                    attempt_id, "attempt", 1, "status", "success", "outcome",
                                    "ok"),
                          &s->result_len);
}

static void small_free(small *s)
{
    free(s->graph);
    free(s->start);
    free(s->result);
}

static sp_kernel_request small_req(const small *s, bool start)
{
    sp_kernel_request req = {
        .identity = {"sha256:test", "test:kernel", SP_SEMANTICS_VERSION, SP_CODEC_VERSION},
        .graph = s->graph,
        .graph_len = s->graph_len,
        .event = {start ? "start" : "r1", start ? 1 : 2, 1000,
                  start ? "run.started" : "activity.result", start ? s->start : s->result,
                  start ? s->start_len : s->result_len, NULL},
        .limits = SP_KERNEL_DEFAULT_LIMITS,
    };
    return req;
}

/* run.started with want_state: the decision and its state. */
static sp_kernel_state *started(const small *s, sp_kernel_decision *d)
{
    sp_kernel_request req = small_req(s, true);
    req.want_state = true;
    sp_kernel_failure f;
    CHECK_INT(sp_kernel_transition(&req, d, &f), SP_KERNEL_DECISION);
    CHECK(d->state != NULL);
    CHECK_STR(sp_kernel_state_digest(d->state), d->snapshot_digest);
    sp_kernel_state *st = d->state;
    d->state = NULL;
    return st;
}

static char *rec_of(int rc, sp_kernel_decision *d, sp_kernel_failure *f, size_t *len)
{
    char *r = record(rc, d, f, len);
    if (rc == SP_KERNEL_DECISION)
        sp_kernel_decision_free(d);
    return r;
}

static void check_same(const char *what, char *a, size_t alen, char *b, size_t blen)
{
    check_count++;
    if (alen != blen || memcmp(a, b, alen) != 0)
        check_fail(__FILE__, __LINE__, "%s:\n%.*s\nvs\n%.*s", what, (int)alen, a, (int)blen, b);
    free(a);
    free(b);
}

/* With a state the snapshot bytes are not read: garbage or none, same result. */
static void test_bytes_unread(void)
{
    small s;
    small_init(&s, "small");
    sp_kernel_decision d0, d;
    sp_kernel_failure f;
    sp_kernel_state *st = started(&s, &d0);

    sp_kernel_request req = small_req(&s, false);
    req.snapshot = d0.snapshot;
    req.snapshot_len = d0.snapshot_len;
    size_t la, lb, lc;
    char *a = rec_of(sp_kernel_transition(&req, &d, &f), &d, &f, &la);

    req.snapshot = "{\"not\":\"a snapshot\"}";
    req.snapshot_len = strlen(req.snapshot);
    req.state = st;
    req.want_state = true;
    int rc = sp_kernel_transition(&req, &d, &f);
    CHECK_INT(rc, SP_KERNEL_DECISION);
    st = d.state; /* same object, updated */
    d.state = NULL;
    CHECK(st != NULL);
    CHECK_STR(sp_kernel_state_digest(st), d.snapshot_digest);
    char *b = rec_of(rc, &d, &f, &lb);
    check_same("garbage bytes beside the state", a, la, b, lb);

    /* and with no bytes at all (the snapshot counts as present) */
    sp_kernel_state_free(st);
    sp_kernel_decision_free(&d0);
    st = started(&s, &d0);
    req = small_req(&s, false);
    req.snapshot = d0.snapshot;
    req.snapshot_len = d0.snapshot_len;
    a = rec_of(sp_kernel_transition(&req, &d, &f), &d, &f, &la);
    req.snapshot = NULL;
    req.snapshot_len = 0;
    req.state = st; /* no want_state: the kernel frees it */
    rc = sp_kernel_transition(&req, &d, &f);
    CHECK(rc != SP_KERNEL_DECISION || d.state == NULL);
    char *c = rec_of(rc, &d, &f, &lc);
    check_same("no bytes beside the state", a, la, c, lc);
    sp_kernel_decision_free(&d0);
    small_free(&s);
}

/* A state decoded for another package is not used: the bytes are decoded
 * (same result as without it), or, with none, state.invalid. */
static void test_other_package(void)
{
    small a, b;
    small_init(&a, "small-a");
    small_init(&b, "small-b"); /* same nodes, another name: another package */
    sp_kernel_decision d0, d;
    sp_kernel_failure f;
    sp_kernel_state *st = started(&a, &d0);

    sp_kernel_request req = small_req(&b, false);
    req.snapshot = d0.snapshot;
    req.snapshot_len = d0.snapshot_len;
    size_t l1, l2;
    char *r1 = rec_of(sp_kernel_transition(&req, &d, &f), &d, &f, &l1);
    req.state = st;
    req.want_state = true;
    int rc = sp_kernel_transition(&req, &d, &f);
    CHECK_INT(rc, SP_KERNEL_DECISION);
    CHECK(d.state != NULL); /* a fresh decoding, for package b */
    char *r2 = rec_of(rc, &d, &f, &l2);
    check_same("a state of another package beside the bytes", r1, l1, r2, l2);

    st = started(&a, &d);
    sp_kernel_decision_free(&d);
    req.snapshot = NULL;
    req.snapshot_len = 0;
    req.state = st;
    CHECK_INT(sp_kernel_transition(&req, &d, &f), SP_KERNEL_FAILURE);
    CHECK_STR(f.kind, "invalid-input");
    CHECK_STR(f.code, "state.invalid");
    sp_kernel_decision_free(&d0);
    small_free(&a);
    small_free(&b);
}

/* Every failure takes the state as well (kernel.h): run.started with one,
 * an event out of order, an identity failure. Under ASan a leak fails. */
static void test_consumed_on_failure(void)
{
    small s;
    small_init(&s, "small");
    sp_kernel_decision d0, d;
    sp_kernel_failure f;

    sp_kernel_state *st = started(&s, &d0);
    sp_kernel_request req = small_req(&s, true);
    req.state = st;
    req.want_state = true;
    CHECK_INT(sp_kernel_transition(&req, &d, &f), SP_KERNEL_FAILURE);
    CHECK_STR(f.code, "state.unexpected-start");
    CHECK(d.state == NULL);
    sp_kernel_decision_free(&d0);

    st = started(&s, &d0);
    req = small_req(&s, false);
    req.event.sequence = 5;
    req.state = st;
    req.want_state = true;
    CHECK_INT(sp_kernel_transition(&req, &d, &f), SP_KERNEL_FAILURE);
    CHECK_STR(f.code, "event.out-of-order");
    sp_kernel_decision_free(&d0);

    st = started(&s, &d0);
    req = small_req(&s, false);
    req.identity.codec_version = "jcs/2";
    req.state = st;
    CHECK_INT(sp_kernel_transition(&req, &d, &f), SP_KERNEL_FAILURE);
    CHECK_STR(f.code, "version.codec");

    /* the bytes still decide after a failure took the state */
    req = small_req(&s, false);
    req.snapshot = d0.snapshot;
    req.snapshot_len = d0.snapshot_len;
    req.want_state = true;
    CHECK_INT(sp_kernel_transition(&req, &d, &f), SP_KERNEL_DECISION);
    CHECK(d.state != NULL);
    sp_kernel_decision_free(&d); /* frees the state left in it */
    sp_kernel_decision_free(&d0);
    sp_kernel_state_free(NULL);
    small_free(&s);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--traces") == 0) {
        for (int i = 2; i < argc; i++)
            replay_path(argv[i]);
        CHECK(traces_done > 0);
        printf("traces: %zu replayed twice, %zu steps, %zu decisions compared\n", traces_done,
               trace_steps, trace_decisions);
        return check_done("test_kernel_state --traces");
    }
    test_chain();
    test_self_loop();
    test_bytes_unread();
    test_other_package();
    test_consumed_on_failure();
    return check_done("test_kernel_state");
}
