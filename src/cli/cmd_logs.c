/*
 * cmd_logs.c - `spore logs` (authoring.md §5, docs/cli.md, docs/authoring.md
 * "Step logs"): what the attempts of a run kept of their stdout and stderr,
 * each under a header (node, attempt, outcome, when), in the order the
 * attempts ended; one node, one attempt number, one stream; --follow prints
 * the logs of attempts as they end until the run is finished or parked.
 *
 * Reads the store page by page (SP_STORE_LOG_PAGE_MAX entries at a time,
 * printed before the next page is read); only --json keeps what it prints,
 * to print it as one object.
 *
 * Must never change a run or create a store, print a log without its
 * header, or say "no logs" without saying why there are none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/browse.h"
#include "cli/session.h"
#include "cli/views.h"
#include "json/json.h"
#include "kernel/workflow.h"

static const char HELP[] =
    "usage: spore logs <runId> [<node>] [--attempt N] [--stream stdout|stderr] [--follow]\n"
    "                  [--db <path>] [--json]\n"
    "\n"
    "Prints what the attempts of a run kept of their stdout and stderr: the last\n"
    "64 KiB of each, with the secrets given to the step redacted and invalid UTF-8\n"
    "replaced (\"... N bytes earlier not kept\" marks a cut). Every attempt in the\n"
    "order the attempts ended (those still running last), each under a header\n"
    "with its node, attempt number, outcome and start time; <node> keeps one node,\n"
    "--attempt N its Nth attempt (of every node without <node>), --stream one\n"
    "stream. --follow goes on printing the logs of attempts as they end until the\n"
    "run is finished or parked (Ctrl-C ends it, exit 130). Native steps keep no\n"
    "logs; command steps keep stdout and stderr, agent steps their step CLI's\n"
    "stderr, component steps their log file (as stderr).\n";

#define FOLLOW_POLL_MS 200

typedef struct logs_args {
    const char *node;    /* NULL: every node */
    uint32_t attempt;    /* 0: every attempt number */
    bool out, err;       /* the streams shown */
    bool follow;
} logs_args;

typedef struct logs_view {
    cli *c;
    session s;
    sp_run_key key;
    logs_args a;
    json_t *entries; /* --json: what was shown */
    size_t shown;
    char *cursor;    /* after the last entry shown */
} logs_view;

/* ---- arguments ---- */

static int parse_attempt(const char *text, uint32_t *out, sp_error *err)
{
    if (!text)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || text[0] == '-' || errno || v == 0 || v > UINT32_MAX)
        return sp_fail(err, CLI_INVALID_VALUE, "--attempt takes an attempt number from 1");
    *out = (uint32_t)v;
    return 0;
}

static int parse_args(const cli *c, const char *attempt, const char *stream, logs_args *a,
                      sp_error *err)
{
    if (c->npositional < 1 || c->npositional > 2)
        return sp_fail(err, "usage", "logs takes a run ID and at most one node (see spore logs "
                                     "--help)");
    a->node = c->npositional == 2 ? c->positional[1] : NULL;
    if (a->node && !sp_is_node_id(a->node, strlen(a->node)))
        return sp_fail(err, CLI_INVALID_VALUE, "\"%s\" is not a node ID ([A-Za-z0-9_-]{1,64})",
                       a->node);
    if (stream && strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
        return sp_fail(err, CLI_INVALID_VALUE, "--stream takes stdout or stderr");
    a->out = !stream || strcmp(stream, "stdout") == 0;
    a->err = !stream || strcmp(stream, "stderr") == 0;
    return parse_attempt(attempt, &a->attempt, err);
}

/* The node is one of the run's workflow (node.unknown otherwise). */
static int check_node(logs_view *v, sp_error *err)
{
    sp_run_view run;
    bool found = false;
    char *bytes = NULL;
    size_t len = 0;
    if (sp_store_get_run(v->s.store, &v->key, &run, &found, err) != SP_STORE_OK || !found)
        return -1;
    bool have = sp_store_get_package(v->s.store, run.package_digest, &bytes, &len, &found, err) ==
                SP_STORE_OK;
    sp_run_view_free(&run);
    sp_kernel_failure f;
    bool oom = false;
    sp_workflow *wf = have && found ? sp_workflow_load(bytes, len, &f, &oom) : NULL;
    free(bytes);
    if (!wf && have)
        return sp_fail(err, "store.corrupt", "the package of run %s cannot be read",
                       v->key.run_id);
    int rc = !wf ? -1
             : sp_workflow_node(wf, v->a.node)
                 ? 0
                 : sp_fail(err, "node.unknown", "run %s's workflow \"%s\" has no node \"%s\"",
                           v->key.run_id, wf->name, v->a.node);
    sp_workflow_free(wf);
    return rc;
}

/* ---- one entry ---- */

/* "2026-01-02 03:04:05.678Z" */
static void time_text(uint64_t ms, char *out, size_t n)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char day[32] = "?";
    if (gmtime_r(&secs, &tm))
        strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, n, "%s.%03uZ", day, (unsigned)(ms % 1000));
}

static json_t *entry_json(const logs_view *v, const sp_attempt_log *e)
{
    json_t *o = json_pack(
        "{s:s,s:I,s:s,s:s,s:o,s:o,s:o,s:o}", "nodeId", e->node_id, "attempt",
        (json_int_t)e->attempt_number, "attemptId", e->attempt_id, "invocationId",
        e->invocation_id, "result", sp_attempt_outcome_json(e, false), "startedAtMs", view_decimal(e->started_at_ms),
        "endedAtMs", e->ended_at_ms ? view_decimal(e->ended_at_ms) : json_null(), "loggedAtMs",
        view_decimal(e->logged_at_ms));
    if (o && v->a.out)
        json_object_set_new(o, "stdout", sp_attempt_stream_json(e->out, e->out_len, e->out_dropped));
    if (o && v->a.err)
        json_object_set_new(o, "stderr", sp_attempt_stream_json(e->err, e->err_len, e->err_dropped));
    return o;
}

static void stream_text(FILE *f, const char *name, const char *text, size_t len,
                        uint64_t dropped)
{
    fprintf(f, "-- %s%s\n", name, len || dropped ? "" : " (empty)");
    if (dropped)
        fprintf(f, "\xe2\x80\xa6 %llu bytes earlier not kept\n", (unsigned long long)dropped);
    fwrite(text, 1, len, f);
    if (len && text[len - 1] != '\n')
        fputc('\n', f);
}

static void entry_text(FILE *f, const logs_view *v, const sp_attempt_log *e)
{
    char when[40], outcome[160], took[48] = "";
    time_text(e->started_at_ms, when, sizeof when);
    json_t *o = sp_attempt_outcome_json(e, false);
    sp_attempt_outcome_text(o, outcome, sizeof outcome);
    json_decref(o);
    if (e->ended_at_ms >= e->started_at_ms && e->ended_at_ms)
        snprintf(took, sizeof took, " \xc2\xb7 %llu ms",
                 (unsigned long long)(e->ended_at_ms - e->started_at_ms));
    fprintf(f, "%s== %s \xc2\xb7 attempt %u \xc2\xb7 %s \xc2\xb7 started %s%s (%s)\n",
            v->shown ? "\n" : "", e->node_id, (unsigned)e->attempt_number, outcome, when, took,
            e->attempt_id);
    if (v->a.out)
        stream_text(f, "stdout", e->out, e->out_len, e->out_dropped);
    if (v->a.err)
        stream_text(f, "stderr", e->err, e->err_len, e->err_dropped);
}

static void show(logs_view *v, const sp_attempt_log *e)
{
    if (v->c->json)
        json_array_append_new(v->entries, entry_json(v, e));
    else
        entry_text(stdout, v, e);
    v->shown++;
}

/* ---- reading ---- */

/* Show every entry after v->cursor (ended attempts only, or all). */
static int show_pages(logs_view *v, bool ended_only, sp_error *err)
{
    for (;;) {
        sp_attempt_log_query q = {v->a.node, v->a.attempt, ended_only, v->cursor, 0};
        sp_attempt_log_list page;
        if (sp_store_list_attempt_logs(v->s.store, &v->key, &q, &page, err) != SP_STORE_OK)
            return -1;
        for (size_t i = 0; i < page.n; i++)
            show(v, &page.items[i]);
        if (page.next_cursor) {
            free(v->cursor);
            v->cursor = page.next_cursor;
            page.next_cursor = NULL;
        }
        size_t n = page.n;
        sp_attempt_log_list_free(&page);
        if (n < SP_STORE_LOG_PAGE_MAX)
            return 0;
        fflush(stdout);
    }
}

/* The run will not end an attempt without someone acting: finished,
 * waiting, needing intervention, quarantined, or holding an async step. */
static int settled(logs_view *v, bool *done, sp_error *err)
{
    sp_run_view run;
    bool found = false;
    if (sp_store_get_run(v->s.store, &v->key, &run, &found, err) != SP_STORE_OK || !found)
        return -1;
    bool moving = strcmp(run.status, "running") == 0 || strcmp(run.status, "created") == 0;
    json_t *step = moving && !run.quarantined ? sp_engine_step_view(v->s.engine, &run) : NULL;
    const char *state = json_string_value(json_object_get(step, "state"));
    *done = !moving || run.quarantined || (state && strcmp(state, "held") == 0);
    json_decref(step);
    sp_run_view_free(&run);
    return 0;
}

static void sleep_ms(unsigned ms)
{
    struct timespec t = {0, (long)(ms % 1000) * 1000000L};
    t.tv_sec = (time_t)(ms / 1000);
    nanosleep(&t, NULL); /* a signal ends it early: the loop looks at cli_interrupted */
}

/* Ended attempts as they end; once the run is settled, the rest. */
static int follow(logs_view *v, sp_error *err)
{
    for (;;) {
        bool done = false;
        if (settled(v, &done, err) || show_pages(v, !done, err))
            return -1;
        if (done)
            return 0;
        fflush(stdout);
        for (unsigned slept = 0; slept < FOLLOW_POLL_MS && !cli_interrupted; slept += 50)
            sleep_ms(50);
        if (cli_interrupted)
            return 1;
    }
}

/* Why nothing was shown. */
static void why_none(const logs_view *v, char *out, size_t n)
{
    char scope[160];
    if (v->a.node && v->a.attempt)
        snprintf(scope, sizeof scope, "attempt %u of node %s", (unsigned)v->a.attempt, v->a.node);
    else if (v->a.node)
        snprintf(scope, sizeof scope, "the attempts of node %s", v->a.node);
    else if (v->a.attempt)
        snprintf(scope, sizeof scope, "attempt %u of any node", (unsigned)v->a.attempt);
    else
        snprintf(scope, sizeof scope, "its attempts");
    snprintf(out, n, "run %s: no logs kept by %s (native steps keep none; a command, agent or "
             "component step keeps its own once its attempt has reported)",
             v->key.run_id, scope);
}

static int finish(logs_view *v, bool interrupted)
{
    char none[640] = "";
    if (v->shown == 0)
        why_none(v, none, sizeof none);
    if (v->c->json) {
        json_t *o = json_pack("{s:s,s:O}", "runId", v->key.run_id, "entries", v->entries);
        if (o && none[0])
            json_object_set_new(o, "note", json_string(none));
        if (o && interrupted)
            json_object_set_new(o, "interrupted", json_true());
        cli_print_json(o);
    } else if (none[0]) {
        printf("%s\n", none);
    }
    return interrupted ? EXIT_INTERRUPTED : EXIT_OK;
}

static int run_logs(logs_view *v)
{
    sp_error err = {0};
    if (v->a.node && check_node(v, &err))
        return session_fail(&v->s, &err);
    int rc = v->a.follow ? follow(v, &err) : show_pages(v, false, &err);
    if (rc < 0)
        return session_fail(&v->s, &err);
    return finish(v, rc > 0);
}

int cmd_logs(int argc, char **argv)
{
    cli c = {.command = "logs", .store_use = CLI_STORE_READS};
    const char *attempt = NULL, *stream = NULL;
    logs_view v = {.c = &c};
    const cli_option opts[] = {{"--attempt", true, &attempt, NULL},
                               {"--stream", true, &stream, NULL},
                               {"--follow", false, NULL, &v.a.follow},
                               {NULL, false, NULL, NULL}};
    int rc = cli_begin(&c, argc, argv, opts, HELP, CLI_ANY_ARGS, NULL);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    sp_error err = {0};
    if (parse_args(&c, attempt, stream, &v.a, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    if ((rc = session_open_run(&v.s, &c, c.positional[0], &v.key)))
        return rc;
    if (v.a.follow)
        cli_catch_signals();
    v.entries = json_array();
    rc = run_logs(&v);
    json_decref(v.entries);
    free(v.cursor);
    session_close(&v.s);
    return rc;
}
