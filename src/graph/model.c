/*
 * model.c - a workflow's nodes and edges as `spore graph` draws them
 * (graph.h): one node per package node in the package's order, an edge
 * into the start node, one edge per routed outcome, one per parallel
 * branch and one from each parallel to its join, every list in byte order
 * of its names so that one package always gives one picture.
 *
 * Must never look at a run (runstate.c does) or allocate a label: labels
 * are borrowed from the loaded workflow.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

typedef struct edge_list {
    gr_edge *items;
    size_t n, cap;
} edge_list;

static int push(edge_list *l, gr_edge e)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        gr_edge *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown)
            return -1;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = e;
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One edge per member of `map` (name -> node ID), in byte order of the
 * names: routes (outcome -> target) and branches (name -> start). */
static int push_members(edge_list *l, const char *from, const json_t *map, gr_edge_kind kind)
{
    size_t n = json_object_size(map);
    if (n == 0)
        return 0;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys)
        return -1;
    size_t i = 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)map, key, value) keys[i++] = key;
    qsort(keys, n, sizeof *keys, by_key);
    int rc = 0;
    for (i = 0; i < n && rc == 0; i++) {
        const char *to = json_string_value(json_object_get(map, keys[i]));
        if (to)
            rc = push(l, (gr_edge){from, to, keys[i], kind, 0});
    }
    free(keys);
    return rc;
}

static int push_node_edges(edge_list *l, const sp_node *n)
{
    if (n->kind != SP_NODE_PARALLEL)
        return push_members(l, n->id, n->routes, GR_EDGE_ROUTE);
    if (push_members(l, n->id, n->branches, GR_EDGE_BRANCH))
        return -1;
    return n->join ? push(l, (gr_edge){n->id, n->join, "join", GR_EDGE_JOIN, 0}) : 0;
}

int gr_model_build(const sp_workflow *wf, gr_model *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    out->wf = wf;
    out->nodes = calloc(wf->nnodes ? wf->nnodes : 1, sizeof *out->nodes);
    if (!out->nodes)
        return sp_oom(err);
    out->nnodes = wf->nnodes;
    for (size_t i = 0; i < wf->nnodes; i++)
        out->nodes[i] = (gr_node){.node = &wf->nodes[i], .state = GR_NO_RUN};
    edge_list l = {0};
    int rc = push(&l, (gr_edge){NULL, wf->start, "", GR_EDGE_START, 0});
    for (size_t i = 0; i < wf->nnodes && rc == 0; i++)
        rc = push_node_edges(&l, &wf->nodes[i]);
    out->edges = l.items;
    out->nedges = l.n;
    if (rc) {
        gr_model_free(out);
        return sp_oom(err);
    }
    return 0;
}

void gr_model_free(gr_model *m)
{
    free(m->nodes);
    free(m->edges);
    memset(m, 0, sizeof *m);
}

long gr_model_node_index(const gr_model *m, const char *id)
{
    const sp_node *n = id ? sp_workflow_node(m->wf, id) : NULL;
    return n ? (long)(n - m->wf->nodes) : -1;
}
