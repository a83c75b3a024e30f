/*
 * transition.c - the transition function (kernel.md §7.7-7.12): request
 * checks in order, bookkeeping, dispatch of the four events, the procedures
 * (enter, consume, retry, fail the invocation, terminate), and the result
 * checks with their budgets; the host's decoded state taken in place of
 * the snapshot bytes and handed back updated.
 *
 * Must never do I/O, read a clock, use randomness or floating point, or let
 * a failure leave anything behind: a failure discards the whole decision
 * (and the taken state). Must never let the kept state change a result
 * byte: it is used only where the decode of the bytes would give it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/internal.h"
#include "kernel/mapping.h"

#define SIGNAL_BUFFER_MAX 64

static const char MSG_VISITS[] = "node visit limit exceeded";
static const char MSG_ACTIVATIONS[] = "run activation limit exceeded";
static const char MSG_MISSING_PATH[] = "mapping path does not resolve";
static const char MSG_UNDECLARED[] = "activity reported an undeclared outcome";
static const char MSG_EXHAUSTED[] = "activity attempts exhausted";
static const char MSG_FAILED[] = "activity failed";

typedef struct kt {
    const sp_workflow *wf;
    const sp_kernel_request *req;
    const kevent *ev;
    kfail *f;
    json_t *state;
    kmemo *memo; /* of the kept state, NULL = encode the snapshot plainly */
    uint64_t now;
    uint32_t microsteps;
    uint64_t ops;
    bool oom;
    sp_kernel_command *cmds;
    size_t ncmds, cmds_cap;
    sp_kernel_diagnostic *diags;
    size_t ndiags, diags_cap;
} kt;

/* ---- small state accessors ---- */

static json_t *st(kt *t, const char *member) { return json_object_get(t->state, member); }

static const char *st_str(kt *t, const char *member) { return json_string_value(st(t, member)); }

static void st_set(kt *t, const char *member, json_t *value)
{
    if (!value || json_object_set_new(t->state, member, value))
        t->oom = true;
}

static void obj_set(kt *t, json_t *obj, const char *key, json_t *value)
{
    if (!value || json_object_set_new(obj, key, value))
        t->oom = true;
}

static uint32_t u32_of(const json_t *v)
{
    uint32_t x = 0;
    kjson_u32(v, &x);
    return x;
}

static const sp_node *position_node(kt *t)
{
    const json_t *pos = st(t, "position");
    return json_is_null(pos) ? NULL
                             : sp_workflow_node(t->wf, json_string_value(json_object_get(pos, "nodeId")));
}

static bool is_terminal(kt *t)
{
    return kjson_str_is(st(t, "status"), "completed") || kjson_str_is(st(t, "status"), "failed");
}

static int fail_kind(kt *t, const char *kind, const char *code, const char *what)
{
    return kfail_set(t->f, kind, code, "%s", what);
}

static int budget(kt *t, const char *code, const char *what)
{
    return fail_kind(t, "resource-limit", code, what);
}

/* ---- emitting commands and diagnostics ---- */

/* Canonical bytes of something the kernel emits; nesting over 32 is the
 * budget.value-depth failure. Takes ownership of `v`. */
static char *emit_bytes(kt *t, json_t *v, size_t *len)
{
    if (!v) {
        t->oom = true;
        kfail_oom(t->f);
        return NULL;
    }
    sp_error err = {0};
    char *bytes = sp_json_encode_alloc(v, len, &err);
    json_decref(v);
    if (!bytes) {
        if (strcmp(err.code, "canonical.too-deep") == 0)
            budget(t, "budget.value-depth", "an emitted value nests deeper than 32");
        else if (strcmp(err.code, "runtime.out-of-memory") == 0)
            t->oom = true, kfail_oom(t->f);
        else
            fail_kind(t, "invariant-violation", "kernel.invariant", err.message);
        sp_error_clear(&err);
    }
    return bytes;
}

static int diagnose(kt *t, const char *code, const char *node_id, json_t *details)
{
    size_t len;
    char *bytes = emit_bytes(t, details, &len);
    if (!bytes)
        return -1;
    if (t->ndiags == t->diags_cap) {
        size_t cap = t->diags_cap ? 2 * t->diags_cap : 4;
        sp_kernel_diagnostic *d = realloc(t->diags, cap * sizeof *d);
        if (!d) {
            free(bytes);
            return kfail_oom(t->f);
        }
        t->diags = d;
        t->diags_cap = cap;
    }
    sp_kernel_diagnostic *d = &t->diags[t->ndiags];
    d->code = code;
    d->node_id = node_id ? strdup(node_id) : NULL;
    d->details = bytes;
    d->details_len = len;
    if (node_id && !d->node_id) {
        free(bytes);
        return kfail_oom(t->f);
    }
    t->ndiags++;
    return 0;
}

static int command(kt *t, const char *kind, const char *activation_id, uint32_t ordinal,
                   json_t *payload)
{
    size_t len;
    char *bytes = emit_bytes(t, payload, &len);
    if (!bytes)
        return -1;
    if (t->ncmds == t->cmds_cap) {
        size_t cap = t->cmds_cap ? 2 * t->cmds_cap : 2;
        sp_kernel_command *c = realloc(t->cmds, cap * sizeof *c);
        if (!c) {
            free(bytes);
            return kfail_oom(t->f);
        }
        t->cmds = c;
        t->cmds_cap = cap;
    }
    sp_kernel_command *c = &t->cmds[t->ncmds];
    sp_command_id(st_str(t, "tenant"), st_str(t, "runId"), activation_id, ordinal, c->command_id);
    c->kind = kind;
    c->activation_id = strdup(activation_id);
    c->payload = bytes;
    c->payload_len = len;
    if (!c->activation_id) {
        free(bytes);
        return kfail_oom(t->f);
    }
    t->ncmds++;
    return 0;
}

/* ---- procedures ---- */

static int microstep(kt *t)
{
    if (++t->microsteps > t->req->limits.microsteps)
        return budget(t, "budget.microsteps", "more microsteps than the budget allows");
    return 0;
}

static json_t *error_info(const char *code, const char *message, const char *node_id,
                          json_t *details)
{
    return json_pack("{s:s,s:s,s:s?,s:o}", "code", code, "message", message, "nodeId", node_id,
                     "details", details ? details : json_null());
}

/* Terminate failed with `error` (ownership taken). */
static int terminate_failed(kt *t, json_t *error)
{
    st_set(t, "status", json_string("failed"));
    st_set(t, "result", error ? json_pack("{s:o}", "error", error) : NULL);
    st_set(t, "position", json_null());
    st_set(t, "invocation", json_null());
    return t->oom ? kfail_oom(t->f) : 0;
}

static void record_result(kt *t, const sp_node *node, uint32_t visit, const json_t *outcome,
                          const json_t *output)
{
    json_t *rec = json_pack("{s:I,s:O,s:O}", "visit", (json_int_t)visit, "outcome", outcome,
                            "output", output);
    obj_set(t, st(t, "nodes"), node->id, rec);
}

static int enter(kt *t, const char *node_id);

/* Route a taken signal or a result: record it, then enter the target. */
static int route_to(kt *t, const sp_node *node, uint32_t visit, const json_t *outcome,
                    const json_t *output, const char *target)
{
    record_result(t, node, visit, outcome, output);
    st_set(t, "invocation", json_null());
    if (t->oom)
        return kfail_oom(t->f);
    return enter(t, target);
}

/* Take one signal at an await node: one microstep; returns the route target,
 * or NULL with *unrouted set (diagnosed) or an error (-1 via *rc). */
static const char *take_signal(kt *t, const sp_node *node, const json_t *event_id,
                               const json_t *outcome, int *rc)
{
    *rc = microstep(t);
    if (*rc)
        return NULL;
    const char *name = outcome ? json_string_value(outcome) : "received";
    size_t len = outcome ? json_string_length(outcome) : strlen("received");
    const char *target = sp_node_route(node, name, len);
    if (!target)
        *rc = diagnose(t, "signal.outcome-unrouted", node->id,
                       json_pack("{s:O,s:s%}", "eventId", event_id, "outcome", name, len));
    return target;
}

/* Consume buffered signals at an await node (kernel.md §7.9). Returns the
 * target to continue at, or NULL to stay waiting (or on error, *rc = -1). */
static const char *consume(kt *t, const sp_node *node, uint32_t visit, int *rc)
{
    json_t *signals = st(t, "signals");
    *rc = 0;
    for (;;) {
        size_t i = 0;
        while (i < json_array_size(signals) &&
               !kjson_str_is(json_object_get(json_array_get(signals, i), "name"), node->signal))
            i++;
        if (i == json_array_size(signals))
            return NULL;
        json_t *sig = json_incref(json_array_get(signals, i));
        json_array_remove(signals, i);
        const json_t *outcome = json_object_get(sig, "outcome");
        const char *target = take_signal(t, node, json_object_get(sig, "eventId"),
                                         json_is_null(outcome) ? NULL : outcome, rc);
        if (target) {
            json_t *recorded = json_is_null(outcome) ? json_string("received")
                                                     : json_incref((json_t *)outcome);
            if (recorded)
                record_result(t, node, visit, recorded, json_object_get(sig, "data"));
            else
                t->oom = true;
            json_decref(recorded);
            if (t->oom)
                *rc = kfail_oom(t->f);
        }
        json_decref(sig);
        if (*rc || target)
            return target;
    }
}

static int enter_activity(kt *t, const sp_node *node, const char *activation, uint32_t visit,
                          json_t *input)
{
    size_t input_len;
    char *input_bytes = emit_bytes(t, json_incref(input), &input_len);
    if (!input_bytes)
        return -1;
    char digest[SP_DIGEST_TEXT_LEN + 1], inv_id[SP_ID_LEN + 1];
    sp_digest_one("body", input_bytes, input_len, digest);
    free(input_bytes);
    sp_invocation_id(st_str(t, "tenant"), st_str(t, "runId"), activation, inv_id);
    st_set(t, "position", json_pack("{s:s,s:s,s:I}", "nodeId", node->id, "activationId",
                                    activation, "visit", (json_int_t)visit));
    st_set(t, "status", json_string("running"));
    st_set(t, "invocation",
           json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s}", "invocationId", inv_id, "activationId",
                     activation, "nodeId", node->id, "actionId", node->action_id, "attempt", 1,
                     "state", "scheduled", "inputDigest", digest));
    char now[SP_DECIMAL_MAX_LEN + 1];
    json_t *payload = json_pack("{s:s,s:s,s:i,s:s,s:O,s:s,s:s,s:s}", "actionId", node->action_id,
                                "activationId", activation, "attempt", 1, "effectKey", inv_id,
                                "input", input, "invocationId", inv_id, "nodeId", node->id,
                                "notBeforeMs", sp_decimal_format(t->now, now));
    if (t->oom) {
        json_decref(payload);
        return kfail_oom(t->f);
    }
    return command(t, "activity.schedule", activation, 1, payload);
}

/* Evaluate a node's mapping; returns 1 when the run ended (missing path). */
static int evaluate(kt *t, const sp_node *node, json_t **out)
{
    sp_mapping_ctx ctx = {st(t, "input"), st(t, "nodes"), st_str(t, "runId"), st_str(t, "tenant"),
                          t->ops};
    const json_t *missing = NULL;
    sp_mapping_status s = sp_mapping_eval(node->mapping ? node->mapping : json_null(), &ctx, out,
                                          &missing);
    t->ops = ctx.ops;
    if (s == SP_MAPPING_OOM)
        return kfail_oom(t->f);
    if (s == SP_MAPPING_MISSING) {
        json_t *details = json_pack("{s:O}", "path", missing);
        if (terminate_failed(t, error_info("mapping.missing-path", MSG_MISSING_PATH, node->id,
                                           details)))
            return -1;
        return 1;
    }
    return 0;
}

static json_t *copy_node_error(const sp_node *node)
{
    const json_t *details = json_object_get(node->error, "details");
    return error_info(json_string_value(json_object_get(node->error, "code")),
                      json_string_value(json_object_get(node->error, "message")), node->id,
                      json_incref(details ? (json_t *)details : json_null()));
}

static int enter(kt *t, const char *node_id)
{
    for (;;) {
        if (microstep(t))
            return -1;
        const sp_node *node = sp_workflow_node(t->wf, node_id);
        if (!node)
            return fail_kind(t, "invariant-violation", "kernel.invariant", "route to no node");
        json_t *visits = st(t, "visits");
        uint32_t visit = u32_of(json_object_get(visits, node->id));
        uint32_t activations = u32_of(st(t, "activations"));
        if (visit >= t->wf->max_visits_per_node)
            return terminate_failed(t, error_info("limit.visits-exceeded", MSG_VISITS, node->id, NULL));
        if (activations >= t->wf->max_activations)
            return terminate_failed(
                t, error_info("limit.activations-exceeded", MSG_ACTIVATIONS, node->id, NULL));
        visit++;
        obj_set(t, visits, node->id, json_integer(visit));
        st_set(t, "activations", json_integer((json_int_t)activations + 1));
        char activation[128];
        snprintf(activation, sizeof activation, "%s/%u", node->id, visit);
        json_t *value = NULL;
        int rc;
        switch (node->kind) {
        case SP_NODE_ACTIVITY:
            rc = evaluate(t, node, &value);
            if (rc)
                return rc < 0 ? -1 : 0;
            rc = enter_activity(t, node, activation, visit, value);
            json_decref(value);
            return rc;
        case SP_NODE_AWAIT_SIGNAL: {
            st_set(t, "position", json_pack("{s:s,s:s,s:I}", "nodeId", node->id, "activationId",
                                            activation, "visit", (json_int_t)visit));
            st_set(t, "status", json_string("waiting"));
            st_set(t, "invocation", json_null());
            if (t->oom)
                return kfail_oom(t->f);
            const char *target = consume(t, node, visit, &rc);
            if (rc)
                return -1;
            if (!target)
                return 0;
            node_id = target;
            continue;
        }
        case SP_NODE_COMPLETE:
            rc = evaluate(t, node, &value);
            if (rc)
                return rc < 0 ? -1 : 0;
            st_set(t, "status", json_string("completed"));
            st_set(t, "result", json_pack("{s:o}", "output", value));
            st_set(t, "position", json_null());
            st_set(t, "invocation", json_null());
            return t->oom ? kfail_oom(t->f) : 0;
        case SP_NODE_FAIL:
            return terminate_failed(t, copy_node_error(node));
        }
        return fail_kind(t, "invariant-violation", "kernel.invariant", "unknown node kind");
    }
}

/* Fail the invocation with `error` (ownership taken; its nodeId is replaced). */
static int fail_invocation(kt *t, const sp_node *node, json_t *error)
{
    if (!error)
        return kfail_oom(t->f);
    obj_set(t, error, "nodeId", json_string(node->id));
    st_set(t, "invocation", json_null());
    const char *target = sp_node_route(node, "failed", 6);
    if (!target)
        return terminate_failed(t, error);
    uint32_t visit = u32_of(json_object_get(st(t, "position"), "visit"));
    json_t *outcome = json_string("failed"), *output = json_pack("{s:o}", "error", error);
    if (!outcome || !output || t->oom) {
        json_decref(outcome);
        json_decref(output);
        return kfail_oom(t->f);
    }
    int rc = route_to(t, node, visit, outcome, output, target);
    json_decref(outcome);
    json_decref(output);
    return rc;
}

static uint64_t delay_after(const sp_action *a, uint32_t n)
{
    uint32_t shift = n - 1 < 32 ? n - 1 : 32;
    uint64_t factor = UINT64_C(1) << shift;
    uint64_t d = a->backoff_ms > UINT64_MAX / factor ? UINT64_MAX : a->backoff_ms * factor;
    return d < a->max_backoff_ms ? d : a->max_backoff_ms;
}

static int retry(kt *t, const sp_node *node, uint64_t delay)
{
    json_t *inv = st(t, "invocation");
    uint32_t attempt = u32_of(json_object_get(inv, "attempt"));
    if (attempt == UINT32_MAX)
        return budget(t, "budget.counter-range", "the attempt counter would overflow");
    if (delay > SP_U63_MAX - t->now)
        return budget(t, "budget.counter-range", "notBeforeMs would pass 2^63-1");
    attempt++;
    uint64_t not_before = t->now + delay;
    obj_set(t, inv, "attempt", json_integer(attempt));
    obj_set(t, inv, "state", json_string("scheduled"));
    st_set(t, "status", json_string("running"));
    if (t->oom)
        return kfail_oom(t->f);
    char nb[SP_DECIMAL_MAX_LEN + 1];
    const json_t *inv_id = json_object_get(inv, "invocationId");
    json_t *payload = json_pack("{s:i,s:O,s:s}", "attempt", (json_int_t)attempt, "invocationId",
                                inv_id, "notBeforeMs", sp_decimal_format(not_before, nb));
    if (command(t, "activity.retry", json_string_value(json_object_get(inv, "activationId")),
                attempt, payload))
        return -1;
    return diagnose(t, "activity.retry-scheduled", node->id,
                    json_pack("{s:I}", "attempt", (json_int_t)attempt));
}

static int succeed(kt *t, const sp_node *node, const json_t *outcome, const json_t *output)
{
    uint32_t visit = u32_of(json_object_get(st(t, "position"), "visit"));
    const char *target =
        sp_node_route(node, json_string_value(outcome), json_string_length(outcome));
    return route_to(t, node, visit, outcome, output, target);
}

/* ---- the four events ---- */

static json_t *ev_error_or(const kevent *ev, const char *code, const char *message,
                           json_t *details)
{
    if (ev->error) {
        json_decref(details);
        return json_deep_copy(ev->error);
    }
    return error_info(code, message, NULL, details);
}

static int on_result(kt *t)
{
    const kevent *ev = t->ev;
    json_t *inv = st(t, "invocation");
    const json_t *inv_id = json_object_get(inv, "invocationId");
    bool same_id = !json_is_null(inv) && json_equal(inv_id, ev->invocation_id);
    const sp_node *node = position_node(t);
    if (!same_id || u32_of(json_object_get(inv, "attempt")) != ev->attempt ||
        !kjson_str_is(json_object_get(inv, "state"), "scheduled"))
        return diagnose(t, "result.stale", same_id ? node->id : NULL,
                        json_pack("{s:I,s:O}", "attempt", (json_int_t)ev->attempt,
                                  "invocationId", ev->invocation_id));
    const sp_action *action = node->action;
    switch (ev->status) {
    case RS_SUCCESS: {
        json_t *outcome = ev->outcome ? json_incref((json_t *)ev->outcome) : json_string("ok");
        if (!outcome)
            return kfail_oom(t->f);
        int rc;
        if (sp_action_declares(action, json_string_value(outcome), json_string_length(outcome)))
            rc = succeed(t, node, outcome, ev->output);
        else
            rc = fail_invocation(t, node,
                                 error_info("activity.undeclared-outcome", MSG_UNDECLARED, NULL,
                                            json_pack("{s:O}", "outcome", outcome)));
        json_decref(outcome);
        return rc;
    }
    case RS_FAILURE:
        if (ev->retryable && ev->attempt < action->max_attempts)
            return retry(t, node, delay_after(action, ev->attempt));
        return fail_invocation(t, node, ev_error_or(ev, "activity.failed", MSG_FAILED, NULL));
    case RS_UNKNOWN:
    case RS_EXPIRED: {
        const char *status = ev->status == RS_UNKNOWN ? "unknown" : "expired";
        if (action->effect == SP_EFFECT_UNSAFE) {
            obj_set(t, inv, "state", json_string("unknown"));
            st_set(t, "status", json_string("needs-intervention"));
            if (t->oom)
                return kfail_oom(t->f);
            return diagnose(t, "invocation.unknown", node->id,
                            json_pack("{s:I,s:O,s:s}", "attempt", (json_int_t)ev->attempt,
                                      "invocationId", ev->invocation_id, "status", status));
        }
        if (ev->attempt < action->max_attempts)
            return retry(t, node, delay_after(action, ev->attempt));
        return fail_invocation(t, node,
                               error_info("activity.attempts-exhausted", MSG_EXHAUSTED, NULL,
                                          json_pack("{s:s}", "lastStatus", status)));
    }
    }
    return fail_kind(t, "invariant-violation", "kernel.invariant", "unknown result status");
}

static int not_applicable(kt *t, const char *node_id, const char *reason)
{
    return diagnose(t, "resolve.not-applicable", node_id,
                    json_pack("{s:O,s:s}", "invocationId", t->ev->invocation_id, "reason", reason));
}

static int on_resolved(kt *t)
{
    const kevent *ev = t->ev;
    json_t *inv = st(t, "invocation");
    if (json_is_null(inv) || !json_equal(json_object_get(inv, "invocationId"), ev->invocation_id))
        return not_applicable(t, NULL, "invocation-mismatch");
    const sp_node *node = position_node(t);
    if (!kjson_str_is(json_object_get(inv, "state"), "unknown"))
        return not_applicable(t, node->id, "invocation-not-unknown");
    switch (ev->resolution) {
    case RES_COMPLETE:
        if (!sp_action_declares(node->action, json_string_value(ev->outcome),
                                json_string_length(ev->outcome)))
            return not_applicable(t, node->id, "outcome-undeclared");
        return succeed(t, node, ev->outcome, ev->output);
    case RES_RETRY:
        return retry(t, node, 0);
    case RES_FAIL:
        return fail_invocation(t, node, json_deep_copy(ev->error));
    }
    return fail_kind(t, "invariant-violation", "kernel.invariant", "unknown resolution");
}

static int on_signal(kt *t)
{
    const kevent *ev = t->ev;
    const sp_node *node = position_node(t);
    json_t *event_id = json_string(t->req->event.event_id);
    if (!event_id)
        return kfail_oom(t->f);
    int rc = 0;
    if (kjson_str_is(st(t, "status"), "waiting") && kjson_str_is(ev->name, node->signal)) {
        const char *target = take_signal(t, node, event_id, ev->outcome, &rc);
        if (target) {
            json_t *outcome = ev->outcome ? json_incref((json_t *)ev->outcome) : json_string("received");
            uint32_t visit = u32_of(json_object_get(st(t, "position"), "visit"));
            rc = outcome ? route_to(t, node, visit, outcome, ev->data, target) : kfail_oom(t->f);
            json_decref(outcome);
        }
    } else if (json_array_size(st(t, "signals")) >= SIGNAL_BUFFER_MAX) {
        rc = diagnose(t, "signal.buffer-overflow", NULL, json_pack("{s:O}", "eventId", event_id));
    } else {
        char seq[SP_DECIMAL_MAX_LEN + 1];
        json_t *sig = json_pack("{s:O,s:s,s:O,s:O,s:O}", "eventId", event_id, "sequence",
                                sp_decimal_format(t->req->event.sequence, seq), "name", ev->name,
                                "outcome", ev->outcome ? ev->outcome : json_null(), "data",
                                ev->data);
        if (!sig || json_array_append_new(st(t, "signals"), sig))
            rc = kfail_oom(t->f);
    }
    json_decref(event_id);
    return rc;
}

static int dispatch(kt *t)
{
    const kevent *ev = t->ev;
    if (ev->kind == EV_RUN_STARTED)
        return enter(t, t->wf->start);
    if (is_terminal(t))
        return diagnose(t, "event.ignored-terminal", NULL,
                        json_pack("{s:s}", "kind", ev->kind_name));
    switch (ev->kind) {
    case EV_ACTIVITY_RESULT: return on_result(t);
    case EV_SIGNAL: return on_signal(t);
    case EV_RESOLVED: return on_resolved(t);
    case EV_RUN_STARTED: break;
    }
    return 0;
}

/* ---- request checks (kernel.md §7.7) ---- */

static int check_identity(const sp_kernel_request *req, kfail *f)
{
    const char *sem = req->identity.semantics_version, *codec = req->identity.codec_version;
    if (!sem || strcmp(sem, SP_SEMANTICS_VERSION) != 0)
        return kfail_set(f, "incompatible-version", "version.semantics",
                         "semantics version %s is not %s", sem ? sem : "(none)",
                         SP_SEMANTICS_VERSION);
    if (!codec || strcmp(codec, SP_CODEC_VERSION) != 0)
        return kfail_set(f, "incompatible-version", "version.codec", "codec %s is not %s",
                         codec ? codec : "(none)", SP_CODEC_VERSION);
    return 0;
}

static int check_sequence(const sp_kernel_request *req, json_t *state, kfail *f)
{
    uint64_t last = 0;
    if (state)
        sp_decimal_from_json(json_object_get(state, "lastSequence"), &last);
    uint64_t want = state ? last + 1 : 1;
    if (req->event.sequence != want)
        return kfail_set(f, "invalid-input", "event.out-of-order",
                         "event sequence %llu, expected %llu",
                         (unsigned long long)req->event.sequence, (unsigned long long)want);
    return 0;
}

/* Check 5's decode: the host's decoded state when it was decoded for this
 * package (taken out of `kept`: the caller owns the result), else the decode
 * of the snapshot bytes. */
static json_t *present_state(const sp_kernel_request *req, sp_kernel_state *kept,
                             const sp_workflow *wf, kfail *f)
{
    if (kept && kept->doc && strcmp(kept->package_digest, wf->package_digest) == 0) {
        json_t *doc = kept->doc;
        kept->doc = NULL;
        return doc;
    }
    if (!req->snapshot) {
        kfail_set(f, "invalid-input", "state.invalid",
                  "the decoded state belongs to another package and no snapshot bytes were given");
        return NULL;
    }
    return kstate_decode(wf, req->snapshot, req->snapshot_len, f);
}

/* Checks 4-7; on success *state is the decoded snapshot or the initial one. */
static int check_event_and_state(const sp_kernel_request *req, sp_kernel_state *kept,
                                 const sp_workflow *wf, kevent *ev, json_t **state, kfail *f)
{
    if (kevent_decode(req->event.kind ? req->event.kind : "", req->event.payload,
                      req->event.payload_len, ev, f))
        return -1;
    if (req->event.sequence > SP_U63_MAX || req->event.accepted_at_ms > SP_U63_MAX)
        return kfail_set(f, "invalid-input", "event.invalid", "sequence or time above 2^63-1");
    bool start = ev->kind == EV_RUN_STARTED;
    bool present = req->snapshot || kept;
    if (!present && !start)
        return kfail_set(f, "invalid-input", "state.missing", "this event needs a snapshot");
    if (present && start)
        return kfail_set(f, "invalid-input", "state.unexpected-start",
                         "run.started cannot apply to an existing snapshot");
    if (present && !(*state = present_state(req, kept, wf, f)))
        return -1;
    if (check_sequence(req, *state, f))
        return -1;
    if (start) {
        if (!sp_is_name(json_string_value(ev->tenant), json_string_length(ev->tenant)) ||
            !sp_is_name(json_string_value(ev->run_id), json_string_length(ev->run_id)))
            return kfail_set(f, "invalid-input", "event.invalid",
                             "tenant and runId must match [A-Za-z0-9_.-]{1,128}");
        *state = kstate_initial(ev->tenant, ev->run_id, ev->input);
        if (!*state)
            return kfail_oom(f);
    }
    return 0;
}

static int bookkeeping(kt *t)
{
    uint64_t last = 0;
    sp_decimal_from_json(st(t, "lastAcceptedAtMs"), &last);
    t->now = t->req->event.accepted_at_ms > last ? t->req->event.accepted_at_ms : last;
    st_set(t, "lastSequence", sp_decimal_json(t->req->event.sequence));
    st_set(t, "lastAcceptedAtMs", sp_decimal_json(t->now));
    return t->oom ? kfail_oom(t->f) : 0;
}

/* ---- result checks (kernel.md §7.11) ---- */

/* Hand the new state out as decision.state, in the request's box. */
static void keep_state(kt *t, sp_kernel_state **box, sp_kernel_decision *out)
{
    sp_kernel_state *s = *box;
    json_decref(s->doc);
    s->doc = t->state;
    t->state = NULL;
    memcpy(s->package_digest, t->wf->package_digest, sizeof s->package_digest);
    memcpy(s->snapshot_digest, out->snapshot_digest, sizeof s->snapshot_digest);
    out->state = s;
    *box = NULL;
}

/* The snapshot's bytes: through the kept state's memo when there is one
 * (the same bytes); any failure there is left to the plain encoder, which
 * names it. */
static char *emit_state(kt *t, size_t *len)
{
    if (t->memo) {
        sp_error err = {0};
        char *bytes = ksnapshot_encode(t->state, t->memo, len, &err);
        sp_error_clear(&err);
        if (bytes)
            return bytes;
        kmemo_clear(t->memo);
    }
    return emit_bytes(t, json_incref(t->state), len);
}

static int finish(kt *t, sp_kernel_decision *out)
{
    const sp_kernel_limits *lim = &t->req->limits;
    if (t->ncmds > lim->max_command_count)
        return budget(t, "budget.command-count", "more commands than the budget allows");
    size_t len;
    char *snapshot = emit_state(t, &len);
    if (!snapshot)
        return -1;
    if (len > lim->max_state_bytes) {
        free(snapshot);
        return budget(t, "budget.state-bytes", "the snapshot is larger than the budget allows");
    }
    if (t->ops > lim->expression_operations) {
        free(snapshot);
        return budget(t, "budget.expression-operations",
                      "more expression operations than the budget allows");
    }
    out->snapshot = snapshot;
    out->snapshot_len = len;
    sp_digest_one("state", snapshot, len, out->snapshot_digest);
    snprintf(out->status, sizeof out->status, "%s", st_str(t, "status"));
    out->commands = t->cmds;
    out->ncommands = t->ncmds;
    out->diagnostics = t->diags;
    out->ndiagnostics = t->ndiags;
    t->cmds = NULL;
    t->diags = NULL;
    t->ncmds = t->ndiags = 0;
    return 0;
}

static void free_outputs(sp_kernel_command *cmds, size_t ncmds, sp_kernel_diagnostic *diags,
                         size_t ndiags)
{
    for (size_t i = 0; i < ncmds; i++) {
        free(cmds[i].activation_id);
        free(cmds[i].payload);
    }
    for (size_t i = 0; i < ndiags; i++) {
        free(diags[i].node_id);
        free(diags[i].details);
    }
    free(cmds);
    free(diags);
}

int sp_kernel_transition(const sp_kernel_request *req, sp_kernel_decision *out,
                         sp_kernel_failure *fail)
{
    memset(out, 0, sizeof *out);
    memset(fail, 0, sizeof *fail);
    kfail f = {fail, false};
    kevent ev;
    memset(&ev, 0, sizeof ev);
    sp_workflow *owned = NULL;
    const sp_workflow *wf = req->loaded_graph;
    sp_kernel_state *box = req->state; /* ours from here on (kernel.h) */
    kt t = {0};
    int rc = -1;
    if (check_identity(req, &f))
        goto done;
    if (!wf && !(wf = owned = sp_workflow_load(req->graph, req->graph_len, fail, &f.oom)))
        goto done;
    json_t *state = NULL;
    if (check_event_and_state(req, box, wf, &ev, &state, &f)) {
        json_decref(state);
        goto done;
    }
    if (req->want_state && !box && !(box = calloc(1, sizeof *box))) {
        json_decref(state);
        kfail_oom(&f);
        goto done;
    }
    t = (kt){.wf = wf, .req = req, .ev = &ev, .f = &f, .state = state,
             .memo = box ? &box->memo : NULL};
    rc = bookkeeping(&t);
    if (rc == 0)
        rc = dispatch(&t);
    if (rc == 0 && t.oom)
        rc = kfail_oom(&f);
    if (rc == 0)
        rc = finish(&t, out);
    if (rc == 0 && req->want_state)
        keep_state(&t, &box, out);
done:
    free_outputs(t.cmds, t.ncmds, t.diags, t.ndiags);
    json_decref(t.state);
    sp_kernel_state_free(box);
    kevent_free(&ev);
    sp_workflow_free(owned);
    if (rc == 0)
        return SP_KERNEL_DECISION;
    memset(out, 0, sizeof *out);
    if (f.oom) {
        fail->kind = "resource-limit";
        snprintf(fail->code, sizeof fail->code, "kernel.out-of-memory");
        return SP_KERNEL_OOM;
    }
    return SP_KERNEL_FAILURE;
}

void sp_kernel_decision_free(sp_kernel_decision *d)
{
    if (!d)
        return;
    free_outputs(d->commands, d->ncommands, d->diagnostics, d->ndiagnostics);
    free(d->snapshot);
    sp_kernel_state_free(d->state);
    memset(d, 0, sizeof *d);
}

static void count_part(sp_hasher *h, uint64_t n)
{
    unsigned char be[8];
    for (int k = 7; k >= 0; k--, n >>= 8)
        be[k] = (unsigned char)(n & 0xFF);
    sp_hasher_part(h, be, 8);
}

static void text_part(sp_hasher *h, const char *s) { sp_hasher_part(h, s, strlen(s)); }

void sp_kernel_decision_digest(const sp_kernel_decision *d, char out[SP_DIGEST_TEXT_LEN + 1])
{
    static const unsigned char one = 1, zero = 0;
    sp_hasher h;
    sp_hasher_begin(&h, "decision");
    text_part(&h, d->snapshot_digest);
    count_part(&h, d->ncommands);
    for (size_t c = 0; c < d->ncommands; c++) {
        text_part(&h, d->commands[c].command_id);
        text_part(&h, d->commands[c].activation_id);
        text_part(&h, d->commands[c].kind);
        sp_hasher_part(&h, d->commands[c].payload, d->commands[c].payload_len);
    }
    count_part(&h, d->ndiagnostics);
    for (size_t k = 0; k < d->ndiagnostics; k++) {
        const sp_kernel_diagnostic *g = &d->diagnostics[k];
        text_part(&h, g->code);
        text_part(&h, g->node_id ? g->node_id : "");
        sp_hasher_part(&h, g->node_id ? &one : &zero, 1);
        sp_hasher_part(&h, g->details, g->details_len);
    }
    sp_hasher_end_text(&h, out);
}

const sp_kernel_descriptor *sp_kernel_describe(void)
{
    static const sp_kernel_descriptor d = {SP_ABI_VERSION, SP_SEMANTICS_VERSION,
                                           SP_WORKFLOW_FORMAT, SP_CODEC_VERSION};
    return &d;
}
