/*
 * sse.c - server-sent events for a run's page (sse.h): `event: run` with
 * {revision, status, quarantined} whenever one of them changes (looked at
 * every UI_SSE_POLL_MS under the db lock, released while waiting), a
 * comment line every UI_SSE_PING_S, and the end of the stream after
 * UI_SSE_LIFETIME_S or when the server stops (the page's EventSource
 * reconnects by itself).
 *
 * Runs on its connection's own thread (thread per connection), so waiting
 * here holds no other request up.
 *
 * Must never hold the db lock while it sleeps, keep more than UI_SSE_MAX
 * streams, or send more than a run's revision and status.
 */
#include "ui/sse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "ui/answer.h"
#include "ui/html.h"

typedef struct sse_state {
    ui_ctx *ctx;
    char run_id[UI_RUN_ID_MAX + 1];
    char client_revision[24]; /* what the page shows ("" unknown) */
    char last[96];            /* revision|status|quarantined last sent */
    bool first;
    time_t opened, last_sent;
    char pending[256];
    size_t pending_len, pending_off;
} sse_state;

static time_t now_s(void) { return (time_t)(sp_mono_ms() / 1000u); }

static void queue(sse_state *st, const char *text)
{
    st->pending_len = (size_t)snprintf(st->pending, sizeof st->pending, "%s", text);
    if (st->pending_len >= sizeof st->pending)
        st->pending_len = sizeof st->pending - 1;
    st->pending_off = 0;
    st->last_sent = now_s();
}

/* The run's state as the stream reports it; -1 when it cannot be read. */
static int look(sse_state *st, char *key, size_t keylen, char *data, size_t datalen)
{
    spore_error e = {0};
    sp_error err = {0};
    char *text = NULL;
    spore_db *db = ui_db_lock(st->ctx);
    int rc = spore_status(db, st->run_id, &text, &e);
    ui_db_unlock(st->ctx);
    json_t *s = ui_api_answer(rc, text, &e, &err);
    if (!s)
        return -1;
    const char *rev = json_string_value(json_object_get(s, "revision"));
    const char *status = json_string_value(json_object_get(s, "status"));
    bool q = json_is_object(json_object_get(s, "quarantine"));
    snprintf(key, keylen, "%s|%s|%d", rev ? rev : "", status ? status : "", q);
    snprintf(data, datalen, "{\"revision\":\"%s\",\"status\":\"%s\",\"quarantined\":%s}",
             rev ? rev : "", status ? status : "", q ? "true" : "false");
    if (st->first && strcmp(st->client_revision, rev ? rev : "") == 0)
        snprintf(st->last, sizeof st->last, "%s", key); /* the page is up to date */
    st->first = false;
    json_decref(s);
    return 0;
}

/* Fill st->pending with the next thing to send; false at the stream's end. */
static bool next_message(sse_state *st)
{
    while (!atomic_load(&st->ctx->stopping) && now_s() - st->opened < UI_SSE_LIFETIME_S) {
        char key[96], data[160], msg[256];
        if (look(st, key, sizeof key, data, sizeof data))
            return false; /* the run is gone or the store fails: the page reconnects */
        if (strcmp(key, st->last) != 0) {
            snprintf(st->last, sizeof st->last, "%s", key);
            snprintf(msg, sizeof msg, "event: run\ndata: %s\n\n", data);
            queue(st, msg);
            return true;
        }
        if (now_s() - st->last_sent >= UI_SSE_PING_S) {
            queue(st, ": ping\n\n");
            return true;
        }
        sp_sleep_ms(UI_SSE_POLL_MS);
    }
    return false;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    sse_state *st = cls;
    if (st->pending_off == st->pending_len && !next_message(st))
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = st->pending_len - st->pending_off;
    if (n > max)
        n = max;
    memcpy(buf, st->pending + st->pending_off, n);
    st->pending_off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    sse_state *st = cls;
    atomic_fetch_sub(&st->ctx->sse_open, 1);
    free(st);
}

static sse_state *new_state(ui_request *r)
{
    sse_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->ctx = r->ctx;
    st->first = true;
    st->opened = st->last_sent = now_s();
    snprintf(st->run_id, sizeof st->run_id, "%s", r->run_id);
    const char *rev = ui_query(r, "revision");
    if (rev && strlen(rev) < sizeof st->client_revision)
        snprintf(st->client_revision, sizeof st->client_revision, "%s", rev);
    queue(st, "retry: 2000\n\n");
    return st;
}

struct MHD_Response *ui_sse_open(ui_request *r, unsigned *status, sp_error *err)
{
    char key[96], data[160];
    if (atomic_fetch_add(&r->ctx->sse_open, 1) >= UI_SSE_MAX) {
        atomic_fetch_sub(&r->ctx->sse_open, 1);
        *status = 503;
        sp_fail(err, "ui.too-many-streams", "at most %d live pages at a time", UI_SSE_MAX);
        return NULL;
    }
    sse_state *st = new_state(r);
    struct MHD_Response *resp = NULL;
    if (st && look(st, key, sizeof key, data, sizeof data) == 0) {
        st->first = true; /* look() again in the stream: compare with the page there */
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, sse_read, st, sse_free);
    }
    if (resp) {
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        return resp;
    }
    *status = st ? 404 : 500;
    if (!st)
        sp_oom(err);
    else
        sp_fail(err, "run.not-found", "no run %s", r->run_id);
    free(st);
    atomic_fetch_sub(&r->ctx->sse_open, 1);
    return NULL;
}
