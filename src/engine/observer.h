/*
 * observer.h - what the engine tells an observer (a tracer) about the work
 * it commits, and the identities of a run's trace (docs/tracing.md).
 *
 * What it is for: one interface object, like SQLite's VFS - a struct of
 * function pointers and their context - set in sp_engine_config.observer.
 * The engine calls it (from its tick thread; an expiry from a held
 * attempt's hook thread too) with plain values copied out of
 * what it committed: an activation (a committed kernel turn and the event
 * it consumed), an attempt that ended here (settled, held, lost) or was
 * expired by a sweep, a run that ended. Notes of a store batch are handed
 * over only once the batch committed (nothing of a batch that did not
 * commit happened). The same file derives the W3C trace context every
 * worker agrees on: the trace ID from the run, span IDs from the run, the
 * consumed event's sequence and the attempt ID.
 *
 * What it must never do: let an observer block, fail or slow a step (a
 * callback copies a few fields into a bounded queue and returns; it must
 * not call the engine or the store), or cost more than one NULL check per
 * call site when no observer is set.
 */
#ifndef SPORE_ENGINE_OBSERVER_H
#define SPORE_ENGINE_OBSERVER_H

#include <stddef.h>
#include <stdint.h>

#define SP_OBS_ID_MAX 128       /* tenant, run, node, action IDs (SP_STORE_ID_MAX) */
#define SP_OBS_ATTEMPT_ID_MAX 52 /* SP_ID_LEN + 16 */
#define SP_OBS_CODE_MAX 64       /* an error code (SP_CODE_MAX) */
#define SP_OBS_BODY_MAX 1024     /* an event body handed over (a larger one is left out) */
#define SP_OBS_SCHEDULED_MAX 16  /* invocations named per activation (more: left out) */

/* A committed kernel turn: the event it consumed and what it scheduled. */
typedef struct sp_obs_activation {
    char tenant[SP_OBS_ID_MAX + 1];
    char run_id[SP_OBS_ID_MAX + 1];
    uint64_t sequence;        /* the consumed event's */
    char event_kind[64];      /* run.started, activity.result, signal.received, ... */
    uint64_t accepted_at_ms;  /* when the store accepted the event */
    uint64_t committed_ns;    /* wall clock, when this engine committed the turn */
    char status[24];          /* the run's status after the turn */
    char body[SP_OBS_BODY_MAX + 1]; /* the event's canonical body ("" when larger) */
    size_t nscheduled;        /* invocations the turn scheduled or retried */
    char scheduled[SP_OBS_SCHEDULED_MAX][SP_OBS_ATTEMPT_ID_MAX + 1];
} sp_obs_activation;

/* How an attempt ended, as this engine saw it. */
typedef enum sp_obs_end {
    SP_OBS_SETTLED, /* its result was reported */
    SP_OBS_HELD,    /* an async start handed it to a holder */
    SP_OBS_LOST,    /* its lease was lost or it was cancelled: late evidence */
    SP_OBS_EXPIRED, /* a sweep expired it (lease, deadline, dead owner) */
} sp_obs_end;

typedef struct sp_obs_attempt {
    char tenant[SP_OBS_ID_MAX + 1];
    char run_id[SP_OBS_ID_MAX + 1];
    char invocation_id[SP_OBS_ATTEMPT_ID_MAX + 1];
    char attempt_id[SP_OBS_ATTEMPT_ID_MAX + 1];
    char node_id[SP_OBS_ID_MAX + 1];   /* "" when unknown (EXPIRED) */
    char action_id[SP_OBS_ID_MAX + 1]; /* "" when unknown (EXPIRED) */
    char kind[32];                     /* the action's kind ("" when unknown) */
    char effect[16];                   /* pure | read-only | idempotent | unsafe | "" */
    uint32_t attempt;                  /* the attempt number (0 when unknown) */
    sp_obs_end end;
    char outcome[SP_OBS_ID_MAX + 1];   /* success: the outcome; else the result kind */
    char error_code[SP_OBS_CODE_MAX];  /* failure, unknown, expired: the code */
    uint64_t start_ns, end_ns;         /* wall clock; EXPIRED: both the expiry */
} sp_obs_attempt;

/* A run that reached a terminal status. */
typedef struct sp_obs_run {
    char tenant[SP_OBS_ID_MAX + 1];
    char run_id[SP_OBS_ID_MAX + 1];
    char status[24];        /* completed | failed | cancelled */
    uint64_t created_at_ms; /* the run record's (0 when it could not be read) */
    uint64_t ended_ns;
} sp_obs_run;

typedef struct sp_engine_observer {
    void (*activation)(void *ctx, const sp_obs_activation *a);
    void (*attempt)(void *ctx, const sp_obs_attempt *a);
    void (*run_ended)(void *ctx, const sp_obs_run *r);
    /* Notes the engine could not keep for its batch (out of memory, over
     * its bound): the observer counts them as dropped. */
    void (*lost)(void *ctx, uint32_t n);
    void *ctx;
} sp_engine_observer;

/* ---- the trace's identities (W3C trace context, lowercase hex) ----
 * Every part is framed by the digest module: hash(tag, parts). */
#define SP_TRACE_ID_HEX 32
#define SP_SPAN_ID_HEX 16

/* The run's trace ID: hash("trace", tenant, runId), first 16 bytes. */
void sp_obs_trace_id(const char *tenant, const char *run_id, char out[SP_TRACE_ID_HEX + 1]);
/* The run's root span: hash("span.run", tenant, runId), first 8 bytes. */
void sp_obs_run_span(const char *tenant, const char *run_id, char out[SP_SPAN_ID_HEX + 1]);
/* An activation's span: hash("span.turn", tenant, runId, decimal sequence). */
void sp_obs_turn_span(const char *tenant, const char *run_id, uint64_t sequence,
                      char out[SP_SPAN_ID_HEX + 1]);
/* An attempt's span: hash("span", attemptId), first 8 bytes - the span of
 * the TRACEPARENT the step is given. */
void sp_obs_attempt_span(const char *attempt_id, char out[SP_SPAN_ID_HEX + 1]);
/* "00-<trace>-<attempt span>-01" (56 characters + NUL). */
void sp_obs_traceparent(const char *tenant, const char *run_id, const char *attempt_id,
                        char *out, size_t n);

#endif
