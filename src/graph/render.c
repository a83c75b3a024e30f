/*
 * render.c - a model as a picture through Graphviz's library (graph.h):
 * the model becomes a cgraph graph (kinds by shape, states by fill colour,
 * labels from labels.c, a legend with a run), libgvc lays it out with its
 * `dot` layout plugin and renders SVG, PNG (cairo) or DOT in memory.
 * Graphviz's own messages are caught and become the error's message.
 *
 * Must never spawn a program (the `dot` command least of all), write a
 * file, or print: the caller writes the bytes. Not thread-safe (Graphviz
 * is not): one thread of a process draws.
 */
#include <gvc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/labels.h"
#include "graph/style.h"

#define FONT "Helvetica,Arial,sans-serif"
#define START_NODE "(start)"   /* never a node ID: IDs are [A-Za-z0-9_-] */
#define LEGEND_NODE "(legend)"
#define INK "#333333"
#define FADED "#b4b4b4"

/* ---- Graphviz's context: one per process ----
 * Debian 12's Graphviz (2.42/2.43) cannot make a second context after
 * freeing one: its pango plugin keeps a pointer into the first context's
 * font table (a use after free). So the first render makes the context and
 * gr_render_end() frees it once, when the process is done drawing. */

static GVC_t *gv_context;

static GVC_t *context(void)
{
    if (!gv_context)
        gv_context = gvContext();
    return gv_context;
}

void gr_render_end(void)
{
    if (gv_context)
        gvFreeContext(gv_context);
    gv_context = NULL;
}

/* ---- Graphviz's messages: kept, never printed ---- */

static char gv_message[SP_MESSAGE_MAX];

static int keep_message(char *text)
{
    size_t used = strlen(gv_message);
    if (used + 1 < sizeof gv_message)
        snprintf(gv_message + used, sizeof gv_message - used, "%s", text);
    return 0;
}

/* ---- building the graph ---- */

/* Set an attribute (declared on first use with an empty default). */
static void set(void *obj, const char *name, const char *value)
{
    agsafeset(obj, (char *)name, (char *)value, "");
}

static void set_html(Agraph_t *g, void *obj, const char *name, sp_buf *text)
{
    char *html = agstrdup_html(g, text->data ? text->data : "");
    agsafeset(obj, (char *)name, html, "");
    agstrfree(g, html);
    sp_buf_reset(text);
}

static void defaults(Agraph_t *g)
{
    static const char *const graph[][2] = {
        {"rankdir", "TB"},   {"fontname", FONT}, {"fontsize", "13"}, {"labelloc", "t"},
        {"nodesep", "0.4"},  {"ranksep", "0.5"}, {"bgcolor", "white"}, {"pad", "0.2"},
    };
    static const char *const node[][2] = {
        {"fontname", FONT}, {"fontsize", "12"}, {"style", "filled"}, {"fillcolor", "#ffffff"},
        {"color", INK},     {"penwidth", "1.2"},
    };
    static const char *const edge[][2] = {
        {"fontname", FONT}, {"fontsize", "10"}, {"color", INK}, {"fontcolor", INK},
        {"arrowsize", "0.8"},
    };
    for (size_t i = 0; i < sizeof graph / sizeof graph[0]; i++)
        agattr(g, AGRAPH, (char *)graph[i][0], (char *)graph[i][1]);
    for (size_t i = 0; i < sizeof node / sizeof node[0]; i++)
        agattr(g, AGNODE, (char *)node[i][0], (char *)node[i][1]);
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        agattr(g, AGEDGE, (char *)edge[i][0], (char *)edge[i][1]);
}

static void add_node(Agraph_t *g, const gr_model *m, const gr_node *n, sp_buf *text)
{
    const gr_kind_style *k = gr_kind_style_of(n->node->kind);
    Agnode_t *v = agnode(g, (char *)n->node->id, 1);
    set(v, "shape", k->shape);
    set(v, "style", k->style);
    set(v, "margin", k->margin);
    if (k->distortion[0]) {
        set(v, "sides", "4");
        set(v, "distortion", k->distortion);
    }
    set(v, "fillcolor", gr_state_colour(n->state));
    if (n->state == GR_NOT_REACHED) {
        set(v, "color", FADED);
        set(v, "fontcolor", "#6e6e6e");
    }
    if (m->with_run) {
        sp_buf_printf(text, "%s: %s", n->node->id, gr_state_label(n->state));
        set(v, "tooltip", text->data);
        sp_buf_reset(text);
    }
    gr_label_node(text, m, n);
    set_html(g, v, "label", text);
}

static Agnode_t *start_node(Agraph_t *g)
{
    Agnode_t *v = agnode(g, START_NODE, 1);
    set(v, "shape", "point");
    set(v, "width", "0.14");
    set(v, "fillcolor", INK);
    set(v, "label", "");
    return v;
}

/* Edges the run never took are drawn faint once the counts are known. */
static bool faded(const gr_model *m, const gr_edge *e)
{
    return m->with_run && m->counts_known && e->count == 0;
}

static void add_edge(Agraph_t *g, const gr_model *m, const gr_edge *e, sp_buf *text)
{
    Agnode_t *from = e->from ? agnode(g, (char *)e->from, 0) : start_node(g);
    Agnode_t *to = agnode(g, (char *)e->to, 0);
    if (!from || !to)
        return;
    Agedge_t *a = agedge(g, from, to, NULL, 1);
    gr_label_edge(text, m, e);
    set(a, "label", text->data ? text->data : "");
    sp_buf_reset(text);
    if (e->kind == GR_EDGE_BRANCH)
        set(a, "arrowhead", "onormal");
    if (e->kind == GR_EDGE_JOIN) {
        set(a, "style", "dashed");
        set(a, "constraint", "false");
    }
    if (faded(m, e)) {
        set(a, "color", FADED);
        set(a, "fontcolor", "#8c8c8c");
    } else if (m->with_run && m->counts_known) {
        set(a, "penwidth", "1.8");
    }
}

/* The legend below everything else. */
static void add_legend(Agraph_t *g, sp_buf *text)
{
    Agraph_t *bottom = agsubg(g, "legend_rank", 1);
    set(bottom, "rank", "sink");
    Agnode_t *v = agnode(bottom, LEGEND_NODE, 1);
    set(v, "shape", "plaintext");
    set(v, "style", "");
    gr_label_legend(text);
    set_html(g, v, "label", text);
}

static Agraph_t *build(const gr_model *m, sp_buf *text)
{
    Agraph_t *g = agopen((char *)m->wf->name, Agdirected, NULL);
    if (!g)
        return NULL;
    defaults(g);
    gr_label_title(text, m);
    set_html(g, g, "label", text);
    for (size_t i = 0; i < m->nnodes; i++)
        add_node(g, m, &m->nodes[i], text);
    for (size_t i = 0; i < m->nedges; i++)
        add_edge(g, m, &m->edges[i], text);
    if (m->with_run)
        add_legend(g, text);
    return g;
}

/* ---- rendering ---- */

bool gr_format_parse(const char *name, gr_format *out)
{
    static const char *const names[] = {[GR_SVG] = "svg", [GR_PNG] = "png", [GR_DOT] = "dot"};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (gr_format)i;
            return true;
        }
    return false;
}

const char *gr_format_name(gr_format f)
{
    return f == GR_PNG ? "png" : f == GR_DOT ? "dot" : "svg";
}

/* Graphviz's device: DOT without the layout's coordinates ("canon"). */
static const char *device(gr_format f)
{
    return f == GR_PNG ? "png" : f == GR_DOT ? "canon" : "svg";
}

static int render_laid_out(GVC_t *gvc, Agraph_t *g, gr_format f, char **bytes, size_t *len,
                           sp_error *err)
{
    char *data = NULL;
    unsigned int n = 0;
    if (gvRenderData(gvc, g, device(f), &data, &n) != 0 || !data) {
        gvFreeRenderData(data);
        return sp_fail(err, "graph.format-unavailable",
                       "this host's Graphviz cannot render %s (libgvc6 installs its plugins): %s",
                       gr_format_name(f), gv_message[0] ? gv_message : "no renderer");
    }
    *bytes = malloc((size_t)n + 1);
    if (*bytes) {
        memcpy(*bytes, data, n);
        (*bytes)[n] = '\0';
        *len = n;
    }
    gvFreeRenderData(data);
    return *bytes ? 0 : sp_oom(err);
}

int gr_render(const gr_model *m, gr_format f, char **bytes, size_t *len, sp_error *err)
{
    *bytes = NULL;
    *len = 0;
    gv_message[0] = '\0';
    agusererrf previous = agseterrf(keep_message);
    sp_buf text = SP_BUF_INIT;
    GVC_t *gvc = context();
    Agraph_t *g = gvc ? build(m, &text) : NULL;
    int rc;
    if (!g || !sp_buf_ok(&text))
        rc = sp_oom(err);
    else if (gvLayout(gvc, g, "dot") != 0)
        rc = sp_fail(err, "graph.render-failed",
                     "Graphviz could not lay the workflow out (its dot layout plugin comes with "
                     "libgvc6): %s",
                     gv_message[0] ? gv_message : "no message");
    else
        rc = render_laid_out(gvc, g, f, bytes, len, err);
    if (g) {
        gvFreeLayout(gvc, g);
        agclose(g);
    }
    sp_buf_free(&text);
    agseterrf(previous);
    return rc;
}
