/*
 * cmd_step.c - `spore step ...` (cli.md §5, engine.md §9): what external
 * actors and async jobs use. claim / renew / complete / fail / abandon act
 * on the store; detach / probe-pid / stop-pid implement the reference holder
 * handle for detached background processes, so an async command can be
 * written with spore alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/session.h"
#include "cli/views.h"
#include "cli/workflow_file.h"
#include "json/json.h"
#include "runners/pid_handle.h"

static const char HELP[] =
    "usage: spore step <subcommand> ...\n"
    "\n"
    "  claim [<runId>] [--actor <label>] [--holder <json>]\n"
    "        claim the earliest due external step (of one run, for one actor);\n"
    "        prints a token, the input, the declared outcomes and the deadline\n"
    "  renew <token>                       extend the claim's lease (capped at the deadline)\n"
    "  complete <token> --outcome <o> [--output <json>]\n"
    "  fail <token> --error <message> [--code <code>] [--retryable]\n"
    "  abandon <runId>                     stop the run's running step and expire it\n"
    "  detach [--log <file>] -- <argv>...  start a job in its own session; print its handle\n"
    "  probe-pid                           handle on stdin -> {\"holder\":\"alive|dead|unknown\"}\n"
    "  stop-pid                            handle on stdin -> stop the job, {\"stopped\":bool}\n"
    "\n"
    "An undeclared outcome, an output that is not canonical-domain JSON or larger\n"
    "than 64 KiB, or a forged token exit 2 and record nothing. A token whose claim\n"
    "was fenced out (lease expired, abandoned) is refused with lease.lost.\n";

static int usage(cli *c, const char *what)
{
    sp_error err = {0};
    sp_fail(&err, "usage", "%s (see spore step --help)", what);
    return cli_error(c, EXIT_USAGE, &err);
}

static int claim(session *s, cli *c, const char *actor, const char *holder_text)
{
    sp_error err = {0};
    sp_run_key key;
    int checked = c->npositional > 1 ? session_run_key(s, c->positional[1], &key) : 0;
    if (checked) /* a malformed or unknown run ID, like every other command */
        return checked;
    json_t *holder = holder_text ? sp_json_argument("--holder", holder_text, &err) : NULL;
    if (holder_text && !holder)
        return session_fail(s, &err);
    sp_step_claim sc;
    bool claimed = false;
    int rc = sp_engine_step_claim(s->engine, c->npositional > 1 ? c->positional[1] : NULL, actor,
                                  holder, &sc, &claimed, &err);
    json_decref(holder);
    if (rc)
        return session_fail(s, &err);
    if (!claimed) {
        if (c->json)
            cli_print_json(json_pack("{s:b}", "claimed", 0));
        else
            printf("nothing to claim\n");
        return EXIT_OK;
    }
    if (c->json) {
        cli_print_json(json_pack("{s:b,s:s,s:s,s:s,s:s,s:I,s:s,s:s,s:O,s:O,s:O,s:o,s:o}", "claimed",
                                 1, "token", sc.token, "runId", sc.key.run_id, "invocationId",
                                 sc.invocation_id, "attemptId", sc.attempt_id, "attempt",
                                 (json_int_t)sc.attempt, "nodeId", sc.node_id, "actionId",
                                 sc.action_id, "input", sc.input, "outcomes", sc.outcomes,
                                 "instructions", sc.description ? sc.description : json_null(),
                                 "deadlineMs", view_decimal(sc.deadline_ms), "leaseUntilMs",
                                 view_decimal(sc.lease_until_ms)));
    } else {
        char *input = sp_json_encode_alloc(sc.input, NULL, NULL);
        char *outcomes = sp_json_encode_alloc(sc.outcomes, NULL, NULL);
        printf("token      %s\nrun        %s\nnode       %s (attempt %u)\ninput      %s\n"
               "outcomes   %s\ndeadline   %llu\n",
               sc.token, sc.key.run_id, sc.node_id, sc.attempt, input ? input : "?",
               outcomes ? outcomes : "?", (unsigned long long)sc.deadline_ms);
        free(input);
        free(outcomes);
    }
    sp_step_claim_free(&sc);
    return EXIT_OK;
}

static int renew(session *s, cli *c)
{
    sp_error err = {0};
    uint64_t lease = 0;
    if (sp_engine_step_renew(s->engine, c->positional[1], &lease, &err))
        return session_fail(s, &err);
    if (c->json)
        cli_print_json(json_pack("{s:o}", "leaseUntilMs", view_decimal(lease)));
    else
        printf("lease until %llu\n", (unsigned long long)lease);
    return EXIT_OK;
}

static int complete(session *s, cli *c, const char *outcome, const char *output_text)
{
    sp_error err = {0};
    json_t *output = output_text ? sp_json_argument("--output", output_text, &err) : json_null();
    if (!output)
        return session_fail(s, &err);
    int rc = sp_engine_step_complete(s->engine, c->positional[1], outcome, output, &err);
    json_decref(output);
    if (rc)
        return session_fail(s, &err);
    if (c->json)
        cli_print_json(json_pack("{s:b,s:s}", "completed", 1, "outcome", outcome));
    else
        printf("completed: %s\n", outcome);
    return EXIT_OK;
}

static int fail_step(session *s, cli *c, const char *message, const char *code, bool retryable)
{
    sp_error err = {0};
    if (sp_engine_step_fail(s->engine, c->positional[1], message, code, retryable, &err))
        return session_fail(s, &err);
    if (c->json)
        cli_print_json(json_pack("{s:b,s:b}", "failed", 1, "retryable", retryable));
    else
        printf("failed%s\n", retryable ? " (retryable)" : "");
    return EXIT_OK;
}

static int abandon(session *s, cli *c)
{
    sp_run_key key;
    int rc = session_run_key(s, c->positional[1], &key);
    if (rc)
        return rc;
    sp_error err = {0};
    char attempt[SP_ID_LEN + 16];
    if (sp_engine_step_abandon(s->engine, &key, attempt, sizeof attempt, &err))
        return session_fail(s, &err);
    if (c->json)
        cli_print_json(json_pack("{s:s,s:s}", "runId", key.run_id, "abandoned", attempt));
    else
        printf("abandoned %s\n", attempt);
    return EXIT_OK;
}

/* ---- the reference handle ---- */

static json_t *read_handle(cli *c, sp_error *err)
{
    (void)c;
    size_t len;
    char *text = cli_read_file("-", 4096, &len, err);
    json_t *h = text ? sp_json_argument("the handle on stdin", text, err) : NULL;
    free(text);
    return h;
}

static int detach(cli *c, int argc, char **argv, const char *log)
{
    int start = 0;
    while (start < argc && strcmp(argv[start], "--") != 0)
        start++;
    if (start + 1 >= argc)
        return usage(c, "detach needs -- <argv>...");
    sp_error err = {0};
    json_t *h = sp_pid_handle_detach((const char *const *)argv + start + 1, log, &err);
    if (!h)
        return cli_error(c, EXIT_INTERNAL, &err);
    char *text = sp_json_encode_alloc(h, NULL, &err);
    json_decref(h);
    if (!text)
        return cli_error(c, EXIT_INTERNAL, &err);
    printf("%s\n", text); /* the handle itself is the output, also with --json */
    free(text);
    return EXIT_OK;
}

static int probe_pid(cli *c)
{
    sp_error err = {0};
    json_t *h = read_handle(c, &err);
    if (!h)
        return cli_error(c, EXIT_USAGE, &err);
    sp_holder_state st = sp_pid_handle_probe(h);
    json_decref(h);
    printf("{\"holder\":\"%s\"}\n", sp_holder_state_name(st));
    return EXIT_OK;
}

static int stop_pid(cli *c)
{
    sp_error err = {0};
    json_t *h = read_handle(c, &err);
    if (!h)
        return cli_error(c, EXIT_USAGE, &err);
    bool stopped = sp_pid_handle_is(h) && sp_pid_handle_stop(h, 5000);
    json_decref(h);
    printf("{\"stopped\":%s}\n", stopped ? "true" : "false");
    return stopped ? EXIT_OK : EXIT_RUN_FAILED;
}

typedef struct step_args {
    const char *actor, *holder, *outcome, *output, *error, *code, *log;
    bool retryable;
} step_args;

typedef enum step_verb { VERB_NONE, VERB_CLAIM, VERB_RENEW, VERB_COMPLETE, VERB_FAIL, VERB_ABANDON } step_verb;

/* The verb and its argument count, checked before the store is opened. */
static step_verb verb_of(const cli *c, const char *sub)
{
    bool has_arg = c->npositional == 2;
    if (strcmp(sub, "claim") == 0 && c->npositional <= 2)
        return VERB_CLAIM;
    if (strcmp(sub, "renew") == 0 && has_arg)
        return VERB_RENEW;
    if (strcmp(sub, "complete") == 0 && has_arg)
        return VERB_COMPLETE;
    if (strcmp(sub, "fail") == 0 && has_arg)
        return VERB_FAIL;
    if (strcmp(sub, "abandon") == 0 && has_arg)
        return VERB_ABANDON;
    return VERB_NONE;
}

static int dispatch(cli *c, const step_args *a, const char *sub)
{
    step_verb verb = verb_of(c, sub);
    if (verb == VERB_NONE)
        return usage(c, "unknown step subcommand or wrong arguments");
    if (verb == VERB_COMPLETE && !a->outcome)
        return usage(c, "complete needs --outcome");
    if (verb == VERB_FAIL && !a->error)
        return usage(c, "fail needs --error <message>");
    session s;
    int rc = session_open(&s, c);
    if (rc)
        return rc;
    switch (verb) {
    case VERB_CLAIM: rc = claim(&s, c, a->actor, a->holder); break;
    case VERB_RENEW: rc = renew(&s, c); break;
    case VERB_COMPLETE: rc = complete(&s, c, a->outcome, a->output); break;
    case VERB_FAIL: rc = fail_step(&s, c, a->error, a->code, a->retryable); break;
    case VERB_ABANDON: rc = abandon(&s, c); break;
    case VERB_NONE: break;
    }
    session_close(&s);
    return rc;
}

int cmd_step(int argc, char **argv)
{
    cli c = {.command = "step", .store_use = CLI_STORE_ANSWERS,
             .json = cli_leading()->json || cli_json_wanted(argc, argv, NULL)};
    if (argc >= 1 && strcmp(argv[0], "detach") == 0) {
        const char *log = NULL;
        int i = 1;
        if (argc > 2 && strcmp(argv[1], "--log") == 0)
            log = argv[2], i = 3;
        return detach(&c, argc - i, argv + i, log);
    }
    step_args a = {0};
    const cli_option opts[] = {
        {"--actor", true, &a.actor, NULL},     {"--holder", true, &a.holder, NULL},
        {"--outcome", true, &a.outcome, NULL}, {"--output", true, &a.output, NULL},
        {"--error", true, &a.error, NULL},     {"--code", true, &a.code, NULL},
        {"--retryable", false, NULL, &a.retryable}, {NULL, false, NULL, NULL},
    };
    sp_error err = {0};
    if (cli_parse(&c, argc, argv, opts, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    if (c.help || c.npositional == 0)
        return c.help ? cli_help(HELP) : usage(&c, "step needs a subcommand");
    const char *sub = c.positional[0];
    if (strcmp(sub, "probe-pid") == 0)
        return probe_pid(&c);
    if (strcmp(sub, "stop-pid") == 0)
        return stop_pid(&c);
    return dispatch(&c, &a, sub);
}
