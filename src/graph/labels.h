/*
 * labels.h - the text of a picture (labels.c): each node's label, each
 * edge's, the title and the legend, as Graphviz HTML-like labels. Private
 * to src/graph/.
 *
 * Must never be included from outside src/graph/.
 */
#ifndef SPORE_GRAPH_LABELS_H
#define SPORE_GRAPH_LABELS_H

#include "base/buf.h"
#include "graph/graph.h"

/* "<B>id</B><BR/>kind detail[<BR/>progress or visits]" */
void gr_label_node(sp_buf *b, const gr_model *m, const gr_node *n);

/* "ok", "ok ×3" (plain text; the count with a run whose counts are known). */
void gr_label_edge(sp_buf *b, const gr_model *m, const gr_edge *e);

/* The workflow's name, and the run, its status and any note on counts. */
void gr_label_title(sp_buf *b, const gr_model *m);

/* A table: one coloured cell and its words per state, and how edges read. */
void gr_label_legend(sp_buf *b);

#endif
