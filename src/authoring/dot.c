/*
 * dot.c - the strict DOT reader (see dot.h): a flat recursive-descent
 * parser over dot_lex's tokens (no subgraphs, so no nesting and no
 * recursion). Never accepts an attribute it does not know.
 */
#include "authoring/dot.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authoring/dot_lex.h"
#include "authoring/grow.h"

/* Where an attribute list stands, which decides the attributes it takes. */
typedef enum attr_context {
    CTX_GRAPH,         /* graph [...] and id = value */
    CTX_NODE,          /* a node statement */
    CTX_EDGE,          /* an edge statement */
    CTX_NODE_DEFAULTS, /* node [...] */
    CTX_EDGE_DEFAULTS, /* edge [...] */
} attr_context;

/* The meaningful attributes, each taken in one context. */
typedef enum meaning { M_FORMAT, M_START, M_KIND, M_ON, M_BRANCH, M_COUNT } meaning;

/* Every attribute name the dialect knows: the meaningful ones first (in
 * the order of `meaning`), then the render-only ones (authoring.md §1),
 * read and dropped wherever they stand. */
static const struct {
    const char *name;
    attr_context context; /* meaningful ones: where they stand */
} KNOWN[] = {
    {"format", CTX_GRAPH}, {"start", CTX_GRAPH}, {"kind", CTX_NODE}, {"on", CTX_EDGE},
    {"branch", CTX_EDGE},  {"label", 0},         {"shape", 0},       {"style", 0},
    {"color", 0},          {"fillcolor", 0},     {"fontcolor", 0},   {"fontname", 0},
    {"fontsize", 0},       {"penwidth", 0},      {"arrowhead", 0},   {"arrowtail", 0},
    {"tooltip", 0},        {"rankdir", 0},       {"splines", 0},     {"nodesep", 0},
    {"ranksep", 0},        {"bgcolor", 0},
};
#define NKNOWN (sizeof KNOWN / sizeof KNOWN[0])
_Static_assert(NKNOWN <= 32, "one bit per known attribute name");

static const char *const CONTEXT_NAME[] = {
    [CTX_GRAPH] = "the graph", [CTX_NODE] = "a node", [CTX_EDGE] = "an edge",
    [CTX_NODE_DEFAULTS] = "node [...] defaults", [CTX_EDGE_DEFAULTS] = "edge [...] defaults",
};

static const char *const CONTEXT_TAKES[] = {
    [CTX_GRAPH] = "format, start", [CTX_NODE] = "kind", [CTX_EDGE] = "on, branch",
    [CTX_NODE_DEFAULTS] = NULL, [CTX_EDGE_DEFAULTS] = NULL,
};

/* The attributes of one statement: meaningful values and every name seen
 * (one bit per KNOWN name: each name stands at most once a statement). */
typedef struct stmt_attrs {
    sp_dot_value values[M_COUNT];
    uint32_t seen;
} stmt_attrs;

typedef struct parser {
    dot_lexer L;
    dot_token tok;
    sp_dot_graph *g;
    sp_error *err;
} parser;

static void attrs_clear(stmt_attrs *a)
{
    for (int m = 0; m < M_COUNT; m++)
        free(a->values[m].text);
    memset(a, 0, sizeof *a);
}

static int invalid(parser *p, sp_text_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int invalid(parser *p, sp_text_pos pos, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sp_fail_at(p->err, "dot.invalid", p->L.file, pos, "%s", what);
}

static int too_large(parser *p, sp_text_pos pos, const char *what, int bound)
{
    return sp_fail_at(p->err, "dot.too-large", p->L.file, pos, "more than %d %s", bound, what);
}

static int next(parser *p)
{
    dot_token_clear(&p->tok);
    return dot_lex_next(&p->L, &p->tok, p->err);
}

static int unexpected(parser *p, const char *wanted)
{
    char got[96];
    dot_token_describe(&p->tok, got, sizeof got);
    return invalid(p, p->tok.pos, "expected %s, found %s", wanted, got);
}

static int expect(parser *p, dot_token_kind kind, const char *wanted)
{
    return p->tok.kind == kind ? next(p) : unexpected(p, wanted);
}

/* ---- attributes ---- */

/* The index of a known attribute name in KNOWN, or -1. */
static int known_index(const char *name)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (strcmp(KNOWN[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int unknown_attribute(parser *p, const dot_token *key, attr_context ctx)
{
    char what[400];
    const char *takes = CONTEXT_TAKES[ctx];
    snprintf(what, sizeof what,
             "unknown attribute \"%.60s\" on %s (it takes %s%sthe render attributes label, shape, "
             "style, color, ...)",
             key->text, CONTEXT_NAME[ctx], takes ? takes : "", takes ? " and " : "only ");
    return sp_fail_at(p->err, "dot.invalid", p->L.file, key->pos, "%s", what);
}

/* Record `key = value` of a statement in `ctx` (takes value->text). */
static int record(parser *p, stmt_attrs *a, attr_context ctx, const dot_token *key,
                  dot_token *value)
{
    int k = known_index(key->text);
    if (k < 0)
        return unknown_attribute(p, key, ctx);
    if (k < M_COUNT && KNOWN[k].context != ctx)
        return invalid(p, key->pos, "attribute \"%s\" is not allowed on %s", key->text,
                       CONTEXT_NAME[ctx]);
    if (a->seen & (UINT32_C(1) << k))
        return invalid(p, key->pos, "attribute \"%s\" is given twice in one statement",
                       key->text);
    a->seen |= UINT32_C(1) << k;
    if (k < M_COUNT) {
        a->values[k] = (sp_dot_value){value->text, value->pos};
        value->text = NULL;
    }
    return 0;
}

/* One `key = value` inside [...], the current token being the key. */
static int attribute(parser *p, stmt_attrs *a, attr_context ctx)
{
    if (p->tok.kind != DOT_ID && p->tok.kind != DOT_QUOTED)
        return unexpected(p, "an attribute name or ']'");
    dot_token key = p->tok;
    p->tok = (dot_token){0};
    int rc = next(p);
    if (rc == 0 && p->tok.kind != DOT_EQUALS)
        rc = invalid(p, key.pos, "attribute \"%s\" needs a value (%s = ...)", key.text, key.text);
    if (rc == 0)
        rc = next(p);
    if (rc == 0 && !dot_token_is_id(&p->tok))
        rc = unexpected(p, "an attribute value");
    if (rc == 0)
        rc = record(p, a, ctx, &key, &p->tok);
    dot_token_clear(&key);
    return rc ? rc : next(p);
}

/* ('[' (attribute (','|';')?)* ']')* */
static int attr_lists(parser *p, stmt_attrs *a, attr_context ctx)
{
    while (p->tok.kind == DOT_LBRACKET) {
        if (next(p))
            return -1;
        while (p->tok.kind != DOT_RBRACKET) {
            if (attribute(p, a, ctx))
                return -1;
            if ((p->tok.kind == DOT_COMMA || p->tok.kind == DOT_SEMI) && next(p))
                return -1;
        }
        if (next(p))
            return -1;
    }
    return 0;
}

/* ---- the graph ---- */

size_t sp_dot_node_index(const sp_dot_graph *g, const char *id)
{
    for (size_t i = 0; i < g->nnodes; i++)
        if (strcmp(g->nodes[i].id, id) == 0)
            return i;
    return (size_t)-1;
}

/* The node `t` names, added at its first mention. */
static int node_of(parser *p, const dot_token *t, size_t *index)
{
    sp_dot_graph *g = p->g;
    if ((*index = sp_dot_node_index(g, t->text)) != (size_t)-1)
        return 0;
    if (g->nnodes == SP_DOT_NODES_MAX)
        return too_large(p, t->pos, "nodes", SP_DOT_NODES_MAX);
    sp_dot_node *nodes = sp_grow(g->nodes, &g->node_cap, g->nnodes, sizeof *nodes);
    if (!nodes)
        return sp_oom(p->err);
    g->nodes = nodes;
    sp_dot_node *n = &g->nodes[g->nnodes];
    *n = (sp_dot_node){.id = strdup(t->text), .pos = t->pos};
    if (!n->id)
        return sp_oom(p->err);
    *index = g->nnodes++;
    return 0;
}

/* A meaningful value that may stand once per node or graph. */
static int set_once(parser *p, sp_dot_value *slot, sp_dot_value *given, const char *what,
                    const char *owner)
{
    if (!given->text)
        return 0;
    if (slot->text)
        return invalid(p, given->pos, "%s%.80s is given twice (first on line %u)", what, owner,
                       slot->pos.line);
    *slot = *given;
    given->text = NULL;
    return 0;
}

static int add_edge(parser *p, size_t from, size_t to, sp_text_pos pos, const stmt_attrs *a)
{
    sp_dot_graph *g = p->g;
    if (g->nedges == SP_DOT_EDGES_MAX)
        return too_large(p, pos, "edges", SP_DOT_EDGES_MAX);
    sp_dot_edge *edges = sp_grow(g->edges, &g->edge_cap, g->nedges, sizeof *edges);
    if (!edges)
        return sp_oom(p->err);
    g->edges = edges;
    sp_dot_edge *e = &g->edges[g->nedges++];
    *e = (sp_dot_edge){.from = from, .to = to, .pos = pos};
    const sp_dot_value *on = &a->values[M_ON], *branch = &a->values[M_BRANCH];
    e->on = (sp_dot_value){on->text ? strdup(on->text) : NULL, on->pos};
    e->branch = (sp_dot_value){branch->text ? strdup(branch->text) : NULL, branch->pos};
    if ((on->text && !e->on.text) || (branch->text && !e->branch.text))
        return sp_oom(p->err);
    return 0;
}

/* The node IDs of an edge chain, in order. */
typedef struct token_list {
    dot_token *items;
    size_t n, cap;
} token_list;

/* Move `t` to the end of `l` (a chain has at most SP_DOT_EDGES_MAX edges). */
static int push_token(parser *p, token_list *l, dot_token *t)
{
    if (l->n > SP_DOT_EDGES_MAX)
        return too_large(p, t->pos, "edges", SP_DOT_EDGES_MAX);
    dot_token *items = sp_grow(l->items, &l->cap, l->n, sizeof *items);
    if (!items)
        return sp_oom(p->err);
    l->items = items;
    l->items[l->n++] = *t;
    *t = (dot_token){0};
    return 0;
}

static void token_list_free(token_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        dot_token_clear(&l->items[i]);
    free(l->items);
}

/* The rest of a chain after its first ID: ('->' ID)+, the current token
 * being the first '->'. */
static int chain_ids(parser *p, token_list *chain)
{
    while (p->tok.kind == DOT_ARROW) {
        if (next(p))
            return -1;
        if (p->tok.kind == DOT_LBRACE || p->tok.kind == DOT_KW_SUBGRAPH)
            return invalid(p, p->tok.pos, "subgraphs are not supported");
        if (!dot_token_is_id(&p->tok))
            return unexpected(p, "a node ID after '->'");
        if (push_token(p, chain, &p->tok) || next(p))
            return -1;
    }
    return 0;
}

/* a -> b -> c [attrs]: the current token follows `first`. Every edge of
 * the chain gets the statement's attributes. */
static int edge_statement(parser *p, dot_token *first)
{
    token_list chain = {0};
    stmt_attrs a = {0};
    int rc = push_token(p, &chain, first);
    if (rc == 0)
        rc = chain_ids(p, &chain);
    if (rc == 0)
        rc = attr_lists(p, &a, CTX_EDGE);
    for (size_t i = 0; rc == 0 && i + 1 < chain.n; i++) {
        size_t from, to;
        rc = node_of(p, &chain.items[i], &from);
        if (rc == 0)
            rc = node_of(p, &chain.items[i + 1], &to);
        if (rc == 0)
            rc = add_edge(p, from, to, chain.items[i].pos, &a);
    }
    token_list_free(&chain);
    attrs_clear(&a);
    return rc;
}

/* a [attrs]: the current token follows `id`. */
static int node_statement(parser *p, dot_token *id)
{
    stmt_attrs a = {0};
    size_t index;
    int rc = attr_lists(p, &a, CTX_NODE);
    if (rc == 0)
        rc = node_of(p, id, &index);
    if (rc == 0)
        rc = set_once(p, &p->g->nodes[index].kind, &a.values[M_KIND], "the kind of node ",
                      id->text);
    attrs_clear(&a);
    return rc;
}

static int graph_values(parser *p, stmt_attrs *a)
{
    if (set_once(p, &p->g->format, &a->values[M_FORMAT], "the graph attribute format", ""))
        return -1;
    return set_once(p, &p->g->start, &a->values[M_START], "the graph attribute start", "");
}

/* id = value (a graph attribute), the current token being '='. */
static int graph_assignment(parser *p, dot_token *key)
{
    stmt_attrs a = {0};
    int rc = next(p);
    if (rc == 0 && !dot_token_is_id(&p->tok))
        rc = unexpected(p, "a value after '='");
    if (rc == 0 && key->kind == DOT_NUMERAL)
        rc = invalid(p, key->pos, "a number is not an attribute name");
    if (rc == 0)
        rc = record(p, &a, CTX_GRAPH, key, &p->tok);
    if (rc == 0)
        rc = next(p);
    if (rc == 0)
        rc = graph_values(p, &a);
    attrs_clear(&a);
    return rc;
}

/* graph [...], node [...], edge [...]: the current token is the keyword. */
static int defaults_statement(parser *p, attr_context ctx)
{
    stmt_attrs a = {0};
    int rc = next(p);
    if (rc == 0 && p->tok.kind != DOT_LBRACKET)
        rc = unexpected(p, "'[' after graph, node or edge");
    if (rc == 0)
        rc = attr_lists(p, &a, ctx);
    if (rc == 0 && ctx == CTX_GRAPH)
        rc = graph_values(p, &a);
    attrs_clear(&a);
    return rc;
}

static int id_statement(parser *p)
{
    dot_token id = p->tok;
    p->tok = (dot_token){0};
    int rc = next(p);
    if (rc == 0 && p->tok.kind == DOT_EQUALS)
        rc = graph_assignment(p, &id);
    else if (rc == 0 && p->tok.kind == DOT_ARROW)
        rc = edge_statement(p, &id);
    else if (rc == 0)
        rc = node_statement(p, &id);
    dot_token_clear(&id);
    return rc;
}

static int statement(parser *p)
{
    switch (p->tok.kind) {
    case DOT_SEMI:
        return next(p);
    case DOT_KW_SUBGRAPH:
    case DOT_LBRACE:
        return invalid(p, p->tok.pos, "subgraphs are not supported");
    case DOT_KW_GRAPH:
        return defaults_statement(p, CTX_GRAPH);
    case DOT_KW_NODE:
        return defaults_statement(p, CTX_NODE_DEFAULTS);
    case DOT_KW_EDGE:
        return defaults_statement(p, CTX_EDGE_DEFAULTS);
    default:
        if (dot_token_is_id(&p->tok))
            return id_statement(p);
        return unexpected(p, "a statement or '}'");
    }
}

static int header(parser *p)
{
    if (p->tok.kind == DOT_KW_STRICT)
        return invalid(p, p->tok.pos, "strict graphs are not supported");
    if (p->tok.kind == DOT_KW_GRAPH)
        return invalid(p, p->tok.pos,
                       "undirected graphs are not supported: a workflow is a digraph");
    if (p->tok.kind != DOT_KW_DIGRAPH)
        return unexpected(p, "digraph");
    if (next(p))
        return -1;
    if (!dot_token_is_id(&p->tok))
        return invalid(p, p->tok.pos, "the digraph needs an ID: the workflow's name "
                                      "(digraph hello { ... })");
    p->g->name = p->tok.text;
    p->g->name_pos = p->tok.pos;
    p->tok.text = NULL;
    if (next(p))
        return -1;
    return expect(p, DOT_LBRACE, "'{'");
}

static int parse(parser *p)
{
    if (next(p) || header(p))
        return -1;
    while (p->tok.kind != DOT_RBRACE) {
        if (p->tok.kind == DOT_EOF)
            return invalid(p, p->tok.pos, "the digraph is never closed: '}' missing");
        if (statement(p))
            return -1;
    }
    if (next(p))
        return -1;
    if (p->tok.kind != DOT_EOF)
        return invalid(p, p->tok.pos, "a workflow.dot holds one digraph: nothing may follow its "
                                      "closing '}'");
    return 0;
}

int sp_dot_read(const char *bytes, size_t len, const char *file, sp_dot_graph *g, sp_error *err)
{
    memset(g, 0, sizeof *g);
    parser p = {.g = g, .err = err};
    if (len > SP_DOT_BYTES_MAX)
        return sp_fail_at(err, "dot.too-large", file, (sp_text_pos){0, 0},
                          "larger than %u bytes", SP_DOT_BYTES_MAX);
    int rc = dot_lex_begin(&p.L, bytes, len, file, err);
    if (rc == 0)
        rc = parse(&p);
    dot_token_clear(&p.tok);
    if (rc)
        sp_dot_graph_free(g);
    return rc;
}

void sp_dot_graph_free(sp_dot_graph *g)
{
    free(g->name);
    free(g->format.text);
    free(g->start.text);
    for (size_t i = 0; i < g->nnodes; i++) {
        free(g->nodes[i].id);
        free(g->nodes[i].kind.text);
    }
    for (size_t i = 0; i < g->nedges; i++) {
        free(g->edges[i].on.text);
        free(g->edges[i].branch.text);
    }
    free(g->nodes);
    free(g->edges);
    memset(g, 0, sizeof *g);
}
