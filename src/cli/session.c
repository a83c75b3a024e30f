/*
 * session.c - opening the store and engine for a subcommand, signals and
 * exit codes (see session.h).
 */
#include "cli/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json/decimal.h"

atomic_int cli_interrupted = 0;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&cli_interrupted, 1);
}

void cli_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* --concurrency: 1 .. SP_ENGINE_CONCURRENCY_MAX steps at once. */
static int parse_concurrency(const char *text, uint32_t *out, sp_error *err)
{
    if (!text)
        return 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || text[0] == '-' || v == 0 || v > SP_ENGINE_CONCURRENCY_MAX)
        return sp_fail(err, CLI_INVALID_VALUE, "--concurrency takes a number of steps from 1 to %u",
                       SP_ENGINE_CONCURRENCY_MAX);
    *out = (uint32_t)v;
    return 0;
}

int cli_parse_ms(const char *text, const char *name, uint64_t *out, sp_error *err)
{
    if (!text)
        return 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || text[0] == '-' || v == 0 || v > 86400000ULL * 365)
        return sp_fail(err, CLI_INVALID_VALUE, "%s takes a positive number of milliseconds", name);
    *out = v;
    return 0;
}

/* --max-wait: a duration, milliseconds or with a unit (500ms, 30s, 5m, 1h). */
static int parse_duration(const char *text, const char *name, uint64_t *out, sp_error *err)
{
    if (!text)
        return 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    unsigned long long unit = strcmp(end, "") == 0 || strcmp(end, "ms") == 0 ? 1
                              : strcmp(end, "s") == 0                        ? 1000
                              : strcmp(end, "m") == 0                        ? 60000
                              : strcmp(end, "h") == 0                        ? 3600000
                                                                             : 0;
    if (!*text || text[0] == '-' || end == text || !unit || v == 0 ||
        v > 86400000ULL * 365 / unit)
        return sp_fail(err, CLI_INVALID_VALUE,
                       "%s takes a positive duration: milliseconds, or a number with ms, s, m or "
                       "h (e.g. 30s, 5m)",
                       name);
    *out = v * unit;
    return 0;
}

/* "3 s", "2.5 s" */
static void seconds(uint64_t ms, char *out, size_t n)
{
    if (ms % 1000 == 0 || ms >= 100000)
        snprintf(out, n, "%llu s", (unsigned long long)(ms / 1000));
    else
        snprintf(out, n, "%llu.%llu s", (unsigned long long)(ms / 1000),
                 (unsigned long long)(ms % 1000 / 100));
}

/* {"progress": {"storeFault": {...}}} or {"progress": {"storeRecovered": {...}}}. */
static json_t *store_fault_json(const sp_engine_fault *f)
{
    if (f->state == SP_FAULT_RECOVERED)
        return json_pack("{s:{s:{s:s,s:s,s:o}}}", "progress", "storeRecovered", "code", f->code,
                         "message", f->message, "failedForMs", sp_decimal_json(f->failing_for_ms));
    return json_pack("{s:{s:{s:s,s:s,s:o,s:o,s:o}}}", "progress", "storeFault", "code", f->code,
                     "message", f->message, "retryInMs", sp_decimal_json(f->retry_in_ms),
                     "failingForMs", sp_decimal_json(f->failing_for_ms), "giveUpAfterMs",
                     f->give_up_after_ms ? sp_decimal_json(f->give_up_after_ms) : json_null());
}

static void print_store_fault_text(const sp_engine_fault *f)
{
    char lasted[32], bound[32];
    seconds(f->failing_for_ms, lasted, sizeof lasted);
    seconds(f->give_up_after_ms, bound, sizeof bound);
    flockfile(stderr);
    if (isatty(STDERR_FILENO) && isatty(STDOUT_FILENO))
        fputs("\r\033[K", stderr); /* over a progress line */
    if (f->state == SP_FAULT_RECOVERED)
        fprintf(stderr, "spore: the store works again (it failed for %s)\n", lasted);
    else if (f->give_up_after_ms)
        fprintf(stderr,
                "spore: %s: %s — retrying in %llu ms (failing for %s, giving up after %s)\n",
                f->code, f->message, (unsigned long long)f->retry_in_ms, lasted, bound);
    else
        fprintf(stderr, "spore: %s: %s — retrying in %llu ms (failing for %s; a worker retries "
                        "until the store works again)\n",
                f->code, f->message, (unsigned long long)f->retry_in_ms, lasted);
    funlockfile(stderr);
}

/* The engine's store_fault hook: one line on stderr per report (text, or one
 * JSON object a line with --json: stdout keeps the one final answer). */
static void print_store_fault(void *ctx, const sp_engine_fault *f)
{
    const cli *c = ctx;
    if (!c->json) {
        print_store_fault_text(f);
        return;
    }
    json_t *obj = store_fault_json(f);
    if (obj)
        cli_print_json_to(stderr, obj);
}

/* Only commands that run steps take part in fast takeover: the others
 * never create the worker lock directory beside the store. */
static bool runs_steps(const cli *c)
{
    return c->store_use == CLI_STORE_RUNS || c->store_use == CLI_STORE_DRIVES;
}

/* Another user's lock directory (a store shared on purpose): this worker
 * goes without fast takeover rather than failing. */
static bool lock_dir_usable(const char *dir)
{
    struct stat st;
    return lstat(dir, &st) != 0 || st.st_uid == geteuid();
}

/* The tuning options, checked before the store is opened (a refused value
 * creates nothing). */
static int tuning(const cli *c, sp_engine_config *cfg, sp_error *err)
{
    *cfg = sp_engine_defaults();
    if (cli_parse_ms(c->lease_ms, "--lease-ms", &cfg->lease_ms, err) ||
        cli_parse_ms(c->heartbeat_ms, "--heartbeat-ms", &cfg->heartbeat_ms, err) ||
        cli_parse_ms(c->poll_ms, "--poll-ms", &cfg->poll_ms, err) ||
        cli_parse_ms(c->grace_ms, "--grace-ms", &cfg->shutdown_grace_ms, err) ||
        cli_parse_ms(c->store_retry_ms, "--store-retry-ms", &cfg->store_retry_ms, err) ||
        parse_concurrency(c->concurrency, &cfg->max_concurrent_activities, err) ||
        parse_duration(c->max_wait, "--max-wait", &cfg->max_wait_ms, err))
        return -1;
    return 0;
}

/* Tracing for the commands that run steps, from the OTEL_* variables: a
 * setting it refuses leaves the command without it (a warning), never
 * failing it. */
static const char *env(const char *name) { return getenv(name); }

static void trace_start(session *s, sp_engine_config *cfg)
{
    if (!runs_steps(s->c))
        return;
    sp_error err = {0};
    s->otel = sp_otel_start(env, &err);
    if (s->otel)
        cfg->observer = sp_otel_observer(s->otel);
    else if (err.code[0])
        fprintf(stderr, "spore: tracing off: %s: %s\n", err.code, err.message);
    sp_error_clear(&err);
}

json_t *session_trace_end(session *s)
{
    if (!s->otel || s->trace_ended)
        return NULL;
    s->trace_ended = true;
    sp_otel_stats st;
    sp_otel_stop(s->otel, &st);
    if (st.exported || st.dropped)
        fprintf(stderr,
                "spore: tracing: %llu spans exported, %llu dropped (queue full %llu, export "
                "failed %llu, unsent at exit %llu; %llu failed requests)\n",
                (unsigned long long)st.exported, (unsigned long long)st.dropped,
                (unsigned long long)st.dropped_full, (unsigned long long)st.dropped_failed,
                (unsigned long long)st.dropped_unsent, (unsigned long long)st.exports_failed);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "exported", (json_int_t)st.exported,
                     "dropped", (json_int_t)st.dropped, "droppedQueueFull",
                     (json_int_t)st.dropped_full, "droppedExportFailed",
                     (json_int_t)st.dropped_failed, "droppedUnsent",
                     (json_int_t)st.dropped_unsent, "failedExports",
                     (json_int_t)st.exports_failed);
}

/* What the engine gets from the opened store: its lock directory. */
static void engine_config(session *s, sp_engine_config *cfg)
{
    cli *c = s->c;
    if (runs_steps(c) && sp_engine_lock_dir(s->store, s->lock_dir, sizeof s->lock_dir) == 0 &&
        lock_dir_usable(s->lock_dir))
        cfg->lock_dir = s->lock_dir;
    cfg->interrupt = &cli_interrupted;
    cfg->store_fault = print_store_fault;
    cfg->store_fault_ctx = c;
}

int session_open(session *s, cli *c)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    const char *db = c->db ? c->db : getenv("SPORE_DB");
    snprintf(s->db, sizeof s->db, "%s", db && *db ? db : "spore.db");
    sp_error err = {0};
    sp_engine_config cfg;
    if (tuning(c, &cfg, &err))
        return cli_error(c, EXIT_USAGE, &err);
    sp_store_open_opts opts = {
        .mode = c->store_use == CLI_STORE_RUNS ? SP_STORE_OPEN_OR_CREATE : SP_STORE_OPEN_EXISTING,
        .allow_shared = c->allow_shared_store,
        .reads_only = c->store_use == CLI_STORE_READS,
    };
    s->store = sp_store_open_with(s->db, &opts, &err);
    if (!s->store)
        return session_fail(s, &err);
    engine_config(s, &cfg);
    trace_start(s, &cfg);
    s->engine = sp_engine_new(s->store, &cfg, &err);
    if (!s->engine) {
        int code = session_fail(s, &err);
        session_close(s);
        return code;
    }
    return 0;
}

void session_close(session *s)
{
    sp_engine_free(s->engine); /* first: it may still tell the observer */
    json_decref(session_trace_end(s));
    sp_otel_free(s->otel);
    sp_store_close(s->store);
    s->engine = NULL;
    s->store = NULL;
    s->otel = NULL;
}

int session_fail(session *s, sp_error *err)
{
    int code = cli_exit_for(err->code);
    if (strcmp(err->code, "store.constraint") == 0)
        code = EXIT_INTERNAL;
    return cli_error(s->c, code, err);
}

int session_run_key(session *s, const char *run_id, sp_run_key *key)
{
    sp_error err = {0};
    if (sp_engine_key(s->engine, run_id, key, &err))
        return cli_error(s->c, EXIT_USAGE, &err);
    sp_run_view v;
    bool found = false;
    if (sp_store_get_run(s->store, key, &v, &found, &err) != SP_STORE_OK)
        return session_fail(s, &err);
    if (!found) {
        sp_fail(&err, "run.not-found", "no run %s in %s (see spore list)", run_id,
                sp_store_location(s->store));
        return cli_error(s->c, EXIT_USAGE, &err);
    }
    sp_run_view_free(&v);
    return 0;
}

int session_open_run(session *s, cli *c, const char *run_id, sp_run_key *key)
{
    int rc = session_open(s, c);
    if (rc)
        return rc;
    if ((rc = session_run_key(s, run_id, key)))
        session_close(s);
    return rc;
}

int session_begin_run(session *s, cli *c, int argc, char **argv, const cli_option *opts,
                      const char *help, int positional, sp_run_key *key)
{
    int rc = cli_begin(c, argc, argv, opts, help, positional,
                       positional == 1 ? "a run ID" : "a run ID and one more argument");
    return rc ? rc : session_open_run(s, c, c->positional[0], key);
}

int session_exit_for_park(sp_park park)
{
    switch (park) {
    case SP_PARK_COMPLETED: return EXIT_OK;
    case SP_PARK_FAILED: return EXIT_RUN_FAILED;
    case SP_PARK_WAITING: return EXIT_WAITING;
    case SP_PARK_INTERVENTION: return EXIT_INTERVENTION;
    case SP_PARK_QUARANTINED: return EXIT_QUARANTINED;
    case SP_PARK_ASYNC: return EXIT_ASYNC;
    case SP_PARK_INTERRUPTED: return EXIT_INTERRUPTED;
    case SP_PARK_TIMER: return EXIT_TIMER;
    case SP_PARK_CANCELLED: return EXIT_CANCELLED;
    }
    return EXIT_INTERNAL;
}
