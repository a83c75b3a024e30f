/*
 * runstate.c - one state per node from a run (graph.h; docs/graph.md "How
 * a node's state is derived"). A node that stands at a position of the
 * stored snapshot (the run's or a branch's) is
 *
 *   needs intervention  an invocation of it is unknown or stuck (a map: any item),
 *   running             else an invocation of it is scheduled (pending or claimed),
 *   waiting             else it waits for a signal or a timer;
 *   a parallel          the most urgent of its branches' positions, in that order;
 *
 * and any other node is
 *
 *   failed              the run failed at it (result.error.nodeId), or a fail
 *                       node that was entered;
 *   cancelled           its work was stopped after it was last entered (the
 *                       replayed history: a cancel, a failed branch or run);
 *   done                entered at least once (visits > 0);
 *   not reached         never entered.
 *
 * Must never decide from anything but the stored snapshot and a history
 * that reached it, or change the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stateview.h"
#include "graph/history.h"

#define NESTING_MAX 16 /* parallels nest at most 8 deep (W19) */

/* How urgent a live node's state is: the more urgent wins. */
static int urgency(gr_state s)
{
    switch (s) {
    case GR_WAITING:
        return 1;
    case GR_RUNNING:
        return 2;
    case GR_INTERVENTION:
        return 3;
    default:
        return 0;
    }
}

static gr_state more_urgent(gr_state a, gr_state b)
{
    return urgency(b) > urgency(a) ? b : a;
}

/* "<node>/<visit>[#<index>]" belongs to `node`. */
static bool activation_of(const char *activation, const char *node)
{
    size_t n = strlen(node);
    return activation && strncmp(activation, node, n) == 0 && activation[n] == '/';
}

/* What the records of a live node say (invocations, waits, timers). */
static gr_state records_state(const sv_state *st, const char *node)
{
    gr_state s = GR_NO_RUN;
    for (size_t i = 0; i < st->ninvocations; i++)
        if (strcmp(st->invocations[i].node_id, node) == 0)
            s = more_urgent(s, st->invocations[i].state == SV_SCHEDULED ? GR_RUNNING
                                                                        : GR_INTERVENTION);
    for (size_t i = 0; i < st->nwaits; i++)
        if (strcmp(st->waits[i].node_id, node) == 0)
            s = more_urgent(s, GR_WAITING);
    for (size_t i = 0; i < st->ntimers; i++)
        if (activation_of(st->timers[i].activation_id, node))
            s = more_urgent(s, GR_WAITING);
    return s == GR_NO_RUN ? GR_RUNNING : s; /* a position always has a record */
}

static gr_state position_state(const gr_model *m, const sv_state *st, const sv_position *p,
                               int depth);

/* A parallel at `activation`: the most urgent of its branches. */
static gr_state parallel_state(const gr_model *m, const sv_state *st, const char *activation,
                               int depth)
{
    gr_state s = GR_NO_RUN;
    for (size_t i = 0; depth < NESTING_MAX && i < st->npositions; i++)
        if (st->positions[i].parallel && strcmp(st->positions[i].parallel, activation) == 0)
            s = more_urgent(s, position_state(m, st, &st->positions[i], depth + 1));
    return s == GR_NO_RUN ? GR_RUNNING : s;
}

static gr_state position_state(const gr_model *m, const sv_state *st, const sv_position *p,
                               int depth)
{
    long i = gr_model_node_index(m, p->node_id);
    if (i >= 0 && m->nodes[i].node->kind == SP_NODE_PARALLEL)
        return parallel_state(m, st, p->activation_id, depth);
    return records_state(st, p->node_id);
}

static const sv_position *position_of(const sv_state *st, const char *node)
{
    for (size_t i = 0; i < st->npositions; i++)
        if (strcmp(st->positions[i].node_id, node) == 0)
            return &st->positions[i];
    return NULL;
}

static bool failed_at(const sv_state *st, const char *node)
{
    const char *at = json_string_value(
        json_object_get(json_object_get(st->result, "error"), "nodeId"));
    return sv_status_is(st, "failed") && at && strcmp(at, node) == 0;
}

static uint64_t count_of(const json_t *v)
{
    json_int_t n = json_integer_value(v);
    return n > 0 ? (uint64_t)n : 0;
}

/* A map's progress: its live activation, else its recorded results. */
static void map_progress(gr_node *n, const sv_state *st)
{
    const char *key;
    json_t *live;
    json_object_foreach((json_t *)st->maps, key, live) {
        if (!json_is_string(json_object_get(live, "node")) ||
            strcmp(json_string_value(json_object_get(live, "node")), n->node->id) != 0)
            continue;
        n->has_progress = true;
        n->done = count_of(json_object_get(live, "done"));
        n->running = count_of(json_object_get(live, "running"));
        n->total = count_of(json_object_get(live, "total"));
        return;
    }
    const json_t *results = json_object_get(
        json_object_get(json_object_get(st->nodes, n->node->id), "output"), "results");
    if (!json_is_array(results))
        return;
    n->has_progress = true;
    n->total = json_array_size(results);
    for (size_t i = 0; i < n->total; i++)
        n->done += !json_is_null(json_array_get(results, i));
}

static gr_state settled_state(const gr_node *n, const sv_state *st, const gr_history *h, size_t i)
{
    if (failed_at(st, n->node->id) || (n->node->kind == SP_NODE_FAIL && n->visits > 0))
        return GR_FAILED;
    if (h && gr_history_stopped_last(h, i))
        return GR_CANCELLED;
    return n->visits > 0 ? GR_DONE : GR_NOT_REACHED;
}

static void set_node(gr_model *m, size_t i, const sv_state *st, const gr_history *h)
{
    gr_node *n = &m->nodes[i];
    n->visits = count_of(json_object_get(st->visits, n->node->id));
    if (n->node->kind == SP_NODE_MAP)
        map_progress(n, st);
    const sv_position *p = position_of(st, n->node->id);
    n->state = p ? position_state(m, st, p, 0) : settled_state(n, st, h, i);
}

/* The history's counts when its replay reached the stored snapshot. */
static const gr_history *checked_history(gr_model *m, const gr_run *run, const gr_history *h)
{
    const char *why = "the run's history was not replayed";
    if (h && gr_history_matches(h, run->snapshot ? run->snapshot_digest : NULL, &why)) {
        m->counts_known = true;
        for (size_t i = 0; i < m->nedges; i++)
            m->edges[i].count = gr_history_edge_count(h, i);
        return h;
    }
    snprintf(m->counts_note, sizeof m->counts_note, "%s", why);
    return NULL;
}

int gr_model_set_run(gr_model *m, const gr_run *run, const gr_history *h, sp_error *err)
{
    sv_state st = {0};
    if (run->snapshot && sv_parse(run->snapshot, run->snapshot_len, &st, err))
        return -1;
    m->with_run = true;
    snprintf(m->run_id, sizeof m->run_id, "%s", run->run_id);
    snprintf(m->status, sizeof m->status, "%s", run->status);
    m->quarantined = run->quarantined;
    const gr_history *known = checked_history(m, run, h);
    for (size_t i = 0; i < m->nnodes; i++)
        set_node(m, i, &st, known);
    sv_free(&st);
    return 0;
}
