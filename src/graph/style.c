/*
 * style.c - how `spore graph` names and paints things (graph.h): one table
 * of the node states (name, words of the legend, fill colour) and one of
 * the node kinds (name, Graphviz shape and style). docs/graph.md shows the
 * same tables; tests/cli/test_graph.sh checks the colours against them.
 *
 * Must never decide a state (runstate.c does) or draw (render.c does).
 */
#include "graph/style.h"

typedef struct state_style {
    const char *name, *label, *colour;
} state_style;

/* Indexed by gr_state. Colours: light fills that keep black text readable,
 * told apart by hue (and by lightness for the grey pair). */
static const state_style STATES[GR_NSTATES] = {
    [GR_NO_RUN] = {"none", "", "#ffffff"},
    [GR_NOT_REACHED] = {"not-reached", "not reached", "#ffffff"},
    [GR_DONE] = {"done", "done", "#9fd8a4"},
    [GR_RUNNING] = {"running", "running", "#8ec5f0"},
    [GR_WAITING] = {"waiting", "waiting", "#ffe27a"},
    [GR_INTERVENTION] = {"needs-intervention", "needs intervention", "#ffa552"},
    [GR_FAILED] = {"failed", "failed", "#f2777a"},
    [GR_CANCELLED] = {"cancelled", "cancelled", "#c4c4c4"},
};

static const state_style *state_of(gr_state s)
{
    return (unsigned)s < GR_NSTATES ? &STATES[s] : &STATES[GR_NO_RUN];
}

const char *gr_state_name(gr_state s)
{
    return state_of(s)->name;
}

const char *gr_state_label(gr_state s)
{
    return state_of(s)->label;
}

const char *gr_state_colour(gr_state s)
{
    return state_of(s)->colour;
}

#define BOXED "0.14,0.06"
#define TIGHT "0.02,0.01"

/* Indexed by sp_node_kind. */
static const gr_kind_style KINDS[] = {
    [SP_NODE_ACTIVITY] = {"activity", "box", "rounded,filled", "", BOXED},
    [SP_NODE_AWAIT_SIGNAL] = {"await-signal", "cds", "filled", "", BOXED},
    [SP_NODE_COMPLETE] = {"complete", "doublecircle", "filled", "", TIGHT},
    [SP_NODE_FAIL] = {"fail", "doubleoctagon", "filled", "", TIGHT},
    /* a fan-out, narrow on top; a join, narrow below */
    [SP_NODE_PARALLEL] = {"parallel", "polygon", "filled", "-0.25", TIGHT},
    [SP_NODE_JOIN] = {"join", "polygon", "filled", "0.25", TIGHT},
    [SP_NODE_MAP] = {"map", "box3d", "filled", "", "0.14,0.1"}, /* room for the 3D edge */
    [SP_NODE_SLEEP] = {"sleep", "hexagon", "filled", "", TIGHT},
};

const gr_kind_style *gr_kind_style_of(sp_node_kind k)
{
    return (unsigned)k < sizeof KINDS / sizeof KINDS[0] ? &KINDS[k] : &KINDS[SP_NODE_ACTIVITY];
}

const char *gr_kind_name(sp_node_kind k)
{
    return gr_kind_style_of(k)->name;
}
