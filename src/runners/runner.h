/*
 * runner.h - what a runner receives and returns (engine.md §4-5).
 *
 * What it is for: the engine claims an attempt, then hands the action, its
 * canonical input and a context to the runner of the action's kind; the
 * runner executes and reports an sp_activity_output. The stop signal fires
 * on lease loss or shutdown: the runner must then return promptly,
 * reporting `unknown` unless it knows the effect did not happen.
 *
 * What it must never do: touch the store, look at the action's `effect`
 * (reporting `unknown` honestly is its whole job; the kernel decides what it
 * means), or block without watching the stop signal.
 */
#ifndef SPORE_RUNNERS_RUNNER_H
#define SPORE_RUNNERS_RUNNER_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* A one-shot stop signal: an atomic flag plus an eventfd that becomes
 * readable when fired, so a runner can poll() on it beside its pipes. */
typedef struct sp_stop_signal {
    atomic_bool fired;
    int fd; /* eventfd; -1 if it could not be created (then poll the flag) */
} sp_stop_signal;

int sp_stop_init(sp_stop_signal *s, sp_error *err);
void sp_stop_fire(sp_stop_signal *s);
bool sp_stop_fired(sp_stop_signal *s);
void sp_stop_destroy(sp_stop_signal *s);

struct sp_native_registry;
struct sp_artifacts; /* runners/artifacts.h */

typedef struct sp_runner_ctx {
    const char *tenant;
    const char *run_id;
    const char *node_id;
    const char *action_id;
    const char *invocation_id;
    const char *effect_key; /* = invocation ID; identical on every attempt */
    uint32_t attempt;
    const char *base_dir;    /* base for a command's relative cwd */
    const char *traceparent; /* W3C trace context for TRACEPARENT */
    sp_stop_signal *stop;
    const struct sp_native_registry *natives;
    /* The attempt's step token (engine.md §9): given to an async start
     * command as SPORE_TOKEN so the job can `spore step complete` itself.
     * NULL when the attempt has none. */
    const char *token;
    /* Where the store is (password removed), for a job that reports back
     * with `spore step complete`: exported as SPORE_DB with SPORE_TOKEN. */
    const char *store_location;
    /* Progress from a running step (agent-step.md §3): every agent event
     * renews the attempt's lease; a kept one (capped, redacted canonical
     * JSON) is recorded for `spore status` / `spore events`; event_json NULL
     * means "an event arrived, nothing to keep". Called on the runner's
     * thread; NULL when the caller does not listen. */
    void (*progress)(void *progress_ctx, const char *event_json, size_t len);
    void *progress_ctx;
    /* ---- component runners (runners.md §2, §5): sealed bytes, the store's
     * secret, audit entries; NULL when the caller has no store ---- */
    const struct sp_artifacts *artifacts;
} sp_runner_ctx;

typedef enum sp_output_kind {
    SP_OUTPUT_SUCCESS,
    SP_OUTPUT_FAILURE,
    SP_OUTPUT_UNKNOWN,
    SP_OUTPUT_HELD, /* an async start: the job runs on; `handle` identifies it */
} sp_output_kind;

/* What a runner reports (engine.md §4 step 4). */
typedef struct sp_activity_output {
    sp_output_kind kind;
    char *outcome;  /* success: the outcome (NULL = "ok"); owned */
    json_t *output; /* success: the output value (NULL = null); owned */
    json_t *error;  /* failure/unknown: {code, message, nodeId: null, details}; owned */
    bool retryable; /* failure only (unknown is always retryable) */
    json_t *handle; /* held: the holder handle (canonical, <= 4 KiB); owned */
} sp_activity_output;

void sp_activity_output_free(sp_activity_output *o);

/* Helpers for runners: fill `o` as a success / failure / unknown. The
 * message is copied; `details` ownership is taken (NULL = null). */
void sp_output_success(sp_activity_output *o, const char *outcome, json_t *output);
void sp_output_failure(sp_activity_output *o, const char *code, bool retryable, json_t *details,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void sp_output_unknown(sp_activity_output *o, const char *code, json_t *details,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Held: `handle` ownership is taken. */
void sp_output_held(sp_activity_output *o, json_t *handle);

#endif
