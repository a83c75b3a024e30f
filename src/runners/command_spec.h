/*
 * command_spec.h - the fields of a `command` action (engine.md §5): argv,
 * cwd, env, timeoutMs, output, exitOutcomes, and secrets (files the step
 * reads through <NAME>_FILE; docs/workflows.md).
 *
 * What it is for: one parser used by `validate`/`start` (to reject a bad
 * action up front) and by the command runner (which parses again at run time
 * and reports `command.invalid` if that fails).
 *
 * What it must never do: accept something that cannot be executed as written
 * (a NUL byte in an argument, an empty argv, an exit outcome the action does
 * not declare), or run anything.
 */
#ifndef SPORE_RUNNERS_COMMAND_SPEC_H
#define SPORE_RUNNERS_COMMAND_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "runners/runner.h"

typedef enum sp_command_output {
    SP_OUTPUT_TEXT,
    SP_OUTPUT_JSON,
    SP_OUTPUT_NONE,
    SP_OUTPUT_RESULT,
} sp_command_output;

typedef struct sp_exit_outcome {
    int code;            /* 0..255 */
    const char *outcome; /* borrowed from the action */
} sp_exit_outcome;

struct sp_async_spec;


typedef struct sp_command_spec {
    const char **argv; /* NULL-terminated; strings borrowed from the action */
    size_t argc;
    const char *cwd;   /* NULL = "." */
    const char **env;  /* "NAME" / "value" pairs, NULL-terminated; borrowed */
    size_t nenv;
    bool has_timeout;
    uint64_t timeout_ms;
    sp_command_output output;
    sp_exit_outcome *exits;
    size_t nexits;
    struct sp_async_spec *async; /* owned; NULL for a synchronous command */
    struct sp_secret_ref *secrets; /* owned array of entries borrowed from the action
                                      (agent/action.h); a relative file is relative to
                                      the engine's base directory */
    size_t nsecrets;
} sp_command_spec;

#define SP_COMMAND_ARGV_MAX 4096
#define SP_COMMAND_ENV_MAX 1024
#define SP_COMMAND_SECRET_NAME_MAX 64

/* Parse `action` (kept alive by the caller). action.invalid on error. */
int sp_command_spec_parse(const char *action_id, const json_t *action, sp_command_spec *out,
                          sp_error *err);
void sp_command_spec_free(sp_command_spec *spec);

/* Parse the inside of a command-form hook {argv, cwd?, env?, timeoutMs?}
 * (engine.md §9); `hook` is kept alive by the caller. action.invalid. */
int sp_command_hook_parse(const char *action_id, const json_t *hook, sp_command_spec *out,
                          sp_error *err);

struct sp_runner_ctx;
struct sp_proc_result;

typedef struct sp_command_limits {
    uint64_t default_timeout_ms; /* when the spec has none; 0 = none */
    size_t stdout_max;           /* 0 = the runner's default (64 KiB) */
    size_t log_ring;             /* keep the last this many bytes of stdout and of
                                    stderr (step logs); 0 = stderr's 4 KiB tail only */
} sp_command_limits;

/* Run a parsed command (an action or a hook) to its end with the runner's
 * environment (engine env + spec env + SPORE_* identity + <NAME>_FILE of
 * each secret), cwd rules and
 * process-group supervision (command.c). -1 only when out of memory (then
 * `res` holds nothing to free). */
int sp_command_exec(const struct sp_runner_ctx *ctx, const sp_command_spec *spec,
                    const char *input, size_t input_len, const sp_command_limits *limits,
                    struct sp_proc_result *res);

/* A result document {"outcome","output"} (Success) or
 * {"error":{"code","message"},"retryable":bool} (Failure) into `out`; false
 * when `doc` has neither shape. */
struct sp_activity_output;
bool sp_command_result_value(const json_t *doc, struct sp_activity_output *out);

/* Turn a Success whose outcome `action` does not declare into the
 * non-retryable Failure command.undeclared-outcome. */
void sp_command_check_declared(const char *action_id, const json_t *action,
                               struct sp_activity_output *out);

/* The declared outcome for an exit code, or NULL. */
const char *sp_command_exit_outcome(const sp_command_spec *spec, int code);

/* ---- command-form hooks of a held async step (engine.md §9), for command
 * and component actions alike (command.c) ----
 *
 * Every hook gets the handle on stdin.
 * - probe: exit 0 with {"holder": "alive" | "dead" | "unknown"}; anything
 *   else, a timeout (default 10 s) or other output means unknown.
 * - watch: blocks until the job ends; exit 0 with {"outcome","output"} or
 *   {"error":{"code","message"},"retryable":bool} is the step's result (an
 *   undeclared outcome of `action` becomes command.undeclared-outcome);
 *   anything else means the watch lost sight of the job.
 * - stop: exit 0 means stopped; default timeout 10 s.
 * They never turn an unclear answer into `dead`. */
sp_holder_state sp_command_hook_probe(const struct sp_runner_ctx *ctx, const sp_command_spec *hook,
                                      const json_t *handle);
bool sp_command_hook_watch(const struct sp_runner_ctx *ctx, const sp_command_spec *hook,
                           const char *action_id, const json_t *action, const json_t *handle,
                           struct sp_activity_output *out);
bool sp_command_hook_stop(const struct sp_runner_ctx *ctx, const sp_command_spec *hook,
                          const json_t *handle);

#endif
