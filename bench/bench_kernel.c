/*
 * bench_kernel.c - kernel throughput: replays golden traces in-process and
 * prints transitions per second, next to a baseline measured in the same run
 * (canonical encoding + SHA-256 of the same traces' expected snapshots), so
 * the printed ratio survives a change of machine.
 *
 * usage: bench_kernel [--seconds S | --count N] <trace.json | directory>...
 *
 * A "transition" here is one step of sp_trace_replay(): the kernel's
 * transition plus the replay's byte comparisons and digests of the decision
 * (what `spore trace` does), and each replay of a trace loads its graph once.
 * The baseline does only sp_json_encode + digest::state per snapshot.
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
#include "trace/trace.h"

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
static size_t replay_pass(const corpus *c)
{
    size_t failed = 0;
    for (size_t i = 0; i < c->ntraces; i++) {
        sp_trace_mismatch m;
        if (!sp_trace_replay(c->traces[i], &m, NULL))
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

static void usage(FILE *out)
{
    fputs("usage: bench_kernel [--seconds S | --count N] <trace.json | directory>...\n"
          "Replays golden kernel traces in-process and prints transitions per second,\n"
          "with canonical encoding + SHA-256 of the same snapshots as a baseline.\n"
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
    if (c.npaths == 0 || (count == 0 && !(seconds > 0))) {
        usage(stderr);
        free_corpus(&c);
        return 2;
    }
    if (load_corpus(&c)) {
        free_corpus(&c);
        return 2;
    }

    /* warm-up and sanity: a failing trace stops early, so say so */
    size_t failed = replay_pass(&c);
    printf("bench_kernel: %zu traces, %zu transitions per pass, %zu snapshots per pass\n",
           c.ntraces, c.nsteps, c.nsnapshots);
    if (failed)
        printf("warning: %zu trace(s) do not replay; their later steps are not measured\n", failed);

    measure replay, base;
    MEASURE(replay, count, seconds, replay_pass(&c));
    unsigned char sink = 0;
    size_t bytes = 0;
    MEASURE(base, count, seconds, bytes = baseline_pass(&c, &sink));

    double transitions = (double)replay.passes * (double)c.nsteps;
    double snapshots = (double)base.passes * (double)c.nsnapshots;
    double tps = replay.seconds > 0 ? transitions / replay.seconds : 0;
    double sps = base.seconds > 0 ? snapshots / base.seconds : 0;
    printf("replay        %12.0f transitions/s  (%zu passes, %.0f transitions in %.3f s)\n", tps,
           replay.passes, transitions, replay.seconds);
    printf("encode+sha256 %12.0f snapshots/s    (%zu passes, %.0f snapshots, %zu bytes per pass, "
           "in %.3f s)\n",
           sps, base.passes, snapshots, bytes, base.seconds);
    if (tps > 0)
        printf("ratio         %12.2f  (one transition costs this many snapshot encode+digests)\n",
               sps / tps);
    if (sink == 0xFF)
        fputc('\n', stderr); /* never true in practice; keeps `sink` alive */
    free_corpus(&c);
    return 0;
}
