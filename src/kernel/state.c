/*
 * state.c - the run snapshot `runspore.state/0.1` (kernel.md §7.4; the
 * checks of `spore.state/0.2` are state02.c's): the
 * version read first from the raw document, then the typed decode, then the
 * consistency checks; and the decoded state hosts keep between transitions
 * (sp_kernel_state). Must never accept a snapshot that contradicts itself
 * or the graph: the transition relies on every invariant checked here, also
 * when it takes a kept state instead of decoding (only states the kernel
 * itself decoded or produced for the same package are ever kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/internal.h"

#define SIGNAL_BUFFER_MAX 64

static int invalid(kfail *f, const char *what)
{
    return kfail_set(f, "invalid-input", "state.invalid", "%s", what);
}

bool ks_is_decimal(const json_t *v)
{
    uint64_t x;
    return sp_decimal_from_json(v, &x);
}

bool ks_node_records_ok(const json_t *nodes)
{
    static const char *const names[] = {"visit", "outcome", "output", NULL};
    uint32_t visit;
    if (!json_is_object(nodes))
        return false;
    const char *key;
    json_t *r;
    json_object_foreach((json_t *)nodes, key, r)
    {
        if (!kjson_members_exactly(r, names) || !kjson_u32(json_object_get(r, "visit"), &visit) ||
            !json_is_string(json_object_get(r, "outcome")))
            return false;
    }
    return true;
}

bool ks_visits_ok(const json_t *visits)
{
    uint32_t n;
    if (!json_is_object(visits))
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)visits, key, v)
    {
        if (!kjson_u32(v, &n))
            return false;
    }
    return true;
}

bool ks_position_ok(const json_t *p)
{
    static const char *const names[] = {"nodeId", "activationId", "visit", NULL};
    uint32_t visit;
    return json_is_null(p) ||
           (kjson_members_exactly(p, names) && json_is_string(json_object_get(p, "nodeId")) &&
            json_is_string(json_object_get(p, "activationId")) &&
            kjson_u32(json_object_get(p, "visit"), &visit));
}

static bool invocation_ok(const json_t *inv)
{
    static const char *const names[] = {"invocationId", "activationId", "nodeId",    "actionId",
                                        "attempt",      "state",        "inputDigest", NULL};
    static const char *const strings[] = {"invocationId", "activationId", "nodeId", "actionId",
                                          "inputDigest", NULL};
    uint32_t attempt;
    if (json_is_null(inv))
        return true;
    if (!kjson_members_exactly(inv, names) || !kjson_u32(json_object_get(inv, "attempt"), &attempt))
        return false;
    for (const char *const *s = strings; *s; s++)
        if (!json_is_string(json_object_get(inv, *s)))
            return false;
    const json_t *state = json_object_get(inv, "state");
    return kjson_str_is(state, "scheduled") || kjson_str_is(state, "unknown");
}

bool ks_signals_ok(const json_t *signals)
{
    static const char *const names[] = {"eventId", "sequence", "name", "outcome", "data", NULL};
    if (!json_is_array(signals))
        return false;
    for (size_t i = 0; i < json_array_size(signals); i++) {
        const json_t *s = json_array_get(signals, i);
        if (!kjson_members_exactly(s, names) || !json_is_string(json_object_get(s, "eventId")) ||
            !ks_is_decimal(json_object_get(s, "sequence")) ||
            !json_is_string(json_object_get(s, "name")))
            return false;
        const json_t *outcome = json_object_get(s, "outcome");
        if (!json_is_null(outcome) && !json_is_string(outcome))
            return false;
    }
    return true;
}

bool ks_error_info_exact(const json_t *e)
{
    static const char *const names[] = {"code", "message", "nodeId", "details", NULL};
    const json_t *node_id = json_object_get(e, "nodeId");
    return kjson_members_exactly(e, names) && json_is_string(json_object_get(e, "code")) &&
           json_is_string(json_object_get(e, "message")) &&
           (json_is_null(node_id) || json_is_string(node_id));
}

bool ks_result_ok(const json_t *r)
{
    static const char *const output[] = {"output", NULL};
    static const char *const error[] = {"error", NULL};
    return json_is_null(r) || kjson_members_exactly(r, output) ||
           (kjson_members_exactly(r, error) && ks_error_info_exact(json_object_get(r, "error")));
}

static int typed_decode(const json_t *s, kfail *f)
{
    static const char *const names[] = {
        "format",   "semantics",  "tenant",  "runId",  "status",      "input",
        "nodes",    "visits",     "activations", "position", "invocation", "signals",
        "result",   "lastSequence", "lastAcceptedAtMs", NULL};
    uint32_t activations;
    if (!kjson_members_exactly(s, names))
        return invalid(f, "the snapshot's members are not those of runspore.state/0.1");
    const json_t *status = json_object_get(s, "status");
    bool status_ok = kjson_str_is(status, "running") || kjson_str_is(status, "waiting") ||
                     kjson_str_is(status, "needs-intervention") ||
                     kjson_str_is(status, "completed") || kjson_str_is(status, "failed");
    if (!json_is_string(json_object_get(s, "tenant")) ||
        !json_is_string(json_object_get(s, "runId")) || !status_ok ||
        !ks_node_records_ok(json_object_get(s, "nodes")) ||
        !ks_visits_ok(json_object_get(s, "visits")) ||
        !kjson_u32(json_object_get(s, "activations"), &activations) ||
        !ks_position_ok(json_object_get(s, "position")) ||
        !invocation_ok(json_object_get(s, "invocation")) ||
        !ks_signals_ok(json_object_get(s, "signals")) || !ks_result_ok(json_object_get(s, "result")) ||
        !ks_is_decimal(json_object_get(s, "lastSequence")) ||
        !ks_is_decimal(json_object_get(s, "lastAcceptedAtMs")))
        return invalid(f, "a snapshot member has the wrong type");
    return 0;
}

static bool str_eq(const json_t *a, const json_t *b)
{
    return json_is_string(a) && json_is_string(b) &&
           json_string_length(a) == json_string_length(b) &&
           memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
}

static int check_terminal(const json_t *s, bool completed, kfail *f)
{
    const json_t *result = json_object_get(s, "result");
    if (!json_is_null(json_object_get(s, "position")) ||
        !json_is_null(json_object_get(s, "invocation")))
        return invalid(f, "a terminal state has no position or invocation");
    if (!json_object_get(result, completed ? "output" : "error"))
        return invalid(f, "a terminal state's result has the wrong variant");
    return 0;
}

static int check_invocation(const sp_workflow *wf, const json_t *s, const sp_node *node,
                            kfail *f)
{
    const json_t *inv = json_object_get(s, "invocation"), *pos = json_object_get(s, "position");
    uint32_t attempt = 0;
    kjson_u32(json_object_get(inv, "attempt"), &attempt);
    (void)wf;
    if (!str_eq(json_object_get(inv, "nodeId"), json_object_get(pos, "nodeId")) ||
        !str_eq(json_object_get(inv, "activationId"), json_object_get(pos, "activationId")) ||
        !kjson_str_is(json_object_get(inv, "actionId"), node->action_id))
        return invalid(f, "the invocation does not belong to the position");
    char expected[SP_ID_LEN + 1];
    sp_invocation_id(json_string_value(json_object_get(s, "tenant")),
                     json_string_value(json_object_get(s, "runId")),
                     json_string_value(json_object_get(pos, "activationId")), expected);
    if (!kjson_str_is(json_object_get(inv, "invocationId"), expected))
        return invalid(f, "the invocation ID is not the derived one");
    if (attempt == 0)
        return invalid(f, "attempt 0");
    return 0;
}

static int check_consistency(const sp_workflow *wf, const json_t *s, kfail *f)
{
    const json_t *status = json_object_get(s, "status"), *pos = json_object_get(s, "position");
    const json_t *inv = json_object_get(s, "invocation");
    if (json_array_size(json_object_get(s, "signals")) > SIGNAL_BUFFER_MAX)
        return invalid(f, "more than 64 buffered signals");
    bool completed = kjson_str_is(status, "completed");
    if (completed || kjson_str_is(status, "failed"))
        return check_terminal(s, completed, f);
    if (!json_is_null(json_object_get(s, "result")) || json_is_null(pos))
        return invalid(f, "a non-terminal state has a position and no result");
    const json_t *node_id = json_object_get(pos, "nodeId");
    const sp_node *node = strlen(json_string_value(node_id)) == json_string_length(node_id)
                              ? sp_workflow_node(wf, json_string_value(node_id))
                              : NULL;
    if (!node)
        return invalid(f, "the position names no node");
    uint32_t visit = 0, visits = 0;
    kjson_u32(json_object_get(pos, "visit"), &visit);
    const json_t *counted = json_object_get(json_object_get(s, "visits"), node->id);
    if (visit == 0 || !counted || !kjson_u32(counted, &visits) || visits != visit)
        return invalid(f, "position.visit is 0 or differs from visits[node]");
    char activation[128];
    snprintf(activation, sizeof activation, "%s/%u", node->id, visit);
    if (!kjson_str_is(json_object_get(pos, "activationId"), activation))
        return invalid(f, "position.activationId is not <node>/<visit>");
    bool waiting = kjson_str_is(status, "waiting");
    bool running = kjson_str_is(status, "running");
    sp_node_kind want = waiting ? SP_NODE_AWAIT_SIGNAL : SP_NODE_ACTIVITY;
    if (node->kind != want)
        return invalid(f, "the status does not match the position's node kind");
    if (waiting)
        return json_is_null(inv) ? 0 : invalid(f, "a waiting state has no invocation");
    const char *inv_state = running ? "scheduled" : "unknown";
    if (json_is_null(inv) || !kjson_str_is(json_object_get(inv, "state"), inv_state))
        return invalid(f, "the invocation state does not match the status");
    return check_invocation(wf, s, node, f);
}

json_t *kstate_decode(const sp_workflow *wf, const char *bytes, size_t len, kfail *f)
{
    sp_error err = {0};
    json_t *s = sp_json_parse_canonical(bytes, len, &err);
    if (!s) {
        bool oom = strcmp(err.code, "runtime.out-of-memory") == 0;
        invalid(f, err.message);
        sp_error_clear(&err);
        if (oom)
            kfail_oom(f);
        return NULL;
    }
    const json_t *format = json_object_get(s, "format"), *semantics = json_object_get(s, "semantics");
    bool v02 = wf->semantics == SP_SEM_02;
    const char *want_format = v02 ? SP_STATE_FORMAT_02 : SP_STATE_FORMAT;
    const char *want_semantics = v02 ? SP_SEMANTICS_VERSION_02 : SP_SEMANTICS_VERSION;
    int rc;
    if (!json_is_object(s) || !json_is_string(format) || !json_is_string(semantics))
        rc = invalid(f, "the snapshot has no format and semantics");
    else if (!kjson_str_is(format, want_format) || !kjson_str_is(semantics, want_semantics))
        rc = kfail_set(f, "incompatible-version", "version.state-format",
                       "snapshot format %s semantics %s is not %s %s", json_string_value(format),
                       json_string_value(semantics), want_format, want_semantics);
    else if (v02)
        rc = kstate02_check(wf, s, f);
    else
        rc = typed_decode(s, f) ? -1 : check_consistency(wf, s, f);
    if (rc) {
        json_decref(s);
        return NULL;
    }
    return s;
}

json_t *kstate_initial(const json_t *tenant, const json_t *run_id, const json_t *input)
{
    return json_pack("{s:s,s:s,s:O,s:O,s:s,s:O,s:{},s:{},s:i,s:n,s:n,s:[],s:n,s:s,s:s}",
                     "format", SP_STATE_FORMAT, "semantics", SP_SEMANTICS_VERSION, "tenant",
                     tenant, "runId", run_id, "status", "running", "input", input, "nodes",
                     "visits", "activations", 0, "position", "invocation", "signals", "result",
                     "lastSequence", "0", "lastAcceptedAtMs", "0");
}

const char *sp_kernel_state_digest(const sp_kernel_state *s) { return s->snapshot_digest; }

void sp_kernel_state_free(sp_kernel_state *s)
{
    if (!s)
        return;
    json_decref(s->doc);
    kmemo_clear(&s->memo);
    free(s);
}
