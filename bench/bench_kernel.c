/*
 * bench_kernel.c - kernel throughput: replays golden traces in-process and
 * prints transitions per second, next to a baseline measured in the same run
 * (canonical encoding + SHA-256 of the same traces' expected snapshots), so
 * the printed ratio survives a change of machine; then the cost of one
 * transition by state size, from snapshot bytes and with the decoded state
 * kept (kernel.h sp_kernel_state, step-path.md §5).
 *
 * usage: bench_kernel [--seconds S | --count N] [<trace.json | directory>...]
 *
 * A "transition" of the trace part is one step of sp_trace_replay(): the
 * kernel's transition plus the replay's byte comparisons and digests of the
 * decision (what `spore trace` does), and each replay of a trace loads its
 * graph once; measured plain and keeping the decoded state. The baseline
 * does only sp_json_encode + digest::state per snapshot.
 *
 * The state-size part (always run) times the same step - an activity result
 * that routes back to its own node, which is entered again - in two
 * workflows: `self-loop-1` (that one node) and `chain-250` (249 nodes run
 * first, untimed, then the 250th loops: every timed step carries the full
 * ~14 KB snapshot, as at the end of the engine benchmarks' 250-node runs of
 * no-op steps). Each is timed from bytes (the host passes the snapshot,
 * the kernel decodes it) and with the kept state; the ratios printed are
 * chain ÷ loop per mode (step-path.md's goal: ≤ 1.2) and bytes ÷ kept, from
 * the median of every timed step (the four cases run in rounds, so a busy
 * moment of a shared machine hits them alike).
 *
 * What it must never do: assert on speed (benchmarks print, tests assert), or
 * count a replay that failed as throughput without saying so.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "digest/digest.h"
#include "json/json.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"
#include "trace/trace.h"

#include "measure.h"

typedef struct corpus {
    char **paths;
    size_t npaths, cap;
    sp_trace **traces;
    size_t ntraces;
    size_t nsteps;     /* steps over all traces (transitions per pass) */
    json_t **snapshots; /* expected snapshots (baseline input) */
    size_t nsnapshots, snap_cap;
} corpus;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void add_path(corpus *c, const char *path)
{
    if (c->npaths == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->paths = realloc(c->paths, c->cap * sizeof *c->paths);
        if (!c->paths) {
            perror("bench_kernel");
            exit(2);
        }
    }
    c->paths[c->npaths++] = strdup(path);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.json file of a directory, in name order. */
static int add_directory(corpus *c, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bench_kernel: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    size_t first = c->npaths;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".json") == 0) {
            char *p = NULL;
            if (asprintf(&p, "%s/%s", dir, e->d_name) < 0) {
                closedir(d);
                return -1;
            }
            add_path(c, p);
            free(p);
        }
    }
    closedir(d);
    qsort(c->paths + first, c->npaths - first, sizeof *c->paths, str_cmp);
    return 0;
}

static void add_snapshot(corpus *c, json_t *s)
{
    if (c->nsnapshots == c->snap_cap) {
        c->snap_cap = c->snap_cap ? 2 * c->snap_cap : 256;
        c->snapshots = realloc(c->snapshots, c->snap_cap * sizeof *c->snapshots);
        if (!c->snapshots) {
            perror("bench_kernel");
            exit(2);
        }
    }
    c->snapshots[c->nsnapshots++] = json_incref(s);
}

/* The expected snapshots of a trace file (plain JSON in the file). */
static int load_snapshots(corpus *c, const char *path)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        fprintf(stderr, "bench_kernel: %s: %s\n", path, jerr.text);
        return -1;
    }
    json_t *steps = json_object_get(doc, "steps");
    for (size_t i = 0; i < json_array_size(steps); i++) {
        json_t *s = json_object_get(json_object_get(json_array_get(steps, i), "expect"), "snapshot");
        if (s)
            add_snapshot(c, s);
    }
    json_decref(doc);
    return 0;
}

static int load_corpus(corpus *c)
{
    c->traces = calloc(c->npaths ? c->npaths : 1, sizeof *c->traces);
    if (!c->traces)
        return -1;
    for (size_t i = 0; i < c->npaths; i++) {
        sp_error err = {0};
        sp_trace *t = sp_trace_load(c->paths[i], &err);
        if (!t) {
            fprintf(stderr, "bench_kernel: %s: %s: %s\n", c->paths[i], err.code, err.message);
            sp_error_clear(&err);
            return -1;
        }
        c->traces[c->ntraces++] = t;
        c->nsteps += sp_trace_step_count(t);
        if (load_snapshots(c, c->paths[i]))
            return -1;
    }
    return 0;
}

static void free_corpus(corpus *c)
{
    for (size_t i = 0; i < c->npaths; i++)
        free(c->paths[i]);
    for (size_t i = 0; i < c->ntraces; i++)
        sp_trace_free(c->traces[i]);
    for (size_t i = 0; i < c->nsnapshots; i++)
        json_decref(c->snapshots[i]);
    free(c->paths);
    free(c->traces);
    free(c->snapshots);
}

/* One pass over every trace; returns the number of traces that did not match. */
static size_t replay_pass(const corpus *c, bool keep_state)
{
    sp_trace_options opts = {.keep_state = keep_state};
    size_t failed = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        sp_trace_mismatch m;
        if (!sp_trace_replay_with(c->traces[i], &opts, &m, NULL))
            failed++;
        sp_trace_mismatch_clear(&m);
    }
    return failed;
}

/* One pass of the baseline: encode + digest::state of every snapshot. */
static size_t baseline_pass(const corpus *c, unsigned char *sink)
{
    size_t bytes = 0;
    for (size_t i = 0; i < c->nsnapshots; i++) {
        sp_error err = {0};
        size_t len;
        char *s = sp_json_encode_alloc(c->snapshots[i], &len, &err);
        if (!s) {
            sp_error_clear(&err);
            continue;
        }
        char digest[SP_DIGEST_TEXT_LEN + 1];
        sp_digest_one("state", s, len, digest);
        *sink ^= (unsigned char)digest[7]; /* keep the work observable */
        bytes += len;
        free(s);
    }
    return bytes;
}

typedef struct measure {
    size_t passes;
    double seconds;
} measure;

/* Run `pass` for `seconds` (count == 0) or exactly `count` passes. */
#define MEASURE(result, count, seconds, body)                                            \
    do {                                                                                 \
        double t0_ = now_s(), t_ = t0_;                                                  \
        size_t n_ = 0;                                                                   \
        while ((count) ? n_ < (count) : (t_ - t0_) < (seconds)) {                        \
            body;                                                                        \
            n_++;                                                                        \
            t_ = now_s();                                                                \
        }                                                                                \
        (result).passes = n_;                                                            \
        (result).seconds = t_ - t0_;                                                     \
    } while (0)

/* ---- the cost of one transition by state size ---- */

#define LOOP_STEPS 200 /* timed steps per run (visit limit 1000) */

static char *encode_or_die(json_t *v, size_t *len)
{
    sp_error err = {0};
    char *s = v ? sp_json_encode_alloc(v, len, &err) : NULL;
    json_decref(v);
    if (!s) {
        fprintf(stderr, "bench_kernel: cannot encode: %s\n", err.message);
        exit(2);
    }
    return s;
}

/* `nodes` activities n000.. in a chain, the last routing `ok` to itself. */
static char *looping_chain(int nodes, size_t *len)
{
    json_t *n = json_object();
    for (int k = 0; k < nodes; k++) {
        char id[16], next[16];
        snprintf(id, sizeof id, "n%03d", k);
        snprintf(next, sizeof next, "n%03d", k + 1 < nodes ? k + 1 : k);
        json_t *input = k == 0 ? json_pack("{s:[s]}", "$get", "input")
                               : json_pack("{s:i,s:{s:[s,s,s]}}", "k", k, "prev", "$get",
                                           "nodes", "n000", "visit");
        json_object_set_new(n, id,
                            json_pack("{s:s,s:s,s:o,s:{s:s}}", "kind", "activity", "action",
                                      "step", "input", input, "outcomes", "ok", next));
    }
    json_t *wf = json_pack("{s:s,s:s,s:s,s:{s:i,s:i},s:{s:{s:s}},s:o}", "format",
                           "runspore.workflow/0.1", "name", "bench", "start", "n000", "limits",
                           "maxVisitsPerNode", 1000, "maxActivations", 10000, "actions", "step",
                           "effect", "idempotent", "nodes", n);
    return encode_or_die(wf, len);
}

typedef struct shape {
    const char *name;
    int nodes;
    char *graph;
    size_t graph_len;
    sp_workflow *wf;
    char **events; /* payloads: [0] run.started, [i] the result of step i */
    size_t *event_len;
    size_t nevents; /* nodes - 1 untimed results, then LOOP_STEPS timed ones */
    size_t snapshot_bytes; /* at the end of a run */
} shape;

static void shape_init(shape *sh, const char *name, int nodes)
{
    sh->name = name;
    sh->nodes = nodes;
    sh->graph = looping_chain(nodes, &sh->graph_len);
    sp_kernel_failure f = {0};
    bool oom = false;
    sh->wf = sp_workflow_load(sh->graph, sh->graph_len, &f, &oom);
    if (!sh->wf) {
        fprintf(stderr, "bench_kernel: %s: %s %s\n", name, f.code, f.details);
        exit(2);
    }
    sh->nevents = 1 + (size_t)(nodes - 1) + LOOP_STEPS;
    sh->events = calloc(sh->nevents, sizeof *sh->events);
    sh->event_len = calloc(sh->nevents, sizeof *sh->event_len);
    if (!sh->events || !sh->event_len)
        exit(2);
    sh->events[0] = encode_or_die(json_pack("{s:s,s:s,s:{s:s}}", "tenant", "bench", "runId",
                                            "r1", "input", "url", "https://example.test/a"),
                                  &sh->event_len[0]);
    for (size_t i = 1; i < sh->nevents; i++) {
        /* step i answers the activation entered by step i - 1 */
        size_t k = i - 1 < (size_t)nodes ? i - 1 : (size_t)nodes - 1;
        size_t visit = i - 1 < (size_t)nodes ? 1 : i - (size_t)nodes + 1;
        char activation[64], inv[SP_ID_LEN + 1], attempt_id[SP_ID_LEN + 8];
        snprintf(activation, sizeof activation, "n%03zu/%zu", k, visit);
        sp_invocation_id("bench", "r1", activation, inv);
        snprintf(attempt_id, sizeof attempt_id, "%s.1", inv);
        /* a no-op step: outcome ok, no output (as the engine benchmarks' native steps) */
        sh->events[i] = encode_or_die(
            json_pack("{s:s,s:s,s:i,s:s,s:s}", "invocationId", inv, "attemptId", attempt_id,
                      "attempt", 1, "status", "success", "outcome", "ok"),
            &sh->event_len[i]);
    }
}

static void shape_free(shape *sh)
{
    for (size_t i = 0; i < sh->nevents; i++)
        free(sh->events[i]);
    free(sh->events);
    free(sh->event_len);
    free(sh->graph);
    sp_workflow_free(sh->wf);
}

/* The median step (bench_percentile(s, 0.5)) is robust against the other
 * work of a shared machine. */

/* One run: the untimed prefix, then LOOP_STEPS steps timed one by one into
 * `out`. `keep`: thread the decoded state (no snapshot bytes read). */
static void shape_run(shape *sh, bool keep, bench_samples *out)
{
    char *snap = NULL;
    size_t snap_len = 0;
    sp_kernel_state *kept = NULL;
    size_t timed_from = (size_t)sh->nodes; /* first timed step */
    for (size_t i = 0; i < sh->nevents; i++) {
        sp_kernel_request req = {
            .identity = {sh->wf->package_digest, "bench:kernel", SP_SEMANTICS_VERSION,
                         SP_CODEC_VERSION},
            .graph = sh->graph,
            .graph_len = sh->graph_len,
            .loaded_graph = sh->wf,
            .snapshot = snap,
            .snapshot_len = snap_len,
            .state = kept,
            .want_state = keep,
            .event = {"e", i + 1, 1000 + i, i == 0 ? "run.started" : "activity.result",
                      sh->events[i], sh->event_len[i], NULL},
            .limits = SP_KERNEL_DEFAULT_LIMITS,
        };
        kept = NULL;
        sp_kernel_decision d;
        sp_kernel_failure f;
        double t0 = now_s();
        int rc = sp_kernel_transition(&req, &d, &f);
        double t1 = now_s();
        if (rc != SP_KERNEL_DECISION || strcmp(d.status, "running") != 0) {
            fprintf(stderr, "bench_kernel: %s step %zu: %s %s (status %s)\n", sh->name, i,
                    f.code, f.details, d.status);
            exit(2);
        }
        if (i >= timed_from)
            bench_sample_add(out, (t1 - t0) * 1e6);
        free(snap);
        snap = d.snapshot;
        snap_len = d.snapshot_len;
        d.snapshot = NULL;
        kept = d.state;
        d.state = NULL;
        sp_kernel_decision_free(&d);
    }
    sh->snapshot_bytes = snap_len;
    free(snap);
    sp_kernel_state_free(kept);
}

/* The four cases in rounds (so that a busy moment hits them alike): `count`
 * rounds, or as many as fit `seconds` (at least 3). */
static void state_size_bench(size_t count, double seconds)
{
    shape loop, chain;
    shape_init(&loop, "self-loop-1", 1);
    shape_init(&chain, "chain-250", 250);
    bench_samples lb = {0}, lk = {0}, cb = {0}, ck = {0};
    double t0 = now_s();
    size_t rounds = 0;
    while (count ? rounds < count : (rounds < 3 || now_s() - t0 < seconds)) {
        shape_run(&loop, false, &lb);
        shape_run(&loop, true, &lk);
        shape_run(&chain, false, &cb);
        shape_run(&chain, true, &ck);
        rounds++;
    }
    double mlb = bench_percentile(&lb, 0.5), mlk = bench_percentile(&lk, 0.5);
    double mcb = bench_percentile(&cb, 0.5), mck = bench_percentile(&ck, 0.5);
    printf("per transition (median of %zu steps each)  from bytes    kept state   bytes/kept\n",
           lb.n);
    printf("self-loop-1  (snapshot %6zu bytes)     %8.2f us   %8.2f us   %8.2f\n",
           loop.snapshot_bytes, mlb, mlk, mlb / mlk);
    printf("chain-250    (snapshot %6zu bytes)     %8.2f us   %8.2f us   %8.2f\n",
           chain.snapshot_bytes, mcb, mck, mcb / mck);
    printf("chain-250 / self-loop-1                   %8.2f      %8.2f      (goal <= 1.2)\n",
           mcb / mlb, mck / mlk);
    printf("chain-250 - self-loop-1                   %8.2f us   %8.2f us\n", mcb - mlb,
           mck - mlk);
    bench_samples_free(&lb);
    bench_samples_free(&lk);
    bench_samples_free(&cb);
    bench_samples_free(&ck);
    shape_free(&loop);
    shape_free(&chain);
}

static void usage(FILE *out)
{
    fputs("usage: bench_kernel [--seconds S | --count N] [<trace.json | directory>...]\n"
          "Replays golden kernel traces in-process and prints transitions per second,\n"
          "from snapshot bytes and keeping the decoded state, with canonical encoding +\n"
          "SHA-256 of the same snapshots as a baseline; then the cost of one transition\n"
          "of a 1-node and a 250-node workflow, from bytes and with the kept state.\n"
          "Default: 2 seconds per measurement.\n",
          out);
}

int main(int argc, char **argv)
{
    double seconds = 2.0;
    size_t count = 0;
    corpus c = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            count = strtoull(argv[++i], NULL, 10);
        } else if (argv[i][0] == '-') {
            usage(stderr);
            return 2;
        } else {
            struct stat st;
            if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                if (add_directory(&c, argv[i])) {
                    free_corpus(&c);
                    return 2;
                }
            } else {
                add_path(&c, argv[i]);
            }
        }
    }
    if (count == 0 && !(seconds > 0)) {
        usage(stderr);
        free_corpus(&c);
        return 2;
    }
    if (load_corpus(&c)) {
        free_corpus(&c);
        return 2;
    }

    if (c.ntraces) {
        /* warm-up and sanity: a failing trace stops early, so say so */
        size_t failed = replay_pass(&c, false) + replay_pass(&c, true);
        printf("bench_kernel: %zu traces, %zu transitions per pass, %zu snapshots per pass\n",
               c.ntraces, c.nsteps, c.nsnapshots);
        if (failed)
            printf("warning: %zu trace replay(s) do not match; their later steps are not "
                   "measured\n",
                   failed);

        measure replay, kept, base;
        MEASURE(replay, count, seconds, replay_pass(&c, false));
        MEASURE(kept, count, seconds, replay_pass(&c, true));
        unsigned char sink = 0;
        size_t bytes = 0;
        MEASURE(base, count, seconds, bytes = baseline_pass(&c, &sink));

        double transitions = (double)replay.passes * (double)c.nsteps;
        double kept_transitions = (double)kept.passes * (double)c.nsteps;
        double snapshots = (double)base.passes * (double)c.nsnapshots;
        double tps = replay.seconds > 0 ? transitions / replay.seconds : 0;
        double kps = kept.seconds > 0 ? kept_transitions / kept.seconds : 0;
        double sps = base.seconds > 0 ? snapshots / base.seconds : 0;
        printf("replay        %12.0f transitions/s  (%zu passes, %.0f transitions in %.3f s)\n",
               tps, replay.passes, transitions, replay.seconds);
        printf("replay, kept  %12.0f transitions/s  (%zu passes, %.0f transitions in %.3f s)\n",
               kps, kept.passes, kept_transitions, kept.seconds);
        printf("encode+sha256 %12.0f snapshots/s    (%zu passes, %.0f snapshots, %zu bytes per "
               "pass, in %.3f s)\n",
               sps, base.passes, snapshots, bytes, base.seconds);
        if (tps > 0)
            printf("ratio         %12.2f  (one transition costs this many snapshot "
                   "encode+digests)\n",
                   sps / tps);
        if (kps > 0)
            printf("ratio, kept   %12.2f\n", sps / kps);
        if (sink == 0xFF)
            fputc('\n', stderr); /* never true in practice; keeps `sink` alive */
    }
    state_size_bench(count, seconds);
    free_corpus(&c);
    return 0;
}
