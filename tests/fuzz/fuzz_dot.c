/*
 * fuzz_dot.c - libFuzzer target for the strict DOT reader of workflow
 * folders (authoring.md §1). Properties checked on every input (a
 * violation aborts): reading never crashes or leaks; a refusal carries
 * dot.invalid or dot.too-large and names the file (and a place of line and
 * column >= 1, but for a file over the size bound); a graph that reads has
 * a name, unique node IDs, and edges between its nodes.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authoring/dot.h"

static void require(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_dot: property violated: %s\n", what);
        abort();
    }
}

static void check_refusal(const sp_error *err)
{
    bool too_large = strcmp(err->code, "dot.too-large") == 0;
    require(too_large || strcmp(err->code, "dot.invalid") == 0 ||
                strcmp(err->code, "runtime.out-of-memory") == 0,
            "a refusal is dot.invalid or dot.too-large");
    if (strcmp(err->code, "runtime.out-of-memory") == 0)
        return;
    require(json_is_string(json_object_get(err->details, "file")), "a refusal names its file");
    const json_t *line = json_object_get(err->details, "line");
    require(line || too_large, "a refusal has a place");
    require(!line || (json_integer_value(line) >= 1 &&
                      json_integer_value(json_object_get(err->details, "column")) >= 1),
            "lines and columns count from 1");
}

static void check_graph(const sp_dot_graph *g)
{
    require(g->name != NULL, "a graph has a name");
    for (size_t i = 0; i < g->nnodes; i++) {
        require(sp_dot_node_index(g, g->nodes[i].id) == i, "node IDs are unique");
        require(g->nodes[i].pos.line >= 1, "a node has a place");
    }
    for (size_t i = 0; i < g->nedges; i++)
        require(g->edges[i].from < g->nnodes && g->edges[i].to < g->nnodes,
                "edges join nodes of the graph");
    require(g->nnodes <= SP_DOT_NODES_MAX && g->nedges <= SP_DOT_EDGES_MAX, "bounds hold");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sp_dot_graph g;
    sp_error err = {0};
    if (sp_dot_read((const char *)data, size, "workflow.dot", &g, &err) == 0) {
        check_graph(&g);
        sp_dot_graph_free(&g);
    } else {
        check_refusal(&err);
        require(g.nodes == NULL && g.name == NULL, "a refusal leaves no graph");
    }
    sp_error_clear(&err);
    return 0;
}
