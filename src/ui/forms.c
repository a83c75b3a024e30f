/*
 * forms.c - the run page's action forms (authoring.md §4): signal (name,
 * outcome, data), resolve (complete with an outcome and output / retry /
 * fail with a message), cancel (a reason) and release. Each is a POST to
 * /runs/<runId>/<action> carrying this session's CSRF token in a hidden
 * field; fields are bounded with maxlength as the server bounds them.
 * The signal a waiting run waits for, its outcomes and the invocation to
 * resolve are filled in from the run.
 *
 * Must never put a value in a form without escaping it, or leave a form
 * without its CSRF token.
 */
#include <stdio.h>
#include <string.h>

#include "base/random.h"
#include "ui/html.h"
#include "ui/internal.h"

static void form_begin(const ui_request *r, sp_buf *b, const char *action, const char *title)
{
    char csrf[UI_CSRF_HEX + 1];
    ui_auth_csrf(r, csrf);
    ui_raw(b, "<form class=\"action\" method=\"post\" id=\"form-");
    ui_esc(b, action);
    ui_raw(b, "\" action=\"/runs/");
    ui_url_enc(b, r->run_id);
    ui_raw(b, "/");
    ui_esc(b, action);
    ui_raw(b, "\"><h3>");
    ui_esc(b, title);
    ui_raw(b, "</h3><input type=\"hidden\" name=\"csrf\" value=\"");
    ui_esc(b, csrf);
    ui_raw(b, "\">");
}

static void input(sp_buf *b, const char *label, const char *name, const char *value,
                  const char *list)
{
    ui_raw(b, "<label>");
    ui_esc(b, label);
    ui_raw(b, " <input name=\"");
    ui_esc(b, name);
    ui_raw(b, "\" maxlength=\"256\" value=\"");
    ui_esc(b, value);
    ui_raw(b, "\"");
    if (list) {
        ui_raw(b, " list=\"");
        ui_esc(b, list);
        ui_raw(b, "\"");
    }
    ui_raw(b, "></label>");
}

static void textarea(sp_buf *b, const char *label, const char *name, const char *placeholder)
{
    ui_raw(b, "<label>");
    ui_esc(b, label);
    ui_raw(b, " <textarea name=\"");
    ui_esc(b, name);
    sp_buf_printf(b, "\" rows=\"3\" maxlength=\"%d\" placeholder=\"", UI_FIELD_MAX);
    ui_esc(b, placeholder);
    ui_raw(b, "\"></textarea></label>");
}

/* A fresh request ID in the form: sending it twice is a duplicate, as
 * repeating --id is on the command line. */
static void hidden_id(sp_buf *b, const char *prefix)
{
    char hex[17];
    sp_random_hex(hex, 8);
    ui_raw(b, "<input type=\"hidden\" name=\"id\" value=\"");
    ui_esc(b, prefix);
    ui_esc(b, hex);
    ui_raw(b, "\">");
}

static void button(sp_buf *b, const char *label)
{
    ui_raw(b, "<button type=\"submit\">");
    ui_esc(b, label);
    ui_raw(b, "</button></form>\n");
}

/* The await-signal node the run stands at, from its package. */
static const json_t *waiting_node(const json_t *status, const json_t *picture)
{
    const char *at = json_string_value(json_object_get(json_object_get(status, "position"),
                                                       "nodeId"));
    const json_t *nodes = json_object_get(json_object_get(picture, "package"), "nodes");
    const json_t *node = at ? json_object_get(nodes, at) : NULL;
    const char *kind = json_string_value(json_object_get(node, "kind"));
    return kind && strcmp(kind, "await-signal") == 0 ? node : NULL;
}

static void signal_form(const ui_request *r, sp_buf *b, const json_t *status,
                        const json_t *picture)
{
    const json_t *node = waiting_node(status, picture);
    form_begin(r, b, "signal", "Signal");
    hidden_id(b, "msg_");
    input(b, "name", "name", json_string_value(json_object_get(node, "signal")), NULL);
    input(b, "outcome", "outcome", "", "signal-outcomes");
    ui_raw(b, "<datalist id=\"signal-outcomes\">");
    const char *outcome;
    const json_t *route;
    json_object_foreach((json_t *)json_object_get(node, "outcomes"), outcome, route) {
        ui_raw(b, "<option value=\"");
        ui_esc(b, outcome);
        ui_raw(b, "\">");
    }
    (void)route;
    ui_raw(b, "</datalist>");
    textarea(b, "data (JSON)", "data", "null");
    button(b, "send signal");
}

static void resolve_form(const ui_request *r, sp_buf *b, const json_t *status)
{
    const json_t *inv = json_object_get(status, "invocation");
    form_begin(r, b, "resolve", "Resolve");
    hidden_id(b, "req_");
    input(b, "invocation", "invocation", json_string_value(json_object_get(inv, "invocationId")),
          NULL);
    ui_raw(b, "<label>answer <select name=\"answer\"><option value=\"complete\">complete"
              "</option><option value=\"retry\">retry</option><option value=\"fail\">fail"
              "</option></select></label>");
    input(b, "outcome (complete)", "outcome", "", NULL);
    textarea(b, "output (complete, JSON)", "output", "null");
    input(b, "message (fail)", "message", "", NULL);
    button(b, "resolve");
}

void ui_action_forms(const ui_request *r, sp_buf *b, const json_t *status, const json_t *picture)
{
    ui_raw(b, "<section class=\"actions\"><h2>Actions</h2><p class=\"hint\">The same operations "
              "as <code>spore signal</code>, <code>resolve</code>, <code>cancel</code> and "
              "<code>release</code>; a running <code>spore worker</code> carries the run on."
              "</p><div class=\"forms\">\n");
    signal_form(r, b, status, picture);
    resolve_form(r, b, status);
    form_begin(r, b, "cancel", "Cancel");
    input(b, "reason", "reason", "", NULL);
    button(b, "cancel the run");
    form_begin(r, b, "release", "Release");
    ui_raw(b, "<p class=\"hint\">lifts a quarantine</p>");
    button(b, "release");
    ui_raw(b, "</div></section>\n");
}
