/*
 * topology.c - the DOT graph of a folder as the package's topology
 * (authoring.md §1): the name, format and start of the graph, each node's
 * kind, and each edge as a route member of its source node (`outcomes`,
 * or a parallel node's `branches` and `join`). Every topology both formats
 * can express is expressible: any outcome name on any kind that routes
 * outcomes, branches and a join on parallel nodes.
 *
 * Must never drop an edge: an edge that its source cannot carry is a build
 * error with its place, never ignored.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "authoring/folder_build.h"
#include "kernel/workflow.h"

#define FORMAT_01 "runspore.workflow/0.1"
#define FORMAT_02 "spore.workflow/0.2"

/* How a node kind routes. */
typedef enum route_shape {
    ROUTES_OUTCOMES, /* outcomes: {outcome: node} */
    ROUTES_BRANCHES, /* branches: {name: node} and join: node */
    ROUTES_NONE,     /* complete and fail end the run */
} route_shape;

static const struct kind_info {
    const char *name;
    bool v02_only;
    route_shape shape;
} KINDS[] = {
    {"activity", false, ROUTES_OUTCOMES}, {"await-signal", false, ROUTES_OUTCOMES},
    {"complete", false, ROUTES_NONE},     {"fail", false, ROUTES_NONE},
    {"parallel", true, ROUTES_BRANCHES},  {"join", true, ROUTES_OUTCOMES},
    {"map", true, ROUTES_OUTCOMES},       {"sleep", true, ROUTES_OUTCOMES},
};
#define NKINDS (sizeof KINDS / sizeof KINDS[0])

static const struct kind_info *kind_info(const char *name, bool v02)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (strcmp(KINDS[i].name, name) == 0 && (v02 || !KINDS[i].v02_only))
            return &KINDS[i];
    return NULL;
}

bool fb_kind_has_outcomes(const char *kind)
{
    const struct kind_info *k = kind ? kind_info(kind, true) : NULL;
    return k && k->shape == ROUTES_OUTCOMES;
}

static const char *kind_of(const sp_dot_node *n)
{
    return n->kind.text ? n->kind.text : "activity";
}

static int graph_attributes(folder_build *b)
{
    const sp_dot_graph *g = &b->graph;
    if (!g->format.text)
        return fb_dot_error(b, "build.graph-format", g->name_pos,
                            "the graph attribute format is missing (format=\"" FORMAT_01
                            "\" or format=\"" FORMAT_02 "\")");
    b->v02 = strcmp(g->format.text, FORMAT_02) == 0;
    if (!b->v02 && strcmp(g->format.text, FORMAT_01) != 0)
        return fb_dot_error(b, "build.graph-format", g->format.pos,
                            "format \"%.80s\" is not a workflow format (" FORMAT_01 " or " FORMAT_02
                            ")", g->format.text);
    if (!g->start.text)
        return fb_dot_error(b, "build.graph-start", g->name_pos,
                            "the graph attribute start is missing (start=<the first node>)");
    if (sp_dot_node_index(g, g->start.text) == (size_t)-1)
        return fb_dot_error(b, "build.graph-start", g->start.pos,
                            "start \"%.80s\" is not a node of the graph", g->start.text);
    return 0;
}

static void kinds_list(bool v02, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NKINDS && used < n; i++)
        if (v02 || !KINDS[i].v02_only)
            used += (size_t)snprintf(out + used, n - used, "%s%s", used ? ", " : "", KINDS[i].name);
}

/* Each node as {kind} plus its empty route members. */
static int node_kinds(folder_build *b)
{
    for (size_t i = 0; i < b->graph.nnodes; i++) {
        const sp_dot_node *n = &b->graph.nodes[i];
        const struct kind_info *k = kind_info(kind_of(n), b->v02);
        if (!k) {
            char kinds[200];
            kinds_list(b->v02, kinds, sizeof kinds);
            return fb_dot_error(b, "build.kind-unknown", n->kind.pos,
                                "kind \"%.80s\" of node %.80s is not a node kind of %s (%s)",
                                n->kind.text, n->id, b->graph.format.text, kinds);
        }
        json_t *node = json_pack("{s:s}", "kind", k->name);
        if (node && k->shape == ROUTES_OUTCOMES)
            json_object_set_new(node, "outcomes", json_object());
        if (node && k->shape == ROUTES_BRANCHES)
            json_object_set_new(node, "branches", json_object());
        if (!node || json_object_set_new(b->nodes, n->id, node))
            return sp_oom(b->err);
    }
    return 0;
}

/* The line of the first edge before `e` from the same node with the same
 * value of `on` or `branch` (0 when none). */
static unsigned first_line(const folder_build *b, const sp_dot_edge *e, bool branch,
                           const char *value)
{
    for (const sp_dot_edge *f = b->graph.edges; f < e; f++) {
        const char *v = branch ? f->branch.text : (f->on.text ? f->on.text : "ok");
        if (f->from == e->from && v && strcmp(v, value) == 0 && (branch || !f->branch.text))
            return f->pos.line;
    }
    return 0;
}

static int duplicate(folder_build *b, const sp_dot_edge *e, const char *what, bool branch,
                     const char *value)
{
    return fb_dot_error(b, "build.duplicate-route", e->pos,
                        "node %.80s has two edges with %s=%.80s (the first on line %u)",
                        b->graph.nodes[e->from].id, what, value, first_line(b, e, branch, value));
}

/* An edge from a parallel node: a branch start or its join. */
static int parallel_edge(folder_build *b, const sp_dot_edge *e, json_t *node)
{
    const char *from = b->graph.nodes[e->from].id, *to = b->graph.nodes[e->to].id;
    if (e->branch.text && e->on.text)
        return fb_dot_error(b, "build.route-invalid", e->on.pos,
                            "an edge from parallel node %.80s carries branch= or on=join, not both",
                            from);
    if (e->branch.text) {
        json_t *branches = json_object_get(node, "branches");
        if (!sp_is_outcome(e->branch.text, strlen(e->branch.text)))
            return fb_dot_error(b, "build.route-invalid", e->branch.pos,
                                "branch name \"%.80s\" is not [a-z0-9][a-z0-9-]{0,63}",
                                e->branch.text);
        if (json_object_get(branches, e->branch.text))
            return duplicate(b, e, "branch", true, e->branch.text);
        return json_object_set_new(branches, e->branch.text, json_string(to)) ? sp_oom(b->err) : 0;
    }
    if (e->on.text && strcmp(e->on.text, "join") == 0) {
        if (json_object_get(node, "join"))
            return duplicate(b, e, "on", false, "join");
        return json_object_set_new(node, "join", json_string(to)) ? sp_oom(b->err) : 0;
    }
    return fb_dot_error(b, "build.route-invalid", e->on.text ? e->on.pos : e->pos,
                        "an edge from parallel node %.80s to %.80s needs branch=\"<name>\" (a "
                        "branch starts there) or on=join (the parallel's join)",
                        from, to);
}

/* An edge from a node that routes outcomes: on= (default ok). */
static int outcome_edge(folder_build *b, const sp_dot_edge *e, json_t *node)
{
    const char *from = b->graph.nodes[e->from].id, *to = b->graph.nodes[e->to].id;
    const char *on = e->on.text ? e->on.text : "ok";
    if (e->branch.text)
        return fb_dot_error(b, "build.route-invalid", e->branch.pos,
                            "branch= stands only on edges from a parallel node (%.80s is %.40s)",
                            from, json_string_value(json_object_get(node, "kind")));
    if (!sp_is_outcome(on, strlen(on)))
        return fb_dot_error(b, "build.route-invalid", e->on.pos,
                            "on=\"%.80s\" is not an outcome name ([a-z0-9][a-z0-9-]{0,63})", on);
    json_t *outcomes = json_object_get(node, "outcomes");
    if (json_object_get(outcomes, on))
        return duplicate(b, e, "on", false, on);
    return json_object_set_new(outcomes, on, json_string(to)) ? sp_oom(b->err) : 0;
}

static int edges(folder_build *b)
{
    for (size_t i = 0; i < b->graph.nedges; i++) {
        const sp_dot_edge *e = &b->graph.edges[i];
        const sp_dot_node *from = &b->graph.nodes[e->from];
        json_t *node = json_object_get(b->nodes, from->id);
        const struct kind_info *k = kind_info(kind_of(from), b->v02);
        int rc = 0;
        if (k->shape == ROUTES_NONE)
            rc = fb_dot_error(b, "build.terminal-edge", e->pos,
                              "node %.80s is a %s node: it ends the run and has no outgoing edge "
                              "(here to %.80s)",
                              from->id, k->name, b->graph.nodes[e->to].id);
        else if (k->shape == ROUTES_BRANCHES)
            rc = parallel_edge(b, e, node);
        else
            rc = outcome_edge(b, e, node);
        if (rc)
            return rc;
    }
    return 0;
}

int fb_topology(folder_build *b)
{
    if (!(b->nodes = json_object()))
        return sp_oom(b->err);
    if (graph_attributes(b) || node_kinds(b))
        return -1;
    return edges(b);
}
