/*
 * registry.h - action kinds and the runners that serve them (engine.md §5).
 *
 * What it is for: mapping an action's `kind` to the runner that validates and
 * executes it. The built-in registry holds the kinds implemented so far.
 *
 * What it must never do: guess a runner for an unknown kind, or let an
 * action through validation that its runner would refuse at run time.
 */
#ifndef SPORE_RUNNERS_REGISTRY_H
#define SPORE_RUNNERS_REGISTRY_H

#include <jansson.h>

#include "base/error.h"
#include "runners/runner.h"

typedef struct sp_runner {
    const char *kind;
    /* Check an action of this kind; action.invalid with a message on error. */
    int (*validate)(const char *action_id, const json_t *action, sp_error *err);
    /* Execute one attempt: fills `out` (release with sp_activity_output_free)
     * and returns 0; -1 only when out of memory left `out` without its error.
     * `input` NULL means null. Returns promptly once ctx->stop fires. */
    int (*run)(const sp_runner_ctx *ctx, const char *action_id, const json_t *action,
               const json_t *input, sp_activity_output *out);
    /* External kinds are never claimed by a worker: an actor claims them
     * with `spore step claim` (engine.md §9). */
    bool external;
    /* The kind can be held asynchronously (engine.md §9). */
    bool async;
} sp_runner;

/* The built-in runners' entry points (command.c, native.c, external.c). */
int sp_external_validate(const char *action_id, const json_t *action, sp_error *err);
int sp_external_run(const sp_runner_ctx *ctx, const char *action_id, const json_t *action,
                    const json_t *input, sp_activity_output *out);
int sp_command_run(const sp_runner_ctx *ctx, const char *action_id, const json_t *action,
                   const json_t *input, sp_activity_output *out);
int sp_native_run(const sp_runner_ctx *ctx, const char *action_id, const json_t *action,
                  const json_t *input, sp_activity_output *out);

/* action.invalid naming the first member of `obj` not in `known` (NULL-
 * terminated); `what` says what obj is ("a command action"). */
int sp_action_check_members(const char *id, const json_t *obj, const char *const *known,
                            const char *what, sp_error *err);

/* The runner for `kind`, or NULL when this build has none. */
const sp_runner *sp_runner_find(const char *kind);

/* The kinds this build can run, NULL-terminated (for `capabilities`). */
const char *const *sp_runner_kinds(void);

/* Can this host serve `action` as written: a runner for its kind, and every
 * async hook in a form this build runs? Returns NULL when it can, else a
 * sentence naming what is missing (static or in `why`). */
const char *sp_action_unservable(const json_t *action, char *why, size_t n);

#endif
