/*
 * browse.c - the read side of the public API for viewers (the web view of
 * `spore ui`, authoring.md §4): one page of the tenant's runs (newest
 * first, filtered, searched), a run's events page by page, its attempts
 * with their logs page by page, and the picture inputs of a run (its
 * package and snapshot). Every answer is canonical JSON text in the shapes
 * `spore list`, `spore events` and `spore logs` print with --json.
 *
 * The runs list itself is sp_browse_runs (browse.h), which `spore list`
 * prints too.
 *
 * Must never change a run, hand out a store type, or answer an unbounded
 * page: every list has a limit (clamped to the store's page) and says where
 * the next page starts.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "api/browse.h"
#include "api/internal.h"
#include "json/decimal.h"
#include "json/json.h"

/* ---- shared ---- */

static int key_of(spore_db *db, const char *run_id, sp_run_key *key, spore_error *err)
{
    sp_error e = {0};
    if (api_need_db(db, err))
        return -1;
    if (!run_id)
        return api_fail(err, "usage", "a run ID is required (NULL given)");
    if (sp_engine_key(db->engine, run_id, key, &e))
        return api_error(err, &e);
    return 0;
}

/* Encode `v` (taken) into *out. */
static int answer(json_t *v, char **out, spore_error *err)
{
    sp_error e = {0};
    char *text = v ? sp_json_encode_alloc(v, NULL, &e) : NULL;
    if (!v)
        sp_oom(&e);
    json_decref(v);
    if (!text)
        return api_error(err, &e);
    *out = text;
    return 0;
}

static int get_view(spore_db *db, const sp_run_key *key, sp_run_view *view, spore_error *err)
{
    sp_error e = {0};
    bool found = false;
    if (sp_store_get_run(db->store, key, view, &found, &e) != SP_STORE_OK)
        return api_error(err, &e);
    if (!found)
        return api_fail(err, "run.not-found", "no run %s in %s", key->run_id,
                        sp_store_location(db->store));
    return 0;
}

static json_t *parse_or_null(const char *text, size_t len)
{
    json_t *v = text ? sp_json_parse(text, len, NULL) : NULL;
    return v ? v : json_null();
}

/* ---- runs ---- */

typedef struct run_rows {
    sp_run_summary *items;
    size_t n, cap;
} run_rows;

static bool contains(const char *hay, const char *needle)
{
    return hay && strstr(hay, needle) != NULL;
}

static bool keep(sp_engine *e, const sp_runs_query *q, const sp_run_summary *r)
{
    bool want_quarantined = q->status && strcmp(q->status, "quarantined") == 0;
    if (want_quarantined && !r->quarantined)
        return false;
    if (q->status && *q->status && !want_quarantined && strcmp(q->status, r->status) != 0)
        return false;
    if (q->search && *q->search && !contains(r->key.run_id, q->search) &&
        !contains(r->start_key, q->search))
        return false;
    if (!q->workflow || !*q->workflow)
        return true;
    sp_error err = {0};
    const char *name = sp_engine_workflow_name(e, r->package_digest, &err);
    sp_error_clear(&err);
    return name && strcmp(name, q->workflow) == 0;
}

/* Takes the summary's allocations. */
static int add_row(run_rows *rows, sp_run_summary *r, sp_error *err)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 64;
        sp_run_summary *grown = realloc(rows->items, cap * sizeof *grown);
        if (!grown)
            return sp_oom(err);
        rows->items = grown, rows->cap = cap;
    }
    rows->items[rows->n++] = *r;
    memset(r, 0, sizeof *r);
    return 0;
}

static void rows_free(run_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++)
        free(rows->items[i].start_key);
    free(rows->items);
}

static int collect(sp_store *s, sp_engine *e, const sp_runs_query *q, run_rows *rows,
                   sp_error *err)
{
    char *cursor = NULL;
    do {
        sp_run_list page;
        if (sp_store_list_runs(s, "default", cursor, SP_STORE_PAGE_MAX, &page, err) !=
            SP_STORE_OK) {
            free(cursor);
            return -1;
        }
        free(cursor);
        cursor = page.next_cursor ? strdup(page.next_cursor) : NULL;
        int rc = page.next_cursor && !cursor ? sp_oom(err) : 0;
        for (size_t i = 0; rc == 0 && i < page.n; i++)
            if (keep(e, q, &page.runs[i]))
                rc = add_row(rows, &page.runs[i], err);
        sp_run_list_free(&page);
        if (rc) {
            free(cursor);
            return -1;
        }
    } while (cursor);
    return 0;
}

static int newest_first(const void *x, const void *y)
{
    const sp_run_summary *a = x, *b = y;
    if (a->created_at_ms != b->created_at_ms)
        return a->created_at_ms > b->created_at_ms ? -1 : 1;
    return strcmp(b->key.run_id, a->key.run_id);
}

/* The run's position ({nodeId, activationId, visit} or null). */
static json_t *position_of(sp_store *s, const sp_run_summary *r)
{
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    json_t *pos = NULL;
    if (sp_store_get_run(s, &r->key, &v, &found, &err) == SP_STORE_OK && found) {
        json_t *snap = v.snapshot ? sp_json_parse(v.snapshot, v.snapshot_len, NULL) : NULL;
        pos = json_incref(json_object_get(snap, "position"));
        json_decref(snap);
        sp_run_view_free(&v);
    }
    sp_error_clear(&err);
    return pos ? pos : json_null();
}

static json_t *row_json(sp_store *s, sp_engine *e, const sp_run_summary *r)
{
    sp_error err = {0};
    const char *workflow = sp_engine_workflow_name(e, r->package_digest, &err);
    sp_error_clear(&err);
    return json_pack("{s:s,s:s,s:s,s:o,s:b,s:s?,s:o,s:o,s:o}", "runId", r->key.run_id,
                     "startKey", r->start_key, "status", r->status, "revision",
                     sp_decimal_json(r->revision), "quarantined", r->quarantined, "workflow",
                     workflow, "createdAtMs", sp_decimal_json(r->created_at_ms), "updatedAtMs",
                     sp_decimal_json(r->updated_at_ms), "position", position_of(s, r));
}

static json_t *page_json(sp_store *s, sp_engine *e, const sp_runs_query *q, const run_rows *rows)
{
    json_t *runs = json_array();
    size_t from = q->offset < rows->n ? q->offset : rows->n;
    size_t end = q->limit && q->limit < rows->n - from ? from + q->limit : rows->n;
    for (size_t i = from; runs && i < end; i++)
        json_array_append_new(runs, row_json(s, e, &rows->items[i]));
    return json_pack("{s:o,s:o,s:o,s:o}", "runs", runs, "matched", sp_decimal_json(rows->n),
                     "offset", sp_decimal_json(q->offset), "limit", sp_decimal_json(q->limit));
}

json_t *sp_browse_runs(sp_store *s, sp_engine *e, const sp_runs_query *q, sp_error *err)
{
    run_rows rows = {0};
    if (collect(s, e, q, &rows, err)) {
        rows_free(&rows);
        return NULL;
    }
    if (rows.n > 1)
        qsort(rows.items, rows.n, sizeof *rows.items, newest_first);
    json_t *page = page_json(s, e, q, &rows);
    rows_free(&rows);
    if (!page)
        sp_oom(err);
    return page;
}

int spore_list_runs(spore_db *db, const spore_run_query *q, char **runs_json, spore_error *err)
{
    if (runs_json)
        *runs_json = NULL;
    if (api_need_db(db, err))
        return -1;
    if (!q || !runs_json)
        return api_fail(err, "usage", "spore_list_runs needs a query and an answer pointer");
    if (q->limit < 1 || q->limit > SPORE_LIST_LIMIT_MAX)
        return api_fail(err, "usage.invalid-value", "a page holds 1 to %d runs, not %zu",
                        SPORE_LIST_LIMIT_MAX, q->limit);
    sp_error e = {0};
    sp_runs_query rq = {q->status, q->workflow, q->search, q->offset, q->limit};
    json_t *page = sp_browse_runs(db->store, db->engine, &rq, &e);
    if (!page)
        return api_error(err, &e);
    return answer(page, runs_json, err);
}

/* ---- events ---- */

json_t *sp_event_json(const sp_event *e)
{
    json_t *diagnostics = e->diagnostics ? sp_json_parse(e->diagnostics, strlen(e->diagnostics), NULL)
                                         : NULL;
    if (!diagnostics) /* pending (no consuming commit), or unreadable */
        diagnostics = json_array();
    return json_pack("{s:o,s:s,s:s,s:o,s:o,s:o,s:o}", "sequence", sp_decimal_json(e->sequence),
                     "id", e->event_id, "kind", e->kind, "acceptedAtMs",
                     sp_decimal_json(e->accepted_at_ms), "consumedRevision",
                     e->consumed ? sp_decimal_json(e->consumed_revision) : json_null(),
                     "diagnostics", diagnostics, "payload", parse_or_null(e->body, e->body_len));
}

int spore_events(spore_db *db, const char *run_id, uint64_t after_sequence, size_t limit,
                 char **events_json, spore_error *err)
{
    if (events_json)
        *events_json = NULL;
    sp_run_key key;
    if (key_of(db, run_id, &key, err))
        return -1;
    if (!events_json)
        return api_fail(err, "usage", "spore_events needs an answer pointer");
    sp_error e = {0};
    sp_event_list page;
    size_t want = limit == 0 || limit > SP_STORE_PAGE_MAX ? SP_STORE_PAGE_MAX : limit;
    if (sp_store_list_events(db->store, &key, after_sequence, want, &page, &e) != SP_STORE_OK)
        return api_error(err, &e);
    json_t *events = json_array();
    for (size_t i = 0; events && i < page.n; i++)
        json_array_append_new(events, sp_event_json(&page.events[i]));
    json_t *next = page.n == want ? sp_decimal_json(page.events[page.n - 1].sequence) : json_null();
    sp_event_list_free(&page);
    return answer(json_pack("{s:s,s:o,s:o}", "runId", key.run_id, "events", events, "next", next),
                  events_json, err);
}

/* ---- attempts and their logs ---- */

json_t *sp_attempt_outcome_json(const sp_attempt_log *a, bool details)
{
    json_t *r = a->result ? json_loads(a->result, 0, NULL) : NULL;
    const json_t *error = json_object_get(r, "error");
    json_t *o = json_pack("{s:s,s:O?,s:O?,s:O?,s:s?}", "state", a->status, "status",
                          json_object_get(r, "status"), "outcome", json_object_get(r, "outcome"),
                          "code", json_object_get(error, "code"), "expireReason",
                          a->expire_reason[0] ? a->expire_reason : NULL);
    if (o && details) {
        char summary[SP_OUTCOME_TEXT_MAX];
        sp_attempt_outcome_text(o, summary, sizeof summary);
        json_object_set_new(o, "summary", json_string(summary));
        json_t *message = json_object_get(error, "message"), *output = json_object_get(r, "output");
        if (message)
            json_object_set(o, "message", message);
        if (output)
            json_object_set(o, "output", output);
    }
    json_decref(r);
    return o;
}

void sp_attempt_outcome_text(const json_t *o, char *out, size_t n)
{
    const char *state = json_string_value(json_object_get(o, "state"));
    const char *status = json_string_value(json_object_get(o, "status"));
    const char *outcome = json_string_value(json_object_get(o, "outcome"));
    const char *code = json_string_value(json_object_get(o, "code"));
    const char *reason = json_string_value(json_object_get(o, "expireReason"));
    if (status && strcmp(status, "success") == 0)
        snprintf(out, n, "succeeded (%s)", outcome ? outcome : "ok");
    else if (status)
        snprintf(out, n, "%s (%s)", strcmp(status, "failure") == 0 ? "failed" : "unknown",
                 code ? code : "?");
    else if (state && strcmp(state, "expired") == 0)
        snprintf(out, n, "expired (%s)", reason ? reason : "lease");
    else
        snprintf(out, n, "%s", state ? state : "?");
}

json_t *sp_attempt_stream_json(const char *text, size_t len, uint64_t dropped)
{
    return json_pack("{s:s%,s:o}", "text", text ? text : "", text ? len : 0, "droppedBytes",
                     sp_decimal_json(dropped));
}

static json_t *attempt_json(const sp_attempt_log *a)
{
    return json_pack("{s:s,s:I,s:s,s:s,s:o,s:o,s:o,s:o,s:o}", "nodeId", a->node_id, "attempt",
                     (json_int_t)a->attempt_number, "attemptId", a->attempt_id, "invocationId",
                     a->invocation_id, "result", sp_attempt_outcome_json(a, true), "startedAtMs",
                     sp_decimal_json(a->started_at_ms), "endedAtMs",
                     a->ended_at_ms ? sp_decimal_json(a->ended_at_ms) : json_null(), "stdout",
                     sp_attempt_stream_json(a->out, a->out_len, a->out_dropped), "stderr",
                     sp_attempt_stream_json(a->err, a->err_len, a->err_dropped));
}

int spore_attempts(spore_db *db, const char *run_id, const char *cursor, size_t limit,
                   char **attempts_json, spore_error *err)
{
    if (attempts_json)
        *attempts_json = NULL;
    sp_run_key key;
    if (key_of(db, run_id, &key, err))
        return -1;
    if (!attempts_json)
        return api_fail(err, "usage", "spore_attempts needs an answer pointer");
    sp_error e = {0};
    sp_attempt_log_list page;
    sp_attempt_log_query q = {NULL, 0, false, cursor, limit};
    if (sp_store_list_attempt_logs(db->store, &key, &q, &page, &e) != SP_STORE_OK)
        return api_error(err, &e);
    json_t *attempts = json_array();
    for (size_t i = 0; attempts && i < page.n; i++)
        json_array_append_new(attempts, attempt_json(&page.items[i]));
    size_t asked = limit == 0 || limit > SP_STORE_LOG_PAGE_MAX ? SP_STORE_LOG_PAGE_MAX : limit;
    json_t *next = page.n == asked && page.next_cursor ? json_string(page.next_cursor) : json_null();
    sp_attempt_log_list_free(&page);
    return answer(json_pack("{s:s,s:o,s:o}", "runId", key.run_id, "attempts", attempts, "next",
                            next),
                  attempts_json, err);
}

/* ---- what a picture of the run needs ---- */

static json_t *picture_json(spore_db *db, const sp_run_view *v, sp_error *e)
{
    char *bytes = NULL;
    size_t len = 0;
    bool found = false;
    if (sp_store_get_package(db->store, v->package_digest, &bytes, &len, &found, e) !=
        SP_STORE_OK)
        return NULL;
    json_t *package = found ? sp_json_parse(bytes, len, e) : NULL;
    free(bytes);
    if (!found)
        sp_fail(e, "store.corrupt", "the store has no package %s for run %s", v->package_digest,
                v->key.run_id);
    if (!package)
        return NULL;
    json_t *out = json_pack("{s:o,s:o,s:s,s:o,s:s,s:b,s:s}", "package", package, "snapshot",
                            parse_or_null(v->snapshot, v->snapshot_len), "snapshotDigest",
                            v->snapshot_digest, "appliedSequence",
                            sp_decimal_json(v->applied_sequence), "status", v->status,
                            "quarantined", v->quarantined, "packageDigest", v->package_digest);
    if (!out)
        sp_oom(e);
    return out;
}

int spore_run_picture(spore_db *db, const char *run_id, char **picture_json_out,
                      spore_error *err)
{
    if (picture_json_out)
        *picture_json_out = NULL;
    sp_run_key key;
    sp_run_view view;
    if (key_of(db, run_id, &key, err))
        return -1;
    if (!picture_json_out)
        return api_fail(err, "usage", "spore_run_picture needs an answer pointer");
    if (get_view(db, &key, &view, err))
        return -1;
    sp_error e = {0};
    json_t *p = picture_json(db, &view, &e);
    sp_run_view_free(&view);
    if (!p)
        return api_error(err, &e);
    return answer(p, picture_json_out, err);
}
