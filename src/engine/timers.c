/*
 * timers.c - the engine's side of durable timers (format 0.2,
 * docs/format-0.2.md): on the sweep's timer, inside the pass's batch and
 * before the kernel runs, every stored timer that is due is fired
 * (timer.fired appended once, the timer deleted), so the run's transition
 * on it commits with the firing.
 *
 * After each look the next one is set for the earliest stored timer when it
 * is due before the sweep's next look, so a timer fires on time even when
 * the worker polls rarely (woken by LISTEN/NOTIFY).
 *
 * Must never fire a timer before the store says it is due, or fail a pass
 * because another worker fired or a decision cancelled a timer first.
 */
#include "base/clock.h"
#include "engine/internal.h"
#include "engine/ledger.h"

/* Look again at the next stored timer's due time when it comes before the
 * sweep's next look (an idle worker's wait ends then too). */
static void look_again_when_due(sp_engine *e, uint64_t mono_now)
{
    uint64_t due = 0;
    sp_error err = {0};
    if (ledger_next_timer(e, &due, &err) != SP_STORE_OK || due == 0) {
        sp_error_clear(&err);
        return;
    }
    uint64_t wall = engine_wall_ms();
    uint64_t at = mono_now + (due > wall ? due - wall : 0);
    if (at < e->next_timers_ms)
        e->next_timers_ms = at;
}

int engine_fire_timers(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    uint64_t now = sp_mono_ms();
    pthread_mutex_lock(&e->mu);
    bool changed = e->timers_changed;
    e->timers_changed = false;
    pthread_mutex_unlock(&e->mu);
    if (now < e->next_timers_ms && !changed)
        return 0;
    e->next_timers_ms = now + engine_sweep_every_ms(e);
    sp_timer_page page;
    sp_store_rc rc = ledger_scan_timers(e, ENGINE_PAGE, &page, err);
    if (rc != SP_STORE_OK) {
        stats->store_unavailable = sp_store_rc_transient(rc);
        return -1;
    }
    int result = 0;
    for (size_t i = 0; i < page.n && result == 0; i++) {
        sp_append_event_res res;
        rc = ledger_fire_timer(e, &page.items[i], &res, err);
        if (rc == SP_STORE_STALE || rc == SP_STORE_NOT_FOUND) { /* fired, cancelled, gone */
            sp_error_clear(err);
        } else if (rc != SP_STORE_OK) {
            stats->store_unavailable = sp_store_rc_transient(rc);
            result = -1;
        } else if (res.disposition == SP_APPLIED) {
            stats->fired++;
        }
    }
    if (page.n == ENGINE_PAGE) { /* a full page: look again at once */
        e->next_timers_ms = 0;
        stats->more = true;
    } else if (result == 0) {
        look_again_when_due(e, now);
    }
    sp_timer_page_free(&page);
    return result;
}
