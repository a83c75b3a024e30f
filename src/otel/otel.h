/*
 * otel.h - one OpenTelemetry trace per run, exported over OTLP/HTTP with
 * JSON encoding (authoring.md §6, docs/tracing.md): the engine's observer
 * (engine/observer.h) turned into spans, queued in a bounded queue and
 * posted in batches by one exporter thread.
 *
 * What it is for: the commands that run steps (worker, run, resume) start
 * it from the OpenTelemetry SDK's environment variables and hand its
 * observer to the engine; at the end they stop it (a bounded flush) and
 * report what was exported and what was dropped.
 *
 * What it must never do: block, slow or fail a step (a full queue drops the
 * span and counts it; a collector that is down or slow only costs the
 * exporter thread), keep more than OTEL_BSP_MAX_QUEUE_SIZE notes, or wait
 * longer than its bounds when stopping.
 */
#ifndef SPORE_OTEL_OTEL_H
#define SPORE_OTEL_OTEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "engine/observer.h"

typedef struct sp_otel sp_otel;

/* What an exporter did, counted in spans (requests for exports_failed). */
typedef struct sp_otel_stats {
    uint64_t exported;       /* accepted by the collector (2xx) */
    uint64_t dropped;        /* every span lost, whatever the reason: the sum below */
    uint64_t dropped_full;   /* the queue was full (or the engine could not keep a note) */
    uint64_t dropped_failed; /* their export failed (down, slow, refused) */
    uint64_t dropped_unsent; /* still queued when stopping ran out of time, or after it */
    uint64_t exports_failed; /* requests that failed */
} sp_otel_stats;

/* Look up the environment (getenv, or a test's table). */
typedef const char *(*sp_otel_getenv)(const char *name);

/* Start an exporter from the OTEL_* variables (docs/tracing.md). NULL with
 * err->code "" when tracing is off (no endpoint, OTEL_SDK_DISABLED=true,
 * OTEL_TRACES_EXPORTER=none); NULL with otel.config-invalid (a bad
 * endpoint, header or number) or otel.start-failed: the caller goes on
 * without tracing. */
sp_otel *sp_otel_start(sp_otel_getenv env, sp_error *err);

/* The observer to set in sp_engine_config (valid until sp_otel_free). */
const sp_engine_observer *sp_otel_observer(sp_otel *o);

/* Export what is queued, waiting at most OTEL_BSP_EXPORT_TIMEOUT, then end
 * the thread; later notes are dropped (counted). Idempotent. */
void sp_otel_stop(sp_otel *o, sp_otel_stats *stats);

/* Stops it when needed. After the engine using the observer is freed. */
void sp_otel_free(sp_otel *o);

/* The endpoint spans are posted to (for messages). */
const char *sp_otel_endpoint(const sp_otel *o);

#endif
