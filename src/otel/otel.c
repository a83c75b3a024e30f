/*
 * otel.c - the exporter (otel.h): the engine's observer pushes each note
 * into a bounded ring under a mutex; one thread takes batches out, turns
 * them into spans (span.c) and posts them (export.c); stopping flushes
 * within OTEL_BSP_EXPORT_TIMEOUT.
 *
 * What it must never do: block the engine's thread beyond copying a note
 * under the mutex (never while a request is in flight: the mutex is not
 * held then), hold more than queue_max notes, lose a span without
 * counting it, or outlive sp_otel_stop.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "otel/config.h"
#include "otel/export.h"
#include "otel/otel.h"
#include "otel/span.h"

typedef enum exporter_state {
    EXPORTER_RUNNING,  /* notes are queued and exported */
    EXPORTER_STOPPING, /* flushing what is queued, until the stop's deadline */
    EXPORTER_STOPPED,  /* the thread ended: notes are dropped (counted) */
} exporter_state;

struct sp_otel {
    otel_config cfg;
    sp_engine_observer observer;
    otel_http *http;
    pthread_t thread;
    bool started;
    /* ---- under mu ---- */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    otel_note *ring; /* queue_max notes */
    uint32_t head, count;
    exporter_state state;
    sp_otel_stats stats;
    /* ---- the thread's own ---- */
    otel_note *batch; /* batch_max notes */
    otel_parents parents;
    _Atomic uint64_t abort_at_ms; /* a stop's deadline (0: none) */
};

/* ---- the engine's side: copy and return ---- */

static otel_note *slot(sp_otel *o)
{
    if (o->state == EXPORTER_STOPPED) {
        o->stats.dropped_unsent++;
        return NULL;
    }
    if (o->count == o->cfg.queue_max) {
        o->stats.dropped_full++;
        return NULL;
    }
    otel_note *n = &o->ring[(o->head + o->count++) % o->cfg.queue_max];
    if (o->count >= o->cfg.batch_max)
        pthread_cond_signal(&o->cv);
    return n;
}

static void on_activation(void *ctx, const sp_obs_activation *a)
{
    sp_otel *o = ctx;
    pthread_mutex_lock(&o->mu);
    otel_note *n = slot(o);
    if (n) {
        n->kind = OTEL_NOTE_ACTIVATION;
        n->u.activation = *a;
    }
    pthread_mutex_unlock(&o->mu);
}

static void on_attempt(void *ctx, const sp_obs_attempt *a)
{
    sp_otel *o = ctx;
    pthread_mutex_lock(&o->mu);
    otel_note *n = slot(o);
    if (n) {
        n->kind = OTEL_NOTE_ATTEMPT;
        n->u.attempt = *a;
    }
    pthread_mutex_unlock(&o->mu);
}

static void on_run_ended(void *ctx, const sp_obs_run *r)
{
    sp_otel *o = ctx;
    pthread_mutex_lock(&o->mu);
    otel_note *n = slot(o);
    if (n) {
        n->kind = OTEL_NOTE_RUN;
        n->u.run = *r;
    }
    pthread_mutex_unlock(&o->mu);
}

static void on_lost(void *ctx, uint32_t lost)
{
    sp_otel *o = ctx;
    pthread_mutex_lock(&o->mu);
    o->stats.dropped_full += lost;
    pthread_mutex_unlock(&o->mu);
}

/* ---- the exporter thread ---- */

static struct timespec in_ms(uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (ms % 1000u) * 1000000u;
    ts.tv_sec += (time_t)(ms / 1000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* Under mu: wait for a full batch, the schedule delay or a stop; move up to
 * batch_max notes into o->batch. Returns how many (0: the thread ends). */
static uint32_t take_batch(sp_otel *o)
{
    if (o->state == EXPORTER_RUNNING && o->count < o->cfg.batch_max) {
        struct timespec until = in_ms(o->cfg.delay_ms);
        while (o->state == EXPORTER_RUNNING && o->count < o->cfg.batch_max &&
               pthread_cond_timedwait(&o->cv, &o->mu, &until) == 0) {
        }
    }
    uint32_t n = o->count < o->cfg.batch_max ? o->count : o->cfg.batch_max;
    for (uint32_t i = 0; i < n; i++)
        o->batch[i] = o->ring[(o->head + i) % o->cfg.queue_max];
    o->head = (o->head + n) % o->cfg.queue_max;
    o->count -= n;
    return n;
}

/* The batch as one request; false when it could not be made or sent. */
static bool export_batch(sp_otel *o, uint32_t n)
{
    json_t *spans = json_array();
    for (uint32_t i = 0; spans && i < n; i++) {
        json_t *span = otel_span(&o->batch[i], &o->parents);
        if (!span || json_array_append_new(spans, span)) {
            json_decref(spans);
            return false;
        }
    }
    size_t len = 0;
    char *body = spans ? otel_request(o->cfg.service, spans, &len) : NULL;
    bool ok = body && otel_http_post(o->http, body, len, o->cfg.request_ms, &o->abort_at_ms);
    free(body);
    return ok;
}

static void counted(sp_otel *o, uint32_t n, bool ok)
{
    if (ok) {
        o->stats.exported += n;
    } else {
        o->stats.dropped_failed += n;
        o->stats.exports_failed++;
    }
}

static void *exporter(void *arg)
{
    sp_otel *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        bool stopping = o->state == EXPORTER_STOPPING;
        uint64_t at = atomic_load(&o->abort_at_ms);
        if (stopping && (o->count == 0 || (at && sp_mono_ms() >= at)))
            break;
        uint32_t n = take_batch(o);
        if (!n)
            continue;
        pthread_mutex_unlock(&o->mu);
        bool ok = export_batch(o, n);
        pthread_mutex_lock(&o->mu);
        counted(o, n, ok);
    }
    o->stats.dropped_unsent += o->count; /* the stop ran out of time */
    o->count = 0;
    o->state = EXPORTER_STOPPED;
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* ---- life ---- */

static void destroy(sp_otel *o)
{
    otel_http_free(o->http);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o->ring);
    free(o->batch);
    free(o);
}

static sp_otel *create(const otel_config *cfg)
{
    sp_otel *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->cfg = *cfg;
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    atomic_init(&o->abort_at_ms, 0);
    o->ring = calloc(cfg->queue_max, sizeof *o->ring);
    o->batch = calloc(cfg->batch_max, sizeof *o->batch);
    o->http = otel_http_new(cfg);
    if (!o->ring || !o->batch || !o->http) {
        destroy(o);
        return NULL;
    }
    o->observer = (sp_engine_observer){on_activation, on_attempt, on_run_ended, on_lost, o};
    return o;
}

sp_otel *sp_otel_start(sp_otel_getenv env, sp_error *err)
{
    if (!otel_config_wanted(env)) /* off: nothing allocated */
        return NULL;
    otel_config *cfg = calloc(1, sizeof *cfg); /* ~140 KiB of header room: not the stack */
    if (!cfg) {
        sp_oom(err);
        return NULL;
    }
    otel_config_rc rc = otel_config_read(env, cfg, err);
    sp_otel *o = rc == OTEL_CONFIG_ON ? create(cfg) : NULL;
    free(cfg);
    if (rc != OTEL_CONFIG_ON)
        return NULL;
    if (!o || pthread_create(&o->thread, NULL, exporter, o) != 0) {
        if (o)
            destroy(o);
        sp_fail(err, "otel.start-failed", "the OTLP exporter could not start");
        return NULL;
    }
    o->started = true;
    return o;
}

const sp_engine_observer *sp_otel_observer(sp_otel *o) { return &o->observer; }

const char *sp_otel_endpoint(const sp_otel *o) { return o->cfg.endpoint; }

void sp_otel_stop(sp_otel *o, sp_otel_stats *stats)
{
    pthread_mutex_lock(&o->mu);
    bool join = o->started && o->state == EXPORTER_RUNNING;
    if (join) {
        o->state = EXPORTER_STOPPING;
        atomic_store(&o->abort_at_ms, sp_mono_ms() + (o->cfg.export_ms ? o->cfg.export_ms : 1));
        pthread_cond_signal(&o->cv);
    }
    pthread_mutex_unlock(&o->mu);
    if (join) {
        pthread_join(o->thread, NULL);
        o->started = false;
    }
    if (stats) {
        pthread_mutex_lock(&o->mu);
        *stats = o->stats;
        pthread_mutex_unlock(&o->mu);
        stats->dropped = stats->dropped_full + stats->dropped_failed + stats->dropped_unsent;
    }
}

void sp_otel_free(sp_otel *o)
{
    if (!o)
        return;
    sp_otel_stop(o, NULL);
    destroy(o);
}
