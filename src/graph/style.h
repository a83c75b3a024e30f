/*
 * style.h - the graph component's own table of node kinds as drawn (the
 * state palette is in graph.h: gr_state_colour). Private to src/graph/.
 *
 * Must never be included from outside src/graph/.
 */
#ifndef SPORE_GRAPH_STYLE_H
#define SPORE_GRAPH_STYLE_H

#include "graph/graph.h"

typedef struct gr_kind_style {
    const char *name;  /* the package's kind name */
    const char *shape; /* Graphviz shape */
    const char *style; /* Graphviz style (always "filled", for the state colour) */
    const char *distortion; /* a polygon's distortion ("" for none) */
    const char *margin;     /* around the label: Graphviz grows round shapes a lot */
} gr_kind_style;

const gr_kind_style *gr_kind_style_of(sp_node_kind k);

#endif
