/*
 * history.c - a run's history replayed through the kernel (graph.h,
 * history.h): every consumed event, in sequence order, into the pure
 * transition function exactly as the engine ran it (the package's
 * semantics, the default budget, the kept decoded state), and the
 * snapshots before and after each transition compared:
 *
 *   - a node whose latest result (nodes.<id>.visit) changed routed once,
 *     along the edge of its outcome (of `exhausted` when the transition
 *     says loop.exhausted for it): that edge's count goes up by one;
 *   - a parallel entered k more times started each branch k more times; a
 *     join entered k more times counts on its parallel's join edge;
 *   - an activation that stood at a position before and no longer does,
 *     without a result of its node and (for a parallel) without its join,
 *     was stopped: its work was cancelled.
 *
 * The replay is checked by the caller (runstate.c): only when it ends on
 * the stored snapshot's digest are its counts shown.
 *
 * Must never read the store, trust a replay that did not reach the stored
 * snapshot, or go past its budget (GR_REPLAY_EVENTS_MAX events,
 * GR_REPLAY_BYTES_MAX snapshot bytes).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stateview.h"
#include "graph/history.h"

#define GR_REPLAY_EVENTS_MAX 100000u
#define GR_REPLAY_BYTES_MAX (512ull << 20)
#define KERNEL_DIGEST "native:spore-kernel@" SP_SEMANTICS_VERSION

struct gr_history {
    const gr_model *m;
    sp_kernel_identity identity;
    sp_kernel_limits limits;
    sp_kernel_state *kept; /* the decoded state after the last transition */
    sv_state prev;         /* its snapshot as the state view reads it */
    char digest[SP_DIGEST_TEXT_LEN + 1]; /* "" before the first transition */
    uint64_t transitions, bytes;
    uint64_t *edge_counts; /* per model edge */
    uint64_t *entered;     /* per node: the transition that last entered it */
    uint64_t *stopped;     /* per node: the transition that last stopped its work */
    bool stopped_replay;
    char note[GR_NOTE_MAX];
};

gr_history *gr_history_new(const gr_model *m)
{
    gr_history *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    bool v02 = m->wf->semantics == SP_SEM_02;
    const char *semantics = v02 ? SP_SEMANTICS_VERSION_02 : SP_SEMANTICS_VERSION;
    h->m = m;
    h->identity = (sp_kernel_identity){m->wf->package_digest, KERNEL_DIGEST, semantics,
                                       SP_CODEC_VERSION};
    h->limits = sp_kernel_default_limits(semantics);
    h->edge_counts = calloc(m->nedges + 1, sizeof *h->edge_counts);
    h->entered = calloc(m->nnodes + 1, sizeof *h->entered);
    h->stopped = calloc(m->nnodes + 1, sizeof *h->stopped);
    if (!h->edge_counts || !h->entered || !h->stopped) {
        gr_history_free(h);
        return NULL;
    }
    return h;
}

void gr_history_free(gr_history *h)
{
    if (!h)
        return;
    sp_kernel_state_free(h->kept);
    sv_free(&h->prev);
    free(h->edge_counts);
    free(h->entered);
    free(h->stopped);
    free(h);
}

bool gr_history_stopped(const gr_history *h)
{
    return h->stopped_replay;
}

__attribute__((format(printf, 2, 3))) static void stop(gr_history *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->note, sizeof h->note, fmt, ap);
    va_end(ap);
    h->stopped_replay = true;
}

/* ---- reading two snapshots (an empty sv_state reads as "nothing") ---- */

static uint64_t visits_of(const sv_state *st, const char *id)
{
    json_int_t v = json_integer_value(json_object_get(st->visits, id));
    return v > 0 ? (uint64_t)v : 0;
}

static json_int_t result_visit(const sv_state *st, const char *id)
{
    return json_integer_value(json_object_get(json_object_get(st->nodes, id), "visit"));
}

static bool at_position(const sv_state *st, const char *activation)
{
    for (size_t i = 0; i < st->npositions; i++)
        if (strcmp(st->positions[i].activation_id, activation) == 0)
            return true;
    return false;
}

static bool says_exhausted(const sp_kernel_decision *d, const char *id)
{
    for (size_t i = 0; i < d->ndiagnostics; i++)
        if (strcmp(d->diagnostics[i].code, "loop.exhausted") == 0 && d->diagnostics[i].node_id &&
            strcmp(d->diagnostics[i].node_id, id) == 0)
            return true;
    return false;
}

/* ---- counting ---- */

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Add `n` to every edge of `kind` from `from` to `to` (NULL: any) labelled
 * `label` (NULL: any). */
static void count_edges(gr_history *h, gr_edge_kind kind, const char *from, const char *to,
                        const char *label, uint64_t n)
{
    for (size_t i = 0; i < h->m->nedges; i++) {
        const gr_edge *e = &h->m->edges[i];
        if (e->kind == kind && (!from || same(e->from, from)) && (!to || same(e->to, to)) &&
            (!label || same(e->label, label)))
            h->edge_counts[i] += n;
    }
}

/* Node `i` was entered `n` more times in transition `t`. */
static void entered(gr_history *h, size_t i, uint64_t n, uint64_t t)
{
    const sp_node *node = h->m->nodes[i].node;
    h->entered[i] = t;
    if (node->kind == SP_NODE_PARALLEL)
        count_edges(h, GR_EDGE_BRANCH, node->id, NULL, NULL, n);
    if (node->kind == SP_NODE_JOIN)
        count_edges(h, GR_EDGE_JOIN, NULL, node->id, NULL, n);
}

/* Node `i` recorded a new result in decision `d`: one route taken. */
static void routed(gr_history *h, size_t i, const sv_state *next, const sp_kernel_decision *d)
{
    const char *id = h->m->nodes[i].node->id;
    const char *outcome =
        json_string_value(json_object_get(json_object_get(next->nodes, id), "outcome"));
    if (says_exhausted(d, id))
        outcome = "exhausted";
    if (outcome)
        count_edges(h, GR_EDGE_ROUTE, id, NULL, outcome, 1);
}

/* A parallel's activation ends without being stopped when its join is
 * entered. */
static bool ended_by_result(const gr_history *h, const sv_state *next, const sp_node *node)
{
    if (result_visit(&h->prev, node->id) != result_visit(next, node->id))
        return true;
    return node->kind == SP_NODE_PARALLEL && node->join &&
           visits_of(next, node->join) > visits_of(&h->prev, node->join);
}

static void find_stopped(gr_history *h, const sv_state *next, uint64_t t)
{
    for (size_t p = 0; p < h->prev.npositions; p++) {
        const sv_position *at = &h->prev.positions[p];
        long i = gr_model_node_index(h->m, at->node_id);
        if (i < 0 || at_position(next, at->activation_id))
            continue;
        if (!ended_by_result(h, next, h->m->nodes[i].node))
            h->stopped[i] = t;
    }
}

static void compare(gr_history *h, const sv_state *next, const sp_kernel_decision *d)
{
    uint64_t t = ++h->transitions;
    if (t == 1)
        count_edges(h, GR_EDGE_START, NULL, NULL, NULL, 1);
    for (size_t i = 0; i < h->m->nnodes; i++) {
        const char *id = h->m->nodes[i].node->id;
        uint64_t before = visits_of(&h->prev, id), after = visits_of(next, id);
        if (after > before)
            entered(h, i, after - before, t);
        if (result_visit(&h->prev, id) != result_visit(next, id))
            routed(h, i, next, d);
    }
    find_stopped(h, next, t);
}

/* ---- one event ---- */

static bool transition(gr_history *h, const sp_kernel_event *e, sp_kernel_decision *d)
{
    sp_kernel_request req = {
        .identity = h->identity,
        .graph = h->m->wf->canonical,
        .graph_len = h->m->wf->canonical_len,
        .loaded_graph = h->m->wf,
        .state = h->kept, /* taken by the call; back in d->state */
        .want_state = true,
        .event = *e,
        .limits = h->limits,
    };
    h->kept = NULL;
    sp_kernel_failure f;
    int rc = sp_kernel_transition(&req, d, &f);
    if (rc == SP_KERNEL_OOM)
        stop(h, "out of memory at event %llu", (unsigned long long)e->sequence);
    else if (rc == SP_KERNEL_FAILURE)
        stop(h, "the kernel refused event %llu (%s): %s", (unsigned long long)e->sequence,
             f.code, f.details);
    return rc == SP_KERNEL_DECISION;
}

void gr_history_feed(gr_history *h, const sp_kernel_event *e)
{
    if (h->stopped_replay)
        return;
    if (h->transitions >= GR_REPLAY_EVENTS_MAX) {
        stop(h, "the run has more than %u events to replay", GR_REPLAY_EVENTS_MAX);
        return;
    }
    sp_kernel_decision d;
    if (!transition(h, e, &d))
        return;
    h->kept = d.state;
    d.state = NULL;
    h->bytes += d.snapshot_len;
    sv_state next;
    sp_error err = {0};
    if (h->bytes > GR_REPLAY_BYTES_MAX)
        stop(h, "the run's snapshots exceed %llu MiB to replay", GR_REPLAY_BYTES_MAX >> 20);
    else if (sv_parse(d.snapshot, d.snapshot_len, &next, &err))
        stop(h, "a replayed snapshot is unreadable: %s", err.message);
    if (!h->stopped_replay) {
        compare(h, &next, &d);
        sv_free(&h->prev);
        h->prev = next;
        memcpy(h->digest, d.snapshot_digest, sizeof h->digest);
    }
    sp_error_clear(&err);
    sp_kernel_decision_free(&d);
}

/* ---- what runstate.c reads ---- */

bool gr_history_matches(const gr_history *h, const char *snapshot_digest, const char **why)
{
    *why = h->note;
    if (h->stopped_replay)
        return false;
    if (same(snapshot_digest && *snapshot_digest ? snapshot_digest : NULL,
             h->digest[0] ? h->digest : NULL))
        return true;
    *why = "replaying the run's events did not give its stored snapshot";
    return false;
}

uint64_t gr_history_edge_count(const gr_history *h, size_t i)
{
    return i < h->m->nedges ? h->edge_counts[i] : 0;
}

bool gr_history_stopped_last(const gr_history *h, size_t i)
{
    return i < h->m->nnodes && h->stopped[i] && h->stopped[i] >= h->entered[i];
}
