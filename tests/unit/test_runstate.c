/*
 * test_runstate.c - the engine's table of decoded run states
 * (src/engine/runstate.c), with real kernel states: a state kept for a run
 * is found again by its key and snapshot digest; a wrong digest drops it;
 * the table holds RUNSTATE_MAX runs, and past that the least recently kept
 * goes first, whatever bucket it shares with others (thousands of runs
 * cycle through it, each eviction unlinking its entry from its chain); it
 * holds at most RUNSTATE_BYTES of snapshots' bytes, dropping the least
 * recently kept to make room, and never a state heavier than that.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/internal.h"
#include "json/json.h"
#include "kernel/kernel.h"

#define SMALL 100 /* a snapshot's length */

typedef struct kernel_fixture {
    char *graph, *start;
    size_t graph_len, start_len;
} kernel_fixture;

/* One activity `a` of an idempotent action, and a run.started body. */
static void fixture_init(kernel_fixture *k)
{
    json_t *wf = json_pack("{s:s,s:s,s:s,s:{s:{s:s}},s:{s:{s:s,s:s,s:o,s:{s:s}}}}", "format",
                           "runspore.workflow/0.1", "name", "one", "start", "a", "actions",
                           "step", "effect", "idempotent", "nodes", "a", "kind", "activity",
                           "action", "step", "input", json_pack("{s:[s]}", "$get", "input"),
                           "outcomes", "ok", "a");
    json_t *start = json_pack("{s:s,s:s,s:n}", "tenant", "t1", "runId", "r1", "input");
    k->graph = sp_json_encode_alloc(wf, &k->graph_len, NULL);
    k->start = sp_json_encode_alloc(start, &k->start_len, NULL);
    json_decref(wf);
    json_decref(start);
    CHECK(k->graph && k->start);
}

/* A real decoded state (run.started decided with want_state); *digest: its
 * snapshot's digest. */
static sp_kernel_state *new_state(const kernel_fixture *k, char *digest, size_t cap)
{
    sp_kernel_request req = {
        .identity = {"sha256:test", "test:kernel", SP_SEMANTICS_VERSION, SP_CODEC_VERSION},
        .graph = k->graph,
        .graph_len = k->graph_len,
        .event = {"start", 1, 1000, "run.started", k->start, k->start_len, NULL},
        .limits = SP_KERNEL_DEFAULT_LIMITS,
        .want_state = true,
    };
    sp_kernel_decision d;
    sp_kernel_failure f;
    if (sp_kernel_transition(&req, &d, &f) != SP_KERNEL_DECISION) {
        check_fail(__FILE__, __LINE__, "the kernel refused run.started: %s", f.code);
        return NULL;
    }
    sp_kernel_state *s = d.state;
    d.state = NULL;
    snprintf(digest, cap, "%s", d.snapshot_digest);
    sp_kernel_decision_free(&d);
    return s;
}

static sp_run_key key_of(size_t i)
{
    sp_run_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.tenant, sizeof k.tenant, "%s", i % 3 ? "default" : "other");
    snprintf(k.run_id, sizeof k.run_id, "run_%032zx", i * 2654435761u);
    return k;
}

/* Keeps a state for runs [from, to). */
static void keep_runs(sp_engine *e, const kernel_fixture *k, size_t from, size_t to,
                      char *digest, size_t cap)
{
    for (size_t i = from; i < to; i++) {
        sp_run_key key = key_of(i);
        engine_runstate_keep(e, &key, new_state(k, digest, cap), SMALL);
    }
}

static size_t kept_among(sp_engine *e, size_t from, size_t to, const char *digest)
{
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        sp_run_key key = key_of(i);
        n += engine_runstate_has(e, &key, digest);
    }
    return n;
}

/* The bytes: two halves fill the table; one byte more drops the older
 * half; a state heavier than the whole bound is not kept and drops
 * nothing; the table's count of bytes is what it holds. */
static void bytes_bound(sp_engine *e, const kernel_fixture *k, char *digest, size_t cap)
{
    sp_run_key a = key_of(10), b = key_of(11), c = key_of(12), big = key_of(13);
    engine_runstate_keep(e, &a, new_state(k, digest, cap), RUNSTATE_BYTES / 2);
    engine_runstate_keep(e, &b, new_state(k, digest, cap), RUNSTATE_BYTES / 2);
    CHECK(engine_runstate_has(e, &a, digest) && engine_runstate_has(e, &b, digest));
    CHECK_INT(e->runstate->bytes, RUNSTATE_BYTES);
    engine_runstate_keep(e, &c, new_state(k, digest, cap), 1);
    CHECK(!engine_runstate_has(e, &a, digest));
    CHECK(engine_runstate_has(e, &b, digest) && engine_runstate_has(e, &c, digest));
    CHECK_INT(e->runstate->bytes, RUNSTATE_BYTES / 2 + 1);
    engine_runstate_keep(e, &big, new_state(k, digest, cap), RUNSTATE_BYTES + 1);
    CHECK(!engine_runstate_has(e, &big, digest));
    CHECK(engine_runstate_has(e, &b, digest) && engine_runstate_has(e, &c, digest));
    sp_kernel_state *s = engine_runstate_take(e, &b, digest);
    CHECK(s != NULL);
    CHECK_INT(e->runstate->bytes, 1);
    engine_runstate_keep(e, &b, s, 2); /* kept again: lighter now */
    CHECK_INT(e->runstate->bytes, 3);
}

int main(void)
{
    kernel_fixture k;
    fixture_init(&k);
    char digest[SP_DIGEST_TEXT_LEN + 1] = "";
    sp_engine *e = calloc(1, sizeof *e);
    CHECK(e != NULL);

    /* found by key and digest, taken once; a wrong digest drops it */
    sp_run_key one = key_of(1);
    engine_runstate_keep(e, &one, new_state(&k, digest, sizeof digest), SMALL);
    CHECK(engine_runstate_has(e, &one, digest));
    CHECK(!engine_runstate_has(e, &one, "sha256:other"));
    sp_kernel_state *s = engine_runstate_take(e, &one, digest);
    CHECK(s != NULL && strcmp(sp_kernel_state_digest(s), digest) == 0);
    CHECK(engine_runstate_take(e, &one, digest) == NULL); /* taken */
    engine_runstate_keep(e, &one, s, SMALL);
    CHECK(engine_runstate_take(e, &one, "sha256:other") == NULL);
    CHECK(!engine_runstate_has(e, &one, digest)); /* dropped */
    sp_run_key never = key_of(999999);
    CHECK(engine_runstate_take(e, &never, digest) == NULL);

    /* RUNSTATE_MAX runs are all kept */
    keep_runs(e, &k, 0, RUNSTATE_MAX, digest, sizeof digest);
    CHECK_INT(kept_among(e, 0, RUNSTATE_MAX, digest), RUNSTATE_MAX);

    /* one more: the least recently kept goes, the others stay */
    keep_runs(e, &k, RUNSTATE_MAX, RUNSTATE_MAX + 1, digest, sizeof digest);
    CHECK_INT(kept_among(e, 0, 1, digest), 0);
    CHECK_INT(kept_among(e, 1, RUNSTATE_MAX + 1, digest), RUNSTATE_MAX);

    /* a run kept again is recent: it outlives the runs kept before it */
    sp_run_key again = key_of(5);
    engine_runstate_keep(e, &again, new_state(&k, digest, sizeof digest), SMALL);
    keep_runs(e, &k, RUNSTATE_MAX + 1, RUNSTATE_MAX + 100, digest, sizeof digest);
    CHECK(engine_runstate_has(e, &again, digest));
    CHECK_INT(kept_among(e, 1, 5, digest), 0);

    /* thousands more cycle through: exactly the last RUNSTATE_MAX stay */
    size_t total = 4 * RUNSTATE_MAX;
    keep_runs(e, &k, 0, total, digest, sizeof digest);
    CHECK_INT(kept_among(e, 0, total - RUNSTATE_MAX, digest), 0);
    CHECK_INT(kept_among(e, total - RUNSTATE_MAX, total, digest), RUNSTATE_MAX);
    for (size_t i = total - RUNSTATE_MAX; i < total; i++) {
        sp_run_key key = key_of(i);
        sp_kernel_state *t = engine_runstate_take(e, &key, digest);
        CHECK(t != NULL);
        sp_kernel_state_free(t);
    }
    CHECK_INT(kept_among(e, 0, total, digest), 0);
    bytes_bound(e, &k, digest, sizeof digest);

    engine_runstate_free(e);
    free(e);
    free(k.graph);
    free(k.start);
    return check_done("test_runstate");
}
