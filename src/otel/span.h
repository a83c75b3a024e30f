/*
 * span.h - the engine's notes as OTLP spans, and the JSON body of one
 * export request (OTLP/HTTP JSON encoding: ids as lowercase hex, times as
 * decimal strings of Unix nanoseconds, enums as integers, attribute values
 * as {"stringValue"} / {"intValue": "<decimal>"} objects).
 *
 * What it is for: the span model of docs/tracing.md - a root span per run,
 * a span per activation (a committed turn, parent: the run span) with the
 * consumed signal, timer, resolve or cancel as a span event, a span per
 * attempt (parent: the activation that scheduled it when this process saw
 * it, else the run span) - with the spore.* attributes.
 *
 * What it must never do: emit an id that is not the one observer.h derives
 * (the TRACEPARENT a step got must name its span), an end before the start,
 * or a parent it cannot stand behind (unknown: the run span).
 */
#ifndef SPORE_OTEL_SPAN_H
#define SPORE_OTEL_SPAN_H

#include <jansson.h>
#include <stddef.h>

#include "engine/observer.h"

typedef enum otel_note_kind { OTEL_NOTE_ACTIVATION, OTEL_NOTE_ATTEMPT, OTEL_NOTE_RUN } otel_note_kind;

/* One note of the engine, as queued. */
typedef struct otel_note {
    otel_note_kind kind;
    union {
        sp_obs_activation activation;
        sp_obs_attempt attempt;
        sp_obs_run run;
    } u;
} otel_note;

/* Which activation scheduled an invocation, as far as this process saw:
 * a ring of the last OTEL_PARENTS_MAX (the exporter thread's own). */
#define OTEL_PARENTS_MAX 1024
typedef struct otel_parents {
    struct {
        char invocation_id[SP_OBS_ATTEMPT_ID_MAX + 1];
        char span[SP_SPAN_ID_HEX + 1];
    } at[OTEL_PARENTS_MAX];
    size_t next, n;
} otel_parents;

/* The span of a note (new reference; NULL when out of memory). An
 * activation records what it scheduled in `parents`. */
json_t *otel_span(const otel_note *note, otel_parents *parents);

/* The ExportTraceServiceRequest of `spans` (taken) for service `service`:
 * malloc'd JSON text, NULL when out of memory. */
char *otel_request(const char *service, json_t *spans, size_t *len);

#endif
