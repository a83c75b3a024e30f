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
    "       spore start <workflow> --inputs <path> [--key <prefix>] [--db <path>] [--json]\n"
    "\n"
    "<workflow> is a JSON package file, a workflow folder (or its workflow.dot)\n"
    "or an artifact made by spore build (the run records its digest).\n"
    "\n"
    "Creates a run and returns. The input defaults to {}. The start key defaults to\n"
    "a fresh key_<16 hex>; starting again with the same key names the same run\n"
    "(created: false).\n"
    "\n"
    "With --inputs, starts one run per line of <path> (JSON Lines: one input per\n"
    "line, blank lines skipped, at most 10000), a thousand at a time with one\n"
    "flush to disk each. With --key, the run of line N gets the start key\n"
    "<prefix>-<N>, so the same command again names the same runs (a backfill that\n"
    "was cut off is finished by running it again). A line that is not JSON, or a\n"
    "run the workflow refuses, fails alone; the exit code is then that of its\n"
    "error. --json prints {runs: [{line, runId, startKey, created} | {line, error}],\n"
    "started, existing, refused}.\n";

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
    const char *input, *input_file, *inputs, *key;
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
        {"--inputs", true, &a->inputs, NULL},
        {"--key", true, &a->key, NULL},
        {NULL, false, NULL, NULL},
    };
    return cli_begin(c, argc, argv, opts, help, 1, "one workflow (file, folder or artifact)");
}

/* ---- spore start --inputs: a run per line, a thousand to a flush ---- */

#define INPUT_LINES_MAX 10000

/* The lines of an --inputs file: each one's input, or why it is refused;
 * blank lines have neither. */
typedef struct input_lines {
    size_t n;
    json_t **inputs;
    sp_error *errs;
} input_lines;

static void lines_free(input_lines *l)
{
    for (size_t i = 0; i < l->n; i++) {
        json_decref(l->inputs[i]);
        sp_error_clear(&l->errs[i]);
    }
    free(l->inputs), free(l->errs);
    memset(l, 0, sizeof *l);
}

static bool blank(const char *line)
{
    return line[strspn(line, " \t\r")] == '\0';
}

static int read_lines(const char *path, input_lines *l, sp_error *err)
{
    memset(l, 0, sizeof *l);
    size_t len;
    char *bytes = cli_read_file(path, SP_WORKFLOW_FILE_MAX, &len, err);
    if (!bytes)
        return -1;
    size_t n = len && bytes[len - 1] != '\n'; /* lines: a last one without its newline too */
    for (size_t i = 0; i < len; i++)
        n += bytes[i] == '\n';
    if (n > INPUT_LINES_MAX || !(l->inputs = calloc(n + 1, sizeof *l->inputs)) ||
        !(l->errs = calloc(n + 1, sizeof *l->errs))) {
        free(bytes), free(l->inputs);
        l->inputs = NULL;
        return n > INPUT_LINES_MAX
                   ? sp_fail(err, "usage", "%s has more than %d lines", path, INPUT_LINES_MAX)
                   : sp_oom(err);
    }
    char *end = bytes + len;
    for (char *line = bytes, *next; l->n < n; line = next, l->n++) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        next = nl ? nl + 1 : end;
        *(nl ? nl : end) = '\0';
        char what[32];
        snprintf(what, sizeof what, "line %zu", l->n + 1);
        if (strlen(line) != (size_t)((nl ? nl : end) - line))
            sp_fail(&l->errs[l->n], "json.invalid", "%s holds a NUL byte", what);
        else if (!blank(line))
            l->inputs[l->n] = sp_json_argument(what, line, &l->errs[l->n]);
    }
    free(bytes);
    return 0;
}

/* One call's worth of lines (at most SP_START_MANY_MAX), as
 * sp_engine_start_many takes them. */
typedef struct chunk {
    size_t m;
    size_t at[SP_START_MANY_MAX];
    const json_t *inputs[SP_START_MANY_MAX];
    const char *keys[SP_START_MANY_MAX];
    char names[SP_START_MANY_MAX][SP_STORE_ID_MAX + 1];
    sp_start_result res[SP_START_MANY_MAX];
    sp_error errs[SP_START_MANY_MAX];
} chunk;

/* The lines from `first` on, until the chunk is full; the line after the
 * last one taken. */
static size_t chunk_fill(chunk *k, const input_lines *l, const char *prefix, size_t first)
{
    size_t i = first;
    k->m = 0;
    for (; i < l->n && k->m < SP_START_MANY_MAX; i++) {
        if (!l->inputs[i])
            continue;
        size_t j = k->m++;
        snprintf(k->names[j], sizeof k->names[j], "%s-%zu", prefix ? prefix : "", i + 1);
        k->at[j] = i, k->inputs[j] = l->inputs[i], k->keys[j] = prefix ? k->names[j] : NULL;
        memset(&k->errs[j], 0, sizeof k->errs[j]);
    }
    return i;
}

/* Starts every line's run, a chunk at a time; each line's answer in out[]
 * and l->errs[]. */
static int start_all(session *s, const start_request *q, const char *prefix, input_lines *l,
                     sp_start_result *out)
{
    chunk *k = malloc(sizeof *k);
    sp_error err = {0};
    if (!k)
        return session_fail(s, (sp_oom(&err), &err));
    const char *artifact = q->src.artifact_digest[0] ? q->src.artifact_digest : NULL;
    int rc = 0;
    for (size_t i = 0; i < l->n && !rc;) {
        i = chunk_fill(k, l, prefix, i);
        if (k->m && sp_engine_start_many(s->engine, q->src.doc, q->src.dir, artifact, k->m,
                                         k->inputs, k->keys, k->res, k->errs, &err) < 0) {
            rc = session_fail(s, &err);
            break;
        }
        for (size_t j = 0; j < k->m; j++)
            out[k->at[j]] = k->res[j], l->errs[k->at[j]] = k->errs[j];
    }
    free(k);
    return rc;
}

static json_t *line_json(const input_lines *l, const sp_start_result *out, size_t i)
{
    if (l->errs[i].code[0])
        return json_pack("{s:I,s:{s:s,s:s}}", "line", (json_int_t)(i + 1), "error", "code",
                         l->errs[i].code, "message", l->errs[i].message);
    return json_pack("{s:I,s:s,s:s,s:b}", "line", (json_int_t)(i + 1), "runId",
                     out[i].key.run_id, "startKey", out[i].start_key, "created", out[i].created);
}

/* Each line's answer, and the count of each kind; the exit code: that of
 * the first refused line's error, else OK. */
static int report_lines(const cli *c, const input_lines *l, const sp_start_result *out)
{
    json_int_t started = 0, existing = 0, refused = 0;
    int rc = EXIT_OK;
    json_t *runs = json_array();
    for (size_t i = 0; i < l->n; i++) {
        bool failed = l->errs[i].code[0] != '\0';
        if (!failed && !l->inputs[i])
            continue; /* blank */
        if (failed && rc == EXIT_OK)
            rc = cli_exit_for(l->errs[i].code);
        started += !failed && out[i].created, existing += !failed && !out[i].created;
        refused += failed;
        if (c->json)
            json_array_append_new(runs, line_json(l, out, i));
        else if (failed)
            printf("line %zu: %s: %s\n", i + 1, l->errs[i].code, l->errs[i].message);
        else
            printf("%s run %s (start key %s)\n", out[i].created ? "started" : "existing",
                   out[i].key.run_id, out[i].start_key);
    }
    if (c->json)
        cli_print_json(json_pack("{s:o,s:I,s:I,s:I}", "runs", runs, "started", started,
                                 "existing", existing, "refused", refused));
    else
        json_decref(runs), printf("%lld started, %lld existing, %lld refused\n",
                                  (long long)started, (long long)existing, (long long)refused);
    return rc;
}

static int start_lines(cli *c, const start_args *a)
{
    sp_error err = {0};
    if (a->input || a->input_file) {
        sp_fail(&err, "usage", "give --inputs, or --input or --input-file, not both");
        return cli_error(c, EXIT_USAGE, &err);
    }
    input_lines l;
    if (read_lines(a->inputs, &l, &err))
        return cli_error(c, cli_exit_for(err.code), &err);
    start_args none = {0};
    start_request q;
    int rc = read_request(c, &none, &q);
    if (rc) {
        lines_free(&l);
        return rc;
    }
    session s;
    sp_start_result *out = calloc(l.n + 1, sizeof *out);
    if (!out)
        rc = cli_error(c, EXIT_INTERNAL, (sp_oom(&err), &err));
    else if (!(rc = session_open(&s, c))) {
        rc = start_all(&s, &q, a->key, &l, out);
        if (!rc)
            rc = report_lines(c, &l, out);
        session_close(&s);
    }
    free(out);
    request_free(&q);
    lines_free(&l);
    return rc;
}

int cmd_start(int argc, char **argv)
{
    cli c = {.command = "start"};
    start_args a = {0};
    int rc = parse(&c, argc, argv, &a, START_HELP);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    if (a.inputs)
        return start_lines(&c, &a);
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
