/*
 * labels.c - the text of a picture (labels.h): node IDs in bold with their
 * kind and what they run, wait for or sleep; a map's progress ("7/20
 * done"); outcome names with the times the run took them ("ok ×3"); a
 * title naming the workflow and the run; the legend of the state colours.
 *
 * Must never put text from a package or a run into a label unescaped (an
 * HTML-like label would read it as markup).
 */
#include <string.h>

#include "graph/labels.h"

#define SMALL "<FONT POINT-SIZE=\"10\">"
#define SMALL_END "</FONT>"
#define TIMES "\xc3\x97" /* U+00D7 MULTIPLICATION SIGN */
#define DOT "\xc2\xb7"   /* U+00B7 MIDDLE DOT */

static void escaped(sp_buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': sp_buf_append_str(b, "&amp;"); break;
        case '<': sp_buf_append_str(b, "&lt;"); break;
        case '>': sp_buf_append_str(b, "&gt;"); break;
        case '"': sp_buf_append_str(b, "&quot;"); break;
        default: sp_buf_append_char(b, *s);
        }
    }
}

/* "250 ms", "1.5 s", "30 s", "5 min", "2 h" */
static void duration(sp_buf *b, uint64_t ms)
{
    unsigned long long v = ms;
    if (v >= 3600000 && v % 3600000 == 0)
        sp_buf_printf(b, "%llu h", v / 3600000);
    else if (v >= 60000 && v % 60000 == 0)
        sp_buf_printf(b, "%llu min", v / 60000);
    else if (v % 1000 == 0)
        sp_buf_printf(b, "%llu s", v / 1000);
    else if (v >= 1000 && v % 100 == 0)
        sp_buf_printf(b, "%llu.%llu s", v / 1000, v % 1000 / 100);
    else
        sp_buf_printf(b, "%llu ms", v);
}

/* What a node of each kind does, after its kind's name. */
static void detail(sp_buf *b, const sp_node *n)
{
    switch (n->kind) {
    case SP_NODE_ACTIVITY:
    case SP_NODE_MAP:
        sp_buf_append_str(b, " " DOT " ");
        escaped(b, n->action_id);
        if (n->kind == SP_NODE_MAP)
            sp_buf_printf(b, " " DOT " %u at once", n->max_concurrency);
        break;
    case SP_NODE_AWAIT_SIGNAL:
        sp_buf_append_str(b, " " DOT " ");
        escaped(b, n->signal);
        if (n->has_timeout) {
            sp_buf_append_str(b, " " DOT " timeout ");
            duration(b, n->timeout_ms);
        }
        break;
    case SP_NODE_SLEEP:
        sp_buf_append_str(b, " " DOT " ");
        if (n->has_duration)
            duration(b, n->duration_ms);
        else
            sp_buf_append_str(b, "until a time");
        break;
    case SP_NODE_PARALLEL:
        sp_buf_printf(b, " " DOT " %zu branches", json_object_size(n->branches));
        break;
    case SP_NODE_FAIL:
        sp_buf_append_str(b, " " DOT " ");
        escaped(b, json_string_value(json_object_get(n->error, "code")));
        break;
    default:
        break;
    }
}

/* With a run: a map's progress, or how often the node was entered. */
static void run_line(sp_buf *b, const gr_node *n)
{
    if (n->has_progress) {
        sp_buf_printf(b, "<BR/>" SMALL "<B>%llu/%llu</B> done", (unsigned long long)n->done,
                      (unsigned long long)n->total);
        if (n->running)
            sp_buf_printf(b, ", %llu running", (unsigned long long)n->running);
        sp_buf_append_str(b, SMALL_END);
    } else if (n->visits > 1) {
        sp_buf_printf(b, "<BR/>" SMALL "%llu visits" SMALL_END, (unsigned long long)n->visits);
    }
}

void gr_label_node(sp_buf *b, const gr_model *m, const gr_node *n)
{
    sp_buf_append_str(b, "<B>");
    escaped(b, n->node->id);
    sp_buf_append_str(b, "</B><BR/>" SMALL);
    sp_buf_append_str(b, gr_kind_name(n->node->kind));
    detail(b, n->node);
    sp_buf_append_str(b, SMALL_END);
    if (m->with_run)
        run_line(b, n);
}

void gr_label_edge(sp_buf *b, const gr_model *m, const gr_edge *e)
{
    sp_buf_append_str(b, e->label);
    if (m->with_run && m->counts_known && e->count > 0 && e->kind != GR_EDGE_START)
        sp_buf_printf(b, " " TIMES "%llu", (unsigned long long)e->count);
}

void gr_label_title(sp_buf *b, const gr_model *m)
{
    sp_buf_append_str(b, "<B>");
    escaped(b, m->wf->name);
    sp_buf_append_str(b, "</B>");
    if (!m->with_run)
        return;
    sp_buf_append_str(b, "<BR/>run ");
    escaped(b, m->run_id);
    sp_buf_append_str(b, ": ");
    escaped(b, m->status);
    if (m->quarantined)
        sp_buf_append_str(b, " (quarantined)");
    if (!m->counts_known) {
        sp_buf_append_str(b, "<BR/>" SMALL "edge counts unavailable: ");
        escaped(b, m->counts_note);
        sp_buf_append_str(b, SMALL_END);
    }
}

void gr_label_legend(sp_buf *b)
{
    static const gr_state order[] = {GR_DONE,   GR_RUNNING, GR_WAITING,    GR_INTERVENTION,
                                     GR_FAILED, GR_CANCELLED, GR_NOT_REACHED};
    size_t n = sizeof order / sizeof order[0];
    sp_buf_append_str(b, "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"3\" "
                         "CELLPADDING=\"4\"><TR><TD BORDER=\"0\"><B>state in this run</B></TD>");
    for (size_t i = 0; i < n; i++)
        sp_buf_printf(b, "<TD BGCOLOR=\"%s\">%s</TD>", gr_state_colour(order[i]),
                      gr_state_label(order[i]));
    sp_buf_printf(b, "</TR><TR><TD BORDER=\"0\" COLSPAN=\"%zu\" ALIGN=\"LEFT\">" SMALL
                     "edges: outcome " TIMES "times the run took it; faint: never taken" SMALL_END
                     "</TD></TR></TABLE>",
                  n + 1);
}
