/*
 * spore.h - the public C API of libspore: embed durable workflows in a
 * program. Open a store, register native functions (the `native` action
 * kind), start runs, work on a run until it is parked, read its status,
 * deliver signals and resolutions.
 *
 * What it is for: this is the only header an embedder includes. It needs
 * nothing but the standard headers below (no jansson, no SQLite, no OpenSSL
 * types); JSON crosses the boundary as UTF-8 text, handles are opaque, and
 * every failure is an error value with a stable dotted code.
 *
 * What it must never do: expose an internal type or header, change the
 * meaning of a documented code, or report success for something that did
 * not happen.
 *
 *   spore_error err = {0};
 *   spore_db *db = spore_open("app.db", &err);
 *   spore_register_native(db, "charge", charge, NULL, &err);
 *   char *run_id = NULL;
 *   spore_start(db, workflow_json, "{\"amount\":5}", "order-17", &run_id, NULL, &err);
 *   spore_park park;
 *   spore_run_until_parked(db, run_id, &park, &err);
 *   char *status = NULL;
 *   spore_status(db, run_id, &status, &err);   // {"status":"completed",...}
 *   spore_free(status); spore_free(run_id); spore_close(db);
 *
 * Conventions (every function):
 * - Functions that can fail return 0 on success and -1 on failure (or a
 *   handle / NULL) and fill `err` when it is not NULL. Strings in `err` live
 *   in fixed buffers, so reporting never allocates; `err->details` (optional
 *   canonical JSON) is allocated: release it with spore_error_clear(). A
 *   function that succeeds leaves `err` untouched.
 * - Input strings are borrowed for the duration of the call and must be
 *   NUL-terminated UTF-8. JSON input may use any whitespace and key order but
 *   must lie in the canonical domain: no floats, integers within
 *   +-(2^53-1), no duplicate keys, nesting up to 32 (else `canonical.*`,
 *   `canonical.syntax` for text that is not JSON at all).
 * - Output strings (`char **`) are allocated by the library, NUL-terminated,
 *   and released with spore_free(). JSON output is canonical (sorted keys,
 *   no whitespace). On failure an output pointer is set to NULL.
 * - Codes that any call may report: `usage` (a NULL or missing argument),
 *   `usage.invalid-value` (a malformed ID, key or value),
 *   `runtime.out-of-memory`, and the store's codes (`store.busy`,
 *   `store.io`, `store.corrupt`, ...; see docs/embedding.md).
 * - Threads: a spore_db handle is used by one thread at a time. The
 *   exceptions are spore_interrupt() (any thread, also a signal handler) and
 *   spore_register_native() (any thread, at any time). Native functions run
 *   on worker threads while spore_run_until_parked() runs; they must not
 *   call the spore_db that runs them (open a second handle instead).
 *   Several handles on one database, in one process or many, are fine.
 */
#ifndef SPORE_SPORE_H
#define SPORE_SPORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ---- */

#define SPORE_VERSION "0.1.0"
#define SPORE_VERSION_MAJOR 0
#define SPORE_VERSION_MINOR 1
#define SPORE_VERSION_PATCH 0

/* The version of the library actually linked ("0.1.0"); static storage. */
const char *spore_version(void);

/* ---- errors ---- */

#define SPORE_ERROR_CODE_SIZE 64
#define SPORE_ERROR_MESSAGE_SIZE 512

typedef struct spore_error {
    char code[SPORE_ERROR_CODE_SIZE];       /* stable dotted code; "" = no error */
    char message[SPORE_ERROR_MESSAGE_SIZE]; /* for people; never part of a contract */
    char *details; /* canonical JSON details, or NULL; owned by the error */
} spore_error;

/* Release the details and reset to "no error". Safe on a zeroed value and on
 * NULL. Call it before reusing an error value that may hold details. */
void spore_error_clear(spore_error *err);

/* Release a string returned by the library. NULL is fine. */
void spore_free(void *p);

/* ---- the database handle ---- */

typedef struct spore_db spore_db;

/* Open (creating and initializing when new) the store at `location`: a
 * SQLite file path, or a PostgreSQL URL (postgres://… or postgresql://…,
 * docs/postgres.md). The handle carries a worker with the default
 * configuration (engine.md §1: tenant "default", lease 10 s, heartbeat 3 s,
 * at most 4 activities at a time), its own registry of native functions, and
 * for a SQLite file a worker lock file in the directory `<location>.workers`
 * (the same one the `spore` command uses, so a worker that dies is taken
 * over at once by another on this host; on PostgreSQL the lease rules).
 * Relative `cwd`s of command actions are resolved against the current
 * directory at the time of spore_open(). A new SQLite store is created
 * 0600 (its -wal and -shm follow); one that other users may read or write,
 * or that another user owns, is refused with `store.not-private` (it holds
 * the secret that signs step tokens).
 * Errors: `usage`, `store.io`, `store.not-private`, `store.corrupt`,
 * `store.unauthorized`, `schema.too-new`, `schema.unknown`, `runtime`. */
spore_db *spore_open(const char *location, spore_error *err);

/* How spore_open_with() opens a store; zeroed = spore_open(). */
typedef struct spore_open_options {
    /* Refuse a location that holds no store yet (`store.not-found`, nothing
     * created) instead of creating one: for tools that only look. */
    bool existing_only;
    /* Accept a SQLite file that other users may read or write, or that
     * another user owns (the `spore` command's --allow-shared-store). */
    bool allow_shared;
} spore_open_options;

/* spore_open() with `options` (NULL: the defaults). Errors: spore_open()'s,
 * and `store.not-found` with existing_only. */
spore_db *spore_open_with(const char *location, const spore_open_options *options,
                          spore_error *err);

/* Close the store and free the handle. Attempts still running are told to
 * stop (their native functions see spore_call_stop_requested()) and waited
 * for, but what they report is not recorded: like after a crash, they are
 * left to lease expiry (or to another worker on this host at once) and the
 * workflow's `effect` decides whether they run again. For a graceful stop
 * that records what returns, spore_interrupt() first. NULL is fine. */
void spore_close(spore_db *db);

/* Ask a running spore_run_until_parked() to stop: it stops claiming work,
 * gives in-flight activities the grace period (10 s, then their stop signal,
 * then 10 s more), records what returned and reports SPORE_PARK_INTERRUPTED.
 * The interrupt is permanent for this handle: later calls of
 * spore_run_until_parked() return SPORE_PARK_INTERRUPTED at once (reads,
 * starts and signals still work); open a new handle to work again.
 * Async-signal-safe; callable from any thread. */
void spore_interrupt(spore_db *db);

/* ---- native functions (the `native` action kind) ----
 *
 * An action {"kind":"native","function":"<name>", "effect": ...} calls the
 * function registered under <name> in the handle that runs the attempt.
 * Contract of a native function:
 * - `input_json` is the step's canonical input (`input_len` bytes,
 *   NUL-terminated). `user` is the pointer given at registration.
 * - It reports exactly one result through `call`: spore_call_succeed,
 *   spore_call_fail or spore_call_unknown (it cannot tell whether its effect
 *   happened). A later report replaces an earlier one; strings are copied.
 * - It returns 0. A non-zero return means "could not run" and becomes a
 *   retryable failure `native.failed` whatever was reported; returning 0
 *   without a report is a non-retryable failure `native.no-result`.
 * - It runs on a worker thread, possibly concurrently with itself (several
 *   runs, up to the engine's concurrency at a time): `user` is shared. It
 *   should return promptly
 *   once spore_call_stop_requested() is true (lost lease, shutdown),
 *   reporting unknown unless it knows its effect did not happen.
 * - The output must be canonical-domain JSON; outcomes are 1-256 bytes,
 *   codes 1-63 bytes of UTF-8; else the step fails with
 *   `native.malformed-output`. Messages are repaired and cut to 1000 bytes.
 * - An attempt can be repeated (a crash after the effect, a lost lease): use
 *   spore_call_effect_key() -- identical on every attempt of one step -- to
 *   make the effect idempotent, and declare the action's `effect` honestly.
 * A function name that is not registered when an attempt runs fails that
 * attempt with `native.unknown-function` (not retryable).
 */

typedef struct spore_call spore_call; /* opaque; valid only during the call */

typedef int (*spore_native_fn)(void *user, const char *input_json, size_t input_len,
                               spore_call *call);

/* Register `fn` under `name` (1-128 bytes of UTF-8) for this handle. `user`
 * is passed to every call and must stay valid until spore_close().
 * Errors: `native.invalid-name`, `native.duplicate`, `runtime.out-of-memory`. */
int spore_register_native(spore_db *db, const char *name, spore_native_fn fn, void *user,
                          spore_error *err);

/* The same for a function that returns within microseconds and never
 * blocks (a computation, an in-memory update): its attempts run on the
 * handle's loop thread as soon as their claim commits, with no hand-off to
 * an attempt thread. Everything above holds, but an inline function delays
 * every other run the handle serves while it runs and never sees a stop
 * request: use spore_register_native for anything that waits (I/O, locks,
 * sleeps). On SQLite its attempts take no --concurrency slot (up to 256
 * are held at once, so the steps of every ready run share one commit); on
 * PostgreSQL they count against --concurrency like any other. */
int spore_register_native_inline(spore_db *db, const char *name, spore_native_fn fn, void *user,
                                 spore_error *err);

/* Report success: `outcome` NULL = "ok"; `output_json` NULL = null
 * (`output_len` bytes, need not be NUL-terminated). 0, or -1 out of memory. */
int spore_call_succeed(spore_call *call, const char *outcome, const char *output_json,
                       size_t output_len);

/* Report a failure with a dotted `code`; `retryable` lets the workflow's
 * retry policy try again. 0, or -1 out of memory. */
int spore_call_fail(spore_call *call, const char *code, const char *message, bool retryable);

/* Report that the outcome is unknown (the effect may or may not have
 * happened); the workflow's `effect` decides what follows. 0, or -1. */
int spore_call_unknown(spore_call *call, const char *code, const char *message);

/* What the function may know about its attempt. The strings live as long as
 * the call; they are never NULL. */
const char *spore_call_run_id(const spore_call *call);
const char *spore_call_node_id(const spore_call *call);
const char *spore_call_invocation_id(const spore_call *call);
const char *spore_call_effect_key(const spore_call *call); /* same on every attempt */
uint32_t spore_call_attempt(const spore_call *call);       /* 1, 2, ... */
bool spore_call_stop_requested(const spore_call *call);
/* A file descriptor that becomes readable once a stop is requested (for
 * poll()); -1 when there is none (then check spore_call_stop_requested()). */
int spore_call_stop_fd(const spore_call *call);

/* ---- runs ---- */

/* Validate a workflow (`runspore.workflow/0.1` JSON) and start a run of it
 * with `input_json` (NULL = {}). `start_key` (NULL = a fresh key_<16 hex>;
 * else 1-128 characters of [A-Za-z0-9_.:-]) names the run: starting again
 * with the same key and workflow returns the same run with *created = false
 * and starts nothing. `run_id` (may be NULL) receives the run ID (free with
 * spore_free); `created` may be NULL. Nothing runs until a worker works on
 * the run (spore_run_until_parked).
 * Errors: `canonical.*` (the workflow or input is not canonical-domain
 * JSON), the kernel's code for a workflow it refuses (`workflow.invalid`,
 * `workflow.unsupported-effect`, ...), `action.kind-missing`,
 * `action.kind-unregistered`, `action.invalid`, `run.exists` (the key names
 * a run of another workflow, or the same workflow with another explicit
 * input), `usage.invalid-value` (a malformed start key). */
int spore_start(spore_db *db, const char *workflow_json, const char *input_json,
                const char *start_key, char **run_id, bool *created, spore_error *err);

/* Start `n` runs (at most 1000) of one workflow, each as spore_start would,
 * with one flush to disk for all of them where n spore_start calls cost n:
 * inputs_json[i] (the array or an entry may be NULL: {}), start_keys[i]
 * (the array or an entry may be NULL: a fresh key). run_ids[i] (the array
 * may be NULL) receives each started run's ID, NULL for one that did not
 * start (free each with spore_free); created[i] (may be NULL) whether it
 * was created rather than found by its key; errors[i] (may be NULL; each
 * zero-initialized, as any spore_error, and cleared after with
 * spore_error_clear) why one did not start, with spore_start's
 * codes. Returns how many did not start (0: all did), or -1 with `err` when
 * none was tried (`usage`: a NULL argument, n above 1000; the workflow's
 * JSON refused). */
int spore_start_many(spore_db *db, const char *workflow_json, size_t n,
                     const char *const *inputs_json, const char *const *start_keys,
                     char **run_ids, bool *created, spore_error *errors, spore_error *err);

typedef enum spore_park {
    SPORE_PARK_COMPLETED = 0,    /* terminal success */
    SPORE_PARK_FAILED = 1,       /* terminal failure */
    SPORE_PARK_WAITING = 2,      /* waiting for a signal (spore_signal) */
    SPORE_PARK_INTERVENTION = 3, /* needs intervention (spore_resolve) */
    SPORE_PARK_QUARANTINED = 4,  /* quarantined (spore_release after a fix) */
    SPORE_PARK_ASYNC = 5,        /* waiting for an async or external step */
    SPORE_PARK_INTERRUPTED = 6,  /* spore_interrupt() came first */
    SPORE_PARK_CANCELLED = 7,    /* terminal: cancelled (format 0.2, spore_cancel) */
    SPORE_PARK_TIMER = 8,        /* waiting for a timer due later than the max wait (0.2) */
} spore_park;

/* "completed", "failed", "waiting", "needs-intervention", "quarantined",
 * "async", "interrupted"; "unknown" for any other value. Static storage. */
const char *spore_park_name(spore_park park);

/* Work on the run in this thread (running its activities on worker threads)
 * until it is terminal, waiting or needing intervention with nothing
 * pending, or quarantined, and none of its attempts is in flight here; or
 * until spore_interrupt(). Other runs' due work found on the way is done
 * too. Resumes where any earlier worker stopped: completed steps never run
 * again. Blocks while activities run (there is no timeout). Returns only
 * once everything it committed is on disk (on SQLite a commit's flush runs
 * beside the next step; a flush that fails is `store.io`, final for this
 * handle: close it and open the store again).
 * Errors: `run.not-found`, `usage`, store codes. */
int spore_run_until_parked(spore_db *db, const char *run_id, spore_park *park,
                           spore_error *err);

/* The run's status as canonical JSON, the object `spore status --json`
 * prints (without "format"): {invocation, nodes, packageDigest, position,
 * quarantine, result, revision, runId, startKey, status}; `status` is one of
 * created, running, waiting, needs-intervention, completed, failed;
 * `result` is null, {"output": ...} or {"error": {code, message, nodeId,
 * details}}; `revision` is a decimal string.
 * Errors: `run.not-found`, `usage`, store codes. */
int spore_status(spore_db *db, const char *run_id, char **status_json, spore_error *err);

/* Deliver the signal `name` (an await-signal node's `signal`) with an
 * optional `outcome` (the route the node takes; NULL = "received") and
 * `data_json` (NULL = null; becomes the node's output). A signal that
 * arrives before the run waits for it is buffered. The signal is checked
 * against the run first and nothing is recorded when it fails: a finished
 * run (`run.terminal`), a name no await-signal node of the workflow waits
 * for (`signal.unknown-name`), an outcome none of them routes
 * (`signal.outcome-unrouted`). `message_id` (NULL = a fresh msg_<16 hex>) makes delivery
 * idempotent: repeating an ID is a no-op that sets *duplicate (may be NULL)
 * to true. This only records the signal: a worker acts on it
 * (spore_run_until_parked).
 * Errors: `run.not-found`, `run.terminal`, `signal.unknown-name`,
 * `signal.outcome-unrouted`, `usage`, `canonical.*`,
 * `request.digest-mismatch` (the message ID was used for a different
 * signal), store codes. */
int spore_signal(spore_db *db, const char *run_id, const char *name, const char *outcome,
                 const char *data_json, const char *message_id, bool *duplicate,
                 spore_error *err);

typedef enum spore_resolution {
    SPORE_RESOLVE_COMPLETE = 0, /* the effect happened: continue with outcome/output */
    SPORE_RESOLVE_RETRY = 1,    /* it did not happen: run the step again */
    SPORE_RESOLVE_FAIL = 2,     /* give up: fail the step with `operator.failed` */
} spore_resolution;

/* Answer an invocation whose outcome is unknown (a run parked with
 * SPORE_PARK_INTERVENTION; the invocation ID is in the status JSON under
 * invocation.invocationId). COMPLETE needs `outcome` and takes
 * `output_json` (NULL = null); FAIL takes `message`. `request_id` (NULL = a
 * fresh req_<16 hex>) makes it idempotent like a signal's message ID.
 * Checked against the run first, nothing recorded when it fails:
 * `run.terminal`, `resolve.not-applicable` (not the run's outcome-unknown
 * invocation, already answered, or an outcome its action does not declare).
 * Errors: `run.not-found`, `run.terminal`, `resolve.not-applicable`, `usage`, `canonical.*`,
 * `request.digest-mismatch` (the request ID was used for a different
 * answer), store codes. */
int spore_resolve(spore_db *db, const char *run_id, const char *invocation_id,
                  spore_resolution resolution, const char *outcome, const char *output_json,
                  const char *message, const char *request_id, bool *duplicate,
                  spore_error *err);

/* Lift a run's quarantine (after fixing its cause); a run that is not
 * quarantined is left as it is. *duplicate (may be NULL) tells whether this
 * quarantine was already lifted. Errors: `run.not-found`, `usage`, store
 * codes. */
int spore_release(spore_db *db, const char *run_id, bool *duplicate, spore_error *err);

/* Cancel a run of a spore.workflow/0.2 workflow (run.cancel): the run
 * becomes `cancelled` and its running steps are stopped by the worker that
 * serves it (or taken here after a second when none does). `reason` (may be
 * NULL, at most 1 KiB) is the run's error message. *already_terminal (may
 * be NULL) tells that the run had ended and nothing changed. Errors:
 * `run.not-found`, `run.cancel-unsupported` (a 0.1 workflow),
 * `usage.invalid-value`, store codes. */
int spore_cancel(spore_db *db, const char *run_id, const char *reason, const char *request_id,
                 bool *already_terminal, spore_error *err);

/* Retry every stuck step of a 0.2 run (a new attempt each, at once);
 * *count (may be NULL) says how many. Errors: `run.not-found`,
 * `run.nothing-to-retry`, store codes. */
int spore_retry(spore_db *db, const char *run_id, const char *request_id, size_t *count,
                spore_error *err);

/* ---- browsing (for viewers such as `spore ui`) ----
 *
 * Read-only, bounded pages as canonical JSON text (free with spore_free);
 * counters and times are decimal strings, as in `spore list --json`. */

#define SPORE_LIST_LIMIT_MAX 500

typedef struct spore_run_query {
    const char *status;   /* NULL/"": any; a status, or "quarantined" */
    const char *workflow; /* NULL/"": any; a workflow name */
    const char *search;   /* NULL/"": any; a substring of the run ID or start key */
    size_t offset;        /* runs skipped (after filtering, newest first) */
    size_t limit;         /* 1..SPORE_LIST_LIMIT_MAX runs in the page */
} spore_run_query;

/* One page of the tenant's runs, newest first: {runs: [{runId, startKey,
 * status, revision, quarantined, workflow, createdAtMs, updatedAtMs,
 * position}], matched, offset, limit} (matched: how many runs pass the
 * filters). Errors: `usage`, `usage.invalid-value` (a limit out of range),
 * store codes. */
int spore_list_runs(spore_db *db, const spore_run_query *q, char **runs_json, spore_error *err);

/* A run's events after `after_sequence` (0: from the first), at most
 * `limit` (0 or more than 256: 256): {runId, events: [as `spore events
 * --json`], next} (next: the sequence to continue after, or null).
 * Errors: `run.not-found`, `usage`, store codes. */
int spore_events(spore_db *db, const char *run_id, uint64_t after_sequence, size_t limit,
                 char **events_json, spore_error *err);

/* A run's attempts in the order they ended (then those still running),
 * each with its outcome, times and the logs it kept (already bounded and
 * redacted in the store): {runId, attempts: [{nodeId, attempt, attemptId,
 * invocationId, result: {state, status, outcome, code, message, output,
 * expireReason}, startedAtMs, endedAtMs, stdout: {text, droppedBytes},
 * stderr}], next} — at most `limit` (0 or more than 16: 16); `cursor` is a
 * previous answer's next (NULL: from the first).
 * Errors: `run.not-found`, `usage`, store codes. */
int spore_attempts(spore_db *db, const char *run_id, const char *cursor, size_t limit,
                   char **attempts_json, spore_error *err);

/* What a picture of the run needs: {package, snapshot (null before the
 * first commit), snapshotDigest, appliedSequence, status, quarantined,
 * packageDigest}. Errors: `run.not-found`, `usage`, store codes. */
int spore_run_picture(spore_db *db, const char *run_id, char **picture_json, spore_error *err);

#ifdef __cplusplus
}
#endif

#endif
