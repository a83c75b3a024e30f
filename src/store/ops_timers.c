/*
 * ops_timers.c - durable timers of format 0.2 (docs/format-0.2.md): the
 * timer commands of a committed decision, the scan of due timers and
 * fire_timer.
 *
 * timer.start {activationId, dueAtMs, timerId} stores the timer (a timer ID
 * already stored: conflict/timer.exists); timer.cancel {timerId} deletes it
 * (none stored: nothing, it fired or was never there). Both run inside
 * commit_turn, with the decision.
 *
 * fire_timer predicates, in order: run exists (not-found/run.not-found);
 * the timer is stored (stale/timer.not-found: fired or cancelled); it is
 * due by the store's clock (stale/timer.not-due: a timer never fires
 * early). Writes, in one transaction: the event `timer.fired` {timerId}
 * with event ID `tmr:<timerId>` (so a timer fires at most once even when
 * its row came back) and the deletion of the timer.
 *
 * What it must never do: fire a timer before its due time, fire one twice,
 * or append timer.fired for a timer it does not hold.
 */
#include <stdio.h>
#include <stdlib.h>

#include "json/decimal.h"
#include "json/json.h"
#include "store/logic.h"

/* ---- the commands ---- */

static bool timer_id_ok(const char *id)
{
    return id && strlen(id) == SP_ID_LEN && strncmp(id, "tmr_", 4) == 0;
}

sp_store_rc lg_timer_start(lg_mut *m, const json_t *payload, sp_error *err)
{
    const char *timer_id = lg_get_str(payload, "timerId");
    const char *activation = lg_get_str(payload, "activationId");
    uint64_t due = 0;
    if (!json_is_object(payload) || json_object_size(payload) != 3 || !timer_id_ok(timer_id) ||
        !activation || !*activation || strlen(activation) > SP_STORE_ID_MAX ||
        !lg_get_u63(payload, "dueAtMs", &due))
        return lg_fail(err, SP_STORE_CONFLICT, "command.invalid", "invalid timer.start payload");
    sp_db_rows rows = {0};
    sp_store_rc rc = LG_Q(m->s, &rows, err,
                          "SELECT 1 FROM timers WHERE tenant = ? AND run_id = ? AND timer_id = ?",
                          DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(timer_id));
    if (rc == SP_STORE_OK && rows.nrows)
        rc = lg_fail(err, SP_STORE_CONFLICT, "timer.exists", "timer %s already exists", timer_id);
    sp_db_rows_free(&rows);
    if (rc == SP_STORE_OK)
        rc = LG_Q(m->s, NULL, err,
                  "INSERT INTO timers (tenant, run_id, timer_id, activation_id, due_at_ms)"
                  " VALUES (?, ?, ?, ?, ?)",
                  DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(timer_id),
                  DB_TEXT(activation), DB_INT(due));
    return rc ? rc : lg_announce_work(m->s, "timers", err);
}

sp_store_rc lg_timer_cancel(lg_mut *m, const json_t *payload, sp_error *err)
{
    const char *timer_id = lg_get_str(payload, "timerId");
    if (!json_is_object(payload) || json_object_size(payload) != 1 || !timer_id_ok(timer_id))
        return lg_fail(err, SP_STORE_CONFLICT, "command.invalid", "invalid timer.cancel payload");
    return LG_Q(m->s, NULL, err,
                "DELETE FROM timers WHERE tenant = ? AND run_id = ? AND timer_id = ?",
                DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(timer_id));
}

/* ---- scan_timers ---- */

void sp_timer_page_free(sp_timer_page *p)
{
    free(p->items);
    memset(p, 0, sizeof *p);
}

enum { TM_TENANT, TM_RUN, TM_ID, TM_DUE };

sp_store_rc sp_store_scan_timers(sp_store *s, size_t limit, sp_timer_page *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    limit = lg_clamp_limit(limit);
    sp_db_rows rows = {0};
    sp_store_rc rc = LG_S(s, &rows, err,
                          "SELECT t.tenant, t.run_id, t.timer_id, t.due_at_ms FROM timers t"
                          " JOIN runs r ON r.tenant = t.tenant AND r.run_id = t.run_id"
                          " WHERE t.due_at_ms <= ? AND r.quarantine_code IS NULL"
                          " ORDER BY t.due_at_ms, t.timer_id, t.tenant, t.run_id LIMIT ?",
                          DB_INT(lg_now(s)), DB_INT(limit));
    if (rc == SP_STORE_OK && rows.nrows) {
        out->items = calloc(rows.nrows, sizeof *out->items);
        if (!out->items)
            rc = lg_encode_fail(err, true, "timers");
    }
    for (size_t i = 0; rc == SP_STORE_OK && i < rows.nrows; i++) {
        sp_timer_item *t = &out->items[out->n++];
        lg_copy(t->key.tenant, sizeof t->key.tenant, &rows, i, TM_TENANT);
        lg_copy(t->key.run_id, sizeof t->key.run_id, &rows, i, TM_RUN);
        lg_copy(t->timer_id, sizeof t->timer_id, &rows, i, TM_ID);
        t->due_at_ms = lg_u64(&rows, i, TM_DUE);
    }
    sp_db_rows_free(&rows);
    if (rc)
        sp_timer_page_free(out);
    return rc;
}

/* The next due time of the run's stored timers (every run's when `key` is
 * NULL); 0 when there is none. */
sp_store_rc sp_store_next_timer(sp_store *s, const sp_run_key *key, uint64_t *due_at_ms,
                                sp_error *err)
{
    *due_at_ms = 0;
    sp_db_rows rows = {0};
    sp_store_rc rc =
        key ? LG_R(s, &rows, err,
                   "SELECT min(due_at_ms) FROM timers WHERE tenant = ? AND run_id = ?",
                   DB_TEXT(key->tenant), DB_TEXT(key->run_id))
            : lg_read(s, "SELECT min(due_at_ms) FROM timers", NULL, 0, &rows, err);
    if (rc == SP_STORE_OK && rows.nrows)
        *due_at_ms = lg_u64(&rows, 0, 0);
    sp_db_rows_free(&rows);
    return rc;
}

/* ---- fire_timer ---- */

static sp_store_rc fire_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_fire_timer_req *req = r;
    sp_store_rc rc = lg_need_run(m, err);
    if (rc)
        return rc;
    sp_db_rows rows = {0};
    rc = LG_Q(m->s, &rows, err,
              "SELECT due_at_ms FROM timers WHERE tenant = ? AND run_id = ? AND timer_id = ?",
              DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id), DB_TEXT(req->timer_id));
    if (rc == SP_STORE_OK && rows.nrows == 0)
        rc = lg_fail(err, SP_STORE_STALE, "timer.not-found", "timer %s is not stored (fired or "
                     "cancelled)", req->timer_id);
    else if (rc == SP_STORE_OK && lg_u64(&rows, 0, 0) > m->now)
        rc = lg_fail(err, SP_STORE_STALE, "timer.not-due", "timer %s is not due yet",
                     req->timer_id);
    sp_db_rows_free(&rows);
    if (rc)
        return rc;
    char body[64], event_id[SP_ID_LEN + 8], digest[SP_DIGEST_TEXT_LEN + 1];
    int len = snprintf(body, sizeof body, "{\"timerId\":\"%s\"}", req->timer_id);
    snprintf(event_id, sizeof event_id, "tmr:%s", req->timer_id);
    sp_digest_one("body", body, (size_t)len, digest);
    uint64_t sequence, accepted;
    rc = lg_append(m, event_id, "timer.fired", body, (size_t)len, digest, &sequence, &accepted,
                   err);
    if (rc == SP_STORE_OK)
        rc = LG_W1(m->s, err,
                   "DELETE FROM timers WHERE tenant = ? AND run_id = ? AND timer_id = ?",
                   DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id), DB_TEXT(req->timer_id));
    if (rc == SP_STORE_OK)
        m->value = lg_appended_value(sequence, accepted);
    return rc;
}

static const lg_op FIRE_TIMER = {"fire_timer", "fire-timer", fire_apply,
                                 lg_appended_decode, NULL, NULL, LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_fire_timer(sp_store *s, const sp_fire_timer_req *req,
                                sp_append_event_res *res, sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc && !timer_id_ok(req->timer_id))
        rc = lg_invalid(err, "timer ID is not tmr_ + 32 hex");
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[s s s]", req->key.tenant, req->key.run_id, req->timer_id);
    if (rc)
        return rc;
    return lg_mutate(s, &FIRE_TIMER, &req->key, req->request_id, body, req, res,
                     &res->disposition, err);
}
