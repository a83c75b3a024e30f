/*
 * cmd_inspect.c - the read-only views of one run: `spore status` and
 * `spore events` (cli.md §2; `spore list` is cmd_list.c). They never change
 * a run and never create a store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/status.h"
#include "cli/agent_views.h"
#include "cli/hints.h"
#include "cli/session.h"
#include "cli/views.h"

static const char STATUS_HELP[] =
    "usage: spore status <runId> [--db <path>] [--json]\n"
    "\n"
    "Shows a run: status, position, the outstanding invocation, the result, a\n"
    "quarantine, and the latest result of every node (--json).\n";

static const char EVENTS_HELP[] =
    "usage: spore events <runId> [--db <path>] [--json]\n"
    "\n"
    "Lists a run's events in order with the revision that consumed each one and\n"
    "the diagnostics of that commit.\n";

static int open_one(cli *c, int argc, char **argv, const char *help, session *s, sp_run_key *key)
{
    int rc = cli_begin(c, argc, argv, NULL, help, 1, "one run ID");
    return rc ? rc : session_open_run(s, c, c->positional[0], key);
}

int cmd_status(int argc, char **argv)
{
    cli c = {.command = "status", .store_use = CLI_STORE_READS};
    session s;
    sp_run_key key;
    int rc = open_one(&c, argc, argv, STATUS_HELP, &s, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    if (sp_store_get_run(s.store, &key, &v, &found, &err) != SP_STORE_OK || !found) {
        rc = session_fail(&s, &err);
    } else {
        json_t *step = sp_engine_step_view(s.engine, &v);
        json_t *in_flight = sp_engine_cancelled_in_flight(s.engine, &v);
        if (c.json) {
            json_t *out = view_status_json(&v, step);
            sp_status_add_in_flight(out, in_flight);
            hints_add(&s, &v, step, out, NULL);
            cli_print_json(view_agent_events(s.store, &key, out, NULL));
        } else {
            view_status_text(stdout, &v, step);
            view_in_flight_text(stdout, in_flight);
            hints_add(&s, &v, step, NULL, stdout);
        }
        view_agent_events(s.store, &key, NULL, c.json ? NULL : stdout); /* agent-step.md §3 */
        json_decref(step);
        json_decref(in_flight);
        sp_run_view_free(&v);
    }
    session_close(&s);
    return rc;
}


int cmd_events(int argc, char **argv)
{
    cli c = {.command = "events", .store_use = CLI_STORE_READS};
    session s;
    sp_run_key key;
    int rc = open_one(&c, argc, argv, EVENTS_HELP, &s, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    json_t *events = json_array();
    uint64_t after = 0;
    sp_error err = {0};
    for (;;) {
        sp_event_list page;
        if (sp_store_list_events(s.store, &key, after, SP_STORE_PAGE_MAX, &page, &err) !=
            SP_STORE_OK) {
            json_decref(events);
            rc = session_fail(&s, &err);
            session_close(&s);
            return rc;
        }
        for (size_t i = 0; i < page.n; i++) {
            if (c.json)
                json_array_append_new(events, view_event_json(&page.events[i]));
            else
                view_event_text(stdout, &page.events[i]);
            after = page.events[i].sequence;
        }
        size_t n = page.n;
        sp_event_list_free(&page);
        if (n < SP_STORE_PAGE_MAX)
            break;
    }
    if (c.json)
        cli_print_json(view_agent_events(
            s.store, &key, json_pack("{s:s,s:o}", "runId", key.run_id, "events", events), NULL));
    else
        json_decref(events);
    view_agent_events(s.store, &key, NULL, c.json ? NULL : stdout); /* agent-step.md §3 */
    session_close(&s);
    return EXIT_OK;
}
