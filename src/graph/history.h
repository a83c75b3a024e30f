/*
 * history.h - what runstate.c reads from a replayed history (history.c).
 * Private to src/graph/.
 *
 * Must never be included from outside src/graph/.
 */
#ifndef SPORE_GRAPH_HISTORY_H
#define SPORE_GRAPH_HISTORY_H

#include "graph/graph.h"

/* The replay reached exactly the snapshot with this digest (NULL: the run
 * has none yet, and nothing was replayed); else *why says why not. */
bool gr_history_matches(const gr_history *h, const char *snapshot_digest, const char **why);

/* How often the run took edge `i` of the model. */
uint64_t gr_history_edge_count(const gr_history *h, size_t i);

/* Node `i` (model order) was stopped - its activation ended without a
 * result, its work cancelled - after it was last entered. */
bool gr_history_stopped_last(const gr_history *h, size_t i);

#endif
