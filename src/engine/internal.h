/*
 * internal.h - the engine's own state, shared by its modules. Not part of
 * the engine's interface. The layers, bottom up: ledger.c (every store
 * mutation, its request ID and its retry; fault.c the retry schedule),
 * packages.c / runstate.c (what is loaded and kept), the work of a pass
 * (sweep.c, held.c, coordinate.c, dispatch.c, attempt.c on pool.c), and
 * tick.c at the top (the pass, serve, shutdown); client.c, steps.c,
 * admission.c and the views serve the API beside it.
 */
#ifndef SPORE_ENGINE_INTERNAL_H
#define SPORE_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/strlist.h"
#include "engine/actions.h"
#include "engine/engine.h"
#include "engine/observer.h"
#include "kernel/workflow.h"
#include "runners/runner.h"

#define ENGINE_PAGE 256
/* Attempts of inline actions (the runner contract's `quick`: a native
 * function registered inline) one engine holds at once. They take no pool
 * thread - each runs on the tick thread right after the batch that claimed
 * it commits - so on a store with one writer (SQLite) --concurrency does
 * not bound them; this does: one pass's worth, so that the steps of every
 * ready run share one commit. On a store whose writers commit in parallel
 * (PostgreSQL) they share the pool's slots: one worker that claimed every
 * ready run would leave the others nothing to do (docs/step-path.md). */
#define ENGINE_INLINE_MAX ENGINE_PAGE

/* The kind of slot an attempt takes (dispatch.c). */
typedef enum engine_slot {
    ENGINE_SLOT_POOL,   /* a pool thread: at most max_concurrent_activities */
    ENGINE_SLOT_INLINE, /* the tick thread: ENGINE_INLINE_MAX (one writer), else the pool's */
    ENGINE_SLOTS
} engine_slot;

#define PACKAGE_CACHE_SIZE 16

/* Where an attempt is in its life in this engine (attempt.c). Moves only
 * forward, under engine->mu, except REPORTING (or SENT) -> SETTLED when the
 * batch that carried its report did not commit (CLAIMED -> DONE: its claim
 * did not; and any state but QUEUED and RUNNING -> DONE when the batch that
 * claimed it was sent and answered that it did not commit). */
typedef enum attempt_state {
    ATTEMPT_CLAIMED,   /* claimed in the tick's open batch: not durable yet */
    ATTEMPT_QUEUED,    /* claimed, waiting for a pool thread */
    ATTEMPT_RUNNING,   /* a pool thread runs its runner */
    ATTEMPT_SETTLED,   /* the runner's output waits for the tick to report it */
    ATTEMPT_REPORTING, /* reported in the tick's open batch */
    ATTEMPT_SENT,      /* reported in a batch sent, its answer not read yet */
    ATTEMPT_DONE,      /* reported (or abandoned): the tick frees it */
} attempt_state;

/* One attempt in flight in this engine. */
typedef struct inflight {
    struct inflight *next;       /* engine->inflight */
    struct inflight *queue_next; /* engine->queue (pool.c) */
    struct sp_engine *engine;
    sp_claim claim; /* owned */
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    /* the claimed action (packages.c; valid until the engine is freed), set
     * by the pool thread */
    const engine_action *ea;
    sp_stop_signal stop;
    engine_slot slot;    /* ENGINE_SLOT_INLINE: runs on the tick thread (set at claim) */
    bool after_flush;    /* starts only once its claim is on disk (set at claim) */
    attempt_state state; /* under engine->mu */
    bool beat_wanted;    /* an agent event asked for an early heartbeat (engine->mu) */
    /* ---- the pool thread's, until SETTLED; the tick's after ---- */
    sp_activity_output out;
    bool report_nothing; /* the run or package could not be read: the lease decides */
    uint32_t kept;           /* agent events kept (runner thread) */
    uint64_t started_ns, ended_ns; /* wall clock, only with an observer (observe.c) */
    uint64_t last_signal_ms; /* runner thread: when it last asked for a beat */
    /* ---- the tick thread's ---- */
    bool lost;             /* a heartbeat was answered stale, or the invocation cancelled */
    bool claim_sent;       /* claimed by the batch sent, its answer not read yet */
    bool cancelled;        /* a committed decision cancelled the invocation */
    uint64_t last_beat_ms; /* monotonic */
} inflight;

typedef struct engine_package engine_package; /* packages.c */
typedef struct engine_note engine_note;       /* observe.c */

typedef struct package_entry {
    char digest[SP_DIGEST_TEXT_LEN + 1];
    engine_package *pkg; /* owned */
    uint64_t used;   /* LRU stamp */
} package_entry;

/* ---- component runners: what they get from the store (artifacts.c) ---- */
typedef struct engine_artifacts {
    sp_artifacts api; /* api.ctx = this */
    struct sp_engine *e;
    sp_attempt_ref ref; /* the attempt audit entries are kept for */
    bool has_ref;
} engine_artifacts;

void engine_artifacts_init(struct sp_engine *e, const sp_attempt_ref *ref, engine_artifacts *out);
/* ---- end component runners ---- */

/* A hook running for a held attempt (held.c). */
typedef enum held_job_kind { HELD_WATCH, HELD_PROBE, HELD_STOP } held_job_kind;

typedef struct held_job {
    struct held_job *next;
    struct sp_engine *engine;
    held_job_kind kind;
    sp_attempt_ref attempt;
    uint32_t attempt_number;
    char node_id[SP_STORE_ID_MAX + 1];
    char action_id[SP_STORE_ID_MAX + 1];
    const engine_action *ea; /* the held action (packages.c) */
    json_t *handle; /* owned */
    sp_expire_reason reason; /* HELD_STOP: why the attempt is expired after */
    pthread_t thread;
    sp_stop_signal stop;
    bool done; /* under engine->mu */
    engine_artifacts arts; /* component runners' store access */
} held_job;

/* What this engine did for one held attempt (held.c). */
typedef struct held_memo {
    sp_attempt_ref attempt;
    uint64_t last_probe_ms; /* monotonic */
    uint64_t watch_after_ms;
    bool seen;
} held_memo;

/* Workflows evicted from the cache stay alive until the engine is freed:
 * attempt threads may still hold pointers into them. */
typedef struct package_overflow {
    struct package_overflow *next;
    engine_package *pkg;
} package_overflow;

/* The decoded state of the runs this engine drives (runstate.c): at most
 * RUNSTATE_MAX runs and RUNSTATE_BYTES of their snapshots' bytes, found by
 * a hash of their key, the least recently kept dropped first. */
#define RUNSTATE_MAX 8192
#define RUNSTATE_BUCKETS 16384 /* a power of two */
#define RUNSTATE_BYTES (32u * 1024 * 1024)
typedef struct runstate_entry {
    sp_run_key key;         /* the run it was last given to */
    sp_kernel_state *state; /* NULL: none kept (taken, or never) */
    size_t bytes;           /* what `state` weighs: its snapshot's length (0: none) */
    int32_t next;           /* the next entry of its bucket (or of the free list), -1: none */
    int32_t older, newer;   /* its neighbours in the order kept, -1: none */
} runstate_entry;
typedef struct runstate_table {
    runstate_entry entries[RUNSTATE_MAX];
    int32_t buckets[RUNSTATE_BUCKETS]; /* the first entry of each, -1: none */
    int32_t oldest, newest;            /* the entries with a key, in the order kept */
    int32_t free_list;                 /* dropped entries, chained by `next` */
    size_t handed_out;                 /* entries [0, handed_out) have had a key */
    size_t bytes;                      /* the sum of the entries' `bytes` */
} runstate_table;

/* A failing store, as this engine saw it (fault.c; guarded by mu). */
typedef struct engine_fault {
    pthread_mutex_t mu;
    bool serving;  /* serve() runs: never give up */
    bool failing;  /* a fault is going on */
    bool writes;   /* one of its failures was a write */
    bool reported; /* the store_fault hook heard of it */
    uint64_t since_ms, reported_ms; /* monotonic */
    char code[SP_CODE_MAX];
    char message[SP_MESSAGE_MAX];
} engine_fault;

struct sp_engine {
    sp_store *store;
    sp_engine_config cfg;
    char tenant[SP_STORE_ID_MAX + 1];
    char worker_id[SP_STORE_ID_MAX + 1];
    char nonce[33];
    char base_dir[4096];
    atomic_ulong counter;
    engine_fault fault; /* fault.c */

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t settled_cv; /* the tick's wake-up: settled, or wake */
    inflight *inflight;
    uint32_t ninflight;
    /* e->mu: the attempts that take a slot - every state but reporting and
     * done - by slot (engine_attempt_move keeps it) */
    uint32_t held[ENGINE_SLOTS];
    uint32_t settled; /* attempts that ended since the last tick */
    bool wake;        /* something else wants the tick now (an early heartbeat) */
    /* ---- the attempt pool (pool.c) ---- */
    pthread_cond_t pool_cv;
    inflight *queue, **queue_tail;
    pthread_t *pool;
    uint32_t npool, pool_idle;
    bool pool_quit;
    bool shutting_down;
    bool abandon; /* attempts still running after shutdown report nothing */
    held_job *held_jobs;
    held_memo *memos;
    size_t nmemos, memo_cap;

    pthread_mutex_t packages_mu;
    bool serves_inline; /* packages_mu: a loaded package has an inline action */
    /* Inline attempts have their own ENGINE_INLINE_MAX slots (a store with
     * one writer), or share the pool's (writers in parallel: PostgreSQL). */
    bool inline_own_slots;
    package_entry packages[PACKAGE_CACHE_SIZE];
    uint64_t package_clock;
    package_overflow *evicted;

    unsigned char secret[32]; /* the store's secret, for step tokens */
    bool has_secret;

    sp_owner_host host; /* this process, recorded with each claim */
    int lock_fd;        /* flock held on <lock_dir>/<worker id>.lock, -1 if none */
    struct dead_owner *dead; /* owners the sweep found dead (takeover.c); tick only */
    size_t ndead, dead_cap;

    /* ---- the tick's own (tick.c, runstate.c) ---- */
    runstate_table *runstate; /* allocated by the first state kept */
    uint64_t next_sweep_ms;  /* monotonic: when sweep and held tick run next */
    uint64_t next_timers_ms; /* monotonic: when due timers are looked for next */
    /* The scans of a pass - runs with a pending event (coordinate) and due
     * invocations (dispatch) - run when something this engine did may have
     * left work for them (scan_wanted), when the store woke it, when a slot
     * is free and the last outbox read left due steps unread (outbox_more),
     * or every --poll-ms (what other processes did); a settle that turned
     * its run and claimed all the turn scheduled leaves nothing for them. */
    bool scan_wanted;
    bool outbox_more;        /* the last outbox read filled its page: more may be due */
    uint64_t next_scan_ms;   /* monotonic: when the scans run at the latest */
    bool store_woken;        /* e->mu: the store's wake-up came since the last pass */
    uint64_t next_locks_ms;  /* monotonic: when the worker lock files are looked at next */
    sp_strlist free_locks;   /* lock files already found free (takeover.c) */
    bool listening;          /* serve() has the store's wake-ups (listener below) */
    bool timers_changed;     /* e->mu: woken by the store: a timer may be new */
    sp_store_listener *listener;
    bool batch_failed;       /* a store call in the open batch failed transiently */
    bool batch_missed;       /* ... or ran on first reads the store predicted wrongly */
    /* The last batch ticket that may not be on disk yet (0: none): what the
     * batches committed stays in the process until it is (tick.c). */
    uint64_t unflushed;
    sp_strlist deferred;     /* failpoints fired when the open batch commits */
    /* A batch sent with its answer read later (tick.c, docs/postgres.md
     * §3i), and its failpoints, fired once the answer says it committed. */
    bool sent;
    sp_strlist sent_points;
    sp_strlist cancels;      /* invocations the open batch cancels (activity.cancel) */
    sp_strlist settled_runs; /* runs whose every pending event a settle of the open batch consumed */
    /* ---- the observer's notes of the open batch (observe.c; tick only) ---- */
    engine_note *notes;
    size_t nnotes, notes_cap;
    uint32_t notes_lost;
};

/* engine.c */
/* How often sweeps, held attempts and timers are looked at:
 * min(poll, lease / 4). */
uint64_t engine_sweep_every_ms(const sp_engine *e);
/* timers.c: fire the stored timers that are due (in the pass's batch). */
int engine_fire_timers(sp_engine *e, sp_tick_stats *stats, sp_error *err);
/* Wall-clock milliseconds since the epoch: what timers' dueAtMs count in
 * (the kernel's logical time is the events' accepted times). */
uint64_t engine_wall_ms(void);
bool engine_interrupted(const sp_engine *e);
/* The engine is abandoning its attempts (shutdown past its grace). */
bool engine_abandoning(sp_engine *e);
/* Retry a store call with the identical request while the store answers a
 * transient kind (unavailable, unknown-commit), on fault.c's schedule, until
 * it answers, the engine abandons its attempts, or the fault outlasts
 * store_retry_ms (serve() never gives up) - or half a second once shutdown
 * began. A write's success ends a fault; a read's only a fault of reads. */
#define ENGINE_RETRY_AS(e, write, rc, err, call)                                         \
    do {                                                                                 \
        for (unsigned try_ = 1;; try_++) {                                               \
            (rc) = (call);                                                               \
            if (!engine_retry_again((e), (write), #call, (rc), try_, (err)))             \
                break;                                                                   \
        }                                                                                \
    } while (0)
#define ENGINE_RETRY(e, rc, err, call) ENGINE_RETRY_AS(e, true, rc, err, call)
#define ENGINE_RETRY_READ(e, rc, err, call) ENGINE_RETRY_AS(e, false, rc, err, call)

/* fault.c: the store's faults (engine.md §1). */
void engine_fault_init(sp_engine *e);
void engine_fault_destroy(sp_engine *e);
/* ENGINE_RETRY's step: note the answer; true after sleeping when the call
 * is to be tried again (err cleared), false to stop (err kept, or - past the
 * bound - the give-up error of engine_fault_give_up). */
bool engine_retry_again(sp_engine *e, bool write, const char *call, sp_store_rc rc,
                        unsigned try_number, sp_error *err);
/* The loops' step after a pass: `failed` when the store failed it (its
 * error in err, cleared here). Returns the backoff to wait before the next
 * pass (100 ms doubling to 5 s over *streak failed passes), 0 after a pass
 * that worked. */
uint64_t engine_fault_pass(sp_engine *e, bool failed, unsigned *streak, sp_error *err);
/* -1 with the give-up error (the fault's code) once a fault has outlasted
 * store_retry_ms; *left_ms (if given) is the time until then. */
int engine_fault_give_up(sp_engine *e, uint64_t *left_ms, sp_error *err);
/* serve() never gives up on a failing store while it runs. */
void engine_fault_serving(sp_engine *e, bool serving);
/* A store fault is going on (the last store call of its kind failed). */
bool engine_fault_failing(sp_engine *e);
/* Note a store call's answer without retrying it (a batch's commit). */
void engine_fault_noted(sp_engine *e, bool write, const char *call, sp_store_rc rc,
                        const sp_error *err);

/* packages.c: the workflow of a package digest, loaded once (NULL +
 * package.missing / kernel failure code on error). The pointer stays valid
 * until sp_engine_free. */
const sp_workflow *engine_workflow(sp_engine *e, const char *digest, sp_error *err);
void engine_packages_free(sp_engine *e);

/* coordinate.c: a turn decided by the kernel and not yet committed (the
 * commit_turn of coordinate, or the decision settle_attempt asks for). */
typedef struct engine_decided {
    sp_kernel_decision d;
    bool has_decision;
    sp_kernel_state *next; /* the new decoded state, kept once committed */
    char decision_digest[SP_DIGEST_TEXT_LEN + 1];
    sp_command_rec *cmds; /* d's commands and diagnostics as the store takes them */
    sp_diagnostic_rec *diags;
    sp_obs_activation *seen; /* with an observer: what the turn consumed (observe.c) */
} engine_decided;

typedef enum engine_decide_rc {
    ENGINE_DECIDED,      /* *out holds the decision */
    ENGINE_UNDECIDABLE,  /* quarantine the run: *why says why (kernel failure, package) */
    ENGINE_DECIDE_STORE, /* the package could not be read: err */
    ENGINE_DECIDE_OOM,   /* err */
} engine_decide_rc;

/* Run the kernel on turn `t` (its kept decoded state taken when the run has
 * one for t->snapshot_digest, else t->snapshot decoded). *out is always
 * released with engine_decided_free. */
engine_decide_rc engine_decide(sp_engine *e, const sp_turn *t, engine_decided *out, sp_error *why,
                               sp_error *err);
/* The decision was committed (applied or duplicate): keep its state, stop
 * what it cancels and fire host.turn.after-commit once durable, count it. */
void engine_decided_committed(sp_engine *e, const sp_run_key *key, engine_decided *dc,
                              sp_disposition disposition, sp_tick_stats *stats);
void engine_decided_free(engine_decided *dc);

/* dispatch.c: attempts of each kind of slot this engine may still take on
 * (none once shutdown began; no inline ones before it prepared an inline
 * action); the slot an action's attempts take; whether this worker should
 * claim an invocation of that action, and into which slot (its pinned
 * action exists, is not external, and this host can serve it:
 * a package that cannot be read is left to the coordinator, which
 * quarantines the run); a duplicate claim receipt is a historical claim:
 * own it only if a heartbeat under it is applied now. */
/* The free slots of both kinds at one moment (this batch's claims
 * included), taken one claim at a time: a claim from shared slots takes
 * from both counts. */
typedef struct engine_slots {
    uint32_t free[ENGINE_SLOTS];
    bool shared;
} engine_slots;
void engine_slots_get(sp_engine *e, engine_slots *out);
bool engine_slots_take(engine_slots *s, engine_slot slot);
/* Attempts of any kind one outbox read may bring back. */
uint32_t engine_slots_total(const engine_slots *s);
uint32_t engine_free_slots(sp_engine *e);
engine_slot engine_action_slot(const engine_action *ea); /* NULL: the pool */
bool engine_workable(sp_engine *e, const char *package_digest, const char *action_id,
                     engine_slot *slot);
bool engine_claim_confirm(sp_engine *e, const sp_claim *claim, sp_error *err);

/* settle.c: the invocation an activity.schedule or activity.retry command
 * makes pending, and its action ("" when the command does not say), as the
 * kernel gave them beside the payload. */
bool engine_command_target(const sp_kernel_command *c, char id[SP_ID_LEN + 1], char *action,
                           size_t action_cap);

/* observe.c (observer.h): notes for the observer, each call only when
 * e->cfg.observer is set. Inside a batch they wait for its end:
 * engine_observe_after hands them over when it committed, drops them else. */
uint64_t engine_wall_ns(void);
void engine_observe_decided(sp_engine *e, const sp_turn *t, engine_decided *dc);
void engine_observe_turn(sp_engine *e, const engine_decided *dc);
void engine_observe_attempt(sp_engine *e, const inflight *a);
void engine_observe_expired(sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason);
void engine_observe_after(sp_engine *e, bool committed);
void engine_observe_free(sp_engine *e);

/* settle.c: report a finished attempt's result body with settle_attempt -
 * the decision on it and the claims it makes in the same request - falling
 * back to finish_attempt when the store refuses the decision. True when
 * the settle left nothing for the pass's scans: it turned its run, and
 * every command of the turn was a step it claimed. */
bool engine_settle(sp_engine *e, inflight *a, const char *body, size_t len,
                   sp_tick_stats *stats);
/* tick.c: the pass's scans (coordinate, dispatch) should run: something
 * may have left a run with a pending event or an invocation due. */
void engine_scan_wanted(sp_engine *e);

/* coordinate.c, sweep.c, dispatch.c */
int engine_coordinate(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only, sp_error *err);
/* sweep.c: expire due leases and deadlines (held ones: stop first) and dead
 * owners' attempts. The held tick (watches, probes) is separate: engine_held_tick. */
int engine_sweep(sp_engine *e, sp_tick_stats *stats, sp_error *err);
int engine_dispatch(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only, sp_error *err);

/* held.c: watches, probes and stops of held async attempts (engine.md §9). */
int engine_held_tick(sp_engine *e, sp_tick_stats *stats, sp_error *err);
int engine_held_expire(sp_engine *e, const sp_due_item *item, sp_tick_stats *stats, sp_error *err);
void engine_held_reap(sp_engine *e, bool wait_all);
void engine_held_stop_watches(sp_engine *e);
/* The run's held attempt of `invocation_id` has no probe or watch this
 * worker can run (only its holder, through the store, can end it). */
bool engine_held_unobservable(sp_engine *e, const sp_run_key *key, const char *invocation_id,
                              const engine_action *action);
/* Run a held attempt's probe or stop now, in this thread (status on demand,
 * step abandon). False when the action and handle allow none. */
typedef enum engine_hook { ENGINE_HOOK_PROBE, ENGINE_HOOK_STOP } engine_hook;
bool engine_hook_now(sp_engine *e, const sp_run_key *key, const sp_invocation_view *v,
                     const engine_action *a, engine_hook which, sp_holder_state *probe_state);

/* Visit every item of a due scan, page by page: the expired leases and
 * deadlines (the sweep), or the outbox (of run `only` when given). The
 * visitor returns 0 to go on, 1 to stop (engine_each_due returns 1), -1 on
 * error. */
typedef enum engine_due_scan { ENGINE_DUE_EXPIRING, ENGINE_DUE_OUTBOX } engine_due_scan;
typedef int (*engine_due_visitor)(sp_engine *e, const sp_due_item *item, void *ctx,
                                  sp_error *err);
int engine_each_due(sp_engine *e, engine_due_scan which, const sp_run_key *only,
                    sp_tick_stats *stats, engine_due_visitor visit, void *ctx, sp_error *err);

/* client.c: `s` is 1 to `max` characters of [A-Za-z0-9_.:-] (run, message,
 * request IDs, start keys, signal names); usage.invalid-value naming `what`. */
int engine_check_token(const char *what, const char *s, size_t max, sp_error *err);

/* A run's view; run.not-found when it does not exist. */
int engine_get_run(sp_engine *e, const sp_run_key *key, sp_run_view *view, sp_error *err);
/* client.c: append one event (canonical body of `body_value`) under
 * `request_id`; *out says applied or duplicate and its sequence. */
int engine_append_event(sp_engine *e, const sp_run_key *key, const char *request_id,
                        const char *event_id, const char *kind, const json_t *body_value,
                        sp_append_event_res *out, sp_error *err);

/* The held item of an attempt (holder owned by the caller when found). */
int engine_held_lookup(sp_engine *e, const sp_attempt_ref *ref, sp_held_item *out, bool *found,
                       sp_error *err);

/* sweep.c: expire one attempt (lost races are not errors). */
int engine_expire(sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason,
                  sp_tick_stats *stats, sp_error *err);


/* attempt.c: an attempt's life in this engine. Start hands a committed
 * claim to the pool; the tick reports what settled (in its batch), renews
 * leases from one timer, and frees what is done. */
/* A claim made in the tick's open batch: held here (it takes a slot) and
 * handed to the pool by engine_attempts_begin once the batch committed, or
 * forgotten when it did not. */
int engine_attempt_claimed(sp_engine *e, sp_claim *claim, const char *package_digest,
                           sp_error *err);
void engine_attempts_begin(sp_engine *e, bool committed, sp_error *err);
/* Under e->mu: move `a` to state `to` (every change of an attempt's state
 * after its claim goes through here: it counts the slots held). */
void engine_attempt_move(sp_engine *e, inflight *a, attempt_state to);
/* Some claim of the batch may not start before the batch is on disk: one
 * for the pool (a command, a component, an agent: effects outside this
 * process), or an inline native whose effect is `unsafe`. An inline native
 * of another effect may run first: a power loss that takes its claim back
 * lets it run again, which its effect allows. */
bool engine_attempts_need_flush(sp_engine *e);
/* Report every settled attempt (finish, hold, or late evidence); they are
 * REPORTING until engine_attempts_reported says what became of the batch:
 * committed, not, or sent with its answer read later (then they are SENT,
 * and its claims claim_sent, until engine_attempts_answered). */
void engine_attempts_report(sp_engine *e, sp_tick_stats *stats);
typedef enum engine_batch_end {
    ENGINE_BATCH_COMMITTED,
    ENGINE_BATCH_FAILED,
    ENGINE_BATCH_SENT,
} engine_batch_end;
void engine_attempts_reported(sp_engine *e, engine_batch_end end);
/* The sent batch's answer: committed (its reports done, its claims
 * durable like any), or not (its reports to be made again, its claims
 * forgotten: they never happened). */
void engine_attempts_answered(sp_engine *e, bool committed);
/* Heartbeat every attempt whose beat is due (a stale answer stops it). */
void engine_attempts_heartbeat(sp_engine *e);
/* A committed decision cancelled this invocation (activity.cancel): stop
 * its attempt running here, if any; what it returns is late evidence. */
void engine_attempts_cancel(sp_engine *e, const char *invocation_id);
/* After a commit: cancel now, or - inside a batch - when the batch commits. */
void engine_cancel_durable(sp_engine *e, const char *invocation_id);
/* Milliseconds until the next heartbeat is due (UINT64_MAX: none). */
uint64_t engine_attempts_next_beat_in(sp_engine *e);
void engine_attempts_reap(sp_engine *e, bool wait_all);
bool engine_run_in_flight(sp_engine *e, const sp_run_key *key);
bool engine_invocation_in_flight(sp_engine *e, const sp_run_key *key, const char *invocation_id);
/* Attempts that take a slot here, by kind of slot: claimed, queued,
 * running, or settled and not yet reported (one reported in the open batch
 * frees its slot); and their sum. */
void engine_attempts_count(sp_engine *e, uint32_t held[ENGINE_SLOTS]);
uint32_t engine_attempts_held(sp_engine *e);

/* pool.c: the fixed attempt pool (max_concurrent_activities threads, made
 * as needed). The pool thread calls engine_attempt_execute. */
int engine_pool_submit(sp_engine *e, inflight *a, sp_error *err);
void engine_pool_stop(sp_engine *e); /* after every attempt is done */
void engine_attempt_execute(inflight *a);

/* tick.c: one pass of the loop - sweep and held attempts on their own
 * timer, then in one batch (one durable commit): report settled attempts,
 * heartbeats, coordinate, dispatch; claims start after the commit. */
int engine_pass(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only, sp_error *err);
/* Wait until every batch committed so far is on disk: before anything of
 * them leaves the engine (a return to the caller). -1: a failed flush. */
int engine_flushed(sp_engine *e, sp_error *err);
/* A failpoint of something durable: now, or when the open batch commits. */
void engine_failpoint_durable(sp_engine *e, const char *name);
/* Wake the tick now (an attempt wants an early heartbeat). */
void engine_wake(sp_engine *e);
void engine_tick_free(sp_engine *e);

/* runstate.c: the kept decoded state of a run whose stored snapshot has
 * `snapshot_digest` (NULL when none or another; the caller owns it), and
 * keeping the state after a committed turn (takes it; NULL is fine), with
 * the length of the snapshot it decodes as its weight. */
sp_kernel_state *engine_runstate_take(sp_engine *e, const sp_run_key *key,
                                      const char *snapshot_digest);
void engine_runstate_keep(sp_engine *e, const sp_run_key *key, sp_kernel_state *state,
                          size_t snapshot_len);
/* A kept state exists for the run with this snapshot digest. */
bool engine_runstate_has(sp_engine *e, const sp_run_key *key, const char *snapshot_digest);
void engine_runstate_free(sp_engine *e);

/* result.c: the activity.result body for a runner's output (<= 64 KiB). */
/* A success whose output does not match `schema` (its node's schema for its
 * outcome; NULL: none): *replaced becomes the output.invalid failure
 * (details {path, rule}, never the value) and true is returned. */
bool engine_output_invalid(const sp_schema *schema, const sp_activity_output *out,
                           sp_activity_output *replaced);
char *engine_result_body(const sp_claim *claim, const sp_activity_output *out, size_t *len,
                         sp_error *err);

/* takeover.c (engine.md §11) */
int engine_takeover_init(sp_engine *e, sp_error *err);
void engine_takeover_close(sp_engine *e);
/* True when the owner of a running attempt on this host is dead for certain;
 * the verdict holds for all the owner's attempts until engine_takeover_tidy. */
bool engine_owner_dead(sp_engine *e, const sp_due_item *item);
/* After a sweep that went through every running attempt: remove the lock
 * files of the owners found dead and forget them. */
void engine_takeover_tidy(sp_engine *e);
/* A worker's lock file on this host became free since the last look (its
 * owner died): a sweep now takes its attempts over. No store read. */
bool engine_takeover_lock_freed(sp_engine *e);

bool engine_same_key(const sp_run_key *a, const sp_run_key *b);
/* "<tenant>/<runId>" into out (n >= 2 * SP_STORE_ID_MAX + 2); returns out. */
const char *engine_run_name(const sp_run_key *key, char *out, size_t n);

/* token.c: step tokens (engine.md §9). step.token-invalid on a bad token. */
#define SP_TOKEN_MAX SP_STEP_TOKEN_MAX
int engine_token_make(sp_engine *e, const sp_attempt_ref *ref, char *out, size_t n, sp_error *err);
int engine_token_parse(sp_engine *e, const char *token, sp_attempt_ref *ref, sp_error *err);
/* The store's secret (cached), for step tokens and sealed process handles. */
int engine_secret(sp_engine *e, unsigned char key[32], sp_error *err);

/* tick.c: wait until an attempt settles, the tick is woken, the timeout
 * passes (capped at the next heartbeat) or an interrupt. */
void engine_wait(sp_engine *e, uint64_t timeout_ms);

#endif
