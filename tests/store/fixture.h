/*
 * fixture.h - building realistic store requests for the store tests: a real
 * workflow package, run.started bodies, kernel decisions turned into
 * commit_turn requests, activity results, and a manual clock.
 *
 * What it is for: the conformance suite, the SQLite tests and the crash
 * child all speak to the store through the public sp_store_* API with the
 * same requests; this is where those requests are made.
 *
 * What it must never do: reach into the store's tables (only the public API
 * and views), or use CHECK (the crash child links it without a harness).
 */
#ifndef SPORE_TESTS_STORE_FIXTURE_H
#define SPORE_TESTS_STORE_FIXTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/kernel.h"
#include "store/store.h"

/* ---- a manual clock: settable, may step back; safe across threads ---- */

typedef struct manual_clock {
    _Atomic uint64_t now;
} manual_clock;

sp_clock manual_clock_of(manual_clock *c);
void manual_clock_set(manual_clock *c, uint64_t ms);

/* ---- the test workflow ----
 * work (activity, idempotent, 3 attempts, backoff 500 ms) --ok--> wait
 * (await-signal "go") --received--> done (complete). */
const char *fx_package(size_t *len);
const char *fx_package_digest(void);
/* Another valid package (for run.exists). */
const char *fx_other_package(size_t *len, char digest[SP_DIGEST_TEXT_LEN + 1]);

/* ---- evidence ---- */

typedef struct fx_body {
    char *text;
    size_t len;
    char digest[SP_DIGEST_TEXT_LEN + 1];
} fx_body;

/* Canonicalize a JSON text into a body with its digest (aborts on bad JSON). */
fx_body fx_body_of(const char *json);
void fx_body_free(fx_body *b);
sp_evidence fx_evidence(const fx_body *b);

/* ---- runs ---- */

sp_run_key fx_key(const char *run_id);

/* The run.started body fx_create uses: {"input":{"job":<run id>},"runId","tenant"}. */
fx_body fx_started_body(const sp_run_key *key);

/* create_run of the test package with input {"job": <run id>} under
 * request ID start/<start key>. */
sp_store_rc fx_create(sp_store *s, const sp_run_key *key, const char *start_key,
                      sp_create_run_res *res, sp_error *err);

/* The kernel's decision for the pending event of a run, as a commit request
 * with request ID commit/<revision+1>/<eventId>. */
typedef struct fx_decision {
    sp_turn turn;
    sp_kernel_decision d;
    char decision_digest[SP_DIGEST_TEXT_LEN + 1];
    char request_id[SP_STORE_REQUEST_ID_MAX];
    sp_command_rec *commands;
    sp_diagnostic_rec *diagnostics;
    sp_commit_turn_req req;
} fx_decision;

/* false when there is no pending turn or the kernel failed. */
bool fx_decide(sp_store *s, const sp_run_key *key, fx_decision *out);
/* The decision for out->turn, filled by the caller (owned strings). */
bool fx_decide_turn(fx_decision *out);
void fx_decision_free(fx_decision *d);

/* fx_decide + commit; returns the commit's rc (SP_STORE_NOT_FOUND if nothing to decide). */
sp_store_rc fx_step(sp_store *s, const sp_run_key *key, sp_commit_turn_res *res, sp_error *err);

/* Coordinate until no turn is pending; returns the number of commits (-1 on failure). */
int fx_settle(sp_store *s, const sp_run_key *key);

/* The invocation of the run's current (only or latest by ID) invocation. */
bool fx_invocation(sp_store *s, const sp_run_key *key, char id[SP_ID_LEN + 1]);

/* claim_attempt with request ID claim/<invocation>/<worker>/<tag>. */
sp_store_rc fx_claim(sp_store *s, const sp_run_key *key, const char *invocation_id,
                     const char *worker, uint64_t lease_ms, const char *tag, sp_claim *out,
                     sp_error *err);

/* An activity.result body for an attempt: status "success" (outcome ok,
 * output {"n":1}), "failure" (retryable) or "unknown". */
fx_body fx_result(const sp_attempt_ref *ref, const char *status);

/* finish_attempt with request ID finish/<attemptId>. */
sp_store_rc fx_finish(sp_store *s, const sp_attempt_ref *ref, const char *status,
                      sp_finish_res *res, sp_error *err);

/* A decider for settle_attempt over the fixture's kernel: it asks for the
 * snapshot, then decides (optionally passing, with a snapshot digest that
 * is not the snapshot's, with extra commands after the kernel's, and
 * asking to claim `claim`). Zero-initialize; fx_decider_free after use. */
typedef struct fx_decider {
    bool pass, bad_digest;
    const sp_command_rec *extra;
    size_t nextra;
    const char *const *claim;
    size_t nclaim;
    /* what happened */
    int calls;
    bool decided;
    fx_decision d;
    sp_command_rec cmds[8];
} fx_decider;

void fx_decider_free(fx_decider *dc);

/* settle_attempt of `ref` with fx_result(ref, status), request ID
 * settle/<attemptId>, `dc` as the decider (NULL: none), claim terms worker
 * "w-settle", lease 3000 ms, host "host-fx". */
sp_store_rc fx_settle_attempt(sp_store *s, const sp_attempt_ref *ref, const char *status,
                              fx_decider *dc, sp_settle_res *res, sp_error *err);

/* expire_attempt with request ID expire/<attemptId>. */
sp_store_rc fx_expire(sp_store *s, const sp_attempt_ref *ref, sp_expire_reason reason,
                      sp_finish_res *res, sp_error *err);

/* append_event of signal.received {"name": <name>} as sig:<message>, request
 * ID signal/<message>. */
sp_store_rc fx_signal(sp_store *s, const sp_run_key *key, const char *message, const char *name,
                      sp_append_event_res *res, sp_error *err);

/* The observable state of a run through the views (run view, every event,
 * every invocation), as text, for "nothing was written" comparisons. */
char *fx_state(sp_store *s, const sp_run_key *key);

/* Number of events of a run / of events with this ID. */
size_t fx_event_count(sp_store *s, const sp_run_key *key, const char *event_id);

#endif
