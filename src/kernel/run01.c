/*
 * run01.c - semantics 0.1 (kernel.md §7.8-7.9): one strand of work, the
 * state's single `position` and `invocation`, the four events, and the
 * procedures enter, consume, fail the invocation and terminate failed, built
 * on core.c. Every golden trace of runspore 0.1 is decided here.
 *
 * Must never change a 0.1 byte: a rule that 0.2 changes (stuck steps, loop
 * limits, several strands) lives in run02.c, never behind a flag here.
 */
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/internal.h"

#define SIGNAL_BUFFER_MAX 64

static const sp_node *position_node(kt *t)
{
    const json_t *pos = kt_st(t, "position");
    return json_is_null(pos) ? NULL
                             : sp_workflow_node(t->wf, json_string_value(json_object_get(pos, "nodeId")));
}

static uint32_t position_visit(kt *t) { return k_u32(json_object_get(kt_st(t, "position"), "visit")); }

static bool is_terminal(kt *t)
{
    return kjson_str_is(kt_st(t, "status"), "completed") || kjson_str_is(kt_st(t, "status"), "failed");
}

/* Terminate failed with `error` (ownership taken). */
static int terminate_failed(kt *t, json_t *error)
{
    kt_set(t, "status", json_string("failed"));
    kt_set(t, "result", error ? json_pack("{s:o}", "error", error) : NULL);
    kt_set(t, "position", json_null());
    kt_set(t, "invocation", json_null());
    return t->oom ? k_oom(t) : 0;
}

static int enter(kt *t, const char *node_id);

/* Route a taken signal or a result: record it, then enter the target. */
static int route_to(kt *t, const sp_node *node, uint32_t visit, const json_t *outcome,
                    const json_t *output, const char *target)
{
    k_record(t, node, visit, outcome, output);
    kt_set(t, "invocation", json_null());
    if (t->oom)
        return k_oom(t);
    return enter(t, target);
}

/* Consume buffered signals at an await node and record the one taken.
 * Returns the target to continue at, or NULL to stay waiting (or on error,
 * *rc = -1). */
static const char *consume(kt *t, const sp_node *node, uint32_t visit, int *rc)
{
    json_t *outcome, *data;
    const char *target = k_consume(t, node, rc, &outcome, &data);
    if (target) {
        k_record(t, node, visit, outcome, data);
        if (t->oom)
            *rc = k_oom(t);
    }
    json_decref(outcome);
    json_decref(data);
    return *rc ? NULL : target;
}

static json_t *position(const sp_node *node, const char *activation, uint32_t visit)
{
    return json_pack("{s:s,s:s,s:I}", "nodeId", node->id, "activationId", activation, "visit",
                     (json_int_t)visit);
}

static int enter_activity(kt *t, const sp_node *node, const char *activation, uint32_t visit)
{
    json_t *input, *error, *inv;
    int rc = k_evaluate(t, node, node->mapping, NULL, -1, &input, &error);
    if (rc)
        return rc < 0 ? -1 : terminate_failed(t, error);
    rc = k_schedule(t, node, activation, input, &inv);
    json_decref(input);
    if (rc) {
        json_decref(inv);
        return -1;
    }
    kt_set(t, "position", position(node, activation, visit));
    kt_set(t, "status", json_string("running"));
    kt_set(t, "invocation", inv);
    return t->oom ? k_oom(t) : 0;
}

static int enter_complete(kt *t, const sp_node *node)
{
    json_t *value, *error;
    int rc = k_evaluate(t, node, node->mapping, NULL, -1, &value, &error);
    if (rc)
        return rc < 0 ? -1 : terminate_failed(t, error);
    kt_set(t, "status", json_string("completed"));
    kt_set(t, "result", json_pack("{s:o}", "output", value));
    kt_set(t, "position", json_null());
    kt_set(t, "invocation", json_null());
    return t->oom ? k_oom(t) : 0;
}

static int enter(kt *t, const char *node_id)
{
    for (;;) {
        const sp_node *node = sp_workflow_node(t->wf, node_id);
        if (!node) {
            if (k_microstep(t))
                return -1;
            return k_invariant(t, "route to no node");
        }
        uint32_t visit;
        char activation[160];
        json_t *limit;
        int rc = k_admit(t, node, &visit, activation, &limit);
        if (rc)
            return rc < 0 ? -1 : terminate_failed(t, limit);
        switch (node->kind) {
        case SP_NODE_ACTIVITY:
            return enter_activity(t, node, activation, visit);
        case SP_NODE_AWAIT_SIGNAL: {
            kt_set(t, "position", position(node, activation, visit));
            kt_set(t, "status", json_string("waiting"));
            kt_set(t, "invocation", json_null());
            if (t->oom)
                return k_oom(t);
            const char *target = consume(t, node, visit, &rc);
            if (rc)
                return -1;
            if (!target)
                return 0;
            node_id = target;
            continue;
        }
        case SP_NODE_COMPLETE:
            return enter_complete(t, node);
        case SP_NODE_FAIL:
            return terminate_failed(t, k_node_error(node));
        default:
            return k_invariant(t, "a 0.2 node kind under semantics 0.1");
        }
    }
}

/* Fail the invocation with `error` (ownership taken; its nodeId is replaced). */
static int fail_invocation(kt *t, const sp_node *node, json_t *error)
{
    if (!error)
        return k_oom(t);
    kt_obj_set(t, error, "nodeId", json_string(node->id));
    kt_set(t, "invocation", json_null());
    const char *target = sp_node_route(node, "failed", 6);
    if (!target)
        return terminate_failed(t, error);
    json_t *outcome = json_string("failed"), *output = json_pack("{s:o}", "error", error);
    if (!outcome || !output || t->oom) {
        json_decref(outcome);
        json_decref(output);
        return k_oom(t);
    }
    int rc = route_to(t, node, position_visit(t), outcome, output, target);
    json_decref(outcome);
    json_decref(output);
    return rc;
}

static int retry(kt *t, const sp_node *node, uint64_t delay)
{
    kt_set(t, "status", json_string("running"));
    return t->oom ? k_oom(t) : k_retry(t, node, kt_st(t, "invocation"), delay);
}

static int succeed(kt *t, const sp_node *node, const json_t *outcome, const json_t *output)
{
    const char *target =
        sp_node_route(node, json_string_value(outcome), json_string_length(outcome));
    return route_to(t, node, position_visit(t), outcome, output, target);
}

/* ---- the four events ---- */

static int on_result(kt *t)
{
    const kevent *ev = t->ev;
    json_t *inv = kt_st(t, "invocation");
    const json_t *inv_id = json_object_get(inv, "invocationId");
    bool same_id = !json_is_null(inv) && json_equal(inv_id, ev->invocation_id);
    const sp_node *node = position_node(t);
    if (!same_id || k_u32(json_object_get(inv, "attempt")) != ev->attempt ||
        !kjson_str_is(json_object_get(inv, "state"), "scheduled"))
        return k_diagnose(t, "result.stale", same_id ? node->id : NULL,
                          json_pack("{s:I,s:O}", "attempt", (json_int_t)ev->attempt,
                                    "invocationId", ev->invocation_id));
    kjudgement j;
    if (k_judge(t, node->action, ev, &j))
        return -1;
    int rc = -1;
    switch (j.verdict) {
    case KV_SUCCEED:
        rc = succeed(t, node, j.outcome, ev->output);
        break;
    case KV_RETRY:
        rc = retry(t, node, j.delay);
        break;
    case KV_FAIL:
        rc = fail_invocation(t, node, j.error);
        j.error = NULL;
        break;
    case KV_UNKNOWN:
        kt_set(t, "status", json_string("needs-intervention"));
        rc = k_unknown(t, node, inv, ev, j.status);
        break;
    }
    k_judgement_free(&j);
    return rc;
}

static int not_applicable(kt *t, const char *node_id, const char *reason)
{
    return k_diagnose(t, "resolve.not-applicable", node_id,
                      json_pack("{s:O,s:s}", "invocationId", t->ev->invocation_id, "reason", reason));
}

static int on_resolved(kt *t)
{
    const kevent *ev = t->ev;
    json_t *inv = kt_st(t, "invocation");
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
    return k_invariant(t, "unknown resolution");
}

static int on_signal(kt *t)
{
    const kevent *ev = t->ev;
    const sp_node *node = position_node(t);
    json_t *event_id = json_string(t->req->event.event_id);
    if (!event_id)
        return k_oom(t);
    int rc = 0;
    if (kjson_str_is(kt_st(t, "status"), "waiting") && kjson_str_is(ev->name, node->signal)) {
        const char *target = k_take_signal(t, node, event_id, ev->outcome, &rc);
        if (target) {
            json_t *outcome = ev->outcome ? json_incref((json_t *)ev->outcome) : json_string("received");
            rc = outcome ? route_to(t, node, position_visit(t), outcome, ev->data, target)
                         : k_oom(t);
            json_decref(outcome);
        }
    } else if (json_array_size(kt_st(t, "signals")) >= SIGNAL_BUFFER_MAX) {
        rc = k_diagnose(t, "signal.buffer-overflow", NULL, json_pack("{s:O}", "eventId", event_id));
    } else {
        char seq[SP_DECIMAL_MAX_LEN + 1];
        json_t *sig = json_pack("{s:O,s:s,s:O,s:O,s:O}", "eventId", event_id, "sequence",
                                sp_decimal_format(t->req->event.sequence, seq), "name", ev->name,
                                "outcome", ev->outcome ? ev->outcome : json_null(), "data",
                                ev->data);
        if (!sig || json_array_append_new(kt_st(t, "signals"), sig))
            rc = k_oom(t);
    }
    json_decref(event_id);
    return rc;
}

int k01_dispatch(kt *t)
{
    const kevent *ev = t->ev;
    if (ev->kind == EV_RUN_STARTED)
        return enter(t, t->wf->start);
    if (is_terminal(t))
        return k_diagnose(t, "event.ignored-terminal", NULL,
                          json_pack("{s:s}", "kind", ev->kind_name));
    switch (ev->kind) {
    case EV_ACTIVITY_RESULT: return on_result(t);
    case EV_SIGNAL: return on_signal(t);
    case EV_RESOLVED: return on_resolved(t);
    default: break;
    }
    return k_invariant(t, "a 0.2 event under semantics 0.1");
}
