/*
 * timers.c - the engine's side of durable timers (format 0.2,
 * docs/format-0.2.md): on the sweep's timer, inside the pass's batch and
 * before the kernel runs, every stored timer that is due is fired
 * (timer.fired appended once, the timer deleted), so the run's transition
 * on it commits with the firing.
 *
 * Must never fire a timer before the store says it is due, or fail a pass
 * because another worker fired or a decision cancelled a timer first.
 */
#include "engine/internal.h"
#include "engine/ledger.h"

int engine_fire_timers(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    uint64_t now = engine_mono_ms();
    if (now < e->next_timers_ms)
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
    }
    sp_timer_page_free(&page);
    return result;
}
