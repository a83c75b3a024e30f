/*
 * bench_pg.c - the engine on PostgreSQL: per-step overhead and throughput
 * with 1 and 4 workers, printed next to the raw cost of the same number of
 * PostgreSQL commits measured in the same run against the same server.
 *
 * usage: bench_pg [--db URL] [--steps N]
 *   --db URL   the server (default $SPORE_TEST_PG; scripts/bench.sh starts a
 *              private one with scripts/pg.sh when neither is given)
 *   --steps N  steps per measurement (default 200), as 4 runs of N/4 no-op
 *              `native` steps in a line
 *
 * Method. Each measurement gets a fresh schema of the database. Workers are
 * engines on threads of this process, each with its own store instance (its
 * own connection), serving (sp_engine_serve) until every run completed; the
 * time runs from the start of serving to the moment a monitor (its own
 * connection, polling every 2 ms) sees the last run completed. Per-step cost
 * = time / steps for 1 worker; throughput = steps / time. A step is one
 * durable commit (its result, the turn on it and the next claim in one batch;
 * docs/step-path.md), so the baseline is N raw commits, each `BEGIN; INSERT
 * one small row; COMMIT` over a prepared statement, on 1 connection and on 4
 * connections at once. The server keeps its durable defaults (fsync, synchronous_commit):
 * a commit waits for the WAL flush, whose cost the disk decides.
 *
 * What it must never do: assert on speed (benchmarks print, tests assert),
 * print the URL's password, or report a run that did not complete.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "runners/native.h"
#include "store/store.h"

#include "measure.h"

#define RUNS 4

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_pg: %s: %s\n", what, detail);
    exit(2);
}

static const char *g_url;

static PGconn *connect_or_die(void)
{
    PGconn *c = PQconnectdb(g_url);
    if (PQstatus(c) != CONNECTION_OK)
        die("connect", "the server does not accept the URL");
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

static void exec_or_die(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        die(sql, PQresultErrorMessage(r));
    PQclear(r);
}

/* ---- baseline: raw commits ---- */

typedef struct commit_job {
    size_t n;
    double *samples;
    int id;
} commit_job;

static void *commit_thread(void *p)
{
    commit_job *j = p;
    PGconn *c = connect_or_die();
    PGresult *r = PQprepare(c, "ins", "INSERT INTO spore_bench_commits (v) VALUES ($1)", 1, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        die("prepare", PQresultErrorMessage(r));
    PQclear(r);
    const char *v[] = {"a small row of thirty-two bytes."};
    for (size_t i = 0; i < j->n; i++) {
        double t0 = bench_now_ms();
        exec_or_die(c, "BEGIN");
        r = PQexecPrepared(c, "ins", 1, v, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            die("insert", PQresultErrorMessage(r));
        PQclear(r);
        exec_or_die(c, "COMMIT");
        j->samples[i] = bench_now_ms() - t0;
    }
    PQfinish(c);
    return NULL;
}

typedef struct commits {
    size_t n;
    double total_ms, p50, p99;
} commits;

static commits bench_commits(size_t n, int conns)
{
    PGconn *c = connect_or_die();
    exec_or_die(c, "DROP TABLE IF EXISTS spore_bench_commits;"
                   "CREATE TABLE spore_bench_commits (id BIGINT GENERATED ALWAYS AS IDENTITY"
                   " PRIMARY KEY, v TEXT NOT NULL)");
    commit_job jobs[RUNS];
    pthread_t t[RUNS];
    double *all = calloc(n, sizeof *all);
    double start = bench_now_ms();
    for (int i = 0; i < conns; i++) {
        jobs[i] = (commit_job){n / (size_t)conns, all + (size_t)i * (n / (size_t)conns), i};
        pthread_create(&t[i], NULL, commit_thread, &jobs[i]);
    }
    for (int i = 0; i < conns; i++)
        pthread_join(t[i], NULL);
    commits out = {n / (size_t)conns * (size_t)conns, bench_now_ms() - start, 0, 0};
    qsort(all, out.n, sizeof *all, bench_cmp_double);
    out.p50 = all[out.n / 2];
    out.p99 = all[(size_t)((double)out.n * 0.99)];
    free(all);
    exec_or_die(c, "DROP TABLE spore_bench_commits");
    PQfinish(c);
    return out;
}

/* ---- the engine ---- */

static int noop(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_succeed(call, "ok", NULL, 0);
}

static json_t *linear_workflow(size_t n)
{
    json_t *nodes = json_object();
    char id[32], next[32];
    for (size_t i = 0; i < n; i++) {
        snprintf(id, sizeof id, "s%zu", i);
        snprintf(next, sizeof next, i + 1 < n ? "s%zu" : "done", i + 1);
        json_object_set_new(nodes, id,
                            json_pack("{s:s,s:s,s:{s:s}}", "kind", "activity", "action", "step",
                                      "outcomes", "ok", next));
    }
    json_object_set_new(nodes, "done", json_pack("{s:s}", "kind", "complete"));
    json_t *w = json_pack("{s:s,s:s,s:s,s:{s:{s:s,s:s,s:s}},s:o}", "format",
                          "runspore.workflow/0.1", "name", "bench-pg", "start", "s0", "actions",
                          "step", "kind", "native", "function", "noop", "effect", "idempotent",
                          "nodes", nodes);
    if (!w)
        die("workflow", "cannot build");
    return w;
}

typedef struct worker {
    const char *location;
    sp_native_registry *natives;
    atomic_int *stop;
    sp_store *store;
    sp_engine *engine;
} worker;

static void *serve(void *p)
{
    worker *w = p;
    sp_error err = {0};
    if (sp_engine_serve(w->engine, &err))
        fprintf(stderr, "bench_pg: worker: %s: %s\n", err.code, err.message);
    return NULL;
}

static sp_engine *engine_on(const char *location, sp_native_registry *natives,
                            atomic_int *stop, sp_store **store)
{
    sp_error err = {0};
    *store = sp_store_open(location, NULL, &err);
    if (!*store)
        die(err.code, err.message);
    sp_engine_config cfg = sp_engine_defaults();
    cfg.natives = natives;
    cfg.interrupt = stop;
    cfg.poll_ms = 5;
    sp_engine *e = sp_engine_new(*store, &cfg, &err);
    if (!e)
        die(err.code, err.message);
    return e;
}

typedef struct engine_result {
    size_t steps;
    double total_ms;
    double commits_per_step;
} engine_result;

static bool all_completed(sp_store *s, const sp_run_key *keys)
{
    for (int i = 0; i < RUNS; i++) {
        sp_run_view v;
        bool found = false;
        sp_error err = {0};
        if (sp_store_get_run(s, &keys[i], &v, &found, &err) != SP_STORE_OK || !found)
            die("get_run", err.message);
        bool done = strcmp(v.status, "completed") == 0;
        if (strcmp(v.status, "failed") == 0 || v.quarantined)
            die("run", "a run failed or was quarantined");
        sp_run_view_free(&v);
        if (!done)
            return false;
    }
    return true;
}

static engine_result bench_engine(size_t steps, int workers, sp_native_registry *natives)
{
    static int counter;
    char schema[64], location[4096], sql[256];
    snprintf(schema, sizeof schema, "spore_bench_%d_%d", (int)getpid(), ++counter);
    snprintf(location, sizeof location, "%s%coptions=-csearch_path%%3D%s", g_url,
             strchr(g_url, '?') ? '&' : '?', schema);
    PGconn *admin = connect_or_die();
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", schema, schema);
    exec_or_die(admin, sql);

    atomic_int stop = 0;
    sp_store *mon_store;
    sp_engine *starter = engine_on(location, natives, &stop, &mon_store);
    sp_run_key keys[RUNS];
    size_t per_run = steps / RUNS;
    sp_error err = {0};
    for (int i = 0; i < RUNS; i++) {
        json_t *w = linear_workflow(per_run);
        sp_start_result started;
        if (sp_engine_start(starter, w, NULL, NULL, &started, &err))
            die(err.code, err.message);
        json_decref(w);
        keys[i] = started.key;
    }
    worker ws[RUNS];
    pthread_t t[RUNS];
    for (int i = 0; i < workers; i++) {
        ws[i] = (worker){location, natives, &stop, NULL, NULL};
        ws[i].engine = engine_on(location, natives, &stop, &ws[i].store);
    }
    double start = bench_now_ms();
    for (int i = 0; i < workers; i++)
        pthread_create(&t[i], NULL, serve, &ws[i]);
    while (!all_completed(mon_store, keys)) {
        if (bench_now_ms() - start > 600000)
            die("engine", "the runs did not complete in 10 minutes");
        usleep(2000);
    }
    double total = bench_now_ms() - start;
    atomic_store(&stop, 1);
    for (int i = 0; i < workers; i++) {
        pthread_join(t[i], NULL);
        sp_engine_free(ws[i].engine);
        sp_store_close(ws[i].store);
    }
    sp_engine_free(starter);
    sp_store_close(mon_store);

    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.receipts", schema);
    PGresult *r = PQexec(admin, sql);
    long long receipts = PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", schema);
    exec_or_die(admin, sql);
    PQfinish(admin);
    size_t n = per_run * RUNS;
    /* per run, create_run and the turn consuming run.started are not steps */
    return (engine_result){n, total, receipts < 0 ? -1 : (double)(receipts - 2 * RUNS) / (double)n};
}

/* ---- output ---- */

static void server_version(char *out, size_t cap)
{
    PGconn *c = connect_or_die();
    PGresult *r = PQexec(c, "SELECT current_setting('server_version'), current_setting('fsync'),"
                            " current_setting('synchronous_commit')");
    snprintf(out, cap, "PostgreSQL %s (fsync %s, synchronous_commit %s)",
             PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "?",
             PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 1) : "?",
             PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 2) : "?");
    PQclear(r);
    PQfinish(c);
}

int main(int argc, char **argv)
{
    size_t steps = 200;
    g_url = getenv("SPORE_TEST_PG");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            g_url = argv[++i];
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = strtoul(argv[++i], NULL, 10);
        else
            die("usage", "bench_pg [--db postgres://...] [--steps N]");
    }
    if (!g_url || !*g_url)
        die("usage", "no server: --db postgres://... or SPORE_TEST_PG");
    steps = steps < RUNS * 2 ? RUNS * 2 : steps - steps % RUNS;
    if (steps / RUNS > 250)
        die("usage", "at most 1000 steps (a workflow holds at most 256 nodes)");

    sp_error err = {0};
    sp_native_registry *natives = sp_native_registry_new();
    if (!natives || sp_native_register(natives, "noop", noop, NULL, &err))
        die("native", err.message);
    char version[256];
    server_version(version, sizeof version);
    printf("%s; %zu no-op native steps per measurement (%d runs in parallel)\n", version, steps,
           RUNS);

    commits c1 = bench_commits(steps, 1), c4 = bench_commits(steps, RUNS);
    engine_result e1 = bench_engine(steps, 1, natives), e4 = bench_engine(steps, RUNS, natives);

    printf("\n%-26s %7s %10s %10s %9s %9s\n", "", "n", "total ms", "per s", "p50 ms", "p99 ms");
    printf("%-26s %7zu %10.1f %10.0f %9.3f %9.3f\n", "raw commits, 1 connection", c1.n, c1.total_ms,
           (double)c1.n * 1e3 / c1.total_ms, c1.p50, c1.p99);
    printf("%-26s %7zu %10.1f %10.0f %9.3f %9.3f\n", "raw commits, 4 connections", c4.n,
           c4.total_ms, (double)c4.n * 1e3 / c4.total_ms, c4.p50, c4.p99);
    printf("\n%-26s %7s %10s %10s %9s %12s\n", "", "steps", "total ms", "steps/s", "ms/step",
           "commits/step");
    printf("%-26s %7zu %10.1f %10.0f %9.3f %12.2f\n", "engine, 1 worker", e1.steps, e1.total_ms,
           (double)e1.steps * 1e3 / e1.total_ms, e1.total_ms / (double)e1.steps,
           e1.commits_per_step);
    printf("%-26s %7zu %10.1f %10.0f %9.3f %12.2f\n", "engine, 4 workers", e4.steps, e4.total_ms,
           (double)e4.steps * 1e3 / e4.total_ms, e4.total_ms / (double)e4.steps,
           e4.commits_per_step);
    double commit1 = c1.total_ms / (double)c1.n, rate4 = (double)c4.n * 1e3 / c4.total_ms;
    double step1 = e1.total_ms / (double)e1.steps, rate_e4 = (double)e4.steps * 1e3 / e4.total_ms;
    printf("\n  1 worker:  a step takes %.2f ms = %.2fx its raw commit (%.3f ms)\n", step1,
           step1 / commit1, commit1);
    printf("  4 workers: %.0f steps/s = %.2fx one worker; 4 connections commit %.0f/s raw\n",
           rate_e4, e1.total_ms / e4.total_ms, rate4);
    sp_native_registry_free(natives);
    return 0;
}
