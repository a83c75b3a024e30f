/*
 * sweep.c - step 1 of a tick (engine.md §3, §6, §11): expire every attempt
 * whose lease (or hard deadline) has run out, and - on one host - every
 * attempt whose owner is dead for certain. Expiry appends the canonical
 * `expired` result; the kernel then decides (retry or needs-intervention).
 *
 * Must never expire on a guess: lease and deadline are judged by the store's
 * clock under its lock, owner death only through a free lock file on this
 * host. Losing the race to another sweeper or to the owner's finish is fine.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/ledger.h"

int engine_expire(sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason,
                  sp_tick_stats *stats, sp_error *err)
{
    sp_finish_res res;
    sp_store_rc rc = ledger_expire(e, ref, reason, &res, err);
    if (rc == SP_STORE_OK) {
        if (res.disposition == SP_APPLIED)
            stats->expired++;
        if (res.disposition == SP_APPLIED && e->cfg.observer)
            engine_observe_expired(e, ref, reason);
        return 0;
    }
    if (!sp_store_rc_transient(rc)) { /* lease.lost, lease.not-due, digest mismatch: lost a race */
        sp_error_clear(err);
        return 0;
    }
    stats->store_unavailable = true;
    return -1;
}

static int sweep_one(sp_engine *e, const sp_due_item *item, void *ctx, sp_error *err)
{
    sp_tick_stats *stats = ctx;
    if (item->held)
        return engine_held_expire(e, item, stats, err);
    return engine_expire(e, &item->attempt,
                         item->kind == SP_DUE_DEADLINE ? SP_EXPIRE_DEADLINE : SP_EXPIRE_LEASE,
                         stats, err);
}

static int sweep_due(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    int r = engine_each_due(e, ENGINE_DUE_EXPIRING, NULL, stats, sweep_one, stats, err);
    return r < 0 ? -1 : 0;
}

/* Running attempts owned by dead workers on this host (engine.md §11). */
static int sweep_dead_owners(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    if (e->lock_fd < 0)
        return 0;
    char *cursor = NULL;
    do {
        sp_due_page page;
        sp_store_rc rc = ledger_scan_running(e, e->host.host_id, cursor, ENGINE_PAGE,
                                               &page, err);
        free(cursor);
        cursor = NULL;
        if (rc != SP_STORE_OK) {
            stats->store_unavailable = sp_store_rc_transient(rc);
            return -1;
        }
        int result = 0;
        for (size_t i = 0; i < page.n && result == 0; i++)
            if (engine_owner_dead(e, &page.items[i]))
                result = engine_expire(e, &page.items[i].attempt, SP_EXPIRE_OWNER_DEAD, stats, err);
        if (page.next_cursor && result == 0)
            cursor = strdup(page.next_cursor);
        sp_due_page_free(&page);
        if (result)
            return -1;
    } while (cursor);
    engine_takeover_tidy(e); /* every attempt of the dead owners was expired */
    return 0;
}

int engine_sweep(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    return sweep_due(e, stats, err) || sweep_dead_owners(e, stats, err) ? -1 : 0;
}
