/*
 * bench_steps.c - per-step overhead of the engine on SQLite: a linear
 * workflow of N no-op `native` steps and one of N no-op `command` steps
 * (/bin/true, output none), each run to completion by a real engine on a
 * fresh SQLite file, printed next to the raw cost of N SQLite commits (WAL,
 * synchronous=FULL, one small INSERT per BEGIN IMMEDIATE transaction) on a
 * file in the same directory, measured in the same run.
 *
 * usage: bench_steps [--steps N] [--dir DIR]
 *   --steps N  steps per kind and commits in the baseline (default 200)
 *   --dir DIR  where the SQLite files go (default $TMPDIR or /tmp); the
 *              filesystem decides what an fsync costs, so it is printed
 *
 * Method. The engine runs the workflow with sp_engine_run_until_parked(),
 * whose progress callback sees the run after every pass of its loop. Each
 * step is one committed turn: revision 1 consumes run.started and schedules
 * step 1; revision j+1 consumes step j's result and schedules step j+1. A
 * step's latency is the time between the first pass that sees revision j
 * and the first that sees revision j+1 (claim, runner, finish_attempt,
 * the turn that consumes the result); when one pass sees several new
 * revisions, the interval is shared equally among them. Steps/s is the
 * number of steps over the time from revision 1 to the last revision, so it
 * excludes validation and create_run. A workflow holds at most 256 nodes,
 * so N steps run as consecutive runs of at most 250 steps; a run's first
 * step is measured from its own revision 1. Store commits per step counts
 * the store's durable commits (sp_store_counters) during the runs, less the
 * first turn of each run, divided by the steps: one (the step's result,
 * the turn on it and the next claim share one batch; docs/step-path.md).
 * For native steps, the interval between consecutive calls of the function
 * is printed as a cross-check of the method.
 *
 * What it must never do: assert on speed (benchmarks print, tests assert),
 * reimplement the engine (it only drives sp_engine_*), or report a run that
 * did not complete as throughput.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "runners/native.h"
#include "store/store.h"

#include "measure.h"

#define STEPS_PER_RUN 250 /* a workflow has at most 256 nodes (kernel.md W03) */

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_steps: %s: %s\n", what, detail);
    exit(2);
}

static void die_err(const char *what, sp_error *err)
{
    char text[SP_CODE_MAX + SP_MESSAGE_MAX + 4];
    snprintf(text, sizeof text, "%s: %s", err->code, err->message);
    die(what, text);
}

typedef struct result {
    const char *name;
    size_t steps;
    double total_ms; /* measured span (steps/s = steps / span) */
    double p50, p99;
    double commits_per_step; /* < 0: unknown */
} result;

static void finish(result *r, bench_samples *s)
{
    r->p50 = bench_percentile(s, 0.50);
    r->p99 = bench_percentile(s, 0.99);
}

/* ---- baseline: raw SQLite commits ---- */

static void exec_sql(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        die(sql, msg ? msg : "failed");
}

static result bench_commits(const char *dir, size_t n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/baseline.db", dir);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        die(path, sqlite3_errmsg(db));
    exec_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    sqlite3_stmt *begin, *insert, *commit;
    if (sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO t(v) VALUES (?1)", -1, &insert, NULL) ||
        sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL))
        die("prepare", sqlite3_errmsg(db));
    bench_samples s = {0};
    result r = {.name = "sqlite commit", .steps = n, .commits_per_step = 1};
    double start = bench_now_ms();
    for (size_t i = 0; i < n; i++) {
        double t0 = bench_now_ms();
        sqlite3_bind_text(insert, 1, "a small row of thirty-two bytes.", -1, SQLITE_STATIC);
        if (sqlite3_step(begin) != SQLITE_DONE || sqlite3_step(insert) != SQLITE_DONE ||
            sqlite3_step(commit) != SQLITE_DONE)
            die("commit", sqlite3_errmsg(db));
        sqlite3_reset(begin);
        sqlite3_reset(insert);
        sqlite3_reset(commit);
        bench_sample_add(&s, bench_now_ms() - t0);
    }
    r.total_ms = bench_now_ms() - start;
    sqlite3_finalize(begin);
    sqlite3_finalize(insert);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    finish(&r, &s);
    free(s.v);
    return r;
}

/* ---- the engine ---- */

typedef struct native_clock {
    bench_samples intervals;
    double last; /* 0 before the first call of a run */
} native_clock;

static native_clock g_native;

/* The no-op step. Runs on the engine's attempt threads, one at a time here
 * (a linear workflow has one activity in flight). */
static int noop(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    double t = bench_now_ms();
    if (g_native.last > 0)
        bench_sample_add(&g_native.intervals, t - g_native.last);
    g_native.last = t;
    return sp_native_succeed(call, "ok", NULL, 0);
}

/* A linear workflow of `n` activity steps of one action, then complete. */
static json_t *linear_workflow(const char *kind, size_t n)
{
    json_t *action = strcmp(kind, "native") == 0
                         ? json_pack("{s:s,s:s,s:s}", "kind", "native", "function", "noop",
                                     "effect", "idempotent")
                         : json_pack("{s:s,s:[s],s:s,s:s}", "kind", "command", "argv",
                                     "/bin/true", "output", "none", "effect", "idempotent");
    json_t *nodes = json_object();
    char id[32], next[32];
    for (size_t i = 0; i < n; i++) {
        snprintf(id, sizeof id, "s%zu", i);
        if (i + 1 < n)
            snprintf(next, sizeof next, "s%zu", i + 1);
        else
            snprintf(next, sizeof next, "done");
        json_object_set_new(nodes, id,
                            json_pack("{s:s,s:s,s:{s:s}}", "kind", "activity", "action", "step",
                                      "outcomes", "ok", next));
    }
    json_object_set_new(nodes, "done", json_pack("{s:s}", "kind", "complete"));
    json_t *w = json_pack("{s:s,s:s,s:s,s:{s:o},s:o}", "format", "runspore.workflow/0.1", "name",
                          "bench-steps", "start", "s0", "actions", "step", action, "nodes", nodes);
    if (!w)
        die("workflow", "cannot build");
    return w;
}

static uint64_t store_commits(sp_store *store)
{
    sp_store_counters c;
    sp_store_counters_get(store, &c);
    return c.commits;
}

static result bench_engine(const char *dir, const char *kind, size_t n,
                           sp_native_registry *natives)
{
    char path[4200], lock_dir[4300];
    snprintf(path, sizeof path, "%s/%.16s.db", dir, kind);
    snprintf(lock_dir, sizeof lock_dir, "%s.workers", path);
    sp_error err = {0};
    sp_store *store = sp_store_open(path, NULL, &err);
    if (!store)
        die_err(path, &err);
    sp_engine_config cfg = sp_engine_defaults();
    cfg.natives = natives;
    cfg.lock_dir = lock_dir;
    sp_engine *engine = sp_engine_new(store, &cfg, &err);
    if (!engine)
        die_err("engine", &err);

    bench_samples s = {0};
    result r = {.name = kind, .steps = n};
    uint64_t commits = 0;
    for (size_t done = 0; done < n;) {
        size_t k = n - done < STEPS_PER_RUN ? n - done : STEPS_PER_RUN;
        json_t *w = linear_workflow(kind, k);
        sp_start_result started;
        if (sp_engine_start(engine, w, NULL, NULL, &started, &err))
            die_err("start", &err);
        json_decref(w);
        g_native.last = 0;
        bench_revisions p = {.s = &s};
        sp_park park;
        uint64_t before = store_commits(store);
        if (sp_engine_run_until_parked(engine, &started.key, &park, bench_on_revision, &p, &err))
            die_err("run", &err);
        commits += store_commits(store) - before - 1; /* the turn on run.started: no step */
        if (park != SP_PARK_COMPLETED)
            die(kind, "the run did not complete");
        if (p.seen != k + 1)
            die(kind, "unexpected number of turns");
        r.total_ms += p.last_at - p.first_at;
        done += k;
    }
    sp_engine_free(engine);
    sp_store_close(store);
    r.commits_per_step = (double)commits / (double)n;
    finish(&r, &s);
    free(s.v);
    return r;
}

/* ---- output ---- */

static const char *fs_name(const char *dir)
{
    struct statfs st;
    if (statfs(dir, &st) != 0)
        return "unknown filesystem";
    switch ((unsigned long)st.f_type) {
    case 0x01021994UL: return "tmpfs: fsync costs nothing here, try --dir on a disk";
    case 0xEF53UL: return "ext2/3/4";
    case 0x9123683EUL: return "btrfs";
    case 0x58465342UL: return "xfs";
    case 0x794C7630UL: return "overlayfs";
    default: return "other filesystem";
    }
}

static void print_row(const result *r)
{
    double per_s = r->total_ms > 0 ? (double)r->steps * 1e3 / r->total_ms : 0;
    printf("%-14s %7zu %10.1f %10.0f %9.3f %9.3f", r->name, r->steps, r->total_ms, per_s, r->p50,
           r->p99);
    if (r->commits_per_step >= 0)
        printf(" %9.2f", r->commits_per_step);
    printf("\n");
}

static void print_ratio(const result *r, const result *base)
{
    double rate = r->total_ms > 0 ? (double)r->steps / r->total_ms : 0;
    double base_rate = base->total_ms > 0 ? (double)base->steps / base->total_ms : 0;
    printf("  %-8s per step = %5.1fx a commit at p50, %5.1fx at p99; throughput %.3fx the "
           "commits'\n",
           r->name, base->p50 > 0 ? r->p50 / base->p50 : 0, base->p99 > 0 ? r->p99 / base->p99 : 0,
           base_rate > 0 ? rate / base_rate : 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void usage(FILE *out)
{
    fputs("usage: bench_steps [--steps N] [--dir DIR]\n"
          "Per-step overhead of the engine on SQLite (native and command no-op steps),\n"
          "next to the raw cost of N SQLite commits measured in the same run.\n",
          out);
}

int main(int argc, char **argv)
{
    size_t n = 200;
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) {
            char *end;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v == 0 || v > 1000000) {
                fprintf(stderr, "bench_steps: --steps takes 1 to 1000000\n");
                return 2;
            }
            n = (size_t)v;
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            base = argv[++i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/spore-bench-steps-XXXXXX", base);
    if (!mkdtemp(dir))
        die(dir, strerror(errno));

    sp_error err = {0};
    sp_native_registry *natives = sp_native_registry_new();
    if (!natives || sp_native_register(natives, "noop", noop, NULL, &err))
        die("register", "noop");

    printf("bench_steps: %zu steps per kind (runs of at most %d), files in %s (%s)\n", n,
           STEPS_PER_RUN, base, fs_name(dir));
    result commits = bench_commits(dir, n);
    result native = bench_engine(dir, "native", n, natives);
    result command = bench_engine(dir, "command", n, natives);

    printf("%-14s %7s %10s %10s %9s %9s %9s\n", "", "n", "total ms", "per s", "p50 ms",
           "p99 ms", "commits");
    print_row(&commits);
    print_row(&native);
    print_row(&command);
    printf("  cross-check: native function call to call, p50 %.3f ms p99 %.3f ms (%zu intervals)\n",
           bench_percentile(&g_native.intervals, 0.5), bench_percentile(&g_native.intervals, 0.99),
           g_native.intervals.n);
    printf("ratios against the raw SQLite commit (same directory, same run):\n");
    print_ratio(&native, &commits);
    print_ratio(&command, &commits);

    free(g_native.intervals.v);
    sp_native_registry_free(natives);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
