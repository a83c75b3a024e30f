/*
 * graph.h - a workflow, and optionally one run of it, as a picture
 * (authoring.md §3, docs/graph.md).
 *
 * What it is for: `spore graph`. Three steps, each its own module:
 *   model.c    the workflow's nodes (kind, detail) and edges (routes with
 *              their outcome, parallel branches, the join) in package order;
 *   history.c  a run's consumed events replayed through the kernel: how
 *              often each edge was taken, when each node was last entered
 *              and when its work was stopped;
 *   runstate.c the run's stored snapshot and that history into one state
 *              per node (done, running, waiting, needs intervention,
 *              failed, cancelled, not reached) and a map's progress;
 *   render.c   the model as a Graphviz graph (libgvc, in this process),
 *              rendered as SVG, PNG or DOT; style.c holds the palette and
 *              the shapes; json.c the model for `--json`.
 *
 * What it must never do: read the store or any file, spawn a program (never
 * the `dot` command), or change a run: the caller hands it the package, the
 * snapshot and the consumed events.
 */
#ifndef SPORE_GRAPH_GRAPH_H
#define SPORE_GRAPH_GRAPH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "kernel/kernel.h"
#include "kernel/workflow.h"

/* A node's state in one run (docs/graph.md "How a node's state is
 * derived"). GR_NO_RUN: drawn without a run. */
typedef enum gr_state {
    GR_NO_RUN = 0,
    GR_NOT_REACHED,
    GR_DONE,
    GR_RUNNING,
    GR_WAITING,
    GR_INTERVENTION,
    GR_FAILED,
    GR_CANCELLED,
} gr_state;

#define GR_NSTATES 8

typedef enum gr_edge_kind {
    GR_EDGE_START,  /* into the workflow's start node (from no node) */
    GR_EDGE_ROUTE,  /* an outcome's route: label = the outcome */
    GR_EDGE_BRANCH, /* a parallel to a branch's start: label = the branch name */
    GR_EDGE_JOIN,   /* a parallel to its join: label "join" */
} gr_edge_kind;

typedef struct gr_node {
    const sp_node *node; /* borrowed from the workflow */
    gr_state state;
    uint64_t visits;      /* admitted entries (the run's `visits`) */
    bool has_progress;    /* a map the run entered: done/total below */
    uint64_t done, running, total;
} gr_node;

typedef struct gr_edge {
    const char *from; /* node ID, NULL for GR_EDGE_START */
    const char *to;
    const char *label; /* borrowed from the workflow (or static) */
    gr_edge_kind kind;
    uint64_t count; /* times the run took it (with a run and known counts) */
} gr_edge;

/* What the command knows about the run it draws. */
typedef struct gr_run {
    const char *run_id;
    const char *status; /* the store's: created, running, waiting, ... */
    bool quarantined;
    const char *snapshot; /* the stored snapshot, NULL before the first commit */
    size_t snapshot_len;
    const char *snapshot_digest;
} gr_run;

#define GR_NOTE_MAX 256

typedef struct gr_model {
    const sp_workflow *wf; /* borrowed */
    gr_node *nodes;        /* one per workflow node, in the workflow's order */
    size_t nnodes;
    gr_edge *edges;
    size_t nedges;
    bool with_run;
    char run_id[129]; /* run IDs are at most 128 bytes */
    char status[24];
    bool quarantined;
    bool counts_known;          /* edge counts replayed and checked */
    char counts_note[GR_NOTE_MAX]; /* why they are not, for people */
} gr_model;

/* The workflow's nodes and edges, every node GR_NO_RUN. err: oom. */
int gr_model_build(const sp_workflow *wf, gr_model *out, sp_error *err);
void gr_model_free(gr_model *m);

/* The index of a node in m->nodes, or -1. */
long gr_model_node_index(const gr_model *m, const char *id);

/* ---- a run's history (history.c) ---- */

typedef struct gr_history gr_history;

/* A replay of the run drawn in `m` (kept borrowed until gr_history_free).
 * NULL when out of memory. */
gr_history *gr_history_new(const gr_model *m);

/* Replay one consumed event, in sequence order. Never fails the drawing: a
 * kernel failure, a budget overrun or running out of memory stops the
 * replay and becomes the model's counts_note. */
void gr_history_feed(gr_history *h, const sp_kernel_event *e);

/* The replay stopped (the caller may stop feeding). */
bool gr_history_stopped(const gr_history *h);

void gr_history_free(gr_history *h);

/* ---- a run's state (runstate.c) ---- */

/* Colour `m` with the run: every node's state, visits and map progress
 * from the stored snapshot; edge counts and stopped work from `h` when its
 * replay reached exactly the stored snapshot (else counts_note says why).
 * `h` may be NULL (no history: no counts). store.corrupt for a snapshot
 * this spore cannot read. */
int gr_model_set_run(gr_model *m, const gr_run *run, const gr_history *h, sp_error *err);

/* ---- rendering (render.c) ---- */

typedef enum gr_format { GR_SVG, GR_PNG, GR_DOT } gr_format;

/* "svg", "png", "dot"; false for anything else. */
bool gr_format_parse(const char *name, gr_format *out);
const char *gr_format_name(gr_format f);

/* Lay the model out and render it. *bytes is malloc'd (free()).
 * graph.render-failed when Graphviz refuses, graph.format-unavailable when
 * this host's Graphviz has no renderer for the format. */
int gr_render(const gr_model *m, gr_format f, char **bytes, size_t *len, sp_error *err);

/* Free Graphviz's context after the process's last gr_render (Graphviz
 * cannot make a second one after freeing the first: never render after). */
void gr_render_end(void);

/* ---- names, colours and JSON (style.c, json.c) ---- */

const char *gr_state_name(gr_state s);     /* "done", "needs-intervention", ... */
const char *gr_state_label(gr_state s);    /* "done", "needs intervention", ... */
const char *gr_state_colour(gr_state s);   /* "#rrggbb" fill */
const char *gr_kind_name(sp_node_kind k);  /* "activity", "await-signal", ... */

/* {workflow, packageDigest, run, edgeCounts, nodes, edges} (counters as
 * decimal strings). NULL when out of memory. */
json_t *gr_model_json(const gr_model *m);

#endif
