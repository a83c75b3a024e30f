/*
 * span.c - notes into OTLP spans, spans into an export request (span.h).
 *
 * What it must never do: emit an id that observer.h does not derive, an
 * end before the start, a time or 64-bit integer as a JSON number (OTLP
 * JSON writes them as decimal strings), or trust an event body beyond
 * reading a few string members from it.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otel/span.h"

/* OTLP Span.SpanKind and Status.StatusCode */
enum { SPAN_KIND_INTERNAL = 1 };
typedef enum status_code { STATUS_UNSET = 0, STATUS_OK = 1, STATUS_ERROR = 2 } status_code;

static json_t *nanos(uint64_t ns)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, ns);
    return json_string(text);
}

static void attr_str(json_t *attrs, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    json_array_append_new(attrs, json_pack("{s:s,s:{s:s}}", "key", key, "value", "stringValue",
                                           value));
}

static void attr_int(json_t *attrs, const char *key, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    json_array_append_new(attrs, json_pack("{s:s,s:{s:s}}", "key", key, "value", "intValue",
                                           text));
}

static void status(json_t *span, status_code code, const char *message)
{
    json_t *s = json_pack("{s:i}", "code", (int)code);
    if (s && message && *message && code == STATUS_ERROR)
        json_object_set_new(s, "message", json_string(message));
    json_object_set_new(span, "status", s);
}

/* The members every span has; start clamped to at most the end. */
static json_t *span_new(const char *tenant, const char *run_id, const char *span_id,
                        const char *parent, const char *name, uint64_t start_ns, uint64_t end_ns)
{
    char trace[SP_TRACE_ID_HEX + 1];
    sp_obs_trace_id(tenant, run_id, trace);
    json_t *span = json_pack("{s:s,s:s,s:s,s:i,s:o,s:o,s:[]}", "traceId", trace, "spanId", span_id,
                             "name", name, "kind", SPAN_KIND_INTERNAL, "startTimeUnixNano",
                             nanos(start_ns < end_ns ? start_ns : end_ns), "endTimeUnixNano",
                             nanos(end_ns), "attributes");
    if (span && parent)
        json_object_set_new(span, "parentSpanId", json_string(parent));
    json_t *attrs = json_object_get(span, "attributes");
    attr_str(attrs, "spore.tenant", tenant);
    attr_str(attrs, "spore.run.id", run_id);
    return span;
}

/* ---- activations ---- */

/* A consumed event worth a span event: its name and a few members. */
typedef struct event_attr {
    const char *kind, *member, *attribute;
} event_attr;

static const event_attr EVENT_ATTRS[] = {
    {"signal.received", "name", "spore.signal.name"},
    {"signal.received", "outcome", "spore.signal.outcome"},
    {"timer.fired", "timerId", "spore.timer.id"},
    {"invocation.resolved", "invocationId", "spore.invocation.id"},
    {"run.cancel", "requestedBy", "spore.cancel.requested_by"},
};

static void span_event(json_t *span, const sp_obs_activation *a)
{
    json_t *body = NULL, *attrs = json_array();
    bool known = false;
    for (size_t i = 0; i < sizeof EVENT_ATTRS / sizeof *EVENT_ATTRS; i++) {
        if (strcmp(EVENT_ATTRS[i].kind, a->event_kind) != 0)
            continue;
        known = true;
        if (!body && a->body[0])
            body = json_loads(a->body, 0, NULL);
        attr_str(attrs, EVENT_ATTRS[i].attribute,
                 json_string_value(json_object_get(body, EVENT_ATTRS[i].member)));
    }
    if (strcmp(a->event_kind, "invocation.resolved") == 0)
        attr_str(attrs, "spore.resolve.action",
                 json_string_value(json_object_get(json_object_get(body, "resolution"), "action")));
    json_decref(body);
    if (!known) {
        json_decref(attrs);
        return;
    }
    attr_int(attrs, "spore.event.sequence", a->sequence);
    json_t *events = json_pack("[{s:o,s:s,s:o}]", "timeUnixNano",
                               nanos(a->accepted_at_ms * 1000000u), "name", a->event_kind,
                               "attributes", attrs);
    json_object_set_new(span, "events", events);
}

static void remember(otel_parents *p, const char *invocation_id, const char *span)
{
    snprintf(p->at[p->next].invocation_id, sizeof p->at[0].invocation_id, "%s", invocation_id);
    snprintf(p->at[p->next].span, sizeof p->at[0].span, "%s", span);
    p->next = (p->next + 1) % OTEL_PARENTS_MAX;
    if (p->n < OTEL_PARENTS_MAX)
        p->n++;
}

/* The latest activation that scheduled the invocation, or NULL. */
static const char *scheduled_by(const otel_parents *p, const char *invocation_id)
{
    for (size_t k = 1; k <= p->n; k++) {
        size_t i = (p->next + OTEL_PARENTS_MAX - k) % OTEL_PARENTS_MAX;
        if (strcmp(p->at[i].invocation_id, invocation_id) == 0)
            return p->at[i].span;
    }
    return NULL;
}

static json_t *activation_span(const sp_obs_activation *a, otel_parents *parents)
{
    char id[SP_SPAN_ID_HEX + 1], run[SP_SPAN_ID_HEX + 1], name[96];
    sp_obs_turn_span(a->tenant, a->run_id, a->sequence, id);
    sp_obs_run_span(a->tenant, a->run_id, run);
    snprintf(name, sizeof name, "turn %s", a->event_kind);
    json_t *span = span_new(a->tenant, a->run_id, id, run, name, a->accepted_at_ms * 1000000u,
                            a->committed_ns);
    if (!span)
        return NULL;
    json_t *attrs = json_object_get(span, "attributes");
    attr_str(attrs, "spore.event.kind", a->event_kind);
    attr_int(attrs, "spore.event.sequence", a->sequence);
    attr_str(attrs, "spore.run.status", a->status);
    attr_int(attrs, "spore.scheduled", a->nscheduled);
    span_event(span, a);
    status(span, STATUS_UNSET, NULL);
    for (size_t i = 0; i < a->nscheduled; i++)
        remember(parents, a->scheduled[i], id);
    return span;
}

/* ---- attempts ---- */

static const char *end_name(sp_obs_end end)
{
    switch (end) {
    case SP_OBS_SETTLED:
        return "settled";
    case SP_OBS_HELD:
        return "held";
    case SP_OBS_LOST:
        return "lost";
    case SP_OBS_EXPIRED:
        return "expired";
    }
    return "";
}

static status_code attempt_status(const sp_obs_attempt *a)
{
    if (a->end == SP_OBS_HELD)
        return STATUS_UNSET;
    if (a->end != SP_OBS_SETTLED || a->error_code[0] || strcmp(a->outcome, "failure") == 0 ||
        strcmp(a->outcome, "unknown") == 0)
        return STATUS_ERROR;
    return STATUS_OK;
}

static json_t *attempt_span(const sp_obs_attempt *a, const otel_parents *parents)
{
    char id[SP_SPAN_ID_HEX + 1], run[SP_SPAN_ID_HEX + 1], name[SP_OBS_ID_MAX + 16];
    sp_obs_attempt_span(a->attempt_id, id);
    sp_obs_run_span(a->tenant, a->run_id, run);
    const char *parent = scheduled_by(parents, a->invocation_id);
    snprintf(name, sizeof name, "step %s", a->node_id[0] ? a->node_id : a->invocation_id);
    json_t *span = span_new(a->tenant, a->run_id, id, parent ? parent : run, name, a->start_ns,
                            a->end_ns);
    if (!span)
        return NULL;
    json_t *attrs = json_object_get(span, "attributes");
    attr_str(attrs, "spore.node.id", a->node_id);
    attr_str(attrs, "spore.action.id", a->action_id);
    attr_str(attrs, "spore.action.kind", a->kind);
    attr_str(attrs, "spore.effect", a->effect);
    if (a->attempt)
        attr_int(attrs, "spore.attempt", a->attempt);
    attr_str(attrs, "spore.attempt.id", a->attempt_id);
    attr_str(attrs, "spore.invocation.id", a->invocation_id);
    attr_str(attrs, "spore.attempt.end", end_name(a->end));
    attr_str(attrs, "spore.outcome", a->outcome);
    attr_str(attrs, a->end == SP_OBS_EXPIRED ? "spore.expired.reason" : "spore.error.code",
             a->error_code);
    status_code code = attempt_status(a);
    status(span, code, a->error_code[0] ? a->error_code : a->outcome);
    return span;
}

/* ---- runs ---- */

static json_t *run_span(const sp_obs_run *r)
{
    char id[SP_SPAN_ID_HEX + 1];
    sp_obs_run_span(r->tenant, r->run_id, id);
    uint64_t start = r->created_at_ms ? r->created_at_ms * 1000000u : r->ended_ns;
    json_t *span = span_new(r->tenant, r->run_id, id, NULL, "run", start, r->ended_ns);
    if (!span)
        return NULL;
    attr_str(json_object_get(span, "attributes"), "spore.run.status", r->status);
    bool ok = strcmp(r->status, "completed") == 0;
    status(span, ok ? STATUS_OK : STATUS_ERROR, ok ? NULL : r->status);
    return span;
}

json_t *otel_span(const otel_note *note, otel_parents *parents)
{
    switch (note->kind) {
    case OTEL_NOTE_ACTIVATION:
        return activation_span(&note->u.activation, parents);
    case OTEL_NOTE_ATTEMPT:
        return attempt_span(&note->u.attempt, parents);
    case OTEL_NOTE_RUN:
        return run_span(&note->u.run);
    }
    return NULL;
}

char *otel_request(const char *service, json_t *spans, size_t *len)
{
    json_t *req = json_pack(
        "{s:[{s:{s:[{s:s,s:{s:s}},{s:s,s:{s:s}}]},s:[{s:{s:s},s:o}]}]}", "resourceSpans",
        "resource", "attributes", "key", "service.name", "value", "stringValue", service, "key",
        "telemetry.sdk.name", "value", "stringValue", "spore", "scopeSpans", "scope", "name",
        "spore", "spans", spans);
    if (!req)
        return NULL;
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (text)
        *len = strlen(text);
    return text;
}
