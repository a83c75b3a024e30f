/*
 * park.c - run_until_parked (engine.md §3): tick until one run is terminal,
 * waiting / needs-intervention with no pending event, or quarantined, and
 * nothing of it is in flight in this engine.
 *
 * Must never return while an attempt of the run is still in flight here
 * (except after an interrupt, when a graceful shutdown came first, or after
 * giving up on a store that kept failing: the caller frees the engine, which
 * abandons the attempt to its lease), and must return after shutdown even
 * for a run that still needs an activity.
 */
#include <string.h>

#include "base/clock.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "engine/stateview.h"

/* The invocation waits on someone no local hook can observe: an external
 * step (claimed or not), a held async step with neither a probe nor a watch
 * this worker can run, or a step this host cannot serve (capability
 * missing: another host's worker must take it). engine.md §9: exit 6. */
static bool invocation_waits_on_actor(sp_engine *e, const sp_run_view *v,
                                      const sv_invocation *inv)
{
    sp_error err = {0};
    const engine_action *a = engine_action_get(e, v->package_digest, inv->action_id, &err);
    bool waits = a && (a->unservable || a->runner->external);
    if (a && !waits && a->held && !engine_action_can(a, SP_HOOK_PROBE, NULL) &&
        !engine_action_can(a, SP_HOOK_WATCH, NULL))
        waits = engine_held_unobservable(e, &v->key, inv->invocation_id, a);
    sp_error_clear(&err);
    return waits;
}

/* Every authorized invocation of the run waits on such an actor. */
static bool waits_on_actor(sp_engine *e, const sp_run_view *v, const sv_state *s)
{
    size_t scheduled = 0;
    for (size_t i = 0; i < s->ninvocations; i++) {
        if (s->invocations[i].state != SV_SCHEDULED)
            continue;
        scheduled++;
        if (!invocation_waits_on_actor(e, v, &s->invocations[i]))
            return false;
    }
    return scheduled > 0;
}

/* A run that waits with a live timer: keep serving it when the timer is
 * due within max_wait_ms (run_until_parked sleeps until then), else park. */
static bool parked_on_timer(sp_engine *e, const sv_state *s, sp_park *park)
{
    const sv_timer *t = sv_next_timer(s);
    if (!t)
        return false;
    uint64_t now = engine_wall_ms();
    if (t->due_at_ms > now && t->due_at_ms - now > e->cfg.max_wait_ms) {
        *park = SP_PARK_TIMER;
        return true;
    }
    return false; /* due soon: the sweep fires it */
}

/* A waiting or running run (the other statuses park without a parse). */
static bool parked_by_status(sp_engine *e, const sp_run_view *v, const sv_state *s,
                             sp_park *park)
{
    if (sv_status_is(s, "waiting") && s->ntimers)
        return parked_on_timer(e, s, park);
    else if (sv_status_is(s, "waiting"))
        *park = SP_PARK_WAITING;
    else if (sv_status_is(s, "running") && waits_on_actor(e, v, s))
        *park = SP_PARK_ASYNC;
    else
        return false;
    return true;
}

static bool parked(sp_engine *e, const sp_run_view *v, sp_park *park)
{
    bool pending = v->next_sequence > v->applied_sequence + 1;
    if (v->quarantined) {
        *park = SP_PARK_QUARANTINED;
        return true;
    }
    if (pending || !v->snapshot)
        return false;
    /* the run row's status is the snapshot's: most answers need no parse */
    static const struct { const char *status; sp_park park; } plain[] = {
        {"completed", SP_PARK_COMPLETED},      {"failed", SP_PARK_FAILED},
        {"cancelled", SP_PARK_CANCELLED},      {"needs-intervention", SP_PARK_INTERVENTION},
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (strcmp(v->status, plain[i].status) == 0) {
            *park = plain[i].park;
            return true;
        }
    sv_state s;
    sp_error err = {0};
    if (sv_parse(v->snapshot, v->snapshot_len, &s, &err)) {
        sp_error_clear(&err);
        return false;
    }
    bool done = parked_by_status(e, v, &s, park);
    sv_free(&s);
    return done;
}

static int interrupted(sp_engine *e, const sp_run_key *key, sp_park *park, sp_error *err)
{
    sp_engine_shutdown(e);
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    engine_coordinate(e, &stats, key, err); /* leave the run's status current */
    sp_error_clear(err);
    *park = SP_PARK_INTERRUPTED;
    return engine_flushed(e, err);
}

typedef enum look_result { LOOK_ON, LOOK_PARKED, LOOK_ERROR } look_result;

/* A progress callback sees the run at most this often while it runs (and
 * once more when it parks): reading the run back after every step would
 * cost a read transaction per step. */
#define PROGRESS_EVERY_MS 100u

/* Progress wants a look now; *at is when it last had one. */
static bool progress_due(sp_progress_fn progress, uint64_t *at)
{
    uint64_t now = sp_mono_ms();
    if (!progress || (*at && now - *at < PROGRESS_EVERY_MS))
        return false;
    *at = now;
    return true;
}

/* Read the run back: parked (and nothing of it in flight here), or not yet;
 * a transient read failure marks the pass failed. */
static look_result look(sp_engine *e, const sp_run_key *key, sp_park *park,
                        sp_progress_fn progress, void *progress_ctx, uint64_t started,
                        uint64_t *progress_at, sp_tick_stats *stats, sp_error *err)
{
    /* A run with an attempt held here cannot have parked: no read needed
     * (unless the progress callback is due to see the run). */
    if (engine_run_in_flight(e, key) && !progress_due(progress, progress_at))
        return LOOK_ON;
    sp_run_view view;
    bool found = false;
    sp_error read_err = {0};
    sp_store_rc rc = ledger_get_run(e, key, &view, &found, &read_err);
    if (sp_store_rc_transient(rc)) {
        if (!stats->store_unavailable)
            sp_error_move(err, &read_err);
        sp_error_clear(&read_err);
        stats->store_unavailable = true;
        return LOOK_ON;
    }
    if (rc != SP_STORE_OK) {
        sp_error_move(err, &read_err);
        return LOOK_ERROR;
    }
    if (!found) {
        sp_fail(err, "run.not-found", "no run %s", key->run_id);
        return LOOK_ERROR;
    }
    if (progress)
        progress(progress_ctx, &view, sp_mono_ms() - started);
    bool done = !engine_run_in_flight(e, key) && parked(e, &view, park);
    sp_run_view_free(&view);
    return done ? LOOK_PARKED : LOOK_ON;
}

int sp_engine_run_until_parked(sp_engine *e, const sp_run_key *key, sp_park *park,
                               sp_progress_fn progress, void *progress_ctx, sp_error *err)
{
    uint64_t started = sp_mono_ms(), left_ms = 0, progress_at = 0;
    unsigned failed_passes = 0;
    engine_scan_wanted(e); /* the first pass looks at the run whatever passes before did */
    for (;;) {
        if (engine_interrupted(e))
            return interrupted(e, key, park, err);
        sp_tick_stats stats;
        if (engine_pass(e, &stats, key, err))
            return -1;
        if (!stats.store_unavailable)
            sp_error_clear(err);
        look_result r =
            look(e, key, park, progress, progress_ctx, started, &progress_at, &stats, err);
        if (r == LOOK_PARKED)
            sp_error_clear(err);
        if (r != LOOK_ON) /* parked: on disk before the caller learns it */
            return r == LOOK_PARKED ? engine_flushed(e, err) : -1;
        uint64_t backoff = engine_fault_pass(e, stats.store_unavailable, &failed_passes, err);
        if (engine_fault_give_up(e, &left_ms, err))
            return -1;
        if (backoff)
            engine_wait(e, backoff < left_ms ? backoff : left_ms);
        else if (!sp_tick_again(&stats))
            engine_wait(e, e->cfg.poll_ms);
    }
}
