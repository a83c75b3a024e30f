/*
 * cmd_graph.c - `spore graph [<workflow>] [--run <runId>] [-o out.svg|out.png|
 * out.dot] [--format svg|png|dot]` (authoring.md §3, docs/graph.md): the
 * workflow drawn by Graphviz's library, coloured by one run's state when
 * --run names one (the run's package comes from the store when no workflow
 * is given).
 *
 * What it must never do: spawn a program (the picture is made in this
 * process, src/graph/), write to the store, or create a store (it reads an
 * existing one, after the arguments and the workflow are checked).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/views.h"
#include "cli/workflow_file.h"
#include "engine/validate.h"
#include "graph/graph.h"

static const char HELP[] =
    "usage: spore graph <workflow> [--run <runId>] [-o <file.svg|file.png|file.dot>]\n"
    "       spore graph --run <runId> [-o <file>]\n"
    "\n"
    "Draws a workflow with Graphviz's library: node IDs, kinds by shape,\n"
    "outcome names on the edges. With --run, every node is coloured by its\n"
    "state in that run (done, running, waiting, needs intervention, failed,\n"
    "cancelled, not reached), edges say how often the run took them (ok x3),\n"
    "a map shows its progress (7/20) and a legend says what the colours mean.\n"
    "Without a workflow, --run draws the run's own workflow from the store.\n"
    "\n"
    "Options:\n"
    "  --run <runId>       colour the picture with this run (reads --db)\n"
    "  -o, --output <file> write the picture there; .svg, .png or .dot picks\n"
    "                      the format (default: SVG on stdout)\n"
    "  --format svg|png|dot  the format on stdout (or for a file of another name)\n"
    "  --json              print the nodes' states and the edges' counts as JSON\n"
    "                      (with -o: and where the picture went; without -o no\n"
    "                      picture is made)\n"
    "\n"
    "Exit 0 when drawn; 2 for a bad argument or workflow, run.not-found or\n"
    "graph.workflow-mismatch; 10 for a store error or graph.format-unavailable.\n";

typedef struct graph_args {
    const char *workflow, *run_id, *out, *format_name;
    gr_format format;
} graph_args;

/* ---- the command line ---- */

/* The format a file name asks for by its extension (.svg, .png, .dot, .gv). */
static bool format_of_path(const char *path, gr_format *out)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return false;
    if (strcasecmp(dot, ".gv") == 0)
        return *out = GR_DOT, true;
    char ext[8];
    snprintf(ext, sizeof ext, "%s", dot + 1);
    for (char *p = ext; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    return strlen(dot + 1) < sizeof ext && gr_format_parse(ext, out);
}

static int choose_format(graph_args *a, sp_error *err)
{
    gr_format by_name = GR_SVG;
    bool named = a->out && format_of_path(a->out, &by_name);
    a->format = by_name;
    if (a->format_name && !gr_format_parse(a->format_name, &a->format))
        return sp_fail(err, CLI_INVALID_VALUE, "--format takes svg, png or dot, not \"%s\"",
                       a->format_name);
    if (a->out && !named && !a->format_name)
        return sp_fail(err, CLI_INVALID_VALUE,
                       "-o %s: the file name must end in .svg, .png or .dot (or give --format)",
                       a->out);
    if (named && a->format_name && by_name != a->format)
        return sp_fail(err, CLI_INVALID_VALUE, "--format %s disagrees with -o %s", a->format_name,
                       a->out);
    return 0;
}

static int parse(cli *c, graph_args *a, int argc, char **argv)
{
    const cli_option opts[] = {
        {"--run", true, &a->run_id, NULL},        {"-o", true, &a->out, NULL},
        {"--output", true, &a->out, NULL},        {"--format", true, &a->format_name, NULL},
        {NULL, false, NULL, NULL},
    };
    int rc = cli_begin(c, argc, argv, opts, HELP, CLI_ANY_ARGS, NULL);
    if (rc)
        return rc;
    sp_error err = {0};
    if (c->npositional > 1 || (c->npositional == 0 && !a->run_id)) {
        sp_fail(&err, "usage", "graph takes one workflow, --run <runId>, or both (see spore graph "
                               "--help)");
        return cli_error(c, EXIT_USAGE, &err);
    }
    a->workflow = c->npositional ? c->positional[0] : NULL;
    if (choose_format(a, &err))
        return cli_error(c, EXIT_USAGE, &err);
    return 0;
}

/* ---- the workflow: from a file (as `spore validate` reads it) or the store ---- */

static int package_from_file(const char *path, sp_validated *v, sp_error *err)
{
    sp_workflow_source src;
    if (sp_workflow_source_open(path, &src, err))
        return -1;
    sp_validate_opts opts = {src.dir, false, NULL};
    int rc = sp_validate_workflow(src.doc, NULL, NULL, &opts, v, err);
    sp_workflow_source_close(&src);
    return rc;
}

static sp_workflow *load_package(const char *bytes, size_t len, sp_error *err)
{
    sp_kernel_failure f;
    bool oom = false;
    sp_workflow *wf = sp_workflow_load(bytes, len, &f, &oom);
    if (!wf && oom)
        sp_oom(err);
    else if (!wf)
        sp_fail(err, f.code, "the workflow's package does not load: %s", f.details);
    return wf;
}

/* ---- the run ---- */

typedef struct run_source {
    session s;
    sp_run_key key;
    sp_run_view view;
    bool have_view;
} run_source;

static int open_run(cli *c, const char *run_id, run_source *r)
{
    sp_error err = {0};
    bool found = false;
    int rc = session_open_run(&r->s, c, run_id, &r->key);
    if (rc)
        return rc;
    if (sp_store_get_run(r->s.store, &r->key, &r->view, &found, &err) != SP_STORE_OK || !found)
        return session_fail(&r->s, &err);
    r->have_view = true;
    return 0;
}

static void close_run(run_source *r)
{
    if (r->have_view)
        sp_run_view_free(&r->view);
    if (r->s.store)
        session_close(&r->s);
}

/* The run's own package, from the store. */
static sp_workflow *run_package(run_source *r, sp_error *err)
{
    char *bytes = NULL;
    size_t len = 0;
    bool found = false;
    if (sp_store_get_package(r->s.store, r->view.package_digest, &bytes, &len, &found, err) !=
        SP_STORE_OK)
        return NULL;
    sp_workflow *wf = NULL;
    if (!found)
        sp_fail(err, "store.corrupt", "the store has no package %s for run %s",
                r->view.package_digest, r->key.run_id);
    else
        wf = load_package(bytes, len, err);
    free(bytes);
    return wf;
}

/* Every consumed event of the run, in order, into the replay. */
static int replay(run_source *r, gr_history *h, sp_error *err)
{
    uint64_t after = 0;
    while (!gr_history_stopped(h) && after < r->view.applied_sequence) {
        sp_event_list page;
        if (sp_store_list_events(r->s.store, &r->key, after, SP_STORE_PAGE_MAX, &page, err) !=
            SP_STORE_OK)
            return -1;
        size_t i = 0;
        for (; i < page.n && page.events[i].sequence <= r->view.applied_sequence; i++) {
            const sp_event *e = &page.events[i];
            sp_kernel_event ke = {e->event_id, e->sequence, e->accepted_at_ms, e->kind, e->body,
                                  e->body_len, NULL};
            gr_history_feed(h, &ke);
            after = e->sequence;
        }
        bool more = page.n > 0 && i == page.n;
        sp_event_list_free(&page);
        if (!more)
            break;
    }
    return 0;
}

static int colour_with_run(gr_model *m, run_source *r, sp_error *err)
{
    gr_history *h = gr_history_new(m);
    if (!h)
        return sp_oom(err);
    int rc = replay(r, h, err);
    gr_run run = {r->key.run_id,          r->view.status,       r->view.quarantined,
                  r->view.snapshot,       r->view.snapshot_len, r->view.snapshot_digest};
    if (rc == 0)
        rc = gr_model_set_run(m, &run, h, err);
    gr_history_free(h);
    return rc;
}

/* ---- output ---- */

static int write_file(const char *path, const char *bytes, size_t len, sp_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return sp_fail(err, "file.unwritable", "cannot write %s", path);
    bool ok = fwrite(bytes, 1, len, f) == len;
    if (fclose(f) != 0 || !ok)
        return sp_fail(err, "file.unwritable", "cannot write %s", path);
    return 0;
}

static void answer(const cli *c, const graph_args *a, const gr_model *m, size_t len)
{
    if (!c->json) {
        if (a->out)
            printf("graph: wrote %s (%s, %zu bytes)\n", a->out, gr_format_name(a->format), len);
        return;
    }
    json_t *out = gr_model_json(m);
    json_t *where = a->out ? json_pack("{s:s,s:s,s:o}", "path", a->out, "format",
                                       gr_format_name(a->format), "bytes", view_decimal(len))
                           : json_null();
    json_object_set_new(out, "output", where);
    cli_print_json(out);
}

/* The picture (unless --json without -o: the model alone), then the answer. */
static int draw(cli *c, const graph_args *a, const gr_model *m)
{
    sp_error err = {0};
    char *bytes = NULL;
    size_t len = 0;
    if (c->json && !a->out) {
        answer(c, a, m, 0);
        return EXIT_OK;
    }
    int rendered = gr_render(m, a->format, &bytes, &len, &err);
    gr_render_end(); /* this process draws once */
    if (rendered)
        return cli_error(c, strncmp(err.code, "graph.", 6) == 0 ? EXIT_INTERNAL : EXIT_USAGE,
                         &err);
    int rc = a->out ? write_file(a->out, bytes, len, &err)
                    : (fwrite(bytes, 1, len, stdout) == len ? 0 : sp_fail(&err, "file.unwritable",
                                                                          "cannot write stdout"));
    free(bytes);
    if (rc)
        return cli_error(c, EXIT_USAGE, &err);
    answer(c, a, m, len);
    return EXIT_OK;
}

/* ---- the command ---- */

static int with_workflow(cli *c, const graph_args *a, sp_workflow *wf, run_source *r)
{
    sp_error err = {0};
    gr_model m;
    if (gr_model_build(wf, &m, &err))
        return cli_error(c, EXIT_INTERNAL, &err);
    int rc = r->have_view && colour_with_run(&m, r, &err) ? session_fail(&r->s, &err)
                                                           : draw(c, a, &m);
    gr_model_free(&m);
    return rc;
}

/* The run's package against the workflow given with it. */
static int same_package(const run_source *r, const sp_validated *v, sp_error *err)
{
    if (!r->have_view || strcmp(r->view.package_digest, v->package_digest) == 0)
        return 0;
    return sp_fail(err, "graph.workflow-mismatch",
                   "run %s runs package %s, the workflow given is %s (leave the workflow out to "
                   "draw the run's own)",
                   r->key.run_id, r->view.package_digest, v->package_digest);
}

int cmd_graph(int argc, char **argv)
{
    cli c = {.command = "graph", .store_use = CLI_STORE_READS};
    graph_args a = {0};
    int rc = parse(&c, &a, argc, argv);
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    sp_error err = {0};
    sp_validated v = {0};
    if (a.workflow && package_from_file(a.workflow, &v, &err))
        return cli_error(&c, cli_exit_for(err.code), &err);
    run_source r = {0};
    if (a.run_id && (rc = open_run(&c, a.run_id, &r))) {
        close_run(&r);
        sp_validated_free(&v);
        return rc;
    }
    sp_workflow *wf = NULL;
    if (a.workflow && same_package(&r, &v, &err) == 0)
        wf = load_package(v.package, v.package_len, &err);
    else if (!a.workflow)
        wf = run_package(&r, &err);
    rc = wf ? with_workflow(&c, &a, wf, &r) : cli_error(&c, cli_exit_for(err.code), &err);
    sp_workflow_free(wf);
    close_run(&r);
    sp_validated_free(&v);
    return rc;
}
