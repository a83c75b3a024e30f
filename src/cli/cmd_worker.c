/*
 * cmd_worker.c - `spore worker` (cli.md §2, §4): serve every run until
 * SIGINT/SIGTERM (exit 130), or with --run <id> --until-parked drive one run
 * exactly like `spore run`.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/session.h"

static const char HELP[] =
    "usage: spore worker [--run <runId> --until-parked] [--db <path>] [--json]\n"
    "                    [--lease-ms N] [--heartbeat-ms N] [--poll-ms N] [--grace-ms N]\n"
    "                    [--store-retry-ms N] [--concurrency N]\n"
    "\n"
    "Without flags: works on every run of the database until SIGINT/SIGTERM, then\n"
    "stops claiming, lets in-flight steps finish within the grace period and exits\n"
    "130. Several workers may share one database. A store that fails (read-only,\n"
    "full, unreachable) is reported on stderr within a second and every 10 s while\n"
    "it fails, retried (100 ms doubling to 5 s) for as long as it takes, and\n"
    "reported once more when it works again.\n"
    "With --run and --until-parked (only together): works on one run until it is\n"
    "terminal or parked, with the exit codes of `spore run`; a store that keeps\n"
    "failing for --store-retry-ms (default 60000) ends it with exit 10.\n";

static void serve_progress(void *ctx, uint32_t in_flight, uint64_t turns, uint64_t claimed,
                           uint64_t elapsed_ms)
{
    (void)ctx;
    printf("\r\033[Kserving: %u in flight, %llu steps claimed, %llu transitions, %llus", in_flight,
           (unsigned long long)claimed, (unsigned long long)turns,
           (unsigned long long)(elapsed_ms / 1000));
    fflush(stdout);
}

int cmd_worker(int argc, char **argv)
{
    cli c = {.command = "worker"};
    const char *run_id = NULL;
    bool until_parked = false;
    const cli_option opts[] = {
        {"--run", true, &run_id, NULL},
        {"--until-parked", false, NULL, &until_parked},
        {NULL, false, NULL, NULL},
    };
    sp_error err = {0};
    if (cli_parse(&c, argc, argv, opts, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    if (c.help)
        return cli_help(HELP);
    if (c.npositional != 0 || (run_id != NULL) != until_parked) {
        sp_fail(&err, "usage", "--run and --until-parked go together (see spore worker --help)");
        return cli_error(&c, EXIT_USAGE, &err);
    }
    if (run_id)
        c.store_use = CLI_STORE_DRIVES; /* one existing run: never a new store */
    session s;
    int rc = session_open(&s, &c);
    if (rc)
        return rc;
    if (run_id) {
        sp_run_key key;
        rc = session_run_key(&s, run_id, &key);
        if (rc == 0)
            rc = cli_drive(&s, &key, NULL);
        session_close(&s);
        return rc;
    }
    cli_catch_signals();
    if (!c.json && isatty(STDOUT_FILENO)) {
        printf("worker %s serving %s (Ctrl-C to stop)\n", sp_engine_worker_id(s.engine),
               sp_store_location(s.store));
        sp_engine_set_serve_progress(s.engine, serve_progress, NULL);
    }
    if (sp_engine_serve(s.engine, &err)) {
        rc = session_fail(&s, &err);
        session_close(&s);
        return rc;
    }
    json_t *trace = session_trace_end(&s);
    if (c.json) {
        json_t *out = json_pack("{s:b,s:s}", "interrupted", 1, "workerId",
                                sp_engine_worker_id(s.engine));
        if (out && trace)
            json_object_set(out, "trace", trace);
        cli_print_json(out);
    } else {
        if (isatty(STDOUT_FILENO))
            printf("\n");
        fprintf(stderr, "spore: worker stopped\n");
    }
    json_decref(trace);
    session_close(&s);
    return EXIT_INTERRUPTED;
}
