/*
 * page_runs.c - the runs list (authoring.md §4): newest first, with the
 * workflow's name, status, start and update times and current node;
 * filters by status and workflow, a text search over run ID and start key,
 * and pages of a bounded size (?status=&workflow=&q=&page=&size=).
 *
 * Must never change a run, show more than UI_PAGE_SIZE_MAX runs at once, or
 * take a filter value outside its bounds (usage.invalid-value, 400).
 */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "ui/html.h"
#include "ui/internal.h"

static const char *const STATUSES[] = {"created",   "running", "waiting",  "needs-intervention",
                                       "completed", "failed",  "cancelled", "quarantined", NULL};

typedef struct runs_args {
    const char *status, *workflow, *search;
    size_t page, size; /* page from 1 */
} runs_args;

static int parse_count(const char *text, size_t max, size_t fallback, size_t *out)
{
    if (!text || !*text)
        return *out = fallback, 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || text[0] == '-' || v < 1 || v > max)
        return -1;
    *out = (size_t)v;
    return 0;
}

static bool known_status(const char *s)
{
    for (const char *const *p = STATUSES; *p; p++)
        if (strcmp(s, *p) == 0)
            return true;
    return false;
}

static const char *nonempty(const char *s) { return s && *s ? s : NULL; }

static int parse_args(const ui_request *r, runs_args *a, sp_error *err)
{
    a->status = nonempty(ui_query(r, "status"));
    a->workflow = nonempty(ui_query(r, "workflow"));
    a->search = nonempty(ui_query(r, "q"));
    if (a->status && !known_status(a->status))
        return sp_fail(err, "usage.invalid-value", "status takes created, running, waiting, "
                                                   "needs-intervention, completed, failed, "
                                                   "cancelled or quarantined");
    if (parse_count(ui_query(r, "page"), UI_PAGE_MAX, 1, &a->page))
        return sp_fail(err, "usage.invalid-value", "page takes a number from 1 to %d",
                       UI_PAGE_MAX);
    if (parse_count(ui_query(r, "size"), UI_PAGE_SIZE_MAX, UI_PAGE_SIZE_DEFAULT, &a->size))
        return sp_fail(err, "usage.invalid-value", "size takes a number from 1 to %d",
                       UI_PAGE_SIZE_MAX);
    return 0;
}

/* ---- the page ---- */

static void filter_form(sp_buf *b, const runs_args *a)
{
    ui_raw(b, "<form class=\"filters\" method=\"get\" action=\"/runs\">"
              "<label>status <select name=\"status\"><option value=\"\">any</option>");
    for (const char *const *p = STATUSES; *p; p++) {
        ui_raw(b, "<option");
        if (a->status && strcmp(a->status, *p) == 0)
            ui_raw(b, " selected");
        ui_raw(b, ">");
        ui_esc(b, *p);
        ui_raw(b, "</option>");
    }
    ui_raw(b, "</select></label> <label>workflow <input name=\"workflow\" maxlength=\"128\" "
              "value=\"");
    ui_esc(b, a->workflow);
    ui_raw(b, "\"></label> <label>search <input name=\"q\" maxlength=\"128\" "
              "placeholder=\"run ID or start key\" value=\"");
    ui_esc(b, a->search);
    sp_buf_printf(b, "\"></label> <input type=\"hidden\" name=\"size\" value=\"%zu\">"
                     "<button>filter</button></form>\n", a->size);
}

static void row(sp_buf *b, const json_t *run)
{
    const char *id = json_string_value(json_object_get(run, "runId"));
    const char *status = json_string_value(json_object_get(run, "status"));
    const char *node = json_string_value(json_object_get(json_object_get(run, "position"), "nodeId"));
    char created[40], updated[40];
    ui_time_text(ui_decimal(run, "createdAtMs"), created, sizeof created);
    ui_time_text(ui_decimal(run, "updatedAtMs"), updated, sizeof updated);
    ui_raw(b, "<tr><td><a class=\"run-link\" href=\"/runs/");
    ui_url_enc(b, id);
    ui_raw(b, "\">");
    ui_esc(b, id);
    ui_raw(b, "</a></td><td>");
    ui_esc(b, json_string_value(json_object_get(run, "workflow")));
    ui_raw(b, "</td><td><span class=\"status s-");
    ui_esc(b, status);
    ui_raw(b, "\">");
    ui_esc(b, status);
    ui_raw(b, json_is_true(json_object_get(run, "quarantined")) ? " (quarantined)" : "");
    ui_raw(b, "</span></td><td>");
    ui_esc(b, node ? node : "-");
    ui_raw(b, "</td><td>");
    ui_esc(b, created);
    ui_raw(b, "</td><td>");
    ui_esc(b, updated);
    ui_raw(b, "</td><td class=\"key\">");
    ui_esc(b, json_string_value(json_object_get(run, "startKey")));
    ui_raw(b, "</td></tr>\n");
}

static void page_link(sp_buf *b, const runs_args *a, size_t page, const char *label)
{
    ui_raw(b, "<a class=\"pager\" href=\"/runs?page=");
    sp_buf_printf(b, "%zu&amp;size=%zu", page, a->size);
    const char *names[] = {"status", "workflow", "q"};
    const char *values[] = {a->status, a->workflow, a->search};
    for (int i = 0; i < 3; i++)
        if (values[i]) {
            sp_buf_printf(b, "&amp;%s=", names[i]);
            ui_url_enc(b, values[i]); /* percent-encoded: nothing left to escape */
        }
    ui_raw(b, "\">");
    ui_esc(b, label);
    ui_raw(b, "</a> ");
}

static void pager(sp_buf *b, const runs_args *a, uint64_t matched)
{
    uint64_t pages = matched ? (matched + a->size - 1) / a->size : 1;
    sp_buf_printf(b, "<nav class=\"pages\">%llu runs \xc2\xb7 page %zu of %llu ",
                  (unsigned long long)matched, a->page, (unsigned long long)pages);
    if (a->page > 1)
        page_link(b, a, a->page - 1, "\xe2\x86\x90 newer");
    if (a->page < pages)
        page_link(b, a, a->page + 1, "older \xe2\x86\x92");
    ui_raw(b, "</nav>\n");
}

static void table(sp_buf *b, const json_t *page, const runs_args *a)
{
    const json_t *runs = json_object_get(page, "runs");
    if (json_array_size(runs) == 0) {
        ui_raw(b, a->status || a->workflow || a->search
                      ? "<p class=\"empty\">no runs match</p>\n"
                      : "<p class=\"empty\">no runs yet (start one with <code>spore run "
                        "&lt;workflow&gt;</code>)</p>\n");
        return;
    }
    ui_raw(b, "<table class=\"runs\"><thead><tr><th>run</th><th>workflow</th><th>status</th>"
              "<th>at</th><th>started</th><th>updated</th><th>start key</th></tr></thead>"
              "<tbody>\n");
    for (size_t i = 0; i < json_array_size(runs); i++)
        row(b, json_array_get(runs, i));
    ui_raw(b, "</tbody></table>\n");
}

void ui_page_runs(ui_request *r, ui_reply *out)
{
    sp_error err = {0};
    runs_args a = {0};
    if (parse_args(r, &a, &err))
    {
        ui_error_reply(r, 400, &err, out);
        return;
    }
    spore_run_query q = {a.status, a.workflow, a.search, (a.page - 1) * a.size, a.size};
    spore_error e = {0};
    char *text = NULL;
    spore_db *db = ui_db_lock(r->ctx);
    int rc = spore_list_runs(db, &q, &text, &e);
    ui_db_unlock(r->ctx);
    json_t *page = rc == 0 ? sp_json_parse(text, strlen(text), &err) : NULL;
    spore_free(text);
    if (rc)
        sp_fail(&err, e.code, "%s", e.message);
    spore_error_clear(&e);
    if (!page)
    {
        ui_error_reply(r, 500, &err, out);
        return;
    }
    ui_page_begin(&out->body, "runs", r->ctx->cfg.db_label);
    ui_raw(&out->body, "<h1>Runs</h1>\n");
    filter_form(&out->body, &a);
    table(&out->body, page, &a);
    pager(&out->body, &a, ui_decimal(page, "matched"));
    ui_page_end(&out->body);
    json_decref(page);
}
