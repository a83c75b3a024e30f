/*
 * dispatch.c - step 3 of a tick (engine.md §3): claim due invocations read
 * back from the store (never from a decision in memory, I7; in the tick's
 * batch they include the turns it just committed) while fewer than
 * max_concurrent_activities attempts are held here (inline ones, which
 * take no pool thread, while fewer than ENGINE_INLINE_MAX are), reading no
 * more of the outbox than the free slots; the claims start on the pool (or
 * on the tick thread) once the batch commits.
 *
 * Must never claim after shutdown began, claim an invocation already in
 * flight in this engine, treat a duplicate claim receipt as ownership
 * without a successful heartbeat, claim an external step (an actor claims
 * those), or claim a step this host cannot serve (it is left untouched and
 * shows as capability-missing: engine.md §9).
 */
#include <stdlib.h>
#include <string.h>

#include "base/failpoint.h"
#include "engine/internal.h"
#include "engine/ledger.h"

static uint32_t slots_max(sp_engine *e, engine_slot slot)
{
    if (slot == ENGINE_SLOT_POOL || !e->inline_own_slots)
        return e->cfg.max_concurrent_activities;
    pthread_mutex_lock(&e->packages_mu);
    bool serves_inline = e->serves_inline;
    pthread_mutex_unlock(&e->packages_mu);
    return serves_inline ? ENGINE_INLINE_MAX : 0;
}

void engine_slots_get(sp_engine *e, engine_slots *out)
{
    uint32_t held[ENGINE_SLOTS];
    engine_attempts_count(e, held); /* this batch's claims included */
    pthread_mutex_lock(&e->mu);
    bool closed = e->shutting_down;
    pthread_mutex_unlock(&e->mu);
    out->shared = !e->inline_own_slots;
    for (int k = 0; k < ENGINE_SLOTS; k++) {
        uint32_t taken = out->shared ? held[ENGINE_SLOT_POOL] + held[ENGINE_SLOT_INLINE] : held[k];
        uint32_t max = slots_max(e, (engine_slot)k);
        out->free[k] = closed || taken >= max ? 0 : max - taken;
    }
}

uint32_t engine_slots_total(const engine_slots *s)
{
    uint32_t pool = s->free[ENGINE_SLOT_POOL];
    return s->shared ? pool : pool + s->free[ENGINE_SLOT_INLINE];
}

uint32_t engine_free_slots(sp_engine *e)
{
    engine_slots s;
    engine_slots_get(e, &s);
    return engine_slots_total(&s);
}

bool engine_slots_take(engine_slots *s, engine_slot slot)
{
    if (!s->free[slot])
        return false;
    for (int k = 0; k < ENGINE_SLOTS; k++)
        if ((k == (int)slot || s->shared) && s->free[k])
            s->free[k]--;
    return true;
}

engine_slot engine_action_slot(const engine_action *ea)
{
    return ea && ea->quick ? ENGINE_SLOT_INLINE : ENGINE_SLOT_POOL;
}

bool engine_claim_confirm(sp_engine *e, const sp_claim *claim, sp_error *err)
{
    sp_heartbeat_res res;
    sp_store_rc rc = ledger_heartbeat(e, &claim->attempt, e->cfg.lease_ms, false, &res, err);
    bool ok = rc == SP_STORE_OK && res.disposition == SP_APPLIED;
    sp_error_clear(err);
    return ok;
}

bool engine_workable(sp_engine *e, const char *package_digest, const char *action_id,
                     engine_slot *slot)
{
    sp_error err = {0};
    const engine_action *ea;
    int rc = engine_action_find(e, package_digest, action_id, &ea, &err);
    sp_error_clear(&err);
    if (rc)
        return false;
    *slot = engine_action_slot(ea);
    if (!ea)
        return true; /* a missing action: claim it, the attempt reports host.action-missing */
    return ea->runner && !ea->runner->external && !ea->unservable;
}

static int claim_one(sp_engine *e, const sp_due_item *item, sp_tick_stats *stats, sp_error *err)
{
    sp_claim_req req = {.key = item->key,
                        .invocation_id = item->id,
                        .worker = e->worker_id,
                        .lease_duration_ms = e->cfg.lease_ms,
                        .host = e->host,
                        .skip_busy = true}; /* a run another worker holds: its step */
    sp_claim claim;
    sp_store_rc rc = ledger_claim(e, &req, &claim, err);
    if (rc != SP_STORE_OK) {
        if (sp_store_rc_transient(rc)) {
            stats->store_unavailable = true;
            return -1;
        }
        sp_error_clear(err); /* someone else claimed it, or it is not due: skip */
        return 0;
    }
    if (claim.disposition == SP_DUPLICATE && !engine_claim_confirm(e, &claim, err)) {
        sp_claim_free(&claim);
        return 0;
    }
    engine_failpoint_durable(e, "host.attempt.after-claim");
    stats->claimed++;
    return engine_attempt_claimed(e, &claim, item->package_digest, err);
}

/* Claim one due step into a free slot of its kind; *waits when that kind
 * is full. A claim someone else won takes no slot. */
static int dispatch_one(sp_engine *e, const sp_due_item *item, engine_slots *slots,
                        sp_tick_stats *stats, bool *waits, sp_error *err)
{
    engine_slot slot;
    if (engine_invocation_in_flight(e, &item->key, item->id) ||
        !engine_workable(e, item->package_digest, item->action_id, &slot))
        return 0;
    if (!slots->free[slot]) {
        *waits = true;
        return 0;
    }
    uint32_t claimed = stats->claimed;
    int r = claim_one(e, item, stats, err);
    if (stats->claimed != claimed)
        engine_slots_take(slots, slot);
    return r;
}

int engine_dispatch(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only, sp_error *err)
{
    char *cursor = NULL;
    int r = 0;
    engine_slots slots;
    engine_slots_get(e, &slots);
    for (uint32_t n = engine_slots_total(&slots); n > 0 && r == 0; n = engine_slots_total(&slots)) {
        sp_due_page page;
        sp_store_rc rc = ledger_scan_outbox(e, only, cursor, n, &page, err);
        free(cursor);
        cursor = NULL;
        if (rc != SP_STORE_OK) {
            stats->store_unavailable = sp_store_rc_transient(rc);
            return -1;
        }
        /* a full page (or one with a cursor) may leave due steps unread:
         * the next pass with a free slot reads again (tick.c, scans_due) */
        e->outbox_more = page.n == n || page.next_cursor != NULL;
        uint32_t claimed = stats->claimed;
        bool waits = false;
        for (size_t i = 0; i < page.n && r == 0 && engine_slots_total(&slots) > 0; i++)
            r = dispatch_one(e, &page.items[i], &slots, stats, &waits, err);
        /* a page that claimed nothing while due steps wait for a full kind
         * of slot ends the read: the outbox is served in its order, and a
         * full pool does not make every pass read all of it */
        bool blocked = waits && stats->claimed == claimed;
        if (page.next_cursor && r == 0 && !blocked)
            cursor = strdup(page.next_cursor);
        sp_due_page_free(&page);
        if (!cursor)
            break;
    }
    free(cursor);
    return r;
}
