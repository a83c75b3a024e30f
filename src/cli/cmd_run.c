/*
 * cmd_run.c - `spore start` and `spore run` (cli.md §2): create a run (the
 * same key names the same run), and for `run` work until it is terminal or
 * parked, with progress on a terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/hints.h"
#include "cli/session.h"
#include "cli/views.h"
#include "cli/workflow_file.h"

static const char START_HELP[] =
    "usage: spore start <workflow> [--input <json> | --input-file <path>] [--key <key>]\n"
    "                   [--db <path>] [--json]\n"
    "\n"
    "<workflow> is a JSON package file, a workflow folder (or its workflow.dot)\n"
    "or an artifact made by spore build (the run records its digest).\n"
    "\n"
    "Creates a run and returns. The input defaults to {}. The start key defaults to\n"
    "a fresh key_<16 hex>; starting again with the same key names the same run\n"
    "(created: false).\n";

static const char RUN_HELP[] =
    "usage: spore run <workflow> [--input <json> | --input-file <path>] [--key <key>]\n"
    "                 [--db <path>] [--json] [--lease-ms N] [--heartbeat-ms N] [--poll-ms N]\n"
    "                 [--grace-ms N] [--store-retry-ms N] [--concurrency N] [--max-wait D]\n"
    "\n"
    "<workflow> is a JSON package file, a workflow folder (or its workflow.dot)\n"
    "or an artifact made by spore build (the run records its digest).\n"
    "\n"
    "Starts (or, with an existing --key, resumes) a run and works on it until it is\n"
    "terminal or parked. Kill it at any moment and run it again: completed steps\n"
    "never run twice.\n"
    "\n"
    "A store that fails (read-only, full, unreachable) is reported on stderr within\n"
    "a second and retried (100 ms doubling to 5 s); if it works again within\n"
    "--store-retry-ms (default 60000), the run goes on as if nothing happened,\n"
    "else spore run gives up with the store's error (exit 10).\n"
    "\n"
    "A run of a spore.workflow/0.2 workflow that waits for a timer (a sleep, a\n"
    "signal's timeout) is served through timers due within --max-wait (a\n"
    "duration: 500ms, 30s, 5m, 1h; default 5m) and parks for the later ones.\n"
    "\n"
    "Exit: 0 completed, 1 failed, 3 waiting for a signal, 4 needs intervention,\n"
    "5 quarantined, 6 waiting for an async or external step, 7 waiting for a timer\n"
    "due beyond --max-wait, 8 cancelled, 10 store or internal error, 130\n"
    "interrupted (SIGINT/SIGTERM after a graceful stop).\n";

typedef struct start_args {
    const char *input, *input_file, *key;
} start_args;

static json_t *read_input(const start_args *a, sp_error *err)
{
    if (a->input && a->input_file) {
        sp_fail(err, "usage", "give --input or --input-file, not both");
        return NULL;
    }
    if (a->input)
        return sp_json_argument("--input", a->input, err);
    if (a->input_file)
        return sp_workflow_file_read(a->input_file, err);
    return NULL; /* none given: {} for a new run, any input for an existing one */
}

/* What start needs, read before the store is opened: a missing or broken
 * workflow or input file creates no store. */
typedef struct start_request {
    sp_workflow_source src; /* the workflow, and where its runners are sealed from */
    json_t *input;          /* NULL: none given */
} start_request;

static void request_free(start_request *q)
{
    sp_workflow_source_close(&q->src);
    json_decref(q->input);
}

static int read_request(cli *c, const start_args *a, start_request *q)
{
    sp_error err = {0};
    memset(q, 0, sizeof *q);
    if (sp_workflow_source_open(c->positional[0], &q->src, &err) ||
        (!(q->input = read_input(a, &err)) && err.code[0])) {
        request_free(q);
        return cli_error(c, cli_exit_for(err.code), &err);
    }
    return 0;
}

/* Open the store and start (or find) the run. */
static int open_and_start(cli *c, const start_args *a, session *s, sp_start_result *out)
{
    start_request q;
    int rc = read_request(c, a, &q);
    if (rc)
        return rc;
    if ((rc = session_open(s, c))) {
        request_free(&q);
        return rc;
    }
    sp_error err = {0};
    const char *artifact = q.src.artifact_digest[0] ? q.src.artifact_digest : NULL;
    if (sp_engine_start_artifact(s->engine, q.src.doc, q.src.dir, artifact, q.input, a->key, out,
                                 &err)) {
        rc = session_fail(s, &err);
        session_close(s);
    }
    request_free(&q);
    return rc;
}

static int parse(cli *c, int argc, char **argv, start_args *a, const char *help)
{
    const cli_option opts[] = {
        {"--input", true, &a->input, NULL},
        {"--input-file", true, &a->input_file, NULL},
        {"--key", true, &a->key, NULL},
        {NULL, false, NULL, NULL},
    };
    return cli_begin(c, argc, argv, opts, help, 1, "one workflow (file, folder or artifact)");
}

int cmd_start(int argc, char **argv)
{
    cli c = {.command = "start"};
    start_args a = {0};
    int rc = parse(&c, argc, argv, &a, START_HELP);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    session s;
    sp_start_result r;
    if ((rc = open_and_start(&c, &a, &s, &r)))
        return rc;
    if (c.json)
        cli_print_json(json_pack("{s:s,s:s,s:b}", "runId", r.key.run_id, "startKey", r.start_key,
                                 "created", r.created));
    else
        printf("%s run %s (start key %s)\n", r.created ? "started" : "existing", r.key.run_id,
               r.start_key);
    session_close(&s);
    return rc;
}

/* ---- progress on a terminal ---- */

typedef struct progress {
    bool on;
    bool printed;
} progress;

static void show_progress(void *ctx, const sp_run_view *v, uint64_t elapsed_ms)
{
    progress *p = ctx;
    if (!p->on)
        return;
    json_t *snap = v->snapshot ? json_loadb(v->snapshot, v->snapshot_len, 0, NULL) : NULL;
    json_t *pos = snap ? json_object_get(snap, "position") : NULL;
    json_t *inv = snap ? json_object_get(snap, "invocation") : NULL;
    const char *node = json_is_object(pos) ? json_string_value(json_object_get(pos, "nodeId")) : "-";
    long long attempt = json_is_object(inv) ? json_integer_value(json_object_get(inv, "attempt")) : 0;
    printf("\r\033[K%s  %s  at %s", v->key.run_id, v->status, node ? node : "-");
    if (attempt)
        printf("  attempt %lld", attempt);
    printf("  %llu.%llus", (unsigned long long)(elapsed_ms / 1000),
           (unsigned long long)(elapsed_ms % 1000 / 100));
    fflush(stdout);
    p->printed = true;
    json_decref(snap);
}

static void end_progress(progress *p)
{
    if (p->printed)
        printf("\r\033[K");
    fflush(stdout);
}

/* The status a run parked with, and what to do next (hints.h); takes
 * `extra` (more JSON members). */
static void print_final(session *s, const sp_run_view *v, sp_park park, json_t *extra)
{
    json_t *step = sp_engine_step_view(s->engine, v);
    if (s->c->json) {
        json_t *out = view_status_json(v, step);
        if (out && extra)
            json_object_update(out, extra);
        if (out && park == SP_PARK_INTERRUPTED)
            json_object_set_new(out, "interrupted", json_true());
        if (out)
            hints_add(s, v, step, out, NULL);
        cli_print_json(out);
    } else {
        view_status_text(stdout, v, step);
        if (park == SP_PARK_INTERRUPTED)
            printf("interrupted: the run continues with the next `spore resume`, `spore run` or "
                   "`spore worker`\n");
        hints_add(s, v, step, NULL, stdout);
    }
    json_decref(step);
    json_decref(extra);
}

/* Drive `key` until parked and print the final status; shared with worker. */
int cli_drive(session *s, const sp_run_key *key, json_t *extra)
{
    cli_catch_signals();
    progress p = {isatty(STDOUT_FILENO) && !s->c->json, false};
    sp_park park;
    sp_error err = {0};
    int rc = sp_engine_run_until_parked(s->engine, key, &park, p.on ? show_progress : NULL, &p,
                                        &err); /* no terminal: no progress, no reads for it */
    end_progress(&p);
    if (rc) {
        json_decref(extra);
        return session_fail(s, &err);
    }
    sp_run_view v;
    bool found = false;
    if (sp_store_get_run(s->store, key, &v, &found, &err) != SP_STORE_OK || !found) {
        json_decref(extra);
        if (!found && !err.code[0])
            sp_fail(&err, "run.not-found", "run %s vanished", key->run_id);
        return session_fail(s, &err);
    }
    json_t *trace = session_trace_end(s); /* the run parked: flush its spans now */
    if (trace) {
        if (!extra)
            extra = json_object();
        json_object_set_new(extra, "trace", trace);
    }
    print_final(s, &v, park, extra);
    sp_run_view_free(&v);
    return session_exit_for_park(park);
}

int cmd_run(int argc, char **argv)
{
    cli c = {.command = "run"};
    start_args a = {0};
    int rc = parse(&c, argc, argv, &a, RUN_HELP);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    session s;
    sp_start_result r;
    if ((rc = open_and_start(&c, &a, &s, &r)))
        return rc;
    if (!c.json && isatty(STDOUT_FILENO))
        printf("%s run %s (start key %s)\n", r.created ? "started" : "resuming", r.key.run_id,
               r.start_key);
    rc = cli_drive(&s, &r.key, json_pack("{s:b}", "created", r.created));
    session_close(&s);
    return rc;
}
