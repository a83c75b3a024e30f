/*
 * runner.h - the one face of the runners (engine.md §4-5, §9; runners.md):
 * what a runner is (sp_runner, the whole contract), what it receives (the
 * prepared action, its canonical input and a context) and what it returns
 * (an sp_activity_output), and the registry that maps an action's `kind` to
 * its runner. The engine includes this header and no other of this folder;
 * it never names a kind, it asks the runner.
 *
 * The life of an action, in the order the engine calls the contract:
 * - validate(action): check it as written (validate, start, run).
 * - seal(action, ctx): when the package is built, put into the action what
 *   the package must carry (the component runner seals its module and
 *   grants; the command runner the component-form hooks). NULL: nothing.
 * - prepare(action) -> spec: when a stored package is loaded, parse the
 *   action once; the spec is kept until the package is dropped (release).
 *   NULL: the runner reads the raw action at each call.
 * - run(ctx, action, input): one attempt. Cancel is the context's stop
 *   signal: when ctx->stop fires (lease lost, shutdown) run returns
 *   promptly, reporting `unknown` unless it knows the effect did not happen.
 * - hold_terms(action): for an async action (its start may answer a holder
 *   handle), the lease, hard deadline and probe interval of a held attempt.
 * - can / probe / watch / stop(action, handle): what a worker can do for a
 *   held attempt and doing it (engine.md §9 hooks). Set for observable
 *   kinds only.
 *
 * Every call may come from any thread, concurrently: a prepared spec is
 * read-only after prepare.
 *
 * What a runner must never do: touch the store or the engine (component
 * runners get sp_artifacts instead), look at the action's `effect`
 * (reporting `unknown` honestly is its whole job; the kernel decides what it
 * means), block without watching the stop signal, or turn an unclear probe
 * into `dead`. What the registry must never do: guess a runner for an
 * unknown kind, or let an action through validation that its runner would
 * refuse at run time.
 */
#ifndef SPORE_RUNNERS_RUNNER_H
#define SPORE_RUNNERS_RUNNER_H

#include <jansson.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "digest/digest.h"

/* ---- the stop signal ---- */

/* A one-shot stop signal: an atomic flag, plus - made the first time a
 * runner asks for it - an eventfd that becomes readable when fired, so a
 * runner can poll() on it beside its pipes. A step that never waits on it
 * (a native function) costs no descriptor. */
typedef struct sp_stop_signal {
    atomic_bool fired;
    atomic_int fd; /* the eventfd once made; -1 before */
} sp_stop_signal;

int sp_stop_init(sp_stop_signal *s, sp_error *err);
void sp_stop_fire(sp_stop_signal *s);
bool sp_stop_fired(sp_stop_signal *s);
/* The eventfd (made now if it was not); -1 if none can be made: then poll
 * the flag. Any thread, any time before sp_stop_destroy. */
int sp_stop_fd(sp_stop_signal *s);
void sp_stop_destroy(sp_stop_signal *s);

/* ---- what the engine gives component runners instead of the store ---- */

/* Sealed bytes from the store by digest, the store's secret for sealed
 * process handles, and an audit entry for the attempt (a forged handle,
 * say). The engine fills one per call (engine/artifacts.c). It must never
 * hand out bytes it did not read under that digest, or the secret to
 * anything but a MAC. */
typedef struct sp_artifacts {
    void *ctx;
    /* 0 with malloc'd bytes, 1 when the store has no such blob, -1 with err. */
    int (*get_blob)(void *ctx, const char *digest, void **bytes, size_t *len, sp_error *err);
    /* The store's secret (32 bytes). 0 or -1 with err. */
    int (*secret)(void *ctx, unsigned char key[32], sp_error *err);
    /* Keep an audit entry of `kind` with a canonical JSON body for the
     * calling attempt (best effort). */
    void (*audit)(void *ctx, const char *kind, const char *body, size_t len);
} sp_artifacts;

/* ---- one call ---- */

struct sp_native_registry;

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
    sp_stop_signal *stop;    /* cancel: fired on lease loss or shutdown */
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
    const sp_artifacts *artifacts;
} sp_runner_ctx;

typedef enum sp_output_kind {
    SP_OUTPUT_SUCCESS,
    SP_OUTPUT_FAILURE,
    SP_OUTPUT_UNKNOWN,
    SP_OUTPUT_HELD, /* an async start: the job runs on; `handle` identifies it */
} sp_output_kind;

/* What an attempt kept of one output stream for `spore logs` (authoring.md
 * §5, runners/steplog.h): its last bytes, redacted with the action's
 * secrets, valid UTF-8, at most 64 KiB; and how many earlier bytes were not
 * kept. */
typedef struct sp_log_stream {
    char *text; /* owned, NUL-terminated */
    size_t len;
    uint64_t dropped;
} sp_log_stream;

typedef struct sp_attempt_logs {
    sp_log_stream out, err; /* stdout, stderr */
} sp_attempt_logs;

/* Free the logs and what they hold (NULL is fine). */
void sp_attempt_logs_free(sp_attempt_logs *l);

/* What a runner reports (engine.md §4 step 4). */
typedef struct sp_activity_output {
    sp_output_kind kind;
    char *outcome;  /* success: the outcome (NULL = "ok"); owned */
    json_t *output; /* success: the output value (NULL = null); owned */
    json_t *error;  /* failure/unknown: {code, message, nodeId: null, details}; owned */
    bool retryable; /* failure only (unknown is always retryable) */
    json_t *handle; /* held: the holder handle (canonical, <= 4 KiB); owned */
    /* What the attempt kept of its stdout and stderr, for any kind; owned.
     * NULL for a kind without output (native). The sp_output_* helpers
     * below reset `o`: a runner attaches its logs after them. */
    sp_attempt_logs *logs;
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

/* ---- held attempts ---- */

/* What a probe says about the holder of a held attempt. */
typedef enum sp_holder_state { SP_HOLDER_ALIVE, SP_HOLDER_DEAD, SP_HOLDER_UNKNOWN } sp_holder_state;

const char *sp_holder_state_name(sp_holder_state s); /* "alive" | "dead" | "unknown" */
/* "alive" -> ALIVE, "dead" -> DEAD, anything else (NULL too) -> UNKNOWN. */
sp_holder_state sp_holder_state_parse(const char *name);

/* The terms of a held attempt (engine.md §9), from the action's `async`. */
typedef struct sp_hold_terms {
    uint64_t lease_in_ms;    /* the holder renews within this (= the deadline without a lease) */
    uint64_t deadline_in_ms; /* hard deadline, from the moment the step is held */
    uint64_t probe_every_ms; /* how often a worker probes a held attempt */
} sp_hold_terms;

/* What a worker can do for a held attempt. */
typedef enum sp_hook_op { SP_HOOK_PROBE, SP_HOOK_WATCH, SP_HOOK_STOP } sp_hook_op;

/* ---- building a package: sealing ---- */

typedef struct sp_seal_blob {
    char digest[SP_DIGEST_TEXT_LEN + 1];
    char *bytes;
    size_t len;
} sp_seal_blob;

/* The bytes the runners sealed, to be put into the store's blob table
 * before the run exists. */
typedef struct sp_seal_set {
    sp_seal_blob *items; /* unique digests */
    size_t n, cap;
    size_t total; /* bytes read */
    size_t files;
} sp_seal_set;

void sp_seal_set_free(sp_seal_set *s);

/* One package being built (runners.md §2, §6): the workflow folder, where
 * the bytes go, and whether each runner is instantiated once in the jail.
 * The bounds (files, bytes) count over the whole package. */
typedef struct sp_seal_ctx {
    char root[PATH_MAX]; /* realpath of the workflow folder */
    sp_seal_set *blobs;  /* the caller's set, or `local` */
    sp_seal_set local;   /* when the caller keeps no bytes: only the bounds */
    bool trial;
} sp_seal_ctx;

/* Start sealing from `workflow_dir` (NULL: the current directory);
 * file.unreadable when the folder cannot be resolved. `blobs` may be NULL. */
int sp_seal_begin(sp_seal_ctx *sc, const char *workflow_dir, sp_seal_set *blobs, bool trial,
                  sp_error *err);
void sp_seal_end(sp_seal_ctx *sc);

/* ---- the contract ---- */

/* One action as its runner sees it: the raw object and, once the package is
 * loaded, what prepare made of it. */
typedef struct sp_runner_action {
    const char *id;
    const json_t *raw; /* the action object (borrowed: the package owns it) */
    void *spec;        /* runner->prepare's result; NULL: the runner reads `raw` */
} sp_runner_action;

typedef struct sp_runner {
    const char *kind;
    /* External kinds are never claimed by a worker: an actor claims them
     * with `spore step claim` (engine.md §9). */
    bool external;
    /* The kind can be held asynchronously (engine.md §9): hold_terms set. */
    bool async;
    /* A worker can look after its held attempts: can, probe, watch and
     * stop are set (an external step only its holder can end). */
    bool observable;

    /* Check an action of this kind; action.invalid with a message on error. */
    int (*validate)(const char *action_id, const json_t *action, sp_error *err);
    /* Building the package: add what it must carry to `action` (changed in
     * place). NULL: nothing to seal. */
    int (*seal)(const char *action_id, json_t *action, sp_seal_ctx *sc, sp_error *err);
    /* Loading the package: parse once into *spec (released with release). A
     * failure is what validate would say. NULL: nothing to prepare. */
    int (*prepare)(const char *action_id, const json_t *action, void **spec, sp_error *err);
    void (*release)(void *spec);
    /* Execute one attempt: fills `out` (release with sp_activity_output_free)
     * and returns 0; -1 only when out of memory left `out` without its error.
     * `input` NULL means null. An action that does not parse is reported as
     * a failure (<kind>.invalid). Returns promptly once ctx->stop fires. */
    int (*run)(const sp_runner_ctx *ctx, const sp_runner_action *action, const json_t *input,
               sp_activity_output *out);
    /* The attempt may run on the caller's own thread - the engine's loop,
     * right after its claim commits - instead of an attempt thread: it
     * returns within microseconds and never blocks (a native function
     * registered inline). NULL: never. */
    bool (*quick)(const sp_runner_action *action, const struct sp_native_registry *natives);
    /* Async kinds: fill `out` (the defaults when the action has no async
     * member) and return true when an attempt of `action` is held after its
     * start answers a handle. */
    bool (*hold_terms)(const sp_runner_action *action, sp_hold_terms *out);
    /* Observable kinds: whether a worker can run `op` for a held attempt
     * with `handle` (NULL: for whatever handle it has). */
    bool (*can)(const sp_runner_action *action, sp_hook_op op, const json_t *handle);
    /* The holder's state; *finished with `out` filled when the probe
     * answered the step's result itself (or its failure): that ends the
     * attempt. Never DEAD without an explicit answer saying so. */
    sp_holder_state (*probe)(const sp_runner_ctx *ctx, const sp_runner_action *action,
                             const json_t *handle, sp_activity_output *out, bool *finished);
    /* Block until the job ends: true with `out` filled when the watch
     * delivered the result, false when it lost sight of the job (or was
     * stopped). */
    bool (*watch)(const sp_runner_ctx *ctx, const sp_runner_action *action,
                  const json_t *handle, sp_activity_output *out);
    /* Stop the job: true when it was stopped (or is gone). */
    bool (*stop)(const sp_runner_ctx *ctx, const sp_runner_action *action,
                 const json_t *handle);
} sp_runner;

/* ---- the registry ---- */

/* The runner for `kind`, or NULL when this host has none (SPORE_DISABLED_KINDS
 * declines kinds, exactly as if this build had no runner for them). */
const sp_runner *sp_runner_find(const char *kind);

/* The runner of an action object: action.kind-missing when it names no
 * kind, action.kind-unregistered when this host has no runner for it. */
const sp_runner *sp_runner_of(const char *action_id, const json_t *action, sp_error *err);

/* The kinds this host can run, NULL-terminated (for `capabilities`). */
const char *const *sp_runner_kinds(void);

/* Can this host serve `action` as written: a runner for its kind, and every
 * runner its hooks name? Returns NULL when it can, else a sentence naming
 * what is missing (static or in `why`). */
const char *sp_action_unservable(const json_t *action, char *why, size_t n);

/* `runner`'s prepare into *out ({id, raw, spec}); a runner without prepare
 * leaves spec NULL. On error *out still names the raw action. */
int sp_runner_prepare(const sp_runner *runner, const char *action_id, const json_t *action,
                      sp_runner_action *out, sp_error *err);
void sp_runner_release(const sp_runner *runner, sp_runner_action *a);

/* runner->hold_terms, or the defaults and false for a kind that is never
 * held. */
bool sp_runner_hold_terms(const sp_runner *runner, const sp_runner_action *a, sp_hold_terms *out);

#endif
