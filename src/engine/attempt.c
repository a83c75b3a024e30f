/*
 * attempt.c - one attempt (engine.md §4): a pool thread resolves the action
 * from the run's package and runs it; the tick reports what the runner
 * reported - finish, hold, or, when the lease was lost, late evidence - in
 * its batch, and renews every attempt's lease from one timer.
 *
 * Must never call finish_attempt after a heartbeat was answered stale (the
 * runner is told to stop; what it learns becomes late evidence), report
 * anything when the run or package cannot be read (the lease expires and the
 * kernel decides, as after a crash), report after shutdown abandoned it, or
 * free an attempt a pool thread still runs.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/failpoint.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "json/json.h"

/* Events renew the lease at most this often (or every heartbeat_ms, if less). */
#define PROGRESS_BEAT_GAP_MS 1000u

/* The runner's progress hook (sp_runner_ctx.progress), on the runner's
 * thread: a kept agent event becomes an audit row of kind "agent.event"
 * (request ID agent-event/<attemptId>/<n>, so a retried write is the same
 * request); every event asks the tick for an early heartbeat, rate-limited
 * here so a flood of events cannot flood the store. */
static void on_progress(void *ctx, const char *event_json, size_t len)
{
    inflight *a = ctx;
    sp_engine *e = a->engine;
    if (event_json) /* a view's detail: losing one never changes the attempt */
        ledger_agent_event(e, &a->claim.attempt, a->kept++, event_json, len);
    uint64_t now = sp_mono_ms();
    if (now - a->last_signal_ms < PROGRESS_BEAT_GAP_MS / 4)
        return;
    a->last_signal_ms = now;
    pthread_mutex_lock(&e->mu);
    a->beat_wanted = true;
    pthread_mutex_unlock(&e->mu);
    engine_wake(e);
}

static void record_late(inflight *a, const char *body, size_t len, const char *kind)
{
    ledger_keep_late(a->engine, &a->claim.attempt, kind, body, len);
}

/* An async start returned a handle: record it with hold_attempt; from now on
 * the worker holds nothing (engine.md §9). Lost lease: the handle is kept as
 * late evidence, so a person can find the job. */
static void hold(inflight *a, const sp_activity_output *out)
{
    sp_engine *e = a->engine;
    sp_error err = {0};
    sp_hold_terms terms;
    char *handle = sp_json_encode_alloc(out->handle, NULL, &err);
    if (!handle || engine_action_terms(a->ea, &terms, &err)) {
        free(handle);
        sp_error_clear(&err);
        return; /* cannot happen for a validated action; the lease decides */
    }
    if (a->lost) {
        record_late(a, handle, strlen(handle),
                    a->cancelled ? "handle-after-cancel" : "handle-after-lease-lost");
    } else {
        sp_hold_req req = {.attempt = a->claim.attempt,
                           .holder = handle,
                           .lease_in_ms = terms.lease_in_ms,
                           .deadline_in_ms = terms.deadline_in_ms};
        sp_heartbeat_res res;
        sp_store_rc rc = ledger_hold(e, &req, &res, &err);
        if (rc == SP_STORE_STALE)
            record_late(a, handle, strlen(handle), "handle-after-lease-expired");
        sp_error_clear(&err);
    }
    free(handle);
}

/* Report a settled attempt; true when its settle left nothing for the
 * pass's scans. */
static bool report(inflight *a, sp_tick_stats *stats)
{
    sp_engine *e = a->engine;
    const sp_activity_output *out = &a->out;
    sp_error err = {0};
    if (e->cfg.observer) /* before a hold or a settle: what this worker saw end */
        engine_observe_attempt(e, a);
    if (out->logs) /* beside the result, in the same batch (docs/authoring.md "Step logs") */
        ledger_put_log(e, &a->claim.attempt, out->logs);
    if (out->kind == SP_OUTPUT_HELD) {
        hold(a, out);
        return false;
    }
    const sp_schema *schema =
        out->kind == SP_OUTPUT_SUCCESS
            ? engine_output_schema(e, a->package_digest, a->claim.node_id,
                                   out->outcome ? out->outcome : "ok")
            : NULL;
    sp_activity_output checked;
    bool invalid = engine_output_invalid(schema, out, &checked);
    size_t len;
    char *body = engine_result_body(&a->claim, invalid ? &checked : out, &len, &err);
    if (invalid)
        sp_activity_output_free(&checked);
    if (!body) { /* out of memory: report nothing; the lease decides */
        sp_error_clear(&err);
        return false;
    }
    if (a->lost) {
        record_late(a, body, len, a->cancelled ? "result-after-cancel" : "result-after-lease-lost");
        free(body);
        return false;
    }
    bool clean = engine_settle(e, a, body, len, stats);
    free(body);
    return clean;
}

/* Resolve the action and its runner. Returns false to abandon (report
 * nothing); true with *host_failed set when the host itself produced the
 * output (missing action or runner). */
static bool resolve_action(inflight *a, const sp_runner **runner, bool *host_failed)
{
    sp_engine *e = a->engine;
    sp_error err = {0};
    const engine_action *ea;
    int rc = engine_action_find(e, a->package_digest, a->claim.action_id, &ea, &err);
    sp_error_clear(&err);
    if (rc)
        return false;
    *host_failed = true;
    if (!ea) {
        sp_output_failure(&a->out, "host.action-missing", false, NULL,
                          "action %s is not in the run's package", a->claim.action_id);
        return true;
    }
    *runner = ea->runner;
    if (!*runner) {
        sp_output_failure(&a->out, "host.runner-missing", false, NULL,
                          "no runner for the kind of action %s", a->claim.action_id);
        return true;
    }
    a->ea = ea;
    *host_failed = false;
    return true;
}

static void execute(inflight *a, const sp_runner *runner)
{
    json_t *input = sp_json_parse_canonical(a->claim.input, a->claim.input_len, NULL);
    if (!input) {
        sp_output_failure(&a->out, "host.input-invalid", false, NULL,
                          "the claimed input is not canonical JSON");
        return;
    }
    const sp_claim *c = &a->claim;
    sp_engine *e = a->engine;
    char traceparent[64];
    /* the run's trace, the attempt's span (observer.h): the same on every
     * worker, and no randomness to ask for on the step path */
    sp_obs_traceparent(c->attempt.key.tenant, c->attempt.key.run_id, c->attempt.attempt_id,
                       traceparent, sizeof traceparent);
    char token[SP_TOKEN_MAX + 1];
    sp_error err = {0};
    bool has_token = json_object_get(a->ea->action->raw, "async") &&
                     engine_token_make(e, &c->attempt, token, sizeof token, &err) == 0;
    sp_error_clear(&err);
    engine_artifacts arts; /* component runners: blobs, secret, audit (artifacts.c) */
    engine_artifacts_init(e, &c->attempt, &arts);
    sp_runner_ctx ctx = {.tenant = c->attempt.key.tenant,
                         .run_id = c->attempt.key.run_id,
                         .node_id = c->node_id,
                         .action_id = c->action_id,
                         .invocation_id = c->attempt.invocation_id,
                         .effect_key = c->effect_key,
                         .attempt = c->attempt_number,
                         .base_dir = e->base_dir,
                         .traceparent = traceparent,
                         .stop = &a->stop,
                         .natives = e->cfg.natives,
                         .token = has_token ? token : NULL,
                         .store_location = ledger_location(e->store),
                         .progress = on_progress, /* agent events */
                         .progress_ctx = a,
                         .artifacts = &arts.api};
    runner->run(&ctx, &a->ea->prepared, input, &a->out);
    json_decref(input);
}

/* On a pool thread. */
void engine_attempt_execute(inflight *a)
{
    sp_engine *e = a->engine;
    const sp_runner *runner = NULL;
    bool host_failed = false;
    if (e->cfg.observer)
        a->started_ns = engine_wall_ns();
    if (engine_abandoning(e) || !resolve_action(a, &runner, &host_failed)) {
        a->report_nothing = true;
    } else {
        if (!host_failed)
            execute(a, runner);
        sp_failpoint("host.attempt.after-effect");
    }
    if (e->cfg.observer)
        a->ended_ns = engine_wall_ns();
    pthread_mutex_lock(&e->mu);
    engine_attempt_move(e, a, ATTEMPT_SETTLED);
    e->settled++;
    pthread_cond_broadcast(&e->settled_cv);
    pthread_mutex_unlock(&e->mu);
}

int engine_attempt_claimed(sp_engine *e, sp_claim *claim, const char *package_digest,
                           sp_error *err)
{
    inflight *a = calloc(1, sizeof *a);
    if (!a) {
        sp_claim_free(claim);
        return sp_oom(err);
    }
    a->engine = e;
    a->claim = *claim;
    memset(claim, 0, sizeof *claim);
    snprintf(a->package_digest, sizeof a->package_digest, "%s", package_digest);
    const engine_action *ea = NULL; /* a package that cannot be read: the pool */
    sp_error none = {0};
    (void)engine_action_find(e, package_digest, a->claim.action_id, &ea, &none);
    sp_error_clear(&none);
    a->slot = engine_action_slot(ea);
    a->after_flush = a->slot != ENGINE_SLOT_INLINE || !ea || ea->action->effect == SP_EFFECT_UNSAFE;
    if (sp_stop_init(&a->stop, err)) {
        sp_claim_free(&a->claim);
        free(a);
        return -1;
    }
    pthread_mutex_lock(&e->mu);
    a->state = ATTEMPT_CLAIMED;
    e->held[a->slot]++;
    a->next = e->inflight;
    e->inflight = a;
    e->ninflight++;
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void engine_attempts_begin(sp_engine *e, bool committed, sp_error *err)
{
    for (inflight *a = e->inflight; a; a = a->next) {
        pthread_mutex_lock(&e->mu);
        bool mine = a->state == ATTEMPT_CLAIMED;
        if (mine && !committed)
            engine_attempt_move(e, a, ATTEMPT_DONE); /* the claim never happened */
        pthread_mutex_unlock(&e->mu);
        if (!mine || !committed)
            continue;
        a->last_beat_ms = sp_mono_ms();
        /* the runner may run it on this thread (a native function registered
         * inline: step-path.md §4): settled before the next pass, no hand-off */
        if (a->slot == ENGINE_SLOT_INLINE) {
            pthread_mutex_lock(&e->mu);
            engine_attempt_move(e, a, ATTEMPT_RUNNING);
            pthread_mutex_unlock(&e->mu);
            engine_attempt_execute(a);
            continue;
        }
        sp_error submit_err = {0};
        if (engine_pool_submit(e, a, &submit_err)) {
            pthread_mutex_lock(&e->mu);
            engine_attempt_move(e, a, ATTEMPT_SETTLED); /* nothing ran: the lease decides */
            a->report_nothing = true;
            pthread_mutex_unlock(&e->mu);
            if (!err->code[0])
                sp_error_move(err, &submit_err);
        }
        sp_error_clear(&submit_err);
    }
}

bool engine_attempts_need_flush(sp_engine *e)
{
    bool need = false;
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a && !need; a = a->next)
        need = a->state == ATTEMPT_CLAIMED && a->after_flush;
    pthread_mutex_unlock(&e->mu);
    return need;
}

/* ---- the tick's side ---- */

/* The settles this pass will make (report below): their runs locked and
 * first reads made together, where the store can. */
static void lock_ahead(sp_engine *e, bool abandon)
{
    const sp_attempt_ref *refs[SP_LOCK_AHEAD_MAX];
    size_t n = 0;
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a && n < SP_LOCK_AHEAD_MAX && !abandon; a = a->next)
        if (a->state == ATTEMPT_SETTLED && !a->report_nothing && !a->lost &&
            a->out.kind != SP_OUTPUT_HELD)
            refs[n++] = &a->claim.attempt;
    pthread_mutex_unlock(&e->mu);
    if (n > 1)
        ledger_lock_ahead_settles(e, refs, n);
}

void engine_attempts_report(sp_engine *e, sp_tick_stats *stats)
{
    bool abandon = engine_abandoning(e);
    lock_ahead(e, abandon);
    /* Only the tick adds to or frees from the list, so it may walk it
     * without the lock; states are read and moved under it. */
    for (inflight *a = e->inflight; a; a = a->next) {
        pthread_mutex_lock(&e->mu);
        bool mine = a->state == ATTEMPT_SETTLED;
        if (mine)
            engine_attempt_move(e, a,
                                abandon || a->report_nothing ? ATTEMPT_DONE : ATTEMPT_REPORTING);
        mine = mine && a->state == ATTEMPT_REPORTING;
        pthread_mutex_unlock(&e->mu);
        if (mine && !report(a, stats))
            engine_scan_wanted(e);
    }
}

void engine_attempts_reported(sp_engine *e, engine_batch_end end)
{
    static const attempt_state after[] = {
        [ENGINE_BATCH_COMMITTED] = ATTEMPT_DONE,
        [ENGINE_BATCH_FAILED] = ATTEMPT_SETTLED,
        [ENGINE_BATCH_SENT] = ATTEMPT_SENT,
    };
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a; a = a->next) {
        if (a->state == ATTEMPT_REPORTING)
            engine_attempt_move(e, a, after[end]);
        else if (a->state == ATTEMPT_CLAIMED && end == ENGINE_BATCH_SENT)
            a->claim_sent = true;
    }
    pthread_mutex_unlock(&e->mu);
}

void engine_attempts_answered(sp_engine *e, bool committed)
{
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a; a = a->next) {
        if (a->state == ATTEMPT_SENT)
            engine_attempt_move(e, a, committed ? ATTEMPT_DONE : ATTEMPT_SETTLED);
        if (!a->claim_sent)
            continue;
        a->claim_sent = false;
        if (committed)
            continue;
        /* never claimed: what it ran (inline, repeatable) is forgotten */
        if (a->state == ATTEMPT_QUEUED || a->state == ATTEMPT_RUNNING)
            a->lost = true; /* cannot happen (those wait for the answer): never a settle */
        else
            engine_attempt_move(e, a, ATTEMPT_DONE);
    }
    pthread_mutex_unlock(&e->mu);
}

void engine_attempts_cancel(sp_engine *e, const char *invocation_id)
{
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a; a = a->next)
        if (strcmp(a->claim.attempt.invocation_id, invocation_id) == 0 && !a->lost) {
            a->lost = a->cancelled = true;
            sp_stop_fire(&a->stop);
        }
    pthread_mutex_unlock(&e->mu);
}

static void heartbeat(inflight *a)
{
    sp_engine *e = a->engine;
    sp_heartbeat_res res;
    sp_error err = {0};
    sp_store_rc rc = ledger_heartbeat(e, &a->claim.attempt, e->cfg.lease_ms, false, &res, &err);
    if (rc == SP_STORE_STALE) {
        a->lost = true;
        sp_stop_fire(&a->stop);
    }
    sp_error_clear(&err);
}

/* An agent event's early beat waits at least this long after the last. */
static uint64_t early_gap(const sp_engine *e)
{
    return e->cfg.heartbeat_ms < PROGRESS_BEAT_GAP_MS ? e->cfg.heartbeat_ms : PROGRESS_BEAT_GAP_MS;
}

/* When the attempt's next beat is due (monotonic); UINT64_MAX for none. */
static uint64_t beat_due(const sp_engine *e, const inflight *a)
{
    if (a->lost || a->state == ATTEMPT_CLAIMED || a->state == ATTEMPT_REPORTING ||
        a->state == ATTEMPT_SENT || a->state == ATTEMPT_DONE)
        return UINT64_MAX;
    return a->last_beat_ms + (a->beat_wanted ? early_gap(e) : e->cfg.heartbeat_ms);
}

void engine_attempts_heartbeat(sp_engine *e)
{
    uint64_t now = sp_mono_ms();
    for (inflight *a = e->inflight; a; a = a->next) {
        pthread_mutex_lock(&e->mu);
        bool due = beat_due(e, a) <= now;
        if (due)
            a->beat_wanted = false;
        pthread_mutex_unlock(&e->mu);
        if (!due)
            continue;
        heartbeat(a);
        a->last_beat_ms = now;
    }
}

uint64_t engine_attempts_next_beat_in(sp_engine *e)
{
    uint64_t now = sp_mono_ms(), next = UINT64_MAX;
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a; a = a->next) {
        uint64_t due = beat_due(e, a);
        if (due < next)
            next = due;
    }
    pthread_mutex_unlock(&e->mu);
    return next == UINT64_MAX ? UINT64_MAX : next > now ? next - now : 0;
}

static void free_inflight(inflight *a)
{
    sp_stop_destroy(&a->stop);
    sp_activity_output_free(&a->out);
    sp_claim_free(&a->claim);
    free(a);
}

/* Under e->mu: unlink the attempts that are done (wait_all: settled ones
 * too, unreported) onto *out. True when some still run. */
static bool take_done(sp_engine *e, bool wait_all, inflight **out)
{
    bool running = false;
    for (inflight **p = &e->inflight; *p;) {
        inflight *a = *p;
        if (wait_all && (a->state == ATTEMPT_SETTLED || a->state == ATTEMPT_CLAIMED ||
                         a->state == ATTEMPT_SENT))
            engine_attempt_move(e, a, ATTEMPT_DONE); /* abandoned: the lease decides */
        if (a->state == ATTEMPT_DONE) {
            *p = a->next;
            a->next = *out;
            *out = a;
            e->ninflight--;
        } else {
            running = true;
            p = &a->next;
        }
    }
    return running;
}

void engine_attempts_reap(sp_engine *e, bool wait_all)
{
    for (;;) {
        inflight *finished = NULL;
        pthread_mutex_lock(&e->mu);
        bool running = take_done(e, wait_all, &finished);
        if (wait_all && running && !finished)
            pthread_cond_wait(&e->settled_cv, &e->mu);
        pthread_mutex_unlock(&e->mu);
        while (finished) {
            inflight *a = finished;
            finished = a->next;
            free_inflight(a);
        }
        if (!wait_all || !running)
            return;
    }
}

static bool holds(sp_engine *e, const sp_run_key *key, const char *invocation_id)
{
    pthread_mutex_lock(&e->mu);
    bool found = false;
    for (inflight *a = e->inflight; a && !found; a = a->next)
        found = a->state != ATTEMPT_DONE && engine_same_key(&a->claim.attempt.key, key) &&
                (!invocation_id || strcmp(a->claim.attempt.invocation_id, invocation_id) == 0);
    pthread_mutex_unlock(&e->mu);
    return found;
}

bool engine_run_in_flight(sp_engine *e, const sp_run_key *key) { return holds(e, key, NULL); }

bool engine_invocation_in_flight(sp_engine *e, const sp_run_key *key, const char *invocation_id)
{
    return holds(e, key, invocation_id);
}

/* What takes a slot: an attempt claimed and not yet reported. */
static bool holds_slot(attempt_state s)
{
    return s != ATTEMPT_DONE && s != ATTEMPT_REPORTING && s != ATTEMPT_SENT;
}

void engine_attempt_move(sp_engine *e, inflight *a, attempt_state to)
{
    bool before = holds_slot(a->state), after = holds_slot(to);
    if (before && !after)
        e->held[a->slot]--;
    else if (!before && after)
        e->held[a->slot]++;
    a->state = to;
}

void engine_attempts_count(sp_engine *e, uint32_t held[ENGINE_SLOTS])
{
    pthread_mutex_lock(&e->mu);
    memcpy(held, e->held, ENGINE_SLOTS * sizeof *held);
    pthread_mutex_unlock(&e->mu);
}

uint32_t engine_attempts_held(sp_engine *e)
{
    uint32_t held[ENGINE_SLOTS];
    engine_attempts_count(e, held);
    return held[ENGINE_SLOT_POOL] + held[ENGINE_SLOT_INLINE];
}
