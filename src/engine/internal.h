/*
 * internal.h - the engine's own state, shared by its modules (engine.c,
 * coordinate.c, sweep.c, dispatch.c, attempt.c, client.c, park.c,
 * packages.c, takeover.c). Not part of the engine's interface.
 */
#ifndef SPORE_ENGINE_INTERNAL_H
#define SPORE_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/engine.h"
#include "kernel/workflow.h"
#include "runners/artifacts.h"
#include "runners/pid_handle.h"
#include "runners/runner.h"

#define ENGINE_PAGE 256
#define PACKAGE_CACHE_SIZE 16
#define STORE_RETRIES 100

/* One attempt in flight in this engine. */
typedef struct inflight {
    struct inflight *next;
    struct sp_engine *engine;
    sp_claim claim;   /* owned */
    json_t *action;   /* owned copy of the action object */
    char kind[32];
    pthread_t thread;
    sp_stop_signal stop;
    bool done;      /* the attempt thread has finished (under engine->mu) */
    bool lost;      /* a heartbeat was answered stale */
    bool runner_done;
    pthread_mutex_t mu; /* guards runner_done, with cv */
    pthread_cond_t cv;
} inflight;

typedef struct package_entry {
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_workflow *wf; /* owned */
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
    json_t *action; /* owned copy */
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
    sp_workflow *wf;
} package_overflow;

struct sp_engine {
    sp_store *store;
    sp_engine_config cfg;
    char tenant[SP_STORE_ID_MAX + 1];
    char worker_id[SP_STORE_ID_MAX + 1];
    char nonce[33];
    char base_dir[4096];
    atomic_ulong counter;

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t settled_cv;
    inflight *inflight;
    uint32_t ninflight;
    uint32_t settled; /* attempts that ended since the last tick */
    bool shutting_down;
    bool abandon; /* attempts still running after shutdown report nothing */
    held_job *held_jobs;
    held_memo *memos;
    size_t nmemos, memo_cap;

    pthread_mutex_t packages_mu;
    package_entry packages[PACKAGE_CACHE_SIZE];
    uint64_t package_clock;
    package_overflow *evicted;

    unsigned char secret[32]; /* the store's secret, for step tokens */
    bool has_secret;

    sp_owner_host host; /* this process, recorded with each claim */
    int lock_fd;        /* flock held on <lock_dir>/<worker id>.lock, -1 if none */
    struct dead_owner *dead; /* owners the sweep found dead (takeover.c); tick only */
    size_t ndead, dead_cap;
};

/* engine.c */
void engine_request_id(sp_engine *e, const char *op, const char *subject, char *out, size_t n);
void engine_sleep_ms(uint64_t ms);
bool engine_interrupted(const sp_engine *e);
/* Retry a mutation while the store answers a transient kind (engine.md §1). */
#define ENGINE_RETRY(rc, err, call)                                                      \
    do {                                                                                 \
        for (int try_ = 1;; try_++) {                                                    \
            (rc) = (call);                                                               \
            if (!sp_store_rc_transient(rc) || try_ >= STORE_RETRIES)                     \
                break;                                                                   \
            sp_error_clear(err);                                                         \
            engine_sleep_ms(10u * (unsigned)(try_ < 20 ? try_ : 20));                   \
        }                                                                                \
    } while (0)

/* packages.c: the workflow of a package digest, loaded once (NULL +
 * package.missing / kernel failure code on error). The pointer stays valid
 * until sp_engine_free. */
const sp_workflow *engine_workflow(sp_engine *e, const char *digest, sp_error *err);
void engine_packages_free(sp_engine *e);

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
                              const sp_action *action);
/* Run a held attempt's probe or stop now, in this thread (status on demand,
 * step abandon). False when the action and handle allow none. */
typedef enum engine_hook { ENGINE_HOOK_PROBE, ENGINE_HOOK_STOP } engine_hook;
bool engine_hook_now(sp_engine *e, const sp_run_key *key, const sp_invocation_view *v,
                     const sp_action *a, engine_hook which, sp_holder_state *probe_state);

/* Visit every item of scan_due, page by page. The visitor returns 0 to go
 * on, 1 to stop (engine_each_due returns 1), -1 on error. */
typedef int (*engine_due_visitor)(sp_engine *e, const sp_due_item *item, void *ctx,
                                  sp_error *err);
int engine_each_due(sp_engine *e, sp_tick_stats *stats, engine_due_visitor visit, void *ctx,
                    sp_error *err);

/* A run's view; run.not-found when it does not exist. */
int engine_get_run(sp_engine *e, const sp_run_key *key, sp_run_view *view, sp_error *err);

/* The held item of an attempt (holder owned by the caller when found). */
int engine_held_lookup(sp_engine *e, const sp_attempt_ref *ref, sp_held_item *out, bool *found,
                       sp_error *err);

/* sweep.c: expire one attempt (lost races are not errors). */
int engine_expire(sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason,
                  sp_tick_stats *stats, sp_error *err);

/* attempt.c: finish an attempt with a result body, or - when its lease is
 * gone - keep the body as late evidence of `late_kind`. */
sp_store_rc engine_finish_or_keep(sp_engine *e, const sp_attempt_ref *ref, const char *body,
                                  size_t len, const char *late_kind, sp_error *err);
/* True when an action object's kind is `kind`. */
bool kind_is(const json_t *action, const char *kind);

/* attempt.c */
int engine_attempt_start(sp_engine *e, sp_claim *claim, sp_error *err);
void engine_attempts_reap(sp_engine *e, bool wait_all);
bool engine_run_in_flight(sp_engine *e, const sp_run_key *key);

/* result.c: the activity.result body for a runner's output (<= 64 KiB). */
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

bool engine_same_key(const sp_run_key *a, const sp_run_key *b);

/* token.c: step tokens (engine.md §9). step.token-invalid on a bad token. */
#define SP_TOKEN_MAX SP_STEP_TOKEN_MAX
int engine_token_make(sp_engine *e, const sp_attempt_ref *ref, char *out, size_t n, sp_error *err);
int engine_token_parse(sp_engine *e, const char *token, sp_attempt_ref *ref, sp_error *err);
/* The store's secret (cached), for step tokens and sealed process handles. */
int engine_secret(sp_engine *e, unsigned char key[32], sp_error *err);

/* engine.c helpers used by several modules */
void engine_wait(sp_engine *e, uint64_t timeout_ms);

#endif
