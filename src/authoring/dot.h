/*
 * dot.h - the strict DOT reader of workflow folders (authoring.md §1):
 * workflow.dot's bytes become the graph spore needs (name, format, start,
 * nodes with their kind, edges with on / branch), each value with its line
 * and column. Graphviz's `dot` program is never needed to read it.
 *
 * The dialect: one `digraph` with an ID; node, edge (chained a -> b -> c)
 * and graph attribute statements (`id = value` or `graph [...]`); attribute
 * lists; `node [...]` / `edge [...]` defaults with render attributes only;
 * comments //, / * * / and #; quoted strings. Meaningful attributes: graph
 * `format` and `start`, node `kind`, edge `on` and `branch`; render-only
 * attributes are read and dropped. Everything else - subgraphs, ports, HTML
 * strings, `strict`, `graph`, `--`, unknown attribute names, a meaningful
 * attribute given twice - is dot.invalid with its line and column.
 *
 * What it must never do: accept an attribute it does not know (a typo in
 * `on=` must never silently route nothing), judge what the values mean
 * (the folder builder does, knowing the format), or pass its bounds
 * (SP_DOT_BYTES_MAX bytes, SP_DOT_NODES_MAX nodes, SP_DOT_EDGES_MAX edges,
 * SP_DOT_ID_MAX bytes an ID: dot.too-large; an attribute list holds each
 * known name at most once, so at most 22 attributes).
 */
#ifndef SPORE_AUTHORING_DOT_H
#define SPORE_AUTHORING_DOT_H

#include <stddef.h>

#include "authoring/located.h"
#include "base/error.h"

#define SP_DOT_BYTES_MAX (1u << 20)
#define SP_DOT_NODES_MAX 1024
#define SP_DOT_EDGES_MAX 8192

/* A meaningful attribute's value and where it stands; text NULL = not given. */
typedef struct sp_dot_value {
    char *text;
    sp_text_pos pos;
} sp_dot_value;

typedef struct sp_dot_node {
    char *id;
    sp_text_pos pos;   /* its first mention */
    sp_dot_value kind; /* NULL text: the default, activity */
} sp_dot_node;

typedef struct sp_dot_edge {
    size_t from, to;   /* indexes into nodes */
    sp_text_pos pos;   /* the source ID of this edge in its statement */
    sp_dot_value on;   /* NULL text: the default, ok */
    sp_dot_value branch;
} sp_dot_edge;

typedef struct sp_dot_graph {
    char *name; /* the digraph's ID */
    sp_text_pos name_pos;
    sp_dot_value format, start;
    sp_dot_node *nodes; /* in order of first mention */
    size_t nnodes, node_cap;
    sp_dot_edge *edges; /* in file order */
    size_t nedges, edge_cap;
} sp_dot_graph;

/* Read `len` bytes of DOT; `file` names it in messages. On failure `g` is
 * left empty (nothing to free). */
int sp_dot_read(const char *bytes, size_t len, const char *file, sp_dot_graph *g, sp_error *err);

void sp_dot_graph_free(sp_dot_graph *g);

/* The index of node `id`, or (size_t)-1. */
size_t sp_dot_node_index(const sp_dot_graph *g, const char *id);

#endif
