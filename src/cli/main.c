/*
 * main.c - the `spore` command: dispatch to subcommands (cli.md). The only
 * place that returns an exit status to the operating system.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "kernel/kernel.h"
#include "wasm/jail.h" /* the hidden `spore __wasm-jail` (runners.md §4) */

#ifndef SPORE_VERSION
#define SPORE_VERSION "0.0.0"
#endif

static const char USAGE[] =
    "usage: spore <command> [options]\n"
    "\n"
    "Durable workflows for agents and automation.\n"
    "\n"
    "Commands:\n"
    "  run <workflow>             start (or resume) a run and work until it parks\n"
    "  start <workflow>           create a run and return\n"
    "  resume <runId>             work on an existing run until it parks\n"
    "  worker                     work on every run until SIGINT/SIGTERM\n"
    "  status <runId>             show a run\n"
    "  list                       list runs\n"
    "  events <runId>             show a run's events and their commits\n"
    "  logs <runId> [<node>]      show what a run's steps kept of stdout and stderr\n"
    "  signal <runId> <name>      deliver a signal\n"
    "  resolve <runId> <invId>    answer an invocation whose outcome is unknown\n"
    "  release <runId>            lift a quarantine\n"
    "  cancel <runId>             cancel a run and stop its running steps (format 0.2)\n"
    "  retry <runId>              try every stuck step of a run again (format 0.2)\n"
    "  step claim|renew|complete|fail|abandon|detach|probe-pid|stop-pid\n"
    "                             external and async steps (spore step --help)\n"
    "  capabilities               what this host can serve\n"
    "  agent classify ...         classify a captured agent step exchange\n"
    "  validate <workflow>        check a workflow without touching a database\n"
    "  build <folder>             seal a workflow folder into one artifact file\n"
    "  inspect <artifact>         show an artifact's manifest and package\n"
    "  graph <workflow> [--run <runId>]\n"
    "                             draw a workflow, coloured by a run's state (svg, png, dot)\n"
    "  ui [--listen <addr:port>]  serve the web view of runs (local; docs/ui.md)\n"
    "  trace <trace.json>...      replay golden kernel traces\n"
    "\n"
    "A <workflow> is a JSON package file, a workflow folder (workflow.dot and\n"
    "settings.json, or the workflow.dot itself) or an artifact (docs/authoring.md).\n"
    "\n"
    "Global options (before or after the command):\n"
    "  --db <path|postgres://...>  the store (default $SPORE_DB, else ./spore.db)\n"
    "  --json                      one JSON object on stdout, errors included\n"
    "  --allow-shared-store        open a SQLite store that other users can read\n"
    "  --help                      this text; `spore <command> --help` for a command\n";

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command COMMANDS[] = {
    {"validate", cmd_validate}, {"trace", cmd_trace},     {"start", cmd_start},
    {"run", cmd_run},           {"resume", cmd_resume},   {"worker", cmd_worker},   {"status", cmd_status},
    {"list", cmd_list},         {"events", cmd_events},   {"signal", cmd_signal},
    {"logs", cmd_logs}, /* step logs (cmd_logs.c) */
    {"resolve", cmd_resolve},   {"release", cmd_release}, {"step", cmd_step},
    {"cancel", cmd_cancel},     {"retry", cmd_retry},
    {"capabilities", cmd_capabilities},
    {"agent", cmd_agent}, /* agent steps (cmd_agent.c) */
    {"graph", cmd_graph}, /* a workflow and a run as a picture (cmd_graph.c) */
    {"ui", cmd_ui},       /* the local web view (cmd_ui.c, src/ui/) */
    {"build", cmd_build},             /* workflow folders into artifacts (cmd_build.c) */
    {"inspect", cmd_inspect_artifact}, /* an artifact's manifest and package (cmd_build.c) */
};

static int print_version(void)
{
    size_t n = 0;
    const sp_kernel_descriptor *d = sp_kernel_describe_all(&n);
    printf("spore %s (kernel", SPORE_VERSION);
    for (size_t i = 0; i < n; i++)
        printf("%s semantics %s for %s", i ? ";" : "", d[i].semantics_version,
               d[i].graph_format_version);
    printf("; codec %s)\n", d[0].codec_version);
    return EXIT_OK;
}

/* A usage error of the command line as a whole (before any command ran):
 * JSON when --json stands anywhere on the line. */
static int line_error(int argc, char **argv, sp_error *err)
{
    cli c = {.command = "spore", .json = cli_json_wanted(argc, argv, NULL)};
    return cli_error(&c, EXIT_USAGE, err);
}

int main(int argc, char **argv)
{
    /* ---- internal: a jailed WebAssembly runner call, never listed in --help ---- */
    if (argc >= 2 && strcmp(argv[1], SP_JAIL_SUBCOMMAND) == 0)
        return argc == 2 ? sp_jail_child_main() : EXIT_USAGE;
    sp_jail_use_self(); /* this binary serves the jail of its runner calls */
    /* ---- end internal ---- */
    sp_error err = {0};
    int at = 0;
    if (cli_parse_leading(argc - 1, argv + 1, &at, &err))
        return line_error(argc - 1, argv + 1, &err);
    const char *name = at + 1 < argc ? argv[at + 1] : NULL;
    if (!name && cli_leading()->help)
        return cli_help(USAGE);
    if (!name) {
        sp_fail(&err, "usage", "no command given (see spore --help)");
        if (cli_leading()->json)
            return line_error(argc - 1, argv + 1, &err);
        fputs(USAGE, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(name, "--version") == 0)
        return print_version();
    if (strcmp(name, "help") == 0)
        return cli_help(USAGE);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(name, COMMANDS[i].name) == 0)
            return COMMANDS[i].run(argc - at - 2, argv + at + 2);
    sp_fail(&err, "usage", "unknown command \"%s\" (see spore --help)", name);
    return line_error(argc - 1, argv + 1, &err);
}
