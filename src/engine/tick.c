/*
 * tick.c - the engine's loop (engine.md §3, step-path.md): one pass runs
 * the sweep and the held attempts on their own timer, then - in ONE store
 * batch, so one durable commit for all of it - renews due leases, reports
 * every settled attempt, fires due timers, runs the kernel on every run
 * with a pending event and claims due invocations up to the free slots.
 * Claims start on the pool only after the batch committed; cancellations
 * stop local attempts and failpoints of durable steps fire then.
 * Also tick(), serve(), waiting, and the graceful shutdown.
 *
 * The batch's commit may return before its flush (SQLite: the store's
 * flusher syncs beside the next step, docs/step-path.md): only an inline
 * step whose effect may be repeated starts before; everything else of the
 * batch that leaves the process waits for it (batch_after), and so does
 * every return to the caller.
 *
 * Must never dispatch after shutdown began, start an attempt whose claim is
 * not committed (nor, unless inline and repeatable, not on disk), report a
 * batch's failpoints before its commit, or keep the batch open across a
 * wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/failpoint.h"
#include "base/strlist.h"
#include "engine/internal.h"
#include "engine/ledger.h"

/* A settled attempt waits at most this long for others still running to
 * settle too, so that their reports share one commit (group commit). */
#define GROUP_WAIT_US 1000u

/* ---- what the open batch carries out after its commit ---- */

void engine_cancel_durable(sp_engine *e, const char *invocation_id)
{
    if (!ledger_in_batch(e))
        engine_attempts_cancel(e, invocation_id);
    else /* out of memory: the lease the commit took stops it at the next heartbeat */
        (void)sp_strlist_add(&e->cancels, invocation_id);
}

void engine_failpoint_durable(sp_engine *e, const char *name)
{
    if (!ledger_in_batch(e))
        sp_failpoint(name);
    else /* out of memory: a test-only point is lost, nothing else */
        sp_strlist_add(&e->deferred, name);
}

/* What of a committed batch may leave the process only once the batch is
 * on disk: a cancellation, the observer's notes, a claim that may not run
 * before (engine_attempts_need_flush). */
static bool release_waits_flush(sp_engine *e)
{
    return e->cancels.n || (e->cfg.observer && (e->nnotes || e->notes_lost)) ||
           engine_attempts_need_flush(e);
}

/* ---- a batch sent, its answer read with the next (step-path.md) ---- */

/* The sent batch's answer taken: true when it committed (or none was
 * sent). When it did not, nothing of it happened: its reports are made
 * again, its claims are forgotten, the scans look again, and *rc and err
 * say why. */
static bool answer_sent(sp_engine *e, sp_store_rc *rc, sp_error *err)
{
    *rc = SP_STORE_OK;
    if (!e->sent)
        return true;
    e->sent = false;
    sp_error why = {0};
    *rc = ledger_batch_answer(e, &why);
    bool committed = *rc == SP_STORE_OK;
    engine_attempts_answered(e, committed);
    for (size_t i = 0; committed && i < e->sent_points.n; i++)
        sp_failpoint(e->sent_points.items[i]);
    sp_strlist_clear(&e->sent_points);
    if (!ledger_prediction_missed(&why))
        engine_fault_noted(e, true, "ledger_batch_answer", *rc, &why);
    if (!committed) {
        engine_scan_wanted(e);
        if (!err->code[0])
            sp_error_move(err, &why);
    }
    sp_error_clear(&why);
    return committed;
}

/* Before a wait: the sent batch answered. One that did not commit wakes
 * the loop, which makes it again. */
static void answered_or_woken(sp_engine *e)
{
    sp_store_rc rc;
    sp_error why = {0};
    if (!answer_sent(e, &rc, &why))
        engine_wake(e);
    sp_error_clear(&why);
}

/* After the batch: fire its failpoints and start its claims (committed), or
 * forget both (nothing of it happened). -1 when the batch committed but
 * cannot be flushed (final: nothing of it is released); 1 when it was sent
 * and its answer, read here, says it did not commit (*lost_rc, err). */
static int batch_after(sp_engine *e, bool committed, sp_store_rc *lost_rc, sp_error *err)
{
    int rc = 0;
    if (committed && (ledger_unflushed(e) || e->sent) && release_waits_flush(e)) {
        if (!answer_sent(e, lost_rc, err)) {
            committed = false;
            rc = 1;
        } else if (ledger_wait_flushed(e, err) != SP_STORE_OK) {
            committed = false; /* its claims stay to their leases */
            rc = -1;
        }
    }
    for (size_t i = 0; committed && i < e->deferred.n; i++)
        sp_failpoint(e->deferred.items[i]);
    sp_strlist_clear(&e->deferred);
    for (size_t i = 0; committed && i < e->cancels.n; i++)
        engine_attempts_cancel(e, e->cancels.items[i]);
    sp_strlist_clear(&e->cancels);
    sp_strlist_clear(&e->settled_runs);
    engine_observe_after(e, committed); /* first: a claim may settle inline below */
    engine_attempts_begin(e, committed, err); /* a claim the pool cannot take: its lease */
    return rc;
}

void engine_tick_free(sp_engine *e)
{
    /* a batch still sent is answered: the store's next engine starts clean */
    sp_store_rc rc;
    sp_error ignored = {0};
    (void)answer_sent(e, &rc, &ignored);
    sp_error_clear(&ignored);
    sp_strlist_clear(&e->sent_points);
    sp_strlist_clear(&e->deferred);
    sp_strlist_clear(&e->cancels);
    sp_strlist_clear(&e->settled_runs);
}

/* ---- one pass ---- */

/* How long an idle loop waits: the poll interval, or - woken by the store
 * when work arrives - the longer listen_poll_ms. */
static uint64_t idle_ms(const sp_engine *e)
{
    return e->listening ? e->cfg.listen_poll_ms : e->cfg.poll_ms;
}

uint64_t engine_sweep_every_ms(const sp_engine *e)
{
    uint64_t quarter = e->cfg.lease_ms / 4, idle = idle_ms(e);
    uint64_t every = idle < quarter ? idle : quarter;
    return every ? every : 1;
}

/* Leases, deadlines, dead owners, held attempts: on their own timer. */
static int sweep_when_due(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    uint64_t now = sp_mono_ms();
    if (now < e->next_sweep_ms)
        return 0;
    if (engine_sweep(e, stats, err) || engine_held_tick(e, stats, err))
        return -1;
    e->next_sweep_ms = now + engine_sweep_every_ms(e);
    engine_scan_wanted(e); /* what it expired or probed may have left a turn to take */
    return 0;
}

void engine_scan_wanted(sp_engine *e) { e->scan_wanted = true; }

/* Whether this pass scans for runs with a pending event and due
 * invocations (see internal.h): wanted, woken by the store, or due. */
static bool scans_due(sp_engine *e)
{
    uint64_t now = sp_mono_ms();
    pthread_mutex_lock(&e->mu);
    bool woken = e->store_woken;
    e->store_woken = false;
    pthread_mutex_unlock(&e->mu);
    bool slots_to_fill = e->outbox_more && engine_free_slots(e) > 0;
    if (!e->scan_wanted && !woken && !slots_to_fill && now < e->next_scan_ms)
        return false;
    e->scan_wanted = false;
    e->next_scan_ms = now + (e->cfg.poll_ms ? e->cfg.poll_ms : 1);
    return true;
}

/* What the scans found leaves more to look at in the next pass. */
static void scans_found(sp_engine *e, const sp_tick_stats *before, const sp_tick_stats *after)
{
    if (after->applied != before->applied || after->duplicate != before->duplicate ||
        after->diverged != before->diverged || after->quarantined != before->quarantined ||
        after->claimed != before->claimed || after->busy != before->busy || after->more)
        engine_scan_wanted(e);
}

/* What a batch does: everything, or (draining) only renew and report. */
typedef enum batch_scope { BATCH_PASS, BATCH_SETTLE } batch_scope;

/* The batch's work; -1 for an error that is not a failed batch. */
static int batch_work(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only,
                      batch_scope scope, sp_error *err)
{
    engine_attempts_heartbeat(e);
    engine_attempts_report(e, stats);
    if (scope == BATCH_SETTLE)
        return 0;
    uint32_t fired = stats->fired;
    if (engine_fire_timers(e, stats, err))
        return -1;
    if (stats->fired != fired || stats->expired)
        engine_scan_wanted(e); /* events appended: their runs have a turn to take */
    if (!scans_due(e))
        return 0;
    sp_tick_stats before = *stats;
    if (engine_coordinate(e, stats, only, err))
        return -1;
    pthread_mutex_lock(&e->mu);
    bool shutting_down = e->shutting_down;
    pthread_mutex_unlock(&e->mu);
    if (!shutting_down && engine_dispatch(e, stats, only, err))
        return -1;
    scans_found(e, &before, stats);
    return 0;
}

/* Nothing of a batch that did not commit happened: its counts go too. */
static void batch_lost(sp_engine *e, sp_tick_stats *stats)
{
    engine_scan_wanted(e); /* everything of the pass is to be done again */
    uint32_t settled = stats->settled, expired = stats->expired;
    memset(stats, 0, sizeof *stats);
    stats->settled = settled;
    stats->expired = expired;
    stats->store_unavailable = true;
}

/* The batch sent before this one did not commit, and this one was made on
 * it: this one did not either (sent, its commit mark is chained; answered
 * at once, the store refused it or it had nothing to commit), its answer
 * is taken too, and the first one's failure is the answer: the work of
 * both is made again. */
static sp_store_rc before_failed(sp_engine *e, bool *later, sp_store_rc before_rc,
                                 sp_error *err, sp_error *before_err)
{
    if (*later) {
        sp_error ignored = {0};
        (void)ledger_batch_answer(e, &ignored);
        sp_error_clear(&ignored);
        *later = false;
    }
    sp_error_clear(err);
    sp_error_move(err, before_err);
    e->batch_missed |= ledger_prediction_missed(err);
    return before_rc;
}

/* The open batch's commit - sent, its answer read with the next batch's,
 * where the store can - and then the answer of the batch sent before it.
 * What became of this batch; when it failed, *rcp and err say why. */
static engine_batch_end batch_commit(sp_engine *e, sp_store_rc *rcp, sp_error *err)
{
    sp_error commit_err = {0}, before_err = {0};
    bool writes = ledger_batch_writes(e), later = false;
    if (writes)
        sp_failpoint("host.batch.before-commit");
    sp_store_rc rc = ledger_batch_send(e, &later, &commit_err), before_rc;
    if (writes && rc == SP_STORE_OK && !later)
        sp_failpoint("host.batch.after-commit");
    e->batch_missed |= ledger_prediction_missed(&commit_err);
    /* a batch that wrote nothing proves nothing; a sent one proves it with its answer */
    if ((writes || rc != SP_STORE_OK) && !e->batch_missed && !later)
        engine_fault_noted(e, true, "ledger_batch_commit", rc, &commit_err);
    if (!answer_sent(e, &before_rc, &before_err))
        rc = before_failed(e, &later, before_rc, &commit_err, &before_err);
    sp_error_clear(&before_err);
    if (later) { /* its failpoints fire with its answer */
        e->sent = true;
        e->sent_points = e->deferred;
        e->deferred = (sp_strlist){0};
        if (writes) /* out of memory: a test-only point is lost, nothing else */
            (void)sp_strlist_add(&e->sent_points, "host.batch.after-commit");
    }
    if (rc != SP_STORE_OK && !err->code[0])
        sp_error_move(err, &commit_err);
    sp_error_clear(&commit_err);
    *rcp = rc;
    if (rc != SP_STORE_OK)
        return ENGINE_BATCH_FAILED;
    return later ? ENGINE_BATCH_SENT : ENGINE_BATCH_COMMITTED;
}

static int run_batch(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only,
                     batch_scope scope, sp_error *err)
{
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, ledger_batch_begin(e, err));
    if (rc != SP_STORE_OK) {
        stats->store_unavailable = sp_store_rc_transient(rc);
        return -1;
    }
    e->batch_failed = e->batch_missed = false;
    int work = batch_work(e, stats, only, scope, err);
    engine_batch_end end = ENGINE_BATCH_FAILED;
    if (e->batch_failed || (work && stats->store_unavailable))
        ledger_batch_abort(e);
    else
        end = batch_commit(e, &rc, err);
    bool failed = end == ENGINE_BATCH_FAILED;
    engine_attempts_reported(e, end);
    int after = batch_after(e, !failed, &rc, err);
    if (after < 0)
        return -1; /* committed, never to be flushed: not a store to wait for */
    if (after > 0) /* sent, and answered that it did not commit */
        failed = true, e->batch_missed |= ledger_prediction_missed(err);
    if (failed) {
        batch_lost(e, stats);
        if (e->batch_missed || ledger_prediction_missed(err)) {
            /* nothing applied: made again at once, on what the store holds */
            sp_error_clear(err);
            stats->store_unavailable = false;
            stats->more = true;
            return 0;
        }
        /* not to be waited out: a store that cannot flush refuses every commit */
        stats->store_unavailable = rc != SP_STORE_CORRUPT;
        return -1;
    }
    return work;
}

int engine_pass(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only, sp_error *err)
{
    memset(stats, 0, sizeof *stats);
    engine_attempts_reap(e, false);
    pthread_mutex_lock(&e->mu);
    stats->settled = e->settled;
    e->settled = 0;
    e->wake = false;
    pthread_mutex_unlock(&e->mu);
    if (sweep_when_due(e, stats, err) || run_batch(e, stats, only, BATCH_PASS, err))
        return stats->store_unavailable ? 0 : -1;
    return 0;
}

/* Before a return to the caller: the sent batch answered, and everything
 * committed on disk (-1: a flush failed, final). */
int engine_flushed(sp_engine *e, sp_error *err)
{
    answered_or_woken(e);
    return ledger_wait_flushed(e, err) == SP_STORE_OK ? 0 : -1;
}

/* The caller's own loop may act on what a pass did: it is on disk first. */
int sp_engine_tick(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    if (engine_pass(e, stats, NULL, err))
        return -1;
    return engine_flushed(e, err);
}

bool sp_tick_idle(const sp_tick_stats *s)
{
    return !s->applied && !s->duplicate && !s->diverged && !s->quarantined && !s->expired &&
           !s->claimed && !s->settled && !s->fired;
}

bool sp_tick_again(const sp_tick_stats *s) { return s->more && !s->store_unavailable; }

/* ---- waiting ---- */

void engine_wake(sp_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->wake = true;
    pthread_cond_broadcast(&e->settled_cv);
    pthread_mutex_unlock(&e->mu);
}

static struct timespec deadline_in_us(uint64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + us * 1000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* Under e->mu: the tick has something to do now. */
static bool wanted(const sp_engine *e) { return e->settled > 0 || e->wake; }

/* A worker woken by the store sweeps every few seconds only: while it
 * waits, it looks at the worker lock files every --poll-ms (no store read),
 * and a freed one - a dead worker on this host - makes the sweep due now
 * (fast takeover, engine.md §11). */
static bool lock_freed(sp_engine *e)
{
    uint64_t now = sp_mono_ms();
    if (!e->listening || now < e->next_locks_ms)
        return false;
    e->next_locks_ms = now + (e->cfg.poll_ms ? e->cfg.poll_ms : 1);
    if (!engine_takeover_lock_freed(e))
        return false;
    e->next_sweep_ms = 0;
    return true;
}

/* Wait until an attempt settles, the tick is woken, the timeout passes (at
 * most until the next heartbeat is due), a dead worker's lock is found, or
 * an interrupt. */
void engine_wait(sp_engine *e, uint64_t timeout_ms)
{
    pthread_mutex_lock(&e->mu);
    bool at_once = wanted(e);
    pthread_mutex_unlock(&e->mu);
    if (!at_once && e->sent) {
        /* nothing sleeps unanswered: the loop looks again at what the
         * answer made committed (or must make again) before it waits */
        answered_or_woken(e);
        return;
    }
    uint64_t beat = engine_attempts_next_beat_in(e);
    if (beat < timeout_ms)
        timeout_ms = beat;
    uint64_t step = timeout_ms < 50 ? timeout_ms : 50;
    uint64_t waited = 0;
    while (waited < timeout_ms && !engine_interrupted(e)) {
        pthread_mutex_lock(&e->mu);
        bool now = wanted(e);
        if (!now) {
            struct timespec ts = deadline_in_us(step * 1000u);
            pthread_cond_timedwait(&e->settled_cv, &e->mu, &ts);
            now = wanted(e);
        }
        pthread_mutex_unlock(&e->mu);
        if (now || lock_freed(e))
            return;
        waited += step;
    }
}

/* Group commit: when some attempts settled while others still run, give the
 * others up to GROUP_WAIT_US to settle too. */
static void group_wait(sp_engine *e)
{
    struct timespec until = deadline_in_us(GROUP_WAIT_US);
    pthread_mutex_lock(&e->mu);
    for (;;) {
        uint32_t running = 0;
        for (inflight *a = e->inflight; a; a = a->next)
            running += a->state == ATTEMPT_QUEUED || a->state == ATTEMPT_RUNNING;
        if (!running || !e->settled)
            break;
        if (pthread_cond_timedwait(&e->settled_cv, &e->mu, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&e->mu);
}

/* ---- shutdown ---- */

static uint32_t in_flight(sp_engine *e)
{
    engine_attempts_reap(e, false);
    return engine_attempts_held(e);
}

/* One batch that only renews leases and reports what settled. */
static void settle_only(sp_engine *e)
{
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    sp_error err = {0};
    run_batch(e, &stats, NULL, BATCH_SETTLE, &err); /* what fails is tried again */
    sp_error_clear(&err);
}

/* Wait up to `ms` for in-flight attempts to end, reporting what settles. */
static void drain(sp_engine *e, uint64_t ms)
{
    uint64_t start = sp_mono_ms();
    while (in_flight(e) > 0 && sp_mono_ms() - start < ms) {
        settle_only(e);
        if (in_flight(e) > 0)
            engine_wait(e, 20);
    }
}

void sp_engine_shutdown(sp_engine *e)
{
    pthread_mutex_lock(&e->mu);
    bool already = e->shutting_down;
    e->shutting_down = true;
    pthread_mutex_unlock(&e->mu);
    if (already)
        return;
    engine_held_stop_watches(e); /* watches end at once; stops may finish */
    drain(e, e->cfg.shutdown_grace_ms);
    pthread_mutex_lock(&e->mu);
    for (inflight *a = e->inflight; a; a = a->next)
        sp_stop_fire(&a->stop);
    pthread_mutex_unlock(&e->mu);
    drain(e, e->cfg.shutdown_grace_ms);
    pthread_mutex_lock(&e->mu);
    e->abandon = true; /* still running: left to lease expiry */
    pthread_mutex_unlock(&e->mu);
}

/* The store says work was committed (a new timer: look at the timers in
 * the next pass, not at the sweep's next look). */
static void wake_from_store(void *ctx, unsigned what)
{
    sp_engine *e = ctx;
    pthread_mutex_lock(&e->mu);
    e->timers_changed = e->timers_changed || (what & SP_WAKE_TIMERS);
    e->store_woken = true;
    pthread_mutex_unlock(&e->mu);
    engine_wake(e);
}

/* An idle serve() waits until new work wakes it, an attempt settles, or
 * the next sweep or timer is due - at most idle_ms. */
static uint64_t serve_wait_ms(const sp_engine *e)
{
    uint64_t now = sp_mono_ms(), wait = idle_ms(e);
    const uint64_t due[] = {e->next_sweep_ms, e->next_timers_ms};
    for (size_t i = 0; i < 2; i++)
        if (due[i] > now && due[i] - now < wait)
            wait = due[i] - now;
    return wait ? wait : 1;
}

int sp_engine_serve(sp_engine *e, sp_error *err)
{
    uint64_t begun = sp_mono_ms(), turns = 0, claimed = 0;
    unsigned failed_ticks = 0;
    e->listener = ledger_listen(e, wake_from_store, e);
    e->listening = e->listener != NULL;
    engine_fault_serving(e, true);
    engine_scan_wanted(e);
    while (!engine_interrupted(e)) {
        sp_tick_stats stats;
        group_wait(e);
        if (engine_pass(e, &stats, NULL, err)) {
            ledger_listen_stop(e);
            engine_fault_serving(e, false);
            return -1;
        }
        turns += stats.applied;
        claimed += stats.claimed;
        if (e->cfg.serve_progress)
            e->cfg.serve_progress(e->cfg.serve_progress_ctx, in_flight(e), turns, claimed,
                                  sp_mono_ms() - begun);
        uint64_t backoff = engine_fault_pass(e, stats.store_unavailable, &failed_ticks, err);
        if (backoff || !sp_tick_again(&stats))
            engine_wait(e, backoff ? backoff : serve_wait_ms(e));
    }
    ledger_listen_stop(e);
    engine_fault_serving(e, false);
    sp_engine_shutdown(e);
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    sp_error ignored = {0};
    engine_coordinate(e, &stats, NULL, &ignored); /* leave statuses current */
    sp_error_clear(&ignored);
    return engine_flushed(e, err);
}
