/*
 * cmd_signal.c - the commands that append an event or lift a quarantine:
 * `spore signal`, `spore resolve`, `spore release` (cli.md §2). Each is one
 * idempotent store request: repeating an ID is a no-op (`duplicate`).
 */
#include <stdio.h>
#include <string.h>

#include "base/random.h"
#include "cli/session.h"
#include "cli/workflow_file.h"

static const char SIGNAL_HELP[] =
    "usage: spore signal <runId> <name> [--outcome <o>] [--data <json>] [--id <messageId>]\n"
    "                    [--db <path>] [--json]\n"
    "\n"
    "Delivers a signal to a run. Without --id a fresh msg_<16 hex> is used;\n"
    "repeating an ID is a no-op (disposition: duplicate).\n"
    "\n"
    "Checked against the run first; nothing is recorded and the exit is 2 for a\n"
    "finished run (run.terminal), a name no await-signal node of the workflow\n"
    "waits for (signal.unknown-name) or an outcome none of them routes\n"
    "(signal.outcome-unrouted; without --outcome the outcome is `received`).\n"
    "An accepted signal is `delivered` (the run waits for it now) or `buffered`\n"
    "(taken when the run reaches a wait for it); `spore resume <runId>` goes on.\n";

static const char RESOLVE_HELP[] =
    "usage: spore resolve <runId> <invocationId> (--complete <outcome> [--output <json>] |\n"
    "                     --retry | --fail <message>) [--id <requestId>] [--db <path>] [--json]\n"
    "\n"
    "Answers an invocation whose outcome is unknown (status needs-intervention):\n"
    "--complete records it as done with that outcome, --retry authorizes another\n"
    "attempt, --fail fails it with code operator.failed.\n"
    "\n"
    "Checked against the run first; nothing is recorded and the exit is 2 for a\n"
    "finished run (run.terminal), or an invocation that is not the run's\n"
    "outcome-unknown one, is already answered, or an --complete outcome its\n"
    "action does not declare (resolve.not-applicable, details.reason says which).\n"
    "Then `spore resume <runId>` goes on.\n";

static const char RELEASE_HELP[] =
    "usage: spore release <runId> [--db <path>] [--json]\n"
    "\n"
    "Lifts a run's quarantine so workers coordinate it again. On a run that is\n"
    "not quarantined it succeeds and changes nothing.\n";

static const char *disposition_name(sp_disposition d)
{
    return d == SP_APPLIED ? "applied" : "duplicate";
}

static void fresh_id(const char *prefix, char *out, size_t n)
{
    char hex[17];
    sp_random_hex(hex, 8);
    snprintf(out, n, "%s%s", prefix, hex);
}

static const char *delivery_name(sp_signal_delivery d)
{
    return d == SP_SIGNAL_DELIVERED ? "delivered" : "buffered";
}

static void print_signal(const cli *c, const sp_run_key *key, const char *name,
                         const char *message_id, const sp_signal_answer *a)
{
    bool applied = a->disposition == SP_APPLIED;
    char next[4400];
    cli_next_command(c, next, sizeof next, "resume %s", key->run_id);
    if (c->json) {
        json_t *out = json_pack("{s:s,s:s,s:s}", "runId", key->run_id, "messageId", message_id,
                                "disposition", disposition_name(a->disposition));
        if (out && applied) {
            json_object_set_new(out, "delivery", json_string(delivery_name(a->delivery)));
            json_object_set_new(out, "next", json_string(next));
        }
        cli_print_json(out);
        return;
    }
    if (!applied) {
        printf("signal %s to %s: duplicate\n", name, key->run_id);
        return;
    }
    if (a->delivery == SP_SIGNAL_DELIVERED)
        printf("signal %s to %s: delivered (the run waits for it at %s)\n", name, key->run_id,
               a->node_id);
    else
        printf("signal %s to %s: buffered (the run is %s%s%s; it takes the signal when it "
               "reaches an await-signal node for %s)\n",
               name, key->run_id, a->status, a->node_id[0] ? " at " : "", a->node_id, name);
    printf("next: %s   (or a running spore worker takes it)\n", next);
}

int cmd_signal(int argc, char **argv)
{
    cli c = {.command = "signal", .store_use = CLI_STORE_ANSWERS};
    const char *outcome = NULL, *data_text = NULL, *id = NULL;
    const cli_option opts[] = {{"--outcome", true, &outcome, NULL},
                               {"--data", true, &data_text, NULL},
                               {"--id", true, &id, NULL},
                               {NULL, false, NULL, NULL}};
    session s;
    sp_run_key key;
    int rc = session_begin_run(&s, &c, argc, argv, opts, SIGNAL_HELP, 2, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    sp_error err = {0};
    json_t *data = data_text ? sp_json_argument("--data", data_text, &err) : json_null();
    char message_id[64];
    if (!id)
        fresh_id("msg_", message_id, sizeof message_id);
    sp_signal_answer answer;
    if (!data || sp_engine_signal(s.engine, &key, id ? id : message_id, c.positional[1], outcome,
                                  data, &answer, &err))
        rc = session_fail(&s, &err);
    else
        print_signal(&c, &key, c.positional[1], id ? id : message_id, &answer);
    json_decref(data);
    session_close(&s);
    return rc;
}

static void print_resolve(const cli *c, const sp_run_key *key, const char *invocation_id,
                          const char *request_id, sp_disposition d)
{
    char next[4400];
    cli_next_command(c, next, sizeof next, "resume %s", key->run_id);
    if (c->json) {
        json_t *out = json_pack("{s:s,s:s,s:s,s:s}", "runId", key->run_id, "invocationId",
                                invocation_id, "requestId", request_id, "disposition",
                                disposition_name(d));
        if (out && d == SP_APPLIED)
            json_object_set_new(out, "next", json_string(next));
        cli_print_json(out);
        return;
    }
    printf("resolve %s of %s: %s\n", invocation_id, key->run_id, disposition_name(d));
    if (d == SP_APPLIED)
        printf("next: %s   (or a running spore worker takes it)\n", next);
}

int cmd_resolve(int argc, char **argv)
{
    cli c = {.command = "resolve", .store_use = CLI_STORE_ANSWERS};
    const char *complete = NULL, *output_text = NULL, *fail = NULL, *id = NULL;
    bool retry = false;
    const cli_option opts[] = {{"--complete", true, &complete, NULL},
                               {"--output", true, &output_text, NULL},
                               {"--retry", false, NULL, &retry},
                               {"--fail", true, &fail, NULL},
                               {"--id", true, &id, NULL},
                               {NULL, false, NULL, NULL}};
    session s;
    sp_run_key key;
    sp_error err = {0};
    int rc = cli_begin(&c, argc, argv, opts, RESOLVE_HELP, 2, "a run ID and an invocation ID");
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    int choices = (complete != NULL) + retry + (fail != NULL);
    if (choices != 1 || (output_text && !complete)) {
        sp_fail(&err, "usage", "give exactly one of --complete, --retry, --fail (--output only "
                               "with --complete)");
        return cli_error(&c, EXIT_USAGE, &err);
    }
    if ((rc = session_open_run(&s, &c, c.positional[0], &key)))
        return rc;
    json_t *output = output_text ? sp_json_argument("--output", output_text, &err) : json_null();
    char request_id[64];
    if (!id)
        fresh_id("req_", request_id, sizeof request_id);
    sp_resolution r = complete ? SP_RESOLVE_COMPLETE : retry ? SP_RESOLVE_RETRY : SP_RESOLVE_FAIL;
    sp_disposition d;
    if (!output || sp_engine_resolve(s.engine, &key, id ? id : request_id, c.positional[1], r,
                                     complete, output, fail, &d, &err))
        rc = session_fail(&s, &err);
    else
        print_resolve(&c, &key, c.positional[1], id ? id : request_id, d);
    json_decref(output);
    session_close(&s);
    return rc;
}

int cmd_release(int argc, char **argv)
{
    cli c = {.command = "release", .store_use = CLI_STORE_ANSWERS};
    session s;
    sp_run_key key;
    int rc = session_begin_run(&s, &c, argc, argv, NULL, RELEASE_HELP, 1, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    sp_error err = {0};
    sp_disposition d;
    if (sp_engine_release(s.engine, &key, &d, &err))
        rc = session_fail(&s, &err);
    else if (c.json)
        cli_print_json(json_pack("{s:s,s:s}", "runId", key.run_id, "disposition",
                                 disposition_name(d)));
    else
        printf("release %s: %s\n", key.run_id, disposition_name(d));
    session_close(&s);
    return rc;
}
