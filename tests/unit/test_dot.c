/*
 * test_dot.c - the strict DOT reader of workflow folders (authoring.md §1,
 * docs/authoring.md "The DOT dialect"): every accepted construct read into
 * the right graph, every rejection with its code, line and column, every
 * bound.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authoring/dot.h"
#include "authoring/dot_lex.h"
#include "check.h"

#define HEAD "digraph g { format=\"spore.workflow/0.2\"; start=a; "

static int read_dot(const char *src, sp_dot_graph *g, sp_error *err)
{
    return sp_dot_read(src, strlen(src), "workflow.dot", g, err);
}

static const sp_dot_node *node(const sp_dot_graph *g, const char *id)
{
    size_t i = sp_dot_node_index(g, id);
    return i == (size_t)-1 ? NULL : &g->nodes[i];
}

/* ---- accepted ---- */

static void test_minimal(void)
{
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot("digraph hello { format=\"runspore.workflow/0.1\"; start=a; a -> b }", &g, &err) == 0);
    CHECK_STR(g.name, "hello");
    CHECK_STR(g.format.text, "runspore.workflow/0.1");
    CHECK_STR(g.start.text, "a");
    CHECK_INT(g.start.pos.line, 1);
    CHECK_INT(g.start.pos.column, 55);
    CHECK_INT(g.nnodes, 2);
    CHECK_INT(g.nedges, 1);
    CHECK(g.edges[0].on.text == NULL && g.edges[0].branch.text == NULL);
    CHECK_STR(g.nodes[g.edges[0].from].id, "a");
    CHECK_STR(g.nodes[g.edges[0].to].id, "b");
    CHECK(g.nodes[0].kind.text == NULL);
    sp_dot_graph_free(&g);
}

static void test_comments_and_positions(void)
{
    const char *src = "// a line comment\n"
                      "# a preprocessor-style line\n"
                      "digraph g { /* a block\n"
                      "   comment */ format=x # trailing\n"
                      "  start = \"a\" // trailing too\n"
                      "\ta -> b [on=red]\n"
                      "}\n";
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot(src, &g, &err) == 0);
    CHECK_STR(g.format.text, "x");
    CHECK_INT(g.format.pos.line, 4);
    CHECK_INT(g.format.pos.column, 22);
    CHECK_INT(g.nedges, 1);
    CHECK_STR(g.edges[0].on.text, "red");
    CHECK_INT(g.edges[0].pos.line, 6);
    CHECK_INT(g.edges[0].pos.column, 2); /* a tab is one column */
    CHECK_INT(g.edges[0].on.pos.column, 13);
    sp_dot_graph_free(&g);
}

static void test_quoted_strings(void)
{
    const char *src = HEAD "\"my node\" [label=\"say \\\"hi\\\"\\l\"]; \"x\\\ny\" -> \"q\\\"\" }";
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot(src, &g, &err) == 0);
    CHECK(node(&g, "my node") != NULL);
    CHECK(node(&g, "xy") != NULL);  /* backslash-newline is nothing */
    CHECK(node(&g, "q\"") != NULL); /* \" is a quote */
    sp_dot_graph_free(&g);
    CHECK(read_dot(HEAD "a [kind=\"com\\plete\"] }", &g, &err) == 0);
    CHECK_STR(node(&g, "a")->kind.text, "com\\plete"); /* any other backslash stays */
    sp_dot_graph_free(&g);
}

static void test_chains_and_attributes(void)
{
    const char *src = HEAD "a -> b -> c [on=red, label=\"x\"; color=blue][style=dashed] "
                           "p [kind=parallel]; p -> s [branch=sec]; p -> j [on=join] }";
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot(src, &g, &err) == 0);
    CHECK_INT(g.nedges, 4);
    CHECK_STR(g.edges[0].on.text, "red");
    CHECK_STR(g.edges[1].on.text, "red");
    CHECK_STR(g.nodes[g.edges[1].from].id, "b");
    CHECK_STR(g.nodes[g.edges[1].to].id, "c");
    CHECK_INT(g.edges[1].pos.column, (long long)strlen(HEAD) + 6);
    CHECK_STR(g.edges[2].branch.text, "sec");
    CHECK(g.edges[2].on.text == NULL);
    CHECK_STR(g.edges[3].on.text, "join");
    CHECK_STR(node(&g, "p")->kind.text, "parallel");
    CHECK(node(&g, "p")->kind.pos.column > 0);
    sp_dot_graph_free(&g);
}

static void test_defaults_graph_keywords(void)
{
    const char *src = "DiGraph G {\n"
                      "  GRAPH [format=f, start=s, rankdir=LR, bgcolor=white, splines=ortho,"
                      " nodesep=0.5, ranksep=1, label=\"t\", fontname=x, fontsize=9]\n"
                      "  Node [shape=box, style=filled, fillcolor=\"#eeeeee\", fontcolor=black,"
                      " penwidth=2, tooltip=t, color=c]\n"
                      "  edge [arrowhead=vee, arrowtail=none];;\n"
                      "  s; 1 -> 2.5; é -> s\n"
                      "}";
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot(src, &g, &err) == 0);
    CHECK_STR(g.name, "G");
    CHECK_STR(g.format.text, "f");
    CHECK_STR(g.start.text, "s");
    CHECK(node(&g, "1") && node(&g, "2.5") && node(&g, "\xc3\xa9"));
    CHECK_INT(g.nnodes, 4);
    CHECK_INT(g.nodes[0].pos.line, 5);
    sp_dot_graph_free(&g);
}

static void test_empty_graph(void)
{
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot("digraph \"a b\" {}\n", &g, &err) == 0);
    CHECK_STR(g.name, "a b");
    CHECK(g.nnodes == 0 && g.format.text == NULL && g.start.text == NULL);
    sp_dot_graph_free(&g);
}

/* ---- refused ---- */

typedef struct refusal {
    const char *src;
    const char *code;
    unsigned line, column;
    const char *says; /* part of the message */
} refusal;

static const refusal REFUSALS[] = {
    {"strict digraph g {}", "dot.invalid", 1, 1, "strict"},
    {"graph g { a -- b }", "dot.invalid", 1, 1, "undirected"},
    {"digraph g { a -- b }", "dot.invalid", 1, 15, "--"},
    {"digraph g {\n  subgraph s { a }\n}", "dot.invalid", 2, 3, "subgraph"},
    {"digraph g { { a b } }", "dot.invalid", 1, 13, "subgraph"},
    {"digraph g { a -> { b c } }", "dot.invalid", 1, 18, "subgraph"},
    {"digraph g { a -> subgraph s { b } }", "dot.invalid", 1, 18, "subgraph"},
    {"digraph g { a:p -> b }", "dot.invalid", 1, 14, "ports"},
    {"digraph g { a -> b:n }", "dot.invalid", 1, 19, "ports"},
    {"digraph g { a [label=<<b>x</b>>] }", "dot.invalid", 1, 22, "HTML"},
    {"digraph g { a [label=\"x\" + \"y\"] }", "dot.invalid", 1, 26, "concatenation"},
    {"digraph g {\n a -> b [onn=ok]\n}", "dot.invalid", 2, 10, "unknown attribute \"onn\""},
    {"digraph g { a [knd=complete] }", "dot.invalid", 1, 16, "unknown attribute"},
    {"digraph g { formt=x }", "dot.invalid", 1, 13, "unknown attribute"},
    {"digraph g { a [on=ok] }", "dot.invalid", 1, 16, "not allowed on a node"},
    {"digraph g { a -> b [kind=complete] }", "dot.invalid", 1, 21, "not allowed on an edge"},
    {"digraph g { node [kind=complete] }", "dot.invalid", 1, 19, "node [...] defaults"},
    {"digraph g { edge [on=failed] }", "dot.invalid", 1, 19, "edge [...] defaults"},
    {"digraph g { graph [on=x] }", "dot.invalid", 1, 20, "the graph"},
    {"digraph g { kind=x }", "dot.invalid", 1, 13, "the graph"},
    {"digraph g { a -> b [on=x, on=y] }", "dot.invalid", 1, 27, "given twice"},
    {"digraph g { a [kind=fail]\n a [kind=complete] }", "dot.invalid", 2, 10, "first on line 1"},
    {"digraph g { format=a; format=b }", "dot.invalid", 1, 30, "given twice"},
    {"digraph g { start=a; graph [start=b] }", "dot.invalid", 1, 35, "given twice"},
    {"digraph { a }", "dot.invalid", 1, 9, "needs an ID"},
    {"digraph g { a [label=\"x ] }", "dot.invalid", 1, 22, "never closed"},
    {"digraph g { /* a }", "dot.invalid", 1, 13, "never closed"},
    {"digraph g { a -> b", "dot.invalid", 1, 19, "never closed"},
    {"digraph g { a } b", "dot.invalid", 1, 17, "one digraph"},
    {"digraph g { a } digraph h { b }", "dot.invalid", 1, 17, "one digraph"},
    {"digraph g { a [on] }", "dot.invalid", 1, 16, "needs a value"},
    {"digraph g { a [kind=] }", "dot.invalid", 1, 21, "attribute value"},
    {"digraph g { 2a -> b }", "dot.invalid", 1, 13, "number"},
    {"digraph g { a @ b }", "dot.invalid", 1, 15, "unexpected character '@'"},
    {"digraph g { a -> }", "dot.invalid", 1, 18, "node ID"},
    {"digraph g { a -> b ] }", "dot.invalid", 1, 20, "statement"},
    {"digraph g { graph x }", "dot.invalid", 1, 19, "'['"},
    {"digraph g { 1 = x }", "dot.invalid", 1, 13, "number"},
    {"g { }", "dot.invalid", 1, 1, "digraph"},
    {"", "dot.invalid", 1, 1, "digraph"},
    {"digraph g { \"\xc3\xa9\" [label=\"\xc3\xa9\"] @ }", "dot.invalid", 1, 29, "'@'"},
    {"digraph g { a [label=\"\xff\"] }", "dot.invalid", 1, 23, "UTF-8"},
};

static void check_refusal(const refusal *r, const char *src, size_t len)
{
    sp_dot_graph g;
    sp_error err = {0};
    int rc = sp_dot_read(src, len, "wf/workflow.dot", &g, &err);
    CHECK(rc == -1);
    if (rc != -1) {
        check_fail(__FILE__, __LINE__, "accepted: %s", src);
        sp_dot_graph_free(&g);
        return;
    }
    CHECK_STR(err.code, r->code);
    CHECK(g.nnodes == 0 && g.nodes == NULL && g.name == NULL);
    json_t *line = json_object_get(err.details, "line"), *col = json_object_get(err.details, "column");
    CHECK_STR(json_string_value(json_object_get(err.details, "file")), "wf/workflow.dot");
    if (json_integer_value(line) != r->line || json_integer_value(col) != r->column)
        check_fail(__FILE__, __LINE__, "%s: at %lld:%lld, want %u:%u (%s)", src,
                   (long long)json_integer_value(line), (long long)json_integer_value(col),
                   r->line, r->column, err.message);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "wf/workflow.dot:%u:%u: ", r->line, r->column);
    CHECK(strncmp(err.message, prefix, strlen(prefix)) == 0);
    if (!strstr(err.message, r->says))
        check_fail(__FILE__, __LINE__, "%s: message \"%s\" does not say \"%s\"", src, err.message,
                   r->says);
    sp_error_clear(&err);
}

static void test_refusals(void)
{
    for (size_t i = 0; i < sizeof REFUSALS / sizeof REFUSALS[0]; i++)
        check_refusal(&REFUSALS[i], REFUSALS[i].src, strlen(REFUSALS[i].src));
    static const char nul[] = "digraph g {\n a\0 }";
    const refusal r = {NULL, "dot.invalid", 2, 3, "NUL"};
    check_refusal(&r, nul, sizeof nul - 1);
}

/* ---- bounds ---- */

static char *repeat(const char *head, const char *fmt, int n, const char *tail)
{
    size_t cap = strlen(head) + strlen(tail) + (size_t)n * (strlen(fmt) + 16) + 1;
    char *s = malloc(cap);
    size_t used = (size_t)snprintf(s, cap, "%s", head);
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(s + used, cap - used, fmt, i, i + 1);
    snprintf(s + used, cap - used, "%s", tail);
    return s;
}

static void check_too_large(char *src, const char *says)
{
    sp_dot_graph g;
    sp_error err = {0};
    CHECK(read_dot(src, &g, &err) == -1);
    CHECK_STR(err.code, "dot.too-large");
    if (!strstr(err.message, says))
        check_fail(__FILE__, __LINE__, "message \"%s\" does not say \"%s\"", err.message, says);
    sp_error_clear(&err);
    free(src);
}

static void test_bounds(void)
{
    sp_dot_graph g;
    sp_error err = {0};
    char *ok = repeat("digraph g {", " n%d; /* %d */", SP_DOT_NODES_MAX, "}");
    CHECK(read_dot(ok, &g, &err) == 0);
    CHECK_INT(g.nnodes, SP_DOT_NODES_MAX);
    sp_dot_graph_free(&g);
    free(ok);
    check_too_large(repeat("digraph g {", " n%d; /* %d */", SP_DOT_NODES_MAX + 1, "}"), "1024 nodes");
    check_too_large(repeat("digraph g {", " a -> b /* %d %d */;", SP_DOT_EDGES_MAX + 1, "}"),
                    "8192 edges");
    char *long_id = malloc(SP_DOT_ID_MAX + 64);
    memset(long_id, 'x', SP_DOT_ID_MAX + 64);
    memcpy(long_id, "digraph g { \"", 13);
    memcpy(long_id + SP_DOT_ID_MAX + 14, "\" }", 4);
    check_too_large(long_id, "longer than 4096 bytes");
    char *big = malloc(SP_DOT_BYTES_MAX + 2);
    memset(big, ' ', SP_DOT_BYTES_MAX + 1);
    big[SP_DOT_BYTES_MAX + 1] = '\0';
    check_too_large(big, "larger than");
}

int main(void)
{
    test_minimal();
    test_comments_and_positions();
    test_quoted_strings();
    test_chains_and_attributes();
    test_defaults_graph_keywords();
    test_empty_graph();
    test_refusals();
    test_bounds();
    return check_done("test_dot");
}
