/*
 * actions.c - the actions of a run's page (authoring.md §4): signal,
 * resolve, cancel and release through the same public API operations the
 * command line's commands perform, answered with the CLI's dispositions,
 * codes and exit codes (cli.md §2-3) and what to do next: an HTML page for
 * people, the CLI's JSON object for `Accept: application/json`.
 *
 * Runs only after server.c checked the token, the Origin and the CSRF
 * token, and the form's bounds.
 *
 * Must never change a run on a field it could not read (every field is
 * checked before the one API call), or answer success for an error.
 */
#include <stdio.h>
#include <string.h>

#include "base/random.h"
#include "json/json.h"
#include "ui/answer.h"
#include "ui/html.h"
#include "ui/internal.h"

#define SHORT_FIELD_MAX 1024 /* names, outcomes, IDs, messages, reasons */

static const char *const ACTION_NAMES[] = {"signal", "resolve", "cancel", "release"};

typedef struct action_result {
    json_t *answer;      /* the CLI's JSON answer without "format" */
    char summary[512];   /* for people */
} action_result;

/* A short field: NULL when absent or empty; ui.field-too-large past the bound. */
static int short_field(const ui_request *r, const char *name, const char **out, sp_error *err)
{
    const char *v = ui_field_value(r, name);
    *out = v && *v ? v : NULL;
    if (*out && strlen(*out) > SHORT_FIELD_MAX)
        return sp_fail(err, "ui.field-too-large", "%s is at most %d bytes", name, SHORT_FIELD_MAX);
    return 0;
}

/* The form's request ID, or a fresh <prefix><16 hex> as the CLI makes. */
static int request_id(const ui_request *r, const char *prefix, char *out, size_t n, sp_error *err)
{
    const char *given = NULL;
    if (short_field(r, "id", &given, err))
        return -1;
    char hex[17];
    sp_random_hex(hex, 8);
    snprintf(out, n, "%s%s", given ? "" : prefix, given ? given : hex);
    return 0;
}

static int api_failed(spore_error *e, sp_error *err)
{
    sp_fail(err, e->code[0] ? e->code : "runtime", "%s", e->message);
    spore_error_clear(e);
    return -1;
}

/* ---- the four actions ---- */

static int do_signal(const ui_request *r, spore_db *db, action_result *res, sp_error *err)
{
    const char *name, *outcome, *data;
    char id[SHORT_FIELD_MAX + 8];
    if (short_field(r, "name", &name, err) || short_field(r, "outcome", &outcome, err) ||
        request_id(r, "msg_", id, sizeof id, err))
        return -1;
    data = ui_field_value(r, "data");
    if (!name)
        return sp_fail(err, "usage", "signal needs a name");
    spore_error e = {0};
    bool duplicate = false;
    if (spore_signal(db, r->run_id, name, outcome, data && *data ? data : NULL, id, &duplicate, &e))
        return api_failed(&e, err);
    res->answer = json_pack("{s:s,s:s,s:s}", "runId", r->run_id, "messageId", id, "disposition",
                            duplicate ? "duplicate" : "applied");
    snprintf(res->summary, sizeof res->summary, "signal %s to %s: %s", name, r->run_id,
             duplicate ? "duplicate" : "applied");
    return 0;
}

static int resolution(const char *answer, spore_resolution *out, sp_error *err)
{
    static const char *const names[] = {"complete", "retry", "fail"};
    for (int i = 0; i < 3; i++)
        if (answer && strcmp(answer, names[i]) == 0)
            return *out = (spore_resolution)i, 0;
    return sp_fail(err, "usage", "answer takes complete, retry or fail");
}

static int do_resolve(const ui_request *r, spore_db *db, action_result *res, sp_error *err)
{
    const char *inv, *answer, *outcome, *message, *output = ui_field_value(r, "output");
    char id[SHORT_FIELD_MAX + 8];
    spore_resolution how = SPORE_RESOLVE_RETRY;
    if (short_field(r, "invocation", &inv, err) || short_field(r, "answer", &answer, err) ||
        short_field(r, "outcome", &outcome, err) || short_field(r, "message", &message, err) ||
        request_id(r, "req_", id, sizeof id, err) || resolution(answer, &how, err))
        return -1;
    if (!inv)
        return sp_fail(err, "usage", "resolve needs the invocation ID");
    if (how == SPORE_RESOLVE_COMPLETE && !outcome)
        return sp_fail(err, "usage", "complete needs an outcome");
    spore_error e = {0};
    bool duplicate = false;
    if (spore_resolve(db, r->run_id, inv, how, how == SPORE_RESOLVE_COMPLETE ? outcome : NULL,
                      how == SPORE_RESOLVE_COMPLETE && output && *output ? output : NULL,
                      how == SPORE_RESOLVE_FAIL ? message : NULL, id, &duplicate, &e))
        return api_failed(&e, err);
    res->answer = json_pack("{s:s,s:s,s:s,s:s}", "runId", r->run_id, "invocationId", inv,
                            "requestId", id, "disposition", duplicate ? "duplicate" : "applied");
    snprintf(res->summary, sizeof res->summary, "resolve %s of %s: %s", inv, r->run_id,
             duplicate ? "duplicate" : "applied");
    return 0;
}

static int do_cancel(const ui_request *r, spore_db *db, action_result *res, sp_error *err)
{
    const char *reason;
    if (short_field(r, "reason", &reason, err))
        return -1;
    spore_error e = {0};
    bool ended = false;
    if (spore_cancel(db, r->run_id, reason, NULL, &ended, &e))
        return api_failed(&e, err);
    const char *d = ended ? "already-terminal" : "cancelled";
    res->answer = json_pack("{s:s,s:s}", "runId", r->run_id, "disposition", d);
    snprintf(res->summary, sizeof res->summary, "cancel %s: %s", r->run_id, d);
    return 0;
}

static int do_release(const ui_request *r, spore_db *db, action_result *res, sp_error *err)
{
    spore_error e = {0};
    bool duplicate = false;
    if (spore_release(db, r->run_id, &duplicate, &e))
        return api_failed(&e, err);
    const char *d = duplicate ? "duplicate" : "applied";
    res->answer = json_pack("{s:s,s:s}", "runId", r->run_id, "disposition", d);
    snprintf(res->summary, sizeof res->summary, "release %s: %s", r->run_id, d);
    return 0;
}

/* ---- the answer ---- */

static unsigned http_status_for(const ui_request *r, const char *code)
{
    if (strcmp(code, "run.not-found") == 0)
        return 404;
    int exit_code = r->ctx->cfg.exit_for ? r->ctx->cfg.exit_for(code) : 2;
    if (exit_code != 2)
        return 500;
    return strncmp(code, "usage", 5) == 0 || strncmp(code, "canonical", 9) == 0 ? 400 : 409;
}

static void next_text(const ui_request *r, char *out, size_t n)
{
    snprintf(out, n, "a running `spore worker` carries the run on (or `spore resume %s`)",
             r->run_id);
}

static void html_answer(const ui_request *r, const action_result *res, ui_reply *out)
{
    char next[300];
    next_text(r, next, sizeof next);
    sp_buf *b = &out->body;
    ui_page_begin(b, ACTION_NAMES[r->action], r->ctx->cfg.db_label);
    ui_raw(b, "<section class=\"answer done\"><h1 id=\"answer\">");
    ui_esc(b, res->summary);
    ui_raw(b, "</h1><p>exit code 0, as <code>spore ");
    ui_esc(b, ACTION_NAMES[r->action]);
    ui_raw(b, "</code> would; disposition <code class=\"code\">");
    ui_esc(b, json_string_value(json_object_get(res->answer, "disposition")));
    ui_raw(b, "</code></p><p class=\"hint\">next: ");
    ui_esc(b, next);
    ui_raw(b, "</p><p><a id=\"back\" href=\"/runs/");
    ui_url_enc(b, r->run_id);
    ui_raw(b, "\">back to the run</a></p></section>\n");
    ui_page_end(b);
}

void ui_do_action(ui_request *r, ui_reply *out)
{
    static int (*const DO[])(const ui_request *, spore_db *, action_result *, sp_error *) = {
        do_signal, do_resolve, do_cancel, do_release};
    sp_error err = {0};
    action_result res = {0};
    spore_db *db = ui_db_lock(r->ctx);
    int rc = DO[r->action](r, db, &res, &err);
    ui_db_unlock(r->ctx);
    if (rc || !res.answer) {
        if (!rc)
            sp_oom(&err);
        ui_error_reply(r, http_status_for(r, err.code), &err, out);
        return;
    }
    if (r->wants_json) {
        char next[300];
        next_text(r, next, sizeof next);
        json_object_set_new(res.answer, "next", json_string(next));
        json_object_set_new(res.answer, "exitCode", json_integer(0));
        ui_json_reply(res.answer, 200, out);
        return;
    }
    html_answer(r, &res, out);
    json_decref(res.answer);
}
