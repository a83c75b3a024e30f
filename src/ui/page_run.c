/*
 * page_run.c - a run's page (authoring.md §4): its status and position,
 * the graph coloured by its state (picture.c) inside the part that the
 * page's script refreshes when the live stream says the run moved, the
 * run's input and result, each step's attempts (outcome, duration, error,
 * output, stdout and stderr as the store kept them: bounded and redacted),
 * the latest events with their times and diagnostics, and the forms of the
 * actions, each with this session's CSRF token.
 *
 * Must never change a run, show an unbounded text (limits.h), or put a
 * value on the page without escaping it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "ui/answer.h"
#include "ui/html.h"
#include "ui/internal.h"

typedef struct run_data {
    json_t *status, *picture, *events, *first_event, *attempts;
    bool more_attempts;
} run_data;

static void data_free(run_data *d)
{
    json_decref(d->status);
    json_decref(d->picture);
    json_decref(d->events);
    json_decref(d->first_event);
    json_decref(d->attempts);
}

/* ---- reading (under the db lock) ---- */

static json_t *read_attempts(spore_db *db, const char *run_id, bool *more, sp_error *err)
{
    json_t *all = json_array();
    char *cursor = NULL;
    while (all && json_array_size(all) < UI_ATTEMPTS_SHOWN) {
        spore_error e = {0};
        char *text = NULL;
        int rc = spore_attempts(db, run_id, cursor, 0, &text, &e);
        free(cursor);
        cursor = NULL;
        json_t *page = ui_api_answer(rc, text, &e, err);
        if (!page)
            return json_decref(all), NULL;
        json_array_extend(all, json_object_get(page, "attempts"));
        const char *next = json_string_value(json_object_get(page, "next"));
        cursor = next ? strdup(next) : NULL;
        json_decref(page);
        if (!cursor)
            break;
    }
    *more = cursor != NULL;
    free(cursor);
    return all;
}

static json_t *read_events(spore_db *db, const char *run_id, uint64_t after, size_t limit,
                           sp_error *err)
{
    spore_error e = {0};
    char *text = NULL;
    int rc = spore_events(db, run_id, after, limit, &text, &e);
    return ui_api_answer(rc, text, &e, err);
}

static int read_run(spore_db *db, const char *run_id, run_data *d, sp_error *err)
{
    spore_error e = {0};
    char *text = NULL;
    int rc = spore_status(db, run_id, &text, &e);
    if (!(d->status = ui_api_answer(rc, text, &e, err)))
        return -1;
    rc = spore_run_picture(db, run_id, &text, &e);
    if (!(d->picture = ui_api_answer(rc, text, &e, err)))
        return -1;
    uint64_t applied = ui_decimal(d->picture, "appliedSequence");
    uint64_t from = applied > UI_EVENTS_SHOWN ? applied - UI_EVENTS_SHOWN : 0;
    if (!(d->events = read_events(db, run_id, from, 0, err)) ||
        !(d->first_event = read_events(db, run_id, 0, 1, err)))
        return -1;
    d->attempts = read_attempts(db, run_id, &d->more_attempts, err);
    return d->attempts ? 0 : -1;
}

/* ---- the summary ---- */

static void dt(sp_buf *b, const char *term, const char *value, const char *id)
{
    ui_raw(b, "<dt>");
    ui_esc(b, term);
    ui_raw(b, "</dt><dd");
    if (id) {
        ui_raw(b, " id=\"");
        ui_esc(b, id);
        ui_raw(b, "\"");
    }
    ui_raw(b, ">");
    ui_esc(b, value ? value : "-");
    ui_raw(b, "</dd>");
}

static const char *str(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    return json_string_value(b ? json_object_get(v, b) : v);
}

static void summary(sp_buf *b, const run_data *d)
{
    const json_t *s = d->status;
    const char *status = str(s, "status", NULL);
    ui_raw(b, "<div class=\"summary\"><span id=\"run-status\" class=\"status big s-");
    ui_esc(b, status);
    ui_raw(b, "\">");
    ui_esc(b, status);
    ui_raw(b, "</span><dl>");
    dt(b, "workflow", str(d->picture, "package", "name"), NULL);
    dt(b, "revision", str(s, "revision", NULL), "run-revision");
    dt(b, "start key", str(s, "startKey", NULL), NULL);
    dt(b, "at node", str(s, "position", "nodeId"), "run-position");
    char when[40];
    const json_t *first = json_array_get(json_object_get(d->first_event, "events"), 0);
    ui_time_text(ui_decimal(first, "acceptedAtMs"), when, sizeof when);
    dt(b, "started", when, NULL);
    const json_t *inv = json_object_get(s, "invocation");
    if (json_is_object(inv)) {
        char text[300];
        snprintf(text, sizeof text, "%s (%s, attempt %lld, %s)", str(inv, "invocationId", NULL),
                 str(inv, "nodeId", NULL) ? str(inv, "nodeId", NULL) : "?",
                 (long long)json_integer_value(json_object_get(inv, "attempt")),
                 str(inv, "state", NULL) ? str(inv, "state", NULL) : "?");
        dt(b, "invocation", text, "run-invocation");
    }
    const json_t *q = json_object_get(s, "quarantine");
    if (json_is_object(q)) {
        char text[600];
        snprintf(text, sizeof text, "%s: %s", str(q, "code", NULL), str(q, "details", NULL));
        dt(b, "quarantine", text, "run-quarantine");
    }
    ui_raw(b, "</dl></div>\n");
}

/* ---- input, result ---- */

static void io(sp_buf *b, const run_data *d)
{
    const json_t *first = json_array_get(json_object_get(d->first_event, "events"), 0);
    ui_raw(b, "<div class=\"io\"><section><h2>Input</h2>");
    ui_json_block(b, json_object_get(json_object_get(first, "payload"), "input"), UI_JSON_SHOWN);
    ui_raw(b, "</section><section><h2>Result</h2><div id=\"run-result\">");
    ui_json_block(b, json_object_get(d->status, "result"), UI_JSON_SHOWN);
    ui_raw(b, "</div></section></div>\n");
}

/* ---- attempts ---- */


static void stream(sp_buf *b, const json_t *a, const char *name)
{
    const json_t *s = json_object_get(a, name);
    uint64_t dropped = ui_decimal(s, "droppedBytes");
    const char *text = str(s, "text", NULL);
    if ((!text || !*text) && !dropped)
        return;
    sp_buf_printf(b, "<h4>%s</h4>", name);
    if (dropped)
        sp_buf_printf(b, "<p class=\"note\">\xe2\x80\xa6 %llu earlier bytes were not kept</p>",
                      (unsigned long long)dropped);
    ui_text_tail(b, text, UI_LOG_SHOWN);
}

static void attempt_row(sp_buf *b, const json_t *a)
{
    const json_t *res = json_object_get(a, "result");
    char started[40], took[40] = "-";
    const char *outcome = str(res, "summary", NULL); /* spore_attempts(): as spore logs says it */
    uint64_t t0 = ui_decimal(a, "startedAtMs"), t1 = ui_decimal(a, "endedAtMs");
    ui_time_text(t0, started, sizeof started);
    if (t1 >= t0 && t1)
        snprintf(took, sizeof took, "%llu ms", (unsigned long long)(t1 - t0));
    ui_raw(b, "<tr><td>");
    ui_esc(b, str(a, "nodeId", NULL));
    sp_buf_printf(b, "</td><td>%lld</td><td class=\"outcome\">",
                  (long long)json_integer_value(json_object_get(a, "attempt")));
    ui_esc(b, outcome ? outcome : "?");
    ui_raw(b, "</td><td>");
    ui_esc(b, started);
    ui_raw(b, "</td><td>");
    ui_esc(b, took);
    ui_raw(b, "</td><td>");
    ui_esc(b, str(res, "message", NULL));
    ui_raw(b, "</td></tr>\n<tr class=\"detail\"><td colspan=\"6\"><details><summary>output and "
              "logs</summary><h4>output</h4>");
    ui_json_block(b, json_object_get(res, "output"), UI_JSON_SHOWN);
    stream(b, a, "stdout");
    stream(b, a, "stderr");
    ui_raw(b, "</details></td></tr>\n");
}

static void attempts(sp_buf *b, const run_data *d)
{
    ui_raw(b, "<section><h2>Attempts</h2>");
    if (json_array_size(d->attempts) == 0) {
        ui_raw(b, "<p class=\"empty\">no attempts yet</p></section>\n");
        return;
    }
    ui_raw(b, "<table class=\"attempts\"><thead><tr><th>node</th><th>#</th><th>outcome</th>"
              "<th>started</th><th>took</th><th>error</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < json_array_size(d->attempts); i++)
        attempt_row(b, json_array_get(d->attempts, i));
    ui_raw(b, "</tbody></table>");
    if (d->more_attempts)
        sp_buf_printf(b, "<p class=\"note\">the first %d attempts are shown; <code>spore logs"
                         "</code> prints them all</p>", UI_ATTEMPTS_SHOWN);
    ui_raw(b, "</section>\n");
}

/* ---- events ---- */

static void diagnostics(sp_buf *b, const json_t *list)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *dg = json_array_get(list, i);
        ui_raw(b, "<div class=\"diag\"><code>");
        ui_esc(b, str(dg, "code", NULL));
        ui_raw(b, "</code> ");
        ui_esc(b, str(dg, "nodeId", NULL));
        const json_t *details = json_object_get(dg, "details");
        if (details && !json_is_null(details)) {
            char *text = json_dumps(details, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
            size_t len = text ? strlen(text) : 0;
            ui_raw(b, " <span class=\"details\">");
            ui_esc_n(b, text ? text : "", len > 500 ? 500 : len);
            ui_raw(b, len > 500 ? "\xe2\x80\xa6</span>" : "</span>");
            free(text);
        }
        ui_raw(b, "</div>");
    }
}

static void events(sp_buf *b, const run_data *d)
{
    const json_t *list = json_object_get(d->events, "events");
    ui_raw(b, "<section><h2>Events</h2>");
    if (ui_decimal(d->picture, "appliedSequence") > UI_EVENTS_SHOWN)
        sp_buf_printf(b, "<p class=\"note\">the latest %d are shown; <code>spore events</code> "
                         "prints them all</p>", UI_EVENTS_SHOWN);
    ui_raw(b, "<table class=\"events\"><thead><tr><th>#</th><th>kind</th><th>accepted</th>"
              "<th>revision</th><th>diagnostics</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *e = json_array_get(list, i);
        char when[40];
        ui_time_text(ui_decimal(e, "acceptedAtMs"), when, sizeof when);
        ui_raw(b, "<tr><td>");
        ui_esc(b, str(e, "sequence", NULL));
        ui_raw(b, "</td><td>");
        ui_esc(b, str(e, "kind", NULL));
        ui_raw(b, "</td><td>");
        ui_esc(b, when);
        ui_raw(b, "</td><td>");
        ui_esc(b, str(e, "consumedRevision", NULL) ? str(e, "consumedRevision", NULL) : "pending");
        ui_raw(b, "</td><td>");
        diagnostics(b, json_object_get(e, "diagnostics"));
        ui_raw(b, "</td></tr>\n");
    }
    ui_raw(b, "</tbody></table></section>\n");
}

/* ---- the page ---- */

static void live_part(ui_request *r, sp_buf *b, const run_data *d)
{
    ui_raw(b, "<section id=\"live\" data-run=\"");
    ui_esc(b, r->run_id);
    ui_raw(b, "\" data-revision=\"");
    ui_esc(b, str(d->status, "revision", NULL));
    ui_raw(b, "\">\n");
    summary(b, d);
    ui_raw(b, "<div class=\"graph\" id=\"graph\">");
    ui_picture(r->ctx, r->run_id, d->picture, b);
    ui_raw(b, "</div>\n");
    io(b, d);
    attempts(b, d);
    events(b, d);
    ui_raw(b, "</section>\n");
}

void ui_page_run(ui_request *r, ui_reply *out)
{
    sp_error err = {0};
    run_data d = {0};
    spore_db *db = ui_db_lock(r->ctx);
    int rc = read_run(db, r->run_id, &d, &err);
    ui_db_unlock(r->ctx);
    if (rc) {
        data_free(&d);
        ui_error_reply(r, strcmp(err.code, "run.not-found") == 0 ? 404 : 500, &err, out);
        return;
    }
    sp_buf *b = &out->body;
    ui_page_begin(b, r->run_id, r->ctx->cfg.db_label);
    ui_raw(b, "<p class=\"crumbs\"><a href=\"/runs\">runs</a> /</p><h1 class=\"run-id\">");
    ui_esc(b, r->run_id);
    ui_raw(b, "</h1>\n");
    live_part(r, b, &d);
    ui_action_forms(r, b, d.status, d.picture);
    ui_page_end(b);
    data_free(&d);
}
