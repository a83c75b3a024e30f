/*
 * test_graph.c - `spore graph`'s model (src/graph/) on a run the kernel
 * makes here, event by event, without a store: a loop with a loop limit
 * (`red` twice, then `exhausted`), a parallel whose branch b fails at a
 * fail node while branch a's step runs (the step is cancelled, the join
 * routes `failed`). After each phase: every node's state, every edge's
 * count, a map-free picture rendered as SVG, PNG and DOT, the DOT read back
 * by libcgraph with the state colours on its nodes; a replay that does not
 * reach the stored snapshot shows no counts and says why.
 *
 * tests/cli/test_graph.sh drives the same through the real binary and store.
 */
#include <cgraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graph/graph.h"
#include "json/json.h"

static const char WORKFLOW[] =
    "{\"format\":\"spore.workflow/0.2\",\"name\":\"unit\",\"start\":\"lint\","
    "\"actions\":{\"lint\":{\"kind\":\"native\",\"function\":\"f\",\"effect\":\"pure\","
    "\"outcomes\":[\"ok\",\"red\"]},\"step\":{\"kind\":\"native\",\"function\":\"f\","
    "\"effect\":\"pure\"}},\"nodes\":{"
    "\"lint\":{\"kind\":\"activity\",\"action\":\"lint\",\"loopLimits\":{\"red\":2},"
    "\"outcomes\":{\"ok\":\"fan\",\"red\":\"lint\",\"exhausted\":\"fan\"}},"
    "\"fan\":{\"kind\":\"parallel\",\"branches\":{\"a\":\"wa\",\"b\":\"wb\"},\"join\":\"gather\"},"
    "\"wa\":{\"kind\":\"activity\",\"action\":\"step\",\"outcomes\":{\"ok\":\"gather\"}},"
    "\"wb\":{\"kind\":\"await-signal\",\"signal\":\"go\",\"outcomes\":{\"received\":\"gather\","
    "\"stop\":\"boom\"}},"
    "\"boom\":{\"kind\":\"fail\",\"error\":{\"code\":\"unit.boom\",\"message\":\"stopped\"}},"
    "\"gather\":{\"kind\":\"join\",\"outcomes\":{\"ok\":\"end\",\"failed\":\"end\"}},"
    "\"end\":{\"kind\":\"complete\"}}}";

/* A run the test drives: its package, its events so far, its snapshot. */
typedef struct run {
    sp_workflow *wf;
    char *snapshot;
    size_t snapshot_len;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    uint64_t seq;
    gr_model base;     /* the history counts along its edges; kept to the end */
    gr_history *history;
    gr_model model;    /* coloured anew at each check */
} run;

static void send(run *r, const char *kind, json_t *payload)
{
    size_t len = 0;
    char *body = sp_json_encode_alloc(payload, &len, NULL);
    json_decref(payload);
    char id[32];
    r->seq++;
    snprintf(id, sizeof id, "evt-%llu", (unsigned long long)r->seq);
    sp_kernel_event e = {id, r->seq, 1000 + r->seq, kind, body, len, NULL};
    sp_kernel_request req = {
        .identity = {r->wf->package_digest, "test", SP_SEMANTICS_VERSION_02, SP_CODEC_VERSION},
        .graph = r->wf->canonical,
        .graph_len = r->wf->canonical_len,
        .snapshot = r->snapshot,
        .snapshot_len = r->snapshot_len,
        .event = e,
        .limits = SP_KERNEL_DEFAULT_LIMITS_02,
    };
    sp_kernel_decision d;
    sp_kernel_failure f;
    int rc = sp_kernel_transition(&req, &d, &f);
    CHECK_INT(rc, SP_KERNEL_DECISION);
    if (rc == SP_KERNEL_DECISION) {
        free(r->snapshot);
        r->snapshot = d.snapshot;
        r->snapshot_len = d.snapshot_len;
        d.snapshot = NULL;
        memcpy(r->digest, d.snapshot_digest, sizeof r->digest);
        sp_kernel_decision_free(&d);
    } else {
        fprintf(stderr, "kernel: %s %s\n", f.code, f.details);
    }
    gr_history_feed(r->history, &e);
    free(body);
}

/* The one scheduled invocation of `node`, answered with `outcome`. */
static void result(run *r, const char *node, const char *outcome)
{
    json_t *s = sp_json_parse(r->snapshot, r->snapshot_len, NULL);
    const char *key;
    json_t *inv, *found = NULL;
    json_object_foreach(json_object_get(s, "invocations"), key, inv)
    {
        if (strcmp(json_string_value(json_object_get(inv, "nodeId")), node) == 0)
            found = inv;
    }
    CHECK(found != NULL);
    if (found) {
        const char *id = json_string_value(json_object_get(found, "invocationId"));
        char attempt[96];
        snprintf(attempt, sizeof attempt, "%s.1", id);
        send(r, "activity.result",
             json_pack("{s:s,s:s,s:i,s:s,s:s,s:{}}", "invocationId", id, "attemptId", attempt,
                       "attempt", 1, "status", "success", "outcome", outcome, "output"));
    }
    json_decref(s);
}

/* The model of the run as it stands, with `digest` as the stored one. */
static void colour(run *r, const char *digest)
{
    gr_model_free(&r->model);
    sp_error err = {0};
    CHECK(gr_model_build(r->wf, &r->model, &err) == 0);
    gr_run info = {"run_unit", "running", false, r->snapshot, r->snapshot_len, digest};
    CHECK(gr_model_set_run(&r->model, &info, r->history, &err) == 0);
}

static gr_state state_of(const run *r, const char *node)
{
    long i = gr_model_node_index(&r->model, node);
    return i < 0 ? GR_NO_RUN : r->model.nodes[i].state;
}

static long long count_of(const run *r, const char *from, const char *label)
{
    for (size_t i = 0; i < r->model.nedges; i++) {
        const gr_edge *e = &r->model.edges[i];
        if (e->from && strcmp(e->from, from) == 0 && strcmp(e->label, label) == 0)
            return (long long)e->count;
    }
    return -1;
}

#define CHECK_STATE(r, node, want) CHECK_STR(gr_state_name(state_of(r, node)), gr_state_name(want))

static void check_fanned_out(run *r)
{
    colour(r, r->digest);
    CHECK(r->model.counts_known);
    CHECK_INT(count_of(r, "lint", "red"), 2);
    CHECK_INT(count_of(r, "lint", "exhausted"), 1);
    CHECK_INT(count_of(r, "lint", "ok"), 0);
    CHECK_INT(count_of(r, "fan", "a"), 1);
    CHECK_INT(count_of(r, "fan", "b"), 1);
    CHECK_INT(count_of(r, "fan", "join"), 0);
    CHECK_INT(r->model.nodes[gr_model_node_index(&r->model, "lint")].visits, 3);
    CHECK_STATE(r, "lint", GR_DONE);
    CHECK_STATE(r, "fan", GR_RUNNING); /* running beats waiting */
    CHECK_STATE(r, "wa", GR_RUNNING);
    CHECK_STATE(r, "wb", GR_WAITING);
    CHECK_STATE(r, "gather", GR_NOT_REACHED);
    CHECK_STATE(r, "end", GR_NOT_REACHED);
}

static void check_finished(run *r)
{
    colour(r, r->digest);
    CHECK(r->model.counts_known);
    CHECK_STATE(r, "lint", GR_DONE);
    CHECK_STATE(r, "fan", GR_DONE);
    CHECK_STATE(r, "wa", GR_CANCELLED); /* stopped when branch b failed */
    CHECK_STATE(r, "wb", GR_DONE);
    CHECK_STATE(r, "boom", GR_FAILED);
    CHECK_STATE(r, "gather", GR_DONE);
    CHECK_STATE(r, "end", GR_DONE);
    CHECK_INT(count_of(r, "wb", "stop"), 1);
    CHECK_INT(count_of(r, "wb", "received"), 0);
    CHECK_INT(count_of(r, "wa", "ok"), 0);
    CHECK_INT(count_of(r, "gather", "failed"), 1);
    CHECK_INT(count_of(r, "fan", "join"), 1);
}

/* The DOT of the model, read back: every node, the state colours. */
static void check_dot(const run *r)
{
    char *bytes = NULL;
    size_t len = 0;
    sp_error err = {0};
    CHECK(gr_render(&r->model, GR_DOT, &bytes, &len, &err) == 0);
    Agraph_t *g = bytes ? agmemread(bytes) : NULL;
    CHECK(g != NULL);
    for (size_t i = 0; g && i < r->model.nnodes; i++) {
        Agnode_t *n = agnode(g, (char *)r->model.nodes[i].node->id, 0);
        CHECK(n != NULL);
        if (n)
            CHECK_STR(agget(n, "fillcolor"), gr_state_colour(r->model.nodes[i].state));
    }
    CHECK(g && agnode(g, "(legend)", 0) != NULL);
    CHECK_INT(g ? agnnodes(g) : 0, (long long)r->model.nnodes + 2); /* + start and legend */
    if (g)
        agclose(g);
    free(bytes);
}

static void check_pictures(const run *r)
{
    char *bytes = NULL;
    size_t len = 0;
    sp_error err = {0};
    CHECK(gr_render(&r->model, GR_SVG, &bytes, &len, &err) == 0);
    CHECK(bytes && strstr(bytes, "<svg") && strstr(bytes, "<title>wa</title>"));
    CHECK(bytes && strstr(bytes, "red \xc3\x97" "2</text>"));
    CHECK(bytes && strstr(bytes, ">needs intervention</text>")); /* the legend */
    free(bytes);
    CHECK(gr_render(&r->model, GR_PNG, &bytes, &len, &err) == 0);
    CHECK(len > 8 && bytes && memcmp(bytes, "\x89PNG\r\n\x1a\n", 8) == 0);
    free(bytes);
    check_dot(r);
}

/* A replay that does not reach the stored snapshot: no counts, a note,
 * the states from the snapshot alone. */
static void check_mismatch(run *r)
{
    colour(r, "sha256:0000000000000000000000000000000000000000000000000000000000000000");
    CHECK(!r->model.counts_known);
    CHECK(strstr(r->model.counts_note, "did not give its stored snapshot") != NULL);
    CHECK_STATE(r, "boom", GR_FAILED);
    CHECK_STATE(r, "wa", GR_DONE); /* without the history nothing says it was stopped */
    json_t *j = gr_model_json(&r->model);
    CHECK(j && json_is_null(json_object_get(json_array_get(json_object_get(j, "edges"), 1),
                                            "count")));
    CHECK(j && json_is_false(json_object_get(
                   json_object_get(json_object_get(j, "run"), "edgeCounts"), "known")));
    json_decref(j);
}

/* Without a run: every node GR_NO_RUN, no counts, edges in byte order. */
static void check_plain(const sp_workflow *wf)
{
    gr_model m;
    sp_error err = {0};
    CHECK(gr_model_build(wf, &m, &err) == 0);
    CHECK_INT(m.nedges, 1 + 3 + 2 + 1 + 1 + 2 + 2); /* start, lint, fan, join edge, wa, wb, gather */
    CHECK_STR(m.edges[0].to, "lint");
    CHECK_STR(gr_state_name(m.nodes[0].state), "none");
    json_t *j = gr_model_json(&m);
    CHECK(j && json_is_null(json_object_get(j, "run")));
    json_decref(j);
    gr_model_free(&m);
}

int main(void)
{
    json_t *doc = sp_json_parse(WORKFLOW, sizeof WORKFLOW - 1, NULL);
    size_t len = 0;
    char *canonical = sp_json_encode_alloc(doc, &len, NULL);
    json_decref(doc);
    sp_kernel_failure f;
    bool oom = false;
    run r = {0};
    r.wf = canonical ? sp_workflow_load(canonical, len, &f, &oom) : NULL;
    free(canonical);
    CHECK(r.wf != NULL);
    if (!r.wf)
        return check_done("test_graph");
    check_plain(r.wf);
    sp_error err = {0};
    CHECK(gr_model_build(r.wf, &r.base, &err) == 0);
    r.history = gr_history_new(&r.base);
    send(&r, "run.started", json_pack("{s:s,s:s,s:n}", "tenant", "default", "runId", "run_unit",
                                      "input"));
    for (int i = 0; i < 3; i++)
        result(&r, "lint", "red"); /* red, red, then exhausted */
    check_fanned_out(&r);
    send(&r, "signal.received", json_pack("{s:s,s:s}", "name", "go", "outcome", "stop"));
    check_finished(&r);
    check_pictures(&r);
    check_mismatch(&r);
    gr_render_end();
    gr_history_free(r.history);
    gr_model_free(&r.model);
    gr_model_free(&r.base);
    sp_workflow_free(r.wf);
    free(r.snapshot);
    return check_done("test_graph");
}
