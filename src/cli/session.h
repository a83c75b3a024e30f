/*
 * session.h - what the store-using subcommands share: opening the store
 * named by --db / SPORE_DB / ./spore.db, building an engine with the worker
 * tuning options, SIGINT/SIGTERM handling, and mapping failures and parked
 * states to exit codes (cli.md §1, §3, §4).
 *
 * Must never print credentials, or exit from anywhere but main().
 */
#ifndef SPORE_CLI_SESSION_H
#define SPORE_CLI_SESSION_H

#include <signal.h>

#include "cli/cli.h"
#include "engine/engine.h"
#include "otel/otel.h"
#include "store/store.h"

typedef struct session {
    cli *c;
    char db[4096];
    char lock_dir[4200];
    sp_store *store;
    sp_engine *engine;
    sp_otel *otel;      /* commands that run steps, with OTEL_* set (docs/tracing.md) */
    bool trace_ended;   /* session_trace_end ran */
} session;

/* Set by the handlers below (on whichever thread the signal lands), read by
 * the engine's thread: a lock-free atomic (engine.h). */
extern atomic_int cli_interrupted;

/* Install SIGINT/SIGTERM handlers that set cli_interrupted. */
void cli_catch_signals(void);

/* Open the store and an engine. Returns 0, or an exit code after printing. */
int session_open(session *s, cli *c);
void session_close(session *s);

/* The run key for a run ID argument, checking that the run exists
 * (run.not-found). Returns 0 or an exit code after printing. */
int session_run_key(session *s, const char *run_id, sp_run_key *key);

/* session_open() and session_run_key() in one: the store, an engine and
 * the key of an existing run; on failure nothing stays open. */
int session_open_run(session *s, cli *c, const char *run_id, sp_run_key *key);
/* cli_begin with `positional` arguments, the first a run ID, then
 * session_open_run: 0, CLI_HELP_SHOWN after --help, or an exit code (the
 * error is reported). */
int session_begin_run(session *s, cli *c, int argc, char **argv, const cli_option *opts,
                      const char *help, int positional, sp_run_key *key);

/* Stop the trace exporter (a bounded flush) and say what it did: a line on
 * stderr when it exported or dropped anything, and the `trace` member of a
 * --json answer ({exported, dropped, droppedQueueFull, droppedExportFailed,
 * droppedUnsent, failedExports}; new reference), NULL when tracing is off
 * or already ended. session_close ends it too. */
json_t *session_trace_end(session *s);

/* Print `err` and return the exit code its code maps to. */
int session_fail(session *s, sp_error *err);

/* Work on `key` until it is terminal or parked, print its status (with
 * `extra` members in JSON, taken) and return the exit code of cli.md §3
 * (cmd_run.c; shared by run, resume and worker --run). */
int cli_drive(session *s, const sp_run_key *key, json_t *extra);

/* Exit code for a parked run (cli.md §3). */
int session_exit_for_park(sp_park park);

/* Parse a decimal millisecond option; usage error on garbage. */
int cli_parse_ms(const char *text, const char *name, uint64_t *out, sp_error *err);

#endif
