/*
 * bench_compare.c - one interleaved comparison of spore's step path against
 * the cost of the disk and against Restate and DBOS (step-path.md, §Evidence): what
 * `make bench-compare` runs (through scripts/bench-compare.sh, which starts
 * and stops the PostgreSQL server and prepares the Restate peer).
 *
 * What it is for: R repetitions; each measures every workload back to back
 * and takes its ratios inside the repetition; the table gives the median
 * [min..max] of each value and ratio over the repetitions, beside the goals
 * of step-path.md. Workloads (steps are no-op `native` steps):
 *   - raw SQLite durable commits (WAL, synchronous=FULL, one small INSERT per
 *     BEGIN IMMEDIATE..COMMIT) on a file in the directory of spore's files,
 *     measured at the start and at the end of the repetition (their mean is
 *     the repetition's baseline: the virtual disk's flush cost drifts);
 *   - spore sequential: one run of N steps driven by
 *     sp_engine_run_until_parked, as a 1-node self-loop and as a 250-node
 *     chain whose last node loops to the first (a workflow holds at most 256
 *     nodes); the native function answers `done` on its N-th call, routed to
 *     `complete`; runs of at most 1000 steps (maxVisitsPerNode <= 1000);
 *   - spore R runs x K steps (200 x 10): R runs started (timed, like the
 *     peers' numbers), then one engine serves in this process until every
 *     run completed; then 1, 2 and 4 forked worker processes the same way, for
 *     the "2 workers / 1 worker" and "4 workers / 1 worker" ratios;
 *   - with --pg: raw autocommit INSERTs over libpq and the same spore
 *     workloads on PostgreSQL (a fresh schema per workload);
 *   - with --restate DIR: the peer's own ./run.sh (REPS=1) in that writable
 *     copy, its sequential and concurrent steps/s read from the JSON it writes;
 *   - with --dbos DIR (and --pg): DBOS's own bench.mjs (REPS=1) in that
 *     writable copy of ../peers/dbos, on the same PostgreSQL server
 *     ($SPORE_BENCH_DBOS_PGHOST/_PGPORT/_PGUSER: a role that may create
 *     databases), right after spore's PostgreSQL workloads: its sequential and
 *     concurrent steps/s and its pgbench 1-client INSERT rate.
 * Per step it reports steps/s, ms/step (p50/p99 revision to revision for the
 * sequential runs), CPU per step (getrusage around the run: this process
 * for in-process engines, the children for forked workers) and store commits
 * per step (the store's own counter, sp_store_counters, around the engine's
 * work: in-process engines only; the first turn of each run is counted).
 *
 * usage: bench_compare [--reps R] [--steps N] [--runs R] [--run-steps K]
 *                      [--quick] [--dir DIR] [--raw-ms MS] [--pg URL | --no-pg]
 *                      [--restate DIR] [--dbos DIR] [--no-fork] [--json] [--json-out FILE]
 *                      [--skipped WHAT=REASON]...
 *   --reps R (3), --steps N (1000: the sequential runs), --runs R and
 *   --run-steps K (200 x 10), --raw-ms MS (1000: each raw-commit loop);
 *   --quick: 1 repetition, 200 steps, 50 x 10, 300 ms loops (a smoke run);
 *   --dir DIR: where the SQLite files go ($TMPDIR or /tmp; the filesystem
 *   decides what a flush costs, so it is printed); --no-fork: no worker
 *   processes; --json: the JSON document instead of the table (progress
 *   lines always go to stderr); --json-out FILE: the table and the JSON in
 *   FILE; --skipped WHAT=WHY: why a peer is missing, for the table.
 *   SPORE_TEST_PG is the default of --pg; SPORE_BENCH_RESTATE of --restate;
 *   SPORE_BENCH_DBOS of --dbos.
 *
 * What it must never do: assert on speed or exit non-zero because a goal is
 * missed (benchmarks print, tests assert); report a run that did not
 * complete as throughput; print a PostgreSQL password; change spore (it only
 * drives the engine's API); leave behind a process it started.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "runners/native.h"
#include "store/store.h"

#include "measure.h"

#define MAX_REPS 50
#define SEQ_RUN_MAX 1000 /* steps per sequential run: maxVisitsPerNode <= 1000 */
#define CHAIN 250        /* nodes of the long chain (a workflow holds <= 256) */
#define MAX_WORKERS 4
#define WAIT_LIMIT_MS 600000.0 /* a workload that takes longer is reported failed */

/* ---- small helpers ---- */

static double tv_ms(struct timeval tv)
{
    return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

static double cpu_self_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)};
    nanosleep(&ts, NULL); /* a signal ends it early: callers check g_abort */
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_compare: %s: %s\n", what, detail);
    exit(2);
}

static void warn(const char *what, const char *detail)
{
    fprintf(stderr, "bench_compare: warning: %s: %s\n", what, detail);
}

static void warn_err(const char *what, const sp_error *err)
{
    char text[SP_CODE_MAX + SP_MESSAGE_MAX + 4];
    snprintf(text, sizeof text, "%s: %s", err->code, err->message);
    warn(what, text);
}

typedef struct stat3 {
    double median, min, max;
    int n;
} stat3;

/* Median [min..max] of the finite values (NaN = not measured). */
static stat3 stats_of(const double *v, int n)
{
    double s[MAX_REPS];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            s[k++] = v[i];
    stat3 r = {NAN, NAN, NAN, k};
    if (k == 0)
        return r;
    qsort(s, (size_t)k, sizeof *s, bench_cmp_double);
    r.median = k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
    r.min = s[0], r.max = s[k - 1];
    return r;
}

static double ratio(double a, double b)
{
    return isfinite(a) && isfinite(b) && b > 0 ? a / b : NAN;
}

/* ---- interrupts: stop what runs, stop every process started here ---- */

/* Shared with on_signal, which runs on whichever thread the signal lands
 * on (the engines' and stores' threads too): lock-free atomics, as the
 * engine's interrupt flag (engine.h), not volatile ones. */
_Static_assert(sizeof(pid_t) == sizeof(int), "a PID fits an atomic_int");
static atomic_int g_abort; /* also an engine's interrupt */
static atomic_int g_kids[MAX_WORKERS];
static atomic_int g_nkids;
static atomic_int g_group; /* the peer's process group, 0 when none */

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&g_abort, 1);
    for (int i = 0; i < g_nkids; i++)
        if (g_kids[i] > 0)
            kill(g_kids[i], SIGTERM);
    if (g_group > 0)
        kill(-g_group, SIGTERM);
}

static void install_signals(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal; /* no SA_RESTART: sleeps and waits end early */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* ---- where a workload's store lives ---- */

static char g_dir[4096];      /* this run's directory (SQLite files) */
static const char *g_pg_url;  /* NULL: no PostgreSQL */
static PGconn *g_pg;          /* admin connection: schemas, counts */

typedef struct place {
    bool pg;
    char location[4600]; /* what sp_store_open takes */
    char dir[4200];      /* SQLite: the workload's own directory */
    char schema[64];     /* PostgreSQL: the workload's own schema */
} place;

static bool pg_exec(const char *sql)
{
    PGresult *r = PQexec(g_pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok)
        warn(sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok;
}

static bool place_new(place *p, bool pg, const char *name)
{
    static int counter;
    memset(p, 0, sizeof *p);
    p->pg = pg;
    counter++;
    if (pg) {
        char sql[256];
        snprintf(p->schema, sizeof p->schema, "spore_bc_%d_%d", (int)getpid(), counter);
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", p->schema,
                 p->schema);
        if (!pg_exec(sql))
            return false;
        snprintf(p->location, sizeof p->location, "%s%coptions=-csearch_path%%3D%s", g_pg_url,
                 strchr(g_pg_url, '?') ? '&' : '?', p->schema);
        return true;
    }
    snprintf(p->dir, sizeof p->dir, "%s/%.32s-%d", g_dir, name, counter);
    if (mkdir(p->dir, 0700) != 0) {
        warn(p->dir, strerror(errno));
        return false;
    }
    snprintf(p->location, sizeof p->location, "%s/spore.db", p->dir);
    return true;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void place_drop(place *p)
{
    if (p->pg) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", p->schema);
        pg_exec(sql);
    } else if (p->dir[0]) {
        nftw(p->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

/* Durable commits the store handle made (sp_store_counters): a batch of
 * many steps counts once. */
static uint64_t store_commits(sp_store *s)
{
    sp_store_counters c;
    sp_store_counters_get(s, &c);
    return c.commits;
}

/* ---- baselines ---- */

typedef struct raw_out {
    double per_s, p50_ms, p99_ms;
} raw_out;

static raw_out raw_fail(void)
{
    return (raw_out){NAN, NAN, NAN};
}

/* Commits/s and p50/p99 of a raw loop's samples over `span` ms. */
static raw_out raw_result(bench_samples *s, double span)
{
    if (s->n == 0)
        return raw_fail();
    return (raw_out){(double)s->n * 1e3 / span, bench_percentile(s, 0.5),
                     bench_percentile(s, 0.99)};
}

/* SQLite: one small INSERT per BEGIN IMMEDIATE..COMMIT for `ms`. */
static raw_out raw_sqlite(double ms)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/raw-commits.db", g_dir);
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char f[4300];
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        remove(f);
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *begin = NULL, *insert = NULL, *commit = NULL;
    raw_out out = raw_fail();
    bench_samples s = {0};
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO t(v) VALUES (?1)", -1, &insert, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL) != SQLITE_OK) {
        warn("raw sqlite", sqlite3_errmsg(db));
        goto done;
    }
    double start = bench_now_ms(), t = start;
    while (t - start < ms && !g_abort) {
        sqlite3_bind_text(insert, 1, "a small row of thirty-two bytes.", -1, SQLITE_STATIC);
        if (sqlite3_step(begin) != SQLITE_DONE || sqlite3_step(insert) != SQLITE_DONE ||
            sqlite3_step(commit) != SQLITE_DONE) {
            warn("raw sqlite commit", sqlite3_errmsg(db));
            goto done;
        }
        sqlite3_reset(begin);
        sqlite3_reset(insert);
        sqlite3_reset(commit);
        double t1 = bench_now_ms();
        bench_sample_add(&s, t1 - t);
        t = t1;
    }
    if (!g_abort)
        out = raw_result(&s, t - start);
done:
    sqlite3_finalize(begin);
    sqlite3_finalize(insert);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    for (int i = 0; i < 3; i++) {
        char f[4300];
        snprintf(f, sizeof f, "%s%s", path, suffix[i]);
        remove(f);
    }
    free(s.v);
    return out;
}

/* PostgreSQL, like pgbench with one client: one autocommit INSERT of a
 * prepared statement per round trip, for `ms`, in a fresh schema. */
static raw_out raw_pg(double ms)
{
    place p;
    raw_out out = raw_fail();
    if (!place_new(&p, true, "raw"))
        return out;
    PGconn *c = PQconnectdb(p.location);
    bench_samples s = {0};
    PGresult *r = NULL;
    if (PQstatus(c) != CONNECTION_OK) {
        warn("raw pg", "the server does not accept the URL");
        goto done;
    }
    r = PQexec(c, "CREATE TABLE raw_commit (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                  " v TEXT NOT NULL)");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        warn("raw pg", PQresultErrorMessage(r));
        goto done;
    }
    PQclear(r);
    r = PQprepare(c, "ins", "INSERT INTO raw_commit (v) VALUES ($1)", 1, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        warn("raw pg", PQresultErrorMessage(r));
        goto done;
    }
    PQclear(r);
    r = NULL;
    const char *v[] = {"a small row of thirty-two bytes."};
    double start = bench_now_ms(), t = start;
    while (t - start < ms && !g_abort) {
        r = PQexecPrepared(c, "ins", 1, v, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            warn("raw pg insert", PQresultErrorMessage(r));
            goto done;
        }
        PQclear(r);
        r = NULL;
        double t1 = bench_now_ms();
        bench_sample_add(&s, t1 - t);
        t = t1;
    }
    if (!g_abort)
        out = raw_result(&s, t - start);
done:
    PQclear(r);
    PQfinish(c);
    place_drop(&p);
    free(s.v);
    return out;
}

/* ---- the no-op native step ---- */

static long g_calls;   /* calls in the current sequential run */
static long g_done_at; /* answer "done" on this call; 0: always "ok" */
static double *g_call_at; /* sequential runs: when each call came (ms), g_done_at of them */

static int noop(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    long c = __atomic_add_fetch(&g_calls, 1, __ATOMIC_SEQ_CST);
    long done_at = __atomic_load_n(&g_done_at, __ATOMIC_SEQ_CST);
    if (g_call_at && c >= 1 && c <= done_at)
        g_call_at[c - 1] = bench_now_ms();
    return sp_native_succeed(call, done_at > 0 && c >= done_at ? "done" : "ok", NULL, 0);
}

/* Step latencies of a sequential run: from one call to the next, each call
 * coming once the previous step's result, decision and claim committed. */
static void add_step_samples(bench_samples *s, size_t k)
{
    for (size_t i = 1; i < k; i++)
        bench_sample_add(s, g_call_at[i] - g_call_at[i - 1]);
}

/* ---- workflows ---- */

/* `chain` activity nodes s0..s{chain-1}, the last looping to s0; every node
 * routes `done` to complete. Visits per node allow `steps` calls. */
static json_t *loop_workflow(size_t chain, size_t steps)
{
    json_t *nodes = json_object();
    char id[32], next[32];
    for (size_t i = 0; i < chain; i++) {
        snprintf(id, sizeof id, "s%zu", i);
        snprintf(next, sizeof next, "s%zu", i + 1 < chain ? i + 1 : 0);
        json_object_set_new(nodes, id,
                            json_pack("{s:s,s:s,s:{s:s,s:s}}", "kind", "activity", "action", "step",
                                      "outcomes", "ok", next, "done", "done"));
    }
    json_object_set_new(nodes, "done", json_pack("{s:s}", "kind", "complete"));
    json_int_t visits = (json_int_t)((steps + chain - 1) / chain + 1);
    json_t *w = json_pack("{s:s,s:s,s:s,s:{s:{s:s,s:s,s:s,s:[s,s]}},s:o,s:{s:I,s:I}}", "format",
                          "runspore.workflow/0.1", "name", "bench-compare-seq", "start", "s0",
                          "actions", "step", "kind", "native", "function", "noop", "effect",
                          "idempotent", "outcomes", "ok", "done", "nodes", nodes, "limits",
                          "maxVisitsPerNode", visits > 1000 ? (json_int_t)1000 : visits,
                          "maxActivations", (json_int_t)10000);
    if (!w)
        die("workflow", "cannot build the loop");
    return w;
}

/* `k` activity nodes in a line, then complete. */
static json_t *linear_workflow(size_t k)
{
    json_t *nodes = json_object();
    char id[32], next[32];
    for (size_t i = 0; i < k; i++) {
        snprintf(id, sizeof id, "s%zu", i);
        if (i + 1 < k)
            snprintf(next, sizeof next, "s%zu", i + 1);
        else
            snprintf(next, sizeof next, "done");
        json_object_set_new(nodes, id,
                            json_pack("{s:s,s:s,s:{s:s}}", "kind", "activity", "action", "step",
                                      "outcomes", "ok", next));
    }
    json_object_set_new(nodes, "done", json_pack("{s:s}", "kind", "complete"));
    json_t *w = json_pack("{s:s,s:s,s:s,s:{s:{s:s,s:s,s:s}},s:o}", "format",
                          "runspore.workflow/0.1", "name", "bench-compare-runs", "start", "s0",
                          "actions", "step", "kind", "native", "function", "noop", "effect",
                          "idempotent", "nodes", nodes);
    if (!w)
        die("workflow", "cannot build the line");
    return w;
}

/* ---- engines ---- */

static sp_native_registry *new_natives(void)
{
    sp_error err = {0};
    sp_native_registry *r = sp_native_registry_new();
    /* inline, as a no-op would be registered (spore_register_native_inline):
     * the peers run their steps in their own process too */
    if (!r || sp_native_register_with(r, "noop", noop, NULL, SP_NATIVE_INLINE, &err))
        die("native", "cannot register noop");
    return r;
}

typedef struct engine_box {
    sp_store *store;
    sp_engine *engine;
    char lock_dir[4400];
} engine_box;

static bool engine_open(engine_box *b, const char *location, sp_native_registry *natives,
                        atomic_int *interrupt,
                        void (*progress)(void *, uint32_t, uint64_t, uint64_t, uint64_t),
                        void *progress_ctx)
{
    sp_error err = {0};
    memset(b, 0, sizeof *b);
    b->store = sp_store_open(location, NULL, &err);
    if (!b->store) {
        warn_err("store", &err);
        return false;
    }
    sp_engine_config cfg = sp_engine_defaults();
    cfg.natives = natives;
    cfg.interrupt = interrupt;
    cfg.serve_progress = progress;
    cfg.serve_progress_ctx = progress_ctx;
    if (sp_engine_lock_dir(b->store, b->lock_dir, sizeof b->lock_dir) == 0)
        cfg.lock_dir = b->lock_dir;
    b->engine = sp_engine_new(b->store, &cfg, &err);
    if (!b->engine) {
        warn_err("engine", &err);
        sp_store_close(b->store);
        b->store = NULL;
        return false;
    }
    return true;
}

static void engine_close(engine_box *b)
{
    if (b->engine)
        sp_engine_free(b->engine);
    if (b->store)
        sp_store_close(b->store);
    b->engine = NULL, b->store = NULL;
}

/* ---- sequential: one run of N steps ---- */

typedef struct seq_out {
    double per_s, ms, p50, p99, cpu_us, commits;
} seq_out;

static seq_out run_seq(bool pg, size_t steps, size_t chain, sp_native_registry *natives)
{
    seq_out out = {NAN, NAN, NAN, NAN, NAN, NAN};
    place pl;
    if (!place_new(&pl, pg, chain == 1 ? "seq-1node" : "seq-chain"))
        return out;
    engine_box b = {0};
    bench_samples s = {0};
    double span = 0, cpu = 0;
    uint64_t commits = 0;
    size_t runs = 0;
    double *call_at = calloc(SEQ_RUN_MAX, sizeof *call_at);
    bool ok = call_at && engine_open(&b, pl.location, natives, &g_abort, NULL, NULL);
    g_call_at = call_at;
    for (size_t done = 0; ok && done < steps;) {
        size_t k = steps - done < SEQ_RUN_MAX ? steps - done : SEQ_RUN_MAX;
        json_t *w = loop_workflow(chain, k);
        sp_start_result started;
        sp_error err = {0};
        if (sp_engine_start(b.engine, w, NULL, NULL, &started, &err)) {
            warn_err("start", &err);
            json_decref(w);
            ok = false;
            break;
        }
        json_decref(w);
        __atomic_store_n(&g_calls, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_done_at, (long)k, __ATOMIC_SEQ_CST);
        bench_samples every = {0}; /* revisions as progress saw them (every 100 ms): unused */
        bench_revisions p = {.s = &every};
        sp_park park;
        double c0 = cpu_self_ms();
        uint64_t k0 = store_commits(b.store);
        int rc = sp_engine_run_until_parked(b.engine, &started.key, &park, bench_on_revision, &p, &err);
        cpu += cpu_self_ms() - c0;
        commits += store_commits(b.store) - k0 - 1; /* the turn on run.started is no step's */
        __atomic_store_n(&g_done_at, 0, __ATOMIC_SEQ_CST);
        if (rc) {
            warn_err("run", &err);
            ok = false;
        } else if (park != SP_PARK_COMPLETED) {
            if (!g_abort)
                warn("sequential run", "did not complete");
            ok = false;
        } else if (p.seen != k + 1) {
            warn("sequential run", "unexpected number of turns");
            ok = false;
        } else {
            span += p.last_at - p.first_at;
            add_step_samples(&s, k);
            done += k;
            runs++;
        }
        free(every.v);
    }
    engine_close(&b);
    if (ok && span > 0) {
        out.per_s = (double)steps * 1e3 / span;
        out.ms = span / (double)steps;
        out.p50 = bench_percentile(&s, 0.5);
        out.p99 = bench_percentile(&s, 0.99);
        out.cpu_us = cpu * 1e3 / (double)steps;
        out.commits = (double)commits / (double)steps;
    }
    (void)runs;
    g_call_at = NULL;
    free(call_at);
    place_drop(&pl);
    free(s.v);
    return out;
}

/* ---- many runs: start R runs of K steps, serve until all completed ---- */

typedef struct conc_out {
    double per_s, serve_per_s, ms, cpu_us, commits;
} conc_out;

/* Watches runs through its own store handle; cheap to call often: it
 * re-reads only the first run not yet seen completed. */
typedef struct monitor {
    sp_store *store;
    sp_run_key *keys;
    size_t n, next;
    bool failed;
} monitor;

/* 1: every run terminal, 0: not yet, -1: the store cannot be read. */
static int monitor_check(monitor *m)
{
    while (m->next < m->n) {
        sp_run_view v;
        bool found = false;
        sp_error err = {0};
        if (sp_store_get_run(m->store, &m->keys[m->next], &v, &found, &err) != SP_STORE_OK) {
            warn_err("monitor", &err);
            return -1;
        }
        if (!found) {
            warn("monitor", "a started run is missing");
            return -1;
        }
        bool completed = strcmp(v.status, "completed") == 0;
        bool failed = strcmp(v.status, "failed") == 0 || v.quarantined;
        sp_run_view_free(&v);
        if (!completed && !failed)
            return 0;
        m->failed |= failed;
        m->next++;
    }
    return 1;
}

typedef struct serve_ctx {
    monitor *m;
    atomic_int *stop;
    uint64_t expected_turns;
    uint64_t checked_at_ms;
    double done_at; /* 0 until every run is terminal */
    bool error;
} serve_ctx;

/* After every tick of the in-process engine: once the turns add up (or
 * every 100 ms, should the engine count turns otherwise), check the runs;
 * stop serving when all are terminal. Never calls the engine. */
static void on_serve(void *ctx, uint32_t in_flight, uint64_t turns, uint64_t claimed,
                     uint64_t elapsed_ms)
{
    (void)in_flight, (void)claimed;
    serve_ctx *c = ctx;
    if (atomic_load(c->stop))
        return;
    if (g_abort || (double)elapsed_ms > WAIT_LIMIT_MS) {
        c->error = true;
        atomic_store(c->stop, 1);
        return;
    }
    if (turns < c->expected_turns && elapsed_ms - c->checked_at_ms < 100)
        return;
    c->checked_at_ms = elapsed_ms;
    int rc = monitor_check(c->m);
    if (rc != 0) {
        c->done_at = bench_now_ms();
        c->error = rc < 0;
        atomic_store(c->stop, 1);
    }
}

/* Start `runs` runs through a starter engine, all at once as the peers'
 * benchmarks start theirs (sp_engine_start_many: one durable commit for
 * up to SP_START_MANY_MAX starts); keys go to m->keys. */
static bool start_runs(const char *location, sp_native_registry *natives, size_t runs, size_t k,
                       sp_run_key *keys)
{
    engine_box b;
    if (!engine_open(&b, location, natives, &g_abort, NULL, NULL))
        return false;
    json_t *w = linear_workflow(k);
    sp_start_result *started = calloc(runs + 1, sizeof *started);
    sp_error *errs = calloc(runs + 1, sizeof *errs);
    bool ok = started && errs;
    for (size_t at = 0; ok && at < runs && !g_abort; at += SP_START_MANY_MAX) {
        size_t n = runs - at < SP_START_MANY_MAX ? runs - at : SP_START_MANY_MAX;
        sp_error err = {0};
        int failed = sp_engine_start_many(b.engine, w, NULL, NULL, n, NULL, NULL, started + at,
                                          errs + at, &err);
        for (size_t i = at; i < at + n && failed > 0; i++)
            if (errs[i].code[0]) {
                warn_err("start", &errs[i]);
                break;
            }
        if (failed < 0)
            warn_err("start", &err);
        ok = failed == 0;
        sp_error_clear(&err);
    }
    for (size_t i = 0; ok && i < runs; i++)
        keys[i] = started[i].key;
    for (size_t i = 0; errs && i < runs; i++)
        sp_error_clear(&errs[i]);
    free(started), free(errs);
    json_decref(w);
    engine_close(&b);
    return ok && !g_abort;
}

static conc_out conc_fail(void)
{
    return (conc_out){NAN, NAN, NAN, NAN, NAN};
}

/* One engine in this process serves; starts are timed (as the peers'). */
static conc_out run_conc_inproc(bool pg, size_t runs, size_t k, sp_native_registry *natives)
{
    conc_out out = conc_fail();
    place pl;
    if (!place_new(&pl, pg, "runs-inproc"))
        return out;
    monitor m = {.n = runs, .keys = calloc(runs, sizeof(sp_run_key))};
    sp_error err = {0};
    atomic_int stop = 0;
    serve_ctx ctx = {.m = &m, .stop = &stop, .expected_turns = (uint64_t)(runs * (k + 1))};
    engine_box b = {0};
    if (!m.keys)
        die("runs", "out of memory");
    double t0 = bench_now_ms();
    if (!start_runs(pl.location, natives, runs, k, m.keys))
        goto done;
    double t_serve = bench_now_ms();
    m.store = sp_store_open(pl.location, NULL, &err);
    if (!m.store) {
        warn_err("monitor", &err);
        goto done;
    }
    if (!engine_open(&b, pl.location, natives, &stop, on_serve, &ctx))
        goto done;
    double c0 = cpu_self_ms();
    uint64_t k0 = store_commits(b.store);
    if (sp_engine_serve(b.engine, &err))
        warn_err("serve", &err);
    double cpu = cpu_self_ms() - c0;
    out.commits = (double)(store_commits(b.store) - k0) / (double)(runs * k);
    if (ctx.error || ctx.done_at <= 0 || m.failed) {
        if (!g_abort)
            warn("runs (in-process worker)", m.failed ? "a run failed" : "did not complete");
        goto done;
    }
    double steps = (double)(runs * k);
    out.per_s = steps * 1e3 / (ctx.done_at - t0);
    out.serve_per_s = steps * 1e3 / (ctx.done_at - t_serve);
    out.ms = (ctx.done_at - t0) / steps;
    out.cpu_us = cpu * 1e3 / steps;
done:
    engine_close(&b);
    if (m.store)
        sp_store_close(m.store);
    place_drop(&pl);
    free(m.keys);
    return out;
}

static atomic_int g_child_stop; /* a signal handler's, read by the engine's threads */

static void on_child_term(int sig)
{
    (void)sig;
    atomic_store(&g_child_stop, 1);
}

/* A forked worker: its own store and engine, serving until SIGTERM. */
static void worker_main(const char *location)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_child_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sp_native_registry *natives = new_natives();
    engine_box b;
    int rc = 1;
    if (engine_open(&b, location, natives, &g_child_stop, NULL, NULL)) {
        sp_error err = {0};
        rc = sp_engine_serve(b.engine, &err) ? 1 : 0;
        if (rc)
            warn_err("worker", &err);
        engine_close(&b);
    }
    sp_native_registry_free(natives);
    _exit(rc); /* not exit(): the parent's stdio and libpq state are not ours */
}

/* `workers` forked processes serve; this process watches every 10 ms (one
 * get_run of the first run not yet completed per look). */
static conc_out run_conc_fork(bool pg, size_t runs, size_t k, int workers,
                              sp_native_registry *natives)
{
    conc_out out = conc_fail();
    place pl;
    if (!place_new(&pl, pg, "runs-fork"))
        return out;
    monitor m = {.n = runs, .keys = calloc(runs, sizeof(sp_run_key))};
    if (!m.keys)
        die("runs", "out of memory");
    sp_error err = {0};
    double t0 = bench_now_ms(), t_done = 0, cpu = 0;
    bool ok = false;
    if (!start_runs(pl.location, natives, runs, k, m.keys))
        goto done;
    fflush(stdout);
    fflush(stderr);
    double t_serve = bench_now_ms();
    for (int i = 0; i < workers; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            warn("fork", strerror(errno));
            break;
        }
        if (pid == 0)
            worker_main(pl.location);
        g_kids[i] = pid;
        g_nkids = i + 1;
    }
    if (g_nkids == workers) {
        m.store = sp_store_open(pl.location, NULL, &err);
        if (!m.store)
            warn_err("monitor", &err);
        while (m.store && !g_abort) {
            int rc = monitor_check(&m);
            if (rc != 0) {
                t_done = bench_now_ms();
                ok = rc > 0 && !m.failed;
                break;
            }
            if (bench_now_ms() - t_serve > WAIT_LIMIT_MS)
                break;
            sleep_ms(10);
        }
    }
    for (int i = 0; i < g_nkids; i++)
        kill(g_kids[i], SIGTERM);
    for (int i = 0; i < g_nkids; i++) {
        int status;
        struct rusage ru;
        while (wait4(g_kids[i], &status, 0, &ru) < 0 && errno == EINTR)
            ;
        cpu += tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            ok = false;
        g_kids[i] = 0;
    }
    g_nkids = 0;
    if (!ok) {
        if (!g_abort)
            warn("runs (worker processes)", m.failed ? "a run failed" : "did not complete");
        goto done;
    }
    double steps = (double)(runs * k);
    out.per_s = steps * 1e3 / (t_done - t0);
    out.serve_per_s = steps * 1e3 / (t_done - t_serve);
    out.ms = (t_done - t0) / steps;
    out.cpu_us = cpu * 1e3 / steps;
done:
    if (m.store)
        sp_store_close(m.store);
    place_drop(&pl);
    free(m.keys);
    return out;
}

/* ---- Restate: its own benchmark, one repetition of it ---- */

typedef struct restate_out {
    double seq, conc, cpu_seq_us, cpu_conc_us, fdatasync;
    char version[64];
} restate_out;

static json_t *jpath(json_t *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *part = strtok_r(buf, ".", &save); part && j;
         part = strtok_r(NULL, ".", &save))
        j = json_object_get(j, part);
    return j;
}

static double jnum(json_t *j, const char *path)
{
    json_t *v = jpath(j, path);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Wait for the peer's process group; stop it after `limit_ms` or an
 * interrupt; make sure nothing of the group is left. */
static int wait_group(pid_t pid, double limit_ms)
{
    double t0 = bench_now_ms();
    int status = -1;
    bool termed = false;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        double el = bench_now_ms() - t0;
        if (!termed && (g_abort || el > limit_ms)) {
            kill(-pid, SIGTERM);
            termed = true;
            t0 = bench_now_ms() - limit_ms; /* 15 s more, then SIGKILL */
        } else if (termed && el > limit_ms + 15000) {
            kill(-pid, SIGKILL);
        }
        sleep_ms(50);
    }
    /* what the script started in the background and left running */
    for (int i = 0; i < 100 && kill(-pid, 0) == 0; i++) {
        kill(-pid, i < 60 ? SIGTERM : SIGKILL);
        sleep_ms(100);
    }
    g_group = 0;
    return termed ? -1 : status;
}

/* Fork a peer's benchmark: in the child (0 returned) a process group of its
 * own, `dir` as its directory, stdout and stderr to `log`, stdin from
 * /dev/null and default signals; the caller sets the environment and execs.
 * -1 (warned) when fork fails. */
static pid_t fork_peer(const char *what, const char *dir, const char *log)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        warn(what, strerror(errno));
        return -1;
    }
    if (pid > 0)
        return pid;
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || chdir(dir) != 0)
        _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    return 0;
}

/* Wait for a forked peer (its group, bounded); true when it exited 0, else
 * a warning naming its log. */
static bool peer_succeeded(const char *what, const char *command, pid_t pid, const char *log)
{
    setpgid(pid, pid);
    g_group = pid;
    int status = wait_group(pid, WAIT_LIMIT_MS);
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return true;
    if (!g_abort) {
        char why[4400];
        snprintf(why, sizeof why, "%s failed (see %s)", command, log);
        warn(what, why);
    }
    return false;
}

static restate_out run_restate(const char *dir, size_t nseq, size_t ninv, size_t kinv,
                               double fsync_ms, int rep)
{
    restate_out out = {NAN, NAN, NAN, NAN, NAN, ""};
    char log[4300], num[32];
    snprintf(log, sizeof log, "%s/restate-rep%d.log", g_dir, rep);
    pid_t pid = fork_peer("restate", dir, log);
    if (pid < 0)
        return out;
    if (pid == 0) {
        setenv("REPS", "1", 1);
        snprintf(num, sizeof num, "%zu", nseq);
        setenv("N_SEQ", num, 1);
        snprintf(num, sizeof num, "%zu", ninv);
        setenv("N_INV", num, 1);
        snprintf(num, sizeof num, "%zu", kinv);
        setenv("N_INV_STEPS", num, 1);
        snprintf(num, sizeof num, "%.0f", fsync_ms);
        setenv("FSYNC_MS", num, 1);
        setenv("N_EMPTY", "20", 1);
        execl("./run.sh", "./run.sh", (char *)NULL);
        _exit(127);
    }
    if (!peer_succeeded("restate", "./run.sh", pid, log))
        return out;
    /* run.sh ends with "results: <path of the JSON>" */
    FILE *f = fopen(log, "r");
    char line[4400], results[4400] = "";
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "results: ", 9) == 0) {
            snprintf(results, sizeof results, "%s", line + 9);
            results[strcspn(results, "\r\n")] = 0;
        }
    if (f)
        fclose(f);
    json_error_t jerr;
    json_t *j = results[0] ? json_load_file(results, 0, &jerr) : NULL;
    if (!j) {
        warn("restate", "no results JSON in its output");
        return out;
    }
    out.seq = jnum(j, "seq.stepsPerS.median");
    out.conc = jnum(j, "conc.stepsPerS.median");
    out.cpu_seq_us = jnum(j, "seq.cpuUsPerStep.server.median") +
                     jnum(j, "seq.cpuUsPerStep.service.median");
    out.cpu_conc_us = jnum(j, "conc.cpuUsPerStep.server.median") +
                      jnum(j, "conc.cpuUsPerStep.service.median");
    out.fdatasync = jnum(j, "fsyncBaseline.fdatasyncPerS.median");
    json_t *v = jpath(j, "versions.restateServer.version");
    snprintf(out.version, sizeof out.version, "%s", json_is_string(v) ? json_string_value(v) : "");
    json_decref(j);
    return out;
}

/* ---- DBOS: its own benchmark (bench.mjs) against the same PostgreSQL ---- */

typedef struct dbos_out {
    double seq, conc, cpu_seq_us, cpu_conc_us, pgbench;
    char version[64];
} dbos_out;

/* One repetition of ../peers/dbos/bench.mjs (REPS=1) in `dir`, connecting to
 * the server named by $SPORE_BENCH_DBOS_PGHOST / _PGPORT / _PGUSER (a role
 * that may create its two databases: the private server's postgres over
 * its socket). */
static dbos_out run_dbos(const char *dir, size_t nseq, size_t nwf, size_t kwf, int rep)
{
    dbos_out out = {NAN, NAN, NAN, NAN, NAN, ""};
    char log[4300], results[4300], num[32];
    snprintf(log, sizeof log, "%s/dbos-rep%d.log", g_dir, rep);
    snprintf(results, sizeof results, "%s/dbos-rep%d.json", g_dir, rep);
    pid_t pid = fork_peer("dbos", dir, log);
    if (pid < 0)
        return out;
    if (pid == 0) {
        const char *host = getenv("SPORE_BENCH_DBOS_PGHOST"), *port = getenv("SPORE_BENCH_DBOS_PGPORT"),
                   *user = getenv("SPORE_BENCH_DBOS_PGUSER");
        if (!host || !port)
            _exit(125);
        setenv("PGHOST", host, 1);
        setenv("PGPORT", port, 1);
        setenv("PGUSER", user ? user : "postgres", 1);
        setenv("REPS", "1", 1);
        snprintf(num, sizeof num, "%zu", nseq);
        setenv("N_SEQ", num, 1);
        snprintf(num, sizeof num, "%zu", nwf);
        setenv("N_WF", num, 1);
        snprintf(num, sizeof num, "%zu", kwf);
        setenv("N_WF_STEPS", num, 1);
        setenv("N_EMPTY", "20", 1);
        setenv("PGBENCH_T", "3", 1);
        setenv("RAW_NODE_MS", "1000", 1);
        execlp("node", "node", "bench.mjs", "--json", results, (char *)NULL);
        _exit(127);
    }
    if (!peer_succeeded("dbos", "node bench.mjs", pid, log))
        return out;
    json_error_t jerr;
    json_t *j = json_load_file(results, 0, &jerr);
    if (!j) {
        warn("dbos", "no results JSON");
        return out;
    }
    out.seq = jnum(j, "seq.stepsPerS.median");
    out.conc = jnum(j, "conc.stepsPerS.median");
    out.cpu_seq_us = jnum(j, "seq.nodeCpuUsPerStep.median");
    out.cpu_conc_us = jnum(j, "conc.nodeCpuUsPerStep.median");
    out.pgbench = jnum(j, "raw.pgbenchTps1Client.median");
    json_t *v = jpath(j, "versions.dbos");
    snprintf(out.version, sizeof out.version, "%s", json_is_string(v) ? json_string_value(v) : "");
    json_decref(j);
    return out;
}

/* ---- what is measured: rows (workloads) x columns, ratios ---- */

enum {
    R_RAW, R_SEQ1, R_SEQ250, R_CONC, R_FORK1, R_FORK2, R_FORK4, R_RS_SEQ, R_RS_CONC, R_RS_FSYNC,
    R_PG_RAW, R_PG_SEQ1, R_PG_SEQ250, R_PG_CONC, R_PG_FORK1, R_PG_FORK2, R_PG_FORK4, R_DB_SEQ,
    R_DB_CONC,
    R_PGBENCH, NROWS
};
enum { C_RATE, C_MS, C_P50, C_P99, C_CPU, C_COMMITS, C_SERVE, NCOLS };

static const char *const COL_ID[NCOLS] = {"per_s",       "ms_per_step",      "p50_ms", "p99_ms",
                                          "cpu_us_per_step", "commits_per_step", "serve_per_s"};

typedef struct row_def {
    const char *id;
    const char *label; /* "{N}": sequential steps; "RxK": runs x steps */
    bool raw;          /* a baseline: commits/s */
} row_def;

static const row_def ROWS[NROWS] = {
    {"sqlite.raw_commit", "SQLite raw commits (WAL, FULL)", true},
    {"sqlite.seq_1node", "spore seq, 1-node loop, 1x{N}", false},
    {"sqlite.seq_250node", "spore seq, 250-node chain, 1x{N}", false},
    {"sqlite.runs_1worker", "spore RxK, 1 worker in-process", false},
    {"sqlite.runs_1process", "spore RxK, 1 worker process", false},
    {"sqlite.runs_2processes", "spore RxK, 2 worker processes", false},
    {"sqlite.runs_4processes", "spore RxK, 4 worker processes", false},
    {"restate.seq", "Restate seq, 1x{N}", false},
    {"restate.runs", "Restate RxK", false},
    {"restate.fdatasync", "fdatasync, 600 B appends (Restate's loop)", true},
    {"pg.raw_commit", "PostgreSQL raw autocommit INSERTs", true},
    {"pg.seq_1node", "spore/PG seq, 1-node loop, 1x{N}", false},
    {"pg.seq_250node", "spore/PG seq, 250-node chain, 1x{N}", false},
    {"pg.runs_1worker", "spore/PG RxK, 1 worker in-process", false},
    {"pg.runs_1process", "spore/PG RxK, 1 worker process", false},
    {"pg.runs_2processes", "spore/PG RxK, 2 worker processes", false},
    {"pg.runs_4processes", "spore/PG RxK, 4 worker processes", false},
    {"dbos.seq", "DBOS seq, 1x{N} (same server)", false},
    {"dbos.runs", "DBOS RxK (same server)", false},
    {"pg.pgbench", "pgbench 1 client, INSERTs (DBOS's loop)", true},
};

enum {
    Q_SEQ1_RAW, Q_SEQ250_RAW, Q_CONC_RAW, Q_SEQ1_RS, Q_SEQ250_RS, Q_CONC_RS, Q_CPU1,
    Q_GROW_TIME, Q_GROW_CPU, Q_COMMITS1, Q_FORK2_1, Q_FORK4_1, Q_PG_SEQ1_RAW, Q_PG_CONC_RAW,
    Q_PG_FORK2_1, Q_PG_FORK4_1, Q_PG_SERVE2_1,
    Q_PG_SEQ_PGBENCH, Q_PG_SEQ_DBOS, Q_PG_CONC_DBOS, NRATIOS
};

typedef struct ratio_def {
    const char *id;
    const char *label;
    char op;     /* '>' at least, '<' at most, 0 no goal */
    double goal;
} ratio_def;

static const ratio_def RATIOS[NRATIOS] = {
    {"sqlite_seq_over_raw", "SQLite seq (1-node) / raw commits", '>', 0.8},
    {"sqlite_seq250_over_raw", "SQLite seq (250-node) / raw commits", 0, 0},
    {"sqlite_runs_over_raw", "SQLite RxK, 1 worker / raw commits", '>', 2},
    {"seq_over_restate", "spore seq (1-node) / Restate seq", '>', 3},
    {"seq250_over_restate", "spore seq (250-node) / Restate seq", 0, 0},
    {"runs_over_restate", "spore RxK, 1 worker / Restate RxK", '>', 2},
    {"cpu_ms_per_step_seq", "CPU per step, seq 1-node (ms)", '<', 0.2},
    {"growth_time_250_over_1", "ms/step, 250-node / 1-node", '<', 1.2},
    {"growth_cpu_250_over_1", "CPU/step, 250-node / 1-node", '<', 1.2},
    {"commits_per_step_seq", "store commits per step, seq 1-node", '<', 1},
    {"sqlite_2w_over_1w", "SQLite RxK, 2 workers / 1 (processes)", '>', 1},
    {"sqlite_4w_over_1w", "SQLite RxK, 4 workers / 1 (processes)", 0, 0},
    {"pg_seq_over_raw", "PG seq (1-node) / raw autocommit INSERTs", '>', 0.6},
    {"pg_runs_over_raw", "PG RxK, 1 worker / raw INSERTs", 0, 0},
    {"pg_2w_over_1w", "PG RxK, 2 workers / 1 (processes)", '>', 1.7},
    {"pg_4w_over_1w", "PG RxK, 4 workers / 1 (processes)", 0, 0},
    /* the same without the starts (one client's, before the workers fork) */
    {"pg_serve_2w_over_1w", "PG RxK serving only, 2 workers / 1", 0, 0},
    {"pg_seq_over_pgbench", "PG seq (1-node) / pgbench 1 client", '>', 0.6},
    {"pg_seq_over_dbos", "spore/PG seq / DBOS seq", '>', 5},
    {"pg_runs_over_dbos", "spore/PG RxK, 1 worker / DBOS RxK", '>', 3},
};

static double g_v[NROWS][NCOLS][MAX_REPS];
static double g_q[NRATIOS][MAX_REPS];
static double g_bracket[2][2][MAX_REPS]; /* [sqlite|pg][start|end] commits/s */

static void put_raw(int row, int rep, raw_out a, raw_out b, int which)
{
    g_bracket[which][0][rep] = a.per_s;
    g_bracket[which][1][rep] = b.per_s;
    double rate = isfinite(a.per_s) && isfinite(b.per_s) ? (a.per_s + b.per_s) / 2
                  : isfinite(a.per_s)                    ? a.per_s
                                                         : b.per_s;
    g_v[row][C_RATE][rep] = rate;
    g_v[row][C_MS][rep] = isfinite(rate) && rate > 0 ? 1e3 / rate : NAN;
    g_v[row][C_P50][rep] = a.p50_ms;
    g_v[row][C_P99][rep] = a.p99_ms;
    g_v[row][C_COMMITS][rep] = 1;
}

static void put_seq(int row, int rep, seq_out o)
{
    g_v[row][C_RATE][rep] = o.per_s;
    g_v[row][C_MS][rep] = o.ms;
    g_v[row][C_P50][rep] = o.p50;
    g_v[row][C_P99][rep] = o.p99;
    g_v[row][C_CPU][rep] = o.cpu_us;
    g_v[row][C_COMMITS][rep] = o.commits;
}

static void put_conc(int row, int rep, conc_out o)
{
    g_v[row][C_RATE][rep] = o.per_s;
    g_v[row][C_SERVE][rep] = o.serve_per_s;
    g_v[row][C_MS][rep] = o.ms;
    g_v[row][C_CPU][rep] = o.cpu_us;
    g_v[row][C_COMMITS][rep] = o.commits;
}

static void compute_ratios(int r)
{
    double raw = g_v[R_RAW][C_RATE][r], pgraw = g_v[R_PG_RAW][C_RATE][r];
    g_q[Q_SEQ1_RAW][r] = ratio(g_v[R_SEQ1][C_RATE][r], raw);
    g_q[Q_SEQ250_RAW][r] = ratio(g_v[R_SEQ250][C_RATE][r], raw);
    g_q[Q_CONC_RAW][r] = ratio(g_v[R_CONC][C_RATE][r], raw);
    g_q[Q_SEQ1_RS][r] = ratio(g_v[R_SEQ1][C_RATE][r], g_v[R_RS_SEQ][C_RATE][r]);
    g_q[Q_SEQ250_RS][r] = ratio(g_v[R_SEQ250][C_RATE][r], g_v[R_RS_SEQ][C_RATE][r]);
    g_q[Q_CONC_RS][r] = ratio(g_v[R_CONC][C_RATE][r], g_v[R_RS_CONC][C_RATE][r]);
    g_q[Q_CPU1][r] = g_v[R_SEQ1][C_CPU][r] / 1e3;
    g_q[Q_GROW_TIME][r] = ratio(g_v[R_SEQ250][C_MS][r], g_v[R_SEQ1][C_MS][r]);
    g_q[Q_GROW_CPU][r] = ratio(g_v[R_SEQ250][C_CPU][r], g_v[R_SEQ1][C_CPU][r]);
    g_q[Q_COMMITS1][r] = g_v[R_SEQ1][C_COMMITS][r];
    g_q[Q_FORK2_1][r] = ratio(g_v[R_FORK2][C_RATE][r], g_v[R_FORK1][C_RATE][r]);
    g_q[Q_FORK4_1][r] = ratio(g_v[R_FORK4][C_RATE][r], g_v[R_FORK1][C_RATE][r]);
    g_q[Q_PG_SEQ1_RAW][r] = ratio(g_v[R_PG_SEQ1][C_RATE][r], pgraw);
    g_q[Q_PG_CONC_RAW][r] = ratio(g_v[R_PG_CONC][C_RATE][r], pgraw);
    g_q[Q_PG_FORK2_1][r] = ratio(g_v[R_PG_FORK2][C_RATE][r], g_v[R_PG_FORK1][C_RATE][r]);
    g_q[Q_PG_FORK4_1][r] = ratio(g_v[R_PG_FORK4][C_RATE][r], g_v[R_PG_FORK1][C_RATE][r]);
    g_q[Q_PG_SERVE2_1][r] = ratio(g_v[R_PG_FORK2][C_SERVE][r], g_v[R_PG_FORK1][C_SERVE][r]);
    g_q[Q_PG_SEQ_PGBENCH][r] = ratio(g_v[R_PG_SEQ1][C_RATE][r], g_v[R_PGBENCH][C_RATE][r]);
    g_q[Q_PG_SEQ_DBOS][r] = ratio(g_v[R_PG_SEQ1][C_RATE][r], g_v[R_DB_SEQ][C_RATE][r]);
    g_q[Q_PG_CONC_DBOS][r] = ratio(g_v[R_PG_CONC][C_RATE][r], g_v[R_DB_CONC][C_RATE][r]);
}

/* ---- the run's parameters and environment ---- */

typedef struct opts {
    int reps;
    size_t steps, runs, run_steps;
    double raw_ms;
    bool quick, json, fork;
    const char *base, *restate, *dbos, *json_out;
    char skipped_pg[256], skipped_restate[256], skipped_dbos[256];
} opts;

typedef struct machine {
    long nproc;
    char cpu[128], kernel[256], fs[96], sqlite[32], allocator[48];
    char pg[128], restate[128], dbos[128], date[32];
    double load1;
} machine;

static const char *fs_name(const char *dir, char *out, size_t n)
{
    struct statfs st;
    if (statfs(dir, &st) != 0)
        return "unknown";
    const char *name;
    switch ((unsigned long)st.f_type) {
    case 0x01021994UL: name = "tmpfs (fsync costs nothing: use --dir on a disk)"; break;
    case 0xEF53UL: name = "ext2/3/4"; break;
    case 0x9123683EUL: name = "btrfs"; break;
    case 0x58465342UL: name = "xfs"; break;
    case 0x794C7630UL: name = "overlayfs"; break;
    case 0x2FC12FC1UL: name = "zfs"; break;
    default: name = "other"; break;
    }
    snprintf(out, n, "%s", name);
    return out;
}

/* The allocator this program runs on: jemalloc answers mallctl("version")
 * (CMakeLists.txt: SPORE_JEMALLOC), otherwise it is the C library's. */
static void allocator_name(char *out, size_t n)
{
    typedef int mallctl_fn(const char *, void *, size_t *, void *, size_t);
    mallctl_fn *mallctl = (mallctl_fn *)(uintptr_t)dlsym(RTLD_DEFAULT, "mallctl");
    const char *version = NULL;
    size_t len = sizeof version;
    if (mallctl && mallctl("version", &version, &len, NULL, 0) == 0 && version)
        snprintf(out, n, "jemalloc %.*s", (int)strcspn(version, "-"), version);
    else
        snprintf(out, n, "glibc malloc");
}

static void machine_info(machine *m, const char *dir)
{
    memset(m, 0, sizeof *m);
    m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(m->cpu, sizeof m->cpu, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c += 1 + strspn(c + 1, " \t");
                c[strcspn(c, "\n")] = 0;
                snprintf(m->cpu, sizeof m->cpu, "%s", c);
            }
            break;
        }
    if (f)
        fclose(f);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    fs_name(dir, m->fs, sizeof m->fs);
    snprintf(m->sqlite, sizeof m->sqlite, "%s", sqlite3_libversion());
    allocator_name(m->allocator, sizeof m->allocator);
    double load[1];
    m->load1 = getloadavg(load, 1) == 1 ? load[0] : NAN;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void pg_version(char *out, size_t n)
{
    PGresult *r = PQexec(g_pg, "SELECT current_setting('server_version'), current_setting('fsync'),"
                               " current_setting('synchronous_commit')");
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        snprintf(out, n, "PostgreSQL %s (fsync %s, synchronous_commit %s)", PQgetvalue(r, 0, 0),
                 PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2));
    else
        snprintf(out, n, "PostgreSQL (version unknown)");
    PQclear(r);
}

/* ---- output ---- */

/* A label with "{N}" (sequential steps) and "RxK" (runs x steps) spelled out. */
static void expand(const char *tmpl, const opts *o, char *out, size_t n)
{
    size_t w = 0;
    out[0] = 0;
    for (const char *p = tmpl; *p && w + 1 < n;) {
        int k;
        if (!strncmp(p, "{N}", 3))
            k = snprintf(out + w, n - w, "%zu", o->steps), p += 3;
        else if (!strncmp(p, "RxK", 3))
            k = snprintf(out + w, n - w, "%zux%zu", o->runs, o->run_steps), p += 3;
        else
            out[w] = *p++, out[w + 1] = 0, k = 1;
        w += (size_t)k < n - w ? (size_t)k : n - w - 1;
    }
}

static void label_of(int row, const opts *o, char *out, size_t n)
{
    expand(ROWS[row].label, o, out, n);
}

static void ratio_label(int q, const opts *o, char *out, size_t n)
{
    expand(RATIOS[q].label, o, out, n);
}

static void fmt(double v, char *out, size_t n)
{
    if (!isfinite(v))
        snprintf(out, n, "-");
    else if (fabs(v) >= 100)
        snprintf(out, n, "%.0f", v);
    else if (fabs(v) >= 10)
        snprintf(out, n, "%.1f", v);
    else if (fabs(v) >= 1)
        snprintf(out, n, "%.2f", v);
    else
        snprintf(out, n, "%.3f", v);
}

static void fmt_range(const double *v, int reps, char *out, size_t n)
{
    stat3 s = stats_of(v, reps);
    char a[32], b[32], c[32];
    fmt(s.median, a, sizeof a);
    if (s.n <= 1) {
        snprintf(out, n, "%s", a);
        return;
    }
    fmt(s.min, b, sizeof b);
    fmt(s.max, c, sizeof c);
    snprintf(out, n, "%s [%s..%s]", a, b, c);
}

static bool row_measured(int row, int reps)
{
    return stats_of(g_v[row][C_RATE], reps).n > 0;
}

static const char *goal_text(int q, char *out, size_t n)
{
    if (!RATIOS[q].op)
        return "-";
    snprintf(out, n, "%s %g", RATIOS[q].op == '>' ? ">=" : "<=", RATIOS[q].goal);
    return out;
}

/* true/false on the median; -1 without a goal or a value */
static int goal_met(int q, int reps)
{
    stat3 s = stats_of(g_q[q], reps);
    if (!RATIOS[q].op || s.n == 0)
        return -1;
    return RATIOS[q].op == '>' ? s.median >= RATIOS[q].goal : s.median <= RATIOS[q].goal;
}

static void print_table(const opts *o, const machine *m, int reps)
{
    printf("\nbench_compare %s: %d repetition%s, interleaved; ratios taken within each "
           "repetition\n",
           m->date, reps, reps == 1 ? "" : "s");
    printf("machine: %ld CPU (%s), %s; files in %s (%s); SQLite %s; %s\n", m->nproc, m->cpu,
           m->kernel, o->base, m->fs, m->sqlite, m->allocator);
    if (m->pg[0])
        printf("PostgreSQL: %s\n", m->pg);
    else
        printf("PostgreSQL: skipped (%s)\n", o->skipped_pg);
    if (m->dbos[0])
        printf("DBOS: %s\n", m->dbos);
    else
        printf("DBOS: skipped (%s)\n", o->skipped_dbos);
    if (m->restate[0])
        printf("Restate: %s\n", m->restate);
    else
        printf("Restate: skipped (%s)\n", o->skipped_restate);

    printf("\nmedian [min..max] over the repetitions (other columns: medians)\n");
    printf("%-42s %-24s %8s %8s %8s %11s %8s\n", "workload", "steps/s (raw: commits/s)",
           "ms/step", "p50 ms", "p99 ms", "CPU us/step", "commits");
    for (int row = 0; row < NROWS; row++) {
        if (!row_measured(row, reps))
            continue;
        char label[96], rate[128], c[NCOLS][32];
        label_of(row, o, label, sizeof label);
        fmt_range(g_v[row][C_RATE], reps, rate, sizeof rate);
        for (int col = C_MS; col < NCOLS; col++)
            fmt(stats_of(g_v[row][col], reps).median, c[col], sizeof c[col]);
        printf("%-42s %-24s %8s %8s %8s %11s %8s\n", label, rate, c[C_MS], c[C_P50], c[C_P99],
               c[C_CPU], c[C_COMMITS]);
    }
    printf("(seq: steps over revision 1 to the last revision, p50/p99 revision to revision; "
           "RxK: steps over the\n starts (all at once, as the peers': one call, one commit) "
           "plus serving; CPU: the engine's process,\n or the worker processes; commits: durable "
           "commits per step (the store's counter, in-process\n engines); Restate: its "
           "bench.mjs, CPU = server + SDK endpoint)\n");

    printf("\n%-44s %-8s %-24s %s\n", "ratio (within each repetition)", "goal",
           "median [min..max]", "met");
    for (int q = 0; q < NRATIOS; q++) {
        stat3 s = stats_of(g_q[q], reps);
        if (s.n == 0 && !RATIOS[q].op)
            continue;
        char label[96], goal[48], val[128];
        ratio_label(q, o, label, sizeof label);
        fmt_range(g_q[q], reps, val, sizeof val);
        int met = goal_met(q, reps);
        const char *none = "not measured";
        if ((q == Q_SEQ1_RS || q == Q_CONC_RS) && !m->restate[0])
            none = "skipped (Restate)";
        else if ((q == Q_PG_SEQ_DBOS || q == Q_PG_CONC_DBOS || q == Q_PG_SEQ_PGBENCH) &&
                 !m->dbos[0])
            none = "skipped (DBOS)";
        else if ((q == Q_PG_SEQ1_RAW || q == Q_PG_FORK2_1 || q == Q_PG_FORK4_1 ||
                  q == Q_PG_SERVE2_1) &&
                 !m->pg[0])
            none = "skipped (PostgreSQL)";
        else if ((q == Q_FORK2_1 || q == Q_FORK4_1 || q == Q_PG_FORK2_1 || q == Q_PG_FORK4_1 ||
                  q == Q_PG_SERVE2_1) &&
                 !o->fork)
            none = "skipped (--no-fork)";
        printf("%-44s %-8s %-24s %s\n", label, goal_text(q, goal, sizeof goal), s.n ? val : none,
               met < 0 ? "" : met ? "yes" : "no");
    }
    printf("(a benchmark: goals are printed, never asserted)\n");
}

static json_t *jreal(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jseries(const double *v, int reps)
{
    stat3 s = stats_of(v, reps);
    json_t *runs = json_array();
    for (int r = 0; r < reps; r++)
        json_array_append_new(runs, jreal(v[r]));
    return json_pack("{s:o,s:o,s:o,s:o}", "median", jreal(s.median), "min", jreal(s.min), "max",
                     jreal(s.max), "reps", runs);
}

static void print_json(FILE *out, const opts *o, const machine *m, int reps)
{
    json_t *jm = json_pack(
        "{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:o}", "nproc", (json_int_t)m->nproc, "cpu", m->cpu,
        "kernel", m->kernel, "dir", o->base, "filesystem", m->fs, "sqlite", m->sqlite,
        "allocator", m->allocator, "load1_at_start",
        jreal(m->load1));
    json_t *params = json_pack("{s:i,s:I,s:I,s:I,s:f,s:b,s:b}", "reps", reps, "steps",
                               (json_int_t)o->steps, "runs", (json_int_t)o->runs, "run_steps",
                               (json_int_t)o->run_steps, "raw_ms", o->raw_ms, "quick", o->quick,
                               "fork", o->fork);
    json_t *peers = json_pack("{s:o,s:o,s:o}", "postgres",
                              m->pg[0] ? json_pack("{s:s}", "server", m->pg)
                                       : json_pack("{s:s}", "skipped", o->skipped_pg),
                              "restate",
                              m->restate[0] ? json_pack("{s:s}", "version", m->restate)
                                            : json_pack("{s:s}", "skipped", o->skipped_restate),
                              "dbos",
                              m->dbos[0] ? json_pack("{s:s}", "version", m->dbos)
                                         : json_pack("{s:s}", "skipped", o->skipped_dbos));
    json_t *rows = json_object();
    for (int row = 0; row < NROWS; row++) {
        if (!row_measured(row, reps))
            continue;
        char label[96];
        label_of(row, o, label, sizeof label);
        json_t *r = json_pack("{s:s,s:b}", "label", label, "baseline", ROWS[row].raw);
        for (int col = 0; col < NCOLS; col++)
            if (stats_of(g_v[row][col], reps).n > 0)
                json_object_set_new(r, COL_ID[col], jseries(g_v[row][col], reps));
        if (row == R_RAW || row == R_PG_RAW) {
            int which = row == R_RAW ? 0 : 1;
            json_object_set_new(r, "per_s_at_start", jseries(g_bracket[which][0], reps));
            json_object_set_new(r, "per_s_at_end", jseries(g_bracket[which][1], reps));
        }
        json_object_set_new(rows, ROWS[row].id, r);
    }
    json_t *ratios = json_object();
    for (int q = 0; q < NRATIOS; q++) {
        char label[96], goal[48];
        ratio_label(q, o, label, sizeof label);
        json_t *r = jseries(g_q[q], reps);
        int met = goal_met(q, reps);
        json_object_set_new(r, "label", json_string(label));
        json_object_set_new(r, "goal", RATIOS[q].op ? json_string(goal_text(q, goal, sizeof goal))
                                                    : json_null());
        json_object_set_new(r, "met", met < 0 ? json_null() : json_boolean(met));
        json_object_set_new(ratios, RATIOS[q].id, r);
    }
    json_t *doc = json_pack("{s:s,s:i,s:s,s:o,s:o,s:o,s:o,s:o}", "tool", "bench_compare",
                            "format", 1, "date", m->date, "machine", jm, "params", params,
                            "peers", peers, "workloads", rows, "ratios", ratios);
    if (!doc)
        die("json", "cannot build the document");
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    if (text)
        fprintf(out, "%s\n", text);
    free(text);
    json_decref(doc);
}

/* ---- main ---- */

static void usage(FILE *out)
{
    fputs("usage: bench_compare [--reps R] [--steps N] [--runs R] [--run-steps K] [--quick]\n"
          "                     [--dir DIR] [--raw-ms MS] [--pg URL | --no-pg] [--restate DIR]\n"
          "                     [--dbos DIR]\n"
          "                     [--no-fork] [--json] [--json-out FILE]\n"
          "                     [--skipped postgres=WHY|restate=WHY|dbos=WHY]\n"
          "Interleaved: raw SQLite commits, spore sequential (1-node loop, 250-node chain) and\n"
          "R runs x K steps (1 worker in-process, 1, 2 and 4 worker processes), optionally the\n"
          "same on PostgreSQL (--pg, default $SPORE_TEST_PG) and Restate's own bench\n"
          "(--restate DIR, a writable copy of ../peers/restate, default $SPORE_BENCH_RESTATE);\n"
          "ratios within each repetition, medians [min..max]. Defaults: --reps 3 --steps 1000\n"
          "--runs 200 --run-steps 10 --raw-ms 1000; --quick: --reps 1 --steps 200 --runs 50\n"
          "--raw-ms 300.\n"
          "Prints; never fails on speed.\n",
          out);
}

static size_t parse_size(const char *opt, const char *v, size_t lo, size_t hi)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        fprintf(stderr, "bench_compare: %s takes %zu to %zu\n", opt, lo, hi);
        exit(2);
    }
    return (size_t)x;
}

static void progress_line(int rep, int reps, const char *what, double v, const char *unit)
{
    char t[32];
    fmt(v, t, sizeof t);
    fprintf(stderr, "rep %d/%d: %-34s %10s %s\n", rep + 1, reps, what, t, unit);
}

/* The engine's six workloads of one repetition on one store kind, each
 * printed as it ends and put in its row (PostgreSQL's rows: "PG " labels). */
static void engine_workloads(const opts *o, bool pg, int r, sp_native_registry *natives)
{
    const char *p = pg ? "PG " : "";
    char what[64];
    seq_out s1 = run_seq(pg, o->steps, 1, natives);
    snprintf(what, sizeof what, "%sseq 1-node", p);
    progress_line(r, o->reps, what, s1.per_s, "steps/s");
    put_seq(pg ? R_PG_SEQ1 : R_SEQ1, r, s1);
    seq_out s250 = run_seq(pg, o->steps, CHAIN, natives);
    snprintf(what, sizeof what, "%sseq 250-node", p);
    progress_line(r, o->reps, what, s250.per_s, "steps/s");
    put_seq(pg ? R_PG_SEQ250 : R_SEQ250, r, s250);
    conc_out c = run_conc_inproc(pg, o->runs, o->run_steps, natives);
    snprintf(what, sizeof what, "%sruns, 1 worker in-process", p);
    progress_line(r, o->reps, what, c.per_s, "steps/s");
    put_conc(pg ? R_PG_CONC : R_CONC, r, c);
    static const int WORKERS[] = {1, 2, 4};
    const int rows[][3] = {{R_FORK1, R_FORK2, R_FORK4}, {R_PG_FORK1, R_PG_FORK2, R_PG_FORK4}};
    for (size_t i = 0; o->fork && i < sizeof WORKERS / sizeof *WORKERS; i++) {
        conc_out f = run_conc_fork(pg, o->runs, o->run_steps, WORKERS[i], natives);
        snprintf(what, sizeof what, "%sruns, %d worker process%s", p, WORKERS[i],
                 WORKERS[i] > 1 ? "es" : "");
        progress_line(r, o->reps, what, f.per_s, "steps/s");
        put_conc(rows[pg][i], r, f);
    }
}

/* One repetition of DBOS's bench on the PostgreSQL server spore just used. */
static void dbos_workloads(const opts *o, machine *m, int r)
{
    dbos_out d = run_dbos(o->dbos, o->steps, o->runs, o->run_steps, r + 1);
    progress_line(r, o->reps, "DBOS seq", d.seq, "steps/s");
    progress_line(r, o->reps, "DBOS runs", d.conc, "steps/s");
    g_v[R_DB_SEQ][C_RATE][r] = d.seq;
    g_v[R_DB_SEQ][C_MS][r] = isfinite(d.seq) && d.seq > 0 ? 1e3 / d.seq : NAN;
    g_v[R_DB_SEQ][C_CPU][r] = d.cpu_seq_us;
    g_v[R_DB_CONC][C_RATE][r] = d.conc;
    g_v[R_DB_CONC][C_MS][r] = isfinite(d.conc) && d.conc > 0 ? 1e3 / d.conc : NAN;
    g_v[R_DB_CONC][C_CPU][r] = d.cpu_conc_us;
    g_v[R_PGBENCH][C_RATE][r] = d.pgbench;
    g_v[R_PGBENCH][C_MS][r] = isfinite(d.pgbench) && d.pgbench > 0 ? 1e3 / d.pgbench : NAN;
    if (d.version[0])
        snprintf(m->dbos, sizeof m->dbos, "DBOS Transact %s (its bench.mjs, REPS=1)", d.version);
}

int main(int argc, char **argv)
{
    opts o = {.reps = 3, .steps = 1000, .runs = 200, .run_steps = 10, .raw_ms = 1000,
              .fork = true};
    bool reps_set = false, steps_set = false, runs_set = false, raw_set = false, no_pg = false;
    o.base = getenv("TMPDIR");
    if (!o.base || !*o.base)
        o.base = "/tmp";
    g_pg_url = getenv("SPORE_TEST_PG");
    o.restate = getenv("SPORE_BENCH_RESTATE");
    o.dbos = getenv("SPORE_BENCH_DBOS");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool has = v != NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quick")) {
            o.quick = true;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--json-out") && has) {
            o.json_out = v, i++;
        } else if (!strcmp(a, "--no-fork")) {
            o.fork = false;
        } else if (!strcmp(a, "--no-pg")) {
            no_pg = true;
        } else if (!strcmp(a, "--reps") && has) {
            o.reps = (int)parse_size(a, v, 1, MAX_REPS), reps_set = true, i++;
        } else if (!strcmp(a, "--steps") && has) {
            o.steps = parse_size(a, v, 1, 100000), steps_set = true, i++;
        } else if (!strcmp(a, "--runs") && has) {
            o.runs = parse_size(a, v, 1, 100000), runs_set = true, i++;
        } else if (!strcmp(a, "--run-steps") && has) {
            o.run_steps = parse_size(a, v, 1, 250), i++;
        } else if (!strcmp(a, "--raw-ms") && has) {
            o.raw_ms = (double)parse_size(a, v, 10, 600000), raw_set = true, i++;
        } else if (!strcmp(a, "--dir") && has) {
            o.base = v, i++;
        } else if (!strcmp(a, "--pg") && has) {
            g_pg_url = v, i++;
        } else if (!strcmp(a, "--restate") && has) {
            o.restate = v, i++;
        } else if (!strcmp(a, "--dbos") && has) {
            o.dbos = v, i++;
        } else if (!strcmp(a, "--skipped") && has) {
            if (!strncmp(v, "postgres=", 9))
                snprintf(o.skipped_pg, sizeof o.skipped_pg, "%s", v + 9);
            else if (!strncmp(v, "restate=", 8))
                snprintf(o.skipped_restate, sizeof o.skipped_restate, "%s", v + 8);
            else if (!strncmp(v, "dbos=", 5))
                snprintf(o.skipped_dbos, sizeof o.skipped_dbos, "%s", v + 5);
            else {
                usage(stderr);
                return 2;
            }
            i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (o.quick) {
        o.reps = reps_set ? o.reps : 1;
        o.steps = steps_set ? o.steps : 200;
        o.runs = runs_set ? o.runs : 50;
        o.raw_ms = raw_set ? o.raw_ms : 300;
    }
    if (no_pg) {
        g_pg_url = NULL;
        if (!o.skipped_pg[0])
            snprintf(o.skipped_pg, sizeof o.skipped_pg, "--no-pg");
    }
    if (g_pg_url && !*g_pg_url)
        g_pg_url = NULL;
    if (!g_pg_url && !o.skipped_pg[0])
        snprintf(o.skipped_pg, sizeof o.skipped_pg, "no server (--pg or SPORE_TEST_PG)");
    if (o.restate && !*o.restate)
        o.restate = NULL;
    if (!o.restate && !o.skipped_restate[0])
        snprintf(o.skipped_restate, sizeof o.skipped_restate,
                 "no peer directory (--restate or SPORE_BENCH_RESTATE)");
    if (o.restate) {
        char run[4200];
        snprintf(run, sizeof run, "%s/run.sh", o.restate);
        if (access(run, X_OK) != 0) {
            snprintf(o.skipped_restate, sizeof o.skipped_restate, "no %.200s", run);
            o.restate = NULL;
        }
    }

    if (o.dbos && !*o.dbos)
        o.dbos = NULL;
    if (!o.dbos && !o.skipped_dbos[0])
        snprintf(o.skipped_dbos, sizeof o.skipped_dbos,
                 "no peer directory (--dbos or SPORE_BENCH_DBOS)");
    for (int q = 0; q < NRATIOS; q++)
        for (int r = 0; r < MAX_REPS; r++)
            g_q[q][r] = NAN;
    for (int row = 0; row < NROWS; row++)
        for (int c = 0; c < NCOLS; c++)
            for (int r = 0; r < MAX_REPS; r++)
                g_v[row][c][r] = NAN;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < MAX_REPS; r++)
                g_bracket[a][b][r] = NAN;

    snprintf(g_dir, sizeof g_dir, "%s/spore-bench-compare-XXXXXX", o.base);
    if (!mkdtemp(g_dir))
        die(g_dir, strerror(errno));
    install_signals();
    machine m;
    machine_info(&m, g_dir);
    if (g_pg_url) {
        g_pg = PQconnectdb(g_pg_url);
        if (PQstatus(g_pg) != CONNECTION_OK) {
            warn("postgres", "the server does not accept the URL; PostgreSQL skipped");
            snprintf(o.skipped_pg, sizeof o.skipped_pg, "the server did not answer");
            PQfinish(g_pg);
            g_pg = NULL;
            g_pg_url = NULL;
        } else {
            PQclear(PQexec(g_pg, "SET client_min_messages = warning"));
            pg_version(m.pg, sizeof m.pg);
        }
    }
    bool pg = g_pg_url != NULL;
    sp_native_registry *natives = new_natives();
    fprintf(stderr, "bench_compare: %d rep(s); seq 1x%zu; %zux%zu runs; files in %s (%s)%s%s\n",
            o.reps, o.steps, o.runs, o.run_steps, g_dir, m.fs, pg ? "; PostgreSQL" : "",
            o.restate ? "; Restate" : "");

    /* warm-up, not recorded: page cache, the library, the disk */
    raw_sqlite(o.raw_ms / 5);
    run_seq(false, o.steps < 50 ? o.steps : 50, 1, natives);
    if (pg)
        raw_pg(o.raw_ms / 5);

    int reps = 0;
    for (int r = 0; r < o.reps && !g_abort; r++) {
        raw_out a = raw_sqlite(o.raw_ms);
        progress_line(r, o.reps, "SQLite raw commits (start)", a.per_s, "commits/s");
        engine_workloads(&o, false, r, natives);
        if (pg && !g_abort) {
            raw_out pa = raw_pg(o.raw_ms);
            progress_line(r, o.reps, "PG raw INSERTs (start)", pa.per_s, "commits/s");
            engine_workloads(&o, true, r, natives);
            if (o.dbos && !g_abort)
                dbos_workloads(&o, &m, r);
            raw_out pb = raw_pg(o.raw_ms);
            progress_line(r, o.reps, "PG raw INSERTs (end)", pb.per_s, "commits/s");
            put_raw(R_PG_RAW, r, pa, pb, 1);
        }
        if (o.restate && !g_abort) {
            restate_out rs = run_restate(o.restate, o.steps, o.runs, o.run_steps,
                                         o.quick ? 300 : 1000, r + 1);
            progress_line(r, o.reps, "Restate seq", rs.seq, "steps/s");
            progress_line(r, o.reps, "Restate runs", rs.conc, "steps/s");
            g_v[R_RS_SEQ][C_RATE][r] = rs.seq;
            g_v[R_RS_SEQ][C_MS][r] = isfinite(rs.seq) && rs.seq > 0 ? 1e3 / rs.seq : NAN;
            g_v[R_RS_SEQ][C_CPU][r] = rs.cpu_seq_us;
            g_v[R_RS_CONC][C_RATE][r] = rs.conc;
            g_v[R_RS_CONC][C_MS][r] = isfinite(rs.conc) && rs.conc > 0 ? 1e3 / rs.conc : NAN;
            g_v[R_RS_CONC][C_CPU][r] = rs.cpu_conc_us;
            g_v[R_RS_FSYNC][C_RATE][r] = rs.fdatasync;
            g_v[R_RS_FSYNC][C_MS][r] =
                isfinite(rs.fdatasync) && rs.fdatasync > 0 ? 1e3 / rs.fdatasync : NAN;
            if (rs.version[0])
                snprintf(m.restate, sizeof m.restate, "restate-server %s (its bench.mjs, REPS=1)",
                         rs.version);
        }
        raw_out b = raw_sqlite(o.raw_ms);
        progress_line(r, o.reps, "SQLite raw commits (end)", b.per_s, "commits/s");
        put_raw(R_RAW, r, a, b, 0);
        if (g_abort)
            break;
        compute_ratios(r);
        reps = r + 1;
    }
    if (o.restate && !m.restate[0])
        snprintf(o.skipped_restate, sizeof o.skipped_restate,
                 "its run.sh did not report (see the warnings above)");
    if (o.dbos && !m.dbos[0])
        snprintf(o.skipped_dbos, sizeof o.skipped_dbos,
                 pg ? "its bench.mjs did not report (see the warnings above)"
                    : "no PostgreSQL server");

    sp_native_registry_free(natives);
    if (g_pg)
        PQfinish(g_pg);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (g_abort) {
        fprintf(stderr, "bench_compare: interrupted after %d complete repetition(s)\n", reps);
        return 130;
    }
    if (o.json_out) {
        FILE *f = fopen(o.json_out, "w");
        if (!f)
            warn(o.json_out, strerror(errno));
        else {
            print_json(f, &o, &m, reps);
            fclose(f);
        }
    }
    if (o.json)
        print_json(stdout, &o, &m, reps);
    else
        print_table(&o, &m, reps);
    return 0;
}
