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
    "repeating an ID is a no-op (disposition: duplicate).\n";

static const char RESOLVE_HELP[] =
    "usage: spore resolve <runId> <invocationId> (--complete <outcome> [--output <json>] |\n"
    "                     --retry | --fail <message>) [--id <requestId>] [--db <path>] [--json]\n"
    "\n"
    "Answers an invocation whose outcome is unknown (status needs-intervention):\n"
    "--complete records it as done with that outcome, --retry authorizes another\n"
    "attempt, --fail fails it with code operator.failed.\n";

static const char RELEASE_HELP[] =
    "usage: spore release <runId> [--db <path>] [--json]\n"
    "\n"
    "Lifts a run's quarantine so workers coordinate it again. On a run that is\n"
    "not quarantined it succeeds and changes nothing.\n";

static const char *disposition_name(sp_disposition d)
{
    return d == SP_APPLIED ? "applied" : "duplicate";
}

static int prologue(cli *c, int argc, char **argv, const cli_option *opts, const char *help,
                    int positional, session *s, sp_run_key *key)
{
    sp_error err = {0};
    if (cli_parse(c, argc, argv, opts, &err))
        return cli_error(c, EXIT_USAGE, &err);
    if (c->help) {
        cli_help(help);
        return -1;
    }
    if (c->npositional != positional) {
        sp_fail(&err, "usage", "wrong number of arguments (see spore %s --help)", c->command);
        return cli_error(c, EXIT_USAGE, &err);
    }
    int rc = session_open(s, c);
    if (rc)
        return rc;
    if ((rc = session_run_key(s, c->positional[0], key)))
        session_close(s);
    return rc;
}

static void fresh_id(const char *prefix, char *out, size_t n)
{
    char hex[17];
    sp_random_hex(hex, 8);
    snprintf(out, n, "%s%s", prefix, hex);
}

int cmd_signal(int argc, char **argv)
{
    cli c = {.command = "signal", .store_must_exist = true};
    const char *outcome = NULL, *data_text = NULL, *id = NULL;
    const cli_option opts[] = {{"--outcome", true, &outcome, NULL},
                               {"--data", true, &data_text, NULL},
                               {"--id", true, &id, NULL},
                               {NULL, false, NULL, NULL}};
    session s;
    sp_run_key key;
    int rc = prologue(&c, argc, argv, opts, SIGNAL_HELP, 2, &s, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    sp_error err = {0};
    json_t *data = data_text ? sp_json_argument("--data", data_text, &err) : json_null();
    char message_id[64];
    if (!id)
        fresh_id("msg_", message_id, sizeof message_id);
    sp_disposition d;
    if (!data || sp_engine_signal(s.engine, &key, id ? id : message_id, c.positional[1], outcome,
                                  data, &d, &err))
        rc = session_fail(&s, &err);
    else if (c.json)
        cli_print_json(json_pack("{s:s,s:s,s:s}", "runId", key.run_id, "messageId",
                                 id ? id : message_id, "disposition", disposition_name(d)));
    else
        printf("signal %s to %s: %s\n", c.positional[1], key.run_id, disposition_name(d));
    json_decref(data);
    session_close(&s);
    return rc;
}

int cmd_resolve(int argc, char **argv)
{
    cli c = {.command = "resolve", .store_must_exist = true};
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
    int rc = prologue(&c, argc, argv, opts, RESOLVE_HELP, 2, &s, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    sp_error err = {0};
    int choices = (complete != NULL) + retry + (fail != NULL);
    if (choices != 1 || (output_text && !complete)) {
        sp_fail(&err, "usage", "give exactly one of --complete, --retry, --fail (--output only "
                               "with --complete)");
        session_close(&s);
        return cli_error(&c, EXIT_USAGE, &err);
    }
    json_t *output = output_text ? sp_json_argument("--output", output_text, &err) : json_null();
    char request_id[64];
    if (!id)
        fresh_id("req_", request_id, sizeof request_id);
    sp_resolution r = complete ? SP_RESOLVE_COMPLETE : retry ? SP_RESOLVE_RETRY : SP_RESOLVE_FAIL;
    sp_disposition d;
    if (!output || sp_engine_resolve(s.engine, &key, id ? id : request_id, c.positional[1], r,
                                     complete, output, fail, &d, &err))
        rc = session_fail(&s, &err);
    else if (c.json)
        cli_print_json(json_pack("{s:s,s:s,s:s,s:s}", "runId", key.run_id, "invocationId",
                                 c.positional[1], "requestId", id ? id : request_id,
                                 "disposition", disposition_name(d)));
    else
        printf("resolve %s of %s: %s\n", c.positional[1], key.run_id, disposition_name(d));
    json_decref(output);
    session_close(&s);
    return rc;
}

int cmd_release(int argc, char **argv)
{
    cli c = {.command = "release", .store_must_exist = true};
    session s;
    sp_run_key key;
    int rc = prologue(&c, argc, argv, NULL, RELEASE_HELP, 1, &s, &key);
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
