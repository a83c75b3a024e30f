/*
 * cmd_cancel.c - the commands of format 0.2 that end or unstick a run
 * (docs/format-0.2.md, docs/cli.md): `spore cancel` (run.cancel, running
 * steps stopped) and `spore retry` (every stuck step tried again).
 *
 * Must never record anything for a refused request, or say a run was
 * cancelled before its kernel took the cancel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/random.h"
#include "cli/session.h"

static const char CANCEL_HELP[] =
    "usage: spore cancel <runId> [--reason <text>] [--id <requestId>] [--db <path>] [--json]\n"
    "\n"
    "Cancels a run of a spore.workflow/0.2 workflow: the run becomes `cancelled`\n"
    "and every step it was running is stopped (a command's whole process group,\n"
    "an async step's stop hook, a component's stop, an agent's sandbox; an\n"
    "external step's token stops working). The worker serving the run stops its\n"
    "steps at once; without one, this command takes the cancel itself.\n"
    "--reason (at most 1 KiB) becomes the run's error message (run.cancelled).\n"
    "On a run that has already ended nothing changes (disposition\n"
    "already-terminal, exit 0). A 0.1 workflow cannot be cancelled\n"
    "(run.cancel-unsupported, exit 2). Repeating an --id is a no-op (duplicate).\n";

static const char RETRY_HELP[] =
    "usage: spore retry <runId> [--id <requestId>] [--db <path>] [--json]\n"
    "\n"
    "Tries every stuck step of a run again (format 0.2: a step that failed with\n"
    "no `failed` route is stuck, and the run needs intervention): each gets a new\n"
    "attempt at once with its recorded input; everything already done stays\n"
    "done. The same as `spore resolve <runId> <invocationId> --retry` for each.\n"
    "A run with no stuck step answers run.nothing-to-retry (exit 2). Then\n"
    "`spore resume <runId>` (or a running worker) goes on.\n";

/* How long `cancel` waits for the run's own worker before taking it. */
#define CANCEL_WAIT_MS 1000

static void fresh_id(const char *prefix, char *out, size_t n)
{
    char hex[17];
    sp_random_hex(hex, 8);
    snprintf(out, n, "%s%s", prefix, hex);
}

static void requested_by(char *out, size_t n)
{
    const char *user = getenv("USER");
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = 0;
    snprintf(out, n, "%s@%s", user && *user ? user : "uid", host[0] ? host : "localhost");
}

static const char *cancel_disposition(const sp_cancel_answer *a)
{
    if (a->already_terminal)
        return "already-terminal";
    return a->disposition == SP_APPLIED ? "applied" : "duplicate";
}

static void print_cancel(const cli *c, const sp_run_key *key, const char *id,
                         const sp_cancel_answer *a)
{
    if (c->json) {
        cli_print_json(json_pack("{s:s,s:s,s:s,s:s}", "runId", key->run_id, "requestId", id,
                                 "disposition", cancel_disposition(a), "status", a->status));
        return;
    }
    if (a->already_terminal)
        printf("cancel %s: the run had already ended (%s); nothing changed\n", key->run_id,
               a->status);
    else if (a->applied)
        printf("cancel %s: %s; its running steps are being stopped\n", key->run_id, a->status);
    else
        printf("cancel %s: recorded; the run (%s) takes it at its next turn\n", key->run_id,
               a->status);
}

int cmd_cancel(int argc, char **argv)
{
    cli c = {.command = "cancel", .store_use = CLI_STORE_ANSWERS};
    const char *reason = NULL, *id = NULL;
    const cli_option opts[] = {{"--reason", true, &reason, NULL},
                               {"--id", true, &id, NULL},
                               {NULL, false, NULL, NULL}};
    session s;
    sp_run_key key;
    int rc = session_begin_run(&s, &c, argc, argv, opts, CANCEL_HELP, 1, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    char fresh[64], by[128];
    fresh_id("req_", fresh, sizeof fresh);
    requested_by(by, sizeof by);
    sp_cancel_answer a;
    sp_error err = {0};
    if (sp_engine_cancel(s.engine, &key, id ? id : fresh, reason ? reason : "cancelled", by,
                         CANCEL_WAIT_MS, &a, &err))
        rc = session_fail(&s, &err);
    else
        print_cancel(&c, &key, id ? id : fresh, &a);
    session_close(&s);
    return rc;
}

int cmd_retry(int argc, char **argv)
{
    cli c = {.command = "retry", .store_use = CLI_STORE_ANSWERS};
    const char *id = NULL;
    const cli_option opts[] = {{"--id", true, &id, NULL}, {NULL, false, NULL, NULL}};
    session s;
    sp_run_key key;
    int rc = session_begin_run(&s, &c, argc, argv, opts, RETRY_HELP, 1, &key);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    char fresh[64], next[4400];
    fresh_id("req_", fresh, sizeof fresh);
    size_t count = 0;
    sp_error err = {0};
    if (sp_engine_retry(s.engine, &key, id ? id : fresh, &count, &err)) {
        rc = session_fail(&s, &err);
    } else {
        cli_next_command(&c, next, sizeof next, "resume %s", key.run_id);
        if (c.json)
            cli_print_json(json_pack("{s:s,s:s,s:I,s:s}", "runId", key.run_id, "requestId",
                                     id ? id : fresh, "retried", (json_int_t)count, "next", next));
        else
            printf("retry %s: %zu stuck step%s tried again\nnext: %s   (or a running spore "
                   "worker goes on)\n",
                   key.run_id, count, count == 1 ? "" : "s", next);
    }
    session_close(&s);
    return rc;
}
