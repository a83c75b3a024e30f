/*
 * cmd_resume.c - `spore resume <runId>`: work on an existing run until it is
 * terminal or parked, without the workflow file (the store holds its
 * package), with the exit codes of `spore run`.
 *
 * Must never create a store or a run: an unknown run is run.not-found.
 */
#include <stdio.h>

#include "cli/session.h"

static const char HELP[] =
    "usage: spore resume <runId> [--db <path>] [--json] [--lease-ms N] [--heartbeat-ms N]\n"
    "                    [--poll-ms N] [--grace-ms N] [--store-retry-ms N] [--concurrency N]\n"
    "                    [--max-wait D]\n"
    "\n"
    "Works on an existing run until it is terminal or parked, exactly like\n"
    "`spore run` with the run's start key, but without the workflow file: the\n"
    "store holds the workflow the run started with. Use it after `spore signal`,\n"
    "`spore resolve` or `spore release`, or after a crash.\n"
    "\n"
    "Exit: 0 completed, 1 failed, 3 waiting for a signal, 4 needs intervention,\n"
    "5 quarantined, 6 waiting for an async or external step, 7 waiting for a timer\n"
    "due beyond --max-wait (default 5m), 8 cancelled, 10 store or internal error,\n"
    "130 interrupted.\n";

int cmd_resume(int argc, char **argv)
{
    cli c = {.command = "resume", .store_use = CLI_STORE_DRIVES};
    session s;
    sp_run_key key;
    int rc = cli_begin(&c, argc, argv, NULL, HELP, 1, "one run ID");
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    if ((rc = session_open_run(&s, &c, c.positional[0], &key)))
        return rc;
    rc = cli_drive(&s, &key, NULL);
    session_close(&s);
    return rc;
}
