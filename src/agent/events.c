/*
 * events.c - first 25 / last 25 events, redacted then cut (see events.h).
 * Never cuts before redacting, never keeps more than 25 raw lines.
 */
#include "agent/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "json/json.h"

void sp_agent_events_init(sp_agent_events *e, const sp_redactor *r, const char *node_id,
                          uint32_t attempt, const char *step_id, sp_agent_event_sink sink,
                          void *ctx)
{
    memset(e, 0, sizeof *e);
    e->redactor = r;
    snprintf(e->node_id, sizeof e->node_id, "%s", node_id ? node_id : "");
    e->attempt = attempt;
    snprintf(e->step_id, sizeof e->step_id, "%s", step_id ? step_id : "");
    e->sink = sink;
    e->ctx = ctx;
}

void sp_agent_events_free(sp_agent_events *e)
{
    for (size_t i = 0; i < SP_AGENT_EVENTS_TAIL; i++)
        free(e->ring[i]);
    sp_jt_free(&e->tape);
    memset(e, 0, sizeof *e);
}

/* Redact (exact and patterns), then cut to the text bound. */
static json_t *text_json(const sp_agent_events *e, const char *s, size_t len)
{
    size_t n;
    char *red = sp_redact(e->redactor, s, len, SP_REDACT_PATTERNS, &n);
    if (!red)
        return NULL;
    size_t keep = sp_utf8_cut(red, n, SP_AGENT_EVENT_TEXT_MAX);
    json_t *v = json_stringn_nocheck(red, keep);
    free(red);
    return v;
}

static json_t *string_member(const sp_agent_events *e, const sp_jt *t, size_t i)
{
    sp_buf b = SP_BUF_INIT;
    sp_jt_str_decode(t, i, &b);
    json_t *v = sp_buf_ok(&b) ? text_json(e, b.data ? b.data : "", b.len) : NULL;
    sp_buf_free(&b);
    return v;
}

static json_t *value_text(const sp_agent_events *e, const sp_jt *t, size_t i)
{
    sp_buf b = SP_BUF_INIT;
    sp_jt_dump(t, i, &b, (size_t)-1);
    json_t *v = sp_buf_ok(&b) ? text_json(e, b.data ? b.data : "", b.len) : NULL;
    sp_buf_free(&b);
    return v;
}

static bool put(json_t *o, const char *name, json_t *v)
{
    return v && json_object_set_new(o, name, v) == 0;
}

static json_t *data_json(const sp_agent_events *e, const sp_jt *t, size_t data)
{
    json_t *o = json_object();
    bool ok = o != NULL;
    for (size_t k = sp_jt_first(t, data); ok && k; k = sp_jt_next(t, data, k)) {
        sp_buf name = SP_BUF_INIT;
        sp_jt_str_decode(t, k, &name);
        sp_buf_append(&name, "", 0);
        const char *key = name.data ? name.data : "";
        size_t v = k + 1;
        uint64_t n;
        json_t *val;
        if (strcmp(key, "input") == 0 || strcmp(key, "output") == 0)
            val = value_text(e, t, v);
        else if (sp_jt_at(t, v)->type == SP_JT_STRING)
            val = string_member(e, t, v);
        else if (strcmp(key, "cost_usd") == 0)
            val = value_text(e, t, v);
        else if (sp_jt_uint53(t, v, &n))
            val = json_integer((json_int_t)n);
        else
            val = value_text(e, t, v);
        ok = sp_buf_ok(&name) && put(o, key, val);
        if (!ok && val && !sp_buf_ok(&name))
            json_decref(val);
        sp_buf_free(&name);
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *header(const sp_agent_events *e)
{
    return json_pack("{s:s,s:I,s:s}", "nodeId", e->node_id, "attempt", (json_int_t)e->attempt,
                     "stepId", e->step_id);
}

char *sp_agent_event_render(const sp_agent_events *e, const sp_jt *t, size_t record, size_t *len)
{
    json_t *o = header(e);
    uint64_t seq = 0;
    sp_jt_uint53(t, sp_jt_get(t, record, "seq"), &seq);
    bool ok = o && put(o, "seq", json_integer((json_int_t)seq)) &&
              put(o, "ts", string_member(e, t, sp_jt_get(t, record, "ts"))) &&
              put(o, "kind", string_member(e, t, sp_jt_get(t, record, "kind"))) &&
              put(o, "data", data_json(e, t, sp_jt_get(t, record, "data")));
    char *text = ok ? sp_json_encode_alloc(o, len, NULL) : NULL;
    json_decref(o);
    return text;
}

static void emit(sp_agent_events *e, char *json, size_t len)
{
    if (json) {
        e->kept++;
        if (e->sink)
            e->sink(e->ctx, json, len);
        free(json);
    }
}

void sp_agent_events_add(sp_agent_events *e, const sp_jt *tape, size_t record, const char *line,
                         size_t len)
{
    e->count++;
    if (e->count <= SP_AGENT_EVENTS_HEAD) {
        size_t n = 0;
        char *json = sp_agent_event_render(e, tape, record, &n);
        emit(e, json, n);
        return;
    }
    size_t slot = (size_t)((e->count - SP_AGENT_EVENTS_HEAD - 1) % SP_AGENT_EVENTS_TAIL);
    char *copy = realloc(e->ring[slot], len ? len : 1);
    if (copy) {
        memcpy(copy, line, len);
        e->ring[slot] = copy;
        e->ring_len[slot] = len;
    } else {
        free(e->ring[slot]);
        e->ring[slot] = NULL;
    }
    if (e->ring_used < SP_AGENT_EVENTS_TAIL)
        e->ring_used++;
    if (e->sink)
        e->sink(e->ctx, NULL, 0);
}

void sp_agent_events_flush(sp_agent_events *e)
{
    uint64_t tail = e->count > SP_AGENT_EVENTS_HEAD ? e->count - SP_AGENT_EVENTS_HEAD : 0;
    size_t used = e->ring_used;
    /* the oldest kept tail event sits after the newest one, ring-wise */
    size_t first = tail > SP_AGENT_EVENTS_TAIL ? (size_t)(tail % SP_AGENT_EVENTS_TAIL) : 0;
    for (size_t i = 0; i < used; i++) {
        size_t slot = (first + i) % SP_AGENT_EVENTS_TAIL;
        if (!e->ring[slot] || !sp_jt_parse(&e->tape, e->ring[slot], e->ring_len[slot]))
            continue;
        size_t n = 0;
        char *json = sp_agent_event_render(e, &e->tape, 0, &n);
        emit(e, json, n);
        free(e->ring[slot]);
        e->ring[slot] = NULL;
    }
    e->ring_used = 0;
    json_t *summary = header(e);
    if (summary && !json_object_set_new(summary, "events", json_integer((json_int_t)e->count)) &&
        !json_object_set_new(summary, "kept", json_integer((json_int_t)e->kept))) {
        size_t n = 0;
        char *text = sp_json_encode_alloc(summary, &n, NULL);
        if (text && e->sink)
            e->sink(e->ctx, text, n);
        free(text);
    }
    json_decref(summary);
}
