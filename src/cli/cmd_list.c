/*
 * cmd_list.c - `spore list` (cli.md §2): the runs of the tenant, newest
 * first, with their workflow and position, filtered by --status and
 * --workflow and cut at --limit. The list is sp_browse_runs
 * (src/api/browse.c), the one spore_list_runs() and `spore ui` show.
 *
 * Must never change a run or create a store; reads at most one run view per
 * run shown (for its position), never one per run scanned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/browse.h"
#include "cli/session.h"

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

static void show_row_text(const json_t *r)
{
    const char *node = json_string_value(json_object_get(json_object_get(r, "position"), "nodeId"));
    const char *workflow = json_string_value(json_object_get(r, "workflow"));
    printf("%-36s  %-18s  rev %-4s  %s  %s%s%s%s\n",
           json_string_value(json_object_get(r, "runId")),
           json_string_value(json_object_get(r, "status")),
           json_string_value(json_object_get(r, "revision")),
           json_string_value(json_object_get(r, "startKey")), workflow ? workflow : "?",
           node ? "  at " : "", node ? node : "",
           json_is_true(json_object_get(r, "quarantined")) ? "  (quarantined)" : "");
}

static void show(session *s, const list_args *a, json_t *page)
{
    json_t *runs = json_object_get(page, "runs");
    if (s->c->json) {
        cli_print_json(json_pack("{s:O}", "runs", runs));
        return;
    }
    for (size_t i = 0; i < json_array_size(runs); i++)
        show_row_text(json_array_get(runs, i));
    if (json_array_size(runs) == 0)
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
    sp_runs_query q = {a.status, a.workflow, NULL, 0, a.limit};
    json_t *page = sp_browse_runs(s.store, s.engine, &q, &err);
    if (!page)
        rc = session_fail(&s, &err);
    else
        show(&s, &a, page);
    json_decref(page);
    session_close(&s);
    return rc;
}
