/*
 * json.c - a model as JSON for `spore graph --json` (graph.h): the run,
 * whether the edge counts are known, every node with its kind, state,
 * visits and map progress, every edge with its kind, label and count.
 *
 * Must never print a counter as a JSON number (they are decimal strings,
 * cli.md), or leave out a node or an edge of the model.
 */
#include "graph/graph.h"
#include "json/decimal.h"

static json_t *state_json(const gr_model *m, gr_state s)
{
    return m->with_run ? json_string(gr_state_name(s)) : json_null();
}

static json_t *node_json(const gr_model *m, const gr_node *n)
{
    json_t *o = json_pack("{s:s,s:s,s:o}", "id", n->node->id, "kind", gr_kind_name(n->node->kind),
                          "state", state_json(m, n->state));
    if (o && m->with_run)
        json_object_set_new(o, "visits", sp_decimal_json(n->visits));
    if (o && n->has_progress)
        json_object_set_new(o, "progress",
                            json_pack("{s:o,s:o,s:o}", "done", sp_decimal_json(n->done),
                                      "running", sp_decimal_json(n->running), "total",
                                      sp_decimal_json(n->total)));
    return o;
}

static const char *edge_kind(gr_edge_kind k)
{
    static const char *const names[] = {[GR_EDGE_START] = "start", [GR_EDGE_ROUTE] = "route",
                                        [GR_EDGE_BRANCH] = "branch", [GR_EDGE_JOIN] = "join"};
    return names[k];
}

static json_t *edge_json(const gr_model *m, const gr_edge *e)
{
    bool counted = m->with_run && m->counts_known;
    return json_pack("{s:s?,s:s,s:s,s:s,s:o}", "from", e->from, "to", e->to, "kind",
                     edge_kind(e->kind), "label", e->label, "count",
                     counted ? sp_decimal_json(e->count) : json_null());
}

static json_t *run_json(const gr_model *m)
{
    if (!m->with_run)
        return json_null();
    return json_pack("{s:s,s:s,s:b,s:{s:b,s:s?}}", "runId", m->run_id, "status", m->status,
                     "quarantined", m->quarantined, "edgeCounts", "known", m->counts_known,
                     "note", m->counts_known ? NULL : m->counts_note);
}

json_t *gr_model_json(const gr_model *m)
{
    json_t *nodes = json_array(), *edges = json_array();
    for (size_t i = 0; i < m->nnodes; i++)
        json_array_append_new(nodes, node_json(m, &m->nodes[i]));
    for (size_t i = 0; i < m->nedges; i++)
        json_array_append_new(edges, edge_json(m, &m->edges[i]));
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "workflow", m->wf->name, "packageDigest",
                     m->wf->package_digest, "run", run_json(m), "nodes", nodes, "edges", edges);
}
