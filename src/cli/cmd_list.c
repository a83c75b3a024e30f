/*
 * cmd_list.c - `spore list` (cli.md §2): the runs of the tenant, newest
 * first, with their workflow and position, filtered by --status and
 * --workflow and cut at --limit.
 *
 * Must never change a run or create a store; reads at most one run view per
 * run shown (for its position), never one per run scanned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/session.h"
#include "cli/views.h"
#include "json/json.h"

static const char HELP[] =
    "usage: spore list [--status <status>] [--workflow <name>] [--limit N] [--db <path>] [--json]\n"
    "\n"
    "Lists the runs of the database, newest first: run ID, status, revision, start\n"
    "key, workflow and position. --status keeps one status (created, running,\n"
    "waiting, needs-intervention, completed, failed; or quarantined), --workflow\n"
    "one workflow name, --limit the first N after filtering.\n";

#define LIST_LIMIT_MAX 1000000ULL

typedef struct list_args {
    const char *status, *workflow, *limit_text;
    size_t limit; /* 0: all */
} list_args;

typedef struct run_rows {
    sp_run_summary *items;
    size_t n, cap;
} run_rows;

static int parse_limit(list_args *a, sp_error *err)
{
    if (!a->limit_text)
        return 0;
    char *end;
    unsigned long long v = strtoull(a->limit_text, &end, 10);
    if (!*a->limit_text || *end || a->limit_text[0] == '-' || v == 0 || v > LIST_LIMIT_MAX)
        return sp_fail(err, CLI_INVALID_VALUE, "--limit takes a number from 1 to %llu",
                       LIST_LIMIT_MAX);
    a->limit = (size_t)v;
    return 0;
}

static bool keep(sp_engine *e, const list_args *a, const sp_run_summary *r)
{
    if (a->status && strcmp(a->status, "quarantined") == 0 && !r->quarantined)
        return false;
    if (a->status && strcmp(a->status, "quarantined") != 0 && strcmp(a->status, r->status) != 0)
        return false;
    if (!a->workflow)
        return true;
    sp_error err = {0};
    const char *name = sp_engine_workflow_name(e, r->package_digest, &err);
    sp_error_clear(&err);
    return name && strcmp(name, a->workflow) == 0;
}

/* Takes the summary's allocations when kept. */
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

static int collect(session *s, const list_args *a, run_rows *rows, sp_error *err)
{
    char *cursor = NULL;
    do {
        sp_run_list page;
        if (sp_store_list_runs(s->store, "default", cursor, SP_STORE_PAGE_MAX, &page, err) !=
            SP_STORE_OK) {
            free(cursor);
            return -1;
        }
        free(cursor);
        cursor = page.next_cursor ? strdup(page.next_cursor) : NULL;
        int rc = page.next_cursor && !cursor ? sp_oom(err) : 0;
        for (size_t i = 0; rc == 0 && i < page.n; i++)
            if (keep(s->engine, a, &page.runs[i]))
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
static json_t *position_of(session *s, const sp_run_summary *r)
{
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    json_t *pos = NULL;
    if (sp_store_get_run(s->store, &r->key, &v, &found, &err) == SP_STORE_OK && found) {
        json_t *snap = v.snapshot ? sp_json_parse(v.snapshot, v.snapshot_len, NULL) : NULL;
        pos = json_incref(json_object_get(snap, "position"));
        json_decref(snap);
        sp_run_view_free(&v);
    }
    sp_error_clear(&err);
    return pos ? pos : json_null();
}

static void show_row(session *s, const sp_run_summary *r, json_t *runs)
{
    sp_error err = {0};
    const char *workflow = sp_engine_workflow_name(s->engine, r->package_digest, &err);
    sp_error_clear(&err);
    json_t *pos = position_of(s, r);
    if (runs) {
        json_array_append_new(
            runs, json_pack("{s:s,s:s,s:s,s:o,s:b,s:s?,s:o,s:o,s:O}", "runId", r->key.run_id,
                            "startKey", r->start_key, "status", r->status, "revision",
                            view_decimal(r->revision), "quarantined", r->quarantined, "workflow",
                            workflow, "createdAtMs", view_decimal(r->created_at_ms),
                            "updatedAtMs", view_decimal(r->updated_at_ms), "position", pos));
    } else {
        const char *node = json_string_value(json_object_get(pos, "nodeId"));
        printf("%-36s  %-18s  rev %-4llu  %s  %s%s%s%s\n", r->key.run_id, r->status,
               (unsigned long long)r->revision, r->start_key, workflow ? workflow : "?",
               node ? "  at " : "", node ? node : "", r->quarantined ? "  (quarantined)" : "");
    }
    json_decref(pos);
}

static void show(session *s, const list_args *a, const run_rows *rows)
{
    size_t n = a->limit && a->limit < rows->n ? a->limit : rows->n;
    json_t *runs = s->c->json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++)
        show_row(s, &rows->items[i], runs);
    if (runs)
        cli_print_json(json_pack("{s:o}", "runs", runs));
    else if (n == 0)
        printf("no runs%s in %s (start one with: spore run <workflow.json>)\n",
               a->status || a->workflow ? " match" : "", sp_store_location(s->store));
}

int cmd_list(int argc, char **argv)
{
    cli c = {.command = "list", .store_use = CLI_STORE_READS};
    list_args a = {0};
    const cli_option opts[] = {{"--status", true, &a.status, NULL},
                               {"--workflow", true, &a.workflow, NULL},
                               {"--limit", true, &a.limit_text, NULL},
                               {NULL, false, NULL, NULL}};
    sp_error err = {0};
    int rc = cli_begin(&c, argc, argv, opts, HELP, 0, "no arguments");
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    if (parse_limit(&a, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    session s;
    if ((rc = session_open(&s, &c)))
        return rc;
    run_rows rows = {0};
    if (collect(&s, &a, &rows, &err))
        rc = session_fail(&s, &err);
    else {
        if (rows.n > 1)
            qsort(rows.items, rows.n, sizeof *rows.items, newest_first);
        show(&s, &a, &rows);
    }
    rows_free(&rows);
    session_close(&s);
    return rc;
}
