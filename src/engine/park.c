/*
 * park.c - run_until_parked (engine.md §3): tick until one run is terminal,
 * waiting / needs-intervention with no pending event, or quarantined, and
 * nothing of it is in flight in this engine.
 *
 * Must never return while an attempt of the run is still in flight here
 * (except after an interrupt, when a graceful shutdown came first), and must
 * return after shutdown even for a run that still needs an activity.
 */
#include <string.h>
#include <time.h>

#include "engine/internal.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool parked(const sp_run_view *v, sp_park *park)
{
    bool pending = v->next_sequence > v->applied_sequence + 1;
    if (v->quarantined) {
        *park = SP_PARK_QUARANTINED;
        return true;
    }
    if (pending)
        return false;
    if (strcmp(v->status, "completed") == 0)
        *park = SP_PARK_COMPLETED;
    else if (strcmp(v->status, "failed") == 0)
        *park = SP_PARK_FAILED;
    else if (strcmp(v->status, "waiting") == 0)
        *park = SP_PARK_WAITING;
    else if (strcmp(v->status, "needs-intervention") == 0)
        *park = SP_PARK_INTERVENTION;
    else
        return false;
    return true;
}

static int interrupted(sp_engine *e, const sp_run_key *key, sp_park *park, sp_error *err)
{
    sp_engine_shutdown(e);
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    engine_coordinate(e, &stats, key, err); /* leave the run's status current */
    sp_error_clear(err);
    *park = SP_PARK_INTERRUPTED;
    return 0;
}

int sp_engine_run_until_parked(sp_engine *e, const sp_run_key *key, sp_park *park,
                               sp_progress_fn progress, void *progress_ctx, sp_error *err)
{
    uint64_t started = now_ms();
    for (;;) {
        if (engine_interrupted(e))
            return interrupted(e, key, park, err);
        sp_tick_stats stats;
        memset(&stats, 0, sizeof stats);
        engine_attempts_reap(e, false);
        pthread_mutex_lock(&e->mu);
        stats.settled = e->settled;
        e->settled = 0;
        pthread_mutex_unlock(&e->mu);
        if ((engine_sweep(e, &stats, err) || engine_coordinate(e, &stats, key, err) ||
             engine_dispatch(e, &stats, key, err)) &&
            !stats.store_unavailable)
            return -1;
        sp_error_clear(err);
        sp_run_view view;
        bool found = false;
        sp_store_rc rc = sp_store_get_run(e->store, key, &view, &found, err);
        if (rc != SP_STORE_OK && !sp_store_rc_transient(rc))
            return -1;
        if (rc == SP_STORE_OK && !found)
            return sp_fail(err, "run.not-found", "no run %s", key->run_id);
        if (rc == SP_STORE_OK) {
            if (progress)
                progress(progress_ctx, &view, now_ms() - started);
            bool done = parked(&view, park) && !engine_run_in_flight(e, key);
            sp_run_view_free(&view);
            if (done)
                return 0;
        }
        sp_error_clear(err);
        if (sp_tick_idle(&stats))
            engine_wait(e, e->cfg.poll_ms);
    }
}
