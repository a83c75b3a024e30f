/*
 * events.c - decoding the event payloads (kernel.md §7.5; 0.2 adds
 * timer.fired and run.cancel, docs/format-0.2.md), request check 4. The payload must be canonical bytes and decode as the kind's type:
 * unknown members, missing required members, wrong types and bad enums are
 * all event.invalid. Must never fill in a default for a required member.
 */
#include <string.h>

#include "json/json.h"
#include "kernel/internal.h"

#define CANCEL_REASON_MAX 1024
#define CANCEL_REQUESTER_MAX 128

static int invalid(kfail *f, const char *what)
{
    return kfail_set(f, "invalid-input", "event.invalid", "%s", what);
}

static const json_t *nonnull(const json_t *v) { return v && !json_is_null(v) ? v : NULL; }

static int decode_started(kevent *ev, kfail *f)
{
    static const char *const names[] = {"tenant", "runId", "input", NULL};
    json_t *p = ev->payload;
    if (!kjson_members_exactly(p, names))
        return invalid(f, "run.started is {tenant, runId, input}");
    ev->tenant = json_object_get(p, "tenant");
    ev->run_id = json_object_get(p, "runId");
    ev->input = json_object_get(p, "input");
    if (!json_is_string(ev->tenant) || !json_is_string(ev->run_id))
        return invalid(f, "run.started tenant and runId must be strings");
    return 0;
}

static int decode_error_member(kevent *ev, kfail *f)
{
    const json_t *error = nonnull(json_object_get(ev->payload, "error"));
    if (!error)
        return 0;
    bool oom;
    ev->error = kjson_error_info(error, &oom);
    if (oom)
        return kfail_oom(f);
    return ev->error ? 0 : invalid(f, "error must be {code, message, nodeId?, details?}");
}

static int decode_result(kevent *ev, kfail *f)
{
    static const char *const names[] = {"invocationId", "attemptId", "attempt", "status", "outcome",
                                        "output", "error", "retryable", NULL};
    static const char *const required[] = {"invocationId", "attemptId", "attempt", "status", NULL};
    json_t *p = ev->payload;
    if (!kjson_members_within(p, names))
        return invalid(f, "activity.result has an unknown member");
    for (const char *const *r = required; *r; r++)
        if (!json_object_get(p, *r))
            return invalid(f, "activity.result misses a required member");
    ev->invocation_id = json_object_get(p, "invocationId");
    const json_t *status = json_object_get(p, "status");
    if (!json_is_string(ev->invocation_id) || !json_is_string(json_object_get(p, "attemptId")) ||
        !kjson_u32(json_object_get(p, "attempt"), &ev->attempt))
        return invalid(f, "activity.result invocationId, attemptId, attempt have the wrong type");
    if (kjson_str_is(status, "success"))
        ev->status = RS_SUCCESS;
    else if (kjson_str_is(status, "failure"))
        ev->status = RS_FAILURE;
    else if (kjson_str_is(status, "unknown"))
        ev->status = RS_UNKNOWN;
    else if (kjson_str_is(status, "expired"))
        ev->status = RS_EXPIRED;
    else
        return invalid(f, "activity.result status must be success, failure, unknown or expired");
    ev->outcome = nonnull(json_object_get(p, "outcome"));
    if (ev->outcome && !json_is_string(ev->outcome))
        return invalid(f, "activity.result outcome must be a string or null");
    ev->output = json_object_get(p, "output");
    if (!ev->output)
        ev->output = json_null();
    const json_t *retryable = json_object_get(p, "retryable");
    if (retryable && !json_is_boolean(retryable))
        return invalid(f, "activity.result retryable must be a boolean");
    ev->retryable = !retryable || json_is_true(retryable);
    return decode_error_member(ev, f);
}

static int decode_signal(kevent *ev, kfail *f)
{
    static const char *const names[] = {"name", "outcome", "data", NULL};
    json_t *p = ev->payload;
    if (!kjson_members_within(p, names) || !json_is_string(json_object_get(p, "name")))
        return invalid(f, "signal.received is {name, outcome?, data?}");
    ev->name = json_object_get(p, "name");
    ev->outcome = nonnull(json_object_get(p, "outcome"));
    if (ev->outcome && !json_is_string(ev->outcome))
        return invalid(f, "signal.received outcome must be a string or null");
    ev->data = json_object_get(p, "data");
    if (!ev->data)
        ev->data = json_null();
    return 0;
}

static int decode_resolution(kevent *ev, const json_t *r, kfail *f)
{
    static const char *const complete[] = {"action", "outcome", "output", NULL};
    static const char *const retry[] = {"action", NULL};
    static const char *const fail[] = {"action", "error", NULL};
    const json_t *action = json_object_get(r, "action");
    if (kjson_str_is(action, "complete")) {
        ev->resolution = RES_COMPLETE;
        ev->outcome = json_object_get(r, "outcome");
        ev->output = json_object_get(r, "output");
        if (!ev->output)
            ev->output = json_null();
        if (!kjson_members_within(r, complete) || !json_is_string(ev->outcome))
            return invalid(f, "a complete resolution is {action, outcome, output?}");
        return 0;
    }
    if (kjson_str_is(action, "retry")) {
        ev->resolution = RES_RETRY;
        return kjson_members_within(r, retry) ? 0 : invalid(f, "a retry resolution is {action}");
    }
    if (kjson_str_is(action, "fail")) {
        ev->resolution = RES_FAIL;
        if (!kjson_members_exactly(r, fail))
            return invalid(f, "a fail resolution is {action, error}");
        bool oom;
        ev->error = kjson_error_info(json_object_get(r, "error"), &oom);
        if (oom)
            return kfail_oom(f);
        return ev->error ? 0 : invalid(f, "error must be {code, message, nodeId?, details?}");
    }
    return invalid(f, "resolution action must be complete, retry or fail");
}

static int decode_resolved(kevent *ev, kfail *f)
{
    static const char *const names[] = {"invocationId", "resolution", NULL};
    json_t *p = ev->payload;
    if (!kjson_members_exactly(p, names))
        return invalid(f, "invocation.resolved is {invocationId, resolution}");
    ev->invocation_id = json_object_get(p, "invocationId");
    const json_t *r = json_object_get(p, "resolution");
    if (!json_is_string(ev->invocation_id) || !json_is_object(r))
        return invalid(f, "invocation.resolved has the wrong types");
    return decode_resolution(ev, r, f);
}

static int decode_timer_fired(kevent *ev, kfail *f)
{
    static const char *const names[] = {"timerId", NULL};
    if (!kjson_members_exactly(ev->payload, names) ||
        !json_is_string(json_object_get(ev->payload, "timerId")))
        return invalid(f, "timer.fired is {timerId}");
    ev->timer_id = json_object_get(ev->payload, "timerId");
    return 0;
}

static int decode_cancel(kevent *ev, kfail *f)
{
    static const char *const names[] = {"reason", "requestedBy", NULL};
    json_t *p = ev->payload;
    if (!kjson_members_exactly(p, names))
        return invalid(f, "run.cancel is {reason, requestedBy}");
    ev->reason = json_object_get(p, "reason");
    ev->requested_by = json_object_get(p, "requestedBy");
    if (!json_is_string(ev->reason) || json_string_length(ev->reason) > CANCEL_REASON_MAX ||
        !json_is_string(ev->requested_by) ||
        json_string_length(ev->requested_by) > CANCEL_REQUESTER_MAX)
        return invalid(f, "run.cancel reason (<= 1024 bytes) and requestedBy (<= 128 bytes) are strings");
    return 0;
}

/* The payload as a value: the host's parse when it gave one, else ours. */
static json_t *payload_of(const sp_kernel_event *e, sp_error *err)
{
    if (e->payload_value)
        return json_incref((json_t *)e->payload_value); /* read, never changed */
    return sp_json_parse_canonical(e->payload, e->payload_len, err);
}

int kevent_decode(sp_semantics sem, const sp_kernel_event *e, kevent *ev, kfail *f)
{
    memset(ev, 0, sizeof *ev);
    const char *kind = e->kind ? e->kind : "";
    static const struct {
        const char *name;
        kev_kind kind;
    } kinds[] = {{"run.started", EV_RUN_STARTED},
                 {"activity.result", EV_ACTIVITY_RESULT},
                 {"signal.received", EV_SIGNAL},
                 {"invocation.resolved", EV_RESOLVED},
                 {"timer.fired", EV_TIMER_FIRED},
                 {"run.cancel", EV_RUN_CANCEL}};
    size_t known = sem == SP_SEM_02 ? 6 : 4; /* 0.1 knows the first four */
    size_t i = 0;
    while (i < known && strcmp(kind, kinds[i].name) != 0)
        i++;
    if (i == known)
        return kfail_set(f, "invalid-input", "event.unknown-kind", "unknown event kind");
    ev->kind = kinds[i].kind;
    ev->kind_name = kinds[i].name;
    sp_error err = {0};
    ev->payload = payload_of(e, &err);
    if (!ev->payload) {
        int oom = strcmp(err.code, "runtime.out-of-memory") == 0;
        kfail_set(f, "invalid-input", "event.invalid", "payload: %s: %s", err.code, err.message);
        sp_error_clear(&err);
        return oom ? kfail_oom(f) : -1;
    }
    switch (ev->kind) {
    case EV_RUN_STARTED: return decode_started(ev, f);
    case EV_ACTIVITY_RESULT: return decode_result(ev, f);
    case EV_SIGNAL: return decode_signal(ev, f);
    case EV_RESOLVED: return decode_resolved(ev, f);
    case EV_TIMER_FIRED: return decode_timer_fired(ev, f);
    case EV_RUN_CANCEL: return decode_cancel(ev, f);
    }
    return -1;
}

void kevent_free(kevent *ev)
{
    json_decref(ev->error);
    json_decref(ev->payload);
    memset(ev, 0, sizeof *ev);
}
