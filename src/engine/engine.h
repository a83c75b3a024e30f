/*
 * engine.h - the worker (engine.md): it commits the kernel's decisions
 * through the store and executes activities through the runners.
 *
 * What it is for: `tick()` is one bounded pass (sweep expired leases,
 * coordinate pending events, dispatch due invocations) that never waits for
 * an activity; `serve()` repeats it until shutdown; `run_until_parked()`
 * drives one run until it is terminal, parked or quarantined. Attempts run
 * in their own threads with heartbeats on their own timer.
 *
 * What it must never do: decide a branch, a retry or a route (the kernel
 * does), act on a decision that is not committed (I7: only work read back
 * through scan_due is dispatched), look at an action's effect, or finish an
 * attempt whose lease it lost (that becomes late evidence).
 */
#ifndef SPORE_ENGINE_ENGINE_H
#define SPORE_ENGINE_ENGINE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "kernel/kernel.h"
#include "store/store.h"

/* The interrupt flag (sp_engine_config.interrupt) is written by signal
 * handlers, which C11 allows only for lock-free atomics. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomic_int must be lock-free");

struct sp_native_registry;
struct sp_engine_observer; /* engine/observer.h */

/* A failing store, as the engine reports it to its store_fault hook: a
 * store call kept failing with a transient kind (unavailable,
 * unknown-commit: a read-only or full disk, an unreachable server, a store
 * busy for longer than its timeout), or it works again. */
typedef enum sp_fault_state {
    SP_FAULT_FAILING,   /* still failing: being retried */
    SP_FAULT_RECOVERED, /* a write went through again */
} sp_fault_state;

typedef struct sp_engine_fault {
    sp_fault_state state;
    const char *code;          /* store.io, store.busy, ... (unknown-commit: store.io) */
    const char *message;       /* what failed: "<operation>: <the store's message>" */
    uint64_t retry_in_ms;      /* FAILING: when the failed call is tried again */
    uint64_t failing_for_ms;   /* since the fault's first failure */
    uint64_t give_up_after_ms; /* the bound; 0: never (serve) */
} sp_engine_fault;

/* The most steps one engine runs at once (its attempt pool's threads). */
#define SP_ENGINE_CONCURRENCY_MAX 1024u

typedef struct sp_engine_config {
    const char *tenant;    /* default "default" */
    const char *worker_id; /* default worker-<pid hex>-<nanos hex>-<counter> */
    uint64_t lease_ms;     /* 10000 */
    uint64_t heartbeat_ms; /* 3000 */
    uint64_t poll_ms;      /* 200 */
    /* serve() with a store that wakes it (PostgreSQL LISTEN/NOTIFY): idle
     * waits, and sweeps, this long at most; new work wakes it at once. 5000
     * (0 = the default); never shorter than poll_ms. */
    uint64_t listen_poll_ms;
    uint64_t shutdown_grace_ms;         /* 10000 */
    uint32_t max_concurrent_activities; /* 16: steps at once (--concurrency) */
    uint32_t turns_per_run;             /* 32 */
    sp_kernel_limits limits;            /* frozen default budget */
    const char *base_dir;               /* default: current directory */
    const struct sp_native_registry *natives;
    /* Fast takeover on one host (engine.md §11): the directory holding the
     * worker lock files; NULL disables it (e.g. no SQLite file). */
    const char *lock_dir;
    /* Test hook: produce run IDs instead of 128 OS-random bits. */
    void (*run_id_source)(void *ctx, char out[SP_ID_LEN + 1]);
    void *run_id_ctx;
    /* Set to non-zero (from any thread, or a signal handler: a lock-free
     * atomic, unlike a volatile sig_atomic_t, may be written on one thread
     * and read on another) to begin a graceful shutdown; the engine polls
     * it. May be NULL. */
    atomic_int *interrupt;
    /* Optional: called by serve() after every tick (a terminal's progress
     * line): attempts in flight and the totals since serve() began. */
    void (*serve_progress)(void *ctx, uint32_t in_flight, uint64_t turns, uint64_t claimed,
                           uint64_t elapsed_ms);
    void *serve_progress_ctx;
    /* How long a failing store is retried (every call with the identical
     * request) before the call - and run_until_parked - gives up with the
     * fault's code: 60000 (0 = the default). serve() never gives up. */
    uint64_t store_retry_ms;
    /* run_until_parked keeps serving a run that waits for a timer due within
     * this long, and parks it (SP_PARK_TIMER) otherwise: 300000 (5 min; 0 =
     * the default). */
    uint64_t max_wait_ms;
    /* Optional: told when the store keeps failing (once it has failed for
     * half a second, then every 10 s while it does) and once when it works
     * again. Called from any engine thread (attempt threads too), never twice
     * at once; it must not call the engine. */
    void (*store_fault)(void *ctx, const sp_engine_fault *fault);
    void *store_fault_ctx;
    /* Optional: told of committed turns, ended attempts and runs
     * (engine/observer.h: a tracer); NULL costs one check per call site.
     * Must outlive the engine. */
    const struct sp_engine_observer *observer;
} sp_engine_config;

/* Defaults of engine.md §1 (a struct literal callers can adjust). */
sp_engine_config sp_engine_defaults(void);

typedef struct sp_engine sp_engine;

sp_engine *sp_engine_new(sp_store *store, const sp_engine_config *config, sp_error *err);
/* Waits for attempt threads (after a shutdown their runners were stopped). */
void sp_engine_free(sp_engine *e);

typedef struct sp_tick_stats {
    uint32_t applied, duplicate, diverged, quarantined; /* coordinate */
    uint32_t expired;                                   /* sweep */
    uint32_t claimed;                                   /* dispatch */
    uint32_t settled; /* attempts that ended since the last tick */
    uint32_t fired;   /* timers fired (format 0.2) */
    uint32_t busy;    /* ready runs left alone: another worker's transaction held them */
    bool store_unavailable;
    bool more; /* the pass left work it could do now (a full page of ready runs) */
} sp_tick_stats;

/* One bounded pass (docs/step-path.md): sweeps when their timer is due,
 * then one store batch - one durable commit - that renews due leases,
 * reports the attempts that settled since the last pass, runs the kernel on
 * runs with a pending event and claims due steps up to the free slots. The
 * claimed steps run on the engine's pool; their results become durable in
 * a later tick, so keep ticking while attempts are in flight (serve() and
 * run_until_parked() do). Store `unavailable` counts as idle (stats flag
 * set). Returns -1 only for errors that are not the store's transient kind. */
int sp_engine_tick(sp_engine *e, sp_tick_stats *stats, sp_error *err);

/* True when the last tick did nothing and no attempt settled since. */
bool sp_tick_idle(const sp_tick_stats *s);

/* Whether a loop should tick again at once (the tick left work undone),
 * rather than wait for an attempt to settle or the poll interval: what a
 * tick claims is reported by a later tick, so after a busy tick there is
 * usually nothing to do until something settles. */
bool sp_tick_again(const sp_tick_stats *s);

/* Repeat tick() until the interrupt flag is set, then shut down
 * gracefully. Returns 0 (interrupted after a graceful shutdown). A failing
 * store is retried until it works again, however long that takes (backing
 * off from 100 ms to 5 s between ticks; store_fault hears of it). */
int sp_engine_serve(sp_engine *e, sp_error *err);

typedef enum sp_park {
    SP_PARK_COMPLETED,
    SP_PARK_FAILED,
    SP_PARK_WAITING,      /* waiting for a signal, nothing pending */
    SP_PARK_INTERVENTION, /* needs-intervention, nothing pending */
    SP_PARK_QUARANTINED,
    SP_PARK_ASYNC,       /* waiting for an async or external step */
    SP_PARK_INTERRUPTED, /* shutdown began before the run parked */
    SP_PARK_CANCELLED,   /* terminal: cancelled (format 0.2) */
    SP_PARK_TIMER,       /* waiting for a timer due beyond max_wait_ms (format 0.2) */
} sp_park;

/* Optional progress callback, called between ticks: at most every 100 ms
 * while the run has a step in flight here, and whenever the run is read
 * back to see whether it parked. */
typedef void (*sp_progress_fn)(void *ctx, const sp_run_view *run, uint64_t elapsed_ms);

/* Tick until the run is terminal, waiting / needs-intervention with no
 * pending event, or quarantined, and nothing of it is in flight here. After
 * an interrupt: graceful shutdown, one more coordination, SP_PARK_INTERRUPTED.
 * A failing store is retried (backing off from 100 ms to 5 s between ticks)
 * until it works again or the fault outlasts store_retry_ms: then -1 with
 * the fault's code (store.io, ...). */
int sp_engine_run_until_parked(sp_engine *e, const sp_run_key *key, sp_park *park,
                               sp_progress_fn progress, void *progress_ctx, sp_error *err);

/* Stop claiming, wait up to the grace period for in-flight attempts, fire
 * every remaining attempt's stop signal, wait up to the grace period again;
 * attempts still running are abandoned to lease expiry. */
void sp_engine_shutdown(sp_engine *e);

/* ---- client operations (engine.md §2) ---- */

typedef struct sp_start_result {
    sp_run_key key;
    char start_key[SP_STORE_ID_MAX + 1];
    bool created; /* false: the key named an existing run */
} sp_start_result;

/* Validate (runner checks + dry start with the real run ID and input), then
 * create the run. `start_key` NULL -> key_<16 hex>. `input` NULL -> {}. An
 * existing run of the start key is reused (created false) when it has the
 * same workflow and, if `input` is given, the same input; else run.exists. */
int sp_engine_start(sp_engine *e, const json_t *workflow, const json_t *input,
                    const char *start_key, sp_start_result *out, sp_error *err);

/* The same, with the folder the workflow's runner modules and relative
 * grants are read from (runners.md §2: sealed into the package, their bytes
 * put into the store's blob table, each runner instantiated once in the
 * jail). sp_engine_start reads them relative to the current directory. */
int sp_engine_start_at(sp_engine *e, const json_t *workflow, const char *workflow_dir,
                       const json_t *input, const char *start_key, sp_start_result *out,
                       sp_error *err);

/* The same for a run started from a built artifact (authoring.md §2): the
 * run records `artifact_digest` ("sha256:<hex>" of the artifact file; NULL
 * = none), which `status` shows. `workflow_dir` is where the artifact's
 * sealed files were laid out. */
int sp_engine_start_artifact(sp_engine *e, const json_t *workflow, const char *workflow_dir,
                             const char *artifact_digest, const json_t *input,
                             const char *start_key, sp_start_result *out, sp_error *err);

/* Start `n` runs of one workflow (each as sp_engine_start_artifact:
 * inputs[i] and start_keys[i], either array or entry NULL for none; the
 * artifact's digest, or NULL) with their writes in
 * one store batch: one durable commit for all, where one start alone costs
 * one each. out[i] and errs[i] (caller-owned, zeroed) say what became of
 * each; returns how many did not start (0: all did), or -1 with `err` when
 * none could be tried (n above SP_START_MANY_MAX, out of memory). When the
 * batch itself fails (the store), each write is made again on its own. The
 * batch is the engine's own: call it from the thread that ticks the engine
 * (or while nothing ticks it), as every call on an sp_engine. */
#define SP_START_MANY_MAX 1000
int sp_engine_start_many(sp_engine *e, const json_t *workflow, const char *workflow_dir,
                         const char *artifact_digest, size_t n, const json_t *const *inputs,
                         const char *const *start_keys, sp_start_result *out, sp_error *errs,
                         sp_error *err);

/* Where an accepted signal goes. */
typedef enum sp_signal_delivery {
    SP_SIGNAL_DELIVERED, /* the run waits for it at its await-signal node now */
    SP_SIGNAL_BUFFERED,  /* kept until the run reaches an await-signal node for it */
} sp_signal_delivery;

typedef struct sp_signal_answer {
    sp_disposition disposition;
    sp_signal_delivery delivery; /* when applied */
    char node_id[72];            /* the run's position when checked ("" when none) */
    char status[24];             /* the run's status when checked */
} sp_signal_answer;

/* Deliver a signal. Checked against the run first, nothing recorded on
 * failure: run.terminal, signal.unknown-name (no await-signal node of the
 * workflow waits for `name`), signal.outcome-unrouted (none routes
 * `outcome`, default "received"); repeating a message ID answers duplicate
 * whatever the run's state. */
int sp_engine_signal(sp_engine *e, const sp_run_key *key, const char *message_id,
                     const char *name, const char *outcome, const json_t *data,
                     sp_signal_answer *answer, sp_error *err);

typedef enum sp_resolution { SP_RESOLVE_COMPLETE, SP_RESOLVE_RETRY, SP_RESOLVE_FAIL } sp_resolution;

/* Answer the run's outcome-unknown invocation. Checked against the run
 * first, nothing recorded on failure: run.terminal, resolve.not-applicable
 * (another or no invocation, not unknown, already answered, an outcome its
 * action does not declare); repeating a request ID answers duplicate. */
int sp_engine_resolve(sp_engine *e, const sp_run_key *key, const char *request_id,
                      const char *invocation_id, sp_resolution resolution, const char *outcome,
                      const json_t *output, const char *message, sp_disposition *disposition,
                      sp_error *err);

int sp_engine_release(sp_engine *e, const sp_run_key *key, sp_disposition *disposition,
                      sp_error *err);

/* ---- format 0.2: cancel and retry (docs/format-0.2.md) ---- */

#define SP_CANCEL_REASON_MAX 1024
#define SP_CANCEL_BY_MAX 128

typedef struct sp_cancel_answer {
    sp_disposition disposition; /* of the run.cancel event */
    bool already_terminal;      /* the run had ended: the cancel changes nothing */
    bool applied;               /* the run's kernel has taken it (status below) */
    char status[24];            /* the run's status after the cancel */
} sp_cancel_answer;

/* Cancel a run of a 0.2 workflow: append run.cancel {reason, requestedBy}
 * (request cancel/<requestId>, event ID cancel:<requestId>), then wait up
 * to `wait_ms` for the worker serving the run to take it (it stops the
 * run's running steps at once), and take it here when none did. Refused
 * with nothing recorded: run.cancel-unsupported for a 0.1 workflow,
 * usage.invalid-value for a reason over 1 KiB or not UTF-8. A terminal run
 * answers already_terminal and records nothing. */
int sp_engine_cancel(sp_engine *e, const sp_run_key *key, const char *request_id,
                     const char *reason, const char *requested_by, uint64_t wait_ms,
                     sp_cancel_answer *answer, sp_error *err);

/* Retry every stuck invocation of a 0.2 run (resolve --retry of each,
 * request IDs <requestId>:<invocationId>); *count says how many.
 * run.nothing-to-retry when it has none. */
int sp_engine_retry(sp_engine *e, const sp_run_key *key, const char *request_id, size_t *count,
                    sp_error *err);

/* ---- external and async steps (engine.md §9) ---- */

#define SP_STEP_TOKEN_MAX 1024

typedef struct sp_step_claim {
    char token[SP_STEP_TOKEN_MAX + 1];
    sp_run_key key;
    char invocation_id[SP_ID_LEN + 1];
    char attempt_id[SP_ID_LEN + 16];
    uint32_t attempt;
    char node_id[SP_STORE_ID_MAX + 1];
    char action_id[SP_STORE_ID_MAX + 1];
    json_t *input;       /* the evaluated input */
    json_t *outcomes;    /* the declared outcomes */
    json_t *description; /* the action's description (instructions), or NULL */
    uint64_t deadline_ms, lease_until_ms;
} sp_step_claim;

void sp_step_claim_free(sp_step_claim *c);

/* Claim the earliest due external step (of `run_id` when given) whose actor
 * is `actor` (NULL: only steps without an actor), with an optional holder
 * label (canonical JSON). A fresh owner ID per claim. *claimed = false when
 * there is nothing to claim. */
int sp_engine_step_claim(sp_engine *e, const char *run_id, const char *actor,
                         const json_t *holder, sp_step_claim *out, bool *claimed, sp_error *err);

/* The holder renews its lease (capped at the deadline). */
int sp_engine_step_renew(sp_engine *e, const char *token, uint64_t *lease_until_ms,
                         sp_error *err);

/* End a claimed step. Undeclared outcome (step.undeclared-outcome), output
 * over 64 KiB (step.output-too-large) and a bad error code are refused
 * before anything is recorded. lease.lost when the token was fenced out. */
int sp_engine_step_complete(sp_engine *e, const char *token, const char *outcome,
                            const json_t *output, sp_error *err);
int sp_engine_step_fail(sp_engine *e, const char *token, const char *message, const char *code,
                        bool retryable, sp_error *err);

/* A person gives up on a run's running step: the job is stopped when a
 * stop is possible, and the attempt is expired with reason `abandoned`,
 * fencing out the old holder. step.none when nothing is running. */
int sp_engine_step_abandon(sp_engine *e, const sp_run_key *key, char *attempt_id, size_t n,
                           sp_error *err);

/* The `step` member of a run's status: {kind, actor, state, holder,
 * deadlineMs, leaseUntilMs, attempt, probe} of the current invocation, or
 * JSON null when the run has none. */
json_t *sp_engine_step_view(sp_engine *e, const sp_run_view *run);

/* The name of the workflow a package digest holds (valid until
 * sp_engine_free), NULL with package.missing or a kernel code. */
const char *sp_engine_workflow_name(sp_engine *e, const char *package_digest, sp_error *err);

/* A waiting run's wait, {signal, nodeId, outcomes: [routed outcomes]}, or
 * JSON null when the run is not waiting at an await-signal node (new
 * reference). */
json_t *sp_engine_wait_view(sp_engine *e, const sp_run_view *run);

/* A cancelled run's unsafe steps that were running when it was cancelled
 * (format 0.2): [{invocationId, nodeId, actionId, effectKey, attempt,
 * state: "cancelled-in-flight"}] - their effect may have happened. An empty
 * array for any other run. */
json_t *sp_engine_cancelled_in_flight(sp_engine *e, const sp_run_view *run);

/* The worker lock directory for fast takeover (engine.md §11) of a store:
 * `<file>.workers` next to a SQLite file; for a server store, a host-local
 * directory named after the store's location ($XDG_RUNTIME_DIR or /tmp,
 * per user), so workers of one host and one database find each other. */
int sp_engine_lock_dir(const sp_store *store, char *out, size_t n);

/* Set (or clear, with NULL) the serve() progress callback after creation. */
void sp_engine_set_serve_progress(sp_engine *e,
                                  void (*fn)(void *, uint32_t, uint64_t, uint64_t, uint64_t),
                                  void *ctx);

/* The run key for a run ID under the engine's tenant. */
int sp_engine_key(const sp_engine *e, const char *run_id, sp_run_key *key, sp_error *err);

sp_store *sp_engine_store(sp_engine *e);
const char *sp_engine_worker_id(const sp_engine *e);

#endif
