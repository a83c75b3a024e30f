/*
 * cli.h - what the `spore` subcommands share: option parsing, exit codes,
 * error and JSON output (cli.md §1-3).
 *
 * What it must never do: print an error without its code, write JSON
 * without "format": "spore.cli/0.1", or exit from anywhere but main().
 */
#ifndef SPORE_CLI_CLI_H
#define SPORE_CLI_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

enum {
    EXIT_OK = 0,
    EXIT_RUN_FAILED = 1,
    EXIT_USAGE = 2,
    EXIT_WAITING = 3,
    EXIT_INTERVENTION = 4,
    EXIT_QUARANTINED = 5,
    EXIT_ASYNC = 6,
    EXIT_TIMER = 7,     /* waiting for a timer due beyond --max-wait (format 0.2) */
    EXIT_CANCELLED = 8, /* the run was cancelled (format 0.2) */
    EXIT_INTERNAL = 10,
    EXIT_INTERRUPTED = 130,
};

#define CLI_FORMAT "spore.cli/0.1"
#define CLI_MAX_POSITIONAL 1024 /* `spore trace` of every golden trace at once */
/* The code of an option or argument whose value is not acceptable (a bad
 * number, an empty --db, a malformed run ID); `usage` stays the code of a
 * command line of the wrong shape (unknown command or option, wrong count). */
#define CLI_INVALID_VALUE "usage.invalid-value"

/* What a command does with the store: it decides whether a missing store
 * is created, whether a read-only one will do, and whether the engine takes
 * part in fast takeover (the worker lock directory). */
typedef enum cli_store_use {
    CLI_STORE_RUNS = 0,     /* start, run, worker: creates the store, runs steps */
    CLI_STORE_DRIVES,       /* resume, worker --run: an existing store, runs steps */
    CLI_STORE_ANSWERS,      /* signal, resolve, release, step: writes an existing store */
    CLI_STORE_READS,        /* status, list, events: reads an existing store */
} cli_store_use;

typedef struct cli_option {
    const char *name;  /* "--key" */
    bool takes_value;
    const char **value; /* set when takes_value */
    bool *flag;         /* set when !takes_value */
} cli_option;

typedef struct cli {
    const char *command;
    bool json;
    bool help;
    const char *db;
    const char *lease_ms, *heartbeat_ms, *poll_ms, *grace_ms, *concurrency, *max_wait;
    const char *store_retry_ms; /* run: how long a failing store is retried */
    bool allow_shared_store;    /* open a store that other users can read */
    cli_store_use store_use;    /* set by the command */
    char *positional[CLI_MAX_POSITIONAL];
    int npositional;
} cli;

/* Parse argv (after the subcommand) with the command's own options plus the
 * global ones (--json, --db, --help, worker tuning), which may also stand
 * before the command (cli_parse_leading). usage error on unknown options;
 * c->json is set before any error when --json stands anywhere. */
int cli_parse(cli *c, int argc, char **argv, const cli_option *opts, sp_error *err);

/* What cli_begin() returns after printing a command's help: the command
 * returns EXIT_OK. */
#define CLI_HELP_SHOWN (-1)

/* cli_begin's `nargs` of a command that checks its own count. */
#define CLI_ANY_ARGS (-1)

/* The start every command shares: parse with its options, print its help on
 * --help (CLI_HELP_SHOWN), check that it got `nargs` positional arguments
 * (usage error "<command> takes <takes>"; CLI_ANY_ARGS: any number); 0 to go
 * on, else the exit code after printing the error. */
int cli_begin(cli *c, int argc, char **argv, const cli_option *opts, const char *help, int nargs,
              const char *takes);

/* main(): the global options before the command (`spore --db x --json list`);
 * *command_index is the index of the command word in argv. */
int cli_parse_leading(int argc, char **argv, int *command_index, sp_error *err);

/* The global options cli_parse_leading() found (for commands with their own
 * parser, and for main's own errors). */
const cli *cli_leading(void);

/* Whether --json stands anywhere in argv before "--" (not as another
 * option's value); `own` are the command's options, may be NULL. */
bool cli_json_wanted(int argc, char **argv, const cli_option *own);

/* Print `err` (text on stderr, or JSON on stdout) and return `exit_code`. */
int cli_error(const cli *c, int exit_code, sp_error *err);

/* Print a JSON object with "format" added, one line on stdout; takes ownership. */
void cli_print_json(json_t *obj);

/* The same on another stream (progress and store-fault reports on stderr). */
void cli_print_json_to(FILE *out, json_t *obj);

/* The command a person runs next, for answers that say how to go on:
 * "spore <fmt...>" plus the --db the command line named (a SQLite path,
 * quoted for the shell when needed; never a postgres:// URL, which may hold
 * a password). Truncated to fit. */
void cli_next_command(const cli *c, char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Print a command's help text and return 0. */
int cli_help(const char *text);

/* Read a whole file with a size bound (file.unreadable, file.too-large). */
char *cli_read_file(const char *path, size_t limit, size_t *len, sp_error *err);

/* The exit code for an error code (usage/validation 2, store/internal 10). */
int cli_exit_for(const char *code);

/* Subcommands. */
int cmd_validate(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_logs(int argc, char **argv); /* spore logs (cmd_logs.c) */
int cmd_signal(int argc, char **argv);
int cmd_resolve(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_retry(int argc, char **argv);
int cmd_step(int argc, char **argv);
int cmd_capabilities(int argc, char **argv);
int cmd_agent(int argc, char **argv); /* spore agent classify (cmd_agent.c) */
int cmd_graph(int argc, char **argv); /* spore graph (cmd_graph.c) */
int cmd_ui(int argc, char **argv);    /* spore ui, the web view (cmd_ui.c) */
int cmd_build(int argc, char **argv);            /* spore build (cmd_build.c) */
int cmd_inspect_artifact(int argc, char **argv); /* spore inspect (cmd_build.c) */

#endif
